"""A leaking child needs room to grow: the pool and MaxRequestsPerChild decided together (pure).

The memory bound divides the budget by the child's size *now*. A child that leaks grows until it
is replaced, so a pool as large as the memory bound leaves it no room: MaxRequestsPerChild would
have to be tiny, and respawning would cost more throughput than the leak. The method's answer is
to give each child the room it grows into between respawns: with ``v`` the smallest
MaxRequestsPerChild measured that costs at most ``max_loss`` of the throughput, a child reaches
``start + growth x v`` before it is replaced, and ``(RAM - parent - shared) / (start + growth x v)``
children fit. When the pool was sized by memory (or ``--max-children``), it is lowered to that;
a pool sized by a target is left to the MaxRequestsPerChild choice, which then says memory forces
frequent respawns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pounder._tune_point import Points, tune_points
from pounder._units import mib_unit
from pounder.pool import ChildLimit
from pounder.tune._analysis import ChildrenChoice
from pounder.tune._memory import MemoryBound, growth
from pounder.tune._mrpc import (
    MaxRequestsChoice,
    _affordable,
    _measured,
    _value,
    _vs,
    child_start,
)


def room_for_growth(choice: ChildrenChoice, mrpc_points: Points, measure: Mapping[str, Any],
                    memory: MemoryBound, *, max_loss: float, counts: str = "requests",
                    target: bool = False, threaded: tuple[int, int] | None = None) -> ChildrenChoice:
    """``choice`` with the pool lowered to leave a leaking child room to grow (module documentation);
    unchanged without a leak, for a pool sized by a target (``target``: a target load was given),
    or when no value measured is affordable. ``threaded``: the chosen shape's threads and what
    they add to a worker's start (:func:`pounder.tune._mrpc.child_start`)."""
    grown = growth(measure)
    if not grown.leak or choice.decided_by not in ("memory", "max-children", "offered-load") or (
            target and choice.decided_by == "offered-load"):
        return choice
    affordable = sorted(_value(p) for p in tune_points(mrpc_points, "mrpc")
                        if _value(p) > 0 and _vs(p) is not None and _affordable(_measured(p), max_loss))
    if not affordable:
        return choice
    value = affordable[0]
    start, start_text = child_start(measure, threaded)
    grown_to = start + grown.second * value
    fit = max(1, int((memory.ram - memory.parent_uss - memory.shared) // grown_to))
    if fit >= choice.chosen:
        return choice
    unit = "requests" if counts == "requests" else "connections"
    reason = (f"the leak needs room: a child starts at {start_text} and grows {grown.second:,.0f} bytes per "
              f"request; replaced every {value:,} {unit} (the smallest value measured that costs at most "
              f"{max_loss:.0%}), it reaches {mib_unit(grown_to)}, and {fit} such children fit the budget "
              f"(({mib_unit(memory.ram)} - {mib_unit(memory.parent_uss)} parent - {mib_unit(memory.shared)} shared) / "
              f"{mib_unit(grown_to)}): the pool is "
              f"{fit}, not the {choice.chosen} the children's present size allows")
    return dataclasses.replace(choice, chosen=fit, decided_by="memory", reasons=[*choice.reasons, reason])


def child_limit(measure: Mapping[str, Any], memory: MemoryBound, mrpc: MaxRequestsChoice, children: int,
                killer_requests: int) -> ChildLimit:
    """How far each of ``children`` may grow, for :meth:`pounder.pool.Adapter.size_limit`: the
    warmed size, its share of the budget, the measured growth and statm of the sizes step;
    ``killer_requests``: what a leaking child may serve where the server has no request limit."""
    return ChildLimit(children=children, start=mrpc.child_start_bytes, limit=memory.child_limit(children),
                      shared=memory.shared, requests=killer_requests, parent=int(measure["parent"]["rss"]),
                      growth=growth(measure).per_request).with_statm(measure.get("statm"))
