"""Pools compared at the same offered load (pure, no I/O).

The memory bound is the most children the machine can hold, not a measurement of what serves
best, and the children sweep (each count at twice its own concurrency) finds where more children
stop adding throughput, not how a pool does at the load it is for. So candidate pools are measured
*at the same offered load* (the classic tables vary MaxClients and concurrency independently):

* the offered load (:func:`offered_load`): ``--clients``; a peak rate (``--peak-rate`` or an access
  log's busiest second) sent open loop; with no target, as many concurrent clients as the memory
  bound holds (capped by ``--max-children``);
* the candidates (:func:`pool_candidates`): from the knee or the target's own need, whichever is
  smaller (Little's law for a rate), a few sizes between spaced evenly on a log scale, to the
  largest pool allowed (the memory bound, capped; in a closed loop never more than the clients,
  who cannot keep more busy);
* the choice (:func:`choose_pool`): the smallest candidate whose throughput is not
  distinguishably below the best's (the bootstrap interval of the ratio of their trials' medians,
  :func:`pounder.compare.ratio_interval`, with the sweep's tolerance as the smallest effect) and
  whose p99 meets ``--p99``, or, without one, is not distinguishably above the lowest p99
  measured (:data:`P99_EFFECT`);
* the CPU floor (:func:`cpu_floor`): a CPU-bound pool (a child spends at least :data:`CPU_BOUND` of
  the time it holds a request on the CPU) is never smaller than the children needed to use the
  server's cores, cores / that share to the nearest child, unless every candidate that large
  measured distinguishably slower than the best. Noise from other processes widens the intervals and
  can leave the smallest pool "not distinguishably slower" while it cannot use the cores: the CPU
  a request costs and the share of a child's time it takes are what say so.

When every connection holds a child (slow or kept-alive clients with no buffering proxy in
front), a pool smaller than the connections leaves clients waiting by construction: the pool
covers the connections, as :func:`~pounder.tune._analysis.size_pool` decides, and no comparison
is made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pounder._figures import WIDE
from pounder._records import Record
from pounder._stats import MIN_SAMPLES
from pounder._tune_point import Points, TunePoint, Versus, present, tune_points
from pounder._tune_run import OfferedLoad, Target
from pounder._units import children_text, count_text
from pounder.compare import paired_ratio_interval, ratio_interval
from pounder.tune._analysis import ChildrenChoice, busy_seconds
from pounder.tune._memory import MemoryBound
from pounder.tune._points import busy_measured, paired_values, trial_values
from pounder.tune._text import (
    change_text,
    ms_text,
    rate_with_interval,
)

P99_EFFECT = 0.10
"""A p99 within this fraction of the lowest p99 measured is as good (latency is noisier than
throughput)."""
BETWEEN = 2
"""Candidate sizes measured between the knee and the largest pool (1 with ``--quick``)."""
OPEN_LOOP_CONNECTIONS = 16
"""At least this many connections in flight for an open-loop offered load."""

CPU_BOUND = 0.5
"""A child spending at least this share of the time it holds a request on the CPU is CPU-bound."""



def offered_load(target: Target, memory: MemoryBound, max_children: int) -> OfferedLoad:
    """The offered load of :func:`choose_pool` (module documentation)."""
    hard = max(1, min(memory.max_clients, max_children))
    held = not target.proxy
    if target.clients is not None:
        return OfferedLoad(connections=target.clients, rate=None, source="--clients", held=held)
    if target.peak_rate is not None:
        return OfferedLoad(connections=max(2 * hard, OPEN_LOOP_CONNECTIONS), rate=target.peak_rate,
                           source=target.source, held=held)
    which = ("the most the memory bound holds" if memory.max_clients <= max_children
             else f"the most --max-children {max_children} allows")
    return OfferedLoad(connections=hard, rate=None, source=f"no target given: as many clients as children, {which}",
                       held=held)


def pool_candidates(knee: int, offered: OfferedLoad, memory: MemoryBound, max_children: int, *,
                    needs: Sequence[int] = (), between: int = BETWEEN) -> list[int]:
    """The pools compared at the offered load (module documentation), smallest first."""
    hard = max(1, min(memory.max_clients, max_children))
    upper = hard if offered.rate is not None else min(hard, max(1, offered.connections))
    low = max(1, min(knee, upper, *needs))
    found = {low, upper, *(n for n in needs if low <= n <= upper)}
    if upper > low:
        for step in range(1, between + 1):
            found.add(round(low * (upper / low) ** (step / (between + 1))))
    return sorted(found)


SWEPT_NOTE = ("the children sweep measured these pools at the offered load, {}, in interleaved trials: compared as "
              "measured")
"""The first reason of pools taken from the sweep (:func:`swept_at_offered`)."""


def swept_at_offered(candidates: Sequence[int], sweep: Points, offered: OfferedLoad,
                     needs: Sequence[int] = ()) -> list[TunePoint] | None:
    """The children sweep's own points to compare, when it measured the pools at the offered load
    already (closed loop, at every count the clients given: its trials interleaved over every
    count): every count it measured from the smallest candidate to the largest, with ``needs`` among
    them. None when one of those is missing (the candidates are then measured at the offered load)."""
    if offered.rate is not None or not candidates:
        return None
    at = {p.children: p for p in tune_points(sweep, "sweep") if p.connections == offered.connections}
    low, high = min(candidates), max(candidates)
    wanted = [n for n in needs if low <= n <= high]
    if low not in at or high not in at or any(n not in at for n in wanted):
        return None
    return [at[n] for n in sorted(at) if low <= n <= high]


def versus(ours_point: TunePoint, theirs_point: TunePoint, key: str, *, higher_is_better: bool,
          effect: float) -> Versus:
    """A point's ``key`` against another's: the ratio, its interval and whether ours is
    distinguishably worse. Paired round by round when both counted at least 2 of the same rounds
    (:func:`pounder.compare.paired_ratio_interval`: the trials of a round ran back to back), else the
    ratio of the medians (:func:`pounder.compare.ratio_interval`); ``pairs`` says how many rounds were
    paired (None: unpaired). Without an interval, worse when the ratio is beyond ``effect``. The
    record of the comparison keeps its document, written as it is."""
    ours, theirs = trial_values(ours_point, key), trial_values(theirs_point, key)
    if not ours or not theirs:  # a pool with no counted trial: no figure to compare
        return Versus.from_dict({"ratio": None, "low": None, "high": None, "verdict": "unknown", "worse": not ours,
                                 "pairs": None})
    mine, base = paired_values(ours_point, theirs_point, key)
    pairs: int | None = len(mine) if len(mine) >= MIN_SAMPLES and min(base) > 0 else None
    if pairs is not None:
        estimate = paired_ratio_interval(mine, base, higher_is_better=higher_is_better, min_effect=effect)
    else:
        estimate = ratio_interval(ours, theirs, higher_is_better=higher_is_better, min_effect=effect)
    ratio = estimate.ratio
    if ratio is None:
        middle = sorted(theirs)[len(theirs) // 2] if theirs else 0.0
        ratio = sorted(ours)[len(ours) // 2] / middle if ours and middle > 0 else None
    if estimate.verdict == "unknown":
        worse = ratio is not None and (ratio < 1 - effect if higher_is_better else ratio > 1 + effect)
    else:
        worse = estimate.verdict == "slower"
    return Versus.from_dict({"ratio": ratio, "low": estimate.low, "high": estimate.high, "verdict": estimate.verdict,
                             "worse": worse, "pairs": pairs})


@dataclass(frozen=True)
class CpuFloor(Record):
    """The fewest ``children`` that use ``cores`` when the children are CPU-bound (:func:`cpu_floor`):
    a busy child uses ``share`` of a core, measured ``at`` that many children and ``connections``
    clients, where a request cost ``cpu_us`` of the server's CPU and held a child ``busy_ms``."""

    children: int
    share: float
    cpu_us: float
    busy_ms: float
    at: int
    connections: int
    cores: float


@dataclass(frozen=True)
class PoolChoice:
    """The pool chosen at the offered load: ``chosen`` children (``best`` served the most,
    ``lowest_p99`` had the lowest p99), ``points`` the candidates' records with ``vs_best`` (throughput
    against the best) and ``p99_vs_lowest`` (p99 against the lowest), ``why`` the deciding fact in
    one line and ``reasons`` the details."""

    offered: OfferedLoad
    chosen: int
    best: int
    lowest_p99: int
    p99_met: bool | None
    points: tuple[TunePoint, ...]
    why: str
    reasons: list[str] = field(default_factory=list)
    cpu_floor: CpuFloor | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"offered": self.offered.to_dict(), "chosen": self.chosen, "best": self.best,
                "lowest_p99": self.lowest_p99, "p99_met": self.p99_met, "points": [p.to_dict() for p in self.points],
                "why": self.why, "reasons": list(self.reasons),
                "cpu_floor": None if self.cpu_floor is None else self.cpu_floor.to_dict()}

    def point(self, children: int) -> TunePoint:
        """The candidate of ``children`` (``best``, ``chosen``: one of the points)."""
        return next(p for p in self.points if p.children == children)


def p99_with_interval(point: TunePoint) -> str:
    """``p99 12.5 ms (11.0-14.1)``: a point's median p99 and its 95 % interval, as the tables print it."""
    p99, low, high = point.p99_ms, point.p99_low, point.p99_high
    if p99 is None:
        return "no request answered cleanly"
    text = f"p99 {ms_text(p99)} ms"
    return text if low is None or high is None else f"{text} ({ms_text(low)}-{ms_text(high)})"


def _against(vs: Versus | None) -> str:
    if vs is None or vs.ratio is None:
        raise TypeError("no ratio to the best")  # a marked point not distinguishably slower has one
    text = change_text(vs.ratio)
    if vs.low is not None and vs.high is not None:
        text += f" ({change_text(vs.low)} to {change_text(vs.high)})"
    return text


def _point_text(point: TunePoint) -> str:
    return f"{children_text(point.children)}: {rate_with_interval(point)}, {p99_with_interval(point)}"


def _worse(vs: Versus | None) -> bool:
    """Whether a marked point measured distinguishably worse (``vs``: its ``vs_best`` or ``p99_vs_lowest``)."""
    return bool(vs is not None and vs.worse)


def cpu_floor(points: Points, cores: float) -> CpuFloor | None:
    """The fewest children that use ``cores`` when the children are CPU-bound (module
    documentation), from the point
    whose children spent the largest share of their busy time on the CPU (the least disturbed: CPU
    queued behind other processes counts as busy time, never as CPU), among the points whose busy
    time is the time itself (every child busy: :func:`pounder.tune._points.busy_measured`, or a closed
    loop with more clients than children in results that did not sample the queue). None when no
    point tells, or the children are not CPU-bound."""
    best: tuple[float, TunePoint, float] | None = None
    for point in tune_points(points, "points"):
        cpu_us, measured = point.server_cpu_us, busy_measured(point)
        if cpu_us is None or not point.rps or measured is False or (point.counted is not None and point.counted < 1):
            continue
        if measured is None and (point.rate is not None or point.connections <= point.children):
            continue
        busy = busy_seconds(point)
        share = cpu_us / 1e6 / busy if busy > 0 else 0.0
        if best is None or share > best[0]:
            best = (share, point, busy)
    if best is None or best[0] < CPU_BOUND:
        return None
    share, at, busy = best
    return CpuFloor(children=max(1, math.floor(cores / share + 0.5)), share=share, cpu_us=present(at.server_cpu_us),
                    busy_ms=busy * 1000, at=at.children, connections=at.connections, cores=cores)


def _floor_text(floor: CpuFloor) -> str:
    share, cores = floor.share, float(floor.cores)
    return (f"the children are CPU-bound: with {children_text(floor.at)} at "
            f"{count_text(floor.connections, 'client')} a request cost "
            f"{ms_text(floor.cpu_us / 1000)} ms of the server's CPU and held a child "
            f"{ms_text(floor.busy_ms)} ms, so a busy child uses "
            f"{share:.2f} of a core, and {cores:g} cores need {cores:g} / {share:.2f} = {cores / share:.1f}, "
            f"{children_text(floor.children)}")


def _raised(marked: Sequence[TunePoint], chosen: TunePoint, floor: CpuFloor | None,
            limit_ms: float | None) -> tuple[TunePoint, str | None]:
    """``chosen`` raised to the CPU floor: the smallest candidate at least that large not
    distinguishably slower than the best (meeting ``--p99`` when the chosen did); the reason when
    the floor decides or is not followed."""
    n = chosen.children
    if floor is None or n >= floor.children:
        return chosen, None
    wanted = floor.children
    larger = [p for p in marked if p.children > n]
    fit = [p for p in larger if not _worse(p.vs_best)
           and (limit_ms is None or present(chosen.p99_ms) > limit_ms or present(p.p99_ms) <= limit_ms)]
    slower = [p for p in larger if _worse(p.vs_best)]
    at_least = [p for p in fit if p.children >= wanted]
    if not at_least and not fit:
        return chosen, (f"{_floor_text(floor)}; but {', '.join(_point_text(p) for p in slower)} measured "
                        f"distinguishably slower than the best, so {children_text(n)} stays") if slower else None
    raised = at_least[0] if at_least else max(fit, key=lambda p: p.children)
    m = raised.children
    short = "" if m >= wanted else (
        f" ({m} is the largest candidate not distinguishably slower"
        + (f"; {', '.join(_point_text(p) for p in slower)} measured distinguishably slower" if slower else "") + ")")
    return raised, (f"{_floor_text(floor)}: {children_text(m)} rather than {n}, which the intervals alone could not "
                    f"tell from the best ({rate_with_interval(chosen)}) but which cannot keep the cores busy: "
                    f"{n} x {floor.share:.2f} = {n * floor.share:.1f} of {float(floor.cores):g} "
                    f"cores{short}")


def choose_pool(points: Points, offered: OfferedLoad, target: Target, *, tolerance: float,
                cores: float, sweep: Points = ()) -> PoolChoice:
    """The smallest pool as good as the best at the offered load, never under the CPU floor of
    ``cores`` (the server's cores: the CPUs it runs on, or its quota) measured on these points and
    the children sweep's (module documentation)."""
    ordered = sorted(tune_points(points, "points"), key=lambda p: p.children)
    answered = [p for p in ordered if (p.counted or 0) > 0 and p.p99_ms is not None] or ordered[:1]
    best = max(answered, key=lambda p: p.rps)  # the first (smallest) of equal ones
    marked: list[TunePoint] = []
    for point in ordered:
        vs = versus(point, best, "rps", higher_is_better=True, effect=tolerance)
        marked.append(replace(point, vs_best=replace(vs, worse=vs.worse or point not in answered)))
    fast = [p for p in marked if not _worse(p.vs_best)] or [marked[ordered.index(best)]]
    # the p99 is held against the lowest of the pools as fast as the best: a slow pool's low p99
    # says nothing about the others
    lowest = min(fast, key=lambda p: p.p99_ms if p.p99_ms is not None else math.inf)
    marked = [replace(p, p99_vs_lowest=versus(p, lowest, "p99_ms", higher_is_better=False, effect=P99_EFFECT))
              for p in marked]
    fast = [p for p in marked if any(p.children == f.children for f in fast)]
    lowest = next(p for p in marked if p.children == lowest.children)
    limit_ms = None if target.p99_s is None else target.p99_s * 1000
    p99_met: bool | None = None
    if limit_ms is not None:
        meeting = [p for p in fast if present(p.p99_ms) <= limit_ms]
        p99_met = bool(meeting)
    if limit_ms is not None and meeting:
        chosen = meeting[0]
        latency = f"its p99 meets --p99 {ms_text(limit_ms)} ms"
    else:
        calm = [p for p in fast if not _worse(p.p99_vs_lowest)]
        chosen = calm[0] if calm else lowest
        latency = "its p99 is not distinguishably above the lowest of the pools as fast"
    floor = cpu_floor([*sweep, *points], cores)
    unraised = chosen
    chosen, floor_reason = _raised(marked, chosen, floor, limit_ms)
    if floor_reason is not None and _worse(chosen.p99_vs_lowest) and limit_ms is None:
        latency = "its p99 is distinguishably above the lowest of the pools as fast, and the CPU floor below decides"
    n, best_n, low_n = chosen.children, best.children, lowest.children
    load = offered.text()
    if n == best_n:
        how = "the most throughput measured there"
    else:
        how = (f"{_against(chosen.vs_best)} against the best, {children_text(best_n)} "
               f"({rate_with_interval(best)}): not distinguishably slower")
    head = _head(n, len(marked), offered, limit_ms, p99_met, floor if chosen is not unraised else None)
    undecided = _undecided(marked, chosen, best, tolerance)
    why = (f"{head}: {rate_with_interval(chosen)}, "
           f"{p99_with_interval(chosen)}" + ("" if n == best_n else
                                             f" (the best: {children_text(best_n)}, {rate_with_interval(best)})")
           + (" - the machine was noisy (wide intervals): see Details" if undecided else ""))
    reasons = [f"pools compared at the same offered load, {load}, in interleaved trials: {children_text(n)} served "
               f"{rate_with_interval(chosen)}, {how}; {latency} ({p99_with_interval(chosen)}; the lowest: "
               f"{children_text(low_n)}, {p99_with_interval(lowest)})"]
    if limit_ms is not None and not p99_met:
        reasons.append(f"--p99 {ms_text(limit_ms)} ms is met by no pool as fast as the best at this load")
    if floor_reason is not None:
        reasons.append(floor_reason)
    others = [p for p in marked if p.children != n]
    if others:
        reasons.append("the others at the same load: " + "; ".join(
            f"{_point_text(p)} ({'distinguishably slower' if _worse(p.vs_best) else 'not distinguishably slower'}"
            f"{', p99 distinguishably higher' if _worse(p.p99_vs_lowest) else ''})" for p in others))
    noise = _noise_reason(marked, chosen, undecided, tolerance)
    if noise is not None:
        reasons.append(noise)
    bigger = [p for p in marked if p.children > n]
    if bigger and offered.rate is None and offered.connections > n and not _worse(chosen.p99_vs_lowest) \
            and limit_ms is None:
        reasons.append(f"with {children_text(n)} the other {offered.connections - n:,} connections wait in the listen "
                       "queue for a free child, and that wait is in the p99 above: more children served no more, "
                       "no sooner, within the intervals")
    return PoolChoice(offered=offered, chosen=n, best=best_n, lowest_p99=low_n, p99_met=p99_met, points=tuple(marked),
                      why=why, reasons=reasons, cpu_floor=floor)


def _head(n: int, candidates: int, offered: OfferedLoad, limit_ms: float | None, p99_met: bool | None,
          floor: CpuFloor | None) -> str:
    """The deciding fact's opening: the pool and the rule that chose it (``floor``: the CPU floor raised
    it, to the floor or, when no candidate that large was as good as the best, toward it)."""
    if floor is not None and n >= floor.children:
        return (f"{n}: the fewest children that keep the server's {float(floor.cores):g} cores busy "
                f"({floor.share:.2f} of a core each), as good as the best at {offered.short()}")
    if floor is not None:  # a smaller pool was as good: not "the smallest pool as good as the best"
        return (f"{n}: toward the {floor.children:,} children that keep the server's "
                f"{float(floor.cores):g} cores busy ({floor.share:.2f} of a core each), as good as the "
                f"best at {offered.short()}")
    if candidates == 1:
        return f"{n}: the only candidate at {offered.short()} (the knee and the largest pool allowed coincide)"
    if limit_ms is not None and p99_met:
        return (f"{n}: the smallest pool as fast as the best whose p99 meets --p99 {ms_text(limit_ms)} ms at "
                f"{offered.short()}")
    if limit_ms is not None:
        return (f"{n}: --p99 {ms_text(limit_ms)} ms met by no pool as fast as the best; the smallest pool as good as "
                f"the best at {offered.short()}")
    return f"{n}: the smallest pool as good as the best at {offered.short()}"


def _noise_reason(marked: Sequence[TunePoint], chosen: TunePoint, undecided: Sequence[int],
                  tolerance: float) -> str | None:
    """What the noise did to the choice: "tune again on a quieter machine" only when a quieter
    measurement could change it (``undecided``: the pools it would have to tell apart), else that
    the wide intervals do not matter; None when no interval stayed wide and nothing is undecided."""
    n = chosen.children
    wide = [p.children for p in marked if p.wide]
    noisy = (f"the interval of {children_text(wide[0])} stayed" if len(wide) == 1 else
             f"the intervals of {', '.join(f'{w:,}' for w in wide)} children stayed") + \
        f" wider than ±{WIDE:.0%} after a re-measure"
    if undecided:
        told = [p for p in marked if p.children in undecided]
        return (f"{noisy + ': the machine was noisy; ' if wide else ''}{children_text(n)} is chosen because the "
                f"intervals do not tell it from the best, though its median is {_against(chosen.vs_best)} against "
                f"it: a quieter measurement that told {' and '.join(_point_text(p) for p in told)} apart could change "
                f"the answer to a larger pool; tune again on a quieter machine to decide between "
                f"{_counts(undecided)} children")
    if wide:
        return (f"{noisy} (the machine was noisy), but {children_text(n)}'s median is within {tolerance:.0%} of the "
                "best's: a quieter measurement would not change the answer")
    return None


def _undecided(marked: Sequence[TunePoint], chosen: TunePoint, best: TunePoint, tolerance: float) -> list[int]:
    """The pools a quieter measurement would have to tell apart for the answer to change: the
    chosen and every pool up to the best that the intervals could not tell from the best although
    its median is more than ``tolerance`` below it (told apart, the answer would be a larger pool);
    empty when the chosen's own median is within ``tolerance`` of the best's (or it is the best)."""
    def unsure(point: TunePoint) -> bool:
        vs = point.vs_best
        return vs is not None and not vs.worse and vs.ratio is not None and vs.ratio < 1 - tolerance

    n, best_n = chosen.children, best.children
    if n >= best_n or not unsure(chosen):
        return []
    return [p.children for p in marked if n <= p.children <= best_n and (unsure(p) or p.children == best_n)]


def _counts(counts: Sequence[int]) -> str:
    return ", ".join(f"{c:,}" for c in counts[:-1]) + f" and {counts[-1]:,}" if len(counts) > 1 else f"{counts[0]:,}"


def needs(choice: ChildrenChoice) -> list[int]:
    """What the target itself asks for (``--clients``, Little's law for a rate, ``--p99`` in the
    sweep): sizes worth a candidate."""
    return [n for n in (choice.for_clients, choice.for_rate, choice.for_p99) if n is not None]


def apply_pool(choice: ChildrenChoice, pools: PoolChoice) -> ChildrenChoice:
    """``choice`` with the pool chosen at the offered load (``decided_by`` "offered-load")."""
    return replace(choice, chosen=pools.chosen, decided_by="offered-load",
                               reasons=[*choice.reasons, *pools.reasons])


def between_for(quick: bool) -> int:
    """Candidate sizes between the knee and the largest pool: fewer with ``--quick``."""
    return 1 if quick else BETWEEN
