"""Spare servers from repeated burst tests (pure, no I/O).

A burst: the server started with a spare setting, left idle for a second (its parent settles the
spare children), then stepped at once to the burst's concurrency. Each setting (the server's
defaults, "before", and the one the method calls for, "after": :func:`~pounder.tune._analysis.
spare_settings`) is measured in interleaved trials; a setting's point holds the medians of its
trials (requests/s, p99, the steady p99 and the seconds latency stayed high) with the intervals of
the requests/s and the p99.

The recommendation is the setting that measured best, never one measured worse than the
defaults: "after" only when its median p99 over the burst is no higher than the defaults' and
neither its p99 is distinguishably above theirs nor its throughput distinguishably below
(:func:`pounder.compare.ratio_interval`); otherwise the defaults are kept. When both settings are
the same (a pool no larger than the defaults), only the defaults are measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pounder._figures import BURST_FACTOR
from pounder._tune_point import TunePoint, present, tune_points
from pounder._tune_run import SpareChoice
from pounder.compare import clean_trial, median_interval
from pounder.tune._points import _median
from pounder.tune._pools import P99_EFFECT, p99_with_interval, versus
from pounder.tune._spare_rules import burst_seconds
from pounder.tune._text import (
    ms_text,
    rps_text,
)

_MEDIANS = ("rps", "p50_ms", "p95_ms", "p99_ms", "steady_p99_ms", "first_p99_ms", "server_cores", "client_cores",
            "other_cores", "front_cores", "server_cpu_us", "elapsed_s")
_SUMS = ("complete", "failed", "non_2xx")
_FIXED = ("children", "start_servers", "min_spare", "max_spare", "connections")


def aggregate_spare(name: str, trials: Sequence[Mapping[str, Any]], reference_us: float) -> TunePoint:
    """The point of one setting from its trials, as a record (its document kept: written as
    aggregated); ``reference_us``: the steady p99 with every child ready (the lowest steady p99 of
    every trial of both settings), which a burst second's p99 is held against."""
    if not trials:
        raise ValueError("aggregate_spare: no trials")
    first = trials[0]
    counted = [dict(t) for t in trials if clean_trial(int(t["complete"]), int(t["failed"]))]
    point: dict[str, Any] = {key: first[key] for key in _FIXED}
    point.update(name=name, trials=[{**dict(t), "burst_s": burst_seconds(t["series"], reference_us)} for t in trials],
                 counted=len(counted), series=list(first["series"]), reference_p99_ms=reference_us / 1000)
    for key in _MEDIANS:
        point[key] = _median([t.get(key) for t in counted]) if counted else None
    if point["rps"] is None:
        point["rps"] = 0.0
    if point["p99_ms"] is None:
        point["p99_ms"] = 0.0
    for key in _SUMS:
        point[key] = sum(int(t.get(key) or 0) for t in trials)
    point["idle_children"] = int(statistics.median(int(t["idle_children"]) for t in trials))
    point["burst_s"] = int(statistics.median(burst_seconds(t["series"], reference_us) for t in trials))
    for key, low, high in (("rps", "rps_low", "rps_high"), ("p99_ms", "p99_low", "p99_high")):
        values = [float(t[key]) for t in counted if t.get(key) is not None]
        estimate = median_interval(values) if values else None
        point[low] = None if estimate is None else estimate.low
        point[high] = None if estimate is None else estimate.high
    return TunePoint.from_dict(point, f"spare[{name}]")


def reference_us(trials: Sequence[Mapping[str, Any]]) -> float:
    """The lowest steady p99 (us) of ``trials`` (0 when none has one)."""
    steady = [float(t["steady_p99_ms"]) for t in trials if t.get("steady_p99_ms") is not None]
    return min(steady) * 1000 if steady else 0.0


def _settings(point: TunePoint) -> str:
    return (f"StartServers {point.start_servers}, MinSpareServers {point.min_spare}, MaxSpareServers "
            f"{point.max_spare}")


def _figures(point: TunePoint) -> str:
    return (f"{p99_with_interval(point)}, {rps_text(point.rps)} req/s, latency high for "
            f"{point.burst_s} s, {point.idle_children} idle children at the start")


def _choice(name: str, why: str, reasons: list[str]) -> SpareChoice:
    """The record of the choice, its document ``{"name", "why", "reasons"}`` as stored."""
    return SpareChoice.read({"name": name, "why": why, "reasons": reasons})


def choose_spare(points: Sequence[Mapping[str, Any] | TunePoint], child_start_s: float | None, *,
                 tolerance: float = 0.05) -> SpareChoice:
    """Which setting to recommend (module documentation): its name, the deciding fact and the reasons."""
    records = tune_points(points, "spare")
    before = next(p for p in records if p.name == "before")
    after = next((p for p in records if p.name == "after"), None)
    started = ("" if child_start_s is None
               else f"; a lost child was replaced and serving after {child_start_s:,.2f} s (step 1)")
    head = (f"from idle to {before.connections} clients at once, {len(before.trials)} interleaved "
            f"trials per setting (latency high: a second's p99 above {BURST_FACTOR:g} x "
            f"{ms_text(present(before.reference_p99_ms))} ms, the steady p99 with every child ready){started}")
    if after is None:
        return _choice("before", f"spare servers: the defaults ({_settings(before)}) already start the whole pool",
                       [f"spare servers: the pool is no larger than the defaults start: {_settings(before)}: "
                        f"{_figures(before)}; {head}"])
    # the two settings' trials ran round by round: compared in pairs (pounder.tune._pools.versus)
    p99 = versus(after, before, "p99_ms", higher_is_better=False, effect=P99_EFFECT)
    rps = versus(after, before, "rps", higher_is_better=True, effect=tolerance)
    # a tie keeps the defaults: more idle children cost memory for nothing measured
    better = present(after.p99_ms) < present(before.p99_ms) and not p99.worse and not rps.worse
    chosen = after if better else before
    verdict = ("measured no worse than the defaults, and its median p99 lower" if better else
               "not measured better than the defaults (a median p99 no lower, or a p99 distinguishably above or a "
               "throughput distinguishably below theirs): the defaults are kept")
    reasons = [f"spare servers, {head}: the defaults ({_settings(before)}): {_figures(before)}; "
               f"{_settings(after)}: {_figures(after)}: {verdict}"]
    name = "the defaults" if chosen is before else "raised"
    why = f"spare servers {name}, {_settings(chosen)}: burst {p99_with_interval(chosen)} against " + (
        f"the defaults' {ms_text(present(before.p99_ms))} ms" if chosen is after else
        f"{ms_text(present(after.p99_ms))} ms with {_settings(after)}")
    return _choice(present(chosen.name), why, reasons)
