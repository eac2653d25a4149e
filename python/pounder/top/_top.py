"""Watching a server's children view after view (:class:`Top`): each view reads the tree again
(memory from smaps_rollup through :func:`pounder.procs.snapshot`), each child's CPU clock, its
state (the status page's, else /proc's), the status page's total of requests and the accept
queue, and compares them with the view before."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from pounder._errors import PounderError, UsageError, check_instance, public
from pounder.procs import PoolSnapshot, ServerTarget, process_cpu_clock, snapshot
from pounder.servers import AcceptQueue
from pounder.top._procstate import listening_inodes, listening_ports, proc_state
from pounder.top._status import StatusRead, check_status_url, read_status
from pounder.top._view import ChildRow, ExitedChild, TopTotals, TopView, count_states

SELF_COUNTING = ("apache", "php-fpm")
"""Servers whose status page is served by a child: each read is one request of its total (not counted in req/s)."""
DEFAULT_MARKS = 3
"""How many views a child that appeared or exited stays marked."""


@dataclass
class _Seen:
    cpu_s: float | None
    at: float
    started: float
    requests: int | None
    age_s: float
    new_for: int


@public
class Top:
    """The children of the server ``target`` (:func:`pounder.procs.find_server`), view after view:
    :meth:`view` returns a :class:`TopView` with each child's CPU % and the requests per second
    since the view before (the first view is compared with the reading made here). ``status``:
    the server's status page (an http:// URL on this machine, or ``unix:PATH``: see
    :mod:`pounder.top._status`), else the states come from /proc. ``marks``: how many views a
    child that appeared or exited stays marked. :meth:`close` (or ``with``) releases the netlink
    socket of the accept queue."""

    def __init__(self, target: ServerTarget, status: str | None = None, *, marks: int = DEFAULT_MARKS,
                 timeout_s: float = 2.0) -> None:
        check_instance(target, ServerTarget, "target")
        if isinstance(marks, bool) or not isinstance(marks, int) or not 0 <= marks <= 100:
            raise UsageError(f"Top: marks must be a whole number from 0 to 100, not {marks!r}")
        self.target, self.marks, self.timeout_s = target, marks, timeout_s
        self.status_url = None if status is None else check_status_url(status)
        self._listeners = listening_inodes(target.pid)
        self._queues = [AcceptQueue(port, host) for host, port in listening_ports(target.pid)]
        self._seen: dict[int, _Seen] = {}
        self._exited: dict[int, ExitedChild] = {}
        self._total: tuple[float, int] | None = None
        self._last: float | None = None
        self._first = True
        try:
            self.view()  # the baseline of the first view's CPU % and requests per second
        except BaseException:
            self.close()
            raise
        self._first = False

    def _status(self, notes: list[str], children: set[int]) -> StatusRead | None:
        if self.status_url is None:
            return None
        try:
            read = read_status(self.status_url, self.timeout_s)
        except PounderError as error:
            notes.append(f"{error}; states from /proc")
            return None
        if read.children and children and not set(read.children) & children:
            named = ", ".join(map(str, sorted(read.children)[:5]))
            notes.append(f"{self.status_url} names none of this server's children (it names pids {named}): another "
                         "server's status page? states from /proc")  # fmt: skip
            return None
        return read

    def _accept_queue(self) -> int | None:
        waiting = [queue.waiting() for queue in self._queues]
        known = [w for w in waiting if w is not None]
        return sum(known) if known else None

    def view(self) -> TopView:
        """The children now, compared with the view before. Raises :class:`~pounder.PounderError`
        when the server has exited."""
        notes: list[str] = []
        snap = snapshot(self.target)
        now = time.monotonic()
        status = self._status(notes, {proc.pid for proc in snap.children})
        rows = tuple(self._row(proc.pid, snap, now, status) for proc in snap.children)
        current = {row.pid for row in rows}
        self._age_marks(current)
        self._seen = {pid: seen for pid, seen in self._seen.items() if pid in current}
        rate = self._rate(status, now)
        interval = None if self._last is None else now - self._last
        self._last = now
        if status is None and self.status_url is None and not self._listeners:
            notes.append("no listening socket of the server could be read: 'accept' cannot be told")
        shared = [row.shared for row in rows]
        totals = TopTotals(
            children=len(rows), by_state=count_states(rows), footprint=snap.totals.footprint,
            children_uss=sum(row.uss for row in rows),
            median_child_shared=round(statistics.median(shared)) if shared else None,
            parent_rss=snap.parent.rss, requests_per_s=rate, accept_queue=self._accept_queue())
        exited = tuple(sorted(self._exited.values(), key=lambda e: (e.views_ago, e.pid)))
        return TopView(snap.taken_at, snap.root_pid, snap.parent.name, self.target.found_by,
                       None if status is None else status.kind, interval, rows, exited, totals, tuple(notes))

    def _row(self, pid: int, snap: PoolSnapshot, now: float, status: StatusRead | None) -> ChildRow:
        proc = next(p for p in snap.processes if p.pid == pid)
        cpu = process_cpu_clock(pid)
        seen = self._seen.get(pid)
        started = now - proc.age_s
        if seen is not None and abs(seen.started - started) > 1.0:  # the pid was reused
            seen = None
        percent = None
        if cpu is not None and not self._first:
            since = max(self._last or started, started) if seen is None else seen.at
            before = 0.0 if seen is None or seen.cpu_s is None else seen.cpu_s
            if now - since >= 0.01:
                percent = round(max(0.0, cpu - before) / (now - since) * 100, 1)
        told = None if status is None else status.children.get(pid)
        if told is not None:
            state, source, detail, busy, requests = told.state, "status", "", told.busy, told.requests
        else:
            found = proc_state(pid, self._listeners)
            state, detail = ("exiting", "") if found is None else (found.state, found.detail)
            source, busy, requests = "proc", None, None
        new_for = (0 if self._first else self.marks) if seen is None else max(0, seen.new_for - 1)
        self._seen[pid] = _Seen(cpu, now, started, requests, proc.age_s, new_for)
        return ChildRow(pid, state, source, detail, busy, requests, percent,  # type: ignore[arg-type]
                        proc.uss, proc.shared, proc.pss, round(proc.age_s, 1), new_for > 0,
                        None if cpu is None else round(cpu, 6))

    def _age_marks(self, current: set[int]) -> None:
        """Children gone since the view before become exited; exited ones age and are dropped."""
        kept = {pid: ExitedChild(pid, e.views_ago + 1, e.requests, e.age_s) for pid, e in self._exited.items()
                if e.views_ago + 1 <= self.marks and pid not in current}
        for pid, seen in self._seen.items():
            if pid not in current and self.marks > 0:
                kept[pid] = ExitedChild(pid, 1, seen.requests, round(seen.age_s, 1))
        self._exited = kept

    def _rate(self, status: StatusRead | None, now: float) -> float | None:
        total = None if status is None else status.total_requests
        if total is None:
            self._total = None
            return None
        before, self._total = self._total, (now, total)
        if before is None or now - before[0] < 0.01 or total < before[1]:
            return None
        own = 1 if status is not None and status.kind in SELF_COUNTING else 0  # this read of the page itself
        return round(max(0, total - before[1] - own) / (now - before[0]), 1)

    def close(self) -> None:
        for queue in self._queues:
            queue.close()

    def __enter__(self) -> Top:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@public
def top_view(target: ServerTarget, status: str | None = None, *, interval_s: float = 1.0) -> TopView:
    """One view of the server's children, its CPU % and requests per second measured over
    ``interval_s`` seconds (a :class:`Top` read twice)."""
    if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) or not 0.05 <= interval_s <= 3600:
        raise UsageError(f"top_view: interval_s must be from 0.05 to 3600 seconds, not {interval_s!r}")
    with Top(target, status) as top:
        time.sleep(interval_s)
        return top.view()
