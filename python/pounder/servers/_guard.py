"""The guard: a small process that stops every server this process started if this process dies
without stopping them itself (SIGKILL, a crash). The kernel's parent-death signal
(``PR_SET_PDEATHSIG``) reaches only a server's own process; a server started through a shell
(``bash -c 'gunicorn ...'``) leaves its real parent and workers running when that shell dies. The
guard holds the process group of every server started (each has its own session, so its group is
everything it forked) and, when the pipe from this process closes (however this process ended),
sends the group SIGTERM, waits up to two seconds, then SIGKILL. It ignores the terminal's signals:
only the pipe ends it."""

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
for line in sys.stdin:
    sign, _, group = line.strip().partition(" ")
    if group.isdigit():
        (groups.add if sign == "+" else groups.discard)(int(group))
def alive(group):
    try:
        os.killpg(group, 0)
        return True
    except OSError:
        return False
for group in groups:
    try:
        os.killpg(group, signal.SIGTERM)
    except OSError:
        pass
end = time.monotonic() + 2.0
while any(alive(g) for g in groups) and time.monotonic() < end:
    time.sleep(0.05)
for group in groups:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
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
