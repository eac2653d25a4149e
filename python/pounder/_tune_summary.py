"""An unfinished tuning run's ``summary.json`` as a typed record (:class:`TuneSummary`, with a line
per point measured so far, :class:`PointLine`), read once for the page ``pounder report`` draws,
leniently as :class:`pounder._tune_run.TuneRun` reads a finished run's recommendation: a member
not stored (a run stopped early, an empty document) reads as None or empty."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pounder._tune_point import Stored, TunePoint, tune_points
from pounder._tune_run import StoredPools


@dataclass(frozen=True)
class PointLine(Stored):
    """A point an unfinished run measured so far, as its summary lists it: its ``key``, ``step``,
    when it finished (``finished_at``) and its result in words (``described``), each None when
    not stored; :attr:`row` as the page's table shows it."""

    key: str | None
    step: str | None
    finished_at: str | None
    described: str | None

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> PointLine:
        return cls(value.get("key"), value.get("step"), value.get("finished_at"), value.get("described"),
                   stored=value)

    @property
    def row(self) -> list[Any]:
        """Key, step, finished, result: ``?``, ``?``, ``-`` and nothing where not stored (a stored
        null key or step shown as it is)."""
        stored = self.stored
        return [stored.get("key", "?"), stored.get("step", "?"), self.finished_at or "-", stored.get("described", "")]


@dataclass(frozen=True)
class TuneSummary(Stored, key="summary"):
    """The ``summary.json`` of a run that has not finished (``pounder/tune-summary/1``), rewritten
    after every point: the figures the run derived from its points so far (the sizes, the memory
    bound, the children sweep's and MaxRequestsPerChild's points, the pools compared, the workers x
    threads shapes measured (``shapes``, empty before that step), whether a leak was called), the
    spare-server trials measured and a line per point (:class:`PointLine`). A member not stored (a
    run stopped early, an empty document) reads as None or empty."""

    schema: str | None
    measure: Mapping[str, Any] | None
    other_measure: Mapping[str, Any] | None
    memory: Mapping[str, Any] | None
    sweep: tuple[TunePoint, ...]
    pools: StoredPools | None
    shapes: tuple[TunePoint, ...]
    mrpc: tuple[TunePoint, ...]
    leak: bool | None
    spare_trials: int
    points: tuple[PointLine, ...]

    @classmethod
    def from_dict(cls, value: object, key: str | None = None) -> TuneSummary:
        """The summary in ``value``; :class:`MalformedTuneError` naming the key of a point that lacks
        a figure or holds one of another type."""
        data: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
        measure, other_measure, memory = data.get("measure"), data.get("other_measure"), data.get("memory")
        sweep, pools, mrpc = list(data.get("sweep") or []), data.get("pools"), list(data.get("mrpc") or [])
        leak, spare_trials, lines = data.get("leak"), int(data.get("spare_trials") or 0), data.get("points") or []
        sweep_points = tuple(tune_points(sweep, "sweep"))
        mrpc_points = tuple(tune_points(mrpc, "mrpc"))
        pool_choice = None if pools is None else StoredPools.read(pools)
        shapes = data.get("shapes")
        shape_points = tuple(tune_points(list((shapes or {}).get("points") or []), "shapes"))
        return cls(data.get("schema"), measure, other_measure, memory, sweep_points, pool_choice, shape_points,
                   mrpc_points, leak, spare_trials, tuple(PointLine.read(line) for line in lines), stored=data)

    def to_dict(self) -> dict[str, Any]:
        """The document as it was read, its points' figures those of their records."""
        out = dict(self.stored)
        for name in ("sweep", "mrpc"):
            if name in out:
                out[name] = [point.to_dict() for point in getattr(self, name)]
        if self.pools is not None:
            out["pools"] = self.pools.to_dict()
        if out.get("shapes") is not None:
            out["shapes"] = {**out["shapes"], "points": [point.to_dict() for point in self.shapes]}
        return out
