"""The decisions of ``pounder tune`` (``pounder.tune._analysis``), from hand-computed summaries.

The summaries built here carry exactly the keys ``pounder.tune._session`` stores (``_sizes_point``,
``_load_point`` / ``_load_summary``), and every expected value is worked out in the comments.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

from pounder import BenchResult, BenchSpec
from pounder._figures import WIDE, queued_text
from pounder._tune_point import TunePoint, Versus, present
from pounder.pool import child_sizes
from pounder.procs import PAGE_SIZE, snapshot
from pounder.tune._advice import (
    COW_BROKEN,
    FIRST_REQUEST_GROWTH,
    advice,
    explain_throughput,
    preload_gain,
)
from pounder.tune._analysis import (
    ChildrenChoice,
    Target,
    busy_seconds,
    knee,
    size_pool,
    sweep_connections,
    sweep_counts,
    sweep_done,
)
from pounder.tune._confirm import confirmation_checks, lower_pool, lowered_pool
from pounder.tune._load import load_summary as _load_summary
from pounder.tune._memory import (
    LEAK_BYTES_PER_REQUEST,
    LEAK_MIN_TOTAL,
    LEAK_STILL_GROWING,
    MemoryBound,
    growth,
    memory_bound,
)
from pounder.tune._mrpc import (
    _affordable,
    choose_max_requests,
    mrpc_losses,
    respawn_mechanism,
)
from pounder.tune._spare_rules import (
    BURST_FACTOR,
    burst_clients,
    burst_seconds,
    default_spares,
    spare_settings,
    steady_p99_us,
)
from pounder.tune._text import (
    change_text,
    cores_text,
    ms_text,
    rps_text,
)

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
                    parent_rss: int = 60 * MIB, parent_uss: int = 0, cold: dict[str, Any] | None = None,
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
                 connections: int | None = None, elapsed_s: float = 6.0,
                 other_cores: float | None = 0.0) -> dict[str, Any]:
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
        "other_cores": other_cores,
        "front_cores": None,
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
    # (1024 - 12 - 30) / 20 = 49.1 -> 49; without sharing 1024 / 50 = 20.48 -> 20; the margin is for the
    # default only
    assert got == MemoryBound(ram=1024 * MIB, ram_source="given", shared=30 * MIB, child_uss=20 * MIB,
                              child_rss=50 * MIB, max_clients=49, max_clients_no_sharing=20, parent_uss=12 * MIB)
    assert got.to_dict()["max_clients"] == 49
    assert got.child_limit(4) == (1024 - 12 - 30) * MIB // 4
    assert got.child_limit(0) == (1024 - 12 - 30) * MIB  # never a division by zero
    # the parent's own memory counts: 22 MiB of it leaves room for one child fewer
    assert memory_bound(measure_summary(end=end, parent_uss=22 * MIB), 1024 * MIB, 0).max_clients == 48


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



def test_growth_reasons_state_every_criterion() -> None:
    got = _growth(1000, 1000, requests_second=1000)
    assert got.reasons == [
        "growth per request in the second half: 1,000 bytes (a leak needs at least 512): met",
        "total growth of the children in the second half: 1,000,000 bytes over 1,000 requests (a leak needs at "
        "least 65,536): met",
        "second half against the first: 1,000 against 1,000 bytes per request (100.0% of the first half's rate; "
        "a leak keeps at least 25.0%): still growing",
        "verdict: a leak (every criterion met)"]
    assert (got.enough_per_request, got.enough_total, got.still_growing, got.total_second) == (True, True, True, 1e6)
    assert got.to_dict()["leak"] is True


def test_growth_issue_case_names_the_real_reason() -> None:
    # the issue: 1,495 B/request, above 512, yet no leak: too little in total over 30 requests
    got = _growth(1495, 1495, requests_second=30)
    assert not got.leak and got.enough_per_request and not got.enough_total
    assert got.reasons[1] == ("total growth of the children in the second half: 44,850 bytes over 30 requests (a leak "
                              "needs at least 65,536): not met")
    assert got.reasons[-1] == "verdict: no leak (too little in total)"
    assert _growth(10000, 100).reasons[-1] == "verdict: no leak (too little per request, slowing down)"
    later = _growth(-200, 4096)
    assert later.reasons[2] == ("second half against the first: 4,096 against -200 bytes per request (the first half "
                                "did not grow): growing later, not slowing")
    assert _growth(0, 0).reasons[2] == ("second half against the first: 0 against 0 bytes per request (the first half "
                                        "did not grow): neither half grew")


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


def _rps(*values: float) -> list[float]:
    return list(values)


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
# Aggregated points (k interleaved trials: medians, the median's 95 % interval), as the session
# gives them, and the check that every figure a reason quotes is one the tables print

NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:,\d{3})*(?:\.\d+)?%?")
"""A number (not a part of a name such as p99); a sign only where it is not a range's dash ("520-1,400")."""


def point(children: int, rps: float, low: float | None = None, high: float | None = None, *,
          connections: int | None = None, p99_ms: float = 10.0, server_cores: float = 1.0,
          client_cores: float = 0.2, busy_s: float | None = None, wide: bool = False,
          queued: float | None = None) -> dict[str, Any]:
    """A sweep point aggregated over 5 trials (``rps_low`` / ``rps_high``: the median's interval;
    ``queued``: the share of accept-queue samples with a connection waiting, None: not sampled)."""
    return {**load_summary(children, rps, p99_ms=p99_ms, server_cores=server_cores, client_cores=client_cores,
                           connections=connections),
            "trials": [], "counted": 5, "rps_low": low, "rps_high": high, "wide": wide, "busy_s": busy_s,
            "queued": queued}


def table_figures(points: list[dict[str, Any]]) -> set[str]:
    """Every figure the tables print for these points, formatted as they print it."""
    out: set[str] = set()
    for p in points:
        out |= {str(p["children"]), str(p["connections"]), f"{p['children']:,}"}
        out |= {rps_text(float(p[key])) for key in ("rps", "rps_low", "rps_high") if p.get(key) is not None}
        out |= {ms_text(float(p[key])) for key in ("p50_ms", "p95_ms", "p99_ms") if p.get(key) is not None}
        out |= {cores_text(float(p[key])) for key in ("server_cores", "client_cores")}
        if p.get("server_cpu_us") is not None:
            out.add(f"{p['server_cpu_us']:,.0f}")
        if p.get("queued") is not None:
            out.add(queued_text(TunePoint.from_dict(p)))
        if p.get("max_requests"):
            out.add(f"{p['max_requests']:,}")
        vs = p.get("vs_unlimited")
        if vs:
            out |= {change_text(float(vs[key])) for key in ("ratio", "low", "high") if vs.get(key) is not None}
    return out


def assert_quoted(reasons: list[str], allowed: set[str]) -> None:
    """Every number in the reasons is one of ``allowed`` (the tables' figures and the named inputs)."""
    for reason in reasons:
        for number in NUMBER.findall(reason):
            assert number.lstrip("+") in allowed or number in allowed, (number, reason)


# ---------------------------------------------------------------------------------------------
# knee

PLATEAU = [
    point(1, 100, 95, 105, p99_ms=50),
    point(2, 190, 180, 200, p99_ms=45),
    point(4, 300, 290, 310, p99_ms=40),
    point(8, 310, 300, 320, p99_ms=20),
    point(16, 305, 295, 315, p99_ms=30),
]
"""Best 310 req/s with 8; 95 % of it is 294.5, first reached by 4 children (median 300)."""


def test_knee_smallest_as_good_as_the_best() -> None:
    got = knee(PLATEAU, 0.05)
    assert (got.children, got.rps, got.best_children, got.best_rps) == (4, 300.0, 8, 310.0)
    assert got.threshold == pytest.approx(294.5) and not got.by_interval and not got.flat and got.wide == []
    assert got.reasons == ["throughput: 4 children serve 300 req/s (290-310), as good as the best measured "
                           "(8 children, 310 req/s (300-320)): within 5.0% of it"]
    assert knee(list(reversed(PLATEAU)), 0.05).children == 4
    assert got.to_dict()["children"] == 4


def test_knee_decided_on_the_interval_is_stable() -> None:
    # a second run of the same app: 4 children's median landed at 290 (below 294.5 = 95 % of 310)
    # but its interval reaches 305: as good. On medians alone the knee would jump to 8.
    second = [point(1, 100, 95, 105), point(2, 190, 180, 200), point(4, 290, 280, 305), point(8, 310, 300, 320)]
    got = knee(second, 0.05)
    assert got.children == 4 and got.by_interval
    assert "its interval reaches within 5.0% of it" in got.reasons[0]
    # a count clearly below the plateau (its whole interval under the threshold) never qualifies
    assert knee([point(2, 250, 240, 290), point(4, 310, 300, 320)], 0.05).children == 4


def test_knee_without_intervals_uses_medians() -> None:
    points = [load_summary(1, 100), load_summary(2, 290), load_summary(4, 310)]
    assert knee(points, 0.05).children == 4
    assert knee(points, 0.07).children == 2  # 290 >= 288.3


def test_knee_one_wide_count_is_named_in_the_singular() -> None:
    got = knee([point(1, 100, 60, 140, wide=True), point(2, 200, 190, 210)], 0.05)
    assert got.reasons[-1] == ("the interval of 1 child stayed wider than ±10% after a re-measure: the machine was "
                               "noisy, and the knee may move by a step between runs")


def test_knee_tie_for_the_best_is_the_smaller_count() -> None:
    got = knee([point(1, 100, 90, 110), point(2, 200, 190, 210), point(4, 200, 190, 210)], 0.05)
    assert (got.best_children, got.children) == (2, 2)
    assert got.reasons[0] == ("throughput: the best measured is 2 children, 200 req/s (190-210); every smaller "
                              "count stayed below 95.0% of its median")


def test_knee_issue_apache_sweep_is_flagged() -> None:
    # the issue's Apache sweep: 2 -> 1,089, 4 -> 519, 8 -> 711 req/s, the 2 and 8 intervals wide
    sweep = [point(1, 540, 500, 600), point(2, 1089, 520, 1400, wide=True), point(4, 519, 480, 560),
             point(8, 711, 500, 950, wide=True)]
    got = knee(sweep, 0.05)
    assert (got.children, got.best_children) == (2, 2)
    assert got.flat and got.wide == [2, 8]
    assert got.reasons == [
        "throughput: the best measured is 2 children, 1,089 req/s (520-1,400); every smaller count stayed below "
        "95.0% of its median",
        "no count measured is distinguishably slower than the best (2 children): the sweep cannot tell the counts "
        "apart at this load, so where throughput stops growing is not known",
        "the intervals of 2, 8 children stayed wider than ±10% after a re-measure: the machine was noisy, and the "
        "knee may move by a step between runs"]
    assert_quoted(got.reasons, table_figures(sweep) | {"10%", "95.0%"})  # WIDE, 1 - tolerance


def test_knee_not_flat_when_a_count_is_clearly_slower() -> None:
    assert not knee(PLATEAU, 0.05).flat  # 1 child's 95-105 lies under 8's 300-320
    assert knee([point(1, 300, 280, 320), point(2, 310, 290, 330)], 0.05).flat
    assert not knee([point(1, 310)], 0.05).flat  # one point: nothing to tell apart


# ---------------------------------------------------------------------------------------------
# size_pool

def memory_for(max_clients: int) -> MemoryBound:
    """A bound of exactly ``max_clients``: shared 100 MiB, children of 10 MiB."""
    return bound((100 + 10 * max_clients) * MIB, shared=100 * MIB, child_uss=10 * MIB)


def pool(points: list[dict[str, Any]], max_clients: int = 100, target: Target | None = None, *,
         max_children: int = 64, kind: str = "apache") -> ChildrenChoice:
    return size_pool(points, memory_for(max_clients), target, tolerance=0.05, max_children=max_children, cores=2,
                     kind=kind)


def test_size_pool_no_target_is_the_memory_bound() -> None:
    got = pool(PLATEAU, 40)
    assert (got.throughput, got.memory_cap, got.chosen, got.decided_by) == (4, 40, 40, "memory")
    assert got.needed is None and got.little is None and got.for_clients is None
    assert got.reasons[1:] == [
        "no target load given: the pool is the memory bound, 40 children (as many as the RAM budget allows, so "
        "clients rarely wait for a free child)",
        "beyond 4 children no more throughput: more children only help slow or waiting clients (slow networks, "
        "keep-alive, requests waiting on a database)",
        "a smaller pool (down to 4) serves as many requests per second, but connections beyond the pool wait in the "
        "listen queue until a child is free: their latency grows with the queue, and when the queue is full they "
        "are refused"]
    assert got.to_dict()["decided_by"] == "memory"


def test_size_pool_no_target_capped_by_max_children() -> None:
    got = pool(PLATEAU, 200, max_children=64)
    assert (got.chosen, got.decided_by, got.memory_cap) == (64, "max-children", 200)
    assert "capped at --max-children 64 (memory allows 200)" in got.reasons


def test_size_pool_clients() -> None:
    got = pool(PLATEAU, 100, Target(clients=12))
    assert (got.for_clients, got.chosen, got.decided_by) == (12, 12, "clients")
    assert got.reasons[1] == ("--clients 12: each concurrent client holds a child while its request runs, so 12 "
                              "children serve them without a wait in the listen queue")
    assert got.reasons[-1] == "12 children, decided by the clients target (the memory bound allows 100)"
    kept = pool(PLATEAU, 100, Target(clients=12, keepalive=True, proxy=False))
    assert "for its whole connection, idle time included (keep-alive with no buffering proxy)" in kept.reasons[1]
    # fewer clients than the knee: the knee decides
    few = pool(PLATEAU, 100, Target(clients=2))
    assert (few.chosen, few.decided_by) == (4, "cpu-knee")


def test_size_pool_clients_beyond_memory() -> None:
    got = pool(PLATEAU, 10, Target(clients=40))
    assert (got.chosen, got.decided_by) == (10, "memory")
    assert got.reasons[-1] == "memory: only 10 children fit the RAM budget, fewer than the 40 wanted"
    capped = pool(PLATEAU, 100, Target(clients=80), max_children=64)
    assert (capped.chosen, capped.decided_by) == (64, "max-children")


def busy_plateau() -> list[dict[str, Any]]:
    # 4 children hold a child 35 ms per request at the knee
    return [point(1, 30, 28, 32, busy_s=0.030, queued=1.0), point(2, 60, 57, 63, busy_s=0.031, queued=1.0),
            point(4, 114, 110, 118, busy_s=0.035, queued=0.97), point(8, 116, 111, 120, busy_s=0.068, queued=0.99)]


def test_size_pool_peak_rate_little() -> None:
    got = pool(busy_plateau(), 100, Target(peak_rate=100.0))
    # 100 req/s x 35 ms = 3.5 busy; + 2 sqrt(3.5) = 3.74: ceil(7.24) = 8
    assert (got.throughput, got.needed, got.chosen, got.decided_by) == (4, 8, 8, "peak-rate")
    assert got.busy_s == pytest.approx(0.035) and got.offered == pytest.approx(3.5)
    assert got.headroom == pytest.approx(2 * math.sqrt(3.5))
    assert got.little == ("100 req/s x 35.0 ms = 3.5 children busy on average; + 2 x sqrt(3.5) = 3.7 for random "
                          "arrivals: 8")
    assert got.reasons[1] == ("peak rate (--peak-rate) by Little's law: a child is busy 35.0 ms per request (35.0 ms "
                              "held per request at 4 children (children / throughput measured there; a connection "
                              "waited for a free child in 97% of the accept queue's samples: every child was busy)); "
                              f"{got.little}")
    # without the queue's samples (results of earlier versions) it cannot tell
    old = [{**p, "queued": None} for p in busy_plateau()]
    assert "(children / throughput measured there; exact when every child was kept busy, else an upper bound)" in (
        pool(old, 100, Target(peak_rate=100.0)).reasons[1])


def test_size_pool_peak_rate_without_a_proxy_counts_the_transfer_and_keepalive() -> None:
    target = Target(peak_rate=100.0, source="access log busiest second", proxy=False, keepalive=True,
                    transfer_s=0.1, keepalive_idle_s=0.2)
    got = pool(busy_plateau(), 100, target)
    # 35 + 100 + 200 ms = 335 ms: 33.5 busy, + 2 sqrt(33.5) = 11.58: ceil(45.08) = 46
    assert got.busy_s == pytest.approx(0.335) and got.needed == 46 and got.chosen == 46
    assert ("a child is busy 335.0 ms per request (35.0 ms held per request at 4 children (children / throughput "
            "measured there; a connection waited for a free child in 97% of the accept queue's samples: every child "
            "was busy) + 100.0 ms "
            "sending the answer to a slow client (no proxy) + 200.0 ms idle on a kept-alive connection)"
            in got.reasons[1])
    assert got.reasons[1].startswith("peak rate (access log busiest second)")
    # behind a proxy neither is added
    assert pool(busy_plateau(), 100, Target(peak_rate=100.0, transfer_s=0.1, keepalive=True,
                                            keepalive_idle_s=0.2)).busy_s == pytest.approx(0.035)


def test_size_pool_peak_rate_beyond_what_was_measured() -> None:
    got = pool(busy_plateau(), 20, Target(peak_rate=500.0))
    assert got.reasons[2] == ("the peak rate 500 req/s is beyond what was measured (the best: 8 children, 116 req/s "
                              "(111-120)): more children alone may not serve it")
    assert (got.chosen, got.decided_by) == (20, "memory")  # 17.5 + 8.4 -> 26 wanted


def test_size_pool_small_rate_keeps_the_knee() -> None:
    got = pool(busy_plateau(), 100, Target(peak_rate=10.0))  # 0.35 + 1.18 -> 2
    assert (got.needed, got.chosen, got.decided_by) == (2, 4, "cpu-knee")


def test_size_pool_no_knee_no_floor() -> None:
    # an I/O-bound app: throughput still grows at the largest count measured, so the sweep's end is
    # no knee and the target's own need decides (the access-log test's 200 req/s x 28.6 ms case)
    growing = [point(1, 35, 34, 36, busy_s=0.0286), point(4, 140, 137, 143, busy_s=0.0286),
               point(16, 559, 552, 575, busy_s=0.0286)]
    got = pool(growing, 400, Target(peak_rate=200.0))
    assert (got.throughput, got.needed, got.chosen, got.decided_by) == (16, 11, 11, "peak-rate")
    assert ("throughput still grew at 16 children, the largest count measured: no knee was found to keep the pool "
            "at or above") in got.reasons


def test_busy_seconds_fallback_is_littles_law_on_the_closed_loop() -> None:
    assert busy_seconds(point(4, 200, busy_s=0.5)) == 0.5
    assert busy_seconds(point(4, 200, connections=8)) == pytest.approx(4 / 200)  # every child busy
    assert busy_seconds(point(4, 200, connections=2)) == pytest.approx(2 / 200)  # only 2 connections
    assert busy_seconds(point(4, 0)) == 0.0


def test_size_pool_p99() -> None:
    got = pool(PLATEAU, 100, Target(clients=5, p99_s=0.025))
    # clients 5; the p99 needs 8 (20 ms <= 25 ms)
    assert (got.for_clients, got.for_p99, got.chosen, got.decided_by) == (5, 8, 8, "p99")
    assert "--p99 25.0 ms: 8 children is the smallest count whose p99 met it (20.0 ms with 16 clients)" in got.reasons
    none = pool(PLATEAU, 100, Target(clients=5, p99_s=0.005))
    assert none.for_p99 is None and none.chosen == 5
    assert ("--p99 5.0 ms is not met by any count measured (best: 20.0 ms with 8 children and 16 clients)"
            in none.reasons)


def test_size_pool_reasons_quote_the_table() -> None:
    sweep = busy_plateau()
    for target in (None, Target(clients=12), Target(peak_rate=100.0), Target(clients=5, p99_s=0.05)):
        got = pool(sweep, 40, target)
        derived = {"5.0%", "40", "12", "5", "100", "3.5", "2", "3.7", "8", "50.0", "35.0"}
        assert_quoted(got.reasons, table_figures(sweep) | derived)


# ---------------------------------------------------------------------------------------------
# explain_throughput: CPU, the offered concurrency, something shared, memory

def test_io_app_stops_at_the_offered_concurrency() -> None:
    # the issue's I/O app: 30 ms per request, CPUs idle, --clients 32: each count served children / 30.5 ms
    # (fewer children than clients: connections wait in the accept queue; 32 for 32: none ever waits)
    sweep = [point(n, n / 0.0305, n / 0.0305 * 0.97, n / 0.0305 * 1.03, connections=32, server_cores=0.05 * n / 8,
                   client_cores=0.1, busy_s=0.0305, queued=1.0 if n < 32 else 0.0) for n in (1, 2, 4, 8, 16, 32)]
    choice = pool(sweep, 200, Target(clients=32))
    assert (choice.throughput, choice.chosen, choice.decided_by) == (32, 32, "clients")
    said = explain_throughput(sweep, choice, 2)
    assert said == [
        "the CPUs are not saturated at 32 children (server 0.2 of 2 cores, load generator 0.1): throughput is "
        "concurrency here. Each request holds a child for at most 30.5 ms, 900 us of it on the server's CPU (a "
        "connection waited for a free child in only 0% of the accept queue's samples, under 90%: children sat idle "
        "at times, so this is an upper bound), so 32 children serve at least 32 / 30.5 ms = 1,049 req/s; measured "
        "1,049 req/s (1,018-1,081)",
        "throughput stops growing at 32 children because the load offered 32 concurrent clients: each holds one "
        "child, so children beyond 32 have nothing to do; what more children would give at a higher load was not "
        "measured"]
    assert not any("will not help" in s or "something else" in s for s in said)
    # a count beyond the clients offered, with the same 32 clients: still the offered concurrency
    more = [*sweep, point(64, 1050, 1010, 1090, connections=32, server_cores=0.4, client_cores=0.1, busy_s=0.061)]
    said = explain_throughput(more, pool(more, 200, Target(clients=32)), 2)
    assert "because the load offered 32 concurrent clients" in said[-1]


def test_more_children_will_not_help_only_when_measured() -> None:
    # 4 and 8 children with twice as many clients, no faster, CPUs mostly idle
    sweep = [point(1, 100, 95, 105, server_cores=0.1, busy_s=0.01), point(2, 190, 180, 200, server_cores=0.2,
                                                                          busy_s=0.0105),
             point(4, 200, 190, 210, server_cores=0.2, busy_s=0.02), point(8, 201, 190, 212, server_cores=0.2,
                                                                              busy_s=0.04)]
    choice = pool(sweep, 100)
    said = explain_throughput(sweep, choice, 2)
    assert choice.throughput == 2
    assert said[-1] == ("8 children with 16 clients served 201 req/s (190-212), no more than 2 children's 190 req/s "
                        "(180-200): more children will not help at this load. Neither the CPUs nor the pool limit it: "
                        "something the children share does (a lock, a database, the network, the load generator)")
    assert_quoted(said, table_figures(sweep) | {"10.5", "2", "190"})


def test_cpu_bound_names_the_load_generator_separately() -> None:
    sweep = [point(1, 100, 95, 105, server_cores=0.8, client_cores=0.2),
             point(2, 198, 190, 205, server_cores=1.6, client_cores=0.4),
             point(4, 200, 192, 208, server_cores=1.6, client_cores=0.4)]
    said = explain_throughput(sweep, pool(sweep), 2)
    assert said == [
        "the server is CPU-bound: at 2 children the CPUs are busy (server 1.6 of 2 cores, load generator 0.4), and "
        "4 children served 200 req/s (192-208), no more than 2 children's 198 req/s (190-205): more children only "
        "queue on the CPU and cost memory",
        "the load generator ran on the server's cores (0.4 of 2 at 2 children): on a machine of its own the server "
        "would have more CPU"]


def test_still_growing_at_the_memory_cap() -> None:
    sweep = [point(1, 100, 95, 105, server_cores=0.1), point(2, 200, 190, 210, server_cores=0.1),
             point(4, 400, 380, 420, server_cores=0.2)]
    said = explain_throughput(sweep, pool(sweep, 4), 2)
    assert said[-1] == ("throughput still grows at 4 children, the most the memory allows: memory, not CPU, limits "
                        "this server; a smaller child or more RAM means more throughput")
    said = explain_throughput(sweep, pool(sweep, 8), 2)
    assert said[-1] == "throughput still grows at 4 children, the largest count measured: more children may serve more"
    assert explain_throughput(sweep[:1], pool(sweep[:1], 8), 2) == []


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


# ---------------------------------------------------------------------------------------------
# mrpc_losses / respawn_model / choose_max_requests (aggregated points with trials)

BASE_TRIALS = [1000.0, 1005.0, 995.0, 1002.0, 998.0]


def mrpc_point(value: int, ratio: float | list[float], *, respawns: int = 50, base: float = 1000.0,
               trials: list[float] | None = None) -> dict[str, Any]:
    """A MaxRequestsPerChild point over 5 trials: each trial ``ratio`` x the unlimited point's
    (the same relative noise, so the interval holds the ratio exactly), or the given ``trials``."""
    if trials is None:
        ratios = ratio if isinstance(ratio, list) else [ratio] * len(BASE_TRIALS)
        trials = [t * r for t, r in zip(BASE_TRIALS, ratios, strict=True)]
    median = sorted(trials)[len(trials) // 2]
    got = load_summary(4, median, max_requests=value, respawns=0 if value == 0 else respawns)
    got["trials"] = [{"rps": t} for t in trials]
    got["counted"] = len(trials)
    return got


def unlimited() -> dict[str, Any]:
    return mrpc_point(0, 1.0)


def model_ratio(k: float, value: int) -> float:
    return 1 / (1 + k / value)


def test_mrpc_losses_fill_vs_unlimited() -> None:
    points = [p.to_dict() for p in mrpc_losses([unlimited(), mrpc_point(100, 0.9)])]
    assert points[0]["vs_unlimited"] is None
    vs = points[1]["vs_unlimited"]
    assert vs["ratio"] == pytest.approx(0.9) and vs["low"] <= 0.9 <= vs["high"] and vs["verdict"] == "slower"
    # a single trial: the medians' ratio, no interval
    single = [p.to_dict() for p in mrpc_losses([load_summary(4, 1000), load_summary(4, 800, max_requests=10)])]
    assert single[1]["vs_unlimited"] == {"ratio": 0.8, "low": None, "high": None, "verdict": "unknown"}
    # no unlimited point: nothing to compare with
    assert mrpc_losses([mrpc_point(100, 0.9)])[0].vs_unlimited is None


def test_mrpc_losses_skip_trials_that_did_not_count() -> None:
    base = unlimited()
    other = mrpc_point(100, 0.9)
    other["trials"].append({"rps": 1.0, "counted": False})
    assert present(mrpc_losses([base, other])[1].vs_unlimited).ratio == pytest.approx(0.9)


STARMAN = [unlimited(), mrpc_point(10, 0.62), mrpc_point(100, 0.952),
           mrpc_point(1000, 0.0, trials=[1000.0, 1020.0, 1045.0, 1080.0, 1100.0]), mrpc_point(10000, 1.002)]
"""The issue's Starman table: 1000 measured +4.5 % over unlimited; 100 -4.8 %, 10 -38 %."""


def test_issue_starman_no_leak_is_unlimited_with_the_largest_value_reported() -> None:
    # no leak: as large as possible (issue 24: not the smallest value that costs at most 2 %)
    got = choose_max_requests(STARMAN, measure_summary(), BOUND, 4, max_loss=0.02, kind="starman")
    assert (got.value, got.decided_by, got.leak, got.loss) == (0, "unlimited", False, 0.0)
    table = [p.to_dict() for p in mrpc_losses(STARMAN)]
    vs = next(p for p in table if p["max_requests"] == 10000)["vs_unlimited"]
    largest = next(r for r in got.reasons if r.startswith("10,000 requests, the largest value measured:"))
    assert f"{change_text(vs['ratio'])} vs unlimited" in largest and "costs at most as much" in largest
    assert any(r.startswith("no leak measured: MaxRequestsPerChild as large as possible, unlimited (0)")
               for r in got.reasons)
    assert got.reasons[-1].startswith("a respawn: Starman (Net::Server::PreFork) checks its children periodically")
    assert_quoted(got.reasons[4:-1], table_figures(table) | {"2.0%", "0"})


def test_affordable_needs_every_larger_value_affordable() -> None:
    # 1000 is fine but 10,000 (larger) measured clearly slower: nothing below it is trusted
    points = [unlimited(), mrpc_point(1000, 0.995), mrpc_point(10000, 0.9)]
    got = choose_max_requests(points, measure_summary(), BOUND, 4, max_loss=0.02)
    assert (got.value, got.decided_by) == (0, "unlimited")


def test_affordable_rule() -> None:
    """What a leak's value may cost (:func:`_affordable`, also the leak's room to grow)."""
    def vs(ratios: Any) -> Versus:
        return present(mrpc_losses([unlimited(), mrpc_point(1000, ratios)])[1].vs_unlimited)

    # median within the loss, interval low within too: affordable
    assert _affordable(vs(0.99), 0.02)
    # median within, clearly slower and its interval reaches past the loss: not affordable
    spread = vs([0.97, 0.985, 0.982, 0.985, 0.99])
    assert spread.verdict == "slower" and present(spread.low) < 0.98 <= present(spread.ratio)
    assert not _affordable(spread, 0.02)
    # within min_effect of 1 the comparison tells no difference, whatever the interval: affordable
    close = vs([0.975, 0.99, 0.985, 0.99, 0.995])
    assert close.verdict == "no clear difference" and _affordable(close, 0.02)
    # median past the loss: not affordable whatever the interval
    assert not _affordable(vs(0.97), 0.02)


def test_noise_never_makes_a_value_affordable() -> None:
    """The demo's 100 at +8.8 % (-28 % to +43 %): no clear difference, and no evidence either. A
    value whose interval reaches past WIDE is too noisy to decide on, and the reasons say so."""
    noisy = [0.7, 1.4, 0.95, 1.1, 1.2]
    table = mrpc_losses([unlimited(), mrpc_point(100, noisy)])
    vs = present(table[1].vs_unlimited)
    assert vs.verdict == "no clear difference" and present(vs.low) < 1 - WIDE and present(vs.ratio) >= 0.98
    assert not _affordable(vs, 0.02)
    got = choose_max_requests([unlimited(), mrpc_point(100, noisy)], measure_summary(), BOUND, 4, max_loss=0.02)
    assert (got.value, got.decided_by) == (0, "unlimited")
    assert any(r.startswith(f"100 requests, the largest value measured: {change_text(present(vs.ratio))} vs unlimited")
               and "its interval is wider than ±10%: too noisy to tell whether it costs more than 2.0%" in r
               for r in got.reasons), got.reasons
    # no clear difference with an interval inside WIDE: affordable, and the words say only the median is within
    modest = [0.95, 1.04, 0.99, 1.01, 0.97]
    vs = present(mrpc_losses([unlimited(), mrpc_point(1000, modest)])[1].vs_unlimited)
    assert vs.verdict == "no clear difference" and 1 - WIDE <= present(vs.low) < 0.98 <= present(vs.ratio)
    assert _affordable(vs, 0.02)
    got = choose_max_requests([unlimited(), mrpc_point(1000, modest)], measure_summary(), BOUND, 4, max_loss=0.02)
    assert got.value == 0
    assert any(r.startswith("1,000 requests, the largest value measured:") and "no clear difference from unlimited, "
               "its median within 2.0%" in r for r in got.reasons), got.reasons


def test_the_model_never_goes_more_than_a_decade_beyond_the_largest_value() -> None:
    # exactly k = 300: 100 -> 0.25, 1000 -> 0.769 (both cost more than 2 %); the model agrees with both
    points = [unlimited(), *[mrpc_point(v, model_ratio(300, v)) for v in (100, 1000)]]
    # no leak: unlimited, the model picks no value
    got = choose_max_requests(points, measure_summary(), BOUND, 4, max_loss=0.02)
    assert (got.value, got.decided_by) == (0, "unlimited")
    assert got.respawn_cost_requests == pytest.approx(300)
    assert got.model.fitted_on == 1000 and got.model.agrees == [100, 1000] and got.model.disagrees == []
    # a leak whose memory limit is 9,000 (within a decade of 1,000): the model gives its cost
    start = 100 * MIB
    near = choose_max_requests(points, leaking(16 * KIB, start=start), BOUND, 4, max_loss=0.02)
    assert near.value <= 10 * 1000 and near.loss == pytest.approx(1 - model_ratio(300, near.value))
    # a leak whose limit is beyond a decade: the cost is not modelled
    far = choose_max_requests(points, leaking(KIB, start=start), BOUND, 4, max_loss=0.02)
    assert far.value > 10 * 1000 and far.loss is None
    assert any(f"what respawning every {far.value:,} requests costs was not measured" in r for r in far.reasons)


def test_model_that_disagrees_is_not_used() -> None:
    # 100 pays Apache's spawn-rate limit: -50 %; 1,000 -3 % fits k = 30.9, which predicts -23.6 % at 100
    points = [unlimited(), mrpc_point(100, 0.5), mrpc_point(1000, 0.97)]
    got = choose_max_requests(points, measure_summary(), BOUND, 4, max_loss=0.02, kind="apache")
    assert (got.value, got.decided_by, got.respawn_cost_requests) == (0, "unlimited", 0.0)
    assert got.model.disagrees == [100] and got.model.agrees == [1000]
    assert got.reasons[-1].startswith("a respawn: Apache's parent replaces exiting children in its once-a-second "
                                      "maintenance and spawns at most 1, 2, 4 ... 32 per second")


def test_values_that_never_respawned_say_nothing() -> None:
    points = [unlimited(), mrpc_point(1000, 0.99), mrpc_point(100000, 1.0, respawns=0)]
    got = choose_max_requests(points, measure_summary(), BOUND, 4, max_loss=0.02)
    assert got.value == 0
    assert ("100,000 requests: no child was replaced during the measurement, so it says nothing about the cost of "
            "respawning") in got.reasons
    assert any(r.startswith("1,000 requests, the largest value measured:") for r in got.reasons)
    nothing = choose_max_requests([unlimited(), mrpc_point(100000, 1.0, respawns=0)], measure_summary(), BOUND, 4,
                                  max_loss=0.02)
    assert (nothing.value, nothing.decided_by) == (0, "unlimited")
    assert not any("the largest value measured" in r for r in nothing.reasons)


def test_nothing_clearly_slower_means_no_model() -> None:
    points = [unlimited(), mrpc_point(1000, [0.9, 1.1, 0.95, 1.05, 0.96])]  # median -4 %, interval across 1
    got = choose_max_requests(points, measure_summary(), BOUND, 4, max_loss=0.02)
    assert (got.value, got.decided_by, got.respawn_cost_requests) == (0, "unlimited", 0.0)


def test_single_trial_points_still_decide() -> None:
    got = choose_max_requests(MRPC, measure_summary(), BOUND, 4, max_loss=0.02)
    # no leak: unlimited; 10,000 did not respawn, so the largest value reported is 1,000 (-0.5 %)
    assert (got.value, got.decided_by) == (0, "unlimited")
    assert any(r.startswith("1,000 requests, the largest value measured: -0.5% vs unlimited") for r in got.reasons)


def test_no_leak_reasons_state_every_growth_criterion() -> None:
    got = choose_max_requests(STARMAN, measure_summary(growth_first=12000, growth_second=1495, requests_second=40),
                              BOUND, 4, max_loss=0.02)
    assert got.reasons[:4] == [
        "growth per request in the second half: 1,495 bytes (a leak needs at least 512): met",
        "total growth of the children in the second half: 59,800 bytes over 40 requests (a leak needs at least "
        "65,536): not met",
        "second half against the first: 1,495 against 12,000 bytes per request (12.5% of the first half's rate; a "
        "leak keeps at least 25.0%): slowing down",
        "verdict: no leak (too little in total, slowing down)"]


# RAM 1024 MiB, shared 100 MiB, 4 children: each may reach (1024 - 100) / 4 = 231 MiB; a child
# starts (after warm-up) at 31 MiB: 200 MiB of headroom = 209,715,200 bytes
BOUND = bound(1024 * MIB, shared=100 * MIB, child_uss=40 * MIB)


def leaking(per_request: float, *, start: int = 31 * MIB, first: float | None = None) -> dict[str, Any]:
    return measure_summary(warm=sizes(max_uss=start), growth_first=per_request if first is None else first,
                           growth_second=per_request, requests_second=1000)


LEAK_POINTS = [unlimited(), mrpc_point(10, 0.5), mrpc_point(100, 0.99), mrpc_point(1000, 0.999)]


def test_leak_value_from_headroom() -> None:
    got = choose_max_requests(LEAK_POINTS, leaking(16 * KIB), BOUND, 4, max_loss=0.02)
    # 209,715,200 / 16,384 = 12,800 -> two significant digits: 12,000
    assert got.leak and got.memory_limit == 12800 and got.value == 12000 and got.decided_by == "memory"
    assert got.child_start_bytes == 31 * MIB and got.child_limit_bytes == 231 * MIB
    assert got.growth_bytes_per_request == 16 * KIB
    assert not got.forced_by_memory
    assert got.reasons[3] == "verdict: a leak (every criterion met)"
    assert got.reasons[4] == ("a child starts at 31.0 MiB and may reach 231.0 MiB (4 children in the budget): at "
                              "16,384 bytes per request, at most 12,800 requests, rounded to 12,000")
    assert got.reasons[5].startswith("respawning every 12,000 requests costs at most what 1,000 cost when measured "
                                     "(-0.1% vs unlimited")
    assert got.loss == pytest.approx(0.001)
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
    got = choose_max_requests(LEAK_POINTS, leaking(per_request), BOUND, 4, max_loss=0.02)
    assert (got.memory_limit, got.value) == (expected_limit, expected_value)


def test_leak_with_no_headroom_is_forced_by_memory() -> None:
    # the child already starts above its share: respawn after every request; 10 measured -50 %
    got = choose_max_requests(LEAK_POINTS, leaking(16 * KIB, start=300 * MIB), BOUND, 4, max_loss=0.02)
    assert got.memory_limit == 1 and got.value == 1
    assert got.forced_by_memory and got.loss == pytest.approx(0.5)
    assert got.reasons[5].startswith("memory forces it: respawning every 1 requests costs at least what 10 measured, "
                                     "-50.0% vs unlimited")


def test_leak_value_capped_at_a_million() -> None:
    huge = bound(100 * 1024 * MIB, shared=0, child_uss=MIB)
    got = choose_max_requests(LEAK_POINTS, leaking(600, start=MIB), huge, 1, max_loss=0.02)
    assert got.memory_limit == (100 * 1024 - 1) * MIB // 600
    assert got.value == 1_000_000


def test_leak_fewer_children_leave_more_room() -> None:
    # 2 children: (1024 - 100) / 2 = 462 MiB each, 431 MiB of headroom / 16 KiB = 27,584 -> 27,000
    got = choose_max_requests(LEAK_POINTS, leaking(16 * KIB), BOUND, 2, max_loss=0.02)
    assert (got.child_limit_bytes, got.memory_limit, got.value) == (462 * MIB, 27584, 27000)


def test_leak_between_the_values_measured_uses_an_agreeing_model() -> None:
    # 1 MiB per request: 200; 100 measured -2.9 % (k = 3) and 1000 -0.3 %: the model agrees with both
    points = [unlimited(), mrpc_point(100, model_ratio(3, 100)), mrpc_point(1000, model_ratio(3, 1000))]
    got = choose_max_requests(points, leaking(MIB), BOUND, 4, max_loss=0.02)
    assert got.value == 200 and got.loss == pytest.approx(1 - model_ratio(3, 200)) and not got.forced_by_memory
    assert "(modelled)" in got.reasons[5]
    # without any usable measurement or model: the cost is said to be unknown
    unknown = choose_max_requests([unlimited()], leaking(MIB), BOUND, 4, max_loss=0.02)
    assert unknown.loss is None and not unknown.forced_by_memory
    assert unknown.reasons[-1] == "what respawning every 200 requests costs was not measured"


def test_leak_connections_wording() -> None:
    got = choose_max_requests(LEAK_POINTS, leaking(16 * KIB), BOUND, 4, max_loss=0.02, counts="connections")
    assert "at most 12,800 connections (= requests with keep-alive off), rounded to 12,000" in got.reasons[4]


@pytest.mark.parametrize(("kind", "start"), [
    ("apache", "Apache's parent replaces exiting children in its once-a-second maintenance"),
    ("gunicorn", "gunicorn's arbiter replaces an exited worker in its loop"),
    ("starman", "Starman (Net::Server::PreFork) checks its children periodically"),
    ("command", "each respawn is a fork and the new child's warm-up"),
])
def test_respawn_mechanism(kind: str, start: str) -> None:
    assert respawn_mechanism(kind).startswith(start)


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


@pytest.mark.parametrize(("children", "burst", "kind", "expected"), [
    (8, 8, "command", (8, 2, 8)),  # all 8 started, a quarter (2) spare, MaxSpare = the burst
    (10, 50, "command", (10, 3, 10)),  # the burst is capped by the children: ceil(10 / 4) = 3
    (20, 5, "command", (5, 2, 5)),
    (2, 2, "command", (2, 1, 2)),
    (1, 5, "command", (1, 1, 2)),
    (4, 0, "command", (1, 1, 2)),
    # mod_perl: MinSpare close to MaxSpare (three quarters)
    (8, 8, "apache", (8, 6, 8)),
    (40, 40, "apache", (40, 30, 40)),
    (40, 20, "apache", (20, 15, 20)),
    (3, 3, "apache", (3, 2, 3)),
    (2, 2, "apache", (2, 1, 2)),
    (1, 1, "apache", (1, 1, 2)),
])
def test_spare_settings(children: int, burst: int, kind: str, expected: tuple[int, int, int]) -> None:
    got = spare_settings(children, burst, kind)
    assert got == expected
    assert (got.start_servers, got.min_spare, got.max_spare) == expected
    start, low, high = got
    assert (start, low, high) == expected


@pytest.mark.parametrize("kind", ["apache", "command"])
@pytest.mark.parametrize("children", [1, 2, 3, 4, 5, 7, 8, 13, 64])
@pytest.mark.parametrize("burst", [0, 1, 2, 3, 5, 8, 50, 200])
def test_spare_settings_invariants(kind: str, children: int, burst: int) -> None:
    start, low, high = spare_settings(children, burst, kind)
    assert high > low >= 1  # MaxSpare > MinSpare always
    assert 1 <= start <= children
    assert start <= max(1, burst)
    assert high >= start
    assert low < start or start == 1


def test_spare_settings_reasons_cite_the_start_time() -> None:
    got = spare_settings(40, 32, "apache", child_start_s=1.25)
    assert got.reasons == [
        "StartServers 32 and MaxSpareServers 32: the burst steps from idle to 32 clients, and all of them are "
        "started at once and kept when the load drops",
        "MinSpareServers 24, close to MaxSpareServers: mod_perl children are slow to start (a child took 1,250.0 ms "
        "to start here), so the parent keeps them ready instead of spawning them during a burst"]
    assert got.to_dict() == {"start_servers": 32, "min_spare": 24, "max_spare": 32, "reasons": got.reasons}
    assert spare_settings(8, 8).reasons[1] == "MinSpareServers 2: a quarter of them kept spare"


def test_a_burst_needs_only_the_workers_its_threads_do_not_serve() -> None:
    """uWSGI's cheaper workers with 8 threads each: a burst of 20 clients needs 3 of 6 workers."""
    got = spare_settings(6, 20, "uwsgi", threads=8)
    assert (got.start_servers, got.min_spare, got.max_spare) == (3, 1, 3)
    assert got.reasons[0].startswith("StartServers 3 and MaxSpareServers 3: the burst steps from idle to 20 clients "
                                     "served by 3 children of 8 threads, ")
    assert spare_settings(2, 20, "uwsgi", threads=8).start_servers == 2  # never more than the workers


def test_burst_clients_is_the_targets_concurrency() -> None:
    # no target: the chosen pool (the memory bound), not twice the knee
    assert burst_clients(pool(PLATEAU, 40)) == 40
    assert burst_clients(pool(PLATEAU, 40), Target()) == 40
    target = Target(clients=12)
    assert burst_clients(pool(PLATEAU, 40, target), target) == 12
    rate = Target(peak_rate=100.0)
    assert burst_clients(pool(busy_plateau(), 40, rate), rate) == 8  # the needed children
    # never beyond the pool
    many = Target(clients=80)
    assert burst_clients(pool(PLATEAU, 40, many), many) == 40


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
    """The pool with no target and a memory bound of ``cap`` (also the --max-children cap)."""
    return size_pool(sweep, memory_for(cap), Target(), tolerance=0.05, max_children=cap, cores=1, kind="command")


def run_advice(measure: dict[str, Any], *, kind: str = "command", sweep: list[dict[str, Any]] | None = None,
               memory: MemoryBound | None = None, cores: int = 2, cap: int = 100,
               other: dict[str, Any] | None = None, other_memory: MemoryBound | None = None) -> list[str]:
    sweep = sweep if sweep is not None else [load_summary(1, 100)]
    return advice(kind, measure, other, memory or quiet_bound(), other_memory, sweep, choice_for(sweep, cap), cores)


def test_advice_quiet() -> None:
    assert quiet_bound().max_clients == quiet_bound().max_clients_no_sharing == 51
    assert run_advice(quiet()) == []


def test_advice_names_the_cpu_shares() -> None:
    sweep = [point(1, 100, 95, 105, server_cores=0.8, client_cores=0.2),
             point(2, 198, 190, 205, server_cores=1.6, client_cores=0.4),
             point(4, 200, 192, 208, server_cores=1.6, client_cores=0.4)]
    said = run_advice(quiet(), sweep=sweep, cores=2)
    assert said[0].startswith("the server is CPU-bound: at 2 children the CPUs are busy (server 1.6 of 2 cores, load "
                              "generator 0.4)")


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
    ("uwsgi", "gc.freeze() at the end of the preload"),
    ("puma", "Cause: Ruby's garbage collector marks and moves the objects it inherited"),
    ("unicorn", "GC.compact in before_fork"),
    ("php-fpm", "Cause: PHP shares only what OPcache keeps in its shared memory"),
])
def test_advice_copy_on_write_broken(kind: str, cause: str) -> None:
    said = run_advice(cow(), kind=kind, memory=cow_bound())
    broken = [s for s in said if s.startswith("copy-on-write is broken early")]
    assert len(broken) == 1
    assert broken[0].startswith("copy-on-write is broken early: the children still share only 30.0 MiB of the "
                                "parent's 100.0 MiB (30%). ")
    assert cause in broken[0]
    if kind in ("gunicorn", "uwsgi"):
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
    ("gunicorn", False, "Remedy: load the code and data in the parent: start gunicorn with --preload (or "
                        "preload_app = True)."),
    ("starman", False, "Remedy: load the code and data in the parent: start Starman with --preload-app."),
    ("apache", False, "PerlRequire a startup file"),
    ("puma", False, "Remedy: load the code and data in the parent: add preload_app! to puma.rb."),
    ("uwsgi", False, "Remedy: load the code and data in the parent: drop lazy-apps"),
    ("command", False, "Remedy: load the code and data in the parent before it forks."),
    ("gunicorn", True, "Remedy: even with preloading, something is loaded on first use"),
    ("starman", True, "Remedy: even with preloading, something is loaded on first use"),
])
def test_advice_first_request_growth(kind: str, preload: bool, remedy: str) -> None:
    said = [s for s in run_advice(first_request(preload=preload), kind=kind) if not s.startswith("preloading would")]
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
    sweep = [point(1, 100, 95, 105, server_cores=0.8, client_cores=0.2),
             point(2, 198, 190, 205, server_cores=1.5, client_cores=0.3),
             point(4, 200, 192, 208, server_cores=1.5, client_cores=0.3)]
    said = run_advice(measure, memory=cow_bound(), sweep=sweep)
    assert [s.split(" ")[0] for s in said] == ["each", "copy-on-write", "the", "the", "summing"]



# Starman without --preload-app (the issue): 32 MiB private, 11 MiB shared per child; 20 MiB of it
# was there right after the start. RAM 1024 MiB: (1024 - 11) / 32 = 31 children; preloaded,
# (1024 - 11 - 20) / (32 - 20) = 82.75 -> 82.
def starman_sizes(*, preload: bool = False, cold_uss: int = 20 * MIB) -> dict[str, Any]:
    end = sizes(max_uss=32 * MIB, median_shared=11 * MIB, max_rss=43 * MIB)
    cold = sizes(max_uss=cold_uss, median_shared=11 * MIB)
    return quiet(end=end, cold=cold, warm=cold, preload=preload)


def test_preload_gain_estimate() -> None:
    measure = starman_sizes()
    memory = memory_bound(measure, 1024 * MIB, 0)
    assert memory.max_clients == 31
    assert preload_gain(measure, memory) == 82
    said = run_advice(measure, kind="starman", memory=memory)
    assert said[0] == ("preloading would allow about 82 children instead of 31: an estimate from this run's sizes, "
                       "not a measurement. Each child ends at 32.0 MiB private next to 11.0 MiB shared, and 20.0 MiB "
                       "of it was there right after it started (the application, loaded after the fork); loaded "
                       "once in the parent it would be shared: (1,024.0 MiB - 11.0 MiB - 20.0 MiB) / (32.0 MiB - "
                       "20.0 MiB) = 82. Remedy: start Starman with --preload-app, then measure again.")


def test_preload_gain_keeps_a_quarter_private() -> None:
    # everything was there at the start (32 MiB): at most 24 MiB moves, 8 MiB stays private
    measure = starman_sizes(cold_uss=32 * MIB)
    memory = memory_bound(measure, 1024 * MIB, 0)
    assert preload_gain(measure, memory) == (1024 - 11 - 24) // 8
    said = run_advice(measure, kind="gunicorn", memory=memory)
    assert "at most 24.0 MiB of it (a quarter of a child's private memory is taken to stay private" in said[0]
    assert said[0].endswith("Remedy: start gunicorn with --preload (or preload_app = True), then measure again.")


def test_preload_gain_only_when_it_applies() -> None:
    memory = memory_bound(starman_sizes(), 1024 * MIB, 0)
    assert preload_gain(starman_sizes(preload=True), memory) is None  # preloads already
    assert preload_gain(starman_sizes(cold_uss=3 * MIB), memory) is None  # little loaded after the fork
    balanced = quiet(end=sizes(max_uss=20 * MIB, median_shared=11 * MIB), cold=sizes(max_uss=15 * MIB))
    assert preload_gain(balanced, memory_bound(balanced, 1024 * MIB, 0)) is None  # private < 2 x shared
    # an adapter with no preload setting: no advice
    assert not any(s.startswith("preloading") for s in run_advice(starman_sizes(), kind="command",
                                                                  memory=memory))


def test_preload_measured_comparison_wins_over_the_estimate() -> None:
    off = starman_sizes()
    on = quiet(end=sizes(max_uss=8 * MIB, median_shared=30 * MIB, max_rss=38 * MIB), preload=True)
    mem_off, mem_on = memory_bound(off, 1024 * MIB, 0), memory_bound(on, 1024 * MIB, 0)
    said = run_advice(off, kind="starman", memory=mem_off, other=on, other_memory=mem_on)
    assert said[0].startswith("preloading saves 24.0 MiB of private memory per child")
    assert not any(s.startswith("preloading would") for s in said)


# ---------------------------------------------------------------------------------------------
# the confirmation's rate check


def _confirm_summary(complete: int, scheduled: int | None, rate: float | None) -> dict[str, Any]:
    return {"complete": complete, "failed": 0, "rate": rate, "scheduled": scheduled, "rps": complete / 5.27,
            "p99_ms": 528.0, "footprint": 40 * MIB, "pool_children": 4}


def test_the_rate_check_counts_the_requests_scheduled_not_req_s_over_the_elapsed_time() -> None:
    # 4 req/s for 5 s of 0.5 s answers: all 20 answered, though 20 / 5.27 s elapsed is 3.8 req/s
    checks = confirmation_checks(_confirm_summary(20, 20, 4.0), memory_for(10), Target(peak_rate=4.0), None)
    rate = next(c for c in checks if c["name"] == "rate")
    assert rate["ok"] and (rate["measured"], rate["limit"]) == (20.0, 20.0)
    assert rate["text"] == "20 of the 20 requests scheduled at 4 req/s answered (at least 97% needed)"
    short = confirmation_checks(_confirm_summary(19, 20, 4.0), memory_for(10), Target(peak_rate=4.0), None)
    assert not next(c for c in short if c["name"] == "rate")["ok"]  # 95 %
    closed = confirmation_checks(_confirm_summary(20, None, None), memory_for(10), Target(clients=8), None)
    assert [c["name"] for c in closed] == ["failures", "memory"]


def test_a_pool_over_the_budget_is_lowered_by_its_measured_footprint() -> None:
    memory = memory_for(24)  # 340 MiB
    choice = pool(PLATEAU, 24)
    assert choice.chosen == 24

    def confirmed(children: int, footprint: int) -> dict[str, Any]:
        summary = {**_confirm_summary(500, None, None), "children": children, "footprint": footprint,
                   "pool_children": children}
        return {**summary, "checks": confirmation_checks(summary, memory, Target(), None)}

    # within the budget, or not run: kept
    assert lowered_pool(confirmed(24, 340 * MIB), memory) is None and lowered_pool(None, memory) is None
    # 0.05 MiB over: one fewer; far over: in proportion, rounded down; one child: nothing to lower
    assert lowered_pool(confirmed(24, 340 * MIB + 50 * 1024), memory) == 23
    assert lowered_pool(confirmed(24, 680 * MIB), memory) == 12
    assert lowered_pool(confirmed(24, 100_000 * MIB), memory) == 1
    assert lowered_pool(confirmed(1, 680 * MIB), memory) is None
    lowered = lower_pool(choice, 12, confirmed(24, 680 * MIB), memory)
    assert (lowered.chosen, lowered.decided_by) == (12, "confirmation")
    assert lowered.reasons[:-1] == choice.reasons
    assert lowered.reasons[-1] == (
        "the confirmation of 24 children measured a footprint (sum of PSS) of 680.0 MiB, over the RAM budget of "
        "340.0 MiB: the measurement beats the sizes' prediction, so the pool is lowered to 12 (24 x 340.0 / 680.0 "
        "MiB, rounded down) and confirmed again")


def test_a_load_generator_that_took_next_to_nothing_is_not_named() -> None:
    # 0.02 cores prints as "0.0 of 2": no sentence says it took the server's CPU
    sweep = [point(1, 100, 95, 105, server_cores=0.9, client_cores=0.02),
             point(2, 198, 190, 205, server_cores=1.9, client_cores=0.02),
             point(4, 200, 192, 208, server_cores=1.9, client_cores=0.02)]
    said = explain_throughput(sweep, pool(sweep), 2)
    assert not any("load generator ran on the server's cores" in line for line in said)
