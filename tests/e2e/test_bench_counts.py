"""Counts are exact: what the server received equals what pounder says it attempted (complete +
failed, warmup included), in every load model. Real engine, real test server."""

from __future__ import annotations

import math

import pytest


@pytest.mark.parametrize(
    ("connections", "threads", "requests"),
    [(1, 1, 50), (4, 1, 200), (4, 2, 200), (3, 2, 101), (8, 2, 301)],
)
def test_closed_loop_requests_exact(testserver, run, assert_accounted, connections, threads, requests, io_path):
    srv = testserver(mode="ok")
    result = run(srv.url + "/", connections=connections, threads=threads, requests=requests, io=io_path)

    assert result.options.load.kind == "closed"
    assert result.options.load.threads == threads
    assert result.requests.complete == requests
    assert result.requests.failed == 0
    assert result.status == {"200": requests}
    stats = assert_accounted(srv, result)
    assert stats["requests"] == requests
    # keep-alive: one connection per user, and the server saw exactly those
    assert result.connections_opened == stats["connections"] == connections


@pytest.mark.parametrize("threads", [1, 2])
def test_closed_loop_duration_exact(testserver, run, assert_accounted, threads):
    srv = testserver(mode="ok", delay_ms=2)
    result = run(srv.url + "/", connections=4, threads=threads, duration="1s")

    assert result.requests.complete > 0
    assert result.requests.failed == 0
    assert result.errors.nonzero() == {}
    assert 1.0 <= result.elapsed_s < 2.0  # the measured phase lasted the -d asked for (plus the drain)
    stats = assert_accounted(srv, result)
    assert result.connections_opened == stats["connections"] == 4


@pytest.mark.parametrize("threads", [1, 2])
def test_open_loop_rate_exact(testserver, run, assert_accounted, threads, io_path):
    srv = testserver(mode="ok", delay_ms=2)
    result = run(srv.url + "/", rate=200, duration="1.5s", threads=threads, io=io_path)

    assert result.options.load.kind == "open"
    assert result.requests.failed == 0
    # the server keeps up easily (200/s, 2 ms, up to 1000 in flight): every slot was sent
    assert result.requests.unsent == 0
    assert result.requests.complete == 300  # 200/s x 1.5 s
    stats = assert_accounted(srv, result)
    assert result.connections_opened == stats["connections"]


def test_open_loop_warmup_exact(testserver, run, assert_accounted, io_path):
    srv = testserver(mode="ok")
    result = run(srv.url + "/", rate=100, duration="1s", warmup=20, io=io_path)

    assert result.warmup.complete == 20
    assert result.warmup.failed == 0
    assert result.requests.complete + result.requests.failed + result.requests.unsent == 100
    stats = assert_accounted(srv, result)
    assert stats["requests"] == 20 + result.requests.complete + result.requests.failed


def test_no_keepalive_one_connection_per_request(testserver, run, assert_accounted, io_path):
    srv = testserver(mode="ok")
    result = run(srv.url + "/", connections=4, threads=2, requests=100, keepalive=False, io=io_path)

    assert result.requests.complete == 100
    assert result.requests.failed == 0
    stats = assert_accounted(srv, result)
    assert stats["requests"] == 100
    assert stats["connections"] == 100
    assert result.connections_opened == 100
    assert result.phases.connect.count == 100  # every request opened its connection


def test_no_keepalive_duration_connections_match(testserver, run, assert_accounted):
    srv = testserver(mode="ok", delay_ms=1)
    result = run(srv.url + "/", connections=2, duration="1s", keepalive=False)

    assert result.requests.failed == 0
    stats = assert_accounted(srv, result)
    assert stats["connections"] == result.connections_opened == stats["requests"]


@pytest.mark.parametrize(("connections", "requests"), [(1, 30), (2, 30), (4, 50)])
def test_calls_per_conn(testserver, run, assert_accounted, connections, requests, io_path):
    srv = testserver(mode="ok")
    result = run(srv.url + "/", connections=connections, requests=requests, calls_per_conn=3, io=io_path)

    assert result.requests.complete == requests
    assert result.requests.failed == 0
    stats = assert_accounted(srv, result)
    assert stats["connections"] == result.connections_opened
    # at most 3 responses per connection: at least ceil(n / 3) connections; each user wastes at
    # most one partly used connection
    assert math.ceil(requests / 3) <= result.connections_opened <= math.ceil(requests / 3) + connections
    if connections == 1:
        assert result.connections_opened == requests // 3


def test_warmup_by_count(testserver, run, assert_accounted, io_path):
    srv = testserver(mode="ok")
    result = run(srv.url + "/", connections=4, threads=2, requests=100, warmup=25, io=io_path)

    assert result.options.load.warmup_requests == 25
    assert result.warmup.complete == 25
    assert result.warmup.failed == 0
    assert result.requests.complete == 100
    assert result.requests.failed == 0
    stats = assert_accounted(srv, result)
    assert stats["requests"] == 125
    assert result.latency.corrected.count == 100  # warmup requests are not measured
    assert sum(second.complete for second in result.series) == 100


def test_warmup_by_time(testserver, run, assert_accounted):
    srv = testserver(mode="ok", delay_ms=2)
    result = run(srv.url + "/", connections=4, threads=2, duration="1s", warmup="0.5s")

    assert result.options.load.warmup_s == 0.5
    assert result.warmup.complete > 0
    assert result.warmup.failed == 0
    assert result.warmup.elapsed_s == pytest.approx(0.5, abs=0.2)
    assert result.requests.complete > 0
    assert result.requests.failed == 0
    stats = assert_accounted(srv, result)
    assert stats["requests"] == result.warmup.complete + result.requests.complete
    assert result.latency.corrected.count == result.requests.complete
    # connections are opened during warmup and kept for the measured phase
    assert result.connections_opened == stats["connections"] == 4


def test_open_loop_no_keepalive_with_warmup(testserver, run, assert_accounted):
    srv = testserver(mode="ok", delay_ms=2)
    result = run(srv.url + "/", rate=100, duration="1s", warmup="0.3s", keepalive=False)

    assert result.warmup.complete > 0
    assert result.requests.complete + result.requests.unsent == 100
    stats = assert_accounted(srv, result)
    # a connection per request, warmup included
    assert stats["connections"] == result.connections_opened == stats["requests"]


def test_open_loop_calls_per_conn(testserver, run, assert_accounted, io_path):
    srv = testserver(mode="ok")
    result = run(srv.url + "/", rate=100, duration="1s", connections=1, calls_per_conn=2, io=io_path)

    assert result.requests.complete + result.requests.unsent == 100
    assert result.requests.failed == 0
    stats = assert_accounted(srv, result)
    assert stats["connections"] == result.connections_opened
    assert result.connections_opened == math.ceil(result.requests.complete / 2)  # one in flight at a time


@pytest.mark.parametrize(("rate", "duration", "expected"), [(1, "5s", 5), (10, "1s", 10), ("100..0", "1s", 50)])
def test_open_loop_lasts_the_schedule_not_until_the_last_answer(testserver, run, assert_accounted, rate, duration,
                                                                expected):
    """Issue 25 item 5: the run stopped its clock at the last answer (`--rate 1 -d 5s`: 4.0 s and
    1.25 req/s). A schedule sent in full lasts its whole length, so the rate is the one asked."""
    srv = testserver(mode="ok", delay_ms=2)
    result = run(srv.url + "/", rate=rate, duration=duration)
    length = float(duration.rstrip("s"))
    assert result.requests.complete == expected and result.requests.unsent == 0
    assert length <= result.elapsed_s <= length + 0.05, result.elapsed_s
    assert result.derived.requests_per_s == pytest.approx(expected / result.elapsed_s, rel=1e-6)
    assert result.derived.requests_per_s == pytest.approx(expected / length, rel=0.05)
    assert_accounted(srv, result)


def test_open_loop_cut_short_by_a_count_ends_with_its_last_answer(testserver, run, assert_accounted):
    srv = testserver(mode="ok", delay_ms=2)
    result = run(srv.url + "/", rate=10, duration="5s", requests=5)
    assert result.requests.complete == 5
    assert 0.4 <= result.elapsed_s < 1.0, result.elapsed_s  # the 5th left at 0.4 s
    assert_accounted(srv, result)
