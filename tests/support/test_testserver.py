"""Self-tests of tests/support/testserver.py and the ``testserver`` fixture, with stdlib clients."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # conftest is not importable under every import mode: types only
    from conftest import ServerHandle, ServerPool

SERVER_SCRIPT = Path(__file__).resolve().parent / "testserver.py"
BODY = b"hello, world\n"


def get(host: str = "127.0.0.1", path: str = "/", extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode()


def connect(srv: ServerHandle, timeout: float = 5.0) -> socket.socket:
    if srv.unix is not None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(srv.unix)
        return sock
    return socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)


def read_until_eof(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def exchange(srv: ServerHandle, request: bytes, timeout: float = 5.0) -> bytes:
    """Send ``request`` on a fresh connection, return everything received until EOF."""
    with connect(srv, timeout) as sock:
        sock.sendall(request)
        return read_until_eof(sock)


def expected_body(size: int) -> bytes:
    return (BODY * (size // len(BODY) + 1))[:size]


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=5)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


# --------------------------------------------------------------------------- ok mode, counting


def test_ok_default_body(testserver: ServerPool) -> None:
    srv = testserver()
    assert srv.url == f"http://127.0.0.1:{srv.port}"
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    conn.request("GET", "/anything")
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Length") == "13"
    assert resp.read() == BODY
    conn.close()


def test_ok_delay_and_body_size(testserver: ServerPool) -> None:
    srv = testserver(mode="ok", delay_ms=200, body_size=100)
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    conn.connect()
    t0 = time.monotonic()
    conn.request("GET", "/")
    body = conn.getresponse().read()
    elapsed = time.monotonic() - t0
    assert body == expected_body(100)
    assert 0.19 <= elapsed < 0.5
    conn.close()


def test_count_keepalive(testserver: ServerPool) -> None:
    srv = testserver()
    conns = [http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5) for _ in range(3)]
    for i in range(25):
        conn = conns[i % 3]
        conn.request("GET", f"/{i}")
        assert conn.getresponse().read() == BODY
    for conn in conns:
        conn.close()
    assert srv.count() == 25
    assert srv.connections() == 3


def test_request_bodies_are_read(testserver: ServerPool) -> None:
    srv = testserver()
    with connect(srv) as sock:
        # Two requests with bodies pipelined on one connection, plus a chunked one.
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde"
                     b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz"
                     b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"3\r\nabc\r\n0\r\n\r\n"
                     b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = read_until_eof(sock)
    assert data.count(b"HTTP/1.1 200 OK\r\n") == 4
    assert srv.stats() == {"requests": 4, "connections": 1}


def test_connection_close_honoured(testserver: ServerPool) -> None:
    srv = testserver()
    data = exchange(srv, get(extra="Connection: close\r\n"))  # returns only at EOF
    assert data.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"\r\nConnection: close\r\n" in data
    assert data.endswith(b"\r\n\r\n" + BODY)


def test_http10_closes_by_default(testserver: ServerPool) -> None:
    srv = testserver()
    data = exchange(srv, b"GET / HTTP/1.0\r\n\r\n")
    assert data.endswith(b"\r\n\r\n" + BODY)


def test_head_has_no_body(testserver: ServerPool) -> None:
    srv = testserver(body_size=50)
    with connect(srv) as sock:
        # HEAD then GET on the same connection: the GET's response must follow the HEAD's
        # headers directly.
        sock.sendall(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + get(extra="Connection: close\r\n"))
        data = read_until_eof(sock)
    head_resp, rest = data.split(b"\r\n\r\n", 1)
    assert b"Content-Length: 50" in head_resp
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n")
    assert rest.endswith(b"\r\n\r\n" + expected_body(50))


def test_status_paths(testserver: ServerPool) -> None:
    srv = testserver()
    data = exchange(srv, get(path="/status/204", extra="Connection: close\r\n"))
    assert data.startswith(b"HTTP/1.1 204 No Content\r\n")
    assert data.endswith(b"\r\n\r\n")
    assert b"Content-Length" not in data
    data = exchange(srv, get(path="/status/304", extra="Connection: close\r\n"))
    assert data.startswith(b"HTTP/1.1 304 Not Modified\r\n") and data.endswith(b"\r\n\r\n")
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    for status in (404, 500, 503):
        conn.request("GET", f"/status/{status}")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (status, BODY)
    conn.request("GET", "/status/302")
    resp = conn.getresponse()
    assert resp.status == 302 and resp.getheader("Location") == "/"
    assert resp.read() == b"redirect\n"
    conn.request("GET", "/status/204?x=1")
    resp = conn.getresponse()
    assert resp.status == 204 and resp.read() == b""
    conn.close()


def test_bad_request_gets_400(testserver: ServerPool) -> None:
    srv = testserver()
    data = exchange(srv, b"NONSENSE\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 400 ")
    assert srv.count() == 0


# --------------------------------------------------------------------------- framing modes


@pytest.mark.parametrize("size", [0, 13, 5000, 100_000])
def test_chunked(testserver: ServerPool, size: int) -> None:
    srv = testserver(mode="chunked", body_size=size)
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    for _ in range(2):  # keep-alive still works after a chunked body + trailer
        conn.request("GET", "/")
        resp = conn.getresponse()
        assert resp.getheader("Transfer-Encoding") == "chunked"
        assert resp.read() == expected_body(size)
    conn.close()
    assert srv.count() == 2


def test_chunked_wire_format(testserver: ServerPool) -> None:
    srv = testserver(mode="chunked", body_size=5000)
    data = exchange(srv, get(extra="Connection: close\r\n"))
    head, body = data.split(b"\r\n\r\n", 1)
    assert b"Transfer-Encoding: chunked" in head and b"Content-Length" not in head
    assert body.startswith(b"5;foo=bar\r\nhello\r\n1\r\n,\r\n1A\r\n")
    assert b"\r\n1000\r\n" in body  # 4096 in hex
    assert body.endswith(b"\r\n0\r\nX-Pounder-Trailer: done\r\n\r\n")


def test_close_mode(testserver: ServerPool) -> None:
    srv = testserver(mode="close", body_size=3000)
    data = exchange(srv, get())  # keep-alive request, yet the server closes
    head, body = data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Content-Length" not in head and b"Transfer-Encoding" not in head
    assert body == expected_body(3000)
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    conn.request("GET", "/")
    assert conn.getresponse().read() == expected_body(3000)
    conn.close()
    assert srv.stats() == {"requests": 2, "connections": 2}


def test_slowbody(testserver: ServerPool) -> None:
    srv = testserver(mode="slowbody", body_size=4096, piece_delay_ms=60)
    with connect(srv) as sock:
        t0 = time.monotonic()
        sock.sendall(get(extra="Connection: close\r\n"))
        first = sock.recv(65536)
        t_first = time.monotonic() - t0
        data = first + read_until_eof(sock)
        t_last = time.monotonic() - t0
    assert first.endswith(b"\r\n\r\n")  # headers arrive alone, before any body piece
    assert t_first < 0.05
    assert data.split(b"\r\n\r\n", 1)[1] == expected_body(4096)
    assert 0.23 <= t_last < 0.6  # 4 pieces, each after 60 ms


def test_freeze(testserver: ServerPool) -> None:
    # Windows at [1.0, 1.4), [2.0, 2.4), ... seconds after server start (just before READY).
    srv = testserver(mode="freeze", delay_ms=10, freeze_ms=400, freeze_every_ms=1000)
    ready = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)

    def timed_get() -> float:
        t0 = time.monotonic()
        conn.request("GET", "/")
        conn.getresponse().read()
        return time.monotonic() - t0

    time.sleep(0.3)
    assert timed_get() < 0.15  # outside a window: just the delay
    time.sleep(max(0.0, ready + 1.1 - time.monotonic()))
    held = timed_get()  # inside [1.0, 1.4): held until 1.4, then the delay
    assert 0.15 <= held < 0.45
    assert timed_get() < 0.15  # the window is over
    conn.close()


def test_echo(testserver: ServerPool) -> None:
    srv = testserver(mode="echo")
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    conn.request("PATCH", "/p?q=1", body=b"caf\xe9",
                  headers={"X-MiXeD-Case": "v1", "Cookie": "a=1; b=2",
                           "Authorization": "Basic dTpw"})
    resp = conn.getresponse()
    assert resp.getheader("Content-Type") == "application/json"
    echo = json.loads(resp.read())
    conn.close()
    assert echo["method"] == "PATCH"
    assert echo["path"] == "/p?q=1"
    assert echo["version"] == "HTTP/1.1"
    assert ["X-MiXeD-Case", "v1"] in echo["headers"]
    assert ["Cookie", "a=1; b=2"] in echo["headers"]
    assert ["Authorization", "Basic dTpw"] in echo["headers"]
    assert ["Content-Length", "4"] in echo["headers"]
    assert echo["body"] == "caf\xe9"


# --------------------------------------------------------------------------- misbehaving modes


def test_reset(testserver: ServerPool) -> None:
    srv = testserver(mode="reset")
    with connect(srv) as sock:
        sock.sendall(get())
        with pytest.raises(ConnectionResetError):
            read_until_eof(sock)
    assert srv.count() == 1


def test_malformed(testserver: ServerPool) -> None:
    srv = testserver(mode="malformed")
    assert exchange(srv, get()) == b"HTXP/1.1 2x0 Broken\r\nContent-Length: 2\r\n\r\nok"


def test_bigheaders(testserver: ServerPool) -> None:
    srv = testserver(mode="bigheaders")
    data = exchange(srv, get(extra="Connection: close\r\n"))
    head, body = data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert len(head) > 64 * 1024
    assert head.count(b"\r\nX-Big-") == 100
    assert body == BODY


def test_truncated(testserver: ServerPool) -> None:
    srv = testserver(mode="truncated")
    head, body = exchange(srv, get()).split(b"\r\n\r\n", 1)
    assert b"Content-Length: 1000" in head
    assert len(body) == 500


def test_badchunk(testserver: ServerPool) -> None:
    srv = testserver(mode="badchunk")
    head, body = exchange(srv, get()).split(b"\r\n\r\n", 1)
    assert b"Transfer-Encoding: chunked" in head
    assert body.startswith(b"zz\r\n")


def test_midclose(testserver: ServerPool) -> None:
    srv = testserver(mode="midclose")
    assert exchange(srv, get()) == b"HTTP/1.1 200 OK\r\nContent-Le"


def test_silent(testserver: ServerPool) -> None:
    srv = testserver(mode="silent")
    with connect(srv, timeout=0.3) as sock:
        sock.sendall(get())
        with pytest.raises(socket.timeout):
            sock.recv(1)
    assert srv.count() == 1


# --------------------------------------------------------------------------- unix, lifecycle


def test_unix_socket(testserver: ServerPool) -> None:
    srv = testserver(unix=True, body_size=20)
    assert srv.port is None and srv.unix is not None
    conn = UnixHTTPConnection(srv.unix)
    for _ in range(3):
        conn.request("GET", "/")
        assert conn.getresponse().read() == expected_body(20)
    conn.close()
    assert srv.count() == 3


def test_unix_socket_modes(testserver: ServerPool) -> None:
    assert exchange(testserver(mode="midclose", unix=True), get()) == \
        b"HTTP/1.1 200 OK\r\nContent-Le"
    srv = testserver(mode="chunked", unix=True, body_size=100)
    assert exchange(srv, get(extra="Connection: close\r\n")).endswith(b"done\r\n\r\n")


def test_stop_sigterm_final_counts(testserver: ServerPool) -> None:
    srv = testserver(unix=True)
    assert srv.unix is not None
    exchange(srv, get(extra="Connection: close\r\n"))
    assert srv.stop() == 0
    assert not srv.running
    assert srv.stats() == {"requests": 1, "connections": 1}
    assert srv.stop() == 0  # idempotent
    assert srv.stderr() == ""


def test_max_lifetime(testserver: ServerPool) -> None:
    srv = testserver(max_lifetime_s=0.3)
    assert srv.proc.wait(5) == 0


def test_start_failure_reports_stderr(testserver: ServerPool) -> None:
    with pytest.raises(RuntimeError, match="invalid choice"):
        testserver(mode="no-such-mode")


def test_sigint_exits_cleanly() -> None:
    proc = subprocess.Popen([sys.executable, str(SERVER_SCRIPT), "--port", "0"],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith(b"READY ")
    proc.send_signal(2)
    assert proc.wait(5) == 0
    proc.stdout.close()
