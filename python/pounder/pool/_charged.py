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
"""

from __future__ import annotations

from collections.abc import Iterable
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
