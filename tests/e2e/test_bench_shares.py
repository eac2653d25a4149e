"""A run split into shares (the agents of one run on several machines): each share is a real engine
run of ``BenchSpec.share_spec``; together they send exactly the run's requests, at one start time,
and in open loop exactly the arrivals of its one schedule. Real engine, real test server that
counts."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from pounder import UsageError
from pounder._engine import start
from pounder.load import BenchSpec

pytestmark = pytest.mark.filterwarnings("error")


def _shares(spec: BenchSpec, count: int) -> list[dict[str, Any]]:
    """Runs the ``count`` shares of ``spec`` together, starting 0.3 s from now; their results."""
    at = int((time.time() + 0.3) * 1e6)
    runs = [start(spec.share_spec(index, count, at)) for index in range(count)]
    for run in runs:
        while not run.wait(1.0):
            pass
    results = []
    for run in runs:
        text = run.result()
        assert text is not None
        results.append(json.loads(text))
    return results


def test_shares_send_exactly_the_requests_of_the_run(testserver: Any) -> None:
    srv = testserver(mode="ok")
    spec = BenchSpec.from_options(srv.url + "/", connections=7, requests=1000, warmup="30")
    results = _shares(spec, 3)
    # 7 connections: 3, 2, 2; the 1,030 slots dealt out one by one: 0-29 warm up (10 each),
    # 30-1029 are measured (share 0 takes 30, 33, ... 1029: 334; the others 333)
    assert [r["requests"]["complete"] for r in results] == [334, 333, 333]
    assert [r["warmup"]["complete"] for r in results] == [10, 10, 10]
    assert [r["connections"]["opened"] for r in results] == [3, 2, 2]
    assert srv.stats()["requests"] == 1030
    # one start: every share began at the time it was given
    starts = [r["start_unix_us"] for r in results]
    assert len(set(starts)) == 1


def test_shares_of_an_open_loop_run_send_its_one_schedule(testserver: Any) -> None:
    srv = testserver(mode="ok", delay_ms=2)
    spec = BenchSpec.from_options(srv.url + "/", connections=6, rate="300/s", duration="2s")
    results = _shares(spec, 3)
    assert [r["requests"]["complete"] + r["requests"]["unsent"] for r in results] == [200, 200, 200]
    assert srv.stats()["requests"] == sum(r["requests"]["complete"] for r in results)


def test_a_share_needs_a_connection_and_a_request() -> None:
    spec = BenchSpec.from_options("http://127.0.0.1:1/", connections=2, requests=10)
    with pytest.raises(UsageError, match="3 agents need at least 3 connections"):
        spec.share_spec(0, 3)
    with pytest.raises(UsageError, match="3 agents need at least 3 requests"):
        BenchSpec.from_options("http://127.0.0.1:1/", connections=4, requests=2).share_spec(0, 3)
    with pytest.raises(UsageError, match="agent 2 of 2 does not exist"):
        spec.share_spec(2, 2)
