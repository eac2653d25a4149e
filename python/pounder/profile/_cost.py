"""What profiling cost, from the interleaved rounds (pure functions).

Each round holds an unprofiled and a profiled trial of the same load, run one right after the
other, so a round's ratio (profiled / unprofiled) compares like with like whatever the machine did
in other rounds. The figure is the median of the rounds' ratios with their range; whether the
rounds *tell* a cost is a one-sided sign test: a profiler can only add work, so under "no cost"
each round is as likely to come out cheaper as dearer, and a cost is told only when the rounds
that came out dearer are more than chance would give in 1 of 20 runs (5 of 5, 7 of 8, 9 of 10:
:func:`needed`). A round counts only when both its trials are whole: every request answered (none
failed) and not cut short by a signal; the others are listed as left out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

SIGNIFICANCE = 0.05
"""A cost is told when the one-sided sign test's p-value is below this."""


@dataclass(frozen=True)
class CostFigure:
    """One figure's cost over the counted rounds: ``ratio`` the median of the rounds' profiled /
    unprofiled ratios, ``low`` and ``high`` the smallest and largest; ``costly`` the rounds where
    profiling made it worse (fewer requests/s, a longer p50); ``p_value`` the one-sided sign test's
    (None without a round); ``told``: the rounds show a cost (``p_value`` < :data:`SIGNIFICANCE`)."""

    ratio: float | None
    low: float | None
    high: float | None
    rounds: int
    costly: int
    p_value: float | None
    told: bool


@dataclass(frozen=True)
class ProfilerCost:
    """The profiler's cost on requests/s (``throughput``: profiled / unprofiled, below 1 is a cost)
    and on the p50 latency (``p50``: above 1 is a cost), and the rounds ``left_out`` (why, one
    sentence each)."""

    throughput: CostFigure
    p50: CostFigure
    left_out: tuple[str, ...] = ()


def sign_test(costly: int, rounds: int) -> float:
    """P(at least ``costly`` of ``rounds`` fair coin flips come up "costly")."""
    return float(sum(math.comb(rounds, k) for k in range(costly, rounds + 1))) / float(2**rounds)


def needed(rounds: int) -> int | None:
    """The fewest dearer rounds of ``rounds`` that tell a cost (5 of 5, 7 of 8, 9 of 10), None when
    no count can (fewer than 5 rounds)."""
    return next((k for k in range(rounds + 1) if sign_test(k, rounds) < SIGNIFICANCE), None)


def cost_figure(ratios: Sequence[float], *, higher_is_costly: bool) -> CostFigure:
    """The figure of the rounds' ``ratios`` (profiled / unprofiled)."""
    if not ratios:
        return CostFigure(None, None, None, 0, 0, None, False)
    costly = sum(1 for r in ratios if (r > 1 if higher_is_costly else r < 1))
    p_value = sign_test(costly, len(ratios))
    return CostFigure(statistics.median(ratios), min(ratios), max(ratios), len(ratios), costly, p_value,
                      p_value < SIGNIFICANCE)  # fmt: skip


class RoundTrial(Protocol):
    """What the cost reads of one trial (a :class:`~pounder.profile.ProfileTrial`)."""

    @property
    def round(self) -> int: ...
    @property
    def profiled(self) -> bool: ...
    @property
    def complete(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def requests_per_s(self) -> float: ...
    @property
    def p50_us(self) -> int: ...
    @property
    def whole(self) -> bool: ...


def counted_rounds(trials: Sequence[RoundTrial]) -> tuple[list[tuple[RoundTrial, RoundTrial]], list[str]]:
    """(the counted rounds' (unprofiled, profiled) trials; why each other round was left out)."""
    pairs = []
    left_out = []
    for number in sorted({t.round for t in trials}):
        pair = {t.profiled: t for t in trials if t.round == number}
        why = _why_left_out(pair.get(False), pair.get(True))
        if why:
            left_out.append(f"round {number}: {why}")
        else:
            pairs.append((pair[False], pair[True]))
    return pairs, left_out


def profiler_cost(trials: Sequence[RoundTrial]) -> ProfilerCost:
    """The cost from the trials of a run, round by round (see the module's docstring)."""
    pairs, left_out = counted_rounds(trials)
    rps = [on.requests_per_s / off.requests_per_s for off, on in pairs if off.requests_per_s > 0]
    p50 = [on.p50_us / off.p50_us for off, on in pairs if off.p50_us > 0]
    return ProfilerCost(cost_figure(rps, higher_is_costly=False), cost_figure(p50, higher_is_costly=True),
                        tuple(left_out))  # fmt: skip


def _why_left_out(off: RoundTrial | None, on: RoundTrial | None) -> str | None:
    if off is None or on is None:
        return "cut short before both its trials ran"
    for trial, name in ((off, "unprofiled"), (on, "profiled")):
        if not trial.whole:
            return f"its {name} trial was cut short"
        if trial.failed:
            return f"{trial.failed:,} requests of its {name} trial failed"
        if not trial.complete:
            return f"no request of its {name} trial completed"
        nowhere = getattr(trial, "nowhere", None)  # a ProfileTrial's (pounder.results.load_failure)
        if nowhere is not None:
            return f"its {name} trial got nowhere ({nowhere})"
    return None
