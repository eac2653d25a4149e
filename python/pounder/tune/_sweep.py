"""Interleaved trials over the points of a sweep (no I/O of its own: it calls the trial it is given).

Round 1 measures every point once, round 2 every point again, ...: round r of every point runs back
to back, so its trials saw the same neighbours on the machine, and a comparison of two points can
pair them round by round. A trial during which other processes took more than a quarter of the
server's cores (its summary's ``neighbour``, :func:`pounder.tune._points.neighbour_busy`) is
measured once more at once, in the same round (``again``): both are kept, the second counts. Then
every point still wide is measured once more."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pounder.pool import PoolParams
from pounder.tune._points import aggregate_trials

Plan = Sequence[tuple[str, PoolParams, int, str]]
"""(key, params, connections, label) per point."""

Trial = Callable[[str, PoolParams, int, int, str, bool], dict[str, Any]]
"""One stored trial: (key, params, connections, trial number, label, again) -> its summary
(``again``: the round's trial measured once more, stored under its own key)."""


def _measured(trial: Trial, key: str, params: PoolParams, connections: int, number: int,
              label: str) -> list[dict[str, Any]]:
    """Trial ``number`` of a point, and its re-measure when other processes were busy during it."""
    first = trial(key, params, connections, number, label, False)
    if not first.get("neighbour"):
        return [first]
    return [first, trial(key, params, connections, number, label, True)]


def interleaved(plan: Plan, rounds: int, trial: Trial) -> list[dict[str, Any]]:
    """``rounds`` rounds of interleaved trials over ``plan``, then one more trial of every point
    still wide; the aggregated points in the plan's order."""
    trials: dict[str, list[dict[str, Any]]] = {key: [] for key, _, _, _ in plan}
    for number in range(1, rounds + 1):
        for key, params, connections, label in plan:
            trials[key] += _measured(trial, key, params, connections, number, label)
    points = {key: aggregate_trials(trials[key]) for key in trials}
    for key, params, connections, label in plan:
        if points[key]["wide"]:
            trials[key] += _measured(trial, key, params, connections, rounds + 1, label)
            points[key] = aggregate_trials(trials[key])
            points[key]["remeasured"] = True
    return [points[key] for key, _, _, _ in plan]
