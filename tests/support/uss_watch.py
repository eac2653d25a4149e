"""Watching the children of a server grow: this test suite's own readings of
/proc/PID/smaps_rollup, independent of pounder's (the size-limit tests)."""

from __future__ import annotations

import threading
import time


def uss(pid: int) -> int:
    """Private_Clean + Private_Dirty of /proc/PID/smaps_rollup, bytes."""
    with open(f"/proc/{pid}/smaps_rollup") as file:
        return sum(int(line.split()[1]) * 1024 for line in file
                   if line.startswith(("Private_Clean:", "Private_Dirty:")))


def children(parent: int) -> list[int]:
    """The children of ``parent`` as the kernel lists them (no scan of every process)."""
    with open(f"/proc/{parent}/task/{parent}/children") as file:
        return [int(pid) for pid in file.read().split()]


class UssWatch(threading.Thread):
    """Reads the USS of every child of ``parent`` until ``done`` is set: the largest seen per pid
    (``largest``)."""

    def __init__(self, parent: int) -> None:
        super().__init__(daemon=True)
        self.parent = parent
        self.largest: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for pid in children(self.parent):
                try:
                    self.largest[pid] = max(self.largest.get(pid, 0), uss(pid))
                except (OSError, ValueError):
                    continue  # exited between being listed and being read
            time.sleep(0.001)
