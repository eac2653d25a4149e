"""The sizes of a running pool, as the results record them: the children's memory in one
snapshot, and how much a child's private memory grew per request between two snapshots."""

from __future__ import annotations

from typing import Any

from pounder._errors import public
from pounder.procs import PoolSnapshot, ProcessGone, read_statm


@public
def child_sizes(snap: PoolSnapshot) -> dict[str, int]:
    """The children's sizes in a tuning point (bytes; 0 where no child was read)."""
    totals = snap.totals
    return {
        "children": totals.children,
        "max_uss": totals.max_child_uss or 0,
        "median_uss": totals.median_child_uss or 0,
        "median_shared": totals.median_child_shared or 0,
        "max_rss": totals.max_child_rss or 0,
        "footprint": totals.footprint,
    }


@public
def child_statm(snap: PoolSnapshot) -> dict[str, int] | None:
    """The child of ``snap`` with the largest USS as ``/proc/PID/statm`` shows it, read now (call
    it right after ``snap``, the pool idle): ``vm_size`` (VmSize), ``statm_shared`` (resident
    file-backed pages) and its ``uss`` in ``snap``, in bytes, with its ``pid``; None when no child
    is left to read. What Apache2::SizeLimit measures without Linux::Smaps, next to the USS."""
    for child in sorted(snap.children, key=lambda c: c.private, reverse=True):
        try:
            statm = read_statm(child.pid)
        except ProcessGone:
            continue
        return {"pid": child.pid, "vm_size": statm.size, "statm_shared": statm.shared, "uss": child.private}
    return None


@public
def pool_memory(snap: PoolSnapshot) -> dict[str, Any]:
    """The pool's memory in an experiment's ``memory.json`` (bytes; None where no child was read)."""
    totals = snap.totals
    return {"children": totals.children, "max_child_uss": totals.max_child_uss,
            "median_child_shared": totals.median_child_shared, "max_child_rss": totals.max_child_rss,
            "footprint": totals.footprint, "parent_rss": snap.parent.rss}


@public
def growth_per_request(before: PoolSnapshot, after: PoolSnapshot, requests: int) -> float:
    """Sum over the children read in both snapshots of their USS change, per request served."""
    first = {c.pid: c.private for c in before.children}
    delta = sum(c.private - first[c.pid] for c in after.children if c.pid in first)
    return delta / requests if requests else 0.0
