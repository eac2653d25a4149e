"""Running strace on a server's processes: finding it, attaching (and waiting until it traces
every thread), reading its complaints, stopping it so that it detaches."""

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

import psutil

from pounder._errors import PounderError, UsageError, public
from pounder.servers import die_with_parent_hook, interrupt_then_kill

ATTACH_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
INSTALL_STRACE = "install strace: apt-get install strace (dnf install strace on Fedora/RHEL)"
YAMA_SCOPE = Path("/proc/sys/kernel/yama/ptrace_scope")
_POLL_S = 0.02
_VERSION = re.compile(r"version\s+(\S+)")


@public
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


@public
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


def read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def wait_attached(proc: subprocess.Popen[bytes], stderr_path: Path, pids: list[int], parent: int) -> None:
    """Return once strace traces every thread of every process of ``pids`` still alive."""
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    waiting = list(pids)
    while True:
        exited = proc.poll() is not None  # before reading its stderr: all of it is there then
        complaints = read_text(stderr_path)
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


def start(binary: str, log: Path, stderr_path: Path, pids: list[int]) -> subprocess.Popen[bytes]:
    """``strace -f -qq -o LOG -p PID...``, its stderr to ``stderr_path``, in a session of its own
    (Ctrl-C reaches pounder only: it stops strace), killed if pounder dies."""
    argv = [binary, "-f", "-qq", "-o", str(log)]
    for pid in pids:
        argv += ["-p", str(pid)]
    with open(stderr_path, "wb") as stderr:
        try:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                                    start_new_session=True, preexec_fn=die_with_parent_hook(signal.SIGTERM))
        except OSError as error:
            raise PounderError(f"cannot run {binary}: {error.strerror or error}") from None


def stop(proc: subprocess.Popen[bytes]) -> int:
    """SIGINT (strace detaches from every process and exits), SIGKILL if it does not."""
    return interrupt_then_kill(proc, STOP_TIMEOUT_S)


@contextmanager
def log_place(log_path: str | os.PathLike[str] | None) -> Iterator[tuple[Path, Path]]:
    """(the strace log, strace's stderr): the log in a temporary directory unless kept."""
    with tempfile.TemporaryDirectory(prefix="pounder-strace-") as tmp:
        log = Path(log_path) if log_path is not None else Path(tmp) / "strace.log"
        yield log, Path(tmp) / "strace.stderr"
