"""The same answer on a busy machine (issue 38): comparisons paired round by round, the CPU floor
of a CPU-bound pool, a trial disturbed by other processes measured again, and "tune again on a
quieter machine" only when a quieter measurement could change the answer. Pure decisions on trial
figures shaped like the issue's (a CPU-bound Starman app on 2 cores, 3 ms of CPU per request)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pounder._tune_point import TunePoint
from pounder.pool import PoolParams
from pounder.tune import Target
from pounder.tune._advice import _others_busy
from pounder.tune._points import NEIGHBOUR, aggregate_trials, neighbour_busy, paired_values
from pounder.tune._pools import OfferedLoad, choose_pool, cpu_floor
from pounder.tune._sweep import interleaved

OFFERED = OfferedLoad(connections=8, rate=None, source="--clients", held=False)


def trial(children: int, number: int, rps: float, *, cpu_us: float = 3000.0, other: float = 0.0,
          p99_ms: float | None = None, connections: int = 8, **extra: Any) -> dict[str, Any]:
    """One trial's summary as the session stores it (the figures the decisions read)."""
    elapsed = 2.0
    return {"children": children, "max_requests": 0, "trial": number, "connections": connections, "rate": None,
            "warmed": children, "settled": True, "complete": int(rps * elapsed), "failed": 0, "non_2xx": 0,
            "errors": {}, "elapsed_s": elapsed, "rps": rps, "p50_ms": 5.0, "p95_ms": 10.0,
            "p99_ms": p99_ms if p99_ms is not None else connections / rps * 1000 * 1.5,
            "server_cpu_us": cpu_us, "server_cores": min(children, 2) * 0.95, "client_cores": 0.2,
            "other_cores": other, "front_cores": None, "children_seen_spawned": 0, "max_child_uss": 10 << 20,
            "queued": 1.0, "server_status": None, "respawns": 0, **extra}


def point(children: int, rates: list[float], **figures: Any) -> dict[str, Any]:
    return aggregate_trials([trial(children, n, rps, **figures) for n, rps in enumerate(rates, start=1)])


def test_a_neighbour_that_slowed_one_round_does_not_hide_the_smaller_pools_loss() -> None:
    """Round 2 ran while another process took a core: both pools lost there. Each pool's own
    interval is wide, so unpaired 1 child was "not distinguishably slower" than 2 (the issue's
    1 worker); paired round by round, 1 child is slower in every round."""
    one, two = point(1, [330, 210, 335]), point(2, [520, 300, 530])
    got = choose_pool([one, two], OFFERED, Target(clients=8), tolerance=0.05, cores=2)
    vs = got.point(1).vs_best
    assert vs is not None and vs.pairs == 3 and vs.worse and vs.high is not None and vs.high < 0.95, vs
    assert got.chosen == 2
    assert paired_values(TunePoint.from_dict(one), TunePoint.from_dict(two), "rps") == (
        [330.0, 210.0, 335.0], [520.0, 300.0, 530.0])


def test_a_cpu_bound_pool_is_raised_to_the_children_that_use_the_cores() -> None:
    """1 child, 3 ms of CPU per request, held 3.1 ms: 0.97 of a core each; the rounds disagree (a
    neighbour in two of them) so the intervals cannot tell 1 child from 2: the floor, 2 / 0.97 = 2.1,
    2 children, decides, and the reason says so with its figures."""
    one, two, four = point(1, [320, 250, 330]), point(2, [300, 500, 520]), point(4, [500, 510, 300])
    got = choose_pool([one, two, four], OFFERED, Target(clients=8), tolerance=0.05, cores=2)
    vs = got.point(1).vs_best
    assert vs is not None and vs.worse is False
    assert got.chosen == 2
    floor = got.cpu_floor
    assert floor is not None and floor.children == 2 and floor.at == 1
    assert floor.share == pytest.approx(3000e-6 / (1 / 320), rel=1e-6)
    reason = next(r for r in got.reasons if r.startswith("the children are CPU-bound"))
    assert "a request cost 3.0 ms of the server's CPU and held a child 3.1 ms" in reason
    assert "2 cores need 2 / 0.96 = 2.1, 2 children: 2 children rather than 1" in reason, reason
    assert got.why.startswith("2: the fewest children that keep the server's 2 cores busy")
    # the pod's quota counts as the cores: 1.5 CPUs need 2 children too, 1 CPU one
    assert cpu_floor([one], 1.5) == replace(floor, cores=1.5)
    assert choose_pool([one, two, four], OFFERED, Target(clients=8), tolerance=0.05, cores=1).chosen == 1


def test_the_floor_yields_to_larger_pools_measured_distinguishably_slower() -> None:
    one, two, four = point(1, [330, 328, 332]), point(2, [250, 251, 249]), point(4, [251, 249, 250])
    got = choose_pool([one, two, four], OFFERED, Target(clients=8), tolerance=0.05, cores=2)
    assert got.chosen == 1 and got.cpu_floor is not None and got.cpu_floor.children == 2
    assert any("measured distinguishably slower than the best, so 1 child stays" in r for r in got.reasons)


def test_a_pool_raised_short_of_the_floor_is_not_called_the_smallest_as_good() -> None:
    """3 cores need 3 children; 4 measured distinguishably slower, so 1 child (as good as the best)
    is raised to 2, the largest as good: the deciding fact says the floor raised it, toward 3, not
    "the smallest pool as good as the best" (1 child was as good, the table shows it)."""
    one, two, four = point(1, [320, 250, 330]), point(2, [300, 500, 520]), point(4, [200, 201, 199])
    got = choose_pool([one, two, four], OFFERED, Target(clients=8), tolerance=0.05, cores=3)
    assert got.chosen == 2 and got.cpu_floor is not None and got.cpu_floor.children == 3
    vs = got.point(1).vs_best
    assert vs is not None and not vs.worse
    assert got.why.startswith("2: toward the 3 children that keep the server's 3 cores busy (0.96 of a core each), "
                              "as good as the best at 8 clients: "), got.why
    assert any("2 children rather than 1" in r and "2 is the largest candidate" in r for r in got.reasons)


def test_an_io_bound_pool_has_no_cpu_floor() -> None:
    """0.3 ms of CPU in a 30 ms request: a child uses 1 % of a core; no floor (it would be 200)."""
    points = [point(n, [n / 0.030] * 3, cpu_us=300.0, connections=32) for n in (8, 16, 32)]
    assert cpu_floor(points, 2) is None
    # a point where children sat idle (queue rarely held) is not where a child's busy time is measured
    idle = aggregate_trials([trial(1, n, 300, queued=0.2) for n in (1, 2, 3)])
    assert cpu_floor([idle], 2) is None


def test_tune_again_is_said_only_when_a_quieter_measurement_could_change_the_answer() -> None:
    # 2 children's median is 10 % under 4's, the rounds too scattered to tell: a quieter run could
    wide = [point(2, [450, 330, 560], cpu_us=1000.0), point(4, [500, 400, 530], cpu_us=1000.0)]
    got = choose_pool(wide, OFFERED, Target(clients=8), tolerance=0.05, cores=2)
    assert got.chosen == 2
    said = [r for r in got.reasons if "tune again on a quieter machine" in r]
    assert len(said) == 1 and said[0].endswith("to decide between 2 and 4 children"), got.reasons
    assert "could change the answer to a larger pool" in said[0]
    # wide intervals, but the chosen's median is the best's: no quieter run would change it
    level = [point(2, [500, 330, 560], cpu_us=1000.0), point(4, [505, 400, 520], cpu_us=1000.0)]
    got = choose_pool(level, OFFERED, Target(clients=8), tolerance=0.05, cores=2)
    assert got.chosen == 2 and not any("tune again" in r for r in got.reasons), got.reasons
    assert "see Details" not in got.why


def test_a_trial_with_a_busy_neighbour_is_measured_again_in_its_round() -> None:
    """Round 2 of 2 children had other processes on 0.9 of 2 cores: measured again at once (before
    round 2 of 4 children), both kept, the first left out of the figures and named."""
    calls: list[tuple[str, int, bool]] = []
    rates = {("pool-2", 2, False): 200.0}

    def measure(key: str, params: PoolParams, connections: int, number: int, label: str,
                again: bool) -> dict[str, Any]:
        calls.append((key, number, again))
        busy = (key, number, again) == ("pool-2", 2, False)
        summary = trial(params.max_clients, number, rates.get((key, number, again), 500.0 + number),
                        other=0.9 if busy else 0.1)
        summary["neighbour"] = neighbour_busy(summary, 2)
        return {**summary, **({"again": True} if again else {})}

    plan = [("pool-2", PoolParams(2), 8, "2 children"), ("pool-4", PoolParams(4), 8, "4 children")]
    two, four = interleaved(plan, 3, measure)
    assert calls == [("pool-2", 1, False), ("pool-4", 1, False), ("pool-2", 2, False), ("pool-2", 2, True),
                     ("pool-4", 2, False), ("pool-2", 3, False), ("pool-4", 3, False)]
    assert two["neighbours"] == [2] and two["counted"] == 3 and len(two["trials"]) == 4
    assert two["rps"] == 502.0  # the disturbed 200 req/s is not in the median
    assert "neighbours" not in four
    assert paired_values(TunePoint.from_dict(two), TunePoint.from_dict(four), "rps") == (
        [501.0, 502.0, 503.0], [501.0, 502.0, 503.0])
    said = _others_busy(TunePoint.from_dict(two), 2)
    assert said == ("other processes on this machine (neither the server nor pounder) took 0.9 of 2 cores during "
                    "trial 2, that trial measured again and left out of the figures (at 2 children): a neighbour's "
                    "share of the CPU, not the application's; 0.1 in the trials counted")
    # busy in the trials counted too: their share is the limit and the noise, named with the figures
    busy = aggregate_trials([trial(2, n, 300.0, other=0.7) for n in (1, 2, 3)])
    said = _others_busy(TunePoint.from_dict(busy), 2)
    assert said is not None and said.startswith("other processes on this machine (neither the server nor pounder) "
                                                "took 0.7 of 2 cores at 2 children: that is a neighbour's share")
    assert "quiet machine" not in said


def test_the_neighbour_threshold_is_a_quarter_of_the_servers_cores() -> None:
    assert NEIGHBOUR == 0.25
    assert not neighbour_busy({"other_cores": 0.5}, 2) and neighbour_busy({"other_cores": 0.51}, 2)
    assert neighbour_busy({"other_cores": 0.4}, 1.5) and not neighbour_busy({"other_cores": None}, 2)
    # a neighbour trial with no re-measure (results of earlier versions) counts as it did
    alone = aggregate_trials([trial(2, 1, 500, neighbour=True), trial(2, 2, 510)])
    assert alone["counted"] == 2 and "neighbours" not in alone
