"""Which process listens where: the listening TCP sockets of ``/proc/PID/net/tcp`` and ``tcp6``
matched to a process's open file descriptors (``/proc/PID/fd`` links ``socket:[INODE]``)."""

from __future__ import annotations

import contextlib
import ipaddress
import os

from pounder._errors import public

_LISTEN = "0A"
_ANY = (ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::"))


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """``0100007F`` → 127.0.0.1; IPv6 as four 32-bit words, each in host (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


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
    network namespace of ``pid`` (ours by default)."""
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
