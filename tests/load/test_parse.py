"""Parsing of human input (pounder._units, pounder.load._model's rates, stages and warm-ups, and
pounder.traffic._parse)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from pounder import UsageError
from pounder._units import parse_bandwidth, parse_count, parse_duration, parse_rate
from pounder.load._model import RateSpec, Warmup, parse_rate_spec, parse_stages, parse_warmup
from pounder.results import Stage
from pounder.traffic._parse import UrlLine, basic_auth, load_body, parse_cookie, parse_header, read_url_file


@pytest.mark.parametrize(
    ("text", "expected"),
    [("250", 250), ("10k", 10_000), ("10K", 10_000), ("1.5M", 1_500_000), ("2G", 2_000_000_000), (" 7 ", 7), ("0", 0)],
)
def test_count(text: str, expected: int) -> None:
    assert parse_count(text, "-n") == expected


@pytest.mark.parametrize("text", ["", "ten", "-5", "1m", "1.5", "1.0005k", "10 k", "1e3", "0x10"])
def test_count_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="-n"):
        parse_count(text, "-n")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("500ms", 0.5),
        ("45", 45.0),
        ("0.25", 0.25),
        ("1m30s", 90.0),
        ("1h30m", 5400.0),
        ("1.5s", 1.5),
        ("500us", 0.0005),  # microseconds, the unit the JSON writes latencies in
        ("500\u00b5s", 0.0005),  # the micro sign
        ("500\u03bcs", 0.0005),  # the Greek mu
        ("1ms500us", 0.0015),
    ],
)
def test_duration(text: str, seconds: float) -> None:
    assert parse_duration(text, "-d") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "3x", "-1s", "30 s", "1d", "s30", "30s2", "ms", "us", "5u", "5mus"])
def test_duration_rejects(text: str) -> None:
    with pytest.raises(UsageError, match=r"invalid -d .*30s"):
        parse_duration(text, "-d")


@pytest.mark.parametrize(("text", "rate"), [("500", 500.0), ("0.5", 0.5), ("2.5k", 2500.0), ("500/s", 500.0)])
def test_rate(text: str, rate: float) -> None:
    assert parse_rate(text, "--rate") == rate


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("500", RateSpec(500, 500)),
        ("50..500", RateSpec(50, 500)),
        ("50..500/60s", RateSpec(50, 500, 60.0)),
        ("0..1k/2m", RateSpec(0, 1000, 120.0)),
        ("50/s..500/s", RateSpec(50, 500)),
    ],
)
def test_rate_spec(text: str, spec: RateSpec) -> None:
    assert parse_rate_spec(text) == spec


def test_rate_spec_ramp_flag() -> None:
    assert not parse_rate_spec("500").is_ramp
    assert parse_rate_spec("50..500").is_ramp
    assert parse_rate_spec("500..500/10s").is_ramp


@pytest.mark.parametrize("text", ["", "fast", "50..", "..500", "500/60s", "50..500/", "50..500/xs", "-5"])
def test_rate_spec_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="--rate"):
        parse_rate_spec(text)


def test_stages() -> None:
    assert parse_stages("30s@100,60s@400,30s@100") == (
        Stage(30, 100, 100),
        Stage(60, 400, 400),
        Stage(30, 100, 100),
    )
    assert parse_stages("60s@100..400, 1m@400") == (Stage(60, 100, 400), Stage(60, 400, 400))


@pytest.mark.parametrize("text", ["", "30s", "@100", "30s@", "30s@100,", "30s@100..400/60s", "x@100", "30s@fast"])
def test_stages_reject(text: str) -> None:
    with pytest.raises(UsageError, match="--stages"):
        parse_stages(text)


@pytest.mark.parametrize(
    ("text", "bytes_per_s"),
    [
        ("33.6kbps", 4200),  # 33,600 bits/s
        ("1Mbps", 125_000),
        ("56kbit", 7000),
        ("56kbit/s", 7000),
        ("4KB/s", 4000),
        ("4kB/s", 4000),
        ("1MiB/s", 1_048_576),
        ("2KiB/s", 2048),
        ("2000", 2000),
        ("2000B/s", 2000),
        ("8bps", 1),
    ],
)
def test_bandwidth(text: str, bytes_per_s: int) -> None:
    assert parse_bandwidth(text) == bytes_per_s


@pytest.mark.parametrize("text", ["", "56k", "fast", "1Mb", "0", "1bps", "-5kbps", "1 Mbps/s"])
def test_bandwidth_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="--throttle"):
        parse_bandwidth(text)


@pytest.mark.parametrize(
    ("text", "warmup"),
    [
        ("5s", Warmup(seconds=5.0)),
        ("500ms", Warmup(seconds=0.5)),
        ("100", Warmup(requests=100)),
        ("1k", Warmup(requests=1000)),
        ("1m", Warmup(seconds=60.0)),
    ],
)
def test_warmup(text: str, warmup: Warmup) -> None:
    assert parse_warmup(text) == warmup


def test_warmup_rejects() -> None:
    with pytest.raises(UsageError, match="--warmup"):
        parse_warmup("soon")


def test_header() -> None:
    assert parse_header("X-Test: hello world ") == ("X-Test", "hello world")
    assert parse_header("X-Empty:") == ("X-Empty", "")
    assert parse_header("X-Colon: a:b") == ("X-Colon", "a:b")
    assert parse_header("X-Tab: a\tb") == ("X-Tab", "a\tb")  # the one control character allowed
    assert parse_header("X-Text: caf\u00e9") == ("X-Text", "caf\u00e9")  # obs-text


@pytest.mark.parametrize("char", ["\x00", "\x01", "\x1b", "\x7f", "\n"])
def test_header_value_with_a_control_character_is_refused(char: str) -> None:
    """RFC 9110 allows no control character but the tab in a field value (issue 25's families)."""
    with pytest.raises(UsageError, match="control characters"):
        parse_header(f"X-A: b{char}c")


@pytest.mark.parametrize("text", ["X-Test", ": value", "X Test: v", "X-Test : v", "Bad(name): v", "X: a\r\nY: b"])
def test_header_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="-H"):
        parse_header(text)


def test_cookie() -> None:
    assert parse_cookie("a=1") == "a=1"
    assert parse_cookie("a=1;b=2; ") == "a=1; b=2"
    for bad in ("", "novalue", "=1", "a=1; b"):
        with pytest.raises(UsageError, match="--cookie"):
            parse_cookie(bad)


def test_basic_auth() -> None:
    value = basic_auth("user:pa:ss")
    assert value == "Basic " + base64.b64encode(b"user:pa:ss").decode()
    assert basic_auth("user:") == "Basic " + base64.b64encode(b"user:").decode()
    for bad in ("user", ":pass", ""):
        with pytest.raises(UsageError, match="user:password"):
            basic_auth(bad)


def test_body(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(b'{"a": 1}\n')
    assert load_body(f"@{path}") == b'{"a": 1}\n'
    assert load_body("héllo") == "héllo".encode()
    assert load_body(b"\x00raw") == b"\x00raw"


def test_body_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--body file not found: .*nope"):
        load_body(f"@{tmp_path / 'nope'}")
    with pytest.raises(UsageError, match="is a directory"):
        load_body(f"@{tmp_path}")


def test_url_file(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_text(
        "# comment\n\nhttp://127.0.0.1:8080/a\n  3   http://127.0.0.1:8080/b?x=1  \n   # indented comment\n"
    )
    assert read_url_file(path) == (
        UrlLine("http://127.0.0.1:8080/a", 1, f"{path}:3"),
        UrlLine("http://127.0.0.1:8080/b?x=1", 3, f"{path}:4"),
    )


def test_url_file_line_methods(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_text("HEAD http://127.0.0.1/h\n3 POST http://127.0.0.1/p\n2 http://127.0.0.1/g\n")
    assert read_url_file(path) == (
        UrlLine("http://127.0.0.1/h", 1, f"{path}:1", "HEAD"),
        UrlLine("http://127.0.0.1/p", 3, f"{path}:2", "POST"),
        UrlLine("http://127.0.0.1/g", 2, f"{path}:3"),
    )


@pytest.mark.parametrize(
    "line", ["0 http://127.0.0.1/", "x http://127.0.0.1/", "1 2 http://127.0.0.1/", "-1 http://a/",
             "get http://127.0.0.1/", "3 FETCH http://127.0.0.1/", "GET 3 http://127.0.0.1/",
             "3 GET GET http://127.0.0.1/"]
)
def test_url_file_malformed_line_names_file_and_line(tmp_path: Path, line: str) -> None:
    path = tmp_path / "urls.txt"
    path.write_text(f"http://127.0.0.1/\n# ok\n{line}\n")
    with pytest.raises(UsageError, match=f"{path}:3: expected"):
        read_url_file(path)


def test_url_file_missing_or_empty(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="URL file not found"):
        read_url_file(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    with pytest.raises(UsageError, match="has no URLs"):
        read_url_file(empty)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match="not UTF-8"):
        read_url_file(binary)
