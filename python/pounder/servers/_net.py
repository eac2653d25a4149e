"""The network side of a server under test: the address it listens on (``--listen``), a free
port, and whether HTTP is answered there (a blocking check and a non-blocking probe)."""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket

from pounder._errors import UsageError, check_flag, public

HOST = "127.0.0.1"


@public
def listen_address(host: str, *, allow_remote: bool = False) -> str:
    """``host`` checked as the address a server under test listens on (``--listen``): an IPv4
    address of this machine, not the wildcard; one outside 127.0.0.0/8 only with
    ``allow_remote`` (the server is then reachable from the network). Returns it normalised;
    raises :class:`~pounder.UsageError`."""
    check_flag(allow_remote, "allow_remote")
    if not isinstance(host, str):
        raise UsageError(f"--listen must be an IPv4 address as a string, got {host!r}")
    try:
        address = ipaddress.IPv4Address(host)
    except ValueError:
        raise UsageError(f"--listen must be an IPv4 address of this machine (e.g. 127.0.0.1 or 10.0.0.5), "
                         f"not {host!r}") from None
    if address.is_unspecified:
        raise UsageError("--listen must name the one address the load is sent to, not 0.0.0.0")
    if not address.is_loopback and not allow_remote:
        raise UsageError(f"--listen {address} would open the server under test to the network: "
                         "add --allow-remote if that is meant (e.g. for agents on other machines)")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((str(address), 0))
        except OSError as error:
            raise UsageError(f"--listen {address}: not an address of this machine "
                             f"({error.strerror or error})") from None
    return str(address)


def _bindable(host: str, port: int) -> bool:
    """Could a listener bind ``host``:``port`` now (is no one else on it)?"""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT is no owner
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


@public
def free_port(host: str = HOST) -> int:
    """A TCP port on ``host`` (default 127.0.0.1) that was free a moment ago (bound to port 0,
    then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@public
def answers_http(port: int, path: str = "/", timeout_s: float = 2.0, host: str = HOST) -> bool:
    """True if an HTTP GET of ``path`` on ``host``:``port`` (default 127.0.0.1) gets any HTTP
    response."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        conn.getresponse().read()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


class _HttpProbe:
    """One GET in flight, polled without blocking: True once an HTTP status line arrived, False if
    the connection failed or closed without one (start another probe), None while pending."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self._buf = b""
        self._sock: socket.socket | None = None
        try:
            self._sock = socket.create_connection((host, port), timeout=1.0)
            self._sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
            self._sock.setblocking(False)
        except OSError:
            self.close()

    def poll(self) -> bool | None:
        if self._sock is None:
            return False
        try:
            chunk = self._sock.recv(4096)
        except BlockingIOError:
            return None
        except OSError:
            chunk = b""
        self._buf += chunk
        if re.match(rb"HTTP/\d\.\d \d{3}", self._buf):
            self.close()
            return True
        if not chunk:
            self.close()
            return False
        return None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
