"""Memory as the platform counts it, read next to a snapshot of the pool (issue 27).

The runner starts every server in a memory cgroup of its own when it can
(:func:`~pounder.servers.make_cgroup`: every process the server forks is charged there). Right
after a snapshot, :func:`charged_memory` reads what that cgroup is charged (``current``, ``anon``,
``file``, ``shmem``: :class:`~pounder.servers.CgroupMemory`) and, for the snapshot's processes,
how their PSS splits into anonymous, file-backed and shmem shares (``/proc/PID/smaps_rollup``'s
``Pss_Anon``, ``Pss_File``, ``Pss_Shmem``, Linux 5.10 and later). The split says why the sum of
PSS and the cgroup differ: the anonymous pages are charged to the cgroup once each, as the
processes' ``Pss_Anon`` add up to them; the file pages the processes map (interpreter, libraries,
code) count in their PSS, but a file page already in the page cache stays charged to whoever read
it first; kernel memory (page tables, kernel stacks, slab) is charged and is in no process's PSS.

The split is read raw: unlike the snapshot's PSS it keeps the share of a file page that pounder's
own process maps too (the same Python), so ``pss_file`` reads lower than the file-backed part of
the snapshot's sum of PSS; ``pss_anon`` is the same either way (pounder maps none of the server's
anonymous pages), so the file-backed part of the sum of PSS is the sum less ``pss_anon``.

:class:`MemoryPeak` reads the most that cgroup was charged over a window (a load): cgroup v1's
``memory.max_usage_in_bytes``, reset at the window's start by writing 0 to it; v2's
``memory.peak``, reset for the descriptor that wrote to it where the kernel allows it (6.12 and
later), else the peak since the cgroup was made (the server's start: its warm-up included); where
neither can be read or reset, the largest of the samples of ``memory.current`` (v1
``memory.usage_in_bytes``) taken every 50 ms during the window.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from pounder.procs import PoolSnapshot
from pounder.servers import ManagedServer

_SPLIT = {b"Pss_Anon": "pss_anon", b"Pss_File": "pss_file", b"Pss_Shmem": "pss_shmem"}


def pss_split(pids: Iterable[int]) -> dict[str, int | None]:
    """The summed ``Pss_Anon``, ``Pss_File`` and ``Pss_Shmem`` of ``pids``, in bytes (a process
    that exited meanwhile is left out); None each when the kernel shows no such field."""
    totals: dict[str, int | None] = dict.fromkeys(_SPLIT.values(), 0)
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb", buffering=0) as file:
                data = file.read(8192)
        except OSError:
            continue
        seen = set()
        for line in data.splitlines():
            key, sep, rest = line.partition(b":")
            name = _SPLIT.get(key)
            words = rest.split()
            if sep and name is not None and words:
                seen.add(name)
                value = totals[name]
                totals[name] = None if value is None else value + int(words[0]) * 1024
        for name in _SPLIT.values():
            if data.strip() and name not in seen:  # an older kernel: no split
                totals[name] = None
    return totals


def charged_memory(server: ManagedServer, snap: PoolSnapshot) -> dict[str, Any] | None:
    """What ``server``'s memory cgroup is charged now, read right after ``snap`` (bytes): the
    cgroup ``version``, ``current``, ``anon``, ``file``, ``shmem``, and the PSS split of the
    snapshot's processes (``pss_anon``, ``pss_file``, ``pss_shmem``; see the module docstring).
    None when the server runs in no cgroup of its own (``server.cgroup_note`` says why) or the
    cgroup could not be read."""
    cgroup = server.cgroup
    if cgroup is None:
        return None
    try:
        memory = cgroup.memory()
    except OSError:
        return None
    return {"version": memory.version, "current": memory.current, "anon": memory.anon, "file": memory.file,
            "shmem": memory.shmem, **pss_split(proc.pid for proc in snap.processes)}


PEAK_SAMPLE_S = 0.05


class MemoryPeak:
    """The most ``server``'s memory cgroup is charged during a ``with`` block (see the module
    docstring): :meth:`reading` once the block ended."""

    def __init__(self, server: ManagedServer, interval_s: float = PEAK_SAMPLE_S) -> None:
        self._cgroup = server.cgroup
        self._note = server.cgroup_note
        self._interval_s = interval_s
        self._fd: int | None = None  # v2 memory.peak reset for this descriptor
        self._source = ""
        self._samples: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._peak: int | None = None

    def _current_file(self) -> str:
        assert self._cgroup is not None
        name = "memory.current" if self._cgroup.version == 2 else "memory.usage_in_bytes"
        return str(self._cgroup.path / name)

    def _sample(self) -> None:
        if self._cgroup is None:
            return
        try:
            with open(self._current_file(), "rb", buffering=0) as file:
                self._samples.append(int(file.read(64)))
        except (OSError, ValueError):
            pass

    def _sampling(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._sample()

    def __enter__(self) -> MemoryPeak:
        cgroup = self._cgroup
        if cgroup is None:
            return self
        if cgroup.version == 1:
            try:
                (cgroup.path / "memory.max_usage_in_bytes").write_text("0")
                self._source = "memory.max_usage_in_bytes (cgroup v1), reset at the load's start"
            except OSError:
                pass
        elif (cgroup.path / "memory.peak").exists():
            try:
                self._fd = os.open(cgroup.path / "memory.peak", os.O_RDWR)
                os.write(self._fd, b"reset")
                self._source = "memory.peak (cgroup v2), reset at the load's start"
            except OSError:  # before Linux 6.12 the file is read-only: the peak since the server started
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                self._source = "memory.peak (cgroup v2) since the server started, its warm-up included"
        self._sample()
        if not self._source:
            self._thread = threading.Thread(target=self._sampling, name="pounder-memory-peak", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        self._peak = self._read_peak()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _read_peak(self) -> int | None:
        cgroup = self._cgroup
        if cgroup is None or not self._source:
            return None
        try:
            if self._fd is not None:
                return int(os.pread(self._fd, 64, 0))
            name = "memory.max_usage_in_bytes" if cgroup.version == 1 else "memory.peak"
            return int((cgroup.path / name).read_text())
        except (OSError, ValueError):
            self._source = ""
            return None

    def reading(self) -> dict[str, Any]:
        """``peak`` (bytes; None without a cgroup or any reading), ``source`` (what was read, or why
        nothing), ``version`` (1, 2, or None without a cgroup)."""
        if self._cgroup is None:
            return {"peak": None, "source": self._note or "the server ran in no memory cgroup of its own",
                    "version": None}
        peak, source = self._peak, self._source
        if peak is None and self._samples:
            peak, source = max(self._samples), (
                f"the largest of {len(self._samples)} readings of {os.path.basename(self._current_file())} "
                f"(cgroup v{self._cgroup.version}), every {self._interval_s * 1000:.0f} ms during the load")
        elif peak is not None and self._samples:  # a sample may be read after the peak file: never below it
            peak = max(peak, *self._samples)
        return {"peak": peak, "source": source or "the server's memory cgroup could not be read",
                "version": self._cgroup.version}
