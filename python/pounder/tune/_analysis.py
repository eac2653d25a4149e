"""The decisions of a tuning run, from measured numbers only (pure functions, no I/O).

Each step's measurements come in as :class:`~pounder._tune_point.TunePoint` records of the points
stored in the results directory (a load point aggregated over interleaved trials: medians, a 95 %
bootstrap interval of the throughput's median in ``rps_low`` / ``rps_high``, ``wide`` when that
interval stayed wider than ±10 %), so a resumed run makes exactly the decisions the first one would
have made. Every reason quotes the
figures the tables print, formatted as they print them (:mod:`pounder.tune._text`).

* :func:`knee`: the smallest count "as good as the best" throughput, decided on intervals.
* :func:`size_pool`: the knee and what the target needs; without ``decide`` the pool itself is
  chosen at the offered load (:mod:`pounder.tune._pools`). With ``decide`` (every connection holds
  a child): with no target load, MaxClients = the memory bound (capped by ``max_children``); with a
  target: ``--clients N`` needs N children; a peak rate R needs Little's law with headroom
  (square-root staffing); ``--p99`` the smallest count whose p99 met it; never fewer than the knee,
  never more than memory allows; ``decided_by`` names the constraint that decided.

The steps before live in :mod:`pounder.tune._memory` (the children's growth and the memory
bound), the later ones beside this module too: :mod:`pounder.tune._pools` (the pool chosen at the
offered load), :mod:`pounder.tune._mrpc` (MaxRequestsPerChild), :mod:`pounder.tune._spare_rules`
and :mod:`pounder.tune._spare` (spare servers), :mod:`pounder.tune._advice` (the causes behind
the numbers) and :mod:`pounder.tune._text` (how figures are written).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from pounder._errors import PounderError, public
from pounder._figures import WIDE, queued_text
from pounder._records import Record
from pounder._tune_point import Points, TunePoint, present, tune_point, tune_points
from pounder._tune_run import Target
from pounder._units import children_text
from pounder.compare import MAX_FAILED
from pounder.tune._memory import MemoryBound
from pounder.tune._points import QUEUED_BUSY, busy_measured
from pounder.tune._text import (
    Summary,
    _counts,
    _serve,
    ms_text,
    rate_with_interval,
    share_text,
)

LOSS_NOISE = 0.05
"""A throughput difference smaller than this between two single runs is within this machine's noise."""

HEADROOM_SIGMAS = 2.0
"""Square-root staffing: with random (Poisson) arrivals the number of busy children at an average
of ``a`` fluctuates with a standard deviation of about sqrt(a); ``a + 2 sqrt(a)`` children keep the
chance that a request finds none free near 3 % (Halfin-Whitt), where a fixed +25 % would leave
small pools short (a = 2: 3 children) and over-provision large ones."""



# ---------------------------------------------------------------------------------------------
# Step 3: the children sweep and the knee


def sweep_counts(cap: int) -> list[int]:
    """1, 2, 4, … below ``cap``, then ``cap`` itself."""
    counts = []
    n = 1
    while n < cap:
        counts.append(n)
        n *= 2
    return [*counts, cap] if cap >= 1 else []


def sweep_done(rates: Sequence[float], tolerance: float) -> bool:
    """Stop early when the last two counts both failed to beat the best before them by more than
    ``tolerance`` (the classic finding: past the cores, more children add nothing); ``rates``: the
    requests/s of each count swept, in the sweep's order."""
    if len(rates) < 3:
        return False
    best_before = max(rates[:-2])
    return all(rps <= best_before * (1 + tolerance) for rps in rates[-2:])


def sweep_connections(children: int, clients: int | None, *, keepalive: bool = False) -> int:
    """The concurrency of a sweep point: the expected clients; else twice the children (every
    child busy, and a queue of as many in the listen backlog), or as many as the children with
    keep-alive (a kept-alive connection holds its child: more would only wait for a free one)."""
    if clients is not None:
        return clients
    return max(1, children) if keepalive else max(2, 2 * children)


@public
@dataclass(frozen=True)
class Knee(Record):
    """Where more children stop adding throughput.

    ``children``: the smallest count as good as the best (``best_children``, the highest median);
    ``threshold`` = (1 - tolerance) x the best's median; ``flat``: no count measured is
    distinguishably slower than the best (the sweep cannot tell the counts apart); ``wide``: the
    counts whose interval stayed wider than ±10 % after a re-measure."""

    children: int
    rps: float
    best_children: int
    best_rps: float
    threshold: float
    tolerance: float
    by_interval: bool
    flat: bool
    wide: list[int]
    reasons: list[str] = field(default_factory=list)


def _as_good(point: TunePoint, threshold: float) -> bool:
    high = point.rps_high
    return point.rps >= threshold or (high is not None and high >= threshold)


def _below(point: TunePoint, other: TunePoint) -> bool:
    """``point`` is distinguishably slower than ``other``: its interval lies under the other's
    (under the other's median when either has no interval)."""
    high, other_low = point.rps_high, other.rps_low
    if high is None or other_low is None:
        return point.rps < other.rps * (1 - LOSS_NOISE)
    return high < other_low


def _counted(point: TunePoint) -> int:
    """The point's counted trials (a point of an earlier pounder that does not say: 1)."""
    return 1 if point.counted is None else point.counted


def check_counted(points: Points) -> None:
    """A :class:`~pounder.PounderError` when no point of the children sweep has a counted trial
    (each failed more than :data:`~pounder.compare.MAX_FAILED` of its requests): the server fails
    under load, and no figure of the sweep means its throughput."""
    records = tune_points(points, "sweep")
    if not records or any(_counted(p) > 0 for p in records):
        return
    ordered = sorted(records, key=lambda p: p.children)
    failed = ", ".join(f"{children_text(p.children)}: {present(p.failed):,} of "
                       f"{present(p.complete) + present(p.failed):,}" for p in ordered)
    raise PounderError(f"no trial of the children sweep counted: every one had no request answered or more than "
                       f"{MAX_FAILED:.0%} of its requests failed ({failed} failed): the server fails under load")


@public
def knee(points: Points, tolerance: float) -> Knee:
    """The smallest count as good as the best: its median is within ``tolerance`` of the best
    median, or its 95 % interval reaches that far (the measurement cannot tell it from a count
    that is). Deciding on the interval, not the median alone, is what makes it stable: a count at
    the plateau whose median happened to land low still qualifies, so two runs of the same app
    land on the same count or one sweep step apart; a count clearly below the plateau (its whole
    interval under the threshold) never does. Ties for the best go to the smaller count. Points
    without an interval (one trial) are decided on their median."""
    records = tune_points(points, "sweep")
    check_counted(records)
    # a count with no counted trial (every one failed too often) has no figure to be the knee
    ordered = sorted((p for p in records if _counted(p) > 0), key=lambda p: p.children)
    best = max(ordered, key=lambda p: p.rps)  # max keeps the first (smallest) of equal ones
    best_rps = best.rps
    threshold = (1 - tolerance) * best_rps
    at = next(p for p in ordered if _as_good(p, threshold))
    by_interval = at.rps < threshold
    n, best_n = at.children, best.children
    flat = len(ordered) >= 2 and not any(_below(p, best) for p in ordered)
    wide = [p.children for p in ordered if p.wide]
    if at is best:
        reasons = [f"throughput: the best measured is {children_text(n)}, {rate_with_interval(at)}"
                   + ("" if n == ordered[0].children else
                      f"; every smaller count stayed below {share_text(1 - tolerance)} of its median")]
    else:
        how = (f"its interval reaches within {share_text(tolerance)} of it" if by_interval
               else f"within {share_text(tolerance)} of it")
        reasons = [f"throughput: {_serve(n)} {rate_with_interval(at)}, as good as the best measured "
                   f"({children_text(best_n)}, {rate_with_interval(best)}): {how}"]
    if flat:
        reasons.append(f"no count measured is distinguishably slower than the best ({children_text(best_n)}): "
                       "the sweep cannot tell the counts apart at this load, so where throughput stops growing is not "
                       "known")
    dropped = sorted(p.children for p in records if _counted(p) == 0)
    if dropped:
        reasons.append(f"{_counts(dropped)} {'child' if dropped == [1] else 'children'}: no trial counted (none "
                       f"answered, or more than {MAX_FAILED:.0%} of its requests failed): left out of the comparison")
    if wide:
        which = (f"the interval of {children_text(wide[0])}" if len(wide) == 1
                 else f"the intervals of {_counts(wide)} children")
        reasons.append(f"{which} stayed wider than ±{WIDE:.0%} after a re-measure: the machine was noisy, and the "
                       "knee may move by a step between runs")
    return Knee(children=n, rps=at.rps, best_children=best_n, best_rps=best_rps, threshold=threshold,
                tolerance=tolerance, by_interval=by_interval, flat=flat, wide=wide, reasons=reasons)


@public
@dataclass(frozen=True)
class ChildrenChoice(Record):
    """How many children, and why.

    ``throughput``: the knee (:func:`knee`), ``best_children`` / ``best_rps`` the best measured;
    ``for_clients`` / ``for_rate`` / ``for_p99``: what each target needs (None when not given;
    ``for_p99`` None too when no count met it); ``memory_cap``: the memory bound;
    ``max_children``: the option's cap; ``chosen``: the recommendation; ``decided_by``: "memory",
    "max-children", "clients", "peak-rate", "p99" or "cpu-knee". For a peak rate: ``busy_s`` the
    time a child is held per request used, ``offered`` = rate x busy_s (children busy on
    average), ``headroom`` the children added for random arrivals, ``needed`` = ceil(offered +
    headroom), ``little`` the arithmetic as text."""

    best_children: int
    best_rps: float
    throughput: int
    for_clients: int | None
    for_rate: int | None
    for_p99: int | None
    memory_cap: int
    max_children: int
    chosen: int
    decided_by: str
    needed: int | None
    offered: float | None
    headroom: float | None
    busy_s: float | None
    little: str | None
    knee_flat: bool
    wide: list[int]
    reasons: list[str] = field(default_factory=list)


@public
def busy_seconds(point: Summary | TunePoint) -> float:
    """The time a child is held per request at a sweep point: its ``busy_s`` (busy children /
    throughput, measured by the session) or, without it, Little's law on the closed loop:
    min(children, connections) / throughput (every connection keeps one child busy)."""
    at = tune_point(point)
    if at.busy_s is not None:
        return at.busy_s
    return min(at.children, at.connections) / at.rps if at.rps > 0 else 0.0


def busy_basis(point: TunePoint) -> str:
    """Why the point's busy time is the time itself or an upper bound, from its accept-queue share."""
    measured = busy_measured(point)
    if measured is None:
        return "exact when every child was kept busy, else an upper bound"
    share = queued_text(point)
    if measured:
        return f"a connection waited for a free child in {share} of the accept queue's samples: every child was busy"
    return (f"a connection waited for a free child in only {share} of the accept queue's samples, under "
            f"{QUEUED_BUSY * 100:.0f}%: children sat idle at times, so this is an upper bound")


def _p99_count(ordered: Sequence[TunePoint], p99_s: float, reasons: list[str]) -> int | None:
    meeting = [p for p in ordered if present(p.p99_ms) <= p99_s * 1000]
    if meeting:
        at = meeting[0]
        reasons.append(f"--p99 {ms_text(p99_s * 1000)} ms: {children_text(at.children)} is the smallest count "
                       f"whose p99 met it ({ms_text(present(at.p99_ms))} ms with {at.connections} clients)")
        return at.children
    lowest = min(ordered, key=lambda p: present(p.p99_ms))
    reasons.append(f"--p99 {ms_text(p99_s * 1000)} ms is not met by any count measured (best: "
                   f"{ms_text(present(lowest.p99_ms))} ms with {children_text(lowest.children)} and "
                   f"{lowest.connections} clients)")
    return None


@public
def size_pool(points: Points, memory: MemoryBound, target: Target | None = None, *, tolerance: float,
              max_children: int, cores: float, kind: str, decide: bool = True) -> ChildrenChoice:
    """The pool size by the method (module documentation); ``points`` are the sweep's aggregated
    points. The rate's busy time is the knee's: the time a child is held per request when the
    pool serves its best throughput (an overestimate at lower rates, on the safe side).
    ``decide`` False: only the knee and what the target needs (its reasons), the pool itself to be
    chosen by measuring candidates at the offered load (:mod:`pounder.tune._pools`)."""
    target = target or Target()
    ordered = sorted(tune_points(points, "sweep"), key=lambda p: p.children)
    k = knee(ordered, tolerance)
    reasons = list(k.reasons)
    memory_cap = memory.max_clients
    hard = max(1, min(memory_cap, max_children))
    wants: list[tuple[str, int]] = []
    for_clients = for_rate = needed = None
    offered = headroom = busy = None
    little = None
    if target.clients is not None and not decide:
        for_clients = target.clients
    elif target.clients is not None:
        for_clients = target.clients
        held = ("for its whole connection, idle time included (keep-alive with no buffering proxy)"
                if target.keepalive and not target.proxy else "while its request runs")
        reasons.append(f"--clients {target.clients}: each concurrent client holds a child {held}, so "
                       f"{_serve(target.clients)} them without a wait in the listen queue")
        wants.append(("clients", target.clients))
    if target.peak_rate is not None:
        busy, offered, headroom, needed, little = _for_peak_rate(target, target.peak_rate, k, ordered, reasons)
        for_rate = needed
        wants.append(("peak-rate", needed))
    for_p99 = _p99_count(ordered, target.p99_s, reasons) if target.p99_s is not None else None
    if for_p99 is not None:
        wants.append(("p99", for_p99))
    if not decide:
        return ChildrenChoice(best_children=k.best_children, best_rps=k.best_rps, throughput=k.children,
                              for_clients=for_clients, for_rate=for_rate, for_p99=for_p99, memory_cap=memory_cap,
                              max_children=max_children, chosen=hard,
                              decided_by="memory" if memory_cap <= max_children else "max-children", needed=needed,
                              offered=offered, headroom=headroom, busy_s=busy, little=little, knee_flat=k.flat,
                              wide=k.wide, reasons=reasons)
    if not target.load:
        chosen = hard
        decided_by = "memory" if memory_cap <= max_children else "max-children"
        reasons += _no_target_reasons(k, memory_cap, max_children, decided_by)
    else:
        chosen, decided_by = _for_target(k, ordered, wants, memory_cap, max_children, reasons)
    return ChildrenChoice(best_children=k.best_children, best_rps=k.best_rps, throughput=k.children,
                          for_clients=for_clients, for_rate=for_rate, for_p99=for_p99, memory_cap=memory_cap,
                          max_children=max_children, chosen=max(1, chosen), decided_by=decided_by, needed=needed,
                          offered=offered, headroom=headroom, busy_s=busy, little=little, knee_flat=k.flat,
                          wide=k.wide, reasons=reasons)


def _for_peak_rate(target: Target, peak_rate: float, k: Knee, ordered: Sequence[TunePoint],
                   reasons: list[str]) -> tuple[float, float, float, int, str]:
    """What the peak rate needs by Little's law: the seconds a child is busy per request, the
    children busy on average, the headroom for random arrivals, the children needed and the
    sum in words (its reasons appended to ``reasons``)."""
    at = next(p for p in ordered if p.children == k.children)
    service = busy_seconds(at)
    busy = service
    parts = [f"{ms_text(service * 1000)} ms held per request at {children_text(k.children)} (children / "
             f"throughput measured there; {busy_basis(at)})"]
    if not target.proxy and target.transfer_s:
        busy += target.transfer_s
        parts.append(f"{ms_text(target.transfer_s * 1000)} ms sending the answer to a slow client (no proxy)")
    if target.keepalive and not target.proxy and target.keepalive_idle_s:
        busy += target.keepalive_idle_s
        parts.append(f"{ms_text(target.keepalive_idle_s * 1000)} ms idle on a kept-alive connection")
    offered = peak_rate * busy
    headroom = HEADROOM_SIGMAS * math.sqrt(offered)
    needed = max(1, math.ceil(offered + headroom - 1e-9))
    rate = f"{peak_rate:,.6g}"
    little = (f"{rate} req/s x {ms_text(busy * 1000)} ms = {offered:,.1f} children busy on average; "
              f"+ {HEADROOM_SIGMAS:g} x sqrt({offered:,.1f}) = {headroom:,.1f} for random arrivals: {needed}")
    busy_text = " + ".join(parts) if len(parts) > 1 else parts[0]
    reasons.append(f"peak rate ({target.source}) by Little's law: a child is busy {ms_text(busy * 1000)} ms per "
                   f"request ({busy_text}); {little}")
    if peak_rate > k.best_rps:
        best = next(p for p in ordered if p.children == k.best_children)
        reasons.append(f"the peak rate {rate} req/s is beyond what was measured (the best: {k.best_children} "
                       f"children, {rate_with_interval(best)}): more children alone may not serve it")
    return busy, offered, headroom, needed, little


def _no_target_reasons(k: Knee, memory_cap: int, max_children: int, decided_by: str) -> list[str]:
    reasons: list[str] = []
    reasons.append(f"no target load given: the pool is the memory bound, {children_text(memory_cap)} (as many "
                   "as the RAM budget allows, so clients rarely wait for a free child)")
    if decided_by == "max-children":
        reasons.append(f"capped at --max-children {max_children} (memory allows {memory_cap})")
    reasons.append(f"beyond {children_text(k.children)} no more throughput: more children only help slow or "
                   "waiting clients (slow networks, keep-alive, requests waiting on a database)")
    reasons.append(f"a smaller pool (down to {k.children}) serves as many requests per second, but connections "
                   "beyond the pool wait in the listen queue until a child is free: their latency grows with "
                   "the queue, and when the queue is full they are refused")
    return reasons


def _for_target(k: Knee, ordered: Sequence[TunePoint], wants: list[tuple[str, int]], memory_cap: int,
                max_children: int, reasons: list[str]) -> tuple[int, str]:
    """The pool the target's needs (``wants``) ask for, within the memory bound and
    --max-children, and what decided it (its reasons appended to ``reasons``)."""
    if any(p.children > k.children for p in ordered):
        wants.append(("cpu-knee", k.children))
    else:  # the sweep's end, not a knee: no floor for the target's own need
        reasons.append(f"throughput still grew at {children_text(k.children)}, the largest count measured: no "
                       "knee was found to keep the pool at or above")
    want = max(value for _, value in wants)
    decided_by = next(name for name, value in wants if value == want)
    chosen = want
    if want > memory_cap and memory_cap <= max_children:
        chosen, decided_by = max(1, memory_cap), "memory"
        fit = "fits" if memory_cap == 1 else "fit"
        reasons.append(f"memory: only {children_text(memory_cap)} {fit} the RAM budget, fewer than the {want} "
                       "wanted")
    elif want > max_children:
        chosen, decided_by = max_children, "max-children"
        reasons.append(f"--max-children {max_children} caps it, below the {want} wanted")
    elif decided_by == "cpu-knee":
        reasons.append(f"the target needs fewer children than the knee: {k.children}, so the pool serves the "
                       "best measured throughput")
    else:
        reasons.append(f"{children_text(chosen)}, decided by the {decided_by} target (the memory bound allows "
                       f"{memory_cap})")
    return chosen, decided_by
