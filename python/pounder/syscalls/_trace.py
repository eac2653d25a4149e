"""Tracing a server's system calls while pounder's bounded load runs (:func:`trace_syscalls`).

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
5. When it is done pounder waits until the children are idle again (their context switch counts
   unchanged for 0.2 s, at most 5 s), so the last request's closing calls are in the log, then
   sends strace SIGINT: it detaches and exits (SIGKILL after 10 s; the kernel detaches then).
6. The log is parsed (:mod:`pounder.syscalls._parse`): calls are counted when they return; the
   calls per request divide by the requests completed. There must be no other traffic: pounder
   checks that the traced processes accepted no more connections than it opened, and refuses to
   report otherwise (as it does when a request failed: a failed request's calls cannot be
   divided among requests).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from pounder._errors import PounderError, UsageError
from pounder._files import check_output_path, utc_timestamp
from pounder._units import count_in_range
from pounder._version import __version__
from pounder.load import BenchResult, BenchSpec, LoadOptions, ProgressCallback, run_bench
from pounder.procs import ServerGone, ServerTarget, TreeMember, discover, find_server
from pounder.servers import die_with_parent_hook
from pounder.syscalls._parse import TraceCounts, parse_strace_log
from pounder.syscalls._report import SyscallReport, count_tables

DEFAULT_REQUESTS = 1000
DEFAULT_CONNECTIONS = 4
DEFAULT_WARMUP = 100
DEFAULT_DURATION_S = 60.0
MAX_REQUESTS = 100_000
"""A request writes a few kB of strace log: 100,000 requests is already hundreds of MB."""
ATTACH_TIMEOUT_S = 10.0
SETTLE_S = 0.2
SETTLE_MAX_S = 5.0
STOP_TIMEOUT_S = 10.0
INSTALL_STRACE = "install strace: apt-get install strace (dnf install strace on Fedora/RHEL)"
YAMA_SCOPE = Path("/proc/sys/kernel/yama/ptrace_scope")
_POLL_S = 0.02
_VERSION = re.compile(r"version\s+(\S+)")


DEFAULT_LOAD = LoadOptions(requests=DEFAULT_REQUESTS, connections=DEFAULT_CONNECTIONS, keepalive=False,
                           duration=DEFAULT_DURATION_S)  # fmt: skip
"""The traced load unless told otherwise: bounded, and every request a connection of its own."""


def find_strace(strace: str | os.PathLike[str] | None = None) -> str:
    """The strace program to run (``strace`` from PATH by default); :class:`~pounder.UsageError`
    saying how to install it when there is none."""
    name = os.fspath(strace) if strace is not None else "strace"
    found = shutil.which(name)
    if found is None:
        if strace is not None:
            raise UsageError(f"strace program {name!r} not found or not executable")
        raise UsageError(f"strace is not installed (no strace on PATH): {INSTALL_STRACE}")
    return found


def strace_version(binary: str) -> str:
    """``strace -V``'s version ("6.1"); :class:`~pounder.PounderError` if it does not run."""
    try:
        done = subprocess.run([binary, "-V"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=10, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PounderError(f"cannot run {binary} -V: {getattr(error, 'strerror', None) or error}") from None
    match = _VERSION.search(done.stdout)
    if done.returncode != 0 or match is None:
        first = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[0]
        raise PounderError(f"{binary} -V did not work: {first}")
    return match.group(1)


def ptrace_advice(pids: list[int]) -> str:
    """What to do when strace may not attach: the user to run as, the Yama setting if any."""
    users = set()
    for pid in pids:
        try:
            users.add(psutil.Process(pid).username())
        except (psutil.Error, KeyError):
            continue
    owner = f" ({', '.join(sorted(users))})" if users else ""
    advice = f"run pounder as root or as the server's user{owner}"
    try:
        scope = YAMA_SCOPE.read_text().strip()
    except OSError:
        scope = ""
    if scope and scope != "0":
        advice += f", or set {YAMA_SCOPE} to 0 (it is {scope}): sysctl kernel.yama.ptrace_scope=0"
    return advice + "; in a container strace also needs the SYS_PTRACE capability"


def attach_failure(stderr: str, pids: list[int]) -> PounderError | None:
    """The error for strace's complaints while attaching, or None when there is none yet."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if any("Operation not permitted" in line for line in lines):
        return UsageError(f"strace may not trace the server's processes (ptrace: Operation not permitted): "
                          f"{ptrace_advice(pids)}")  # fmt: skip
    problems = [line for line in lines if "No such process" not in line]  # a child that exited meanwhile
    if problems:
        return PounderError(f"strace failed: {problems[0]}")
    return None


def _tracers(pid: int) -> set[int] | None:
    """The TracerPid of every thread of ``pid``, or None when it is gone."""
    tracers = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        try:
            status = Path(f"/proc/{pid}/task/{task}/status").read_text()
        except OSError:
            continue
        match = re.search(r"^TracerPid:\s*(\d+)", status, re.MULTILINE)
        if match:
            tracers.add(int(match.group(1)))
    return tracers if tracers else None


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _wait_attached(proc: subprocess.Popen[bytes], stderr_path: Path, pids: list[int], parent: int) -> None:
    """Return once strace traces every thread of every process of ``pids`` still alive."""
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    waiting = list(pids)
    while True:
        exited = proc.poll() is not None  # before reading its stderr: all of it is there then
        complaints = _read(stderr_path)
        error = attach_failure(complaints, pids)
        if error is not None:
            raise error
        if exited:
            last = complaints.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
            raise PounderError(f"strace exited while attaching: {last[0]}")
        still = []
        for pid in waiting:
            tracers = _tracers(pid)
            if tracers is None:  # exited meanwhile
                if pid == parent:
                    raise PounderError(f"the server process {parent} exited")
                continue
            others = tracers - {0, proc.pid}
            if others:
                raise UsageError(f"process {pid} of the server is already traced by process {min(others)} "
                                 "(a debugger or another strace): stop that first")  # fmt: skip
            if tracers != {proc.pid}:
                still.append(pid)
        waiting = still
        if not waiting:
            return
        if time.monotonic() >= deadline:
            raise PounderError(f"strace had not attached to processes {', '.join(map(str, waiting))} "
                               f"after {ATTACH_TIMEOUT_S:g} s")  # fmt: skip
        time.sleep(_POLL_S)


def _switches(pid: int) -> int | None:
    """Context switches of all threads of ``pid`` (each system call stop under strace is one)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        status = _read(Path(f"/proc/{pid}/task/{task}/status"))
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


def _stop(proc: subprocess.Popen[bytes]) -> int:
    """SIGINT (strace detaches from every process and exits), SIGKILL if it does not."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


@contextmanager
def _log_place(log_path: str | os.PathLike[str] | None) -> Iterator[tuple[Path, Path]]:
    """(the strace log, strace's stderr): the log in a temporary directory unless kept."""
    with tempfile.TemporaryDirectory(prefix="pounder-strace-") as tmp:
        log = Path(log_path) if log_path is not None else Path(tmp) / "strace.log"
        yield log, Path(tmp) / "strace.stderr"


def _children(members: tuple[TreeMember, ...], target: ServerTarget) -> list[int]:
    """The pids to attach to besides the parent (children and deeper); UsageError if none."""
    children = [member.pid for member in members if member.role != "parent"]
    if not children:
        raise UsageError(f"the server process {target.pid} ({target.name}) has no children to trace: name the "
                         "parent of a pre-forking server (its workers serve the requests)")  # fmt: skip
    return children


def _process_of(tid: int) -> int:
    """The process (thread group) of thread ``tid``; ``tid`` itself when unknown (gone)."""
    match = re.search(r"^Tgid:\s*(\d+)", _read(Path(f"/proc/{tid}/status")), re.MULTILINE)
    return int(match.group(1)) if match else tid


def _target(pid: int | None, pidfile: str | os.PathLike[str] | None, name: str | None) -> ServerTarget:
    given = [flag for flag, value in (("--server-pid", pid), ("--server-pidfile", pidfile),
                                      ("--server-name", name)) if value is not None]  # fmt: skip
    if len(given) != 1:
        got = f" (got {' and '.join(given)})" if given else ""
        raise UsageError(f"name the server to trace with exactly one of --server-pid, --server-pidfile and "
                         f"--server-name{got}")  # fmt: skip
    return find_server(pid=pid, pidfile=pidfile, name=name)


def _check_result(result: BenchResult) -> None:
    if result.interrupted:
        raise KeyboardInterrupt
    failed, complete = result.requests.failed, result.requests.complete
    if failed:
        errors = ", ".join(f"{name} {count:,}" for name, count in result.errors.nonzero().items())
        raise PounderError(f"{failed:,} of {failed + complete:,} requests failed ({errors}): their system calls "
                           "cannot be divided among requests; make every request succeed first (check the URL "
                           "with pounder bench)")  # fmt: skip
    if complete == 0:
        raise PounderError("no request completed: nothing to divide the system calls by")


def _messages(result: BenchResult, counts: TraceCounts, started: list[int], exited: list[int],
              settled: bool) -> list[str]:  # fmt: skip
    messages = []
    if started:
        messages.append(f"{len(started)} processes were started during the trace (pids "
                        f"{', '.join(map(str, started[:10]))}): their start-up calls are counted too; start "
                        "enough children beforehand (StartServers, MinSpareServers) or use fewer connections")
    if exited:
        messages.append(f"{len(exited)} traced children exited during the trace (pids "
                        f"{', '.join(map(str, exited[:10]))}, e.g. MaxRequestsPerChild): their exit calls "
                        "are counted too")  # fmt: skip
    if result.requests.non_2xx:
        statuses = ", ".join(f"{code} x{count:,}" for code, count in sorted(result.status.items())
                             if not code.startswith("2"))  # fmt: skip
        messages.append(f"{result.requests.non_2xx:,} responses were not 2xx ({statuses}): is the URL right?")
    if not settled:
        messages.append(f"the server's children were still busy {SETTLE_MAX_S:g} s after the load ended: calls "
                        "they made after that are not counted")  # fmt: skip
    if counts.unparsed:
        messages.append(f"{counts.unparsed:,} lines of the strace log were not understood and not counted, e.g. "
                        f"{(counts.first_unparsed or '')[:120]!r}")  # fmt: skip
    return messages


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
    as keyword arguments), by default :data:`DEFAULT_LOAD` (``requests`` always has a bound: 1000 when not given).
    ``server_pid``, ``server_pidfile`` or ``server_name`` (exactly one) name the server's parent.
    ``warmup`` requests are sent before strace attaches and are not traced. ``strace``: the
    program (default: ``strace`` on PATH); ``log_path``: keep strace's raw log there.

    Raises :class:`~pounder.UsageError` for bad input or what the user must fix first (strace
    missing, ptrace not permitted, a server without children), :class:`~pounder.PounderError`
    when the trace cannot be counted (a request failed, other traffic reached the server), and
    ``KeyboardInterrupt`` after stopping strace when the load was interrupted.
    """
    given = LoadOptions.of(DEFAULT_LOAD if options is None else options, **load)
    requests = DEFAULT_REQUESTS if given.requests is None else given.requests
    count = count_in_range(requests, "-n/--requests", 1, MAX_REQUESTS)
    warm = count_in_range(warmup, "--warmup", 0, MAX_REQUESTS)
    spec = BenchSpec.from_options(url, options=LoadOptions.of(given, requests=count))
    warm_spec = None if warm == 0 else BenchSpec.from_options(url, options=LoadOptions.of(given, requests=warm,
                                                                                          duration=None))  # fmt: skip
    if log_path is not None:
        check_output_path(os.fspath(log_path), "--log")
    target = _target(server_pid, server_pidfile, server_name)
    _children(target.members, target)  # before anything is sent
    binary = find_strace(strace)
    version = strace_version(binary)
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
    with _log_place(log_path) as (log, stderr_path):
        argv = [binary, "-f", "-qq", "-o", str(log), "-p", str(target.pid)]
        for pid in children:
            argv += ["-p", str(pid)]
        with open(stderr_path, "wb") as stderr:
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                                        start_new_session=True,  # Ctrl-C reaches pounder only: it stops strace
                                        preexec_fn=die_with_parent_hook(signal.SIGTERM))  # fmt: skip
            except OSError as error:
                raise PounderError(f"cannot run {binary}: {error.strerror or error}") from None
        try:
            _wait_attached(proc, stderr_path, [target.pid, *children], target.pid)
            started_at = utc_timestamp()
            result = run_bench(spec, on_progress)
            settled = _settle(target) if not result.interrupted else True
        finally:
            code = _stop(proc)
        _check_result(result)
        if code not in (0, 130, -signal.SIGINT):
            tail = _read(stderr_path).strip().splitlines()
            raise PounderError(f"strace ended with status {code}" + (f": {tail[-1]}" if tail else ""))
        with open(log, encoding="utf-8", errors="surrogateescape") as lines:
            counts = parse_strace_log(lines, exclude_pids=parent_tids)
    attached = set(children)
    try:
        alive = {member.pid for member in discover(target)}
    except ServerGone:
        alive = set()
    processes = {_process_of(tid) for tid in counts.pids}  # strace -f names threads by their own id
    started = sorted(processes - attached)
    exited = sorted((attached | processes) - alive)
    accepted = counts.succeeded("accept") + counts.succeeded("accept4")
    if accepted > result.connections_opened:
        raise PounderError(f"other traffic reached the server during the trace: its processes accepted "
                           f"{accepted:,} connections, pounder opened {result.connections_opened:,}, so the calls "
                           "per request would be wrong; trace a server only pounder talks to")  # fmt: skip
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
        keepalive=given.keepalive,
        warmup_requests=0 if warm_spec is None else warm,
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
