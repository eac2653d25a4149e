"""A sweep point from its trials: medians and 95 % bootstrap intervals (pure, no I/O).

Every point of the children and MaxRequestsPerChild sweeps is measured in ``trials`` interleaved
trials (round 1: every value once, round 2: every value again, ...), each a fresh start of the
server, warmed, then loaded. A trial counts only when its requests went well
(:func:`pounder.compare.clean_trial`: at least one completed, at most 1 % failed). The point's
figures are the medians over its counted trials; requests/s and the p99 get the percentile-bootstrap
interval of :func:`pounder.compare.median_interval`. A point whose interval is wider than ``WIDE`` of its
median on either side is measured once more; still wide, it is flagged ``wide``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pounder._errors import public
from pounder._figures import WIDE
from pounder._tune_point import TunePoint
from pounder.compare import clean_trial, median_interval
from pounder.pool import status_summary

QUEUED_BUSY = 0.9
"""A point's busy time (children / throughput) is the time itself, not an upper bound, when a
connection waited in the accept queue in at least this share of the samples (every child busy)."""

NEIGHBOUR = 0.25
"""Other processes taking more than this share of the server's cores during a trial: the trial is
measured once more, and the advice names them, not the application."""

_MEDIANS = ("p50_ms", "p95_ms", "p99_ms", "server_cores", "client_cores", "other_cores", "front_cores", "server_cpu_us",
            "elapsed_s", "queued")
_SUMS = ("complete", "failed", "non_2xx", "respawns")
_POD_MEDIANS = ("pod_cores", "pod_quota", "throttled_share", "throttled_s")
_POD_SUMS = ("oom_kills",)
"""A pod's figures (``--cpus``), in points whose trials ran in one."""
_MEMORY_MEDIANS = ("footprint", "child_uss", "child_shared")
"""The memory after the load (bytes), in points whose trials measured it (the shapes)."""


def _median(values: Sequence[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.median(present) if present else None


def half_width(point: Mapping[str, Any]) -> float | None:
    """The interval's largest distance from the median, as a fraction of it (None without one)."""
    low, high, middle = point.get("rps_low"), point.get("rps_high"), float(point.get("rps") or 0.0)
    if low is None or high is None or middle <= 0:
        return None
    return max(middle - float(low), float(high) - middle) / middle


def is_wide(point: Mapping[str, Any]) -> bool:
    """No interval (fewer than 2 counted trials), or one wider than :data:`WIDE`."""
    width = half_width(point)
    return width is None or width > WIDE


def neighbour_busy(summary: Mapping[str, Any], cores: float) -> bool:
    """Whether other processes took more than :data:`NEIGHBOUR` of ``cores`` during the trial
    (False when not measured)."""
    other = summary.get("other_cores")
    return other is not None and float(other) > NEIGHBOUR * cores


def replaced(trials: Sequence[Mapping[str, Any]]) -> list[int]:
    """The rounds whose first trial was measured during a neighbour's burst and measured again
    (a trial ``again`` of the same round present): those first trials are left out."""
    again = {int(t.get("trial") or 0) for t in trials if t.get("again")}
    return sorted({int(t.get("trial") or 0) for t in trials if t.get("neighbour") and not t.get("again")} & again)


def counts(trial: Mapping[str, Any], skipped: Sequence[int] = ()) -> bool:
    """Whether a trial counts: clean (:func:`pounder.compare.clean_trial`) and not the first of a
    round measured again (``skipped``: :func:`replaced`)."""
    if trial.get("neighbour") and not trial.get("again") and int(trial.get("trial") or 0) in skipped:
        return False
    if trial.get("counted") is False:  # marked so by its step
        return False
    if "complete" not in trial:  # a figure alone (no request counts): nothing says it failed
        return True
    if trial.get("oom_kills"):  # the pod's OOM killer killed a child: a failed trial (its ``oom_note``)
        return False
    return clean_trial(int(trial["complete"]), int(trial["failed"]))


@public
def aggregate_trials(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The point of ``trials`` (each one trial's summary, as stored; at least one)."""
    if not trials:
        raise ValueError("aggregate: no trials")
    first = trials[0]
    skipped = replaced(trials)
    counted = [t for t in trials if counts(t, skipped)]
    point: dict[str, Any] = {key: first[key] for key in ("children", "threads", "max_requests", "connections")
                             if key in first}
    point["trials"] = [dict(t) for t in trials]
    point["counted"] = len(counted)
    if skipped:
        point["neighbours"] = skipped
    if counted:
        estimate = median_interval([float(t["rps"]) for t in counted])
        point.update(rps=estimate.median, rps_low=estimate.low, rps_high=estimate.high)
    else:
        point.update(rps=0.0, rps_low=None, rps_high=None)
    pod = any("pod_cores" in t for t in trials)
    for key in _MEDIANS + (_POD_MEDIANS if pod else ()):
        point[key] = _median([t.get(key) for t in counted])
    latencies = [float(t["p99_ms"]) for t in counted if t.get("p99_ms") is not None]
    p99 = median_interval(latencies) if latencies else None
    point.update(p99_low=None if p99 is None else p99.low, p99_high=None if p99 is None else p99.high)
    for key in _MEMORY_MEDIANS:
        if any(key in t for t in trials):
            middle = _median([t.get(key) for t in counted])
            point[key] = None if middle is None else round(middle)
    for key in _SUMS + (_POD_SUMS if pod else ()):
        point[key] = sum(int(t.get(key) or 0) for t in trials)
    sizes = [int(t["max_child_uss"]) for t in trials if t.get("max_child_uss") is not None]
    point["max_child_uss"] = max(sizes) if sizes else None
    point["warmed"] = min((int(t.get("warmed") or 0) for t in trials), default=0)
    if any("server_status" in t for t in trials):  # the server's own counters (absent in earlier results)
        point["server_status"] = status_summary(trials)
    # a child of T threads holds T requests at once (a shape's point): T x children slots
    slots = int(point.get("children") or 0) * int(point.get("threads") or 1)
    connections = int(point.get("connections") or 0)
    held = min(slots, connections) if slots and connections else slots or connections
    # closed loop: at most min(slots, connections) requests are held by children at any time,
    # exactly that many while a connection waits for a free child (``queued``), so each request
    # holds a child for at most held / throughput seconds (Little's law)
    point["busy_s"] = held / point["rps"] if point["rps"] > 0 and held else None
    point["wide"] = is_wide(point)
    return point


def trial_values(point: TunePoint, key: str) -> list[float]:
    """``key`` of each of the point's counted trials (:func:`counts`), in their order."""
    trials = point.trials
    skipped = replaced(trials)
    return [float(t[key]) for t in trials if t.get(key) is not None and counts(t, skipped)]


def round_values(point: TunePoint, key: str) -> dict[int, float]:
    """``key`` of each of the point's counted trials (:func:`counts`) by its round (``trial``;
    trials without one are left out)."""
    trials = point.trials
    skipped = replaced(trials)
    return {int(t["trial"]): float(t[key]) for t in trials
            if t.get("trial") is not None and t.get(key) is not None and counts(t, skipped)}


def paired_values(point: TunePoint, other: TunePoint, key: str) -> tuple[list[float], list[float]]:
    """``key`` of the rounds both points counted, in round order (the round r of each ran back to
    back in an interleaved sweep); rounds only one of them counted are dropped."""
    ours, theirs = round_values(point, key), round_values(other, key)
    both = sorted(set(ours) & set(theirs))
    return [ours[r] for r in both], [theirs[r] for r in both]


@public
def busy_measured(point: TunePoint) -> bool | None:
    """Whether the point's ``busy_s`` is the time a request holds a child (the accept queue held a
    connection in at least :data:`QUEUED_BUSY` of the samples: every child was busy) or only an
    upper bound (False); None when the queue was not sampled (results of earlier versions)."""
    return None if point.queued is None else point.queued >= QUEUED_BUSY


@public
def trials_by(points: Sequence[Mapping[str, Any]], key: str) -> dict[int, list[Mapping[str, Any]]]:
    """Trial summaries grouped by ``key`` (``children`` or ``max_requests``), in trial order."""
    grouped: dict[int, list[Mapping[str, Any]]] = {}
    for point in sorted(points, key=lambda p: int(p.get("trial") or 1)):
        grouped.setdefault(int(point[key]), []).append(point)
    return grouped


def still_growing(points: Sequence[TunePoint], tolerance: float) -> bool:
    """Whether the largest count swept is the best and beats every smaller count's median by more
    than ``tolerance``: throughput still grows there, and the next count is worth measuring."""
    ordered = sorted(points, key=lambda p: p.children)
    if len(ordered) < 2:
        return True
    best_before = max(p.rps for p in ordered[:-1])
    return ordered[-1].rps > best_before * (1 + tolerance)
