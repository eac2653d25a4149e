"""The guard: a small process that stops every server this process started if this process dies
without stopping them itself (SIGKILL, a crash). The kernel's parent-death signal
(``PR_SET_PDEATHSIG``) reaches only a server's own process; a server started through a shell
(``bash -c 'gunicorn ...'``) leaves its real parent and workers running when that shell dies. The
guard holds the process group of every server started (each has its own session, so its group is
everything it forked) and, when the pipe from this process closes (however this process ended),
sends the group SIGTERM, waits up to two seconds, then SIGKILL. It ignores the terminal's signals:
only the pipe ends it.

It also holds the memory cgroups pounder made (:mod:`pounder.servers._cgroup`): after the groups,
it SIGKILLs whatever is still in them (every process there is a server's) and removes them,
so a SIGKILLed pounder leaves no cgroup directory behind (nor keeps its parent cgroup busy)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading

from pounder._errors import UsageError, check_type, public

_GUARD = r"""
import os, signal, sys, time
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(sig, signal.SIG_IGN)
groups = set()
cgroups = set()
for line in sys.stdin:
    sign, _, arg = line.rstrip("\n").partition(" ")
    if sign in ("c+", "c-") and arg.startswith("/"):
        (cgroups.add if sign == "c+" else cgroups.discard)(arg)
    elif arg.isdigit():
        (groups.add if sign == "+" else groups.discard)(int(arg))
def sent(kill, target, sig):
    try:
        kill(target, sig)
        return True
    except OSError:
        return False
for group in groups:
    sent(os.killpg, group, signal.SIGTERM)
end = time.monotonic() + 2.0
while any(sent(os.killpg, g, 0) for g in groups) and time.monotonic() < end:
    time.sleep(0.05)
for group in groups:
    sent(os.killpg, group, signal.SIGKILL)
for path in cgroups:
    try:
        with open(os.path.join(path, "cgroup.kill"), "w") as kill:  # v2, Linux 5.14+: all at once
            kill.write("1")
    except OSError:
        pass
    try:
        pids = [int(pid) for pid in open(os.path.join(path, "cgroup.procs")).read().split()]
    except (OSError, ValueError):
        pids = []
    for pid in pids:
        sent(os.kill, pid, signal.SIGKILL)
end = time.monotonic() + 2.0
while cgroups and time.monotonic() < end:
    for path in list(cgroups):
        try:
            os.rmdir(path)
            cgroups.discard(path)
        except FileNotFoundError:
            cgroups.discard(path)
        except OSError:
            pass
    if cgroups:
        time.sleep(0.05)
"""

_lock = threading.Lock()
_guard: subprocess.Popen[str] | None = None


def _send(line: str, *, start: bool) -> None:
    global _guard
    with _lock:
        if _guard is None or _guard.poll() is not None:
            if not start:
                return
            try:
                _guard = subprocess.Popen([sys.executable, "-S", "-c", _GUARD], stdin=subprocess.PIPE, text=True,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True)
            except OSError:  # no guard: the parent-death signal and the atexit hook still apply
                return
        assert _guard.stdin is not None
        with contextlib.suppress(OSError, ValueError):
            _guard.stdin.write(line + "\n")
            _guard.stdin.flush()


def _check_group(group: int, caller: str) -> None:
    check_type(group, int, f"{caller}: group", "a process group id (a whole number)")
    if group < 1:
        raise UsageError(f"{caller}: group must be a process group id (1 or more), got {group}")


@public
def guard_group(group: int) -> None:
    """Have the guard stop process group ``group`` if this process dies without stopping it (its
    processes are this process's to stop, e.g. a local Ray node's)."""
    _check_group(group, "guard_group")
    _send(f"+ {group}", start=True)


@public
def release_group(group: int) -> None:
    """The group was stopped: the guard forgets it."""
    _check_group(group, "release_group")
    _send(f"- {group}", start=False)


def guard_cgroup(path: str) -> None:
    """Have the guard empty and remove the cgroup directory ``path`` (absolute) if this process
    dies without removing it."""
    if path.startswith("/") and "\n" not in path:
        _send(f"c+ {path}", start=True)


def release_cgroup(path: str) -> None:
    """The cgroup ``path`` was removed: the guard forgets it."""
    if path.startswith("/") and "\n" not in path:
        _send(f"c- {path}", start=False)
