"""One view of a server's children (:class:`TopView`) and its versioned JSON form (``pounder/top/1``,
``python/pounder/schemas/top.schema.json``)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pounder._errors import public
from pounder._version import __version__

TOP_SCHEMA = "pounder/top/1"
Mark = Literal["new", "exited"]


@public
@dataclass(frozen=True)
class ChildRow:
    """One child now. ``state``: the server's word for it when its status page has the pid
    (``state_from`` "status": idle, writing, busy...), else /proc's (``state_from`` "proc":
    running, accept, sleeping) with ``detail`` the call or kernel function it waits in;
    ``requests``: served by this child, when the status page tells it; ``cpu_percent``: its CPU
    time (all threads, the kernel's per-process clock) over the wall time since the view before
    (since it started when it is newer; None on the first view); ``uss``, ``shared``, ``pss``:
    bytes from smaps_rollup; ``new``: started since one of the last few views; ``cpu_s``: its CPU
    time so far in seconds (the same clock; None when it could not be read, or in a view written
    before pounder kept it)."""

    pid: int
    state: str
    state_from: Literal["status", "proc"]
    detail: str
    busy: bool | None
    requests: int | None
    cpu_percent: float | None
    uss: int
    shared: int
    pss: int
    age_s: float
    new: bool
    cpu_s: float | None = None


@public
@dataclass(frozen=True)
class ExitedChild:
    """A child that was in one of the last few views and is gone: ``views_ago`` (1: gone since
    the view before), its last ``requests`` told and its ``age_s`` when last seen."""

    pid: int
    views_ago: int
    requests: int | None
    age_s: float


@public
@dataclass(frozen=True)
class TopTotals:
    """The pool now: ``children``; ``by_state``: how many children in each state;
    ``footprint`` = sum of PSS over every process of the tree (parent included): its real memory;
    ``children_uss``: the children's USS summed (what they cost beyond what they share);
    ``median_child_shared``: a typical child's Shared_Clean + Shared_Dirty (mostly the parent's
    pages); ``parent_rss``; ``requests_per_s``: the status page's total of requests over the
    time between two views (None without a status page, or on the first view);
    ``accept_queue``: connections waiting to be accepted on the server's listening sockets (None
    when it cannot be asked: no TCP listener, no netlink)."""

    children: int
    by_state: dict[str, int]
    footprint: int
    children_uss: int
    median_child_shared: int | None
    parent_rss: int
    requests_per_s: float | None
    accept_queue: int | None


@public
@dataclass(frozen=True)
class TopView:
    """A server's children at one instant (:meth:`pounder.top.Top.view`). ``status``: which status
    page told the states (apache, php-fpm, uwsgi, puma) or None (from /proc); ``interval_s``: the
    time since the view before (None for the first); ``notes``: what could not be read."""

    taken_at: float
    root_pid: int
    name: str
    found_by: str
    status: str | None
    interval_s: float | None
    children: tuple[ChildRow, ...]
    exited: tuple[ExitedChild, ...]
    totals: TopTotals
    notes: tuple[str, ...] = ()

    def top_by_cpu(self, count: int = 3) -> tuple[ChildRow, ...]:
        """The ``count`` children with the most CPU since the view before."""
        ranked = sorted((c for c in self.children if c.cpu_percent is not None),
                        key=lambda c: (-(c.cpu_percent or 0.0), c.pid))
        return tuple(ranked[:count])

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready ``pounder/top/1`` document."""
        return {
            "schema": TOP_SCHEMA,
            "tool_version": __version__,
            "taken_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.taken_at))
            + f".{int(self.taken_at % 1 * 1000):03d}Z",
            "target": {"pid": self.root_pid, "name": self.name, "found_by": self.found_by},
            "status": self.status,
            "interval_s": self.interval_s,
            "children": [asdict(child) for child in self.children],
            "exited": [asdict(child) for child in self.exited],
            "totals": asdict(self.totals),
            "notes": list(self.notes),
        }


def count_states(children: tuple[ChildRow, ...]) -> dict[str, int]:
    """state → children in it, most first."""
    return dict(Counter(child.state for child in children).most_common())
