"""A stored ``pounder mem --json`` result (``pounder/mem/2``, or ``/1`` before pounder's own
process was taken out of the figures) read back: :func:`load_mem` gives a
:class:`MemResult` holding the :class:`~pounder.procs.PoolSnapshot` and the MaxClients figures as
they were measured (the totals are recomputed from the stored processes, by the same rules)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pounder._errors import PounderError, UsageError, check_path, public
from pounder._files import RESULT_LIMIT, check_input_file
from pounder._records import Reader, decode_json
from pounder.procs._maxclients import MaxClients, why_no_max_clients
from pounder.procs._read import ROLES, ProcMem
from pounder.procs._snapshot import MEM_SCHEMA, PoolSnapshot

MEM_READ_SCHEMAS = ("pounder/mem/1", MEM_SCHEMA)


class MalformedMemError(PounderError):
    """A mem result does not have the shape of ``pounder/mem/2`` (or ``/1``)."""


@public
@dataclass(frozen=True)
class MemResult:
    """What ``pounder mem --json`` wrote: the snapshot, the server as it was found
    (``found_by``: how, None when not recorded) and MaxClients (None when it was not computed,
    e.g. the server had no children)."""

    tool_version: str
    taken_at: str
    found_by: str | None
    snapshot: PoolSnapshot
    max_clients: MaxClients | None
    why_no_max_clients: str | None = None
    """Why ``max_clients`` is None: no child, a child size that is no measurement
    (:func:`~pounder.procs.why_no_max_clients`), or not computed when the result was written."""


_READ = Reader(MalformedMemError)


def _proc(value: object, key: str) -> ProcMem:
    return _READ.record(ProcMem, value, key, role=_READ.choice(*ROLES))  # type: ignore[no-any-return]


@public
def mem_from_dict(data: Mapping[str, Any]) -> MemResult:
    """Read a decoded ``pounder/mem/2`` (or ``/1``) document; :class:`MalformedMemError` names the key."""
    doc = _READ.as_dict(data, "the result")
    if doc.get("schema") not in MEM_READ_SCHEMAS:
        raise MalformedMemError(f"'schema' is {doc.get('schema')!r}, expected one of {', '.join(MEM_READ_SCHEMAS)}")
    own_excluded = doc.get("schema") == MEM_SCHEMA and _READ.as_bool(
        _READ.get(doc, "own_process_excluded"), "own_process_excluded")
    taken_at = _READ.as_str(_READ.get(doc, "taken_at"), "taken_at")
    target = _READ.as_dict(_READ.get(doc, "target"), "target")
    processes = _READ.list_of(_proc)(_READ.get(doc, "processes"), "processes")
    if not processes or processes[0].role != "parent":
        raise MalformedMemError("'processes' must list the parent first")
    skipped = _READ.list_of(_READ.as_int)(doc.get("skipped", []), "skipped")
    stored = _READ.get(doc, "max_clients")
    limit = None if stored is None else _READ.record(MaxClients, stored, "max_clients", mem_available=_READ.nullable(
        _READ.as_int))
    snapshot = PoolSnapshot(_READ.as_int(_READ.get(target, "pid"), "target.pid"), _READ.utc_time(taken_at, "taken_at"),
                            processes, skipped, own_excluded=own_excluded)
    found_by = _READ.nullable(_READ.as_str)(target.get("found_by"), "target.found_by")
    totals = snapshot.totals  # the command's rule on the sizes measured: a MaxClients from no child is none
    why = why_no_max_clients(totals.children, totals.max_child_uss, totals.max_child_rss)
    if why is None and limit is not None:
        why = why_no_max_clients(limit.children, limit.max_child_uss, limit.max_child_rss)
    if why is None and limit is None:
        why = "it was not computed when the result was written"
    return MemResult(_READ.as_str(_READ.get(doc, "tool_version"), "tool_version"), taken_at, found_by, snapshot,
                     None if why else limit, why)


@public
def load_mem(path: str | os.PathLike[str]) -> MemResult:
    """Read a result written by ``pounder mem --json``. :class:`~pounder.UsageError` when the file
    is missing, unreadable or not a mem result."""
    path = Path(check_path(path, "load_mem: path"))
    check_input_file(path, "result file", RESULT_LIMIT)
    try:
        data = decode_json(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot read result file {path}: {error.strerror or error}") from None
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f"{path} is not a pounder mem result (not JSON)") from None
    try:
        return mem_from_dict(data)
    except MalformedMemError as error:
        raise UsageError(f"{path} is not a pounder mem result: {error}") from None
