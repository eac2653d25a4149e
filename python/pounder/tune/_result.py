"""What a tuning run recommends, with everything behind it (:class:`TuneResult`): the record
:class:`~pounder.tune.TuneSession` returns, stored as ``result.json`` by its ``to_dict``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pounder._errors import public
from pounder._tune_point import TunePoint
from pounder._tune_run import OfferedLoad, SpareChoice, Target
from pounder._version import __version__
from pounder.pool import Adapter, PoolParams
from pounder.tune._analysis import ChildrenChoice
from pounder.tune._fleet import Fleet
from pounder.tune._life import Life
from pounder.tune._memory import MemoryBound
from pounder.tune._mrpc import MaxRequestsChoice
from pounder.tune._options import TuneOptions
from pounder.tune._pools import PoolChoice
from pounder.tune._shapes import ShapeChoice


@public
@dataclass(frozen=True)
class TuneResult:
    """What a tuning run recommends, with everything behind it."""

    adapter: Adapter
    options: TuneOptions
    params: PoolParams
    config: str
    measure: Mapping[str, Any]
    other_measure: Mapping[str, Any] | None
    memory: MemoryBound
    other_memory: MemoryBound | None
    sweep: Sequence[TunePoint]
    children: ChildrenChoice
    mrpc_points: Sequence[TunePoint]
    max_requests: MaxRequestsChoice
    spare: Sequence[TunePoint]
    advice: list[str]
    cores: float  # the server's cores for the decisions: the CPUs it ran on, or the pod's quota (--cpus)
    results_dir: str
    target: Target
    confirmation: Mapping[str, Any] | None
    workload: str
    cpus: str
    offered: OfferedLoad | None = None
    pools: PoolChoice | None = None
    spare_choice: SpareChoice | None = None
    why: Sequence[str] = ()
    profile_lines: tuple[str, ...] = ()  # tune --profile: its summary (the profile: profile.json, _profile_step)
    fleet: Fleet | None = None  # the servers a peak needs, a container's resources (_fleet)
    shapes: ShapeChoice | None = None  # workers x threads compared at the offered load (_shapes)
    life: Life | None = None  # shared and private memory over a child's life (--life; _life)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_version": __version__,
            "server": self.adapter.to_dict(),
            "described": self.adapter.describe(),
            "names": dict(self.adapter.names),
            "params": self.params.to_dict(),
            "config": self.config,
            "cores": self.cores,
            "measure": dict(self.measure),
            "other_measure": None if self.other_measure is None else dict(self.other_measure),
            "memory": self.memory.to_dict(),
            "other_memory": None if self.other_memory is None else self.other_memory.to_dict(),
            "sweep": [p.to_dict() for p in self.sweep],
            "children": self.children.to_dict(),
            "mrpc": [p.to_dict() for p in self.mrpc_points],
            "max_requests": self.max_requests.to_dict(),
            "spare": [p.to_dict() for p in self.spare],
            "advice": list(self.advice),
            "target": self.target.to_dict(),
            "confirmation": None if self.confirmation is None else dict(self.confirmation),
            "workload": self.workload,
            "cpus": self.cpus,
            "offered": None if self.offered is None else self.offered.to_dict(),
            "pools": None if self.pools is None else self.pools.to_dict(),
            "spare_choice": None if self.spare_choice is None else self.spare_choice.to_dict(),
            "why": list(self.why),
            "fleet": None if self.fleet is None else self.fleet.to_dict(),
            **({} if self.shapes is None else {"shapes": self.shapes.to_dict()}),
            "life": None if self.life is None else self.life.to_dict(),
        }

    def to_junit(self) -> str:
        """The run as JUnit XML (``pounder tune --junit``: :mod:`pounder.tune._junit`)."""
        from pounder.tune._junit import tune_junit

        return tune_junit(self).render()

    def carried_by_fleet(self, check: str) -> bool:
        """Whether the confirmation's check ``check``, not met, is carried by the fleet: a peak one
        server cannot answer (``rate``) is what the fleet's servers are for (:mod:`pounder.tune._fleet`)."""
        size = None if self.fleet is None else self.fleet.size
        return check == "rate" and size is not None and size.servers is not None

    def unmet_checks(self) -> list[str]:
        """The confirmation's checks not met that fail the run, in words (none when it was not run:
        ``--no-confirm``); a rate the fleet carries does not (:meth:`carried_by_fleet`)."""
        if self.confirmation is None or self.confirmation["ok"]:
            return []
        return [check["text"] for check in self.confirmation["checks"]
                if not check["ok"] and not self.carried_by_fleet(check["name"])]
