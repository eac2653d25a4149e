"""Targets' URLs and addresses: an http:// or https:// URL checked and split (:func:`parse_url`), its host
resolved under the loopback rule (:func:`resolve`), a Unix socket checked.

Targets must resolve to a loopback address (127.0.0.0/8 or ::1) unless ``allow_remote``. Without
it no DNS query leaves the machine: a name is looked up in the hosts file (``/etc/hosts``), and
``localhost`` and names under ``.localhost`` not listed there are 127.0.0.1 and ::1 (RFC 6761);
any other name is refused before it is looked up. A name with several addresses gives them all,
IPv4 first: the engine tries them in that order until one accepts, as a browser does (``localhost``
may be 127.0.0.1 and ::1 while the server listens on one of them).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import stat
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from pounder._errors import UsageError, check_text, public
from pounder._ip import is_loopback

_URL_SAFE = "!#$%&'()*+,/:;=?@[]~"


@dataclass(frozen=True)
class ParsedUrl:
    """An http:// or https:// URL split into what pounder needs."""

    text: str
    host: str
    port: int
    host_header: str
    request_target: str
    tls: bool = False
    """https://: the connection speaks TLS, and ``host`` is the server name it checks."""


@public
def parse_url(text: str, where: str = "") -> ParsedUrl:
    """Check an http:// or https:// URL (default port 80 or 443); ``where`` (e.g. ``"urls.txt:3: "``)
    prefixes messages."""
    check_text(text, f"{where}url")
    text = text.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as error:
        raise UsageError(f"{where}invalid URL {text!r}: {error}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{where}invalid URL {text!r}: expected http://HOST[:PORT]/PATH or https://...")
    if parts.username is not None or parts.password is not None:
        raise UsageError(f"{where}credentials in a URL are not supported: use -A/--auth user:password")
    if port == 0:
        raise UsageError(f"{where}invalid URL {text!r}: port 0")
    path = quote(parts.path or "/", safe=_URL_SAFE)
    query = quote(parts.query, safe=_URL_SAFE)
    return ParsedUrl(
        text=text,
        host=parts.hostname,
        port=port or (443 if scheme == "https" else 80),
        host_header=_host_header(parts.hostname, port, text, where),
        request_target=f"{path}?{query}" if query else path,
        tls=scheme == "https",
    )


@public
def server_name(host: str) -> str:
    """The name a TLS connection to ``host`` (a URL's host) checks: in lower case and ASCII (an
    international name in punycode), an IPv6 address without brackets."""
    name = host.lower().strip("[]")
    try:
        return name if name.isascii() else name.encode("idna").decode("ascii")
    except UnicodeError as error:
        raise UsageError(f"invalid host name {host!r}: {error}") from None


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

    def __init__(self, address: str, reason: str = "is not a loopback address (127.0.0.0/8 or ::1)") -> None:
        self.address = address
        super().__init__(f"{address} {reason}; pass --allow-remote to load another machine")


HOSTS_FILE = "/etc/hosts"
_LOCALHOST_ADDRESSES = ("127.0.0.1", "::1")


@public
def resolve(host: str, port: int, *, allow_remote: bool) -> str:
    """Resolve ``host`` to what pounder connects to: ``"ip:port"`` (``"[ip6]:port"``), or several
    of them joined by commas, tried in that order (see the module's documentation). Enforces the
    loopback rule unless ``allow_remote``; without it, sends no DNS query."""
    if allow_remote:
        addresses = _looked_up(host, port)
    else:
        addresses = _local_addresses(host)
        remote = [address for address in addresses if not is_loopback(address)]
        if remote:
            raise NotLoopbackError(host if [host] == addresses else f"{host} ({remote[0]})")
    ordered = sorted(dict.fromkeys(addresses), key=lambda address: ":" in address)  # IPv4 first, stable
    return ",".join(f"[{address}]:{port}" if ":" in address else f"{address}:{port}" for address in ordered)


def _looked_up(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        reason = error.strerror if isinstance(error, socket.gaierror) else str(error)
        raise UsageError(f"cannot resolve host {host!r}: {reason}") from None
    return [str(info[4][0]) for info in infos]


def _local_addresses(host: str) -> list[str]:
    """``host``'s addresses without asking DNS: an IP literal (``127.1`` too), the hosts file,
    localhost."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
        return [str(info[4][0]) for info in infos]
    except (socket.gaierror, UnicodeError):
        pass
    try:
        name = host.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError:  # Python's words (encoding with 'idna' codec failed ...) are not the user's
        raise UsageError(f"cannot resolve host {host!r}: not a valid host name (a label between dots is empty, "
                         "or longer than 63 characters)") from None
    listed = hosts_file_addresses(name)
    if listed:
        return listed
    if name == "localhost" or name.endswith(".localhost"):
        return list(_LOCALHOST_ADDRESSES)
    raise NotLoopbackError(host, f"is not in {HOSTS_FILE} nor a loopback address, and no DNS query was sent for it "
                                 "(pounder loads only this machine)")


def hosts_file_addresses(name: str, path: str = HOSTS_FILE) -> list[str]:
    """The addresses the hosts file gives the (lower-case, ASCII) ``name``, in its order."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read(1 << 20).splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        words = line.split("#", 1)[0].split()
        if len(words) >= 2 and name in (word.lower().rstrip(".") for word in words[1:]):
            try:
                ipaddress.ip_address(words[0].split("%")[0])
            except ValueError:
                continue
            found.append(words[0])
    return found


SUN_PATH_MAX = 107
"""The longest path a Unix socket address holds (``sun_path`` is 108 bytes with its NUL)."""


@public
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


