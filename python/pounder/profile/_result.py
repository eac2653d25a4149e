"""The result of ``pounder profile`` (:class:`ProfileResult`), its JSON form (schema
``pounder/profile/1``, python/pounder/schemas/profile.schema.json) and the reader."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pounder._errors import PounderError, UsageError, check_path, public
from pounder._files import RESULT_LIMIT, check_input_file
from pounder._records import Reader, decode_json
from pounder.profile._cost import CostFigure, ProfilerCost
from pounder.profile._stacks import FunctionShare, by_inclusive, function_table

PROFILE_SCHEMA = "pounder/profile/1"
MAX_FUNCTIONS = 300
"""Functions stored: the first this many by self weight and by inclusive weight."""
MAX_STACKS = 20_000
"""Distinct stacks stored (the heaviest); the weight of the rest is stored as ``dropped_weight``."""


class MalformedProfileError(PounderError):
    """A profile result does not have the shape of ``pounder/profile/1``."""


@public
@dataclass(frozen=True)
class ProfileTrial:
    """One trial of the run: ``profiled`` or not, its completed and failed requests, requests/s
    (completed / elapsed) and the corrected p50 and p99 (µs); ``whole``: not cut short by a signal."""

    round: int
    profiled: bool
    complete: int
    failed: int
    non_2xx: int
    elapsed_s: float
    requests_per_s: float
    p50_us: int
    p99_us: int
    whole: bool = True
    nowhere: str | None = None
    """The trial got nowhere (:func:`~pounder.results.load_failure`): the line saying so; None when it
    got somewhere (and in results from before the rule)."""


@public
@dataclass(frozen=True)
class ChildProfile:
    """One profiled process: its weight, its share of the pool's, and its own top function with
    that function's share of the process's weight."""

    pid: int
    weight: int
    share: float
    top_function: str
    top_share: float


@public
@dataclass(frozen=True)
class ProfileResult:
    """Where a server's children spent their time during the profiled trials of a run, and what
    profiling cost (see :func:`pounder.profile.profile`)."""

    tool_version: str
    started_at: str
    url: str
    server_pid: int
    server_name: str
    found_by: str
    profiler: str
    profiler_version: str | None
    unit: str
    load: str
    rounds: int
    warmup_requests: int
    trials: tuple[ProfileTrial, ...]
    cost: ProfilerCost
    total_weight: int
    functions: tuple[FunctionShare, ...]
    children: tuple[ChildProfile, ...]
    stacks: dict[str, int]
    dropped_weight: int = 0
    parent_weight: int = 0
    started: tuple[int, ...] = ()
    exited: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False

    @property
    def by_self(self) -> list[FunctionShare]:
        return list(self.functions)

    @property
    def by_inclusive(self) -> list[FunctionShare]:
        return by_inclusive(self.functions)

    @property
    def profiled_requests(self) -> int:
        return sum(trial.complete for trial in self.trials if trial.profiled)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": PROFILE_SCHEMA, "tool_version": self.tool_version, "started_at": self.started_at,
            "url": self.url, "server": {"pid": self.server_pid, "name": self.server_name, "found_by": self.found_by},
            "profiler": {"name": self.profiler, "version": self.profiler_version, "unit": self.unit},
            "load": self.load, "rounds": self.rounds, "warmup_requests": self.warmup_requests,
            "trials": [vars(trial) for trial in self.trials],
            "cost": {"throughput": vars(self.cost.throughput), "p50": vars(self.cost.p50),
                     "left_out": list(self.cost.left_out)},
            "total_weight": self.total_weight, "functions": [row.to_dict() for row in self.functions],
            "children": [vars(child) for child in self.children], "stacks": dict(sorted(self.stacks.items())),
            "dropped_weight": self.dropped_weight, "parent_weight": self.parent_weight,
            "started": list(self.started), "exited": list(self.exited),
            "notes": list(self.notes), "files": dict(self.files), "interrupted": self.interrupted,
        }  # fmt: skip


def stored_functions(stacks: Mapping[str, int], calls: Mapping[str, int] | None) -> tuple[FunctionShare, ...]:
    """The functions a result keeps: the first :data:`MAX_FUNCTIONS` by self and by inclusive weight."""
    rows = function_table(stacks, calls)
    kept = {row.name for row in rows[:MAX_FUNCTIONS]}
    kept |= {row.name for row in by_inclusive(rows)[:MAX_FUNCTIONS]}
    return tuple(row for row in rows if row.name in kept)


def stored_stacks(stacks: Mapping[str, int]) -> tuple[dict[str, int], int]:
    """(the heaviest :data:`MAX_STACKS` stacks, the weight of the others)."""
    ordered = sorted(stacks.items(), key=lambda item: (-item[1], item[0]))
    kept = dict(ordered[:MAX_STACKS])
    return kept, sum(weight for _, weight in ordered[MAX_STACKS:])


_READ = Reader(MalformedProfileError)


def _function(value: object, key: str) -> FunctionShare:
    row = _READ.as_dict(value, key)
    calls = row.get("calls")
    return FunctionShare(
        name=_READ.as_str(_READ.get(row, "name"), f"{key}.name"),
        self_weight=_READ.as_int(_READ.get(row, "self"), f"{key}.self"),
        inclusive_weight=_READ.as_int(_READ.get(row, "inclusive"), f"{key}.inclusive"),
        self_share=_READ.as_float(_READ.get(row, "self_share"), f"{key}.self_share"),
        inclusive_share=_READ.as_float(_READ.get(row, "inclusive_share"), f"{key}.inclusive_share"),
        calls=None if calls is None else _READ.as_int(calls, f"{key}.calls"),
    )


def _weights(value: object, key: str) -> dict[str, int]:
    return {name: _READ.as_int(weight, f"{key}.{name}") for name, weight in _READ.as_dict(value, key).items()}


def _cost(value: object, key: str) -> ProfilerCost:
    cost = _READ.as_dict(value, key)
    return ProfilerCost(
        throughput=_READ.record(CostFigure, _READ.get(cost, "throughput"), f"{key}.throughput"),
        p50=_READ.record(CostFigure, _READ.get(cost, "p50"), f"{key}.p50"),
        left_out=tuple(_READ.as_str(item, f"{key}.left_out") for item in _READ.as_list(_READ.get(cost, "left_out"),
                                                                                          f"{key}.left_out")),
    )


def _trial(value: object, key: str) -> ProfileTrial:
    return _READ.record(ProfileTrial, value, key, nowhere=_READ.nullable(_READ.as_str))  # type: ignore[no-any-return]


def _child(value: object, key: str) -> ChildProfile:
    return _READ.record(ChildProfile, value, key)  # type: ignore[no-any-return]


def _pids(value: object, key: str) -> tuple[int, ...]:
    return tuple(_READ.as_int(pid, key) for pid in _READ.as_list(value, key))


@public
def profile_from_dict(data: Mapping[str, Any]) -> ProfileResult:
    """Read a decoded ``pounder/profile/1`` document; :class:`MalformedProfileError` names the key."""
    doc = _READ.as_dict(data, "the result")
    if doc.get("schema") != PROFILE_SCHEMA:
        raise MalformedProfileError(f"schema is {doc.get('schema')!r}, not {PROFILE_SCHEMA}")
    server = _READ.as_dict(_READ.get(doc, "server"), "server")
    profiler = _READ.as_dict(_READ.get(doc, "profiler"), "profiler")
    version = profiler.get("version")
    return ProfileResult(
        tool_version=_READ.as_str(_READ.get(doc, "tool_version"), "tool_version"),
        started_at=_READ.as_str(_READ.get(doc, "started_at"), "started_at"),
        url=_READ.as_str(_READ.get(doc, "url"), "url"),
        server_pid=_READ.as_int(_READ.get(server, "pid"), "server.pid"),
        server_name=_READ.as_str(_READ.get(server, "name"), "server.name"),
        found_by=_READ.as_str(_READ.get(server, "found_by"), "server.found_by"),
        profiler=_READ.as_str(_READ.get(profiler, "name"), "profiler.name"),
        profiler_version=None if version is None else _READ.as_str(version, "profiler.version"),
        unit=_READ.choice("samples", "ns")(_READ.get(profiler, "unit"), "profiler.unit"),
        load=_READ.as_str(_READ.get(doc, "load"), "load"),
        rounds=_READ.as_int(_READ.get(doc, "rounds"), "rounds"),
        warmup_requests=_READ.as_int(_READ.get(doc, "warmup_requests"), "warmup_requests"),
        trials=_READ.list_of(_trial)(_READ.get(doc, "trials"), "trials"),
        cost=_cost(_READ.get(doc, "cost"), "cost"),
        total_weight=_READ.as_int(_READ.get(doc, "total_weight"), "total_weight"),
        functions=_READ.list_of(_function)(_READ.get(doc, "functions"), "functions"),
        children=_READ.list_of(_child)(_READ.get(doc, "children"), "children"),
        stacks=_weights(_READ.get(doc, "stacks"), "stacks"),
        dropped_weight=_READ.as_int(_READ.get(doc, "dropped_weight"), "dropped_weight"),
        parent_weight=_READ.as_int(_READ.get(doc, "parent_weight"), "parent_weight"),
        started=_pids(_READ.get(doc, "started"), "started"),
        exited=_pids(_READ.get(doc, "exited"), "exited"),
        notes=tuple(_READ.as_str(note, "notes") for note in _READ.as_list(_READ.get(doc, "notes"), "notes")),
        files={name: _READ.as_str(path, f"files.{name}")
               for name, path in _READ.as_dict(_READ.get(doc, "files"), "files").items()},
        interrupted=_READ.as_bool(_READ.get(doc, "interrupted"), "interrupted"),
    )  # fmt: skip


@public
def load_profile(path: str | os.PathLike[str]) -> ProfileResult:
    """Read a ``pounder profile --json`` file; UsageError (one line) when it is not one."""
    where = check_path(path, "path")
    check_input_file(where, "profile result", RESULT_LIMIT)
    try:
        return profile_from_dict(decode_json(Path(where).read_text(encoding="utf-8")))
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f"{where} is not a pounder JSON result (not JSON)") from None
    except MalformedProfileError as error:
        raise UsageError(f"{where}: {error}") from None
