"""The decisions of ``pounder tune`` (``pounder.tune._analysis``), from hand-computed summaries.

The summaries built here carry exactly the keys ``pounder.tune._session`` stores (``_sizes_point``,
``_load_point`` / ``_load_summary``), and every expected value is worked out in the comments.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pounder import BenchResult, BenchSpec
from pounder.pool import child_sizes
from pounder.procs import PAGE_SIZE, snapshot
from pounder.tune._analysis import (
    BURST_FACTOR,
    COW_BROKEN,
    FIRST_REQUEST_GROWTH,
    LEAK_BYTES_PER_REQUEST,
    LEAK_MIN_TOTAL,
    LEAK_STILL_GROWING,
    LOSS_NOISE,
    ChildrenChoice,
    MemoryBound,
    advice,
    burst_seconds,
    choose_children,
    choose_max_requests,
    default_spares,
    growth,
    measured_loss,
    memory_bound,
    predicted_loss,
    respawn_cost,
    spare_settings,
    steady_p99_us,
    sweep_connections,
    sweep_counts,
    sweep_done,
)
from pounder.tune._session import _load_summary

DATA = Path(__file__).resolve().parents[1] / "data"
KIB = 1024
MIB = 1024 * 1024

# ---------------------------------------------------------------------------------------------
# Summaries, shaped as pounder.tune._session stores them


def sizes(*, max_uss: int = 20 * MIB, median_uss: int | None = None, median_shared: int = 30 * MIB,
          max_rss: int | None = None, footprint: int = 150 * MIB, children: int = 4) -> dict[str, Any]:
    """``pounder.pool.child_sizes``: one snapshot's figures."""
    return {
        "children": children,
        "max_uss": max_uss,
        "median_uss": max_uss if median_uss is None else median_uss,
        "median_shared": median_shared,
        "max_rss": max_uss + median_shared if max_rss is None else max_rss,
        "footprint": footprint,
    }


def measure_summary(*, children: int = 4, preload: bool = False, warm_requests: int = 8,
                    parent_rss: int = 60 * MIB, parent_uss: int = 20 * MIB, cold: dict[str, Any] | None = None,
                    warm: dict[str, Any] | None = None, end: dict[str, Any] | None = None,
                    growth_first: float = 0.0, growth_second: float = 0.0, requests_first: int = 400,
                    requests_second: int = 400, sharing: float | None = 0.9,
                    mem_available: int = 2000 * MIB) -> dict[str, Any]:
    """``TuneSession._sizes_point``'s summary (step "sizes")."""
    end = end or sizes(children=children)
    return {
        "children": children,
        "warmed": children,
        "warm_requests": warm_requests,
        "preload": preload,
        "parent": {"rss": parent_rss, "uss": parent_uss, "shared": parent_rss - parent_uss, "pss": parent_rss // 2},
        "cold": cold or end,
        "warm": warm or end,
        "mid": end,
        "end": end,
        "requests_first": requests_first,
        "requests_second": requests_second,
        "failed": 0,
        "growth_first": growth_first,
        "growth_second": growth_second,
        "sharing": sharing,
        "mem_available": mem_available,
    }


def load_summary(children: int, rps: float, *, p99_ms: float = 10.0, max_requests: int = 0,
                 respawns: int | None = None, server_cores: float = 1.0, client_cores: float = 0.2,
                 connections: int | None = None, elapsed_s: float = 6.0) -> dict[str, Any]:
    """``TuneSession._load_point``'s summary (steps "children" and "max-requests")."""
    complete = int(rps * elapsed_s)
    return {
        "children": children,
        "max_requests": max_requests,
        "connections": connections if connections is not None else max(2, 2 * children),
        "warmed": children,
        "complete": complete,
        "failed": 0,
        "non_2xx": 0,
        "errors": {},
        "elapsed_s": elapsed_s,
        "rps": rps,
        "p50_ms": p99_ms / 4,
        "p95_ms": p99_ms / 2,
        "p99_ms": p99_ms,
        "server_cpu_us": 900.0,
        "server_cores": server_cores,
        "client_cores": client_cores,
        "children_seen_spawned": 0,
        "max_child_uss": 20 * MIB,
        "respawns": (complete // max_requests if max_requests else 0) if respawns is None else respawns,
    }


def second(index: int, p99_us: int, complete: int = 100) -> dict[str, Any]:
    """One second of a spare-server run's series, as ``_spare_point`` stores it."""
    return {"second": index, "complete": complete, "p99_us": p99_us}


def series(*p99s: int) -> list[dict[str, Any]]:
    return [second(i, p) for i, p in enumerate(p99s)]


def bound(ram: int = 1024 * MIB, *, shared: int = 100 * MIB, child_uss: int = 20 * MIB,
          child_rss: int | None = None) -> MemoryBound:
    """A MemoryBound through memory_bound itself (RAM given)."""
    end = sizes(max_uss=child_uss, median_shared=shared,
                max_rss=child_uss + shared if child_rss is None else child_rss)
    return memory_bound(measure_summary(end=end), ram, 0)


def test_summaries_have_the_session_keys() -> None:
    """The helpers above make what the session makes: ``child_sizes`` of a real snapshot, and
    ``_load_point``'s keys around ``_load_summary`` of a real bench result."""
    spec = BenchSpec.from_options("http://127.0.0.1:8080/", connections=4, duration=3.0, keepalive=False,
                                  timeout=30.0, threads=1)
    result = BenchResult.from_engine((DATA / "engine_result.json").read_text(), options=spec.run_options(),
                                     started_at="2024-01-01T00:00:00.000Z", interrupted=False, tool_version="0",
                                     server=None)
    point_keys = {"children", "max_requests", "connections", "warmed", "respawns"}
    assert set(load_summary(4, 100.0)) == point_keys | set(_load_summary(result))
    assert set(sizes()) == set(child_sizes(snapshot(os.getpid())))
    assert set(second(0, 1)) == {"second", "complete", "p99_us"}


# ---------------------------------------------------------------------------------------------
# memory_bound


def test_memory_bound_formula() -> None:
    end = sizes(max_uss=20 * MIB, median_shared=30 * MIB, max_rss=50 * MIB)
    got = memory_bound(measure_summary(end=end, parent_uss=12 * MIB), 1024 * MIB, 256 * MIB)
    # (1024 - 30) / 20 = 49.7 -> 49; without sharing 1024 / 50 = 20.48 -> 20; the margin is for the default only
    assert got == MemoryBound(ram=1024 * MIB, ram_source="given", shared=30 * MIB, child_uss=20 * MIB,
                              child_rss=50 * MIB, max_clients=49, max_clients_no_sharing=20, parent_uss=12 * MIB)
    assert got.to_dict()["max_clients"] == 49
    assert got.child_limit(4) == (1024 - 30) * MIB // 4
    assert got.child_limit(0) == (1024 - 30) * MIB  # never a division by zero


def test_memory_bound_exact_division() -> None:
    end = sizes(max_uss=10 * MIB, median_shared=24 * MIB, max_rss=34 * MIB)
    got = memory_bound(measure_summary(end=end), 1024 * MIB, 0)
    assert got.max_clients == 100  # (1024 - 24) / 10 exactly
    assert got.max_clients_no_sharing == 30  # 1024 / 34 = 30.1


def test_memory_bound_floor_at_zero() -> None:
    # the shared part alone is more than the budget: 0 children, not a negative count
    end = sizes(max_uss=10 * MIB, median_shared=600 * MIB, max_rss=610 * MIB)
    got = memory_bound(measure_summary(end=end), 512 * MIB, 0)
    assert got.max_clients == 0 and got.max_clients_no_sharing == 0
    # room for less than one child
    end = sizes(max_uss=100 * MIB, median_shared=450 * MIB, max_rss=550 * MIB)
    assert memory_bound(measure_summary(end=end), 512 * MIB, 0).max_clients == 0


def test_memory_bound_default_budget() -> None:
    end = sizes(max_uss=20 * MIB, median_shared=30 * MIB, max_rss=50 * MIB, footprint=150 * MIB)
    got = memory_bound(measure_summary(end=end, mem_available=2000 * MIB), None, 256 * MIB)
    assert got.ram == (2000 + 150 - 256) * MIB == 1894 * MIB
    assert got.ram_source == "MemAvailable + server footprint - safety margin"
    assert got.max_clients == (1894 - 30) // 20 == 93
    assert got.max_clients_no_sharing == 1894 // 50 == 37


def test_memory_bound_default_budget_below_zero() -> None:
    end = sizes(footprint=10 * MIB)
    got = memory_bound(measure_summary(end=end, mem_available=100 * MIB), None, 256 * MIB)
    assert got.ram == 0  # 100 + 10 - 256 MiB: no budget at all, not a negative one
    assert got.max_clients == 0 and got.max_clients_no_sharing == 0


def test_memory_bound_page_size_floor() -> None:
    # a child that reads as 0 bytes is counted as one page, and reported as read
    end = sizes(max_uss=0, median_shared=0, max_rss=0)
    got = memory_bound(measure_summary(end=end), 16 * MIB, 0)
    assert got.max_clients == 16 * MIB // PAGE_SIZE == 4096
    assert got.max_clients_no_sharing == 4096
    assert got.child_uss == 0 and got.child_rss == 0
    end = sizes(max_uss=100, median_shared=0, max_rss=1000)
    got = memory_bound(measure_summary(end=end), 16 * MIB, 0)
    assert (got.max_clients, got.max_clients_no_sharing) == (4096, 4096)
    assert (got.child_uss, got.child_rss) == (100, 1000)


def test_memory_bound_no_sharing_figure_uses_rss() -> None:
    end = sizes(max_uss=8 * MIB, median_shared=40 * MIB, max_rss=48 * MIB)
    got = memory_bound(measure_summary(end=end), 480 * MIB, 0)
    assert got.max_clients == (480 - 40) // 8 == 55
    assert got.max_clients_no_sharing == 480 // 48 == 10


# ---------------------------------------------------------------------------------------------
# growth: the leak verdict


def _growth(first: float, second_: float, requests_second: int = 1000) -> Any:
    return growth(measure_summary(growth_first=first, growth_second=second_, requests_second=requests_second))


def test_leak_threshold_per_request() -> None:
    assert LEAK_BYTES_PER_REQUEST == 512
    below = _growth(511, 511)  # 511 B x 1000 requests = 511,000 B: enough in total, too little per request
    assert not below.leak and below.per_request == 0.0
    at = _growth(512, 512)
    assert at.leak and at.per_request == 512.0
    above = _growth(513, 513)
    assert above.leak and above.per_request == 513.0
    assert (above.first, above.second) == (513.0, 513.0)


def test_leak_threshold_total() -> None:
    assert LEAK_MIN_TOTAL == 64 * 1024
    # 1000 B/request over 65 requests = 65,000 B < 65,536: too little in total to call
    assert not _growth(1000, 1000, requests_second=65).leak
    # over 66 requests = 66,000 B
    assert _growth(1000, 1000, requests_second=66).leak
    # exactly at the total: 512 B x 128 requests = 65,536 B
    assert _growth(512, 512, requests_second=128).leak
    assert not _growth(512, 512, requests_second=127).leak


def test_growth_that_stops_is_not_a_leak() -> None:
    assert LEAK_STILL_GROWING == 0.25
    # 10 KB/request in the first half, 2,499 B in the second: < 25 % of the first half's rate
    stopped = _growth(10000, 2499)
    assert not stopped.leak and stopped.per_request == 0.0
    assert _growth(10000, 2500).leak  # exactly a quarter still grows
    assert not _growth(100_000, 0).leak
    assert not _growth(100_000, -50).leak  # shrinking in the second half


def test_growth_in_the_second_half_only_is_a_leak() -> None:
    assert _growth(0, 4096).leak
    assert _growth(-2000, 4096).leak


def test_growth_keeps_fractions() -> None:
    got = growth(measure_summary(growth_first=1500.5, growth_second=1400.25, requests_second=200))
    assert got.leak and got.second == 1400.25 and got.first == 1500.5


# ---------------------------------------------------------------------------------------------
# The children sweep


@pytest.mark.parametrize(("cap", "expected"), [
    (0, []),
    (1, [1]),
    (2, [1, 2]),
    (3, [1, 2, 3]),
    (4, [1, 2, 4]),
    (5, [1, 2, 4, 5]),
    (8, [1, 2, 4, 8]),
    (9, [1, 2, 4, 8, 9]),
    (64, [1, 2, 4, 8, 16, 32, 64]),
    (100, [1, 2, 4, 8, 16, 32, 64, 100]),
])
def test_sweep_counts(cap: int, expected: list[int]) -> None:
    assert sweep_counts(cap) == expected


def _rps(*values: float) -> list[dict[str, Any]]:
    return [load_summary(2 ** i, v) for i, v in enumerate(values)]


def test_sweep_done_needs_three_points() -> None:
    assert not sweep_done([], 0.05)
    assert not sweep_done(_rps(100), 0.05)
    assert not sweep_done(_rps(100, 100), 0.05)


def test_sweep_done() -> None:
    # the last two (103, 104) do not beat 100 by more than 5 %
    assert sweep_done(_rps(100, 103, 104), 0.05)
    # 106 does
    assert not sweep_done(_rps(100, 103, 106), 0.05)
    assert not sweep_done(_rps(100, 106, 103), 0.05)
    # against the best before them (300), not the first
    assert sweep_done(_rps(100, 200, 300, 205, 310), 0.05)
    assert not sweep_done(_rps(100, 200, 300, 205, 320), 0.05)
    # still growing
    assert not sweep_done(_rps(100, 190, 360), 0.05)
    # a drop counts as "no better"
    assert sweep_done(_rps(100, 50, 40), 0.05)
    # a tighter tolerance stops later
    assert not sweep_done(_rps(100, 103, 104), 0.01)


@pytest.mark.parametrize(("children", "clients", "expected"), [
    (1, None, 2), (2, None, 4), (4, None, 8), (16, None, 32), (4, 50, 50), (64, 3, 3), (1, 1, 1)])
def test_sweep_connections(children: int, clients: int | None, expected: int) -> None:
    assert sweep_connections(children, clients) == expected


# ---------------------------------------------------------------------------------------------
# choose_children

SWEEP = [
    load_summary(1, 100, p99_ms=50),
    load_summary(2, 190, p99_ms=45),
    load_summary(4, 300, p99_ms=40),
    load_summary(8, 310, p99_ms=20),
    load_summary(16, 305, p99_ms=30),
]
"""Best 310 req/s with 8; 95 % of it is 294.5, first reached by 4 children (300)."""


def test_choose_children_smallest_within_tolerance() -> None:
    got = choose_children(SWEEP, 100, clients=None, p99_s=None, tolerance=0.05)
    assert got == ChildrenChoice(best_children=8, best_rps=310.0, throughput=4, for_clients=None, for_p99=None,
                                 memory_cap=100, chosen=4, reasons=got.reasons)
    assert got.reasons == ["throughput: 4 children serve 300 req/s, within 5% of the best measured "
                           "(310 req/s with 8)"]
    assert got.to_dict()["chosen"] == 4


def test_choose_children_order_does_not_matter() -> None:
    got = choose_children(list(reversed(SWEEP)), 100, clients=None, p99_s=None, tolerance=0.05)
    assert (got.throughput, got.best_children, got.chosen) == (4, 8, 4)


def test_choose_children_tolerance() -> None:
    # 2 % of 310 = 303.8: only 8 (310) and 16 (305) are within; the smallest is 8
    assert choose_children(SWEEP, 100, clients=None, p99_s=None, tolerance=0.02).throughput == 8
    # 40 %: 186 -> 2 children (190)
    assert choose_children(SWEEP, 100, clients=None, p99_s=None, tolerance=0.40).throughput == 2


def test_choose_children_best_tie_is_the_smaller_count() -> None:
    points = [load_summary(1, 100), load_summary(2, 200), load_summary(4, 200)]
    got = choose_children(points, 100, clients=None, p99_s=None, tolerance=0.05)
    assert (got.best_children, got.throughput) == (2, 2)


def test_choose_children_clients_raise_it() -> None:
    got = choose_children(SWEEP, 100, clients=12, p99_s=None, tolerance=0.05)
    assert (got.throughput, got.for_clients, got.chosen) == (4, 12, 12)
    assert len(got.reasons) == 2
    assert got.reasons[1].startswith("--clients 12: each concurrent client holds a child")
    assert "12 children keep them out of the listen queue" in got.reasons[1]


def test_choose_children_fewer_clients_do_not_lower_it() -> None:
    got = choose_children(SWEEP, 100, clients=2, p99_s=None, tolerance=0.05)
    assert (got.for_clients, got.chosen) == (2, 4)
    assert len(got.reasons) == 1


def test_choose_children_p99_raises_it() -> None:
    # 25 ms: met by 8 (20 ms) and not by 4 (40 ms)
    got = choose_children(SWEEP, 100, clients=None, p99_s=0.025, tolerance=0.05)
    assert (got.throughput, got.for_p99, got.chosen) == (4, 8, 8)
    assert got.reasons[1] == ("--p99 25ms: 8 children is the smallest count whose p99 (20.0 ms with twice as many "
                              "clients as children) meets it")


def test_choose_children_p99_with_clients() -> None:
    got = choose_children(SWEEP, 100, clients=5, p99_s=0.03, tolerance=0.05)
    # clients 5 > 4 raises it to 5; the p99 needs 8 (20 ms <= 30 ms; 16 also meets it but is larger)
    assert (got.for_clients, got.for_p99, got.chosen) == (5, 8, 8)
    assert "--clients 5" in got.reasons[1]
    assert "(20.0 ms with 5 clients)" in got.reasons[2]


def test_choose_children_p99_already_met() -> None:
    # 45 ms is met by 2 children already: recorded, no reason added
    got = choose_children(SWEEP, 100, clients=None, p99_s=0.045, tolerance=0.05)
    assert (got.for_p99, got.chosen) == (2, 4)
    assert len(got.reasons) == 1


def test_choose_children_p99_not_met() -> None:
    got = choose_children(SWEEP, 100, clients=None, p99_s=0.005, tolerance=0.05)
    assert got.for_p99 is None and got.chosen == 4
    assert got.reasons[1] == ("--p99 5ms is not met by any count measured (best: 20.0 ms with 8 children, twice "
                              "as many clients as children): more children do not reach it")
    with_clients = choose_children(SWEEP, 100, clients=3, p99_s=0.005, tolerance=0.05)
    assert "20.0 ms with 8 children, 3 clients" in with_clients.reasons[-1]


def test_choose_children_memory_cap() -> None:
    got = choose_children(SWEEP, 3, clients=None, p99_s=None, tolerance=0.05)
    assert (got.throughput, got.memory_cap, got.chosen) == (4, 3, 3)
    assert got.reasons[-1] == "memory: only 3 children fit the RAM budget, fewer than the 4 wanted"
    got = choose_children(SWEEP, 10, clients=40, p99_s=0.025, tolerance=0.05)
    assert (got.for_clients, got.for_p99, got.chosen) == (40, 8, 10)
    assert [r.split(":")[0] for r in got.reasons] == ["throughput", "--clients 40", "memory"]
    assert "fewer than the 40 wanted" in got.reasons[-1]
    # exactly at the cap: no memory reason
    got = choose_children(SWEEP, 4, clients=None, p99_s=None, tolerance=0.05)
    assert got.chosen == 4 and len(got.reasons) == 1


def test_choose_children_single_point() -> None:
    got = choose_children([load_summary(1, 50)], 1, clients=None, p99_s=None, tolerance=0.05)
    assert (got.best_children, got.throughput, got.chosen) == (1, 1, 1)


# ---------------------------------------------------------------------------------------------
# respawn_cost / predicted_loss / measured_loss

MRPC = [
    load_summary(4, 1000, max_requests=0),
    load_summary(4, 1000, max_requests=10000),  # 6,000 requests: no respawn
    load_summary(4, 995, max_requests=1000),  # 5 respawns
    load_summary(4, 960, max_requests=100),
    load_summary(4, 800, max_requests=10),
]
"""Losses: 10,000 none, 1,000 0.5 %, 100 4 % (within LOSS_NOISE), 10 20 %: k is fitted on v = 10,
the largest value whose loss stands out: 1000 / 800 - 1 = 0.25 -> k = 2.5 requests' worth."""


def test_mrpc_fixture_respawns() -> None:
    assert [p["respawns"] for p in MRPC] == [0, 0, 5, 57, 480]


def test_respawn_cost_on_the_largest_value_out_of_the_noise() -> None:
    assert LOSS_NOISE == 0.05
    assert respawn_cost(MRPC) == pytest.approx(2.5)
    # 10 loses 50 % and 100 loses 10 %: both stand out; the fit is on 100, (1000 / 900 - 1) * 100 = 11.1
    # (on 10 it would be (1000 / 500 - 1) * 10 = 10)
    points = [load_summary(4, 1000), load_summary(4, 500, max_requests=10), load_summary(4, 900, max_requests=100),
              load_summary(4, 990, max_requests=1000)]
    assert respawn_cost(points) == pytest.approx(100 / 9)


def test_respawn_cost_noise_boundary() -> None:
    # 100 loses 5.1 %: out of the noise, fitted on it; at 4.9 % only 10 (50 %) stands out: (2 - 1) * 10
    out = [load_summary(4, 1000), load_summary(4, 500, max_requests=10), load_summary(4, 949, max_requests=100)]
    assert respawn_cost(out) == pytest.approx((1000 / 949 - 1) * 100)
    within = [load_summary(4, 1000), load_summary(4, 500, max_requests=10), load_summary(4, 951, max_requests=100)]
    assert respawn_cost(within) == pytest.approx(10.0)


def test_respawn_cost_nothing_out_of_the_noise() -> None:
    # without v = 10 no loss stands out: the smallest value that respawned, 100: (1000 / 960 - 1) * 100 = 4.1667
    assert respawn_cost([p for p in MRPC if p["max_requests"] != 10]) == pytest.approx(100 / 24)


def test_respawn_cost_ignores_values_that_did_not_respawn() -> None:
    points = [load_summary(4, 1000, max_requests=0), load_summary(4, 500, max_requests=10, respawns=0),
              load_summary(4, 900, max_requests=100, respawns=5)]
    assert respawn_cost(points) == pytest.approx((1000 / 900 - 1) * 100)


def test_respawn_cost_noise_is_zero() -> None:
    # the smallest value served faster than unlimited: negative overhead -> 0
    points = [load_summary(4, 1000, max_requests=0), load_summary(4, 1010, max_requests=10)]
    assert respawn_cost(points) == 0.0


def test_respawn_cost_nothing_respawned() -> None:
    points = [load_summary(4, 1000, max_requests=0), load_summary(4, 900, max_requests=100000)]
    assert points[1]["respawns"] == 0
    assert respawn_cost(points) == 0.0
    assert respawn_cost([load_summary(4, 1000, max_requests=0)]) == 0.0


def test_respawn_cost_without_an_unlimited_point() -> None:
    # base: the largest value (10,000, 1000 req/s)
    assert respawn_cost(MRPC[1:]) == pytest.approx(2.5)
    # a single finite point is its own base
    assert respawn_cost([load_summary(4, 800, max_requests=10)]) == 0.0


def test_respawn_cost_zero_throughput() -> None:
    assert respawn_cost([load_summary(4, 0, max_requests=0), load_summary(4, 800, max_requests=10)]) == 0.0
    # a point that served nothing is not fitted on
    points = [load_summary(4, 1000, max_requests=0), load_summary(4, 0, max_requests=10, respawns=3),
              load_summary(4, 800, max_requests=100)]
    assert respawn_cost(points) == pytest.approx(25.0)


@pytest.mark.parametrize(("value", "cost", "expected"), [
    (10, 2.5, 0.2),  # extra 0.25 -> 0.25 / 1.25
    (100, 2.5, 0.025 / 1.025),
    (1000, 2.5, 0.0025 / 1.0025),
    (200, 10.0, 0.05 / 1.05),
    (0, 2.5, 0.0),
    (-1, 2.5, 0.0),
    (10, 0.0, 0.0),
])
def test_predicted_loss(value: int, cost: float, expected: float) -> None:
    assert predicted_loss(value, cost) == pytest.approx(expected)


def test_predicted_loss_matches_the_fit() -> None:
    # the fitted point itself is predicted exactly: 1 - 800 / 1000
    assert predicted_loss(10, respawn_cost(MRPC)) == pytest.approx(0.2)


def test_measured_loss() -> None:
    assert measured_loss(MRPC[4], MRPC) == pytest.approx(0.2)
    assert measured_loss(MRPC[0], MRPC) == 0.0
    assert measured_loss(MRPC[4], MRPC[1:]) is None  # no unlimited point
    assert measured_loss(MRPC[4], [load_summary(4, 0, max_requests=0)]) is None


# ---------------------------------------------------------------------------------------------
# choose_max_requests

# RAM 1024 MiB, shared 100 MiB, 4 children: each may reach (1024 - 100) / 4 = 231 MiB; a child
# starts (after warm-up) at 31 MiB: 200 MiB of headroom = 209,715,200 bytes
BOUND = bound(1024 * MIB, shared=100 * MIB, child_uss=40 * MIB)


def leaking(per_request: float, *, start: int = 31 * MIB, first: float | None = None) -> dict[str, Any]:
    return measure_summary(warm=sizes(max_uss=start), growth_first=per_request if first is None else first,
                           growth_second=per_request, requests_second=1000)


def test_leak_value_from_headroom() -> None:
    got = choose_max_requests(MRPC, leaking(16 * KIB), BOUND, 4, max_loss=0.02)
    # 209,715,200 / 16,384 = 12,800 -> two significant digits: 12,000
    assert got.leak and got.memory_limit == 12800 and got.value == 12000
    assert got.child_start_bytes == 31 * MIB and got.child_limit_bytes == 231 * MIB
    assert got.growth_bytes_per_request == 16 * KIB
    assert got.respawn_cost_requests == pytest.approx(2.5)
    assert got.loss == pytest.approx(predicted_loss(12000, 2.5))
    assert not got.forced_by_memory
    assert got.reasons[0] == ("leak: each child's private memory grows 16.0 KiB per request and keeps growing "
                              "(16.0 KiB/request in the first half of the measurement, 16.0 in the second)")
    assert got.reasons[1] == ("a child starts at 31.0 MiB and may reach 231.0 MiB (4 children in the budget): "
                              "at most 12,800 requests, rounded to 12,000")
    assert got.reasons[2] == "respawning every 12,000 requests costs about 0.0% of the throughput"
    assert got.reasons[3] == "one respawn costs about 2.5 requests' worth of throughput (fitted on the sweep)"
    assert got.to_dict()["value"] == 12000


@pytest.mark.parametrize(("per_request", "expected_limit", "expected_value"), [
    (16 * KIB, 12800, 12000),
    (3 * KIB, 68266, 68000),  # 209,715,200 / 3,072 = 68,266.7
    (7 * KIB, 29257, 29000),  # 29,257.1
    (100 * KIB, 2048, 2000),
    (1.5 * MIB, 133, 130),  # 133.3 -> 130
    (2.5 * MIB, 80, 80),  # under 100: kept as is
    (300 * MIB, 1, 1),  # not even one request's growth fits: 1
])
def test_leak_value_rounding(per_request: float, expected_limit: int, expected_value: int) -> None:
    got = choose_max_requests(MRPC, leaking(per_request), BOUND, 4, max_loss=0.02)
    assert (got.memory_limit, got.value) == (expected_limit, expected_value)


def test_leak_with_no_headroom() -> None:
    # the child already starts above its share: respawn after every request
    got = choose_max_requests(MRPC, leaking(16 * KIB, start=300 * MIB), BOUND, 4, max_loss=0.02)
    assert got.memory_limit == 1 and got.value == 1
    assert got.forced_by_memory  # 2.5 / 1 -> 71 % lost
    assert got.loss == pytest.approx(2.5 / 3.5)


def test_leak_value_capped_at_a_million() -> None:
    huge = bound(100 * 1024 * MIB, shared=0, child_uss=MIB)
    got = choose_max_requests(MRPC, leaking(600, start=MIB), huge, 1, max_loss=0.02)
    assert got.memory_limit == (100 * 1024 - 1) * MIB // 600
    assert got.value == 1_000_000


def test_leak_fewer_children_leave_more_room() -> None:
    # 2 children: (1024 - 100) / 2 = 462 MiB each, 431 MiB of headroom / 16 KiB = 27,584 -> 27,000
    got = choose_max_requests(MRPC, leaking(16 * KIB), BOUND, 2, max_loss=0.02)
    assert (got.child_limit_bytes, got.memory_limit, got.value) == (462 * MIB, 27584, 27000)


def test_leak_forced_by_memory() -> None:
    # k = (1000 / 500 - 1) * 10 = 10; 1 MiB per request: 200 MiB / 1 MiB = 200 -> loss 0.05 / 1.05 = 4.8 %
    points = [load_summary(4, 1000, max_requests=0), load_summary(4, 500, max_requests=10)]
    got = choose_max_requests(points, leaking(MIB), BOUND, 4, max_loss=0.02)
    assert got.value == 200 and got.respawn_cost_requests == pytest.approx(10.0)
    assert got.loss == pytest.approx(0.05 / 1.05)
    assert got.forced_by_memory
    assert got.reasons[2] == ("memory forces it: respawning every 200 requests costs about 4.8% of the throughput "
                              "(more than 2%); fewer children would leave room for a larger limit")
    # a larger accepted loss: not forced
    relaxed = choose_max_requests(points, leaking(MIB), BOUND, 4, max_loss=0.05)
    assert relaxed.value == 200 and not relaxed.forced_by_memory
    assert relaxed.reasons[2] == "respawning every 200 requests costs about 4.8% of the throughput"


def test_leak_connections_wording() -> None:
    got = choose_max_requests(MRPC, leaking(16 * KIB), BOUND, 4, max_loss=0.02, counts="connections")
    assert got.value == 12000
    assert ("at most 12,800 connections (= requests with keep-alive off), rounded to 12,000" in got.reasons[1])
    assert got.reasons[2].startswith("respawning every 12,000 connections (= requests with keep-alive off) costs")


def test_leak_reason_shows_both_halves() -> None:
    got = choose_max_requests(MRPC, leaking(16 * KIB, first=32 * KIB), BOUND, 4, max_loss=0.02)
    assert got.leak
    assert "(32.0 KiB/request in the first half of the measurement, 16.0 in the second)" in got.reasons[0]


def test_no_leak_largest_value_within_the_loss() -> None:
    got = choose_max_requests(MRPC, measure_summary(growth_second=100), BOUND, 4, max_loss=0.02)
    # k = 2.5: 10,000 costs 0.025 %
    assert not got.leak and got.value == 10000 and got.memory_limit is None
    assert got.growth_bytes_per_request == 100.0
    assert got.loss == pytest.approx(predicted_loss(10000, 2.5))
    assert not got.forced_by_memory
    assert got.reasons[0] == ("no leak: private memory grew 100 bytes per request in the second half of the "
                              "measurement (a leak is called from 512 bytes/request)")
    assert got.reasons[1].startswith("10,000 requests costs about 0.0% of the throughput and still replaces children")
    assert got.reasons[-1].startswith("one respawn costs about 2.5 requests' worth")


def test_no_leak_largest_swept_value_not_the_first_listed() -> None:
    shuffled = [MRPC[3], MRPC[1], MRPC[0], MRPC[4], MRPC[2]]
    got = choose_max_requests(shuffled, measure_summary(), BOUND, 4, max_loss=0.02)
    assert got.value == 10000


def test_no_leak_only_smaller_values_swept() -> None:
    points = [MRPC[0], MRPC[3], MRPC[4]]  # 0, 100, 10 with k = 2.5: 100 costs 2.4 % > 2 %
    got = choose_max_requests(points, measure_summary(), BOUND, 4, max_loss=0.02)
    # every value swept costs too much: by the model, v >= k (1 - 0.02) / 0.02 = 122.5, rounded up to 200
    assert got.value == 200 and got.loss == pytest.approx((2.5 / 200) / (1 + 2.5 / 200))
    assert "modelled" in got.reasons[1]
    accepting = choose_max_requests(points, measure_summary(), BOUND, 4, max_loss=0.03)
    assert accepting.value == 100 and accepting.loss == pytest.approx(0.025 / 1.025)


def test_no_leak_every_value_too_costly() -> None:
    # k = (1000 / 250 - 1) * 100 = 300: even 10,000 costs 0.03 / 1.03 = 2.9 %
    points = [load_summary(4, 1000, max_requests=0), load_summary(4, 990, max_requests=10000, respawns=0),
              load_summary(4, 250, max_requests=100)]
    got = choose_max_requests(points, measure_summary(), BOUND, 4, max_loss=0.02)
    assert got.respawn_cost_requests == pytest.approx(300.0)
    # modelled: v >= 300 * 0.98 / 0.02 = 14,700, rounded up to 20,000
    assert got.value == 20000 and got.loss == pytest.approx(0.015 / 1.015) and not got.forced_by_memory


def test_no_leak_no_respawn_measured() -> None:
    points = [load_summary(4, 1000, max_requests=0), load_summary(4, 1003, max_requests=1000)]
    got = choose_max_requests(points, measure_summary(), BOUND, 4, max_loss=0.02)
    assert got.respawn_cost_requests == 0.0 and got.value == 1000 and got.loss == 0.0
    assert not any("one respawn costs" in r for r in got.reasons)


def test_no_leak_connections_wording() -> None:
    got = choose_max_requests(MRPC, measure_summary(), BOUND, 4, max_loss=0.02, counts="connections")
    assert got.reasons[1].startswith("10,000 connections (= requests with keep-alive off) costs about")


def test_growth_that_stopped_gets_no_memory_limit() -> None:
    stopped = measure_summary(growth_first=50 * KIB, growth_second=KIB, requests_second=1000)
    got = choose_max_requests(MRPC, stopped, BOUND, 4, max_loss=0.02)
    assert not got.leak and got.memory_limit is None and got.value == 10000


def test_no_leak_nothing_finite_swept_says_so() -> None:
    got = choose_max_requests([load_summary(4, 1000, max_requests=0)], measure_summary(), BOUND, 4, max_loss=0.02)
    assert got.value == 0
    assert not any("costs more than" in r for r in got.reasons), got.reasons


# ---------------------------------------------------------------------------------------------
# steady_p99_us / burst_seconds


def test_steady_p99_is_the_median_of_the_second_half() -> None:
    # 6 seconds: the second half is seconds 3..5 (12, 20, 8 ms) -> median 12 ms
    assert steady_p99_us(series(19_000, 18_500, 17_000, 12_000, 20_000, 8_000)) == 12_000.0
    # 5 seconds: seconds 2..4 (30, 10, 11 ms) -> 11 ms
    assert steady_p99_us(series(40_000, 40_000, 30_000, 10_000, 11_000)) == 11_000.0
    # 4 seconds: seconds 2..3 -> the mean of the two middle values
    assert steady_p99_us(series(90_000, 90_000, 10_000, 12_000)) == 11_000.0
    assert steady_p99_us(series(7_000)) == 7_000.0


def test_steady_p99_skips_seconds_without_completions() -> None:
    samples = [second(0, 0, complete=0), second(1, 90_000), second(2, 10_000), second(3, 0, complete=0)]
    assert steady_p99_us(samples) == 10_000.0  # completed seconds 1..2; the second half is second 2
    assert steady_p99_us([]) is None
    assert steady_p99_us([second(0, 0, complete=0)]) is None


def test_burst_leading_slow_seconds() -> None:
    # reference 10 ms: slow is above 15 ms
    assert burst_seconds(series(90_000, 40_000, 16_000, 10_000, 11_000, 10_000, 10_000), 10_000) == 3


def test_burst_only_leading_seconds_count() -> None:
    # a slow second later on is not part of the burst
    assert burst_seconds(series(10_000, 50_000, 50_000, 10_000, 10_000, 10_000), 10_000) == 0
    assert burst_seconds(series(50_000, 10_000, 50_000, 10_000, 10_000, 10_000), 10_000) == 1


def test_burst_factor_boundary() -> None:
    assert BURST_FACTOR == 1.5
    assert burst_seconds(series(15_000, 10_000, 10_000, 10_000), 10_000) == 0  # exactly 1.5 x: not above
    assert burst_seconds(series(15_001, 10_000, 10_000, 10_000), 10_000) == 1


def test_burst_against_the_reference_not_its_own_tail() -> None:
    # the run never got fast: against a reference of 10 ms every second is slow
    assert burst_seconds(series(40_000, 40_000, 40_000, 40_000), 10_000) == 4
    # against a slower reference none is
    assert burst_seconds(series(40_000, 40_000, 40_000, 40_000), 30_000) == 0


def test_burst_empty_and_short_series() -> None:
    assert burst_seconds([], 10_000) == 0
    assert burst_seconds(series(900_000), 10_000) == 1
    assert burst_seconds(series(10_000), 10_000) == 0
    assert burst_seconds(series(90_000, 10_000), 10_000) == 1


def test_burst_counts_seconds_without_completions() -> None:
    # nothing completed in the first second (every client still waiting for a child): slow
    samples = [second(0, 0, complete=0), second(1, 90_000), *[second(i, 10_000) for i in range(2, 6)]]
    assert burst_seconds(samples, 10_000) == 2
    samples = [second(0, 90_000), second(1, 0, complete=0), second(2, 40_000), second(3, 10_000)]
    assert burst_seconds(samples, 10_000) == 3
    assert burst_seconds([second(0, 0, complete=0), second(1, 0, complete=0)], 10_000) == 2


# ---------------------------------------------------------------------------------------------
# Spare servers


@pytest.mark.parametrize(("children", "expected"), [
    (1, (1, 1, 2)), (2, (2, 2, 3)), (3, (3, 3, 4)), (5, (5, 5, 6)), (6, (5, 5, 6)), (8, (5, 5, 8)),
    (10, (5, 5, 10)), (50, (5, 5, 10))])
def test_default_spares(children: int, expected: tuple[int, int, int]) -> None:
    assert default_spares(children) == expected


@pytest.mark.parametrize("children", range(1, 80))
def test_default_spares_invariants(children: int) -> None:
    start, low, high = default_spares(children)
    assert high > low >= 1
    assert start <= min(5, children) and low <= min(5, children)
    assert high <= max(10, low + 1)


@pytest.mark.parametrize(("children", "burst", "expected"), [
    (8, 8, (8, 2, 8)),  # all 8 started, a quarter (2) spare, MaxSpare = the burst
    (10, 50, (10, 3, 10)),  # the burst is capped by the children: ceil(10 / 4) = 3
    (20, 5, (5, 2, 5)),  # ceil(5 / 4) = 2
    (16, 16, (16, 4, 16)),
    (17, 17, (17, 5, 17)),
    (2, 2, (2, 1, 2)),
    (3, 3, (3, 1, 3)),
    (1, 5, (1, 1, 2)),
    (4, 0, (1, 1, 2)),
])
def test_spare_settings(children: int, burst: int, expected: tuple[int, int, int]) -> None:
    assert spare_settings(children, burst) == expected


@pytest.mark.parametrize("children", [1, 2, 3, 4, 5, 7, 8, 13, 64])
@pytest.mark.parametrize("burst", [0, 1, 2, 3, 5, 8, 50, 200])
def test_spare_settings_invariants(children: int, burst: int) -> None:
    start, low, high = spare_settings(children, burst)
    assert high > low >= 1  # MaxSpare > MinSpare always
    assert 1 <= start <= children
    assert start <= max(1, burst)
    assert high >= start
    assert low < start or start == 1


# ---------------------------------------------------------------------------------------------
# advice

QUIET_END = sizes(max_uss=20 * MIB, median_shared=0, max_rss=20 * MIB)
"""Nothing shared: the no-sharing figure equals MaxClients, no advice about it."""


def quiet(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"end": QUIET_END, "sharing": 0.9}
    values.update(overrides)
    return measure_summary(**values)


def quiet_bound() -> MemoryBound:
    return memory_bound(quiet(), 1024 * MIB, 0)


def choice_for(sweep: list[dict[str, Any]], cap: int = 100) -> ChildrenChoice:
    return choose_children(sweep, cap, clients=None, p99_s=None, tolerance=0.05)


def run_advice(measure: dict[str, Any], *, kind: str = "gunicorn", sweep: list[dict[str, Any]] | None = None,
               memory: MemoryBound | None = None, cores: int = 2, cap: int = 100,
               other: dict[str, Any] | None = None, other_memory: MemoryBound | None = None) -> list[str]:
    sweep = sweep if sweep is not None else [load_summary(1, 100)]
    return advice(kind, measure, other, memory or quiet_bound(), other_memory, sweep, choice_for(sweep, cap), cores)


def test_advice_quiet() -> None:
    assert quiet_bound().max_clients == quiet_bound().max_clients_no_sharing == 51
    assert run_advice(quiet()) == []


# CPU: 1 -> 100 req/s, 2 -> 198, 4 -> 200: best 200 with 4, 95 % = 190 -> 2 children; 4 serve <= 5 % more
def cpu_sweep(server_cores: float, client_cores: float) -> list[dict[str, Any]]:
    return [load_summary(1, 100, server_cores=server_cores / 2, client_cores=client_cores / 2),
            load_summary(2, 198, server_cores=server_cores, client_cores=client_cores),
            load_summary(4, 200, server_cores=server_cores, client_cores=client_cores)]


def test_advice_cpu_bound() -> None:
    said = run_advice(quiet(), sweep=cpu_sweep(1.5, 0.3), cores=2)  # 1.8 of 2 cores >= 80 %
    assert said == ["the server is CPU-bound at 2 cores: 2 children already keep the CPUs busy (1.8 of 2 cores "
                    "with the load generator), and 4 children served no faster - more children only queue on the "
                    "CPU and cost memory"]
    assert run_advice(quiet(), sweep=cpu_sweep(1.3, 0.3), cores=2)[0].startswith("the server is CPU-bound")  # 1.6


def test_advice_waits_on_something_else() -> None:
    said = run_advice(quiet(), sweep=cpu_sweep(0.3, 0.2), cores=2)  # 0.5 of 2 cores < 50 %
    assert said == ["throughput stops growing at 2 children while the CPUs are mostly idle (0.5 of 2 cores busy): "
                    "requests wait on something else (I/O, a lock, a database); more children will not help"]


def test_advice_cpu_in_between_says_nothing() -> None:
    assert run_advice(quiet(), sweep=cpu_sweep(1.0, 0.2), cores=2) == []  # 1.2 of 2 cores: 60 %
    assert run_advice(quiet(), sweep=cpu_sweep(1.5, 0.3), cores=3) == []  # 1.8 of 3 cores: 60 %


def test_advice_cpu_idle_on_more_cores() -> None:
    said = run_advice(quiet(), sweep=cpu_sweep(0.8, 0.2), cores=4)  # 1.0 of 4 < 2.0
    assert len(said) == 1 and "(1.0 of 4 cores busy)" in said[0]


def test_advice_throughput_still_growing_is_not_flat() -> None:
    sweep = [load_summary(1, 100, server_cores=0.1), load_summary(2, 200, server_cores=0.1),
             load_summary(4, 400, server_cores=0.1)]
    assert run_advice(quiet(), sweep=sweep, cores=2) == []


def test_advice_memory_limits_a_waiting_server() -> None:
    # still growing at the memory cap (4) with the CPUs idle
    sweep = [load_summary(1, 100, server_cores=0.1, client_cores=0.1),
             load_summary(2, 200, server_cores=0.1, client_cores=0.1),
             load_summary(4, 400, server_cores=0.2, client_cores=0.1)]
    said = run_advice(quiet(), sweep=sweep, cores=2, cap=4)
    assert said == ["throughput still grows at 4 children with the CPUs mostly idle (0.3 of 2 cores): requests wait "
                    "(I/O), so memory, not CPU, limits this server; a smaller child or more RAM means more throughput"]
    # below the memory cap: the sweep stopped for another reason, nothing said
    assert run_advice(quiet(), sweep=sweep, cores=2, cap=8) == []


def test_advice_needs_two_sweep_points() -> None:
    assert run_advice(quiet(), sweep=[load_summary(1, 100, server_cores=0.0, client_cores=0.0)], cap=1) == []


def cow(preload: bool = True, sharing: float | None = 0.3) -> dict[str, Any]:
    end = sizes(max_uss=20 * MIB, median_shared=30 * MIB, max_rss=50 * MIB)
    return measure_summary(end=end, preload=preload, sharing=sharing, parent_rss=100 * MIB)


def cow_bound() -> MemoryBound:
    # (1024 - 30) / 20 = 49; 1024 / 50 = 20: the no-sharing message comes too
    return memory_bound(cow(), 1024 * MIB, 0)


@pytest.mark.parametrize(("kind", "cause"), [
    ("gunicorn", "Cause: reference counting and the cycle collector write to every object they touch: call "
                 "gc.freeze() at the end of the preload"),
    ("starman", "Cause: Perl writes to preloaded variables when it uses them"),
    ("apache", "Cause: Perl writes to preloaded variables when it uses them"),
    ("command", "Cause: the children write to memory they inherited."),
])
def test_advice_copy_on_write_broken(kind: str, cause: str) -> None:
    said = run_advice(cow(), kind=kind, memory=cow_bound())
    broken = [s for s in said if s.startswith("copy-on-write is broken early")]
    assert len(broken) == 1
    assert broken[0].startswith("copy-on-write is broken early: the children still share only 30.0 MiB of the "
                                "parent's 100.0 MiB (30%). ")
    assert cause in broken[0]
    if kind == "gunicorn":
        assert "Perl" not in broken[0]
    else:
        assert "gc.freeze" not in broken[0]


def test_advice_copy_on_write_needs_preload_and_low_sharing() -> None:
    assert COW_BROKEN == 0.5

    def broken(measure: dict[str, Any]) -> bool:
        return any(s.startswith("copy-on-write") for s in run_advice(measure, memory=cow_bound()))

    assert broken(cow(sharing=0.49))
    assert not broken(cow(sharing=0.5))
    assert not broken(cow(preload=False, sharing=0.1))
    assert not broken(cow(sharing=None))


def first_request(*, cold_uss: int = 5 * MIB, warm_uss: int = 15 * MIB, growth_first: float = 0.0,
                  warm_requests: int = 8, children: int = 4, preload: bool = False) -> dict[str, Any]:
    return quiet(cold=sizes(max_uss=cold_uss, median_shared=0), warm=sizes(max_uss=warm_uss, median_shared=0),
                 growth_first=growth_first, warm_requests=warm_requests, children=children, preload=preload)


@pytest.mark.parametrize(("kind", "preload", "remedy"), [
    ("gunicorn", False, "Remedy: import the application and build its data in the arbiter with --preload."),
    ("starman", False, "Remedy: load the modules and data in the parent: PerlRequire startup.pl / PerlModule "
                       "(Apache) or --preload-app (Starman)."),
    ("apache", False, "PerlRequire startup.pl"),
    ("command", False, "Remedy: load the code and data in the parent before it forks."),
    ("gunicorn", True, "Remedy: even with preloading, something is loaded on first use"),
    ("starman", True, "Remedy: even with preloading, something is loaded on first use"),
])
def test_advice_first_request_growth(kind: str, preload: bool, remedy: str) -> None:
    said = run_advice(first_request(preload=preload), kind=kind)
    assert len(said) == 1
    assert said[0].startswith("each child grows 10.0 MiB on its first requests: code or data is loaded on first use, "
                              "in every child, instead of once in the parent. ")
    assert remedy in said[0]


def test_advice_first_request_growth_threshold() -> None:
    assert FIRST_REQUEST_GROWTH == 4 * MIB
    assert run_advice(first_request(warm_uss=9 * MIB))  # exactly 4 MiB more
    assert run_advice(first_request(warm_uss=9 * MIB - 1)) == []
    assert run_advice(first_request(warm_uss=5 * MIB)) == []
    assert run_advice(first_request(warm_uss=4 * MIB)) == []  # shrank


def test_advice_a_leak_is_not_first_request_growth() -> None:
    # 16 KiB per request, 2,560 warm-up requests over 4 children = 640 each: 10 MiB of leak, all of the growth
    assert run_advice(first_request(growth_first=16 * KIB, warm_requests=2560)) == []
    # the leak explains 5 MiB (320 requests each): the other 5 MiB is first-request growth
    said = run_advice(first_request(growth_first=16 * KIB, warm_requests=1280))
    assert len(said) == 1 and said[0].startswith("each child grows 5.0 MiB on its first requests")
    # shrinking in the first half explains nothing
    said = run_advice(first_request(growth_first=-16 * KIB, warm_requests=2560))
    assert len(said) == 1 and said[0].startswith("each child grows 10.0 MiB")


def test_advice_no_sharing() -> None:
    end = sizes(max_uss=20 * MIB, median_shared=30 * MIB, max_rss=50 * MIB)
    measure = quiet(end=end)
    memory = memory_bound(measure, 1024 * MIB, 0)
    assert (memory.max_clients, memory.max_clients_no_sharing) == (49, 20)
    assert run_advice(measure, memory=memory) == [
        "summing RSS (as ps and top suggest) would allow only 20 children instead of 49: 30.0 MiB per child is "
        "shared with the parent"]


def test_advice_preload_comparison() -> None:
    off = quiet(end=sizes(max_uss=20 * MIB, median_shared=0, max_rss=20 * MIB), preload=False)
    on = quiet(end=sizes(max_uss=8 * MIB, median_shared=0, max_rss=8 * MIB), preload=True)
    mem_off, mem_on = memory_bound(off, 1024 * MIB, 0), memory_bound(on, 1024 * MIB, 0)
    assert (mem_off.max_clients, mem_on.max_clients) == (51, 128)
    expected = ("preloading saves 12.0 MiB of private memory per child (max child USS 20.0 MiB without, 8.0 MiB "
                "with): MaxClients 51 without, 128 with")
    # measured without preload, the other run with it: turn it on
    assert run_advice(off, memory=mem_off, other=on, other_memory=mem_on) == [expected + " - turn it on"]
    # measured with preload already
    assert run_advice(on, memory=mem_on, other=off, other_memory=mem_off) == [expected]


def test_advice_preload_that_costs() -> None:
    off = quiet(end=sizes(max_uss=8 * MIB, median_shared=0, max_rss=8 * MIB), preload=False)
    on = quiet(end=sizes(max_uss=10 * MIB, median_shared=0, max_rss=10 * MIB), preload=True)
    mem_off, mem_on = memory_bound(off, 1024 * MIB, 0), memory_bound(on, 1024 * MIB, 0)
    said = run_advice(off, memory=mem_off, other=on, other_memory=mem_on)
    assert said == ["preloading costs 2.0 MiB of private memory per child (max child USS 8.0 MiB without, 10.0 MiB "
                    "with): MaxClients 128 without, 102 with"]


def test_advice_several_causes_in_order() -> None:
    measure = cow(preload=True, sharing=0.3)
    measure["cold"] = sizes(max_uss=5 * MIB, median_shared=30 * MIB)
    measure["warm"] = sizes(max_uss=15 * MIB, median_shared=30 * MIB)
    said = run_advice(measure, memory=cow_bound(), sweep=cpu_sweep(1.5, 0.3))
    assert [s.split(" ")[0] for s in said] == ["each", "copy-on-write", "the", "summing"]
