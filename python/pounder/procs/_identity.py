"""Whether a process named as a server is one, checked before anything is started: it or one of its
children holds a listening socket (TCP, or Unix as php-fpm's pool behind nginx). pid 1, a shell or a
``sleep`` is refused in one line; so is a process whose open files the kernel will not show (another
user's without root: say so; even to root: a process of another container or a protected one)."""

from __future__ import annotations

import contextlib
import os
import signal

import psutil

from pounder._errors import UsageError, public
from pounder.procs._find import ServerTarget

_TCP_LISTEN = "0A"
_UNIX_ACCEPTCON = 0x10000  # __SO_ACCEPTCON in /proc/net/unix's Flags: a listening socket


def _listening_inodes(pid: int) -> set[str]:
    """Inodes of the listening TCP and Unix sockets in ``pid``'s network namespace (its
    ``/proc/PID/net``; our own when it cannot be read)."""
    inodes: set[str] = set()
    for where in (f"/proc/{pid}/net", "/proc/net"):
        for table in ("tcp", "tcp6"):
            with contextlib.suppress(OSError), open(f"{where}/{table}") as lines:
                next(lines, None)
                inodes.update(fields[9] for line in lines
                              if len(fields := line.split()) >= 10 and fields[3] == _TCP_LISTEN)  # fmt: skip
        with contextlib.suppress(OSError), open(f"{where}/unix") as lines:
            next(lines, None)
            for line in lines:
                fields = line.split()
                with contextlib.suppress(ValueError, IndexError):
                    if int(fields[3], 16) & _UNIX_ACCEPTCON:
                        inodes.add(fields[6])
        if inodes:
            return inodes
    return inodes


def _sockets(pid: int) -> set[str]:
    """The socket inodes ``pid`` holds open; PermissionError when the kernel will not show them."""
    found, denied, read = set(), False, False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return set()
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except PermissionError:  # the list may be shown and each link not (ptrace's rules)
            denied = True
            continue
        except OSError:
            continue
        read = True
        if link.startswith("socket:["):
            found.add(link[8:-1])
    if denied and not read:
        raise PermissionError(f"/proc/{pid}/fd")
    return found


@public
def check_server(target: ServerTarget) -> ServerTarget:
    """``target`` when it is a server: it or one of its children holds a listening socket (TCP or
    Unix). Else a :class:`~pounder.UsageError` in one line, before anything is started: not a
    server; or its open files cannot be read (not root: the permission it takes; root: the kernel
    refuses even root, a process of another container or a protected one, which pounder cannot
    measure)."""
    named = f"process {target.pid} ({target.name})"
    try:
        held = _sockets(target.pid)
    except PermissionError:
        if os.geteuid() != 0:
            raise UsageError(f"cannot tell whether {named} is a server: its open files are another user's; run as "
                             "the server's user or root") from None  # fmt: skip
        raise UsageError(f"{named} cannot be looked at, even as root (the kernel will not show its open files: a "
                         "process of another container or a protected one): it is no server pounder can "
                         "measure") from None  # fmt: skip
    for child in target.children:
        with contextlib.suppress(PermissionError):
            held |= _sockets(child.pid)
    if held and held & _listening_inodes(target.pid):
        return target
    raise UsageError(f"{named} is not a server: neither it nor its children listen on a socket (name the parent "
                     "process of the server)")  # fmt: skip


def _wait_status(pid: int) -> int | None:
    """A zombie's exit status as ``waitpid`` reports it (``/proc/PID/stat``'s 52nd field), None when
    it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as stat_file:
            fields = stat_file.read().rpartition(")")[2].split()
        return int(fields[49])  # fields[0] is the 3rd field, the state
    except (OSError, ValueError, IndexError):
        return None


def _status_text(status: int | None) -> str:
    if status is None:
        return "exited"
    if status & 0x7F:
        number = status & 0x7F
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(number).name}"
        return f"was killed by signal {number}"
    return f"exited with status {status >> 8}"


@public
def server_exit(target: ServerTarget) -> str | None:
    """None while the server's root process runs; else how it ended, in words: ``the server process
    123 (gunicorn) was killed by SIGKILL`` (or ``exited with status 3``), its status read while it
    is a zombie; ``exited`` alone once its parent has collected it (or its pid was reused)."""
    named = f"the server process {target.pid} ({target.name})"
    try:
        proc = psutil.Process(target.pid)
        if abs(proc.create_time() - target.create_time) > 0.5:
            return f"{named} exited"
        if proc.status() != psutil.STATUS_ZOMBIE:
            return None
    except psutil.NoSuchProcess:
        return f"{named} exited"
    except psutil.Error:
        return None
    return f"{named} {_status_text(_wait_status(target.pid))}"
