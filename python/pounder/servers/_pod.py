"""The pod, emulated: a server under test in a cgroup with a CPU quota (and its memory limit), as a
container runtime would run it, and the CPU quota of a cgroup (``--cpus cgroup``).

A :class:`Pod` asks for ``cpus`` CPUs (a decimal: 0.5, 1.5, 4) and, optionally, a memory limit.
:func:`make_cpu_cgroup` gives the server a cpu cgroup of its own with that quota, next to its
memory cgroup (:mod:`pounder.servers._cgroup`, where the limit is written):

* cgroup v2: the quota is ``cpu.max`` "QUOTA PERIOD" (period 100000 µs) in the server's memory
  cgroup itself when that one is v2 (the unified hierarchy has one cgroup for every controller;
  ``+cpu`` is enabled in our cgroup's ``cgroup.subtree_control``), else in a v2 child of its own;
  the usage and the throttling are ``cpu.stat``'s ``usage_usec``, ``nr_periods``,
  ``nr_throttled``, ``throttled_usec``.
* cgroup v1: a child of our cgroup in the cpu hierarchy with ``cpu.cfs_period_us`` 100000 and
  ``cpu.cfs_quota_us`` = cpus x 100000; the throttling from its ``cpu.stat`` (``nr_periods``,
  ``nr_throttled``, ``throttled_time`` in ns); the usage from ``cpuacct.usage`` (ns), in the same
  directory when cpu and cpuacct are mounted together, else in a child of our cgroup in the
  cpuacct hierarchy, which the server joins too.

The kernel's CFS bandwidth control gives the cgroup's processes at most QUOTA µs of CPU in every
PERIOD µs, over all CPUs together; once they used it they wait (are throttled) until the next
period. So the server can use ``cpus`` cores on average and no more, whichever CPUs it runs on:
``cpus`` above the CPUs it may run on cannot be emulated (:func:`pod_cpus_check`).

Every directory made is held by the guard (:mod:`pounder.servers._guard`) until removed, as the
memory cgroup is.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pounder._errors import UsageError, check_type, public
from pounder._units import plain
from pounder.servers._cgroup import (
    _REMOVE_WAIT_S,
    MemoryCgroup,
    _enable_v2,
    _hierarchies,
    _Hierarchy,
    _new_dir,
    _read_words,
    _remove_dir,
    _why,
    make_cgroup,
)

PERIOD_US = 100_000
"""The CFS period pounder sets (the kernel's and Docker's default)."""
MIN_QUOTA_US = 1000
"""The kernel's smallest quota (1 ms per period)."""


@public
@dataclass(frozen=True)
class Pod:
    """What a pod gives the server: ``cpus`` CPUs of quota (a decimal > 0) and, when given, a memory
    limit of ``memory`` bytes enforced in its memory cgroup."""

    cpus: float
    memory: int | None = None


@public
@dataclass(frozen=True)
class CpuUsage:
    """One reading of a cpu cgroup: ``usage_s`` CPU seconds its processes used so far,
    ``periods`` the CFS periods elapsed with a process runnable, ``throttled`` of them the periods
    in which the quota ran out, ``throttled_s`` the time its processes waited for the next period
    (summed over CPUs), ``at`` ``time.monotonic()`` when read."""

    usage_s: float
    periods: int
    throttled: int
    throttled_s: float
    at: float


def _stat(path: Path) -> dict[str, int]:
    stat: dict[str, int] = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            stat[key] = int(value)
    return stat


@public
class CpuCgroup:
    """A cpu cgroup pounder made for a server (:func:`make_cpu_cgroup`): ``path`` the directory with
    the quota, ``acct`` the one with the usage (``path`` itself but with v1 cpuacct mounted apart),
    ``version`` 1 or 2, ``quota_us`` per ``period_us``."""

    def __init__(self, path: Path, acct: Path, version: int, quota_us: int, period_us: int,
                 owned: Sequence[Path]) -> None:
        self.path = path
        self.acct = acct
        self.version = version
        self.quota_us = quota_us
        self.period_us = period_us
        self._owned = list(owned)

    @property
    def cpus(self) -> float:
        """The quota in CPUs."""
        return self.quota_us / self.period_us

    @property
    def procs_files(self) -> list[Path]:
        """The ``cgroup.procs`` files a server joins (those of the directories made for it)."""
        return [path / "cgroup.procs" for path in self._owned]

    def describe(self) -> str:
        """``cgroup v1 cfs 100000/100000`` (quota/period, µs)."""
        how = "cfs" if self.version == 1 else "cpu.max"
        return f"cgroup v{self.version} {how} {self.quota_us}/{self.period_us}"

    def usage(self) -> CpuUsage:
        """The cgroup's CPU usage and throttling now; OSError once it is removed."""
        stat = _stat(self.path / "cpu.stat")
        if self.version == 2:
            usage_s = stat["usage_usec"] / 1e6
            throttled_s = stat.get("throttled_usec", 0) / 1e6
        else:
            usage_s = int((self.acct / "cpuacct.usage").read_text()) / 1e9
            throttled_s = stat.get("throttled_time", 0) / 1e9
        return CpuUsage(usage_s, stat.get("nr_periods", 0), stat.get("nr_throttled", 0), throttled_s,
                        time.monotonic())

    def remove(self, timeout_s: float = _REMOVE_WAIT_S) -> bool:
        """Remove the directories made for the server once its processes are gone (retrying while
        busy, up to ``timeout_s``); True once they are gone."""
        end = time.monotonic() + timeout_s
        for path in list(self._owned):
            if not _remove_dir(path, end):
                return False
            self._owned.remove(path)
        return True

    def __repr__(self) -> str:
        return f"<CpuCgroup {self.describe()} at {self.path}>"


def _v1_dir(controller: str) -> tuple[_Hierarchy | None, str]:
    found = [h for h in _hierarchies(controller) if h.version == 1]
    if not found:
        return None, f"no cgroup v1 {controller} hierarchy is mounted here"
    hierarchy = found[0]
    own = hierarchy.own_dir
    if own is None or not own.is_dir():
        return None, f"cgroup v1 {controller}: our cgroup {hierarchy.own} is not visible under {hierarchy.mount}"
    return hierarchy, ""


def _set_quota(path: Path, version: int, quota_us: int) -> None:
    if version == 2:
        (path / "cpu.max").write_text(f"{quota_us} {PERIOD_US}")
    else:
        (path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (path / "cpu.cfs_quota_us").write_text(str(quota_us))


def _make_v2(v2: _Hierarchy, quota: int, memory: MemoryCgroup | None) -> CpuCgroup | str:
    """A v2 cgroup with ``quota``: the memory cgroup's own directory when it is v2, else a child."""
    shared = memory is not None and memory.version == 2
    made = None
    try:
        path = memory.path if memory is not None and shared else _new_dir(v2.own_dir or v2.mount)
        made = CpuCgroup(path, path, 2, quota, PERIOD_US, () if shared else (path,))
        _set_quota(path, 2, quota)
        return made
    except OSError as error:
        if made is not None:
            made.remove()
        return f"cgroup v2: cannot make a cgroup with cpu.max under {v2.own}: {_why(error)}"


def _make(cpus: float, memory: MemoryCgroup | None) -> CpuCgroup | str:
    quota = max(MIN_QUOTA_US, round(cpus * PERIOD_US))
    reasons = []
    v2 = next((h for h in _hierarchies("cpu") if h.version == 2), None)
    if v2 is not None:
        why = _enable_v2(v2, "cpu")
        if not why:
            return _make_v2(v2, quota, memory)
        reasons.append(why)
    cpu, why = _v1_dir("cpu")
    if cpu is None:
        return "; ".join([*reasons, why])
    acct, why = _v1_dir("cpuacct")
    if acct is None:
        return "; ".join([*reasons, why + " (pounder reads the server's CPU usage there)"])
    made: CpuCgroup | None = None
    try:
        path = _new_dir(cpu.own_dir or cpu.mount)
        made = CpuCgroup(path, path, 1, quota, PERIOD_US, [path])
        if acct.mount != cpu.mount:
            made.acct = _new_dir(acct.own_dir or acct.mount)
            made._owned.append(made.acct)
        _set_quota(path, 1, quota)
        return made
    except OSError as error:
        if made is not None:
            made.remove()
        return "; ".join([*reasons, f"cgroup v1: cannot make a cpu cgroup with a quota under {cpu.own}: {_why(error)}"])


@public
def make_cpu_cgroup(cpus: float, memory: MemoryCgroup | None = None) -> tuple[CpuCgroup | None, str]:
    """A new cpu cgroup with a quota of ``cpus`` CPUs (see the module docstring), sharing the
    directory of ``memory`` (the server's memory cgroup) under cgroup v2; or None and why not in
    one sentence. :meth:`CpuCgroup.remove` it when done (the guard does should this process die)."""
    made = _make(cpus, memory)
    if isinstance(made, CpuCgroup):
        return made, ""
    return None, f"no cpu cgroup for the server: {made}{' (pounder is not root)' if os.geteuid() != 0 else ''}"


@public
def pod_unavailable(memory_limit: bool = False) -> str:
    """Why no server could be given a CPU quota here (and, with ``memory_limit``, a memory limit
    in a memory cgroup of its own: ``--ram`` with ``--cpus``), in one sentence naming what is
    needed; "" when it can (the cgroups are made and removed at once to know)."""
    made, why = make_cpu_cgroup(1.0)
    if made is None:
        return (f"--cpus needs a cpu cgroup pounder can write to ({why}): run pounder as root, or in a cgroup "
                "delegated to its user with the cpu controller (v2: cpu in cgroup.subtree_control)")
    made.remove()
    if memory_limit:
        memory, why = make_cgroup()
        if memory is None:
            return (f"--cpus with --ram enforces --ram as the pod's memory limit in a memory cgroup of the server's "
                    f"own, and none can be made here ({why}): run pounder as root, or in a cgroup delegated to its "
                    "user with the memory controller, or leave out --ram")
        memory.remove()
    return ""


@public
def pod_cpus_check(cpus: float, available: int) -> None:
    """:class:`~pounder.UsageError` unless ``cpus`` (a quota) can be emulated with ``available`` CPUs."""
    if cpus * PERIOD_US < MIN_QUOTA_US:
        raise UsageError(f"--cpus must be at least 0.01 (the kernel's smallest quota is 1 ms per 100 ms period), "
                         f"got {plain(cpus)}")
    if cpus > available:
        raise UsageError(f"--cpus {plain(cpus)} is more than the {available} CPU{'s' * (available != 1)} the server "
                         f"can run on here: a quota cannot give more CPU than there is")


def _quota_here(directory: Path, version: int) -> float | None:
    if version == 2:
        words = _read_words(directory / "cpu.max")
        if len(words) == 2 and words[0] != "max":
            return int(words[0]) / int(words[1])
        return None
    quota, period = _read_words(directory / "cpu.cfs_quota_us"), _read_words(directory / "cpu.cfs_period_us")
    if quota and period and int(quota[0]) > 0 and int(period[0]) > 0:
        return int(quota[0]) / int(period[0])
    return None


def _find_cpu(path: str) -> tuple[_Hierarchy, Path, str]:
    """The hierarchy, directory and name of the cpu cgroup ``path`` names ("": ours)."""
    hierarchies = [h for h in _hierarchies("cpu")
                   if h.version == 1 or "cpu" in _read_words((h.own_dir or h.mount) / "cgroup.controllers")
                   or (h.own_dir is not None and (h.own_dir / "cpu.max").exists())]
    if not hierarchies:
        raise UsageError("--cpus cgroup: no cpu cgroup is mounted here (neither cgroup v2 with cpu nor v1 cpu)")
    if not path:
        hierarchy = hierarchies[0]
        if hierarchy.own_dir is None:
            raise UsageError(f"--cpus cgroup: our cgroup {hierarchy.own} is not visible under {hierarchy.mount}")
        return hierarchy, hierarchy.own_dir, hierarchy.own
    for hierarchy in hierarchies:
        with contextlib.suppress(ValueError):
            resolved = Path(os.path.realpath(path))
            resolved.relative_to(hierarchy.mount)
            if resolved.is_dir():
                return hierarchy, resolved, hierarchy.name(resolved)
        directory = hierarchy.dir("/" + path.lstrip("/"))
        if directory is not None and directory.is_dir():
            return hierarchy, directory, "/" + path.lstrip("/")
    raise UsageError(f"--cpus cgroup:{path}: no such cpu cgroup")


@public
def cpu_quota(path: str = "") -> tuple[float, str]:
    """The CPU quota, in CPUs, of the cgroup ``path`` names (its name, ``/system.slice/app.service``,
    or its directory; "" for the cgroup this process is in), as ``--cpus cgroup[:PATH]`` reads it:
    the smallest quota/period of the cgroup and the cgroups above it (v2 ``cpu.max``; v1
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``), as the kernel applies them; with how it was read
    (``cgroup v2 cpu.max 150000/100000 of /pod``). :class:`~pounder.UsageError` when there is no
    such cgroup or it sets no quota."""
    check_type(path, str, "cpu_quota: path", "a cgroup name or directory (a string)")
    hierarchy, directory, name = _find_cpu(path)
    found: list[tuple[float, Path]] = []
    here = directory
    try:
        while True:
            quota = _quota_here(here, hierarchy.version)
            if quota is not None:
                found.append((quota, here))
            if here == hierarchy.mount or here == here.parent:
                break
            here = here.parent
    except (OSError, ValueError) as error:
        raise UsageError(f"--cpus cgroup:{path or name}: cannot read its CPU quota: {error}") from None
    if not found:
        raise UsageError(f"--cpus cgroup: cgroup {name} sets no CPU quota (nor does any cgroup above it): give "
                         "--cpus a number of CPUs")
    quota, where = min(found)
    words = (_read_words(where / "cpu.max") if hierarchy.version == 2
             else [*_read_words(where / "cpu.cfs_quota_us"), *_read_words(where / "cpu.cfs_period_us")])
    how = "cpu.max" if hierarchy.version == 2 else "cfs"
    return quota, f"cgroup v{hierarchy.version} {how} {'/'.join(words[:2])} of {hierarchy.name(where)}"
