"""Watching the children of a server grow: this test suite's own readings of
/proc/PID/smaps_rollup, independent of pounder's (the size-limit tests)."""

from __future__ import annotations

import threading
import time


def rss_and_uss(pid: int) -> tuple[int, int]:
    """Rss and Private_Clean + Private_Dirty of /proc/PID/smaps_rollup, bytes."""
    rss = private = 0
    with open(f"/proc/{pid}/smaps_rollup") as file:
        for line in file:
            if line.startswith("Rss:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith(("Private_Clean:", "Private_Dirty:")):
                private += int(line.split()[1]) * 1024
    return rss, private


def children(parent: int) -> list[int]:
    """The children of ``parent`` as the kernel lists them (no scan of every process)."""
    with open(f"/proc/{parent}/task/{parent}/children") as file:
        return [int(pid) for pid in file.read().split()]


class UssWatch(threading.Thread):
    """Reads the USS of every child of ``parent`` until ``done`` is set: the largest seen per pid
    (``largest``), and the USS when its RSS first reached its largest (``at_largest_rss``).

    A child that exits may unshare what it inherited while it dies (Python's finalisation writes
    the reference counts of the objects the parent built): its USS rises, its RSS does not. The
    USS at its largest RSS is its size before dying, what a limit on the RSS stopped."""

    def __init__(self, parent: int) -> None:
        super().__init__(daemon=True)
        self.parent = parent
        self.largest: dict[int, int] = {}
        self.at_largest_rss: dict[int, int] = {}
        self._rss: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for pid in children(self.parent):
                try:
                    rss, uss = rss_and_uss(pid)
                except (OSError, ValueError):
                    continue  # exited between being listed and being read
                self.largest[pid] = max(self.largest.get(pid, 0), uss)
                if rss > self._rss.get(pid, -1):
                    self._rss[pid], self.at_largest_rss[pid] = rss, uss
            time.sleep(0.001)
