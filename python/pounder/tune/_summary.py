"""What a run that has not finished shows: ``summary.json``, rewritten by the run after every point
it stores, holds the figures the run derives from its points so far (the memory bound, each sweep
point aggregated from its trials, MaxRequestsPerChild against unlimited, the spare trials counted,
one line per point), so that ``pounder report`` only reads what the run decided, never decides again. A run
that finishes writes the same figures (and the decisions) to ``recommendation.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder._units import children_text, mib_unit
from pounder.tune._life import life_line
from pounder.tune._memory import MemoryBound, growth, memory_bound
from pounder.tune._mrpc import mrpc_losses
from pounder.tune._options import TuneOptions
from pounder.tune._points import aggregate_trials, trials_by


def describe_point(step: str, summary: Mapping[str, Any]) -> str:
    """One line for a measured point (the log line of the run, a row of an interrupted run's report)."""
    if step == "sizes":
        end = summary["end"]
        charged = (summary.get("cgroup") or {}).get("end")
        return (f"child USS {mib_unit(end['max_uss'])} (max), shared {mib_unit(end['median_shared'])}, "
                f"growth {summary['growth_second']:,.0f} B/request" + ("" if not charged else
                f"; sum of PSS {mib_unit(end['footprint'])}, its cgroup's current {mib_unit(charged['current'])}, "
                f"anon {mib_unit(charged['anon'])}"))
    if step == "life":
        return life_line(summary)
    text = f"{summary['rps']:,.0f} req/s, p99 {summary['p99_ms']:,.1f} ms"
    if summary.get("trial") is not None:
        text = f"trial {summary['trial']}: {text}"
    if summary.get("failed"):
        text += f", {summary['failed']} failed"
    if step == "max-requests":
        text += f", {summary['respawns']} respawns"
    if step == "spare":
        text += f", {children_text(int(summary['idle_children']))} ready at the start"
    if step == "confirm":
        load = f"{float(summary['rate']):,.0f} req/s offered" if summary.get("rate") else \
            f"{summary['connections']} clients"
        text = (f"{children_text(int(summary['children']))} at {load}: {text}, "
                f"footprint {mib_unit(summary['footprint'])} ({children_text(int(summary['pool_children']))} after)")
    if summary.get("pod_cores") is not None:  # --cpus: the server's CPU as its cgroup counts it
        text += (f", server {float(summary['pod_cores']):.2f} cores of its quota, throttled in "
                 f"{float(summary.get('throttled_share') or 0):.0%} of the periods")
    if summary.get("oom_note"):
        text += f"; a failed trial: {summary['oom_note']}"
    return text


def _aggregated(trials: Sequence[Mapping[str, Any]], key: str, rounds: int) -> list[dict[str, Any]]:
    """The points of a sweep's ``trials`` grouped by ``key`` (``shape``: workers and threads), as the
    run aggregates them (a point with more trials than the run's rounds was measured again for
    being wide)."""
    points = []
    if key == "shape":
        grouped: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
        for trial in sorted(trials, key=lambda t: int(t.get("trial") or 1)):
            grouped.setdefault((int(trial["children"]), int(trial.get("threads") or 1)), []).append(trial)
        groups = list(grouped.values())
    else:
        groups = list(trials_by(trials, key).values())
    for trials_of_one in groups:
        point = aggregate_trials(trials_of_one)
        if rounds and len(trials_of_one) > rounds:
            point["remeasured"] = True
        points.append(point)
    return points


def summarize(options: TuneOptions, points: Sequence[Mapping[str, Any]],
              memory: MemoryBound | None = None) -> dict[str, Any]:
    """The ``summary.json`` of a run with ``options`` whose stored points are ``points`` (in the
    order measured); ``memory``: the run's memory bound when it has one (else computed from the
    size measurement)."""
    summaries = {str(p.get("key")): p.get("summary") or {} for p in points}
    measure = summaries.get("sizes")
    other = next((summaries[k] for k in ("sizes-preload-on", "sizes-preload-off") if k in summaries), None)
    if memory is None and measure is not None:
        memory = memory_bound(measure, options.ram, options.safety_margin, options.ram_source)
    by_step: dict[str, list[Mapping[str, Any]]] = {}
    for point in points:
        by_step.setdefault(str(point.get("step")), []).append(point.get("summary") or {})
    sweep = sorted(_aggregated(by_step.get("children", []), "children", options.trials),
                   key=lambda p: int(p["children"]))
    pools = None
    if by_step.get("pools"):  # the candidates' trials, aggregated; nothing chosen yet
        pools = {"points": sorted(_aggregated(by_step["pools"], "children", options.trials),
                                  key=lambda p: int(p["children"]))}
    shapes = None
    if by_step.get("threads"):  # the shapes' trials, aggregated in the order measured; nothing chosen yet
        shapes = {"points": _aggregated(by_step["threads"], "shape", options.trials)}
    order = list(options.mrpc_values)
    mrpc = _aggregated(by_step.get("max-requests", []), "max_requests", options.trials)
    mrpc.sort(key=lambda p: order.index(int(p["max_requests"])) if int(p["max_requests"]) in order else 1 << 40)
    return {
        "points": [{"key": str(p.get("key")), "step": str(p.get("step")), "finished_at": p.get("finished_at"),
                    "described": describe_point(str(p.get("step")), p.get("summary") or {})} for p in points],
        "measure": measure,
        "other_measure": other,
        "leak": None if measure is None else growth(measure).leak,
        "memory": None if memory is None else memory.to_dict(),
        "sweep": sweep,
        "pools": pools,
        "shapes": shapes,
        "mrpc": [p.to_dict() for p in mrpc_losses(mrpc)],
        "spare_trials": sum(1 for p in points if p.get("step") == "spare" and "-t" in str(p.get("key"))),
    }
