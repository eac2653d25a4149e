"""Targets' URLs and addresses: an http:// URL checked and split (:func:`parse_url`), its host
resolved under the loopback rule (:func:`resolve`), a Unix socket checked.

Targets must resolve to a loopback address (127.0.0.0/8 or ::1) unless ``allow_remote``; the
first IPv4 address is used when a name has several, else the first address.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import stat
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from pounder._errors import UsageError, check_text, public

_URL_SAFE = "!#$%&'()*+,/:;=?@[]~"


@dataclass(frozen=True)
class ParsedUrl:
    """An http:// URL split into what pounder needs."""

    text: str
    host: str
    port: int
    host_header: str
    request_target: str


@public
def parse_url(text: str, where: str = "") -> ParsedUrl:
    """Check an http:// URL; ``where`` (e.g. ``"urls.txt:3: "``) prefixes messages."""
    check_text(text, f"{where}url")
    text = text.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as error:
        raise UsageError(f"{where}invalid URL {text!r}: {error}") from None
    scheme = parts.scheme.lower()
    if scheme == "https":
        raise UsageError(f"{where}https is not supported yet: {text!r} (only http:// URLs)")
    if scheme != "http" or not parts.hostname:
        raise UsageError(f"{where}invalid URL {text!r}: expected http://HOST[:PORT]/PATH")
    if parts.username is not None or parts.password is not None:
        raise UsageError(f"{where}credentials in a URL are not supported: use -A/--auth user:password")
    if port == 0:
        raise UsageError(f"{where}invalid URL {text!r}: port 0")
    path = quote(parts.path or "/", safe=_URL_SAFE)
    query = quote(parts.query, safe=_URL_SAFE)
    return ParsedUrl(
        text=text,
        host=parts.hostname,
        port=port or 80,
        host_header=_host_header(parts.hostname, port, text, where),
        request_target=f"{path}?{query}" if query else path,
    )


def _host_header(hostname: str, port: int | None, text: str, where: str) -> str:
    """The Host header of a URL as a server expects it: the name in lower case and in ASCII (an
    international name in its punycode form, as the connection resolves it; RFC 9110 7.2), an
    IPv6 literal in brackets, the port when the URL gives one."""
    host = hostname.lower()
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as error:
            raise UsageError(f"{where}invalid host name in {text!r}: {error}") from None
    if ":" in host:
        host = f"[{host}]"
    return host if port is None else f"{host}:{port}"


class NotLoopbackError(UsageError):
    """A target that is not on this machine, without ``allow_remote``: ``address`` says which
    (``host`` or ``host (ip)``). A command without ``--allow-remote`` says so in its own words."""

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__(f"{address} is not a loopback address (127.0.0.0/8 or ::1); pass --allow-remote to load "
                         "another machine")


@public
def resolve(host: str, port: int, *, allow_remote: bool) -> str:
    """Resolve ``host`` to the ``"ip:port"`` (``"[ip6]:port"``) pounder connects to, enforcing
    the loopback rule unless ``allow_remote``."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        reason = error.strerror if isinstance(error, socket.gaierror) else str(error)
        raise UsageError(f"cannot resolve host {host!r}: {reason}") from None
    addresses = [str(info[4][0]) for info in infos]
    chosen = next((address for address in addresses if ":" not in address), addresses[0])
    if not allow_remote and not is_loopback(chosen):
        raise NotLoopbackError(host if host == chosen else f"{host} ({chosen})")
    return f"[{chosen}]:{port}" if ":" in chosen else f"{chosen}:{port}"


def is_loopback(ip: str) -> bool:
    """Whether an IP address (``%zone`` and IPv4-mapped IPv6 allowed) is this machine's loopback;
    ValueError when ``ip`` is no IP address."""
    address = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


SUN_PATH_MAX = 107
"""The longest path a Unix socket address holds (``sun_path`` is 108 bytes with its NUL)."""


def check_unix_socket(path: str) -> str:
    size = len(os.fsencode(path))
    if size > SUN_PATH_MAX:  # connect() would fail with ENAMETOOLONG, counted as "other" per request
        raise UsageError(f"--unix-socket: {path} is {size} bytes long, more than the {SUN_PATH_MAX} a socket address "
                         "holds: give a shorter path to it (a symbolic link)")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UsageError(f"--unix-socket: no such file: {path}") from None
    except OSError as error:
        raise UsageError(f"--unix-socket: cannot use {path}: {error.strerror}") from None
    if not stat.S_ISSOCK(mode):
        raise UsageError(f"--unix-socket: {path} is not a socket")
    return path


