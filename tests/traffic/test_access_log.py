"""``read_access_log`` on generated Apache/nginx access logs: formats, gzip, malformed lines,
methods, static files, absolute URIs, service times, the mix's bound, the peaks; the URL file
it writes."""

from __future__ import annotations

import gzip
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import pounder
from pounder import UsageError
from pounder.traffic import AccessLog, read_access_log, write_url_file
from pounder.traffic._access_log import Peak
from pounder.traffic._log_lines import STATIC_EXTENSIONS

ZONE = timezone(timedelta(hours=2))
T0 = datetime(2026, 11, 23, 9, 59, 30, tzinfo=ZONE)


def stamp(moment: datetime) -> str:
    return moment.strftime("%d/%b/%Y:%H:%M:%S %z")


def common(moment: datetime, request: str, status: int = 200, tail: str = "") -> str:
    return f'127.0.0.1 - - [{stamp(moment)}] "{request}" {status} 512{tail}\n'


def combined(moment: datetime, request: str, status: int = 200, tail: str = "") -> str:
    return f'10.0.0.7 - bob [{stamp(moment)}] "{request}" {status} - "http://ref/x" "Mozilla/5.0 (X11) \\"q\\""{tail}\n'


def write(path: Path, lines: list[str] | str, *, compress: bool = False) -> Path:
    raw = ("".join(lines) if isinstance(lines, list) else lines).encode()
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def known_mix(path: Path) -> Path:
    """90 s at 10 req/s, except second 70 with 200: 70 % GET /a, 30 % GET /b?q=1 every second."""
    lines = []
    for second in range(90):
        count = 200 if second == 70 else 10
        for index in range(count):
            target = "/a" if index < count * 7 // 10 else "/b?q=1"
            lines.append(combined(T0 + timedelta(seconds=second), f"GET {target} HTTP/1.1"))
    return write(path, lines)


def test_known_mix_and_peaks(tmp_path: Path) -> None:
    log = read_access_log(known_mix(tmp_path / "access.log"))
    assert isinstance(log, AccessLog)
    assert (log.lines, log.used, dict(log.skipped)) == (1090, 1090, {})
    assert log.targets == ((763, "GET", "/a"), (327, "GET", "/b?q=1"))
    assert log.peak_second == Peak(T0 + timedelta(seconds=70), 200)
    assert log.peak_second.start.utcoffset() == timedelta(hours=2)
    assert log.peak_minute == Peak(T0 + timedelta(seconds=11), 59 * 10 + 200)  # the earliest 60 s window with it
    assert (log.first, log.last) == (T0, T0 + timedelta(seconds=89))
    assert log.mean_rate == pytest.approx(1090 / 90)
    assert log.service_time is None
    text = "\n".join(log.describe())
    assert "Busiest second 2026-11-23T10:00:40+02:00: 200 requests" in text
    assert " 70.0 %  GET /a" in text and " 30.0 %  GET /b?q=1" in text


def test_common_and_combined_mixed_gzip_by_magic(tmp_path: Path) -> None:
    lines = [common(T0, "GET / HTTP/1.0"), combined(T0, "GET / HTTP/1.1"), common(T0, "HEAD /h HTTP/1.1")]
    plain = read_access_log(write(tmp_path / "plain.log", lines))
    packed = read_access_log(write(tmp_path / "no-suffix.txt", lines, compress=True))
    assert plain.targets == packed.targets == ((2, "GET", "/"), (1, "HEAD", "/h"))
    cut = tmp_path / "cut.gz"
    cut.write_bytes(gzip.compress("".join(lines).encode())[:30])
    with pytest.raises(UsageError, match="cannot read access log"):
        read_access_log(cut)
    corrupt = tmp_path / "corrupt.gz"  # gzip's header, then bytes zlib refuses (zlib.error, not an OSError)
    corrupt.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(7, 207)))
    with pytest.raises(UsageError, match="cannot read access log"):
        read_access_log(corrupt)


def test_malformed_lines_are_counted_not_fatal(tmp_path: Path) -> None:
    lines = ["not a log line\n", "\n", common(T0, "GET /a HTTP/1.1"), common(T0, "-", 408),
             '1.2.3.4 - - [99/Foo/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 1\n', "x" * 70_000 + "\n",
             common(T0, "OPTIONS * HTTP/1.1")]  # fmt: skip
    log = read_access_log(write(tmp_path / "access.log", lines), methods="GET,OPTIONS")
    assert log.lines == 6  # the blank line is not one
    assert dict(log.skipped) == {"malformed": 3, "request": 2}
    assert log.used == 1 and log.lines == log.used + sum(log.skipped.values())


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("garbage\nmore garbage\n", "no line is in the common or combined log format (line 1 is not)"),
        ("\n\n", "has no lines"),
        ("", "has no lines"),
    ],
)
def test_no_parsable_line_is_a_usage_error(tmp_path: Path, content: str, fragment: str) -> None:
    path = write(tmp_path / "bad.log", content)
    with pytest.raises(UsageError, match="access log") as error:
        read_access_log(path)
    assert fragment in str(error.value) and str(path) in str(error.value)


def test_input_file_rules(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="access log not found"):
        read_access_log(tmp_path / "missing.log")
    with pytest.raises(UsageError, match="access log is a directory"):
        read_access_log(tmp_path)
    with pytest.raises(UsageError, match="is not a regular file"):
        read_access_log("/dev/zero")


def test_methods_kept_and_why(tmp_path: Path) -> None:
    lines = [common(T0, "GET /a HTTP/1.1"), common(T0, "POST /form HTTP/1.1"), common(T0, "HEAD /a HTTP/1.1"),
             common(T0, "DELETE /x HTTP/1.1")]  # fmt: skip
    path = write(tmp_path / "access.log", lines)
    log = read_access_log(path)
    assert log.targets == ((1, "GET", "/a"), (1, "HEAD", "/a"))
    assert dict(log.skipped) == {"method": 2}
    assert read_access_log(path, methods=["post"]).targets == ((1, "POST", "/form"),)
    with pytest.raises(UsageError, match="no request left"):
        read_access_log(path, methods=("PUT",))
    with pytest.raises(UsageError, match="invalid log method 'FETCH'"):
        read_access_log(path, methods="GET,FETCH")


def test_static_files_and_absolute_uris(tmp_path: Path) -> None:
    lines = [common(T0, "GET /app.css?v=3 HTTP/1.1"), common(T0, "GET /img/Logo.PNG HTTP/1.1"),
             common(T0, "GET http://example.com/page?id=7 HTTP/1.1"), common(T0, "GET /page?id=7 HTTP/1.1"),
             common(T0, "GET https://example.com HTTP/1.1"), common(T0, "GET /v1.2/items HTTP/1.1")]  # fmt: skip
    path = write(tmp_path / "access.log", lines)
    assert {"css", "png", "js", "woff2"} <= STATIC_EXTENSIONS
    assert read_access_log(path).used == 6
    log = read_access_log(path, exclude_static=True)
    assert log.targets == ((2, "GET", "/page?id=7"), (1, "GET", "/"), (1, "GET", "/v1.2/items"))
    assert dict(log.skipped) == {"static": 2}


def test_service_times_apache_d_and_nginx_request_time(tmp_path: Path) -> None:
    apache = [combined(T0, "GET /a HTTP/1.1", tail=f" {us}") for us in range(1000, 101_000, 1000)]  # 1..100 ms
    times = read_access_log(write(tmp_path / "apache.log", apache)).service_time
    assert times is not None and times.field == "%D (microseconds)" and times.count == 100
    assert (times.p50_s, times.p90_s, times.p99_s, times.max_s) == pytest.approx((0.050, 0.090, 0.099, 0.100))
    assert times.mean_s == pytest.approx(0.0505)
    nginx = [combined(T0, "GET /a HTTP/1.1", tail=f" {ms / 1000:.3f} 0.001") for ms in range(1, 11)]
    times = read_access_log(write(tmp_path / "nginx.log", nginx)).service_time
    assert times is not None and times.field == "$request_time (seconds)"
    assert (times.p50_s, times.max_s) == pytest.approx((0.005, 0.010))
    whole_seconds = [common(T0, "GET /a HTTP/1.1", tail=" 2")]
    times = read_access_log(write(tmp_path / "t.log", whole_seconds), time_unit="s").service_time
    assert times is not None and times.max_s == 2.0


def test_max_targets_keeps_the_most_frequent(tmp_path: Path) -> None:
    lines = [common(T0, f"GET /p{n} HTTP/1.1") for n in range(5) for _ in range(n + 1)]  # /p4 5 times ... /p0 once
    log = read_access_log(write(tmp_path / "access.log", lines), max_targets=2)
    assert log.targets == ((5, "GET", "/p4"), (4, "GET", "/p3"))
    assert (log.used, log.dropped_targets, dict(log.skipped)) == (9, 3, {"max_targets": 6})
    assert log.peak_second.count == 15  # the peaks count every request kept by the filters


def test_url_file_round_trip(tmp_path: Path) -> None:
    log = read_access_log(write(tmp_path / "access.log", [common(T0, "GET /a?x=1 HTTP/1.1"),
                                                          common(T0, "HEAD /b HTTP/1.1")]))  # fmt: skip
    target = tmp_path / "urls.txt"
    pounder.write_url_file(log, "http://127.0.0.1:8080/", target)
    assert target.read_text() == "1 GET http://127.0.0.1:8080/a?x=1\n1 HEAD http://127.0.0.1:8080/b\n"
    write_url_file([(3, "POST", "/f")], "http://127.0.0.1:8080", target)
    assert target.read_text() == "3 POST http://127.0.0.1:8080/f\n"
    with pytest.raises(UsageError, match="must be scheme://host"):
        log.url_lines("http://127.0.0.1:8080/prefix")


def test_the_busiest_minute_needs_a_minute_of_log(tmp_path: Path) -> None:
    """A 30 s log at 10 req/s: a 60 s window over it would say 300 requests, 5.0 req/s, half the
    mean; it is left out, and the summary says why. A log of 90 s shows it."""
    short = read_access_log(
        write(
            tmp_path / "short.log",
            [combined(T0 + timedelta(seconds=second), "GET / HTTP/1.1") for second in range(30) for _ in range(10)],
        )
    )
    lines = short.describe()
    assert lines[1].endswith("(30 s), mean 10.0 req/s")
    assert lines[3] == "Busiest minute: not shown (the log spans less than a minute)"
    assert not any("req/s)" in text for text in lines)
    long = read_access_log(known_mix(tmp_path / "long.log")).describe()
    assert long[3] == f"Busiest minute from {(T0 + timedelta(seconds=11)).isoformat()}: 790 requests (13.2 req/s)"
