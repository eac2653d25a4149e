"""The profiler's cost from the rounds (pure): each round's profiled / unprofiled ratio, a cost told
only by a one-sided sign test, never a speed-up; rounds with a failed or cut-short trial left out
and named."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pounder.profile import profiler_cost, sign_test


@dataclass(frozen=True)
class T:
    round: int
    profiled: bool
    requests_per_s: float
    p50_us: int = 1000
    complete: int = 100
    failed: int = 0
    whole: bool = True


def _rounds(*pairs: tuple[float, float]) -> list[T]:
    """(unprofiled req/s, profiled req/s) per round."""
    return [t for n, (off, on) in enumerate(pairs, 1) for t in (T(n, False, off), T(n, True, on))]


def test_the_sign_test() -> None:
    assert sign_test(5, 5) == pytest.approx(1 / 32)
    assert sign_test(0, 5) == 1.0
    assert sign_test(4, 5) == pytest.approx(6 / 32)


def test_five_rounds_all_dearer_tell_a_cost_with_the_median_and_range() -> None:
    cost = profiler_cost(_rounds((100, 90), (100, 80), (110, 99), (90, 81), (100, 95)))
    figure = cost.throughput
    assert figure.told and figure.rounds == 5 and figure.costly == 5
    assert figure.ratio == pytest.approx(0.9)
    assert figure.low == pytest.approx(0.8) and figure.high == pytest.approx(0.95)
    assert not cost.p50.told and cost.left_out == ()


def test_three_rounds_never_tell_and_a_speed_up_is_never_a_finding() -> None:
    assert not profiler_cost(_rounds((100, 50), (100, 50), (100, 50))).throughput.told  # p = 1/8
    faster = profiler_cost(_rounds(*[(100, 120)] * 8)).throughput
    assert faster.ratio == pytest.approx(1.2) and faster.costly == 0 and not faster.told


def test_a_round_with_a_failed_or_cut_short_trial_is_left_out_and_named() -> None:
    trials = _rounds((100, 90), (100, 90), (100, 90))
    trials[1] = T(1, True, 90, failed=2)
    trials[4] = T(3, False, 100, whole=False)
    cost = profiler_cost(trials)
    assert cost.throughput.rounds == 1
    assert cost.left_out == ("round 1: 2 requests of its profiled trial failed",
                             "round 3: its unprofiled trial was cut short")
    half = _rounds((100, 90), (100, 90))[:3]
    assert profiler_cost(half).left_out == ("round 2: cut short before both its trials ran",)
