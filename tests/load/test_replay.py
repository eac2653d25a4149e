"""``pounder bench --replay``: an access log's (or a HAR's) requests sent at their recorded times,
scaled by ``--speed``, against the real test server: each request's send time against its log
time (the engine's own TSV), the burst in the per-second series, the server's own counts; whole
seconds spread evenly, out-of-order lines sorted, HAR files as targets and as replays, and every
refusal as one line before anything is sent."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import pounder
from pounder import BenchResult, UsageError, bench
from pounder.load import BenchSpec, read_access_log
from support.schemas import REGISTRY

ZONE = timezone(timedelta(hours=1))
T0 = datetime(2026, 11, 23, 9, 0, 0, tzinfo=ZONE)
SCHEMA_PATH = Path(pounder.__file__).parent / "schemas" / "bench-result.schema.json"
PYTHON_DIR = Path(pounder.__file__).resolve().parents[1]


def stamp(moment: datetime, fraction: bool = True) -> str:
    """``[23/Nov/2026:09:00:01.234 +0100]`` (with ``fraction``), as Apache's
    ``%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t`` writes it."""
    whole = moment.strftime("%d/%b/%Y:%H:%M:%S")
    millis = f".{moment.microsecond // 1000:03d}" if fraction else ""
    return f"{whole}{millis} {moment.strftime('%z')}"


def line(moment: datetime, request: str, fraction: bool = True) -> str:
    return f'127.0.0.1 - - [{stamp(moment, fraction)}] "{request}" 200 512 "-" "curl/8"\n'


def burst_log(path: Path) -> tuple[Path, list[int]]:
    """3,000 requests over 30 s: 80 a second (2,400), and a burst of 600 more in the two seconds
    from 15 s (380 a second in all). Each request's offset from the first, in ms; the lines in
    time order."""
    offsets = sorted([second * 1000 + k * 1000 // 80 + 3 for second in range(30) for k in range(80)]
                     + [15_000 + k * 2000 // 600 + 1 for k in range(600)])  # fmt: skip
    paths = ("/", "/a", "/b?q=1", "/c")
    path.write_text("".join(line(T0 + timedelta(milliseconds=ms), f"GET {paths[i % 4]} HTTP/1.1")
                            for i, ms in enumerate(offsets)))  # fmt: skip
    return path, [ms - offsets[0] for ms in offsets]


NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format t '$msec $request_uri';
    access_log {root}/access.log t;
    client_body_temp_path {root}/tmp; proxy_temp_path {root}/tmp; fastcgi_temp_path {root}/tmp;
    uwsgi_temp_path {root}/tmp; scgi_temp_path {root}/tmp;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 200 "ok\\n"; }}
    }}
}}
"""


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A fast real server: nginx (one worker) on a free loopback port answering 200 to anything;
    its URL and its access log (``$msec $request_uri`` lines: its own count). Stopped at teardown."""
    binary = shutil.which("nginx", path="/usr/sbin:/usr/bin:/sbin:/bin")
    if binary is None:
        pytest.skip("nginx is not installed")
    root = tmp_path / "nginx"
    (root / "tmp").mkdir(parents=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (root / "nginx.conf").write_text(NGINX_CONF.format(root=root, port=port))
    proc = subprocess.Popen([binary, "-p", str(root), "-c", str(root / "nginx.conf")], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "nginx did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", root / "access.log"
    finally:
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def pounder_cli(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(PYTHON_DIR), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "pounder", "bench", *args], capture_output=True, text=True,
                          timeout=timeout_s, env=env, check=False)  # fmt: skip


def busy() -> bool:
    """Whether other work holds this machine's CPUs (load average over the last minute above
    their number): then a thread waits its turn for a time slice, several ms, whoever sends."""
    return os.getloadavg()[0] > len(os.sched_getaffinity(0))


def tsv_rows(path: Path) -> list[dict[str, str]]:
    header, *rows = path.read_text().splitlines()
    names = header.split("\t")
    return [dict(zip(names, row.split("\t"), strict=True)) for row in rows]


def test_a_replay_at_10x_follows_the_logs_times(nginx: tuple[str, Path], tmp_path: Path) -> None:
    url, served = nginx
    log, offsets_ms = burst_log(tmp_path / "access.log")
    tsv, out = tmp_path / "requests.tsv", tmp_path / "result.json"
    crowded = busy()
    proc = pounder_cli("--replay", str(log), "--speed", "10x", "--tsv", str(tsv), "--json", str(out), url)
    crowded = crowded or busy()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    paths = Counter(text.split(" ", 1)[1] for text in served.read_text().splitlines())  # the server's own count
    assert paths == Counter({"/": 750, "/a": 750, "/b?q=1": 750, "/c": 750})
    result = BenchResult.from_json(out.read_text())
    assert result.requests.complete == 3000 and result.requests.failed == result.requests.unsent == 0
    rows = tsv_rows(tsv)
    assert len(rows) == 3000
    # each request was meant to go at its log time / 10, to the microsecond
    intended = sorted(int(row["intended_offset_us"]) for row in rows)
    assert intended == [ms * 100 for ms in offsets_ms]
    # and each went within 5 ms of it (the engine's own lag; the TSV's send times against each
    # other). On a machine crowded by other work (a thread waits for a time slice of a CPU, several
    # ms, whoever sends) 95 % of them, and none 100 ms late.
    lag = result.latency.schedule_lag
    sent = [int(row["start_unix_us"]) - int(row["intended_offset_us"]) for row in rows]
    spread = sorted(value - min(sent) for value in sent)
    if crowded:
        assert lag.percentiles["95"] <= 5000 and spread[len(spread) * 95 // 100] <= 5000, (lag, os.getloadavg())
        assert lag.max_us <= 100_000 and spread[-1] <= 100_000, (lag, os.getloadavg())
    else:
        assert lag.max_us <= 5000 and spread[-1] <= 5000, (lag, os.getloadavg())
    # the burst (600 more in log second 15) is in the series' second 1 (log seconds 10 to 20)
    per_second = {sample.second: sample.complete for sample in result.series}
    assert per_second[1] >= per_second[0] + 400 and per_second[1] >= per_second[2] + 400, per_second
    assert sum(per_second.values()) == 3000
    info = result.options.replay
    assert info is not None and (info.format, info.log_requests, info.requests, info.speed) == (
        "access_log",
        3000,
        3000,
        10.0,
    )
    assert (info.whole_seconds, info.out_of_order, info.distinct) == (False, 0, 4)
    assert info.span_s == offsets_ms[-1] / 1000 and info.length_s == offsets_ms[-1] / 10_000
    assert result.options.load.kind == "open" and result.options.load.stages is None
    document = json.loads(out.read_text())
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()), registry=REGISTRY).validate(document)
    assert "Replay:" in proc.stdout and "at 10x" in proc.stdout and "sub-second times as recorded" in proc.stdout


def test_whole_seconds_are_spread_evenly_and_said(testserver: Any, tmp_path: Path) -> None:
    """Apache's %t: four requests in one second go at 0, 1/4, 1/2 and 3/4 of it; the report and
    the JSON say the times were whole seconds."""
    log = tmp_path / "whole.log"
    counts = (4, 1, 2)
    log.write_text("".join(line(T0 + timedelta(seconds=s), f"GET /s{s} HTTP/1.1", fraction=False)
                           for s, n in enumerate(counts) for _ in range(n)))  # fmt: skip
    spec = BenchSpec.from_options("http://127.0.0.1:9", replay=str(log), speed="2x")
    assert spec.replay is not None and spec.replay.info.whole_seconds
    assert spec.engine_spec()["replay"] == {"times_us": [0, 125_000, 250_000, 375_000, 500_000, 1_000_000,
                                                        1_250_000], "targets": [0, 0, 0, 0, 1, 2, 2]}  # fmt: skip
    srv = testserver(mode="ok")
    result = bench(srv.url, replay=str(log), speed="20x")
    assert result.requests.complete == 7 == srv.count()
    assert result.options.replay is not None and result.options.replay.whole_seconds
    assert "spread evenly" in pounder.render_report(result)


def test_out_of_order_lines_are_sorted_and_counted(tmp_path: Path) -> None:
    """A log is written when each request ends: a slow request's line comes after later ones."""
    log = tmp_path / "late.log"
    moments = [0, 100, 50, 200, 150, 120, 300]  # ms; 50, 150 and 120 come after a later one
    log.write_text("".join(line(T0 + timedelta(milliseconds=ms), f"GET /{ms} HTTP/1.1") for ms in moments))
    spec = BenchSpec.from_options("http://127.0.0.1:9", replay=str(log))
    assert spec.replay is not None
    assert spec.replay.info.out_of_order == 3
    replay = spec.engine_spec()["replay"]
    assert replay is not None and replay["times_us"] == [ms * 1000 for ms in sorted(moments)]
    paths = [spec.targets[index].url.rsplit("/", 1)[1] for index in replay["targets"]]
    assert paths == [str(ms) for ms in sorted(moments)]


def har(path: Path, entries: list[tuple[int, str, str, dict[str, str], str | None]]) -> Path:
    """A HAR as a browser exports it: (ms after T0, method, URL, headers, body) per entry."""

    def entry(ms: int, method: str, url: str, headers: dict[str, str], body: str | None) -> dict[str, Any]:
        request: dict[str, Any] = {"method": method, "url": url, "httpVersion": "HTTP/1.1",
                                   "headers": [{"name": k, "value": v} for k, v in headers.items()],
                                   "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0}  # fmt: skip
        if body is not None:
            request["postData"] = {"mimeType": "application/x-www-form-urlencoded", "text": body}
        moment = (T0 + timedelta(milliseconds=ms)).astimezone(timezone.utc)
        return {
            "startedDateTime": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "time": 12.5,
            "request": request,
            "response": {"status": 200},
            "cache": {},
            "timings": {},
        }

    log = {"version": "1.2", "creator": {"name": "Firefox", "version": "120"},
           "entries": [entry(*e) for e in entries]}  # fmt: skip
    path.write_text(json.dumps({"log": log}))
    return path


BROWSER = {":authority": "shop.example", "Host": "shop.example", "User-Agent": "Firefox/120",
           "Accept-Language": "de", "Cookie": "session=stale", "Connection": "keep-alive",
           "Content-Length": "9"}  # fmt: skip


def shop_har(tmp_path: Path) -> Path:
    return har(tmp_path / "shop.har", [
        (0, "GET", "https://shop.example/", BROWSER, None),
        (40, "GET", "https://shop.example/style.css", BROWSER, None),
        (250, "POST", "https://shop.example/cart?add=7", {**BROWSER, "Content-Type": "text/plain"}, "qty=2&x=y"),
        (251, "GET", "https://shop.example/cart", BROWSER, None),
        (600, "GET", "data:image/png;base64,AAAA", {}, None),
    ])  # fmt: skip


def test_a_har_is_a_mix_and_a_replay(testserver: Any, tmp_path: Path) -> None:
    path = shop_har(tmp_path)
    srv = testserver(mode="ok")
    mix = bench(srv.url, access_log=str(path), requests=40, connections=2, exclude_static=True)
    seen = srv.by_request()
    assert sum(seen.values()) == 40 == mix.requests.complete
    assert set(seen) == {"GET /", "GET /cart"}  # static and POST (not in --log-methods) left out
    assert read_access_log(path).describe()[0] == (
        f"HAR file {path}: 5 entries, 3 requests in the mix (skipped: request 1, method 1)"
    )
    before = Counter(seen)
    result = bench(srv.url, replay=str(path), log_methods="GET,POST", speed="5x", tsv_path=str(tmp_path / "r.tsv"))
    assert result.requests.complete == 4
    assert Counter(srv.by_request()) - before == Counter({"GET /": 1, "GET /style.css": 1, "POST /cart?add=7": 1,
                                                          "GET /cart": 1})  # fmt: skip
    intended = sorted(int(row["intended_offset_us"]) for row in tsv_rows(tmp_path / "r.tsv"))
    assert intended == [0, 8_000, 50_000, 50_200]  # startedDateTime's ms, at 5x
    assert result.options.replay is not None and result.options.replay.format == "har"
    assert not result.options.replay.whole_seconds


def test_a_har_requests_keep_their_headers_and_body(tmp_path: Path) -> None:
    spec = BenchSpec.from_options("http://127.0.0.1:9", replay=str(shop_har(tmp_path)), log_methods="GET,POST",
                                  headers=["Accept-Language: fr"])  # fmt: skip
    post = next(target.request for target in spec.targets if target.request.startswith(b"POST"))
    head, _, body = post.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /cart?add=7 HTTP/1.1" and body == b"qty=2&x=y"
    names = [text.split(":", 1)[0].lower() for text in lines[1:]]
    assert names.count("host") == 1 and "Host: 127.0.0.1:9" in lines  # the URL argument's
    assert names.count("content-length") == 1 and "Content-Length: 9" in lines  # pounder's own
    assert "cookie" not in names and ":authority" not in names and "connection" not in names
    assert "User-Agent: Firefox/120" in lines and "Content-Type: text/plain" in lines
    assert "Accept-Language: fr" in lines and "Accept-Language: de" not in lines  # -H wins
    get = spec.targets[0].request
    assert get.startswith(b"GET / HTTP/1.1\r\n") and get.endswith(b"\r\n\r\n")  # no body on a GET


@pytest.mark.parametrize(("options", "message"), [
    ({"rate": "10"}, "--replay cannot be combined with --rate (the log sets the times)"),
    ({"stages": "1s@5"}, "--replay cannot be combined with --stages"),
    ({"url_file": "urls.txt"}, "--replay cannot be combined with -f/--url-file"),
    ({"access_log": "x.log"}, "--replay cannot be combined with --access-log"),
    ({"warmup": "5"}, "--replay cannot be combined with --warmup (every request of the log is measured)"),
    ({"order": "random"}, "--replay cannot be combined with --order (the log sets the order)"),
    ({"scenario": "s.toml"}, "--replay cannot be combined with --scenario"),
    ({"speed": "0"}, "--speed must be between 0.001x and 1,000x, got 0x"),
    ({"speed": "fast"}, "invalid --speed 'fast': use a factor such as 10x, 0.5x or 2"),
    ({"log_methods": "POST"}, "no request left: 3 requests, none of POST"),
    ({"connections": "5", "max_in_flight": "6"}, "-c and --max-in-flight both set the cap"),
])  # fmt: skip
def test_refusals_are_one_line(tmp_path: Path, options: dict[str, str], message: str) -> None:
    log = tmp_path / "a.log"
    log.write_text("".join(line(T0 + timedelta(seconds=s), "GET / HTTP/1.1") for s in range(3)))
    with pytest.raises(UsageError) as caught:
        BenchSpec.from_options("http://127.0.0.1:9", replay=str(log), **options)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_long_replay_needs_speed_or_a_cut(tmp_path: Path) -> None:
    log = tmp_path / "day.log"
    log.write_text(line(T0, "GET / HTTP/1.1") + line(T0 + timedelta(hours=25), "GET / HTTP/1.1"))
    with pytest.raises(UsageError, match=r"lasts 25\.0h at 1x, more than the limit of 24h: speed it up"):
        BenchSpec.from_options("http://127.0.0.1:9", replay=str(log))
    assert BenchSpec.from_options("http://127.0.0.1:9", replay=str(log), speed="2x").load.duration_s == 12.5 * 3600
    cut = BenchSpec.from_options("http://127.0.0.1:9", replay=str(log), duration="1h")
    assert cut.engine_spec()["duration_s"] == 3600 and cut.replay is not None and cut.replay.info.requests == 1
    assert (
        BenchSpec.from_options("http://127.0.0.1:9", replay=str(log), speed="10x").engine_spec()["duration_s"] is None
    )


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not valid JSON"),
    ('{"log": {}}', "not a HAR: no log.entries list"),
    ('{"log": {"entries": []}}', "has no entries"),
    ('{"log": {"entries": [{"request": {"method": "GET", "url": "http://x/"}}]}}', "entry 1 has no startedDateTime"),
])  # fmt: skip
def test_a_bad_har_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.har"
    path.write_text(content)
    with pytest.raises(UsageError, match=message):
        BenchSpec.from_options("http://127.0.0.1:9", replay=str(path))


def test_the_cli_refuses_before_sending(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(line(T0, "GET / HTTP/1.1"))
    for args, message in (
        (["--replay", str(log)], "--replay needs the server's base URL"),
        (["--speed", "2x", "http://127.0.0.1:9/"], "--speed needs --replay"),
        (["--replay", str(log), "http://127.0.0.1:9/x"], "must be scheme://host[:port] only"),
        (["--replay", str(tmp_path / "none.log"), "http://127.0.0.1:9"], "access log not found"),
    ):
        proc = pounder_cli(*args)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
