"""Workers x threads, compared at the offered load (pure, no I/O).

For the servers whose workers run threads (Puma, gunicorn's gthread workers, uWSGI), the pool
chosen with one thread per worker (``N`` workers: ``N`` requests served at once) is compared, at
the same offered load and in interleaved trials, with *shapes* that serve as many requests at once
with fewer workers (:func:`shapes`): ``N/2`` workers of 2 threads, ``N/4`` of 4, ... to one worker
(workers rounded up, so workers x threads is never fewer). When the memory bound (or
``--max-children``) held the pool under what the target needs (``--clients``, Little's law for a
rate), threads are added to those workers up to what the target needs at once, then the workers
halved as above: threads are how it fits. Each trial measures,
after its load, the server's footprint (sum of PSS: shared pages counted once) and a worker's
private and shared memory.

* the first round measures the shapes from one thread up and stops after two in a row that each
  served more than the tolerance less than the best before it (:func:`shapes_done`: more threads
  per worker at the same concurrency gives the runtime's lock more to serialise, never less); the
  other rounds measure what the first kept, interleaved;
* the choice (:func:`choose_shape`): the shape with the smallest footprint measured among those
  whose throughput is not distinguishably below the best's and whose p99 meets ``--p99`` (without
  it: not distinguishably above the lowest p99 of the shapes as fast), as the pools step compares
  pools (:func:`pounder.tune._pools.versus`); footprints within :data:`SAME_MEMORY` of the
  smallest are the same memory, and of those the fewest threads is chosen (less is asked of the
  application's thread safety);
* the memory a thread costs: a worker's private memory (USS) at T threads against one, per added
  thread, after the same load;
* why threads did or did not replace workers: the share of the time a request held a worker that
  it spent on the CPU (the server's CPU per request over the busy time, Little's law). Ruby's GVL
  and Python's GIL let one thread of a worker run at a time: a CPU-bound worker's threads share
  one core, and only workers use more cores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pounder._table import ms, whole
from pounder._tune_point import Points, TunePoint, present, tune_points
from pounder._tune_run import OfferedLoad, Target
from pounder._units import mib_unit, shape_text
from pounder.pool import MAX_THREADS
from pounder.tune._analysis import ChildrenChoice, busy_seconds
from pounder.tune._points import busy_measured
from pounder.tune._pools import CPU_BOUND, P99_EFFECT, CpuFloor, cpu_floor, p99_with_interval, versus
from pounder.tune._text import change_text, ms_text, rate_with_interval

SAME_MEMORY = 0.05
"""Footprints within this fraction of the smallest measured are the same memory."""


def shape_slots(chosen: int, need: int, hard: int) -> int:
    """The requests each shape serves at once: the pool chosen with one thread per worker, or what
    the target needs at once (``need``) when the largest pool allowed (``hard``: the memory bound
    or ``--max-children``) held the pool under it."""
    return need if chosen >= hard and need > chosen else chosen


def shapes(chosen: int, slots: int) -> list[tuple[int, int]]:
    """The (workers, threads) compared: ``chosen`` workers of one thread first, then threads 2, 4,
    8, ... with ``ceil(slots / threads)`` workers (never more than ``chosen``: the most allowed when
    the slots are what the target needs beyond it), to one worker; a shape is kept when it has
    fewer workers or serves more at once than the one before."""
    found = [(chosen, 1)]
    threads = 2
    while threads <= MAX_THREADS:
        workers = min(math.ceil(slots / threads), chosen)
        last_workers, last_threads = found[-1]
        if workers < last_workers or last_workers * last_threads < min(workers * threads, slots):
            found.append((workers, threads))
        if workers <= 1 and workers * threads >= slots:
            break
        threads *= 2
    return found


def shapes_done(first: Sequence[Mapping[str, Any]], tolerance: float) -> bool:
    """Whether the first round stops (module documentation): the last two shapes measured each served
    more than ``tolerance`` less than the best before it (one slow trial on a busy machine does not
    hide the shapes after it)."""
    rates = [float(t.get("rps") or 0.0) for t in first]
    if len(rates) < 3:
        return False
    return all(rates[i] < max(rates[:i]) * (1 - tolerance) for i in (-2, -1))


@dataclass(frozen=True)
class ShapeChoice:
    """The shape chosen at the offered load: ``workers`` x ``threads`` (``best``: the shape that
    served the most), the shapes' records (``points``, each with ``vs_best`` and
    ``p99_vs_lowest``), what a thread adds to a worker's private memory (``per_thread``, bytes;
    None when no shape with threads was measured), ``why`` in one line and the ``reasons``."""

    offered: OfferedLoad
    workers: int
    threads: int
    best: tuple[int, int]
    slots: int
    points: tuple[TunePoint, ...]
    per_thread: int | None
    why: str
    reasons: list[str] = field(default_factory=list)

    def point(self, shape: tuple[int, int]) -> TunePoint:
        """The point of ``shape`` (workers, threads): ``best`` or the chosen, one of the points."""
        return next(p for p in self.points if _shape(p) == tuple(shape))

    def thread_memory(self) -> tuple[int, int] | None:
        """(threads, bytes): what the chosen shape's threads add to a worker's private memory, its
        workers' median USS against the one-thread workers' after the same load (at least 0); None
        for one thread, or when either was not measured."""
        single = next((p for p in self.points if (p.threads or 1) == 1 and p.child_uss is not None), None)
        chosen = self.point((self.workers, self.threads))
        if self.threads <= 1 or single is None or chosen.child_uss is None:
            return None
        return self.threads, max(0, chosen.child_uss - present(single.child_uss))

    def to_dict(self) -> dict[str, Any]:
        return {"offered": self.offered.to_dict(), "workers": self.workers, "threads": self.threads,
                "best": list(self.best), "slots": self.slots, "points": [p.to_dict() for p in self.points],
                "per_thread": self.per_thread, "why": self.why, "reasons": list(self.reasons)}


def _shape(point: TunePoint) -> tuple[int, int]:
    return point.children, point.threads or 1


def _text(point: TunePoint) -> str:
    footprint = "-" if point.footprint is None else mib_unit(point.footprint)
    return (f"{shape_text(*_shape(point))}: {rate_with_interval(point)}, {p99_with_interval(point)}, "
            f"footprint {footprint}")


def _worse(point: TunePoint, key: str) -> bool:
    vs = point.vs_best if key == "rps" else point.p99_vs_lowest
    return bool(vs is not None and vs.worse)


def cpu_share(point: TunePoint) -> float | None:
    """The share of the time a request held its worker that it spent on the server's CPU (None
    when not measured)."""
    busy = busy_seconds(point) if point.rps else 0.0
    if point.server_cpu_us is None or busy <= 0:
        return None
    return point.server_cpu_us / 1e6 / busy


def per_thread(points: Sequence[TunePoint]) -> tuple[int, TunePoint, TunePoint] | None:
    """What a thread adds to a worker's private memory: (bytes, the shape with the most threads, the
    one-thread reference), from their workers' median USS after the same load."""
    single = next((p for p in points if (p.threads or 1) == 1 and p.child_uss is not None), None)
    threaded = [p for p in points if (p.threads or 1) > 1 and p.child_uss is not None]
    if single is None or not threaded:
        return None
    most = max(threaded, key=lambda p: p.threads or 1)
    return round((present(most.child_uss) - present(single.child_uss)) / ((most.threads or 1) - 1)), most, single


def choose_shape(points: Points, offered: OfferedLoad, target: Target, *, tolerance: float, slots: int,
                 lock: str, cores: float, ram: int | None = None, floor: CpuFloor | None = None) -> ShapeChoice:
    """The shape with the smallest footprint as good as the best at the offered load (module
    documentation); ``lock``: what lets one thread of a worker run at a time (Ruby's GVL);
    ``cores``: the server's (its CPUs, or its quota), for the CPU floor (``floor``: the pools
    step's, from the least disturbed of its points; else the one-thread pool's own); ``ram``: the
    budget a shape's measured footprint must fit."""
    ordered = tune_points(points, "shapes")
    answered = [p for p in ordered if (p.counted or 0) > 0 and p.p99_ms is not None] or ordered[:1]
    best = max(answered, key=lambda p: p.rps)
    marked = []
    for point in ordered:
        vs = versus(point, best, "rps", higher_is_better=True, effect=tolerance)
        marked.append(replace(point, vs_best=replace(vs, worse=vs.worse or point not in answered)))
    fast = [p for p in marked if not _worse(p, "rps")] or [marked[ordered.index(best)]]
    lowest = min(fast, key=lambda p: p.p99_ms if p.p99_ms is not None else math.inf)
    marked = [replace(p, p99_vs_lowest=versus(p, lowest, "p99_ms", higher_is_better=False, effect=P99_EFFECT))
              for p in marked]
    fast = [p for p in marked if any(_shape(p) == _shape(f) for f in fast)]
    limit_ms = None if target.p99_s is None else target.p99_s * 1000
    meeting = [p for p in fast if limit_ms is not None and present(p.p99_ms) <= limit_ms]
    if limit_ms is not None and meeting:
        good, latency = meeting, f"its p99 meets --p99 {ms_text(limit_ms)} ms"
    else:
        good = [p for p in fast if not _worse(p, "p99")] or fast
        latency = "its p99 is not distinguishably above the lowest of the shapes as fast"
    reference = marked[0]
    over = [p for p in good if ram is not None and p.footprint is not None and p.footprint > ram]
    good = [p for p in good if p not in over] or good
    floor = floor or cpu_floor([reference], cores)
    needed = 0 if floor is None else min(floor.children, reference.children)
    held_back = [p for p in good if p.children < needed] if any(p.children >= needed for p in good) else []
    good = [p for p in good if p not in held_back]
    sized = [p for p in good if p.footprint is not None] or good
    smallest = min((p.footprint for p in sized if p.footprint is not None), default=None)
    same = [p for p in sized if smallest is None or present(p.footprint) <= smallest * (1 + SAME_MEMORY)]
    chosen = min(same, key=lambda p: (p.threads or 1, p.footprint or 0))
    workers, threads = _shape(chosen)
    rule = ("the smallest footprint as good as the best" if smallest is None or chosen.footprint == smallest else
            f"within {SAME_MEMORY:.0%} of the smallest footprint as good as the best, with fewer threads")
    if held_back:
        rule += ", with the workers the cores need"
    thread_cost = per_thread(marked)
    why = _why(chosen, reference, best, offered, rule)
    reasons = [f"workers x threads compared at the same offered load, {offered.text()}, in interleaved trials, up to "
               f"{slots:,} requests at once: {_text(chosen)}; {latency}"
               + ("" if _shape(chosen) == _shape(best) else
                  f"; {change_text(present(chosen.vs_best).ratio or 1.0)} against the best, {_text(best)}: "
                  "not distinguishably slower")]
    if limit_ms is not None and not meeting:
        reasons.append(f"--p99 {ms_text(limit_ms)} ms is met by no shape as fast as the best at this load")
    if over and ram is not None:
        reasons.append(f"{' and '.join(_text(p) for p in over)}: over the RAM budget of {mib_unit(ram)} as "
                       "measured, not chosen")
    others = [p for p in marked if _shape(p) != _shape(chosen)]
    if others:
        reasons.append("the other shapes: " + "; ".join(
            f"{_text(p)} ({'distinguishably slower' if _worse(p, 'rps') else 'not distinguishably slower'}"
            f"{', p99 distinguishably higher' if _worse(p, 'p99') else ''})" for p in others))
    if floor is not None and held_back:
        reasons.append(_floor_reason(floor, needed, held_back, lock))
    reasons += _lock_reasons(marked, chosen, reference, lock, held_back)
    if thread_cost is not None:
        cost, most, single = thread_cost
        held, one = mib_unit(present(most.child_uss)), mib_unit(present(single.child_uss))
        reasons.append(f"after the same load a worker of {most.threads} threads held {held} of private memory (USS) "
                       f"and one of 1 thread {one}: "
                       + (f"{mib_unit(cost)} per added thread, its stack and what serving {most.threads} requests at "
                          "once keeps" if cost > 0 else "no measurable cost per thread"))
    return ShapeChoice(offered=offered, workers=workers, threads=threads, best=_shape(best), slots=slots,
                       points=tuple(marked), per_thread=None if thread_cost is None else max(thread_cost[0], 0),
                       why=why, reasons=reasons)


def _why(chosen: TunePoint, reference: TunePoint, best: TunePoint, offered: OfferedLoad, rule: str) -> str:
    """The deciding fact: the shape, the rule that chose it, its figures, and its footprint against
    the one-thread pool's when that pool was as fast (else what the one-thread pool served)."""
    figures = f"{rate_with_interval(chosen)}, {p99_with_interval(chosen)}" + (
        "" if chosen.footprint is None else f", footprint {mib_unit(chosen.footprint)}")
    text = f"{shape_text(*_shape(chosen))}: {rule} at {offered.short()}: {figures}"
    if _shape(chosen) == _shape(reference):
        return text if _shape(chosen) == _shape(best) else text + (
            f" (the best: {shape_text(*_shape(best))}, {rate_with_interval(best)})")
    if _worse(reference, "rps"):
        return (f"{text}; {shape_text(*_shape(reference))} served {rate_with_interval(reference)}, "
                f"{change_text(present(reference.vs_best).ratio or 0.0)} against the best: distinguishably less")
    if chosen.footprint is not None and reference.footprint:
        text += (f", against {mib_unit(reference.footprint)} for {shape_text(*_shape(reference))} "
                 f"({chosen.footprint / reference.footprint:.0%} of it)")
    return text


def _cpu_text(point: TunePoint) -> str:
    """What a request used of the time it held its worker, in the table's figures: ``used 525 us
    of the server's CPU (srv CPU us/req) of the 42.7 ms it held its worker (busy ms): 0.01 of a
    core``."""
    share = present(cpu_share(point))
    exact = busy_measured(point) is not False and point.rate is None
    return (f"used {whole(point.server_cpu_us)} us of the server's CPU (srv CPU us/req) of the "
            f"{'' if exact else 'at most '}{ms(busy_seconds(point) * 1000)} ms it held its worker (busy ms): "
            f"{'' if exact else 'at least '}{share:.2f} of a core")


def _floor_reason(floor: CpuFloor, needed: int, held_back: Sequence[TunePoint], lock: str) -> str:
    """Why shapes with fewer workers than the CPU floor were not chosen although the intervals could
    not tell them from the best (the kernel's CPU accounting says what the noise hides)."""
    names = " and ".join(shape_text(*_shape(p)) for p in held_back)
    cores = float(floor.cores)
    return (f"the workers are CPU-bound: {floor.share:.2f} of a core each at one thread per worker, so "
            f"{cores:g} core{'s' * (cores != 1)} need {needed} workers ({cores:g} / {floor.share:.2f}, at "
            f"most the pool's); {lock} lets one thread of a worker run at a time, so {names}, with fewer workers, "
            "cannot keep the cores busy, though the intervals alone could not tell "
            f"{'it' if len(held_back) == 1 else 'them'} from the best: not chosen")


def _lock_reasons(marked: Sequence[TunePoint], chosen: TunePoint, reference: TunePoint, lock: str,
                  held_back: Sequence[TunePoint] = ()) -> list[str]:
    """Why threads replaced workers, or did not: the CPU a request used of the time it held its
    worker, at one thread per worker (``held_back``: the shapes the CPU floor left out)."""
    threaded = [p for p in marked if (p.threads or 1) > 1]
    share = cpu_share(reference)
    if not threaded:
        return []
    used = "" if share is None else f"at one thread per worker a request {_cpu_text(reference)}"
    if (chosen.threads or 1) > 1:
        waits = "" if share is None else f": {used}, and while a request waits, the worker's other threads run"
        what = ("threads replaced workers" if chosen.children < reference.children else
                "threads served more at once than the workers allowed")
        return [f"{what}{waits}; {lock} lets one thread of a worker run at a time, which costs little when requests "
                "mostly wait"]
    if all(_worse(p, "rps") for p in threaded):
        if share is not None and share >= CPU_BOUND:
            return [f"threads added nothing: every shape with more threads per worker served distinguishably less; "
                    f"the workers are CPU-bound ({used}), and {lock} lets one thread of a worker run at a time, so "
                    "a worker's threads share one core: only workers use more cores. 1 thread per worker"]
        return ["threads added nothing: every shape with more threads per worker served distinguishably less"
                + ("" if share is None else f" ({used})") + ". 1 thread per worker"]
    if held_back:  # the CPU floor's reason says why
        return []
    slower_p99 = [p for p in threaded if not _worse(p, "rps") and _worse(p, "p99")]
    if slower_p99:
        names = " and ".join(shape_text(*_shape(p)) for p in slower_p99)
        return [f"threads kept the throughput but not the latency: {names} served as many requests with a p99 "
                "distinguishably higher. 1 thread per worker"]
    return [f"threads saved no memory worth having at this load: {shape_text(*_shape(chosen))} had the smallest "
            "footprint of the shapes as fast, or one within "
            f"{SAME_MEMORY:.0%} of it with fewer threads"]


def apply_shape(choice: ChildrenChoice, shaped: ShapeChoice) -> ChildrenChoice:
    """``choice`` with the workers of the shape chosen (its reasons added)."""
    return replace(choice, chosen=shaped.workers, reasons=[*choice.reasons, *shaped.reasons])
