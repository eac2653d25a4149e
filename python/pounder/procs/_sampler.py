"""Sampling a server in the background during a bench: its memory per child over time, the CPU
it used, children spawned and reaped, and (for Apache) mod_status.

CPU accounting (``server_cpu_s``): the user + system time the server's processes used between the
first and the last sample. Every process seen is tracked by pid (and start time, so a reused pid
is a new process), with its own CPU (user + system, from the kernel's per-process CPU clock, in
nanoseconds; ``/proc/PID/stat``'s utime + stime if the clock cannot be read) and the CPU of the
children it reaped (cutime + cstime from ``/proc/PID/stat``). Then

    server_cpu_s = sum over processes alive at the last sample of (own + reaped) now - at the start
                   - sum over processes that exited during the window of (own + reaped) at the start

"At the start" is the first sample for a process present then, and zero for one spawned during
the window (a new process starts with zero CPU). A process that exits is reaped by its parent
(Apache's parent, gunicorn's arbiter, Starman's master do it at once), and the kernel then adds
its whole CPU life, reaped children included, to the parent's cutime/cstime: the parent's delta
counts it, and what it had used before the window is subtracted. Children spawned and reaped
between two samples are counted too (through their parent), even though they were never seen.
A zombie (exited, not yet reaped) still shows its CPU in /proc and is counted as alive.
``server_cpu_reaped_s`` is the part that came in through cutime/cstime.

The rest of the machine over the same window: ``machine_cpu_s``, the busy time of all CPUs
(``/proc/stat``, clock ticks), and ``own_cpu_s``, pounder's own process (its CPU clock, all
threads: the sampler, and the load engine when it runs in this process), are read at the same
instants as the samples that bound ``server_cpu_s``; so is ``front_cpu_s``, the CPU of a front that
passes the load to the server (php-fpm's nginx: not the server's, not another's), from its
processes' clocks (a front replaces no process during a load); ``other_cpu_s`` = machine - server
- own - front (at least 0) is what every other process used.

Limits: reaped children's CPU comes in clock ticks (10 ms per reaped child); a process whose parent ignores SIGCHLD
(auto-reaping) or that is re-parented outside the tree (double fork, daemonising helpers) takes
its CPU with it when it exits; CPU a child used before the first sample is excluded only if the
child was seen in the first sample; if the root itself exits, the accounting stops at the last
sample before (a message says so), and the processes seen that have exited by then count as exited.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from pounder import _live
from pounder._errors import PounderError, UsageError, public
from pounder._files import utc_timestamp
from pounder.procs._find import ServerGone, ServerTarget, discover, find_server
from pounder.procs._load_report import ChildSummary, MemPoint, ServerLoadReport
from pounder.procs._own import OwnPages
from pounder.procs._read import (
    MachineCpu,
    ProcessGone,
    Role,
    process_cpu_clock,
    read_cpu,
    read_machine_cpu,
    read_reading,
)
from pounder.procs._status import StatusError, StatusPoint, fetch_status, status_auto_url

_PID_REUSE_SLACK_S = 0.5


@dataclass(frozen=True)
class _Sight:
    """One sample's reading of a process: the sample (its index, its time in s) and the CPU clocks
    (its own and its reaped children's, s)."""

    sample: int
    t: float
    own: float
    reaped: float


@dataclass
class _Track:
    """Everything remembered about one process (one pid + start time)."""

    pid: int
    role: Role
    create_time: float
    first_sample: int
    first_t: float
    base_own: float  # CPU at the start of the window: first sight, or 0 if spawned during it
    base_reaped: float
    first_own: float
    last: _Sight
    """The latest sample that listed it."""
    zombie: bool = False
    gone: bool = False  # seen to have exited while the root was gone (no later sample lists it)
    first_uss: int | None = None
    first_uss_sample: int = -1
    last_uss: int | None = None
    last_uss_sample: int = -1
    max_rss: int | None = None
    max_uss: int | None = None
    min_shared: int | None = None


@dataclass
class _State:
    samples: int = 0
    last_t: float = 0.0
    tracks: list[_Track] = field(default_factory=list)
    current: dict[int, _Track] = field(default_factory=dict)
    series: list[MemPoint] = field(default_factory=list)
    status: list[StatusPoint] = field(default_factory=list)
    status_failures: int = 0
    skipped_reads: int = 0
    root_exited: bool = False
    messages: list[str] = field(default_factory=list)
    # the machine and pounder's own process at the first and at the last successful sample
    machine_first: tuple[MachineCpu, float, float | None] | None = None
    machine_last: tuple[MachineCpu, float, float | None] | None = None


@public
class ServerSampler:
    """Sample a server's processes every ``interval_s`` seconds in a daemon thread.

    ::

        sampler = ServerSampler(pounder.find_server(pidfile="/run/apache2.pid"), interval_s=1.0)
        sampler.start()          # first sample now
        ...                      # run the load
        report = sampler.stop()  # final sample, ServerLoadReport

    ``target`` is what :func:`find_server` returned, or the parent's pid. Children are listed
    again at every sample. ``status_url`` (Apache ``/server-status``; ``?auto`` is added) is read
    at every sample too; if it cannot be, one ``server-status: <reason>`` message is recorded and
    sampling goes on. See the module documentation for how the server's CPU is counted.
    """

    def __init__(self, target: ServerTarget | int, interval_s: float = 1.0, status_url: str | None = None,
                 front: int | None = None) -> None:
        if isinstance(target, bool) or not isinstance(target, (ServerTarget, int)):
            raise UsageError(f"target must be a ServerTarget or a pid, got {target!r}")
        if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) or not interval_s > 0:
            raise UsageError(f"interval_s must be more than 0, got {interval_s!r}")
        self._target = find_server(pid=target) if isinstance(target, int) else target
        self._interval = float(interval_s)
        self._status_url = None if status_url is None else status_auto_url(status_url)
        self._front = front
        self._status_timeout = min(2.0, max(0.2, self._interval))
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._state = _State()
        self._sampler_cpu = 0.0
        self._t0 = 0.0
        self._started_at = ""
        self._report: ServerLoadReport | None = None
        self._own: OwnPages | None = None
        self._told: tuple[float, dict[int, float]] | None = None  # the children's CPU at the last sample told

    @property
    def target(self) -> ServerTarget:
        return self._target

    @property
    def front(self) -> int | None:
        """The root of the front that passes the load to the server (None without one)."""
        return self._front

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called."""
        return self._thread is not None

    def start(self) -> None:
        """Take the first sample now (errors such as permission denied are raised here), then
        sample every interval in a daemon thread."""
        if self._thread is not None or self._report is not None:
            raise PounderError("this ServerSampler was already started")
        self._t0 = time.monotonic()
        self._started_at = utc_timestamp()
        self._sample_timed(first=True)
        self._thread = threading.Thread(target=self._run, name="pounder-server-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> ServerLoadReport:
        """Stop the thread, take a final sample and return the report (the same report if
        called again)."""
        if self._report is not None:
            return self._report
        if self._thread is None:
            raise PounderError("this ServerSampler was not started")
        self._stop_event.set()
        self._thread.join()
        self._sample_timed(first=False, last=True)
        self._report = self._build_report()
        return self._report

    def __enter__(self) -> ServerSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- sampling -----------------------------------------------------------------------------

    def _run(self) -> None:
        next_at = time.monotonic() + self._interval
        while not self._stop_event.wait(max(0.0, next_at - time.monotonic())):
            self._sample_timed(first=False)
            next_at += self._interval
            now = time.monotonic()
            if next_at < now:  # sampling took longer than the interval: do not try to catch up
                next_at = now + self._interval

    def _message(self, text: str) -> None:
        with self._lock:
            if text not in self._state.messages:
                self._state.messages.append(text)

    def _sample_timed(self, first: bool, last: bool = False) -> None:
        before = time.thread_time()
        try:
            self._sample(first, last)
        except PounderError as error:
            if first:
                raise
            self._message(str(error))
        except Exception as error:  # never let the thread die silently
            if first:
                raise
            self._message(f"sampler: {type(error).__name__}: {error}")
        finally:
            with self._lock:
                self._sampler_cpu += time.thread_time() - before

    def _sample(self, first: bool, last: bool = False) -> None:
        t = time.monotonic() - self._t0
        machine = _machine_now(self._front)
        try:
            members = discover(self._target)
        except ServerGone as error:
            if first:
                raise
            raise ServerGone(self._root_gone(error)) from None
        state = self._state
        index = state.samples
        points: list[MemPoint] = []
        child_cpu: dict[int, float] = {}  # each child's own CPU (s), for whoever listens (pounder._live)
        skipped = 0
        if first:
            # pounder's own process is taken out of the memory figures (root): what each process
            # shares with it is found at its first sample and again at the last one
            self._own = OwnPages.read()
        ours = self._own
        with self._lock:
            for member in members:
                try:
                    reading = read_reading(member.pid, member.role, member.ppid, ours, again=not last)
                except ProcessGone:
                    cpu = read_cpu(member.pid)  # a zombie still has its CPU times
                    if cpu is None:
                        skipped += 1
                        continue
                    track = self._track(member.pid, member.role, cpu[2], cpu[0], cpu[1], index, t, first)
                    track.zombie = True
                    continue
                mem = reading.mem
                # The process CPU clock has ns resolution; stat's utime + stime only 10 ms ticks.
                own = process_cpu_clock(mem.pid)
                track = self._track(
                    mem.pid,
                    member.role,
                    reading.create_time,
                    mem.cpu_s if own is None else own,
                    mem.children_cpu_s,
                    index,
                    t,
                    first,
                )
                track.zombie = False
                if member.role == "child":
                    child_cpu[mem.pid] = track.last.own
                if track.first_uss is None:
                    track.first_uss, track.first_uss_sample = mem.private, index
                track.last_uss, track.last_uss_sample = mem.private, index
                track.max_rss = mem.rss if track.max_rss is None else max(track.max_rss, mem.rss)
                track.max_uss = mem.private if track.max_uss is None else max(track.max_uss, mem.private)
                track.min_shared = mem.shared if track.min_shared is None else min(track.min_shared, mem.shared)
                points.append(MemPoint(round(t, 3), mem.pid, mem.rss, mem.private, mem.shared, mem.pss))
            state.series.extend(points)
            state.skipped_reads += skipped
            state.samples += 1
            state.last_t = t
            if first:
                state.machine_first = machine
            state.machine_last = machine
        if _live.anyone():
            self._tell(t, [point for point in points if point.pid in child_cpu], child_cpu)
        if self._status_url is not None:
            self._read_status(t)

    def _tell(self, t: float, points: list[MemPoint], cpu: dict[int, float]) -> None:
        """This sample of the children to whoever listens: their count, USS and PSS summed, and the
        CPU those seen at the previous sample too used per second since then."""
        cores = None
        if self._told is not None and t > self._told[0]:
            before = self._told[1]
            cores = sum(max(0.0, own - before[pid]) for pid, own in cpu.items() if pid in before) / (t - self._told[0])
        self._told = (t, cpu)
        at_unix = time.time() - (time.monotonic() - self._t0 - t)
        _live.tell_children(_live.ChildrenSample(at_unix=at_unix, children=len(points),
                                                 uss_bytes=sum(point.uss for point in points),
                                                 pss_bytes=sum(point.pss for point in points), cpu_cores=cores))

    def _root_gone(self, error: ServerGone) -> str:
        """The root exited: no sample can list the tree any more, so each process seen is checked
        by pid and start time, and one that has exited (or is a zombie) counts as exited. Returns
        the message to record."""
        with self._lock:
            self._state.root_exited = True
            tracks = list(self._state.current.values())
            last_t = self._state.last_t
        for track in tracks:
            if not track.gone and not _alive(track.pid, track.create_time):
                track.gone = True
        return (f"{error} during the run: what the server used after the last sample ({last_t:.1f} s) is "
                "unknown, so there are no per-request figures")  # fmt: skip

    def _track(
        self, pid: int, role: Role, create_time: float, own: float, reaped: float, index: int, t: float, first: bool
    ) -> _Track:
        state = self._state
        track = state.current.get(pid)
        if track is not None and abs(track.create_time - create_time) > _PID_REUSE_SLACK_S:
            track = None  # the pid was reused: the old process exited
        sight = _Sight(index, t, own, reaped)
        if track is None:
            track = _Track(
                pid=pid,
                role=role,
                create_time=create_time,
                first_sample=index,
                first_t=t,
                base_own=own if first else 0.0,
                base_reaped=reaped if first else 0.0,
                first_own=own if first else 0.0,
                last=sight,
            )
            state.tracks.append(track)
            state.current[pid] = track
        else:
            track.last = sight
        return track

    def _read_status(self, t: float) -> None:
        assert self._status_url is not None
        try:
            busy, idle, accesses = fetch_status(self._status_url, self._status_timeout)
        except StatusError as error:
            with self._lock:
                self._state.status_failures += 1
            self._message(f"server-status: {error}")
            return
        with self._lock:
            self._state.status.append(StatusPoint(round(t, 3), busy, idle, accesses))

    # -- the report ---------------------------------------------------------------------------

    def _build_report(self) -> ServerLoadReport:
        with self._lock:
            state = self._state
            last = state.samples - 1
            own = reaped = 0.0
            for track in state.tracks:
                if track.last.sample == last:  # alive (or a zombie) at the end
                    own += track.last.own - track.base_own
                    reaped += track.last.reaped - track.base_reaped
                else:  # exited: its whole life is in its reaper's cutime; take out the part before the window
                    reaped -= track.base_own + track.base_reaped
            children = [track for track in state.tracks if track.role == "child"]
            summaries = tuple(self._summary(track, last) for track in children)
            both_ends = [
                track.last_uss - track.first_uss
                for track in children
                if track.first_uss is not None
                and track.last_uss is not None
                and track.first_uss_sample == 0
                and track.last_uss_sample == last
            ]
            server_cpu = max(0.0, own + reaped)
            return ServerLoadReport(
                server_pid=self._target.pid,
                started_at=self._started_at,
                interval_s=self._interval,
                duration_s=round(max(0.0, state.last_t), 6),
                samples=state.samples,
                sampler_cpu_s=round(self._sampler_cpu, 6),
                server_cpu_s=round(server_cpu, 6),
                server_cpu_reaped_s=round(max(0.0, reaped), 6),
                children_seen=len(children),
                children_spawned=sum(1 for track in children if track.first_sample > 0),
                children_exited=sum(1 for s in summaries if s.exited),
                max_child_rss=max((t.max_rss for t in children if t.max_rss is not None), default=None),
                max_child_uss=max((t.max_uss for t in children if t.max_uss is not None), default=None),
                min_child_shared=min((t.min_shared for t in children if t.min_shared is not None), default=None),
                private_growth_total=sum(both_ends) if both_ends else None,
                children=summaries,
                series=tuple(state.series),
                status_url=self._status_url,
                status=tuple(state.status),
                status_failures=state.status_failures,
                skipped_reads=state.skipped_reads,
                messages=tuple(state.messages),
                root_exited=state.root_exited,
                **_machine_fields(state.machine_first, state.machine_last, server_cpu),
            )

    @staticmethod
    def _summary(track: _Track, last: int) -> ChildSummary:
        growth = None
        read_twice = track.last_uss_sample > track.first_uss_sample
        if track.first_uss is not None and track.last_uss is not None and read_twice:
            growth = track.last_uss - track.first_uss
        return ChildSummary(
            pid=track.pid, first_t=round(track.first_t, 3), last_t=round(track.last.t, 3),
            spawned=track.first_sample > 0, exited=track.last.sample != last or track.zombie or track.gone,
            cpu_s=round(max(0.0, track.last.own - track.first_own), 6),
            first_uss=track.first_uss, last_uss=track.last_uss, private_growth_bytes=growth,
            max_rss=track.max_rss, max_uss=track.max_uss, min_shared=track.min_shared,
        )  # fmt: skip


def _machine_now(front: int | None = None) -> tuple[MachineCpu, float, float | None] | None:
    """The machine's busy CPU, pounder's own CPU (user + system, all threads) and the CPU of the
    front whose root is ``front`` (its processes' own and reaped; None without one) now; None
    when ``/proc/stat`` cannot be read."""
    machine = read_machine_cpu()
    return None if machine is None else (machine, time.process_time(), None if front is None else _tree_cpu(front))


def _tree_cpu(root: int) -> float | None:
    """User + system CPU of process ``root`` and its descendants, with what they reaped (None
    when ``root`` is gone)."""
    try:
        parent = psutil.Process(root)
        total = sum(parent.cpu_times()[2:4])  # what it reaped
        for proc in [parent, *parent.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                total += times.user + times.system
        return total
    except psutil.Error:
        return None


def _machine_fields(
    first: tuple[MachineCpu, float, float | None] | None, last: tuple[MachineCpu, float, float | None] | None,
    server_cpu: float,
) -> dict[str, Any]:
    """``machine_cpu_s``, ``machine_cpus``, ``own_cpu_s`` and ``other_cpu_s`` between two readings
    of :func:`_machine_now` (none of them when either is missing)."""
    if first is None or last is None:
        return {}
    machine = max(0.0, last[0].busy_s - first[0].busy_s)
    own = max(0.0, last[1] - first[1])
    front = None if first[2] is None or last[2] is None else max(0.0, last[2] - first[2])
    return {
        "machine_cpu_s": round(machine, 6),
        "machine_cpus": last[0].cpus,
        "own_cpu_s": round(own, 6),
        "front_cpu_s": None if front is None else round(front, 6),
        "other_cpu_s": round(max(0.0, machine - server_cpu - own - (front or 0.0)), 6),
    }


def _alive(pid: int, create_time: float) -> bool:
    """Whether the process ``pid`` that started at ``create_time`` still runs (not a zombie)."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            return (abs(proc.create_time() - create_time) <= _PID_REUSE_SLACK_S
                    and proc.status() != psutil.STATUS_ZOMBIE)  # fmt: skip
    except psutil.Error:
        return False
