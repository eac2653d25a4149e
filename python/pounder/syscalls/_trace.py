"""Tracing a server's system calls while pounder's bounded load runs (:func:`trace_syscalls`; strace
itself is run by ``_strace``).

How (decisions, also in ``pounder syscalls --help``):

1. The server is found (``find_server``); the warm-up requests are sent *before* strace attaches,
   so they are not traced (a child's first requests do one-time work: loading code, opening
   files).
2. ``strace -f -qq -o LOG -p PARENT -p CHILD...`` attaches to the parent and every current
   child (and grandchild). The parent is attached so that, with ``-f``, a child it forks during
   the run is traced from its first call; the parent's own calls (its once-a-second maintenance,
   reaping) are not per-request work and are left out of the counts (``parent_calls``).
3. pounder waits until strace is the tracer of every one of those processes (``TracerPid`` in
   /proc/PID/task/*/status), at most 10 s; a refused attach (ptrace not permitted) is reported
   with what to do.
4. The load runs: ``requests`` requests, at most ``duration`` long, on ``connections``
   connections, keep-alive off unless asked (so every request is a connection of its own:
   accept, read, respond, close, and the calls per request are those of the whole exchange).
   The load runs on epoll unless ``--io`` says otherwise: on io_uring a new connection's request
   follows its connect by a few microseconds, and a child that accepts in between reads once more.
5. When it is done pounder waits until the children are idle again (their context switch counts
   unchanged for 0.2 s, at most 5 s), so the last request's closing calls are in the log, then
   sends strace SIGINT: it detaches and exits (SIGKILL after 10 s; the kernel detaches then).
6. The log is parsed (:mod:`pounder.syscalls._parse`): calls are counted when they return; the
   calls per request divide by the requests completed. There must be no other traffic: pounder
   checks that the traced processes accepted no more connections than it opened, and refuses to
   report otherwise (as it does when a request failed: a failed request's calls cannot be
   divided among requests). Before anything is sent, pounder checks that a process of the
   server's tree listens on the URL's address and port (its socket inodes in /proc/PID/fd against
   /proc/PID/net/tcp and tcp6): a pid file of another server is an error, not a trace of
   nothing; when that cannot be read, a trace where the server accepted none of pounder's
   connections is refused.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Any

from pounder._errors import PounderError, UsageError, check_callable, check_path, check_text, public
from pounder._files import check_output_path, utc_timestamp
from pounder._units import count_in_range, count_text
from pounder._version import __version__
from pounder.load import BenchSpec, LoadOptions, ProgressCallback, check_io, check_tls, run_bench
from pounder.procs import (
    SERVER_OPTIONS,
    ServerGone,
    ServerTarget,
    TreeMember,
    check_server,
    discover,
    find_server,
    serves,
)
from pounder.results import BenchResult, load_failure
from pounder.syscalls._parse import TraceCounts, parse_strace_log
from pounder.syscalls._report import SyscallReport, count_tables
from pounder.syscalls._strace import find_strace, log_place, read_text, start, stop, strace_version, wait_attached
from pounder.traffic import NotLoopbackError

DEFAULT_REQUESTS = 1000
DEFAULT_CONNECTIONS = 4
DEFAULT_WARMUP = 100
DEFAULT_DURATION_S = 60.0
MAX_REQUESTS = 100_000
"""A request writes a few kB of strace log: 100,000 requests is already hundreds of MB."""
SETTLE_S = 0.2
SETTLE_MAX_S = 5.0

DEFAULT_LOAD = LoadOptions(requests=DEFAULT_REQUESTS, connections=DEFAULT_CONNECTIONS, keepalive=False,
                           duration=DEFAULT_DURATION_S)  # fmt: skip
"""The traced load unless told otherwise: bounded, and every request a connection of its own."""


def _switches(pid: int) -> int | None:
    """Context switches of all threads of ``pid`` (each system call stop under strace is one)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        status = read_text(Path(f"/proc/{pid}/task/{task}/status"))
        total += sum(int(value) for value in re.findall(r"^(?:non)?voluntary_ctxt_switches:\s*(\d+)", status, re.M))
    return total


def _settle(target: ServerTarget) -> bool:
    """Wait until the server's processes other than the parent have made no system call for
    ``SETTLE_S`` (at most ``SETTLE_MAX_S``); False if they were still busy."""
    deadline = time.monotonic() + SETTLE_MAX_S
    try:
        pids = [member.pid for member in discover(target) if member.role != "parent"]
    except ServerGone:
        return True
    last = {pid: _switches(pid) for pid in pids}
    stable_since = time.monotonic()
    while True:
        time.sleep(0.05)
        now = {pid: _switches(pid) for pid in pids}
        if now != last:
            last, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since >= SETTLE_S:
            return True
        if time.monotonic() >= deadline:
            return False


def _children(members: tuple[TreeMember, ...], target: ServerTarget) -> list[int]:
    """The pids to attach to besides the parent (children and deeper); UsageError if none."""
    children = [member.pid for member in members if member.role != "parent"]
    if not children:
        raise UsageError(f"the server process {target.pid} ({target.name}) has no children to trace: name the "
                         "parent of a pre-forking server (its workers serve the requests)")  # fmt: skip
    return children


def _process_of(tid: int) -> int:
    """The process (thread group) of thread ``tid``; ``tid`` itself when unknown (gone)."""
    match = re.search(r"^Tgid:\s*(\d+)", read_text(Path(f"/proc/{tid}/status")), re.MULTILINE)
    return int(match.group(1)) if match else tid


def _target(pid: int | None, pidfile: str | os.PathLike[str] | None, name: str | None) -> ServerTarget:
    given = [flag for flag, value in (("--server-pid", pid), ("--server-pidfile", pidfile),
                                      ("--server-name", name)) if value is not None]  # fmt: skip
    if len(given) != 1:
        got = f" (got {' and '.join(given)})" if given else ""
        raise UsageError(f"name the server to trace with exactly one of --server-pid, --server-pidfile and "
                         f"--server-name{got}")  # fmt: skip
    return check_server(find_server(pid=pid, pidfile=pidfile, name=name, options=SERVER_OPTIONS))


def _named(target: ServerTarget) -> str:
    """``process 1234 (from pidfile g.pid)``: the process as the user named it."""
    how = "" if target.found_by.startswith("pid ") else f" (from {target.found_by})"
    return f"process {target.pid}{how}"


def _check_listens(target: ServerTarget, connect: str) -> None:
    """UsageError unless a process of the server's tree listens on ``connect`` ("ip:port", "[ip6]:port";
    a Unix socket is not checked here). When no descriptor can be read (another user's server, not
    root), the check after the load (no connection accepted) is what is left."""
    if serves(target, connect) is False:
        raise UsageError(f"{_named(target)} does not listen on {connect}: it is not the server behind the URL")


def _check_accepted(target: ServerTarget, accepted: int, opened: int) -> None:
    """The traced processes must have accepted pounder's connections: none accepted while pounder
    opened some means another server answered the URL; more means other traffic."""
    if opened and not accepted:
        raise PounderError(f"{_named(target)} accepted none of the {opened:,} connections pounder opened: it is "
                           "not the server behind the URL, so there is nothing to count")  # fmt: skip
    if accepted > opened:
        raise PounderError(f"other traffic reached the server during the trace: its processes accepted "
                           f"{accepted:,} connections, pounder opened {opened:,}, so the calls "
                           "per request would be wrong; trace a server only pounder talks to")  # fmt: skip


def _check_result(result: BenchResult) -> None:
    if result.interrupted:
        raise KeyboardInterrupt
    failed, complete = result.requests.failed, result.requests.complete
    if failed:
        errors = ", ".join(f"{name} {count:,}" for name, count in result.errors.nonzero().items())
        raise PounderError(f"{failed:,} of {failed + complete:,} requests failed ({errors}): their system calls "
                           "cannot be divided among requests; make every request succeed first (check the URL "
                           "with pounder bench)")  # fmt: skip
    nowhere = load_failure(result)  # the one rule of every load: no answer (complete 0) included
    if nowhere is not None:
        raise PounderError(f"{nowhere}: the system calls of these answers are not the page's; check the URL with "
                           "pounder bench")  # fmt: skip


def _were(count: int, one: str, many: str | None = None) -> str:
    """"1 process was", "3 processes were": ``count`` and its noun, with the verb in agreement."""
    return f"{count_text(count, one, many)} {'was' if count == 1 else 'were'}"


def _messages(result: BenchResult, counts: TraceCounts, started: list[int], exited: list[int],
              settled: bool) -> list[str]:  # fmt: skip
    messages = []
    if started:
        messages.append(f"{_were(len(started), 'process', 'processes')} started during the trace (pids "
                        f"{', '.join(map(str, started[:10]))}): their start-up calls are counted too; start "
                        "enough children beforehand (StartServers, MinSpareServers) or use fewer connections")
    if exited:
        messages.append(f"{count_text(len(exited), 'traced child', 'traced children')} exited during the trace (pids "
                        f"{', '.join(map(str, exited[:10]))}, e.g. MaxRequestsPerChild): their exit calls "
                        "are counted too")  # fmt: skip
    if result.requests.non_2xx:
        statuses = ", ".join(f"{code} x{count:,}" for code, count in sorted(result.status.items())
                             if not code.startswith("2"))  # fmt: skip
        messages.append(f"{_were(result.requests.non_2xx, 'response')} not 2xx ({statuses}): is the URL right?")
    if not settled:
        messages.append(f"the server's children were still busy {SETTLE_MAX_S:g} s after the load ended: calls "
                        "they made after that are not counted")  # fmt: skip
    if counts.unparsed:
        messages.append(f"{count_text(counts.unparsed, 'line')} of the strace log "
                        f"{'was' if counts.unparsed == 1 else 'were'} not understood and not counted, e.g. "
                        f"{(counts.first_unparsed or '')[:120]!r}")  # fmt: skip
    return messages


def _specs(url: str, given: LoadOptions, warm: int) -> tuple[BenchSpec, BenchSpec | None]:
    """The traced load's spec (``requests`` bounded) and the warm-up's (None for no warm-up)."""
    requests = DEFAULT_REQUESTS if given.requests is None else given.requests
    count = count_in_range(requests, "-n/--requests", 1, MAX_REQUESTS)
    if given.io == "auto":
        # epoll unless asked: on the ring, a new connection's request leaves a few µs after its
        # connect completes, and a child that accepts in between reads once more (EAGAIN), so
        # the server's calls per request would not be whole (tests/e2e/test_syscalls.py)
        given = LoadOptions.of(given, io="epoll")
    try:
        spec = BenchSpec.from_options(url, options=LoadOptions.of(given, requests=count))
        warm_options = LoadOptions.of(given, requests=warm, duration=None)
        return spec, None if warm == 0 else BenchSpec.from_options(url, options=warm_options)
    except NotLoopbackError as error:  # (syscalls has no --allow-remote: strace runs here)
        raise UsageError(f"{error.address} is not a loopback address (127.0.0.0/8 or ::1): strace traces a "
                         "server on this machine only") from None


def _traced(binary: str, log_path: str | os.PathLike[str] | None, target: ServerTarget, children: list[int],
            parent_tids: set[int], spec: BenchSpec,
            on_progress: ProgressCallback | None) -> tuple[str, BenchResult, TraceCounts, bool]:
    """The load sent under strace: when it began, its result, the calls counted (the parent's
    threads left out) and whether the children settled after it."""
    with log_place(log_path) as (log, stderr_path):
        proc = start(binary, log, stderr_path, [target.pid, *children])
        try:
            wait_attached(proc, stderr_path, [target.pid, *children], target.pid)
            started_at = utc_timestamp()
            result = run_bench(spec, on_progress)
            settled = _settle(target) if not result.interrupted else True
        finally:
            code = stop(proc)
        _check_result(result)
        if code not in (0, 130, -signal.SIGINT):
            tail = read_text(stderr_path).strip().splitlines()
            raise PounderError(f"strace ended with status {code}" + (f": {tail[-1]}" if tail else ""))
        with open(log, encoding="utf-8", errors="surrogateescape") as lines:
            return started_at, result, parse_strace_log(lines, exclude_pids=parent_tids), settled


def _report(target: ServerTarget, spec: BenchSpec, keepalive: bool, warm_spec: BenchSpec | None, version: str,
            children: list[int], started_at: str, result: BenchResult, counts: TraceCounts,
            settled: bool) -> SyscallReport:
    """The report of a traced load: the calls per request, and who started or exited meanwhile."""
    attached = set(children)
    try:
        alive = {member.pid for member in discover(target)}
    except ServerGone:
        alive = set()
    processes = {_process_of(tid) for tid in counts.pids}  # strace -f names threads by their own id
    started = sorted(processes - attached)
    exited = sorted((attached | processes) - alive)
    accepted = counts.succeeded("accept") + counts.succeeded("accept4")
    _check_accepted(target, accepted, result.connections_opened)
    calls, failures = count_tables(counts, result.requests.complete)
    return SyscallReport(
        tool_version=__version__,
        started_at=started_at,
        server_pid=target.pid,
        server_name=target.name,
        found_by=target.found_by,
        url=spec.targets[0].info().url,
        method=spec.http.method,
        requests=result.requests.complete,
        non_2xx=result.requests.non_2xx,
        connections=spec.load.connections,
        keepalive=keepalive,
        warmup_requests=0 if warm_spec is None else warm_spec.load.requests or 0,
        elapsed_s=result.elapsed_s,
        connections_opened=result.connections_opened,
        connections_accepted=accepted,
        strace_version=version,
        attached=tuple(children),
        processes=tuple(sorted(counts.pids)),
        started=tuple(started),
        exited=tuple(exited),
        total_calls=counts.total,
        calls=calls,
        failures=failures,
        parent_calls=counts.excluded_calls,
        unfinished_calls=counts.unfinished,
        signals=counts.signals,
        unparsed_lines=counts.unparsed,
        messages=tuple(_messages(result, counts, started, exited, settled)),
    )


@public
def trace_syscalls(
    url: str,
    *,
    server_pid: int | None = None,
    server_pidfile: str | os.PathLike[str] | None = None,
    server_name: str | None = None,
    warmup: int | str = DEFAULT_WARMUP,
    strace: str | os.PathLike[str] | None = None,
    log_path: str | os.PathLike[str] | None = None,
    on_progress: ProgressCallback | None = None,
    options: LoadOptions | None = None,
    **load: Any,
) -> SyscallReport:
    """Trace the system calls of a server's processes while pounder sends it ``requests``
    requests (closed loop, ``connections`` connections, keep-alive off by default, at most
    ``duration`` long), and count them per request. See the module's docstring for how.

    The load options are :func:`pounder.bench`'s (:class:`~pounder.LoadOptions`, as ``options`` or
    as keyword arguments), by default :data:`DEFAULT_LOAD`; keywords change single options of it, while
    ``options`` replaces it whole (``requests`` always has a bound: 1000 when not given).
    ``server_pid``, ``server_pidfile`` or ``server_name`` (exactly one) name the server's parent.
    ``warmup`` requests are sent before strace attaches and are not traced. ``strace``: the
    program (default: ``strace`` on PATH); ``log_path``: keep strace's raw log there.

    Raises :class:`~pounder.UsageError` for bad input or what the user must fix first (strace
    missing, ptrace not permitted, a server without children), :class:`~pounder.PounderError`
    when the trace cannot be counted (a request failed, other traffic reached the server), and
    ``KeyboardInterrupt`` after stopping strace when the load was interrupted.
    """
    check_text(url, "trace_syscalls: url")
    check_path(strace, "strace", optional=True)
    check_path(log_path, "log_path", optional=True)
    check_callable(on_progress, "on_progress")
    given = LoadOptions.of(DEFAULT_LOAD if options is None else options, **load)
    spec, warm_spec = _specs(url, given, count_in_range(warmup, "--warmup", 0, MAX_REQUESTS))
    if log_path is not None:
        check_output_path(os.fspath(log_path), "--log", "text")
    target = _target(server_pid, server_pidfile, server_name)
    _children(target.members, target)  # before anything is sent
    _check_listens(target, spec.targets[0].info().connect)
    binary = find_strace(strace)
    version = strace_version(binary)
    check_io(spec)
    check_tls(spec)  # its handshake before the warm-up and strace: not counted
    if warm_spec is not None:
        warm_result = run_bench(warm_spec)
        if warm_result.interrupted:
            raise KeyboardInterrupt
    try:
        children = _children(discover(target), target)  # the warm-up may have started some
    except ServerGone as error:
        raise PounderError(str(error)) from None
    try:
        parent_tids = {int(task) for task in os.listdir(f"/proc/{target.pid}/task")}
    except OSError:
        raise PounderError(f"the server process {target.pid} has exited") from None
    started_at, result, counts, settled = _traced(binary, log_path, target, children, parent_tids, spec, on_progress)
    return _report(target, spec, given.keepalive, warm_spec, version, children, started_at, result, counts, settled)
