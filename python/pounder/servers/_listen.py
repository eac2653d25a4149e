"""Which process listens where: the listening TCP sockets of ``/proc/PID/net/tcp`` and ``tcp6``
matched to a process's open file descriptors (``/proc/PID/fd`` links ``socket:[INODE]``); and how
many connections wait in a listener's accept queue (:class:`AcceptQueue`, asked of the kernel)."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import struct

from pounder._errors import public

_LISTEN = "0A"
_ANY = (ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::"))


def _address_bytes(raw: bytes) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address from its network-order bytes (an IPv4-mapped IPv6 one as IPv4)."""
    address = ipaddress.ip_address(raw)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """``0100007F`` → 127.0.0.1; IPv6 as four 32-bit words, each in host (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    return _address_bytes(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))


def _accepts(local: ipaddress.IPv4Address | ipaddress.IPv6Address, host: str | None) -> bool:
    if host is None or local in _ANY:
        return True
    try:
        return local == ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False


def listening_inodes(port: int, host: str | None = None, *, pid: int | None = None) -> set[str]:
    """Inodes of the sockets listening on TCP ``port`` (on ``host``, an IP address, or a wildcard
    address that includes it; any address when ``host`` is None), IPv4 and IPv6, as seen from the
    network namespace of ``pid`` (ours by default). Asked of the kernel (sock_diag, listeners
    only) in our own namespace; read from ``/proc/PID/net/tcp*`` otherwise, whose every
    TIME_WAIT line of the loads before costs time."""
    if _same_netns(pid):
        with contextlib.suppress(OSError), socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                                                         _NETLINK_SOCK_DIAG) as diag:
            return {str(inode) for family in (socket.AF_INET, socket.AF_INET6)
                    for _, inode in _listeners(diag, family, port, host)}
    where = "/proc/net" if pid is None else f"/proc/{pid}/net"
    inodes = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError), open(f"{where}/{table}") as lines:
            next(lines, None)
            for line in lines:
                fields = line.split()
                if len(fields) < 10 or fields[3] != _LISTEN:
                    continue
                address, _, hex_port = fields[1].rpartition(":")
                with contextlib.suppress(ValueError):
                    if int(hex_port, 16) == port and _accepts(_address(address), host):
                        inodes.add(fields[9])
    return inodes


def _same_netns(pid: int | None) -> bool:
    """Is ``pid`` (None: us) in our network namespace (False when it cannot be told)?"""
    if pid is None:
        return True
    try:
        return os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net")
    except OSError:
        return False


@public
def owns_listener(pid: int, port: int, host: str | None = None) -> bool:
    """True if process ``pid`` holds a socket listening on TCP ``port`` (of ``host``, see
    :func:`listening_inodes`). False when it does not, has exited or its descriptors cannot be read."""
    wanted = {f"socket:[{inode}]" for inode in listening_inodes(port, host, pid=pid)}
    if not wanted:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                return True
    return False


# sock_diag (netlink): the kernel's own count of the connections waiting to be accepted on a
# listening socket, without reading /proc/net/tcp (whose TIME_WAIT lines grow with every
# connection a load opens).
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_DUMP_REQUEST = 0x301
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_TCP_LISTEN = 10
_HEADER = struct.Struct("=LHHLL")
_REQUEST = struct.Struct("=BBBBI48x")


def _listeners(diag: socket.socket, family: int, port: int, host: str | None) -> list[tuple[int, int]]:
    """(connections waiting in the accept queue, inode) of every ``family`` socket listening on
    TCP ``port`` of ``host`` (see :func:`listening_inodes`), asked of the kernel through the
    sock_diag socket ``diag`` (``struct inet_diag_msg``: rqueue at 56, inode at 68)."""
    request = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << _TCP_LISTEN)
    diag.send(_HEADER.pack(_HEADER.size + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_DUMP_REQUEST, 1, 0) + request)
    found: list[tuple[int, int]] = []
    while True:
        data = diag.recv(65536)
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, kind = _HEADER.unpack_from(data, offset)[:2]
            if kind == _NLMSG_DONE:
                return found
            if kind == _NLMSG_ERROR or length < _HEADER.size:
                raise OSError("sock_diag refused the request")
            body = offset + _HEADER.size
            (local_port,) = struct.unpack_from(">H", data, body + 4)
            raw = data[body + 8 : body + 24] if family == socket.AF_INET6 else data[body + 8 : body + 12]
            queued, inode = struct.unpack_from("=I", data, body + 56)[0], struct.unpack_from("=I", data, body + 68)[0]
            if local_port == port and _accepts(_address_bytes(raw), host):
                found.append((queued, inode))
            offset += (length + 3) & ~3


@public
class AcceptQueue:
    """The connections waiting in the accept queue of the sockets listening on TCP ``port`` (of
    ``host``, see :func:`listening_inodes`): they arrived and no child has accepted them yet, so
    every child was busy (or the server is not accepting). One netlink socket, reused; ``close()``
    it (or use ``with``). :meth:`waiting` is None when the kernel cannot be asked (no netlink) or
    nothing listens on the port."""

    def __init__(self, port: int, host: str | None = None) -> None:
        self.port, self.host = port, host
        self._socket: socket.socket | None = None
        with contextlib.suppress(OSError):
            self._socket = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG)

    def waiting(self) -> int | None:
        """The connections waiting now, summed over the listening sockets (IPv4 and IPv6)."""
        if self._socket is None:
            return None
        total: int | None = None
        try:
            for family in (socket.AF_INET, socket.AF_INET6):
                for queued in self._dump(family):
                    total = (total or 0) + queued
        except OSError:
            return None
        return total

    def _dump(self, family: int) -> list[int]:
        assert self._socket is not None
        return [queued for queued, _ in _listeners(self._socket, family, self.port, self.host)]

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> AcceptQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
