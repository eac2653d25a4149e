"""Validation of bench options and the engine spec (pounder.load._spec and _model; pounder.traffic._url,
_request)."""

from __future__ import annotations

import base64
import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pounder
from pounder import BenchSpec, LoadOptions, Stage, UsageError, __version__
from pounder.load import _model
from pounder.traffic import NotLoopbackError, parse_url, resolve
from pounder.traffic._url import hosts_file_addresses

URL = "http://127.0.0.1:8080/"


def spec(url: str | None = URL, **options: Any) -> BenchSpec:
    return BenchSpec.from_options(url, **options)


def request_lines(built: BenchSpec, index: int = 0) -> list[str]:
    head, _, _ = built.targets[index].request.partition(b"\r\n\r\n")
    return head.decode().split("\r\n")


def header_names(built: BenchSpec) -> list[str]:
    return [line.split(":", 1)[0] for line in request_lines(built)[1:]]


@pytest.fixture
def unix_socket_path(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    yield str(path)
    server.close()


# ---------------------------------------------------------------------------------------------
# Defaults and the engine spec


def test_defaults_closed_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_model, "available_cpus", lambda: 4)
    engine = spec().engine_spec()
    assert engine == {
        "targets": [
            {
                "tcp": "127.0.0.1:8080",
                "unix": None,
                "request": (
                    b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: pounder/"
                    + __version__.encode()
                    + b"\r\nAccept: */*\r\n\r\n"
                ),
                "head": False,
                "weight": 1,
                "tls_name": None,
            }
        ],
        "order": "sequential",
        "connections": 10,
        "threads": 4,
        "requests": None,
        "duration_s": 10.0,
        "warmup_requests": 0,
        "warmup_s": 0.0,
        "stages": None,
        "keepalive": True,
        "calls_per_conn": 0,
        "timeout_s": 30.0,
        "throttle_bps": None,
        "tsv_path": None,
        "hdr_log_path": None,
        "scenario": None,
        "tls": None,
        "replay": None,
        "io": "auto",
    }


def test_threads_default_and_clamp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_model, "available_cpus", lambda: 8)
    assert spec(connections=3).load.threads == 3
    assert spec(connections=100).load.threads == 8
    assert spec(connections=2, threads=16).load.threads == 2
    assert spec(connections="1k", threads="4").load.threads == 4


def test_requests_only_has_no_duration() -> None:
    load = spec(requests="10k").load
    assert (load.requests, load.duration_s, load.kind) == (10_000, None, "closed")
    both = spec(requests=100, duration="1m").load
    assert (both.requests, both.duration_s) == (100, 60.0)


def test_open_loop_constant_rate() -> None:
    load = spec(rate="500").load
    assert load.kind == "open"
    assert load.stages == (Stage(10.0, 500, 500),)
    assert load.duration_s == 10.0
    assert load.connections == _model.DEFAULT_OPEN_LOOP_CAP
    assert spec(rate=200, requests=1000).load.stages == (Stage(5.0, 200, 200),)
    assert spec(rate="200", duration="30s", requests=1000).load.stages == (Stage(30.0, 200, 200),)


def test_open_loop_ramps() -> None:
    assert spec(rate="50..500").load.stages == (Stage(10.0, 50, 500),)
    assert spec(rate="50..500", duration="1m").load.stages == (Stage(60.0, 50, 500),)
    assert spec(rate="50..500/60s").load.stages == (Stage(60.0, 50, 500),)
    held = spec(rate="50..500/60s", duration="90s").load
    assert held.stages == (Stage(60.0, 50, 500), Stage(30.0, 500, 500))
    assert held.duration_s == 90.0


def test_stages_and_cap() -> None:
    load = spec(stages="30s@100,60s@100..400", max_in_flight="64").load
    assert load.stages == (Stage(30, 100, 100), Stage(60, 100, 400))
    assert (load.duration_s, load.connections, load.requests) == (90.0, 64, None)
    assert spec(stages="10s@5", connections=32).load.connections == 32
    assert spec(stages="10s@5", connections=32, max_in_flight="32").load.connections == 32
    assert spec(stages=[Stage(5, 1, 2)]).engine_spec()["stages"] == [[5, 1, 2]]


def test_warmup() -> None:
    assert (spec(warmup="5s").load.warmup_s, spec(warmup="5s").load.warmup_requests) == (5.0, 0)
    assert (spec(warmup="200").load.warmup_s, spec(warmup=200).load.warmup_requests) == (0.0, 200)


def test_options_passed_through(tmp_path: Path) -> None:
    built = spec(
        keepalive=True,
        calls_per_conn="100",
        timeout="2s",
        throttle="56kbit",
        order="random",
        tsv_path=tmp_path / "r.tsv",
        hdr_log_path=str(tmp_path / "h.log"),
    )
    engine = built.engine_spec()
    assert (engine["calls_per_conn"], engine["timeout_s"], engine["throttle_bps"]) == (100, 2.0, 7000)
    assert engine["order"] == "random"
    assert engine["tsv_path"] == str(tmp_path / "r.tsv")
    assert engine["hdr_log_path"] == str(tmp_path / "h.log")


# ---------------------------------------------------------------------------------------------
# Requests


def test_request_headers_order_and_replacement() -> None:
    built = spec(
        "http://localhost:8080/p?q=1",
        headers=["X-One: 1", "accept: text/html", "User-Agent: ua/2"],
        cookies=["a=1", "b=2"],
        auth="u:p",
        body="hello",
        content_type="text/plain",
    )
    assert request_lines(built) == [
        "POST /p?q=1 HTTP/1.1",
        "Host: localhost:8080",
        "User-Agent: ua/2",
        "accept: text/html",
        "X-One: 1",
        "Cookie: a=1; b=2",
        "Authorization: Basic " + base64.b64encode(b"u:p").decode(),
        "Content-Type: text/plain",
        "Content-Length: 5",
    ]
    assert built.targets[0].request.endswith(b"\r\n\r\nhello")


def test_user_header_replaces_generated_ones_case_insensitively() -> None:
    built = spec(headers={"content-type": "application/json", "HOST": "example.test"}, content_type="text/plain")
    lines = request_lines(built)
    assert "HOST: example.test" in lines and "content-type: application/json" in lines
    assert not any(line.startswith(("Host:", "Content-Type:")) for line in lines)


def test_content_length_rules() -> None:
    assert "Content-Length" not in header_names(spec())
    assert "Content-Length: 0" in request_lines(spec(method="post"))
    assert "Content-Length: 0" in request_lines(spec(method="PUT"))
    assert "Content-Length: 2" in request_lines(spec(method="GET", body="hi"))
    assert request_lines(spec(body="hi"))[0].startswith("POST ")
    assert "Content-Length" not in header_names(spec(method="DELETE"))


def test_body_from_file(tmp_path: Path) -> None:
    path = tmp_path / "body.bin"
    path.write_bytes(b"\x00\x01payload")
    built = spec(body=f"@{path}", method="PUT")
    assert built.targets[0].request.endswith(b"\r\n\r\n\x00\x01payload")
    assert "Content-Length: 9" in request_lines(built)
    assert built.http.body_bytes == 9


def test_no_keepalive_sends_connection_close() -> None:
    built = spec(keepalive=False)
    assert request_lines(built)[-1] == "Connection: close"
    assert built.engine_spec()["keepalive"] is False


def test_head_request() -> None:
    built = spec(method="head")
    assert built.targets[0].head is True
    assert request_lines(built)[0] == "HEAD / HTTP/1.1"


def test_path_and_query_are_percent_encoded() -> None:
    assert request_lines(spec("http://127.0.0.1:8080/a b/é?x=1 2&y=%41#frag"))[0] == (
        "GET /a%20b/%C3%A9?x=1%202&y=%41 HTTP/1.1"
    )
    assert request_lines(spec("http://127.0.0.1:8080"))[0] == "GET / HTTP/1.1"
    assert request_lines(spec("http://127.0.0.1:8080?x=1"))[0] == "GET /?x=1 HTTP/1.1"


def test_recorded_headers_redact_credentials() -> None:
    built = spec(headers=["X-A: 1", "Authorization: Bearer secret"], cookies=["s=secret"], auth="u:p")
    recorded = dict(built.http.headers)
    assert recorded["X-A"] == "1"
    assert recorded["Cookie"] == "<redacted>"
    assert "secret" not in repr(built.run_options())


# ---------------------------------------------------------------------------------------------
# URLs, resolution, targets


def test_parse_url() -> None:
    url = parse_url("http://[::1]:9000/x")
    assert (url.host, url.port, url.host_header, url.request_target) == ("::1", 9000, "[::1]:9000", "/x")
    assert parse_url("HTTP://Example.test/").port == 80


@pytest.mark.parametrize(("url", "host"), [
    ("http://bücher.test:8080/", "xn--bcher-kva.test:8080"),
    ("http://BÜCHER.test/", "xn--bcher-kva.test"),
    ("http://Example.TEST:80/", "example.test:80"),
    ("http://[::1]/", "[::1]"),
])
def test_the_host_header_is_the_ascii_name(url: str, host: str) -> None:
    """Issue 25 item 8: an international name was sent raw (and unlowered) in Host while the
    connection went to its punycode name."""
    assert parse_url(url).host_header == host


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftps://127.0.0.1/", "expected http://"),
        ("ftp://127.0.0.1/", "expected http://"),
        ("127.0.0.1:8080/", "expected http://"),
        ("http:///path", "expected http://"),
        ("http://127.0.0.1:99999/", "invalid URL"),
        ("http://127.0.0.1:0/", "port 0"),
        ("http://u:p@127.0.0.1/", "use -A/--auth"),
    ],
)
def test_bad_urls(url: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        spec(url)


def test_loopback_rule() -> None:
    with pytest.raises(UsageError, match=r"10\.1\.2\.3.*not a loopback.*--allow-remote"):
        spec("http://10.1.2.3:8080/")
    assert spec("http://10.1.2.3:8080/", allow_remote=True).targets[0].tcp == "10.1.2.3:8080"
    assert spec("http://127.5.6.7/").targets[0].tcp == "127.5.6.7:80"
    assert resolve("::1", 80, allow_remote=False) == "[::1]:80"


def test_hosts_file_addresses_in_its_order(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# a comment: dual.test\n::1 localhost Dual.Test.  # trailing\n127.0.0.1\tlocalhost dual.test\n"
                     "not-an-ip dual.test\n10.0.0.7 remote.test\n")
    assert hosts_file_addresses("dual.test", str(hosts)) == ["::1", "127.0.0.1"]
    assert hosts_file_addresses("remote.test", str(hosts)) == ["10.0.0.7"]
    assert hosts_file_addresses("comment", str(hosts)) == []
    assert hosts_file_addresses("x.test", str(tmp_path / "missing")) == []


def test_a_name_that_cannot_be_loopback_is_refused_without_a_lookup() -> None:
    refused = r"nowhere\.test is not in /etc/hosts.*no DNS query was sent.*--allow-remote"
    with pytest.raises(NotLoopbackError, match=refused):
        spec("http://nowhere.test/")


def test_localhost_names_are_both_loopback_addresses_ipv4_first() -> None:
    """RFC 6761: names under .localhost are loopback (unless the hosts file says otherwise); the
    engine tries 127.0.0.1 first, then ::1."""
    assert spec("http://app.localhost:8080/").targets[0].tcp == "127.0.0.1:8080,[::1]:8080"
    assert resolve("127.1", 80, allow_remote=False) == "127.0.0.1:80"


def test_unix_socket(unix_socket_path: str) -> None:
    built = spec("http://app.local/x", unix_socket=unix_socket_path)
    target = built.targets[0]
    assert (target.tcp, target.unix) == (None, unix_socket_path)
    assert "Host: app.local" in request_lines(built)
    assert built.run_options().targets[0].connect == f"unix:{unix_socket_path}"


def test_unix_socket_must_be_a_socket(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--unix-socket: no such file"):
        spec(unix_socket=str(tmp_path / "missing.sock"))
    regular = tmp_path / "file"
    regular.write_text("")
    with pytest.raises(UsageError, match="is not a socket"):
        spec(unix_socket=str(regular))


def test_unix_socket_path_longer_than_a_socket_address_holds(tmp_path: Path) -> None:
    """Issue 25 item 16: a socket reached by a path over 107 bytes (bound relative to its deep
    directory) failed every request as "other"; it is refused before anything is sent."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    here = os.getcwd()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.chdir(deep)
        server.bind("s.sock")
    finally:
        os.chdir(here)
    try:
        long_path = str(deep / "s.sock")
        with pytest.raises(UsageError, match=rf"^--unix-socket: .* is {len(long_path)} bytes long, more than the 107 "):
            spec(unix_socket=long_path)
    finally:
        server.close()


def test_url_file_targets(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_text("http://127.0.0.1:8080/a\n2 http://127.0.0.1:8081/b\n")
    built = spec(None, url_file=path, order="random")
    assert [(t.url, t.weight, t.tcp) for t in built.targets] == [
        ("http://127.0.0.1:8080/a", 1, "127.0.0.1:8080"),
        ("http://127.0.0.1:8081/b", 2, "127.0.0.1:8081"),
    ]
    assert request_lines(built, 1)[:2] == ["GET /b HTTP/1.1", "Host: 127.0.0.1:8081"]


def test_url_file_line_methods(tmp_path: Path) -> None:
    """A line's own method: HEAD targets read no body, GET and HEAD lines send none, other
    methods send the body of -b; lines without a method keep the global one."""
    path = tmp_path / "urls.txt"
    path.write_text("HEAD http://127.0.0.1:8080/h\nGET http://127.0.0.1:8080/g\n2 PUT http://127.0.0.1:8080/p\n"
                    "http://127.0.0.1:8080/d\n")
    built = spec(None, url_file=path, method="POST", body="hi", keepalive=False)
    assert [(t.method, t.head) for t in built.targets] == [("HEAD", True), ("GET", False), ("PUT", False),
                                                           (None, False)]  # fmt: skip
    head, get, put, default = (request_lines(built, index) for index in range(4))
    assert head[0] == "HEAD /h HTTP/1.1" and get[0] == "GET /g HTTP/1.1"
    for lines in (head, get):
        assert "Content-Length" not in {line.split(":")[0] for line in lines} and lines[-1] == "Connection: close"
    assert built.targets[0].request.endswith(b"\r\n\r\n") and built.targets[1].request.endswith(b"\r\n\r\n")
    assert put[0] == "PUT /p HTTP/1.1" and "Content-Length: 2" in put and built.targets[2].request.endswith(b"hi")
    assert default[0] == "POST /d HTTP/1.1" and built.targets[3].request.endswith(b"hi")
    assert [t.method for t in built.run_options().targets] == ["HEAD", "GET", "PUT", None]


def test_url_file_bad_url_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_text("http://127.0.0.1/\n\nftp://127.0.0.1/\n")
    with pytest.raises(UsageError, match=f"^{path}:3: invalid URL 'ftp://127.0.0.1/': expected http://"):
        spec(None, url_file=path)


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"connections": 0}, "-c/--connections must be between 1 and 100,000"),
        ({"connections": "200k"}, "-c/--connections must be between 1 and 100,000"),
        ({"connections": -1}, "-c/--connections must be between"),
        ({"requests": 0}, "-n/--requests must be between 1"),
        ({"duration": "0s"}, "-d/--duration must be more than 0"),
        ({"duration": "25h"}, "at most 24h"),
        ({"duration": -3}, "-d/--duration must be more than 0"),
        ({"timeout": "0"}, "--timeout must be more than 0"),
        ({"threads": 0}, "-t/--threads must be between 1"),
        ({"threads": 5000}, "-t/--threads must be between 1 and 1,024"),
        ({"rate": "20M"}, "--rate must be between 0 and 10,000,000"),
        ({"rate": 0}, "--rate must be more than 0"),
        ({"rate": "0..0"}, "--rate must be more than 0"),
        ({"rate": "0..0/5s"}, "nothing would be sent"),
        ({"stages": "10s@0,5s@0"}, "nothing would be sent"),
        ({"stages": "20h@1,5h@1"}, "at most 24h"),
        ({"stages": "0s@10"}, "stage length must be more than 0"),
        ({"throttle": "2bit"}, "must be at least 1 byte/s"),
        ({"throttle": 0}, "--throttle must be between 1 byte/s"),
        ({"calls_per_conn": "-1"}, "--calls-per-conn"),
        ({"warmup": "30h"}, "--warmup must be more than 0 and at most 24h"),
        ({"order": "shuffled"}, "--order must be 'sequential' or 'random'"),
        ({"rate": 10, "stages": "10s@10"}, "--rate and --stages cannot be combined"),
        ({"requests": 10, "stages": "10s@10"}, "-n/--requests cannot be combined with --stages"),
        ({"duration": "5s", "stages": "10s@10"}, "-d/--duration cannot be combined with --stages"),
        ({"calls_per_conn": 5, "keepalive": False}, "--calls-per-conn needs keep-alive"),
        ({"max_in_flight": 10}, "--max-in-flight only applies to open loop"),
        ({"rate": 10, "max_in_flight": 10, "connections": 20}, "both set the open-loop connection cap"),
        ({"rate": "50..500/60s", "duration": "30s"}, "shorter than the --rate ramp"),
        ({"rate": "50..500", "requests": 100}, "a --rate ramp needs a length"),
        ({"headers": ["NoColon"]}, "expected 'Name: value'"),
        ({"headers": ["Connection: close"]}, "--no-keepalive"),
        ({"method": "GE T"}, "invalid -m/--method"),
        ({"method": "HEAD", "body": "x"}, "HEAD request cannot have a body"),
        ({"content_type": "text/plain\r\nX: y"}, "line breaks"),
        ({"auth": "nopassword"}, "user:password"),
        ({"cookies": ["novalue"]}, "--cookie"),
        ({"connections": 1.5}, "must be a whole number"),
        ({"connections": True}, "must be a whole number"),
    ],
)
def test_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        spec(**options)
    assert "\n" not in str(caught.value)


def test_url_and_url_file_conflict(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_text("http://127.0.0.1/\n")
    with pytest.raises(UsageError, match="not both"):
        spec(URL, url_file=path)
    with pytest.raises(UsageError, match="no URL given"):
        spec(None)


def test_missing_body_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--body file not found"):
        spec(body=f"@{tmp_path / 'missing.json'}")


def test_output_paths(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--tsv: directory .* does not exist"):
        spec(tsv_path=tmp_path / "no" / "such.tsv")
    with pytest.raises(UsageError, match=r"--hdr-log: .* is a directory"):
        spec(hdr_log_path=tmp_path)
    with pytest.raises(UsageError, match="need a file, not '-'"):
        spec(tsv_path="-")


def test_load_options_as_one_object_or_as_keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_model, "available_cpus", lambda: 4)
    as_object = BenchSpec.from_options(URL, options=LoadOptions(connections=3, duration="2s", keepalive=False))
    assert as_object == spec(connections=3, duration="2s", keepalive=False)
    overridden = BenchSpec.from_options(URL, options=LoadOptions(connections=3), connections="5")
    assert overridden.load.connections == 5
    with pytest.raises(UsageError, match="unknown load option .no_such_option."):
        spec(no_such_option=1)


# ---------------------------------------------------------------------------------------------
# An access log's mix


ACCESS_LINES = (
    '127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /a?x=1 HTTP/1.1" 200 5\n' * 3
    + '127.0.0.1 - - [23/Nov/2026:10:00:01 +0000] "HEAD /h HTTP/1.1" 200 0\n'
    + '127.0.0.1 - - [23/Nov/2026:10:00:01 +0000] "POST /f HTTP/1.1" 200 0\n'
)


def test_access_log_targets(tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    path.write_text(ACCESS_LINES)
    built = spec("http://127.0.0.1:8080", access_log=path)
    assert built.order == "random"
    assert [(t.url, t.weight, t.method, t.head) for t in built.targets] == [
        ("http://127.0.0.1:8080/a?x=1", 3, "GET", False), ("http://127.0.0.1:8080/h", 1, "HEAD", True)]
    assert request_lines(built, 1)[0] == "HEAD /h HTTP/1.1"
    with_post = spec("http://127.0.0.1:8080/", access_log=path, log_methods="GET,POST", order="random")
    assert [t.method for t in with_post.targets] == ["GET", "POST"]
    log = pounder.read_access_log(path)
    assert spec("http://127.0.0.1:8080", access_log=log).targets == built.targets


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"exclude_static": True}, "--exclude-static and --log-methods need --access-log"),
        ({"log_methods": "GET"}, "--exclude-static and --log-methods need --access-log"),
        ({"access_log": "LOG", "order": "sequential"}, "--order sequential cannot go with it"),
        ({"access_log": "LOG", "url_file": "LOG"}, "either -f/--url-file or --access-log"),
        ({"access_log": "LOG", "url": "http://127.0.0.1:8080/app"}, "must be scheme://host[:port] only"),
        ({"access_log": "LOG", "url": None}, "--access-log needs the server's base URL"),
        ({"access_log": "LOG", "tsv_path": "LOG"}, "--tsv LOG would overwrite the --access-log input"),
    ],
)
def test_access_log_bad_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any],
                                message: str) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    Path("LOG").write_text(ACCESS_LINES)
    url = options.pop("url", "http://127.0.0.1:8080")
    with pytest.raises(UsageError) as error:
        spec(url, **options)
    assert message in str(error.value)
