"""A stored ``pounder top --json`` view (``pounder/top/1``) read back into a
:class:`~pounder.top.TopView`, every value checked as it is read (:class:`pounder._records.Reader`):
one line naming the key when the document is not one ``pounder top`` writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pounder._errors import PounderError, public
from pounder._records import Reader
from pounder.top._view import TOP_SCHEMA, ChildRow, ExitedChild, TopTotals, TopView

MAX_CHILDREN = 100_000
"""The most children (and exited children) a view read back may list: no pre-forking server
runs more, and each is a row of the page."""
STATES_FROM = ("status", "proc")
STATUS_PAGES = ("apache", "php-fpm", "uwsgi", "puma")


class MalformedTopError(PounderError):
    """A document is not a ``pounder/top/1`` view (the message names the key)."""


_READ = Reader(MalformedTopError)


def _rows(value: object, key: str) -> list[Any]:
    return _READ.capped_list(value, key, MAX_CHILDREN, "children", "a view")


def _child(value: object, key: str) -> ChildRow:
    data = {"cpu_s": None, **_READ.as_dict(value, key)}  # (cpu_s is absent from views written before it was kept)
    child: ChildRow = _READ.record(ChildRow, data, key, state_from=_READ.choice(*STATES_FROM), busy=_READ.nullable(
        _READ.as_bool), requests=_READ.nullable(_READ.as_int), cpu_percent=_READ.nullable(_READ.as_float),
        cpu_s=_READ.nullable(_READ.as_float), strict=True)
    if child.pid < 1:
        raise MalformedTopError(f"'{key}.pid' must be a process id (1 or more), got {child.pid}")
    return child


def _totals(value: object) -> TopTotals:
    data = _READ.as_dict(value, "totals")
    states = _READ.as_dict(_READ.get(data, "by_state"), "totals.by_state")
    if len(states) > MAX_CHILDREN:
        raise MalformedTopError(f"'totals.by_state' names more than {MAX_CHILDREN:,} states")
    by_state = {str(name): _READ.as_int(count, f"totals.by_state.{name}") for name, count in states.items()}
    totals: TopTotals = _READ.record(TopTotals, data, "totals", by_state=lambda _value, _key: by_state,
                                     median_child_shared=_READ.nullable(_READ.as_int),
                                     requests_per_s=_READ.nullable(_READ.as_float),
                                     accept_queue=_READ.nullable(_READ.as_int), strict=True)
    return totals


@public
def top_from_dict(data: Mapping[str, Any]) -> TopView:
    """Read a decoded ``pounder/top/1`` document (what :meth:`TopView.to_dict` writes);
    :class:`MalformedTopError` names the key."""
    doc = _READ.as_dict(data, "the top level")
    if doc.get("schema") != TOP_SCHEMA:
        raise MalformedTopError(f"'schema' is {doc.get('schema')!r}, expected {TOP_SCHEMA!r}")
    target = _READ.as_dict(_READ.get(doc, "target"), "target")
    pid = _READ.as_int(_READ.get(target, "pid"), "target.pid")
    status = _READ.get(doc, "status")
    if status is not None and status not in STATUS_PAGES:
        raise MalformedTopError(f"'status' must be one of {', '.join(STATUS_PAGES)} or null; got {status!r:.40}")
    children = _rows(_READ.get(doc, "children"), "children")
    exited = _rows(_READ.get(doc, "exited"), "exited")
    return TopView(
        taken_at=_READ.utc_time(_READ.get(doc, "taken_at"), "taken_at", shown_chars=40),
        root_pid=pid,
        name=_READ.as_str(_READ.get(target, "name"), "target.name"),
        found_by=_READ.as_str(_READ.get(target, "found_by"), "target.found_by"),
        status=status,
        interval_s=_READ.nullable(_READ.as_float)(_READ.get(doc, "interval_s"), "interval_s"),
        children=tuple(_child(child, f"children[{i}]") for i, child in enumerate(children)),
        exited=tuple(_READ.record(ExitedChild, child, f"exited[{i}]", requests=_READ.nullable(_READ.as_int),
                                  strict=True) for i, child in enumerate(exited)),
        totals=_totals(_READ.get(doc, "totals")),
        notes=_READ.list_of(_READ.as_str)(_READ.get(doc, "notes"), "notes"),
    )
