"""Latency is measured right, and coordinated omission is handled: in open loop a stalled server
shows in the corrected latency, and requests that could not be sent on time are counted.

The freeze server holds every response during the windows [2k s, 2k s + 500 ms) of its own clock
(k >= 1). The freeze tests start their run at a known point of that clock (1.5 s after the server
said READY) so that the run always contains exactly one whole window, [2 s, 2.5 s), and no other:
what the histograms must show is then fixed, not a matter of luck.
"""

from __future__ import annotations

import time

import pytest

SERVER_DELAY_MS = 20
TOLERANCE_US = 2_000
HDR_SLACK_US = 50  # HdrHistogram (3 significant digits) rounds ~20 ms by at most 16 us

FREEZE_MS = 500
FREEZE_EVERY_MS = 2000
FREEZE_BASE_DELAY_MS = 5
FREEZE_RATE = 100
FREEZE_RUN_START_S = 1.5  # server clock when the run starts: [1.5 s, 3.5 s] holds the window [2, 2.5)
FREEZE_RUN_S = 2.0


def test_closed_loop_median_is_server_delay(testserver, run, assert_accounted):
    srv = testserver(mode="ok", delay_ms=SERVER_DELAY_MS)
    result = run(srv.url + "/", connections=2, threads=2, requests=100)

    assert result.requests.complete == 100
    assert result.requests.failed == 0
    assert_accounted(srv, result)
    target = SERVER_DELAY_MS * 1000
    assert abs(result.latency.corrected.percentiles["50"] - target) <= TOLERANCE_US, result.latency.corrected
    assert abs(result.phases.total.percentiles["50"] - target) <= TOLERANCE_US, result.phases.total
    assert abs(result.phases.waiting.percentiles["50"] - target) <= TOLERANCE_US, result.phases.waiting
    # the server sleeps 20 ms before answering: no response can be faster
    assert result.latency.corrected.min_us >= target - HDR_SLACK_US
    assert result.phases.total.min_us >= target - HDR_SLACK_US
    assert result.latency.corrected.count == result.phases.total.count == 100


def test_closed_loop_corrected_equals_uncorrected(testserver, run):
    srv = testserver(mode="ok", delay_ms=SERVER_DELAY_MS)
    result = run(srv.url + "/", connections=2, requests=40)

    # closed loop has no schedule: corrected == uncorrected, no lag, nothing late or unsent
    assert result.latency.corrected == result.latency.uncorrected
    assert result.latency.schedule_lag.count == 0
    assert result.requests.late == 0
    assert result.requests.unsent == 0


def test_open_loop_latency_is_server_delay(testserver, run, assert_accounted):
    srv = testserver(mode="ok", delay_ms=SERVER_DELAY_MS)
    result = run(srv.url + "/", rate=50, duration="1s")

    assert result.requests.complete == 50
    assert_accounted(srv, result)
    target = SERVER_DELAY_MS * 1000
    assert abs(result.latency.corrected.percentiles["50"] - target) <= TOLERANCE_US, result.latency.corrected
    assert abs(result.latency.uncorrected.percentiles["50"] - target) <= TOLERANCE_US, result.latency.uncorrected
    assert result.latency.corrected.min_us >= target - HDR_SLACK_US
    assert result.latency.schedule_lag.count == 50


def _freeze_server(testserver):
    srv = testserver(mode="freeze", delay_ms=FREEZE_BASE_DELAY_MS, freeze_ms=FREEZE_MS, freeze_every_ms=FREEZE_EVERY_MS)
    ready = time.monotonic()  # the server's clock started just before READY
    return srv, ready


def _wait_until(when: float) -> None:
    delay = when - time.monotonic()
    assert delay > 0, "the test server took too long to start to align the run with its freeze windows"
    time.sleep(delay)


def test_open_loop_freeze_shows_in_corrected_latency(testserver, run, assert_accounted):
    srv, ready = _freeze_server(testserver)
    _wait_until(ready + FREEZE_RUN_START_S)
    result = run(srv.url + "/", rate=FREEZE_RATE, duration=FREEZE_RUN_S)

    assert result.requests.failed == 0
    assert result.requests.unsent == 0  # the cap (1000) is never reached
    assert result.requests.complete == FREEZE_RATE * FREEZE_RUN_S
    assert_accounted(srv, result)
    # 50 of the 200 requests are scheduled inside the 500 ms window and held to its end: their
    # latencies spread over 0..500 ms, so the slowest 10 % are all above 200 ms
    corrected = result.latency.corrected
    assert corrected.percentiles["90"] >= 100_000, corrected
    assert corrected.max_us >= 400_000, corrected
    assert corrected.percentiles["50"] < 100_000, corrected  # outside the window: the base delay


def test_open_loop_low_cap_corrected_above_uncorrected(testserver, run, assert_accounted):
    srv, ready = _freeze_server(testserver)
    _wait_until(ready + FREEZE_RUN_START_S)
    result = run(srv.url + "/", rate=FREEZE_RATE, duration=FREEZE_RUN_S, connections=2)

    assert result.options.load.connections == 2
    assert result.requests.failed == 0
    assert_accounted(srv, result)
    assert result.connections_opened <= 2
    corrected, uncorrected = result.latency.corrected, result.latency.uncorrected
    # With 2 connections only the (at most 2) requests in flight when the window starts are
    # actually sent before it ends: the uncorrected p90 stays near the base delay. The ~50 requests
    # scheduled in the window wait for a connection; measured from their intended time they
    # show the freeze.
    assert uncorrected.percentiles["90"] < 100_000, uncorrected
    assert corrected.percentiles["90"] >= 100_000, corrected
    assert corrected.percentiles["90"] - uncorrected.percentiles["90"] >= 100_000, (corrected, uncorrected)
    # the requests that were in flight did see the whole stall
    assert uncorrected.max_us >= 400_000, uncorrected
    # the waiting ones started late, and that is counted and measured
    assert result.requests.late > 0
    assert result.latency.schedule_lag.percentiles["90"] >= 100_000, result.latency.schedule_lag
    # every slot of the schedule is either measured or counted as unsent
    assert result.requests.complete + result.requests.failed + result.requests.unsent == FREEZE_RATE * FREEZE_RUN_S


@pytest.mark.parametrize(("rate", "duration_s"), [(200, 1.0), (150, 2.0)])
def test_open_loop_overload_counts_unsent_and_late(testserver, run, assert_accounted, rate, duration_s):
    # one connection to a server that answers in 20 ms: at most ~50 req/s can be sent
    srv = testserver(mode="ok", delay_ms=SERVER_DELAY_MS)
    result = run(srv.url + "/", rate=rate, duration=duration_s, connections=1)

    scheduled = round(rate * duration_s)
    requests = result.requests
    assert requests.failed == 0
    assert requests.unsent > 0, requests
    assert requests.late > 0, requests
    # not silently dropped: every slot of the schedule is complete, failed or unsent
    assert requests.complete + requests.failed + requests.unsent == scheduled, requests
    assert requests.late <= requests.complete + requests.failed
    assert requests.complete <= duration_s * 1000 / SERVER_DELAY_MS + 1  # one at a time, 20 ms each
    stats = assert_accounted(srv, result)
    assert stats["connections"] == result.connections_opened == 1
    # the late requests were measured from their intended time
    assert result.latency.corrected.percentiles["90"] > result.latency.uncorrected.percentiles["90"]
