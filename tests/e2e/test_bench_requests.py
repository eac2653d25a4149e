"""Requests are built and responses framed right.

The request tests run pounder against the test server's ``echo`` mode, which answers with a JSON
description of the request exactly as it received it. pounder does not keep response bodies, so
the echo server is reached through :class:`EchoTap`, a transparent loopback relay that keeps a copy
of what the server answered: the tests read the server's view of every request from it.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
from pathlib import Path

import pytest

from pounder import __version__

# ---------------------------------------------------------------------------------------------
# A relay in front of the echo server


class EchoTap:
    """Listens on 127.0.0.1; every connection is relayed byte for byte to the echo server at
    ``upstream_port`` and what the server sends back is recorded, per connection."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self._lock = threading.Lock()
        self._answers: list[bytearray] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._spawn(self._accept_loop)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _spawn(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            answer = bytearray()
            with self._lock:
                self._answers.append(answer)
            self._spawn(self._pump, client, upstream, None)
            self._spawn(self._pump, upstream, client, answer)

    def _pump(self, source: socket.socket, sink: socket.socket, record: bytearray | None) -> None:
        try:
            while data := source.recv(65536):
                if record is not None:
                    with self._lock:
                        record += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            try:
                sink.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def requests(self) -> list[dict]:
        """The requests as the echo server received them (per connection, in order)."""
        with self._lock:
            answers = [bytes(answer) for answer in self._answers]
        seen = []
        for answer in answers:
            rest = answer
            while rest:
                head, sep, rest = rest.partition(b"\r\n\r\n")
                assert sep, f"incomplete response head from the echo server: {head!r}"
                lines = head.decode("latin-1").split("\r\n")
                assert lines[0].startswith("HTTP/1.1 200 "), lines[0]
                length = next(
                    int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")
                )
                body, rest = rest[:length], rest[length:]
                seen.append(json.loads(body))
        return seen

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def echo(testserver):
    """An echo server behind an :class:`EchoTap`; ``echo.server`` is the server's handle."""
    server = testserver(mode="echo")
    tap = EchoTap(server.port)
    tap.server = server
    try:
        yield tap
    finally:
        tap.close()


def header_values(request: dict, name: str) -> list[str]:
    return [value for key, value in request["headers"] if key.lower() == name.lower()]


def single(request: dict, name: str) -> str:
    values = header_values(request, name)
    assert len(values) == 1, f"{name}: {values} in {request['headers']}"
    return values[0]


def wire_size(request: dict) -> int:
    """Bytes of a request as the server parsed it, re-serialized the way pounder writes requests."""
    head = f"{request['method']} {request['path']} {request['version']}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in request["headers"]) + "\r\n"
    return len(head.encode("latin-1")) + len(request["body"].encode("latin-1"))


def run_echo(run, echo, path: str = "/", *, requests: int = 3, connections: int = 1, **options):
    """Run against the echo server; every request must complete. Returns the result and the
    requests as the server received them."""
    result = run(echo.url + path, connections=connections, requests=requests, **options)
    assert result.requests.complete == requests, (result.requests, result.errors.nonzero())
    assert result.requests.failed == 0
    seen = echo.requests()
    assert len(seen) == requests
    assert echo.server.count() == requests
    echoed = sum(len(json.dumps(request).encode()) for request in seen)
    assert result.bytes.body == echoed  # the bodies pounder read are the ones the relay saw
    assert result.bytes.sent == sum(wire_size(request) for request in seen)  # nothing more was sent
    return result, seen


# ---------------------------------------------------------------------------------------------
# What is sent


def test_default_request(run, echo):
    result, seen = run_echo(run, echo, "/some/path?x=1&y=two")

    for request in seen:
        assert request["method"] == "GET"
        assert request["path"] == "/some/path?x=1&y=two"
        assert request["version"] == "HTTP/1.1"
        assert single(request, "Host") == f"127.0.0.1:{echo.port}"
        assert single(request, "User-Agent") == f"pounder/{__version__}"
        assert single(request, "Accept") == "*/*"
        assert header_values(request, "Connection") == []  # HTTP/1.1 keep-alive is the default
        assert header_values(request, "Content-Length") == []
        assert request["body"] == ""
    assert result.connections_opened == 1  # all on one kept-alive connection


def test_method_body_and_content_type(run, echo):
    result, seen = run_echo(run, echo, method="PUT", body="hello, pounder", content_type="text/x-greeting")

    for request in seen:
        assert request["method"] == "PUT"
        assert request["body"] == "hello, pounder"
        assert single(request, "Content-Length") == str(len("hello, pounder"))
        assert single(request, "Content-Type") == "text/x-greeting"
    assert result.options.http.body_bytes == len("hello, pounder")


def test_body_defaults_to_post(run, echo):
    _, seen = run_echo(run, echo, requests=1, body="a=1")

    assert seen[0]["method"] == "POST"
    assert seen[0]["body"] == "a=1"
    assert single(seen[0], "Content-Length") == "3"


def test_body_from_file(run, echo, tmp_path: Path):
    payload = bytes(range(256)) * 40 + b"\r\n\r\nGET / HTTP/1.1\r\n\r\n"  # binary, and no framing tricks
    body_file = tmp_path / "body.bin"
    body_file.write_bytes(payload)
    result, seen = run_echo(
        run, echo, body=f"@{body_file}", content_type="application/octet-stream", connections=2, requests=4
    )

    for request in seen:
        assert request["method"] == "POST"
        assert request["body"].encode("latin-1") == payload
        assert single(request, "Content-Length") == str(len(payload))
        assert single(request, "Content-Type") == "application/octet-stream"
    assert result.bytes.sent > 4 * len(payload)


def test_repeated_headers_and_user_agent_override(run, echo):
    _, seen = run_echo(
        run, echo, headers=["X-Trace: one", "X-Trace: two", "User-Agent: custom-agent/2.0", "X-Other: 3"]
    )

    for request in seen:
        assert header_values(request, "X-Trace") == ["one", "two"]  # both, in the order given
        assert single(request, "X-Other") == "3"
        assert single(request, "User-Agent") == "custom-agent/2.0"  # replaced, not added
        assert single(request, "Host") == f"127.0.0.1:{echo.port}"


def test_host_header_override(run, echo):
    _, seen = run_echo(run, echo, requests=1, headers={"Host": "example.test"})

    assert single(seen[0], "Host") == "example.test"


def test_cookies(run, echo):
    result, seen = run_echo(run, echo, cookies=["session=abc123", "theme=dark"])

    for request in seen:
        cookie = single(request, "Cookie")
        assert [part.strip() for part in cookie.split(";")] == ["session=abc123", "theme=dark"]
    assert ("Cookie", "<redacted>") in result.options.http.headers


def test_basic_auth(run, echo):
    result, seen = run_echo(run, echo, auth="alice:s3cr:et")

    expected = "Basic " + base64.b64encode(b"alice:s3cr:et").decode("ascii")
    for request in seen:
        assert single(request, "Authorization") == expected
    assert ("Authorization", "<redacted>") in result.options.http.headers


def test_no_keepalive_sends_connection_close(run, echo):
    result, seen = run_echo(run, echo, requests=4, keepalive=False)

    for request in seen:
        assert single(request, "Connection").lower() == "close"
    assert result.connections_opened == 4
    assert echo.server.connections() == 4


def test_cli_request_options(echo, cli, assert_cli_ok, tmp_path: Path):
    body_file = tmp_path / "body.json"
    body_file.write_text('{"k": "v"}')
    proc = cli(
        echo.url + "/api", "-n", "2", "-c", "1",
        "-m", "PATCH", "-b", f"@{body_file}", "-T", "application/json",
        "-H", "X-A: 1", "-H", "X-A: 2", "-H", "User-Agent: cli-agent",
        "--cookie", "a=1", "--cookie", "b=2", "-A", "user:pass", "--no-keepalive",
    )  # fmt: skip

    assert_cli_ok(proc)
    seen = echo.requests()
    assert len(seen) == 2
    for request in seen:
        assert request["method"] == "PATCH"
        assert request["path"] == "/api"
        assert request["body"] == '{"k": "v"}'
        assert single(request, "Content-Length") == "10"
        assert single(request, "Content-Type") == "application/json"
        assert header_values(request, "X-A") == ["1", "2"]
        assert single(request, "User-Agent") == "cli-agent"
        assert [part.strip() for part in single(request, "Cookie").split(";")] == ["a=1", "b=2"]
        assert single(request, "Authorization") == "Basic " + base64.b64encode(b"user:pass").decode()
        assert single(request, "Connection").lower() == "close"


# ---------------------------------------------------------------------------------------------
# How responses are framed


@pytest.mark.alone  # a latency bound (tests/e2e/conftest.py)
@pytest.mark.parametrize(("mode", "connections"), [("ok", 2), ("chunked", 2), ("close", 20)])
def test_head_has_no_body(testserver, run, assert_accounted, mode, connections):
    # HEAD answers carry Content-Length: 1000 (ok) or Transfer-Encoding: chunked, but no body
    srv = testserver(mode=mode, body_size=1000)
    result = run(srv.url + "/", method="HEAD", connections=2, requests=20, timeout=5)

    assert result.requests.complete == 20
    assert result.requests.failed == 0
    assert result.bytes.body == 0
    assert result.status == {"200": 20}
    stats = assert_accounted(srv, result)
    # keep-alive connections stayed usable (close mode closes after every response)
    assert stats["connections"] == result.connections_opened == connections
    assert result.latency.corrected.max_us < 4_000_000  # never waited for a body (timeout 5 s)


@pytest.mark.alone  # a latency bound (tests/e2e/conftest.py)
@pytest.mark.parametrize(("status", "non_2xx"), [(204, 0), (304, 20)])
def test_no_body_statuses(testserver, run, assert_accounted, status, non_2xx):
    srv = testserver(mode="ok")
    result = run(f"{srv.url}/status/{status}", connections=2, requests=20, timeout=5)

    assert result.requests.complete == 20
    assert result.requests.failed == 0
    assert result.status == {str(status): 20}
    assert result.requests.non_2xx == non_2xx
    assert result.bytes.body == 0
    stats = assert_accounted(srv, result)
    assert stats["connections"] == result.connections_opened == 2
    assert result.latency.corrected.max_us < 4_000_000


@pytest.mark.parametrize("mode", ["ok", "chunked"])
def test_redirect_counted_not_followed(testserver, run, assert_accounted, mode):
    srv = testserver(mode=mode)
    result = run(f"{srv.url}/status/301", connections=2, requests=20)

    assert result.requests.complete == 20
    assert result.requests.failed == 0
    assert result.status == {"301": 20}
    assert result.requests.non_2xx == 20
    assert result.bytes.body == 20 * len(b"redirect\n")
    stats = assert_accounted(srv, result)
    assert stats["requests"] == 20  # the Location was not followed


def test_mixed_statuses(testserver, run, assert_accounted, tmp_path: Path):
    srv = testserver(mode="ok")
    url_file = tmp_path / "urls.txt"
    url_file.write_text(f"{srv.url}/\n{srv.url}/status/404\n{srv.url}/status/503\n{srv.url}/status/201\n")
    result = run(url_file=url_file, connections=2, requests=40)

    assert result.status == {"200": 10, "201": 10, "404": 10, "503": 10}
    assert result.requests.non_2xx == 20
    assert result.requests.complete == 40
    assert sum(s.non_2xx for s in result.series) == 20  # per second too
    assert sum(s.complete for s in result.series) == 40
    assert_accounted(srv, result)


@pytest.mark.parametrize("body_size", [0, 1, 20_000])
def test_chunked_body_bytes(testserver, run, assert_accounted, body_size):
    srv = testserver(mode="chunked", body_size=body_size)
    result = run(srv.url + "/", connections=2, threads=2, requests=20, timeout=5)

    assert result.requests.complete == 20
    assert result.requests.failed == 0
    assert result.bytes.body == 20 * body_size  # de-chunked: sizes, extensions, trailer left out
    assert result.bytes.total > result.bytes.body
    stats = assert_accounted(srv, result)
    assert stats["connections"] == result.connections_opened == 2


def test_read_until_close(testserver, run, assert_accounted):
    srv = testserver(mode="close", body_size=5000)
    result = run(srv.url + "/", connections=2, threads=2, requests=20, timeout=5)

    assert result.requests.complete == 20
    assert result.requests.failed == 0
    assert result.bytes.body == 20 * 5000
    stats = assert_accounted(srv, result)
    assert stats["connections"] == result.connections_opened == 20


def test_unix_socket(testserver, run, assert_accounted):
    srv = testserver(mode="ok", unix=True)
    result = run("http://localhost/", unix_socket=srv.unix, connections=4, threads=2, requests=100)

    assert result.options.targets[0].connect == f"unix:{srv.unix}"
    assert result.requests.complete == 100
    assert result.requests.failed == 0
    stats = assert_accounted(srv, result)
    assert stats["requests"] == 100
    assert stats["connections"] == result.connections_opened == 4


def test_unix_socket_duration(testserver, run, assert_accounted):
    srv = testserver(mode="ok", unix=True, delay_ms=1)
    result = run("http://localhost/", unix_socket=srv.unix, connections=2, duration="1s")

    assert result.requests.complete > 0
    assert result.requests.failed == 0
    assert_accounted(srv, result)


# ---------------------------------------------------------------------------------------------
# URL files and order


def test_url_file_random_order_follows_weights(testserver, run, tmp_path: Path):
    light, heavy = testserver(mode="ok"), testserver(mode="ok")
    url_file = tmp_path / "urls.txt"
    url_file.write_text(f"# two servers\n1 {light.url}/light\n\n3 {heavy.url}/heavy\n")
    result = run(url_file=url_file, order="random", connections=4, threads=2, requests=800)

    assert [target.weight for target in result.options.targets] == [1, 3]
    assert result.requests.complete == 800
    light_count, heavy_count = light.count(), heavy.count()
    assert light_count + heavy_count == 800
    # expected 200 / 600; 2..4.5 is more than 4 standard deviations either side
    assert light_count > 0
    assert 2.0 <= heavy_count / light_count <= 4.5, (light_count, heavy_count)


def test_url_file_sequential_order_alternates(testserver, run, tmp_path: Path):
    first, second = testserver(mode="ok"), testserver(mode="ok")
    url_file = tmp_path / "urls.txt"
    url_file.write_text(f"1 {first.url}/a\n3 {second.url}/b\n")  # weights do not matter in turn
    result = run(url_file=url_file, connections=4, threads=2, requests=101)

    assert result.requests.complete == 101
    first_count, second_count = first.count(), second.count()
    assert first_count + second_count == 101
    assert abs(first_count - second_count) <= 1, (first_count, second_count)


# ---------------------------------------------------------------------------------------------
# Receive throttling


@pytest.mark.alone  # a latency bound (tests/e2e/conftest.py)
@pytest.mark.parametrize("mode", ["ok", "slowbody"])
def test_throttle_paces_receiving(testserver, run, assert_accounted, mode):
    body_size = 64 * 1024
    # slowbody with no delay between pieces: the body is there at once, only the throttle paces it
    srv = testserver(mode=mode, body_size=body_size, piece_delay_ms=0)
    result = run(srv.url + "/", connections=2, threads=2, requests=2, throttle="64KB/s", timeout=10)

    assert result.options.http.throttle_bps == 64_000
    assert result.requests.complete == 2
    assert result.requests.failed == 0
    assert result.bytes.body == 2 * body_size
    assert_accounted(srv, result)
    # 65,536 bytes at 64,000 bytes/s: about 1 s per request, each on its own connection
    assert result.phases.processing.min_us >= 700_000 or result.phases.total.min_us >= 700_000, result.phases
    assert result.latency.corrected.min_us >= 700_000, result.latency.corrected
    assert result.latency.corrected.max_us < 3_000_000, result.latency.corrected  # paced, not stalled


@pytest.mark.alone  # a latency bound (tests/e2e/conftest.py)
@pytest.mark.parametrize(("body_size", "throttle"), [(400, "100B/s"), (2048, "4.2kbps"), (100 * 1024, "200KB/s")])
def test_throttle_paces_the_last_read_too(testserver, run, assert_accounted, body_size, throttle):
    """Issue 25 item 6: the read that completed a response was not paced, so a response that came
    in one read (400 bytes at 100 B/s) took no time at all. Every byte received (head included)
    takes its time: the latency is bytes / rate, within 5 %."""
    srv = testserver(mode="ok", body_size=body_size)
    result = run(srv.url + "/", connections=1, threads=1, requests=1, throttle=throttle, timeout=30)
    assert result.requests.complete == 1 and result.requests.failed == 0
    assert_accounted(srv, result)
    received = result.bytes.total
    expected_s = received / result.options.http.throttle_bps
    took_s = result.latency.uncorrected.max_us / 1e6
    assert expected_s * 0.95 <= took_s <= expected_s * 1.05 + 0.1, (took_s, expected_s, received)
