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
  measured (:data:`P99_EFFECT`).

When every connection holds a child (slow or kept-alive clients with no buffering proxy in
front), a pool smaller than the connections leaves clients waiting by construction: the pool
covers the connections, as :func:`~pounder.tune._analysis.size_pool` decides, and no comparison
is made.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pounder._figures import WIDE
from pounder._stats import MIN_SAMPLES
from pounder._units import children_text, count_text
from pounder.compare import paired_ratio_interval, ratio_interval
from pounder.tune._analysis import (
    ChildrenChoice,
    MemoryBound,
    Target,
)
from pounder.tune._points import paired_values, trial_values
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

Summary = Mapping[str, Any]


@dataclass(frozen=True)
class OfferedLoad:
    """The load the pool is for: ``connections`` concurrent clients (closed loop), or ``rate``
    requests per second sent open loop with at most ``connections`` in flight. ``source`` says
    where it comes from; ``held``: every connection holds a child (no buffering proxy)."""

    connections: int
    rate: float | None
    source: str
    held: bool

    def short(self) -> str:
        """``64 clients`` / ``200 req/s``."""
        return f"{self.rate:,.6g} req/s" if self.rate is not None else count_text(self.connections, "client")

    def text(self) -> str:
        return f"{self.short()} ({self.source})"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def swept_at_offered(candidates: Sequence[int], sweep: Sequence[Summary], offered: OfferedLoad,
                     needs: Sequence[int] = ()) -> list[Summary] | None:
    """The children sweep's own points to compare, when it measured the pools at the offered load
    already (closed loop, at every count the clients given: its trials interleaved over every
    count): every count it measured from the smallest candidate to the largest, with ``needs`` among
    them. None when one of those is missing (the candidates are then measured at the offered load)."""
    if offered.rate is not None or not candidates:
        return None
    at = {int(p["children"]): p for p in sweep if int(p["connections"]) == offered.connections}
    low, high = min(candidates), max(candidates)
    wanted = [n for n in needs if low <= n <= high]
    if low not in at or high not in at or any(n not in at for n in wanted):
        return None
    return [at[n] for n in sorted(at) if low <= n <= high]


def _versus(ours_point: Summary, theirs_point: Summary, key: str, *, higher_is_better: bool,
            effect: float) -> dict[str, Any]:
    """A point's ``key`` against another's: the ratio, its interval and whether ours is
    distinguishably worse. Paired round by round when both counted at least 2 of the same rounds
    (:func:`pounder.compare.paired_ratio_interval`: the trials of a round ran back to back), else the
    ratio of the medians (:func:`pounder.compare.ratio_interval`); ``pairs`` says how many rounds were
    paired (None: unpaired). Without an interval, worse when the ratio is beyond ``effect``."""
    ours, theirs = trial_values(ours_point, key), trial_values(theirs_point, key)
    if not ours or not theirs:  # a pool with no counted trial: no figure to compare
        return {"ratio": None, "low": None, "high": None, "verdict": "unknown", "worse": not ours, "pairs": None}
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
    return {"ratio": ratio, "low": estimate.low, "high": estimate.high, "verdict": estimate.verdict, "worse": worse,
            "pairs": pairs}


@dataclass(frozen=True)
class PoolChoice:
    """The pool chosen at the offered load: ``chosen`` children (``best`` served the most,
    ``lowest_p99`` had the lowest p99), ``points`` the candidates with ``vs_best`` (throughput
    against the best) and ``p99_vs_lowest`` (p99 against the lowest), ``why`` the deciding fact in
    one line and ``reasons`` the details."""

    offered: OfferedLoad
    chosen: int
    best: int
    lowest_p99: int
    p99_met: bool | None
    points: list[dict[str, Any]]
    why: str
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"offered": self.offered.to_dict(), "chosen": self.chosen, "best": self.best,
                "lowest_p99": self.lowest_p99, "p99_met": self.p99_met, "points": [dict(p) for p in self.points],
                "why": self.why, "reasons": list(self.reasons)}


def p99_with_interval(point: Summary) -> str:
    """``p99 12.5 ms (11.0-14.1)``: a point's median p99 and its 95 % interval, as the tables print it."""
    low, high = point.get("p99_low"), point.get("p99_high")
    if point.get("p99_ms") is None:
        return "no request answered cleanly"
    text = f"p99 {ms_text(float(point['p99_ms']))} ms"
    return text if low is None or high is None else f"{text} ({ms_text(float(low))}-{ms_text(float(high))})"


def _against(vs: Mapping[str, Any]) -> str:
    text = change_text(float(vs["ratio"]))
    if vs.get("low") is not None and vs.get("high") is not None:
        text += f" ({change_text(float(vs['low']))} to {change_text(float(vs['high']))})"
    return text


def _point_text(point: Summary) -> str:
    return f"{children_text(int(point['children']))}: {rate_with_interval(point)}, {p99_with_interval(point)}"


def choose_pool(points: Sequence[Summary], offered: OfferedLoad, target: Target, *, tolerance: float) -> PoolChoice:
    """The smallest pool as good as the best at the offered load (module documentation)."""
    ordered = sorted(points, key=lambda p: int(p["children"]))
    answered = [p for p in ordered if int(p.get("counted") or 0) > 0 and p.get("p99_ms") is not None] or ordered[:1]
    best = max(answered, key=lambda p: float(p["rps"]))  # the first (smallest) of equal ones
    marked: list[dict[str, Any]] = []
    for point in ordered:
        copy = dict(point)
        copy["vs_best"] = _versus(point, best, "rps", higher_is_better=True, effect=tolerance)
        copy["vs_best"]["worse"] = copy["vs_best"]["worse"] or point not in answered
        marked.append(copy)
    fast = [p for p in marked if not p["vs_best"]["worse"]] or [marked[ordered.index(best)]]
    # the p99 is held against the lowest of the pools as fast as the best: a slow pool's low p99
    # says nothing about the others
    lowest = min(fast, key=lambda p: float(p["p99_ms"] if p.get("p99_ms") is not None else math.inf))
    for copy in marked:
        copy["p99_vs_lowest"] = _versus(copy, lowest, "p99_ms", higher_is_better=False, effect=P99_EFFECT)
    limit_ms = None if target.p99_s is None else target.p99_s * 1000
    p99_met: bool | None = None
    if limit_ms is not None:
        meeting = [p for p in fast if float(p["p99_ms"]) <= limit_ms]
        p99_met = bool(meeting)
    if limit_ms is not None and meeting:
        chosen = meeting[0]
        latency = f"its p99 meets --p99 {ms_text(limit_ms)} ms"
    else:
        calm = [p for p in fast if not p["p99_vs_lowest"]["worse"]]
        chosen = calm[0] if calm else lowest
        latency = "its p99 is not distinguishably above the lowest of the pools as fast"
    n, best_n, low_n = int(chosen["children"]), int(best["children"]), int(lowest["children"])
    wide = [int(p["children"]) for p in marked if p.get("wide")]
    load = offered.text()
    if n == best_n:
        how = "the most throughput measured there"
    else:
        how = (f"{_against(chosen['vs_best'])} against the best, {children_text(best_n)} "
               f"({rate_with_interval(best)}): not distinguishably slower")
    if len(marked) == 1:
        head = f"{n}: the only candidate at {offered.short()} (the knee and the largest pool allowed coincide)"
    elif limit_ms is not None and p99_met:
        head = f"{n}: the smallest pool as fast as the best whose p99 meets --p99 {ms_text(limit_ms)} ms at " \
               f"{offered.short()}"
    elif limit_ms is not None:
        head = (f"{n}: --p99 {ms_text(limit_ms)} ms met by no pool as fast as the best; the smallest pool as good as "
                f"the best at {offered.short()}")
    else:
        head = f"{n}: the smallest pool as good as the best at {offered.short()}"
    why = (f"{head}: {rate_with_interval(chosen)}, "
           f"{p99_with_interval(chosen)}" + ("" if n == best_n else
                                             f" (the best: {children_text(best_n)}, {rate_with_interval(best)})")
           + (" - the machine was noisy (wide intervals): see Details" if n in wide or best_n in wide else ""))
    reasons = [f"pools compared at the same offered load, {load}, in interleaved trials: {children_text(n)} served "
               f"{rate_with_interval(chosen)}, {how}; {latency} ({p99_with_interval(chosen)}; the lowest: "
               f"{children_text(low_n)}, {p99_with_interval(lowest)})"]
    if limit_ms is not None and not p99_met:
        reasons.append(f"--p99 {ms_text(limit_ms)} ms is met by no pool as fast as the best at this load")
    others = [p for p in marked if int(p["children"]) != n]
    if others:
        reasons.append("the others at the same load: " + "; ".join(
            f"{_point_text(p)} ({'distinguishably slower' if p['vs_best']['worse'] else 'not distinguishably slower'}"
            f"{', p99 distinguishably higher' if p['p99_vs_lowest']['worse'] else ''})" for p in others))
    if wide:
        reasons.append(f"the intervals of {', '.join(f'{w:,}' for w in wide)} children stayed wider than ±"
                       f"{WIDE:.0%} after a re-measure: the machine was noisy, so pools that differ less than the "
                       "noise cannot be told apart and the smallest of them is chosen; tune again on a quiet machine "
                       "to decide between them")
    bigger = [p for p in marked if int(p["children"]) > n]
    if bigger and offered.rate is None and offered.connections > n and not chosen["p99_vs_lowest"]["worse"] \
            and limit_ms is None:
        reasons.append(f"with {children_text(n)} the other {offered.connections - n:,} connections wait in the listen "
                       "queue for a free child, and that wait is in the p99 above: more children served no more, "
                       "no sooner, within the intervals")
    return PoolChoice(offered=offered, chosen=n, best=best_n, lowest_p99=low_n, p99_met=p99_met, points=marked,
                      why=why, reasons=reasons)


def needs(choice: ChildrenChoice) -> list[int]:
    """What the target itself asks for (``--clients``, Little's law for a rate, ``--p99`` in the
    sweep): sizes worth a candidate."""
    return [n for n in (choice.for_clients, choice.for_rate, choice.for_p99) if n is not None]


def apply_pool(choice: ChildrenChoice, pools: PoolChoice) -> ChildrenChoice:
    """``choice`` with the pool chosen at the offered load (``decided_by`` "offered-load")."""
    return dataclasses.replace(choice, chosen=pools.chosen, decided_by="offered-load",
                               reasons=[*choice.reasons, *pools.reasons])


def between_for(quick: bool) -> int:
    """Candidate sizes between the knee and the largest pool: fewer with ``--quick``."""
    return 1 if quick else BETWEEN
