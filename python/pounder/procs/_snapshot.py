"""A server's processes at one instant (:class:`PoolSnapshot`) and the pool totals that matter
for tuning: the real footprint (sum of PSS), what one more child costs (child USS), how much a
child still shares with the parent."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pounder._errors import public
from pounder._version import __version__
from pounder.procs._find import ServerGone, ServerTarget, TreeMember, check_target, discover
from pounder.procs._own import OwnPages
from pounder.procs._read import ProcessGone, ProcMem, read_reading

if TYPE_CHECKING:
    from pounder.procs._maxclients import MaxClients

MEM_SCHEMA = "pounder/mem/2"


def _median(values: list[int]) -> int | None:
    return None if not values else round(statistics.median(values))


@public
@dataclass(frozen=True)
class PoolTotals:
    """Totals over a :class:`PoolSnapshot`, in bytes. "Children" are the root's direct children
    (the workers); grandchildren count in the footprint and the swap only.

    * ``footprint`` = sum of PSS over every process: the pool's real memory use.
    * ``rss_sum``: sum of RSS, shown only to say how wrong it is (shared pages counted N times).
    * ``median_child_uss`` / ``max_child_uss``: what one more child costs (typical / worst).
    * ``min_child_shared`` / ``median_child_shared``: a child's Shared_Clean + Shared_Dirty.
    * ``median_sharing``: median over children of child shared / parent RSS (a fraction, 0..1
      in practice; libraries shared with unrelated processes can push it above 1).
    """

    processes: int
    children: int
    grandchildren: int
    footprint: int
    rss_sum: int
    swap: int
    median_child_uss: int | None
    max_child_uss: int | None
    max_child_rss: int | None
    min_child_shared: int | None
    median_child_shared: int | None
    median_sharing: float | None


@public
@dataclass(frozen=True)
class PoolSnapshot:
    """Every process of a server read at (almost) one instant: ``processes`` lists the parent
    first, then its descendants depth first. ``skipped`` lists the pids that exited between being
    listed and being read (not an error: servers reap and spawn children all the time)."""

    root_pid: int
    taken_at: float
    processes: tuple[ProcMem, ...]
    skipped: tuple[int, ...] = ()
    own_excluded: bool = False
    """pounder's own process was taken out of the figures (:mod:`pounder.procs._own`; root only).
    When False, file pages the server shares only with pounder's process (the same Python) count
    as shared, and its private figures read lower than when pounder is not running."""

    @property
    def parent(self) -> ProcMem:
        return self.processes[0]

    @property
    def children(self) -> tuple[ProcMem, ...]:
        """The root's direct children (the workers)."""
        return tuple(proc for proc in self.processes if proc.role == "child")

    def with_nested_workers(self) -> PoolSnapshot:
        """This snapshot with the children of the root's children counted as workers (role
        "child"): Puma's ``fork_worker``, where worker 0 forks the others. Their shared memory is
        still what they share with anyone (the master, worker 0, each other), and their sharing
        with the parent (:attr:`sharing_with_parent`) is measured against the root's RSS, as for
        every worker."""
        workers = {proc.pid for proc in self.processes if proc.role == "child"}
        return replace(self, processes=tuple(
            replace(proc, role="child") if proc.role == "grandchild" and proc.ppid in workers else proc
            for proc in self.processes))

    @property
    def sharing_with_parent(self) -> dict[int, float]:
        """pid → child shared / parent RSS, for each child (empty when the parent's RSS is 0)."""
        parent_rss = self.parent.rss
        if parent_rss <= 0:
            return {}
        return {child.pid: child.shared / parent_rss for child in self.children}

    @cached_property
    def totals(self) -> PoolTotals:
        children = self.children
        uss = [child.private for child in children]
        shared = [child.shared for child in children]
        sharing = list(self.sharing_with_parent.values())
        return PoolTotals(
            processes=len(self.processes),
            children=len(children),
            grandchildren=sum(1 for proc in self.processes if proc.role == "grandchild"),
            footprint=sum(proc.pss for proc in self.processes),
            rss_sum=sum(proc.rss for proc in self.processes),
            swap=sum(proc.swap for proc in self.processes),
            median_child_uss=_median(uss),
            max_child_uss=max(uss, default=None),
            max_child_rss=max((child.rss for child in children), default=None),
            min_child_shared=min(shared, default=None),
            median_child_shared=_median(shared),
            median_sharing=statistics.median(sharing) if sharing else None,
        )

    def to_dict(self, max_clients: MaxClients | None = None, target: ServerTarget | None = None) -> dict[str, Any]:
        """The JSON-ready ``pounder/mem/2`` document (``python/pounder/schemas/mem.schema.json``)."""
        return {
            "schema": MEM_SCHEMA,
            "tool_version": __version__,
            "taken_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.taken_at))
            + f".{int(self.taken_at % 1 * 1000):03d}Z",
            "target": {
                "pid": self.root_pid,
                "name": self.parent.name,
                "found_by": None if target is None else target.found_by,
            },
            "own_process_excluded": self.own_excluded,
            "processes": [proc.to_dict() for proc in self.processes],
            "skipped": list(self.skipped),
            "totals": {
                **asdict(self.totals),
                "sharing_with_parent": [
                    {"pid": pid, "fraction": fraction} for pid, fraction in self.sharing_with_parent.items()
                ],
            },
            "max_clients": None if max_clients is None else max_clients.to_dict(),
        }


@public
def read_members(
    members: Iterable[TreeMember], own: OwnPages | None = None
) -> tuple[tuple[ProcMem, ...], tuple[int, ...]]:
    """Read each listed process (taking pounder's own process out of the figures with ``own``);
    the ones that exited meanwhile are returned as skipped pids."""
    processes: list[ProcMem] = []
    skipped: list[int] = []
    for member in members:
        try:
            processes.append(read_reading(member.pid, member.role, member.ppid, own).mem)
        except ProcessGone:
            skipped.append(member.pid)
    return tuple(processes), tuple(skipped)


@public
def snapshot(target: ServerTarget | int) -> PoolSnapshot:
    """Read the server's whole tree now (its children are listed again, not taken from
    ``target``). Raises :class:`~pounder.PounderError` if the server has exited or its memory
    cannot be read (permission denied). pounder's own process is taken out of the figures when
    it can be (root: see :mod:`pounder.procs._own`; ``own_excluded`` says whether it was)."""
    members = discover(check_target(target, "snapshot: target"))
    taken_at = time.time()
    own = OwnPages.read()
    processes, skipped = read_members(members, own)
    root = members[0].pid
    if not processes or processes[0].pid != root:
        raise ServerGone(f"the server process {root} has exited")
    return PoolSnapshot(root, taken_at, processes, skipped, own.available)
