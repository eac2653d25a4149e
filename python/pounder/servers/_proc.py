"""Just enough of /proc to find and kill a server's processes (Linux only).

A process can vanish between listing /proc and reading its files: such processes are skipped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    """Fields of ``/proc/PID/stat``; ``start_ticks`` tells a pid from a later reuse of it."""

    pid: int
    ppid: int
    pgid: int
    state: str
    start_ticks: int

    @property
    def zombie(self) -> bool:
        """Exited, not yet reaped: it runs nothing and holds no memory."""
        return self.state in ("Z", "X")


def read_stat(pid: int) -> ProcStat | None:
    """The process's stat line, or None if it does not exist (any more)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # "pid (comm) state ppid pgrp ..." - comm may hold spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(b")") + 2:].split()
    return ProcStat(pid=pid, ppid=int(fields[1]), pgid=int(fields[2]), state=fields[0].decode(),
                    start_ticks=int(fields[19]))


def all_stats() -> list[ProcStat]:
    """Every process on the machine."""
    stats = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None:
                stats.append(stat)
    return stats


def children_of(pid: int, stats: list[ProcStat] | None = None) -> list[ProcStat]:
    """Live (not zombie) direct children of ``pid``."""
    return sorted((s for s in (all_stats() if stats is None else stats) if s.ppid == pid and not s.zombie),
                  key=lambda s: s.pid)


def descendants_of(pid: int, stats: list[ProcStat] | None = None) -> list[ProcStat]:
    """Live descendants of ``pid`` at any depth."""
    stats = all_stats() if stats is None else stats
    by_parent: dict[int, list[ProcStat]] = {}
    for s in stats:
        by_parent.setdefault(s.ppid, []).append(s)
    found: list[ProcStat] = []
    todo = [pid]
    while todo:
        for child in by_parent.get(todo.pop(), []):
            if not child.zombie:
                found.append(child)
                todo.append(child.pid)
    return found


def group_members(pgid: int, stats: list[ProcStat] | None = None) -> list[ProcStat]:
    """Live processes in process group ``pgid``."""
    return [s for s in (all_stats() if stats is None else stats) if s.pgid == pgid and not s.zombie]


def still_running(stat: ProcStat) -> bool:
    """True if that very process (not a later one with its pid) exists and is not a zombie."""
    now = read_stat(stat.pid)
    return now is not None and now.start_ticks == stat.start_ticks and not now.zombie
