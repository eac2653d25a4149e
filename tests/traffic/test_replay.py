"""``pounder bench --replay``: an access log's (or a HAR's) requests sent at their recorded times,
scaled by ``--speed``, against the real test server: whole seconds spread evenly, out-of-order
lines sorted, the lines read and skipped by reason, HAR files as targets and as replays (their
main origin only, their headers checked), and every refusal as one line before anything is sent.
The 10x acceptance test (send times measured) is tests/e2e/test_bench_replay.py."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import pounder
from pounder import BenchResult, UsageError, bench
from pounder.load import BenchSpec
from pounder.results import describe_replay
from pounder.traffic import read_access_log
from support.accesslog import T0, line, pounder_cli, tsv_rows
from support.schemas import REGISTRY

SCHEMA_PATH = Path(pounder.__file__).parent / "schemas" / "bench-result.schema.json"


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
    assert ":authority" not in names and "connection" not in names and "Cookie: session=stale" in lines
    assert "User-Agent: Firefox/120" in lines and "Content-Type: text/plain" in lines
    assert "Accept-Language: fr" in lines and "Accept-Language: de" not in lines  # -H wins
    get = spec.targets[0].request
    assert get.startswith(b"GET / HTTP/1.1\r\n") and get.endswith(b"\r\n\r\n")  # no body on a GET


def test_a_har_body_without_its_header_gets_the_recorded_type(tmp_path: Path) -> None:
    """A POST whose header list names no Content-Type is sent with postData's mimeType (a form
    backend does not read a body of no type); one that names it keeps its own."""
    path = har(tmp_path / "form.har", [(0, "POST", "https://shop.example/login", {"User-Agent": "x"}, "a=1"),
                                       (5, "POST", "https://shop.example/note", {"Content-Type": "text/plain"}, "b")])
    spec = BenchSpec.from_options("http://127.0.0.1:9", replay=str(path), log_methods="POST")
    heads = {t.request.split(b" ", 2)[1]: t.request.partition(b"\r\n\r\n")[0].decode().split("\r\n")
             for t in spec.targets}  # fmt: skip
    assert heads[b"/login"].count("Content-Type: application/x-www-form-urlencoded") == 1
    assert "Content-Type: text/plain" in heads[b"/note"]
    assert not any(line.startswith("Content-Type: application") for line in heads[b"/note"])


def test_the_lines_read_and_skipped_are_said(testserver: Any, tmp_path: Path) -> None:
    """Like --access-log's summary: the lines read, the requests kept, the others by reason, in
    the report and the JSON; each distinct request's count in the log instead of a weight."""
    log = tmp_path / "mixed.log"
    log.write_text("".join([
        line(T0, "GET /a HTTP/1.1"), "not a log line\n", line(T0 + timedelta(milliseconds=10), "POST /form HTTP/1.1"),
        line(T0 + timedelta(milliseconds=20), "GET /a HTTP/1.1"), line(T0 + timedelta(milliseconds=30), "-"),
        line(T0 + timedelta(milliseconds=40), "GET /b HTTP/1.1"),
        line(T0 + timedelta(milliseconds=50), "GET /a HTTP/1.1"),
    ]))  # fmt: skip
    srv = testserver(mode="ok")
    result = bench(srv.url, replay=str(log), speed="5x")
    assert result.requests.complete == 4 == srv.count()
    info = result.options.replay
    assert info is not None
    assert (info.lines, info.log_requests, dict(info.skipped)) == (7, 4, {"malformed": 1, "request": 1, "method": 1})
    assert (info.methods, info.origin) == (("GET", "HEAD"), None)
    assert describe_replay(info)[1] == ("7 lines read, 4 requests kept; skipped: malformed 1, request 1, method 1 "
                                        "(not GET or HEAD: --log-methods)")  # fmt: skip
    assert [(target.url.rsplit("/", 1)[1], target.weight) for target in result.options.targets] == [("a", 3), ("b", 1)]
    report = pounder.render_report(result)
    assert "(3 in the log, " in report and "(1 in the log, " in report and "weight" not in report
    document = json.loads(result.to_json())
    assert document["options"]["replay"]["skipped"] == {"malformed": 1, "request": 1, "method": 1}
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()), registry=REGISTRY).validate(document)
    assert BenchResult.from_json(result.to_json()).options.replay == info


def test_a_hars_posts_left_out_are_said(tmp_path: Path) -> None:
    spec = BenchSpec.from_options("http://127.0.0.1:9", replay=str(shop_har(tmp_path)))
    assert spec.replay is not None
    assert describe_replay(spec.replay.info)[1] == ("5 entries read, 3 requests kept; skipped: request 1, method 1 "
                                                    "(not GET or HEAD: --log-methods)")  # fmt: skip


def test_a_har_keeps_its_most_frequent_origin(testserver: Any, tmp_path: Path) -> None:
    """A browser's HAR: a redirect from http://, the site's own requests, a CDN's and another
    port's. Only the most frequent origin's are sent; the others are counted and said."""
    path = har(tmp_path / "site.har", [
        (0, "GET", "http://Shop.example/", {}, None),
        (10, "GET", "https://shop.example/", {}, None),
        (20, "GET", "https://cdn.example/lib.js", {}, None),
        (30, "GET", "https://cdn.example/font.woff2", {}, None),
        (40, "GET", "https://SHOP.example:443/api?x=1", {}, None),
        (50, "GET", "https://shop.example:8443/admin", {}, None),
        (60, "GET", "https://shop.example/cart", {}, None),
    ])  # fmt: skip
    mix = read_access_log(path)
    assert (mix.origin, mix.used, dict(mix.skipped)) == ("https://shop.example", 3, {"other_host": 4})
    assert mix.describe()[1] == ("Only the requests to https://shop.example (the HAR's most frequent origin): 4 to "
                                 "other hosts (CDNs, analytics, fonts) left out")  # fmt: skip
    srv = testserver(mode="ok")
    result = bench(srv.url, replay=str(path), speed="10x")
    assert srv.by_request() == {"GET /": 1, "GET /api?x=1": 1, "GET /cart": 1}
    info = result.options.replay
    assert info is not None and (info.origin, info.log_requests, dict(info.skipped)) == (
        "https://shop.example", 3, {"other_host": 4})  # fmt: skip
    assert "4 to other hosts" in pounder.render_report(result)
    # equally frequent: the earliest in the file
    tie = har(tmp_path / "tie.har", [
        (0, "GET", "http://b.example/", {}, None), (1, "GET", "http://a.example/", {}, None),
        (2, "GET", "http://a.example/x", {}, None), (3, "GET", "http://b.example/y", {}, None),
    ])  # fmt: skip
    assert read_access_log(tie).origin == "http://b.example"


@pytest.mark.parametrize(("headers", "message"), [
    ({"X Bad": "1"}, "entry 2: invalid header name 'X Bad': only letters, digits"),
    ({"X-Ok": "a\r\nX-Injected: 1"}, "entry 2: header X-Ok's value holds a line break or NUL"),
])  # fmt: skip
def test_a_hars_bad_header_is_refused_naming_the_entry(tmp_path: Path, headers: dict[str, str], message: str) -> None:
    path = har(tmp_path / "bad.har", [(0, "GET", "http://x.example/", {}, None),
                                      (5, "GET", "http://x.example/a", headers, None)])  # fmt: skip
    for read in (lambda: read_access_log(path), lambda: BenchSpec.from_options("http://127.0.0.1:9", replay=str(path))):
        with pytest.raises(UsageError) as caught:
            read()
        assert message in str(caught.value) and str(caught.value).startswith(f"HAR file {path}: ")
        assert "\n" not in str(caught.value)


def test_a_hars_mix_takes_get_and_head_only(tmp_path: Path) -> None:
    """The mix is keyed on method and target: a HAR's bodies and headers are not in it, so its
    POSTs would go without their bodies. Refused, pointing to --replay, which sends them."""
    path = shop_har(tmp_path)
    expected = (f"HAR file {path}: the mix (--access-log) sends no recorded body or header, so it takes GET and HEAD "
                "only, not POST: replay the HAR with --replay to send them")  # fmt: skip
    with pytest.raises(UsageError) as caught:
        read_access_log(path, methods="GET,POST")
    assert str(caught.value) == expected
    with pytest.raises(UsageError) as caught:
        BenchSpec.from_options("http://127.0.0.1:9", access_log=str(path), log_methods="GET,POST")
    assert str(caught.value) == expected


@pytest.mark.parametrize("source", ["replay", "access_log"])
@pytest.mark.parametrize(("option", "flag"), [("method", "-m/--method"), ("body", "-b/--body"),
                                              ("content_type", "-T/--content-type")])  # fmt: skip
def test_method_body_and_content_type_are_refused(tmp_path: Path, source: str, option: str, flag: str) -> None:
    log = tmp_path / "a.log"
    log.write_text(line(T0, "GET / HTTP/1.1"))
    with pytest.raises(UsageError) as caught:
        BenchSpec.from_options("http://127.0.0.1:9", **{source: str(log), option: "POST"})
    name = "--access-log" if source == "access_log" else "--replay"
    assert str(caught.value) == (f"{name} takes each request's method (and a HAR's body and headers) from the file: "
                                 f"{flag} cannot go with it")  # fmt: skip


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
        (["--replay", str(log), "-m", "POST", "-b", "hello", "http://127.0.0.1:9"], "--replay takes each request's"),
        (["--access-log", str(log), "-b", "hello", "http://127.0.0.1:9"], "-b/--body cannot go with it"),
    ):
        proc = pounder_cli(*args)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------------------------
# Issue 39: overload counted one way and a run that ends on time (3); hostile HAR and log files
# (6, 16); the recorded Cookie kept (21); a replay of one moment has no planned time (21).


def _burst_log(tmp_path: Path, count: int, step_ms: int) -> Path:
    log = tmp_path / "burst.log"
    log.write_text("".join(line(T0 + timedelta(milliseconds=step_ms * i), f"GET /r{i} HTTP/1.1")
                           for i in range(count)))  # fmt: skip
    return log


@pytest.mark.parametrize(("duration", "arrivals", "length_s"), [(None, 30, 0.29), ("1s", 30, 0.29),
                                                                 ("150ms", 15, 0.15)])  # fmt: skip
def test_an_overloaded_replay_counts_each_arrival_once_and_ends_on_time(
        testserver: Any, tmp_path: Path, io_path: str, duration: str | None, arrivals: int, length_s: float) -> None:
    """30 requests 10 ms apart, -c 2, a server answering in 100 ms: most arrivals find both
    connections busy. One rule (docs/reference/engine-contract.md, Overload): they wait (late) until the
    replay's end (its last request's time, or -d), then what still waits is unsent. Every arrival
    is sent or unsent once, the server saw exactly those sent, and the run ends at its length plus
    the drain (before: -d 1s, longer than the log, ran until the backlog was served, 'Unsent 0,
    Late 28', 1.5 s)."""
    import time

    srv = testserver(mode="ok", delay_ms=100)
    clock = time.monotonic()
    result = bench(srv.url, replay=str(_burst_log(tmp_path, 30, 10)), connections=2, threads=1, duration=duration,
                   io=io_path)  # fmt: skip
    wall = time.monotonic() - clock
    counts = result.requests
    assert counts.failed == 0
    assert counts.complete + counts.unsent == arrivals == result.options.replay.requests  # type: ignore[union-attr]
    assert srv.count() == counts.complete
    assert counts.unsent >= arrivals // 2 and counts.late >= 1
    assert result.options.load.duration_s == pytest.approx(length_s)
    # its length, then what was in flight (100 ms) within the 1 s drain
    assert length_s <= result.elapsed_s <= length_s + 0.2
    assert wall <= length_s + 1.5  # the planning and the engine's start included


def _nested(depth: int) -> str:
    return '{"log": {"entries": [' + "[" * depth + "]" * depth + "]}}"


@pytest.mark.parametrize("source", ["replay", "access_log"])
@pytest.mark.parametrize(("name", "content", "message"), [
    # deeper than Python's JSON reader goes: one line, not a RecursionError
    ("deep.har", _nested(100_000), r"^HAR file \S+deep.har: nested too deeply to be a HAR \(a HAR is a few levels"),
    ("deep.json", "[" * 100_000, r"nested too deeply to be a HAR"),
    # JSON, but no HAR: said so, not "no line is in the common or combined log format"
    ("x.har", "[1, 2, 3]", r"^\S+x.har is JSON but not a HAR: an array, not an object with log.entries$"),
    ("x.har", '  \n {"log": {"pages": []}}', r"^\S+x.har is JSON but not a HAR: no log.entries list$"),
    ("x.har", '"just text"', r"^\S+x.har is JSON but not a HAR: a string, not an object with log.entries$"),
    ("x.har", " " * 5000 + "[]", r"is JSON but not a HAR: an array"),
    ("x.har", "GET / HTTP/1.1\n", r"^HAR file \S+x.har: neither JSON \(a HAR is a JSON object with log.entries\) "
                                  r"nor an access log \(line 1 is not in the common or combined log format\)$"),
    # an integer of 5,000 digits: Python's reader refuses it with a ValueError of its own
    ("big.har", '{"log": {"entries": [], "n": ' + "9" * 5000 + "}}", r"^HAR file \S+big.har: not valid JSON"),
])  # fmt: skip
def test_a_hostile_har_is_one_line(tmp_path: Path, source: str, name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(UsageError) as caught:
        BenchSpec.from_options("http://127.0.0.1:9", **{source: str(path)})
    assert re.search(message, str(caught.value)), str(caught.value)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400


def test_hostile_magnitudes_in_a_har_and_a_log(tmp_path: Path) -> None:
    """Years 1 and 9999 in a HAR cut by -d at 0.001x (a send time past 2^64 µs before the cut was
    applied); a service time of 5,000 digits in a log (an int() Python refuses): read, or one line."""
    path = har(tmp_path / "ages.har", [(0, "GET", "http://x.example/a", {}, None),
                                       (1, "GET", "http://x.example/b", {}, None)])  # fmt: skip
    document = json.loads(path.read_text())
    document["log"]["entries"][0]["startedDateTime"] = "0001-01-01T00:00:00.000Z"
    document["log"]["entries"][1]["startedDateTime"] = "9999-12-31T23:59:59.999Z"
    path.write_text(json.dumps(document))
    spec = BenchSpec.from_options("http://127.0.0.1:9", replay=str(path), speed="0.001x", duration="1s")
    replay = spec.engine_spec()["replay"]
    assert replay is not None and replay["times_us"] == [0] and spec.replay is not None
    assert spec.replay.info.requests == 1
    with pytest.raises(UsageError, match=r"lasts 87,649,416.0h at 1x, more than the limit of 24h"):
        BenchSpec.from_options("http://127.0.0.1:9", replay=str(path))
    log = tmp_path / "slow.log"
    log.write_text(line(T0, "GET / HTTP/1.1").rstrip("\n") + " " + "9" * 5000 + "\n"
                   + line(T0, "GET / HTTP/1.1").rstrip("\n") + " 1e308\n"
                   + line(T0, "GET / HTTP/1.1").rstrip("\n") + " 0.25\n")  # fmt: skip
    mix = read_access_log(log)
    assert mix.used == 3 and mix.service_time is not None
    assert (mix.service_time.count, mix.service_time.max_s) == (1, 0.25)  # the absurd ones are no service time


def test_a_har_replay_keeps_the_recorded_cookie(testserver: Any, tmp_path: Path) -> None:
    """docs/guide/bench.md: a HAR's headers are kept. The recorded Cookie too (it was dropped without a word);
    --cookie or -H replace it, as they replace any recorded header."""
    path = shop_har(tmp_path)
    spec = BenchSpec.from_options("http://127.0.0.1:9", replay=str(path))
    assert all(b"\r\nCookie: session=stale\r\n" in target.request for target in spec.targets)
    for option in ({"cookies": ["session=mine"]}, {"headers": ["Cookie: session=mine"]}):
        spec = BenchSpec.from_options("http://127.0.0.1:9", replay=str(path), **option)  # type: ignore[arg-type]
        for target in spec.targets:
            assert target.request.count(b"Cookie:") == 1 and b"Cookie: session=mine\r\n" in target.request
    srv = testserver(mode="echo")
    result = bench(srv.url, replay=str(path), speed="20x", requests=1)
    assert result.requests.complete == 1


def test_a_replay_of_one_moment_has_no_planned_time(testserver: Any, tmp_path: Path) -> None:
    """Every line at one timestamp: the replay's length is 0 s; the report does not print
    "(planned 0 s)" but says why there is no planned time."""
    log = tmp_path / "moment.log"
    log.write_text(line(T0, "GET /a HTTP/1.1") * 5)
    srv = testserver(mode="ok")
    result = bench(srv.url, replay=str(log), connections=10)
    assert result.requests.complete == 5 == srv.count()
    report = pounder.render_report(result)
    measured = next(text for text in report.splitlines() if text.startswith("Measured time:"))
    assert "planned 0 s" not in measured
    assert measured.endswith("(the replayed requests share one moment: no planned length)"), measured


def test_names_in_messages_are_bounded(tmp_path: Path) -> None:
    """A 200 KB path in a scenario step is no 200 KB step name, nor a 200 KB error line: one
    helper (pounder._errors.clip) trims what a message quotes."""
    long_path = "/" + "a" * 200_000
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'[[loop]]\npath = "{long_path}"\n[[loop]]\npath = "{long_path}"\n')
    with pytest.raises(UsageError) as caught:
        BenchSpec.from_options("http://127.0.0.1:9", scenario=str(scenario))
    assert len(str(caught.value)) < 300 and "(200,001 characters)" in str(caught.value), str(caught.value)
    scenario.write_text(f'[[loop]]\npath = "{long_path}"\n')
    spec = BenchSpec.from_options("http://127.0.0.1:9", scenario=str(scenario))
    assert spec.scenario is not None and len(spec.scenario["steps"][0]["name"]) <= 100
    bad = tmp_path / "bad.har"
    bad.write_text(json.dumps({"log": {"entries": [{"startedDateTime": "x" * 100_000,
                                                    "request": {"method": "GET", "url": "http://x/"}}]}}))
    with pytest.raises(UsageError) as caught:
        BenchSpec.from_options("http://127.0.0.1:9", replay=str(bad))
    assert len(str(caught.value)) < 300 and "(100,000 characters)" in str(caught.value), str(caught.value)


def test_user_text_in_url_file_and_header_errors_is_bounded(tmp_path: Path) -> None:
    """The same helper bounds what the URL file and header readers quote (a 64 KB line)."""
    urls = tmp_path / "u.txt"
    urls.write_text("x" * 60_000 + " y z\n")
    for read in (lambda: BenchSpec.from_options(None, url_file=str(urls)),
                 lambda: BenchSpec.from_options("http://127.0.0.1:9", headers=["X" * 60_000])):  # fmt: skip
        with pytest.raises(UsageError) as caught:
            read()
        assert len(str(caught.value)) < 400 and "characters)" in str(caught.value), str(caught.value)[:200]
