"""Memory as the platform counts it: a memory cgroup of the server's own, and a cgroup's limit.

:func:`make_cgroup` makes a :class:`MemoryCgroup` named ``pounder-PID-N`` under the cgroup this
process is in: with cgroup v2 when its memory controller can be enabled for a child (our cgroup's
``cgroup.subtree_control`` has, or takes, ``+memory``: a non-root v2 cgroup that holds processes
- ours - refuses, the "no internal processes" rule), else with the v1 memory controller (a child
of our memory cgroup; v1 lets a cgroup hold processes and children), else none, with the reason
in one sentence. :class:`~pounder.servers.ManagedServer` starts a server inside one when asked
(``cgroup=True``): every process it forks is then charged to it.

What a cgroup is charged (``Documentation/admin-guide/cgroup-v2.rst``, ``cgroup-v1/memory.rst``):
a page is charged to the cgroup of the process that first touched it and stays charged there
(v1 and v2 alike; v1 moves no charge when a process moves unless ``move_charge_at_immigrate``).
So the server's anonymous memory is all charged to its cgroup (it is started inside it, before
its program runs), but a file page already in the page cache (a library, the interpreter, a
module another process read first) stays charged to whoever read it first, while the server's
processes still map it and it counts in their PSS. Kernel memory the processes cause (page
tables, kernel stacks, slab, socket buffers) is charged to the cgroup (v2 always; v1 into
``usage_in_bytes`` too on current kernels) and is in no process's PSS.

A stale cgroup (this process SIGKILLed) is removed by the guard (:mod:`pounder.servers._guard`)
once the servers are stopped, and else by the next :func:`make_cgroup` under the same cgroup
(an empty ``pounder-PID-N`` whose PID is gone).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pounder._errors import UsageError, check_type, public
from pounder._files import pid_alive
from pounder.servers._guard import guard_cgroup, release_cgroup

_PREFIX = "pounder-"
_STALE = re.compile(r"pounder-(\d+)-\d+")
_COUNTER = itertools.count()
_REMOVE_WAIT_S = 2.0
_POLL_S = 0.02


def _v1_unlimited() -> int:
    """The smallest value v1 ``memory.limit_in_bytes`` shows for "no limit": the kernel's
    ``PAGE_COUNTER_MAX`` pages (``LONG_MAX / PAGE_SIZE`` on 64-bit) times the page size, i.e.
    9223372036854771712 with 4 KiB pages (older kernels' res_counter showed LLONG_MAX, above it)."""
    page = os.sysconf("SC_PAGE_SIZE")
    return (sys.maxsize // page) * page if sys.maxsize > 2**32 else sys.maxsize * page


@public
@dataclass(frozen=True)
class CgroupMemory:
    """What a memory cgroup is charged, in bytes (see the module docstring for what is charged).

    ``version`` 2: ``current`` is ``memory.current``; ``anon``, ``file``, ``shmem`` are
    ``memory.stat``'s ``anon`` (anonymous memory mapped by the processes: heap, stacks, private
    copies), ``file`` (page cache charged here, shmem and tmpfs included) and ``shmem``.

    ``version`` 1: ``current`` is ``memory.usage_in_bytes`` (the kernel documents it as a fuzzy
    figure, kept up to date when it matters); ``anon``, ``file``, ``shmem`` are ``memory.stat``'s
    ``total_rss``, ``total_cache`` and ``total_shmem`` (the cgroup and any below it). These are the
    very counters v2 shows as ``anon``, ``file`` and ``shmem`` (the kernel's NR_ANON_MAPPED,
    NR_FILE_PAGES, NR_SHMEM): ``total_rss`` already includes transparent huge pages
    (``total_rss_huge`` is the part of it that is huge pages, not an addition: checked on this
    kernel, 64 MiB of THP showed rss 64.04 MiB, rss_huge 64 MiB), and ``total_cache`` includes
    ``total_shmem`` as v2's ``file`` includes ``shmem``."""

    current: int
    anon: int
    file: int
    shmem: int
    version: int

    @property
    def other(self) -> int:
        """Charged beyond anonymous and file pages: kernel memory (page tables, kernel stacks, slab),
        socket buffers and the like (v1: plus ``usage_in_bytes``'s fuzz; may be slightly negative)."""
        return self.current - self.anon - self.file


@dataclass(frozen=True)
class _Hierarchy:
    """A mounted cgroup hierarchy with the memory controller (``version`` 2: the unified one, whose
    memory controller may still be off), and this process's cgroup in it."""

    version: int
    mount: Path
    root: str   # the cgroup at the mount point (mountinfo's root field)
    own: str    # this process's cgroup (/proc/self/cgroup)

    def dir(self, name: str) -> Path | None:
        """The directory of cgroup ``name`` (a path in the hierarchy) when it is under this mount."""
        root = self.root.rstrip("/")
        if name != root and not name.startswith(root + "/"):
            return None
        return self.mount / name[len(root):].lstrip("/")

    def name(self, path: Path) -> str:
        """The cgroup name of a directory under this mount."""
        rel = path.relative_to(self.mount).as_posix()
        return "/" + "/".join(part for part in (self.root.strip("/"), "" if rel == "." else rel) if part)

    @property
    def own_dir(self) -> Path | None:
        return self.dir(self.own)


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _hierarchies(controller: str = "memory") -> list[_Hierarchy]:
    """The cgroup v2 hierarchy (first) and the v1 hierarchy of ``controller`` mounted here, as far as found."""
    try:
        own_lines = Path("/proc/self/cgroup").read_text().splitlines()
        mount_lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    own_v2, own_v1 = None, None
    for line in own_lines:
        hid, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hid == "0" and controllers == "":
            own_v2 = path
        elif controller in controllers.split(","):
            own_v1 = path
    found: dict[int, _Hierarchy] = {}
    for line in mount_lines:
        head, _, tail = line.partition(" - ")
        fields, tail_fields = head.split(), tail.split()
        if len(fields) < 5 or len(tail_fields) < 3:
            continue
        fstype, options = tail_fields[0], tail_fields[2].split(",")
        if fstype == "cgroup2" and own_v2 is not None and 2 not in found:
            found[2] = _Hierarchy(2, Path(_unescape(fields[4])), _unescape(fields[3]), own_v2)
        elif fstype == "cgroup" and controller in options and own_v1 is not None and 1 not in found:
            found[1] = _Hierarchy(1, Path(_unescape(fields[4])), _unescape(fields[3]), own_v1)
    return [found[v] for v in (2, 1) if v in found]


def _read_words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _sweep(parent: Path) -> None:
    """Remove the empty ``pounder-PID-N`` cgroups under ``parent`` whose PID is gone."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            match = _STALE.fullmatch(entry.name)
            if match and entry.is_dir(follow_symlinks=False):
                pid = int(match.group(1))
                if pid != os.getpid() and not pid_alive(pid):
                    with contextlib.suppress(OSError):  # still holds processes (EBUSY): not ours to end
                        os.rmdir(entry.path)


def _why(error: OSError) -> str:
    return error.strerror or str(error)


def enter_command(argv: Sequence[str], env: Mapping[str, str], procs_files: Sequence[Path]) -> list[str]:
    """``argv`` (run with ``env``) started inside every cgroup whose ``cgroup.procs`` is in
    ``procs_files`` (one per hierarchy: v1's memory, cpu, cpuacct) from exec on: a shell writes its
    pid to each, then ``exec`` keeps that pid (see :meth:`MemoryCgroup.command`)."""
    program = argv[0]
    if "/" not in program:
        program = shutil.which(program, path=env.get("PATH", os.defpath)) or ""
        if not program:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
    script = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; n=$((n-1)); done; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", str(len(procs_files)), *map(str, procs_files), program, *argv[1:]]


@public
class MemoryCgroup:
    """A memory cgroup pounder made (:func:`make_cgroup`): ``path`` its directory, ``name`` its
    path in the hierarchy (as ``/proc/PID/cgroup`` shows it), ``version`` 1 or 2."""

    def __init__(self, path: Path, name: str, version: int) -> None:
        self.path = path
        self.name = name
        self.version = version

    @property
    def procs_file(self) -> Path:
        """Writing a pid here moves that process into the cgroup."""
        return self.path / "cgroup.procs"

    def command(self, argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """``argv`` (run with ``env``) started inside this cgroup from exec on: ``/bin/sh -c 'echo $$ >
        PROCS && shift && exec "$@"' sh PROCS ARGV...`` (the shell moves itself in, ``exec`` keeps its
        pid). A program name is looked up in ``env``'s PATH here, as ``subprocess.Popen`` would:
        FileNotFoundError if it is not there (a path: the shell says it)."""
        return enter_command(argv, env, [self.procs_file])

    def pids(self) -> list[int]:
        """The processes in the cgroup now (none once it is removed)."""
        return sorted(int(word) for word in _read_words(self.procs_file))

    def memory(self) -> CgroupMemory:
        """What the cgroup is charged now (:class:`CgroupMemory`); OSError once it is removed."""
        stat: dict[str, int] = {}
        stat_file = self.path / "memory.stat"
        for line in stat_file.read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                stat[key] = int(value)

        def field(*names: str) -> int:
            for key in names:
                if key in stat:
                    return stat[key]
            raise OSError(errno.ENODATA, f"{stat_file} has no {' or '.join(names)}")

        if self.version == 2:
            current = int((self.path / "memory.current").read_text())
            return CgroupMemory(current, field("anon"), field("file"), field("shmem"), 2)
        current = int((self.path / "memory.usage_in_bytes").read_text())
        return CgroupMemory(current, field("total_rss", "rss"), field("total_cache", "cache"),
                            field("total_shmem", "shmem"), 1)

    def set_limit(self, limit: int) -> None:
        """Enforce ``limit`` bytes (a pod's memory limit): v2 ``memory.max`` (and ``memory.swap.max`` 0
        where there is swap accounting), v1 ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``
        the same, so the limit is not met by swapping). OSError if the kernel refuses."""
        if self.version == 2:
            (self.path / "memory.max").write_text(str(limit))
            swap = self.path / "memory.swap.max"
        else:
            (self.path / "memory.limit_in_bytes").write_text(str(limit))
            swap = self.path / "memory.memsw.limit_in_bytes"
        if swap.exists():
            with contextlib.suppress(OSError):
                swap.write_text("0" if self.version == 2 else str(limit))

    def oom_kills(self) -> int | None:
        """Processes of the cgroup the OOM killer killed so far (v2 ``memory.events`` ``oom_kill``, v1
        ``memory.oom_control`` ``oom_kill``, Linux 4.13+); None where the kernel does not count them."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            lines = (self.path / name).read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return None

    def remove(self, timeout_s: float = _REMOVE_WAIT_S) -> bool:
        """Remove the cgroup once its processes are gone (it kills none: stop them first); retries
        while the kernel says it is busy, up to ``timeout_s``. True once it is gone (also when it
        was already); False if processes still hold it (the guard removes it when this process
        ends)."""
        return _remove_dir(self.path, time.monotonic() + timeout_s)

    def __repr__(self) -> str:
        return f"<MemoryCgroup v{self.version} {self.name}>"


def _remove_dir(path: Path, end: float) -> bool:
    """Remove a cgroup directory pounder made once its processes are gone, retrying while the
    kernel says it is busy until ``end`` (``time.monotonic()``), and take it off the guard. True once
    it is gone (also when it was already); False if processes still hold it."""
    while True:
        try:
            os.rmdir(path)
            break
        except FileNotFoundError:
            break
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() >= end:
                return False
            time.sleep(_POLL_S)
    release_cgroup(str(path))
    return True


def _new_dir(parent: Path) -> Path:
    """A new ``pounder-PID-N`` directory under ``parent`` (the leftovers of dead pounders swept
    first), held by the guard until removed (a memory cgroup, or a pod's cpu/cpuacct one)."""
    _sweep(parent)
    while True:
        path = parent / f"{_PREFIX}{os.getpid()}-{next(_COUNTER)}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        guard_cgroup(str(path))
        return path


def _enable_v2(hierarchy: _Hierarchy, controller: str) -> str:
    """Why our v2 cgroup cannot give a child ``controller`` ("" when it can: enabled in its
    ``cgroup.subtree_control`` now, if it was not)."""
    parent = hierarchy.own_dir
    label = f"cgroup v{hierarchy.version}"
    if parent is None or not parent.is_dir():
        return f"{label}: our cgroup {hierarchy.own} is not visible under {hierarchy.mount}"
    if controller not in _read_words(parent / "cgroup.controllers"):
        return f"{label} at {hierarchy.mount} has no {controller} controller for {hierarchy.own}"
    if controller not in _read_words(parent / "cgroup.subtree_control"):
        try:
            (parent / "cgroup.subtree_control").write_text(f"+{controller}")
        except OSError as error:
            if error.errno == errno.EBUSY:
                return (f"{label}: {hierarchy.own} holds processes (pounder among them), so it cannot give a "
                        f"child its {controller} controller (the no-internal-processes rule)")
            return f"{label}: cannot enable {controller} for a child of {hierarchy.own}: {_why(error)}"
    return ""


def _make_child(hierarchy: _Hierarchy, parent: Path) -> MemoryCgroup:
    path = _new_dir(parent)
    made = MemoryCgroup(path, hierarchy.name(path), hierarchy.version)
    expected = "memory.current" if hierarchy.version == 2 else "memory.usage_in_bytes"
    if not (path / expected).exists():
        made.remove()
        raise OSError(errno.ENOTSUP, f"{path} has no {expected}")
    return made


def _try(hierarchy: _Hierarchy) -> MemoryCgroup | str:
    """A new cgroup in ``hierarchy``, or why none."""
    parent = hierarchy.own_dir
    label = f"cgroup v{hierarchy.version}"
    if parent is None or not parent.is_dir():
        return f"{label}: our cgroup {hierarchy.own} is not visible under {hierarchy.mount}"
    if hierarchy.version == 2:
        why = _enable_v2(hierarchy, "memory")
        if why:
            return why
    try:
        return _make_child(hierarchy, parent)
    except OSError as error:
        return f"{label}: cannot make a cgroup under {hierarchy.own}: {_why(error)}"


@public
def make_cgroup() -> tuple[MemoryCgroup | None, str]:
    """A new, empty memory cgroup under this process's own (v2 if it can have the memory
    controller, else v1; see the module docstring), or None and why not in one sentence. The
    guard removes it should this process die; :meth:`MemoryCgroup.remove` it when done."""
    hierarchies = _hierarchies()
    if not hierarchies:
        return None, "no memory cgroup: neither cgroup v2 nor a cgroup v1 memory controller is mounted here"
    reasons = []
    for hierarchy in hierarchies:
        made = _try(hierarchy)
        if isinstance(made, MemoryCgroup):
            return made, ""
        reasons.append(made)
    suffix = " (pounder is not root)" if os.geteuid() != 0 else ""
    return None, "no memory cgroup for the server: " + "; ".join(reasons) + suffix


def _find(path: str) -> tuple[_Hierarchy, Path, str]:
    """The hierarchy, directory and name of the cgroup ``path`` names (see :func:`cgroup_limit`)."""
    hierarchies = _hierarchies()
    if not hierarchies:
        raise UsageError("--ram cgroup: no memory cgroup is mounted here (neither cgroup v2 nor v1 memory)")
    if not path:
        for hierarchy in hierarchies:
            own = hierarchy.own_dir
            if own is not None and (hierarchy.version == 1 or (own / "memory.max").exists()
                                    or "memory" in _read_words(own / "cgroup.controllers")):
                return hierarchy, own, hierarchy.own
        raise UsageError("--ram cgroup: the cgroup pounder runs in has no memory controller")
    looked = []
    for hierarchy in hierarchies:  # a directory under a mount point
        with contextlib.suppress(ValueError):
            resolved = Path(os.path.realpath(path))
            resolved.relative_to(hierarchy.mount)
            if resolved.is_dir():
                return hierarchy, resolved, hierarchy.name(resolved)
            looked.append(str(resolved))
    for hierarchy in hierarchies:  # a cgroup name, as /proc/PID/cgroup shows it
        directory = hierarchy.dir("/" + path.lstrip("/"))
        if directory is None:
            continue
        if directory.is_dir() and (hierarchy.version == 1 or (directory / "memory.max").exists()):
            return hierarchy, directory, "/" + path.lstrip("/")
        looked.append(str(directory))
    raise UsageError(f"--ram cgroup:{path}: no such memory cgroup (looked for {' and '.join(looked) or 'it'})")


@public
def cgroup_limit(path: str = "") -> int:
    """The memory limit, in bytes, of the cgroup ``path`` names, as ``--ram cgroup[:PATH]`` reads it:
    its name in the hierarchy (``/system.slice/app.service``, as ``/proc/PID/cgroup`` shows it) or
    its directory (``/sys/fs/cgroup/...``); "" for the cgroup this process is in. v2: the smallest
    ``memory.max`` of the cgroup and the cgroups above it (visible under the mount), as the kernel
    applies them; v1: ``memory.stat``'s ``hierarchical_memory_limit`` (the same rule, the kernel's
    own figure; ``memory.limit_in_bytes`` if it has none). Raises :class:`~pounder.UsageError`
    when no such cgroup exists or it sets no limit (v2 ``max``; v1 the "unlimited" value, see
    :func:`_v1_unlimited`)."""
    check_type(path, str, "cgroup_limit: path", "a cgroup name or directory (a string)")
    hierarchy, directory, name = _find(path)
    limits: list[int] = []
    try:
        if hierarchy.version == 2:
            here = directory
            while True:
                words = _read_words(here / "memory.max")
                if words and words[0] != "max":
                    limits.append(int(words[0]))
                if here == hierarchy.mount or here == here.parent:
                    break
                here = here.parent
        else:
            stat = dict(line.split(" ", 1) for line in (directory / "memory.stat").read_text().splitlines()
                        if " " in line)
            raw = stat.get("hierarchical_memory_limit") or (directory / "memory.limit_in_bytes").read_text()
            if int(raw) < _v1_unlimited():
                limits.append(int(raw))
    except (OSError, ValueError) as error:
        raise UsageError(f"--ram cgroup:{path or name}: cannot read its memory limit: {error}") from None
    if not limits:
        raise UsageError(f"cgroup {name} sets no memory limit (nor does any cgroup above it)")
    return min(limits)
