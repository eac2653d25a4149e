"""A child's state from ``/proc`` alone, for a server without a status page: ``running`` (state R),
``accept`` (blocked waiting for a new connection on one of the server's listening sockets, or on
the accept mutex), else ``sleeping`` with the kernel function it waits in (``wchan``).

"Waiting for a new connection" is read from the system call the process is blocked in
(``/proc/PID/syscall``): accept/accept4 on a listening socket; poll, ppoll, select, pselect6 on a
set holding one (the set is read from ``/proc/PID/mem``: root or the server's user); epoll_wait
on an epoll instance watching one (``/proc/PID/fdinfo``); flock or semop (the accept mutex of
Apache and Net::Server). A child in poll on its client's connection (keep-alive) is ``sleeping``."""

from __future__ import annotations

import contextlib
import os
import platform
import struct
from dataclasses import dataclass

_ARCH_CALLS: dict[str, dict[int, str]] = {
    "x86_64": {43: "accept", 288: "accept4", 7: "poll", 271: "ppoll", 23: "select", 270: "pselect6",
               232: "epoll_wait", 281: "epoll_pwait", 441: "epoll_pwait2", 73: "flock", 65: "semop",
               220: "semtimedop"},
    "aarch64": {202: "accept", 242: "accept4", 73: "ppoll", 72: "pselect6", 22: "epoll_pwait",
                441: "epoll_pwait2", 32: "flock", 193: "semop", 192: "semtimedop"},
}
_CALLS = _ARCH_CALLS.get(platform.machine(), {})
_POLLS = ("poll", "ppoll")
_SELECTS = ("select", "pselect6")
_EPOLLS = ("epoll_wait", "epoll_pwait", "epoll_pwait2")
_MUTEX = ("flock", "semop", "semtimedop")
_MAX_FDS = 4096


@dataclass(frozen=True)
class ProcState:
    """``state``: running, accept or sleeping; ``detail``: the call or the wchan ("" if none)."""

    state: str
    detail: str


def listening_inodes(pid: int) -> set[int]:
    """Inodes of the listening sockets (TCP, TCP6, Unix) the process ``pid`` holds (its fds matched
    to the LISTEN lines of its network namespace's tables); empty when they cannot be read."""
    held = socket_inodes(pid)
    found: set[int] = set()
    for table, state_field, listen in (("tcp", 3, "0A"), ("tcp6", 3, "0A"), ("unix", 5, "01")):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/net/{table}") as lines:
            next(lines, None)
            for line in lines:
                fields = line.split()
                inode_at = 9 if table != "unix" else 6
                if len(fields) > inode_at and fields[state_field] == listen and fields[inode_at].isdigit():
                    inode = int(fields[inode_at])
                    if inode in held:
                        found.add(inode)
    return found


def listening_ports(pid: int) -> list[tuple[str, int]]:
    """(host, port) of the TCP sockets ``pid`` listens on (host as the kernel shows it, "0.0.0.0"
    or "::" for any address)."""
    import ipaddress

    held = socket_inodes(pid)
    ports: list[tuple[str, int]] = []
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/net/{table}") as lines:
            next(lines, None)
            for line in lines:
                fields = line.split()
                if len(fields) < 10 or fields[3] != "0A" or not fields[9].isdigit() or int(fields[9]) not in held:
                    continue
                address, _, hex_port = fields[1].rpartition(":")
                raw = bytes.fromhex(address)
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                ports.append((str(ipaddress.ip_address(raw)), int(hex_port, 16)))
    return sorted(set(ports))


def socket_inodes(pid: int) -> dict[int, int]:
    """socket inode → fd number, of the process's open sockets."""
    inodes: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes[int(link[8:-1])] = int(fd)
    return inodes


def _read(path: str) -> str:
    try:
        with open(path) as file:
            return file.read(4096).strip()
    except OSError:
        return ""


def _listening_fds(pid: int, listeners: set[int]) -> set[int]:
    return {fd for inode, fd in socket_inodes(pid).items() if inode in listeners}


def _memory(pid: int, address: int, size: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            mem.seek(address)
            data = mem.read(size)
    except (OSError, ValueError, OverflowError):
        return None
    return data if len(data) == size else None


def _polls_listener(pid: int, call: str, args: list[int], fds: set[int]) -> bool | None:
    """Whether the poll/select set the process waits on holds a listening fd (None: unreadable)."""
    if call in _POLLS:
        address, count = args[0], min(args[1], _MAX_FDS)
        data = _memory(pid, address, 8 * count)
        if data is None:
            return None
        return any(struct.unpack_from("=i", data, 8 * i)[0] in fds for i in range(count))
    count, address = min(args[0], _MAX_FDS), args[1]
    if not address:
        return False
    data = _memory(pid, address, (count + 7) // 8)
    if data is None:
        return None
    return any(data[fd // 8] >> (fd % 8) & 1 for fd in fds if fd < count)


def _epoll_watches_listener(pid: int, epfd: int, fds: set[int]) -> bool:
    text = _read(f"/proc/{pid}/fdinfo/{epfd}")
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "tfd:" and parts[1].isdigit() and int(parts[1]) in fds:
            return True
    return False


def proc_state(pid: int, listeners: set[int]) -> ProcState | None:
    """The state of process ``pid`` now (None when it has exited); ``listeners``: the server's
    listening socket inodes (:func:`listening_inodes` of its parent)."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return None
    letter = stat.rpartition(")")[2].split()[:1]
    if letter in (["R"], []):
        return ProcState("running", "") if letter else None
    if letter == ["Z"]:
        return None
    wchan = _read(f"/proc/{pid}/wchan")
    wchan = "" if wchan == "0" else wchan
    fields = _read(f"/proc/{pid}/syscall").split()
    call = _CALLS.get(int(fields[0])) if fields and fields[0].lstrip("-").isdigit() else None
    if call is None or len(fields) < 3:
        return ProcState("sleeping", wchan)
    args = [int(value, 16) for value in fields[1:7]]
    fds = _listening_fds(pid, listeners)
    if call in ("accept", "accept4"):
        return ProcState("accept" if args[0] in fds or not fds else "sleeping", call)
    if call in _MUTEX:
        return ProcState("accept", f"{call} (accept mutex)")
    if call in _EPOLLS:
        return ProcState("accept" if _epoll_watches_listener(pid, args[0], fds) else "sleeping", call)
    if call in _POLLS or call in _SELECTS:
        on_listener = _polls_listener(pid, call, args, fds) if fds else False
        return ProcState("accept" if on_listener else "sleeping", call if on_listener is not None else wchan)
    return ProcState("sleeping", wchan)
