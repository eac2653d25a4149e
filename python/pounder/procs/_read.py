"""Reading one process: memory from ``/proc/PID/smaps_rollup``, the rest from psutil.

Which figure means what (see ``docs/reference/results.md``, section ``pounder/mem/2``):

* ``rss``: resident pages, shared ones included. Never summed over a pool: every shared page
  would be counted once per process.
* ``shared`` = Shared_Clean + Shared_Dirty: resident pages also mapped by another process (after a
  fork mostly the parent's pages not yet written, but also libc and other libraries).
* ``private`` = Private_Clean + Private_Dirty, the USS: what the kernel frees when the process
  exits, so what one more child costs.
* ``pss``: each page divided by the number of processes mapping it; summed over a pool it is the
  pool's real footprint.

pounder's own process is taken out of ``shared``, ``private`` and ``pss`` when an
:class:`~pounder.procs._own.OwnPages` is given (root only): a file page the server maps and only
pounder maps too (libpython when the server runs the same Python) counts as the server's private
page, as it does when pounder is not running.

psutil supplies what it reads right (process discovery, names, start time, CPU times, VSZ). Its
``memory_info().shared`` comes from ``/proc/PID/statm`` (file-backed pages, not copy-on-write
sharing) and is never used.
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass
from typing import Literal

import psutil

from pounder._errors import PounderError, public
from pounder._records import Record
from pounder.procs._own import OwnPages

Role = Literal["parent", "child", "grandchild"]
ROLES: tuple[Role, ...] = ("parent", "child", "grandchild")

_ROLLUP_FIELDS: dict[bytes, str] = {
    b"Rss": "rss",
    b"Pss": "pss",
    b"Shared_Clean": "shared_clean",
    b"Shared_Dirty": "shared_dirty",
    b"Private_Clean": "private_clean",
    b"Private_Dirty": "private_dirty",
    b"Swap": "swap",
}


class ProcessGone(PounderError):
    """The process exited (or is a zombie) between being listed and being read."""

    def __init__(self, pid: int) -> None:
        super().__init__(f"process {pid} exited while being read")
        self.pid = pid


@public
@dataclass(frozen=True)
class Rollup:
    """The fields of ``/proc/PID/smaps_rollup`` pounder uses, in bytes (the kernel gives kB)."""

    rss: int
    pss: int
    shared_clean: int
    shared_dirty: int
    private_clean: int
    private_dirty: int
    swap: int

    @property
    def shared(self) -> int:
        return self.shared_clean + self.shared_dirty

    @property
    def uss(self) -> int:
        return self.private_clean + self.private_dirty


def _permission_error(path: str) -> PounderError:
    return PounderError(f"cannot read {path}: permission denied; run as the server's user or root")


@public
def read_rollup(pid: int) -> Rollup:
    """Read ``/proc/PID/smaps_rollup`` (one read, kB converted to bytes).

    Raises :class:`ProcessGone` when the process has exited or is a zombie, and
    :class:`~pounder.PounderError` when the file cannot be read (permission, old kernel).
    """
    path = f"/proc/{pid}/smaps_rollup"
    try:
        with open(path, "rb", buffering=0) as file:
            data = file.read(8192)
    except PermissionError:
        raise _permission_error(path) from None
    except (FileNotFoundError, ProcessLookupError):
        # A process in the middle of exiting can still have its /proc directory without the file:
        # only our own process tells whether the kernel has smaps_rollup at all.
        if not os.path.exists("/proc/self/smaps_rollup"):
            raise PounderError(f"{path} does not exist: pounder needs Linux 4.14 or later") from None
        raise ProcessGone(pid) from None
    except OSError as error:
        if error.errno in (errno.ESRCH, errno.ENOENT):
            raise ProcessGone(pid) from None
        if error.errno == errno.EACCES:
            raise _permission_error(path) from None
        raise PounderError(f"cannot read {path}: {error.strerror}") from None
    values = dict.fromkeys(_ROLLUP_FIELDS.values(), 0)
    seen = False
    for line in data.splitlines():
        key, sep, rest = line.partition(b":")
        field = _ROLLUP_FIELDS.get(key)
        if sep and field is not None:
            parts = rest.split()
            if parts:
                values[field] = int(parts[0]) * 1024
                seen = True
    if not seen:  # an exiting process (its memory already released) reads as an empty file
        raise ProcessGone(pid)
    return Rollup(**values)


@public
@dataclass(frozen=True)
class Statm:
    """``/proc/PID/statm`` in bytes, as Apache2::SizeLimit and psutil read it without smaps:
    ``size`` is VmSize (every mapped page, resident or not), ``resident`` the RSS, ``shared`` the
    resident file-backed and shmem pages (RssFile + RssShmem: libraries and mapped files, shared
    with another process or not; copy-on-write sharing with the parent is not in it)."""

    size: int
    resident: int
    shared: int


@public
def read_statm(pid: int) -> Statm:
    """Read ``/proc/PID/statm`` (pages converted to bytes with the system's page size).
    Raises :class:`ProcessGone` when the process has exited."""
    path = f"/proc/{pid}/statm"
    try:
        with open(path, "rb", buffering=0) as file:
            fields = file.read(256).split()
    except PermissionError:
        raise _permission_error(path) from None
    except (FileNotFoundError, ProcessLookupError):
        raise ProcessGone(pid) from None
    except OSError as error:
        if error.errno in (errno.ESRCH, errno.ENOENT):
            raise ProcessGone(pid) from None
        raise PounderError(f"cannot read {path}: {error.strerror}") from None
    if len(fields) < 3 or int(fields[0]) == 0:  # a zombie has no memory left
        raise ProcessGone(pid)
    page = os.sysconf("SC_PAGE_SIZE")
    return Statm(size=int(fields[0]) * page, resident=int(fields[1]) * page, shared=int(fields[2]) * page)


@public
@dataclass(frozen=True)
class ProcMem(Record):
    """One process at one instant. Sizes in bytes, times in seconds.

    ``shared`` = Shared_Clean + Shared_Dirty and ``private`` (the USS) = Private_Clean +
    Private_Dirty, from smaps_rollup; ``cpu_user_s``/``cpu_system_s`` are the process's own CPU
    time (all its threads); ``children_cpu_s`` is the CPU of the children it has reaped
    (cutime + cstime); ``age_s`` is the time since the process started.
    """

    pid: int
    ppid: int
    role: Role
    name: str
    vsz: int
    rss: int
    shared: int
    private: int
    pss: int
    swap: int
    cpu_user_s: float
    cpu_system_s: float
    children_cpu_s: float
    age_s: float

    @property
    def uss(self) -> int:
        """Same as ``private``."""
        return self.private

    @property
    def cpu_s(self) -> float:
        """User + system CPU time of the process itself."""
        return self.cpu_user_s + self.cpu_system_s


@dataclass(frozen=True)
class Reading:
    """A :class:`ProcMem` plus what the sampler needs to tell processes apart (start time)."""

    mem: ProcMem
    create_time: float


def display_name(proc: psutil.Process) -> str:
    """The process's name. The kernel keeps 15 bytes of it, and a process that renames itself
    (mod_perl sets ``$0``, so ``/usr/sbin/apache2`` shows as ``/usr/sbin/apach``) loses the end:
    then the program named in its command line, when the kept part is a prefix of it."""
    name = proc.name()
    try:
        cmdline = proc.cmdline()
    except (psutil.AccessDenied, psutil.ZombieProcess):
        return name
    if len(name) >= 15 and cmdline and cmdline[0].startswith(name):
        return os.path.basename(cmdline[0]) or name
    return name


def read_reading(pid: int, role: Role, ppid: int | None = None, own: OwnPages | None = None,
                 again: bool = False) -> Reading:  # fmt: skip
    """Read process ``pid`` (see :func:`read_process`), with its start time (epoch seconds);
    with ``own``, pounder's own process is taken out of its shared, private and PSS figures
    (``again``: as found at the first reading of this process, see :meth:`OwnPages.adjustment`)."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            status = proc.status()
            if status == psutil.STATUS_ZOMBIE:
                raise ProcessGone(pid)
            name = display_name(proc)
            real_ppid = proc.ppid()
            create_time = proc.create_time()
            cpu = proc.cpu_times()
            vsz = proc.memory_info().vms
    except psutil.NoSuchProcess:  # ZombieProcess is a NoSuchProcess too
        raise ProcessGone(pid) from None
    except psutil.AccessDenied:
        raise _permission_error(f"/proc/{pid}/stat") from None
    rollup = read_rollup(pid)
    ours = None if own is None else own.adjustment(pid, create_time if again else None)
    moved, pss_back = (0, 0) if ours is None else (min(ours.moved, rollup.shared), ours.pss)
    mem = ProcMem(
        pid=pid, ppid=real_ppid if ppid is None else ppid, role=role, name=name, vsz=vsz, rss=rollup.rss,
        shared=rollup.shared - moved, private=rollup.uss + moved, pss=min(rollup.rss, rollup.pss + pss_back),
        swap=rollup.swap,
        cpu_user_s=cpu.user, cpu_system_s=cpu.system, children_cpu_s=cpu.children_user + cpu.children_system,
        age_s=max(0.0, time.time() - create_time),
    )  # fmt: skip
    return Reading(mem, create_time)


@public
def read_process(pid: int, role: Role = "parent", own: OwnPages | None = None) -> ProcMem:
    """Read one process: memory from smaps_rollup, name, CPU times, VSZ and age from psutil
    (``own``: :class:`~pounder.procs._own.OwnPages`, see :func:`read_reading`).

    Raises :class:`ProcessGone` if the process has exited or is a zombie (callers listing a pool
    skip it), :class:`~pounder.PounderError` if it cannot be read (permission denied).
    """
    return read_reading(pid, role, own=own).mem


@public
def process_cpu_clock(pid: int) -> float | None:
    """CPU time (user + system, all threads, in seconds) of process ``pid`` from the kernel's
    per-process CPU clock (clock_getcpuclockid): nanosecond resolution, where ``/proc/PID/stat``
    counts 10 ms ticks — a trivial handler uses less than one tick per request. Works on a zombie;
    None when the process is gone or the clock cannot be read."""
    clock_id = ((~pid) << 3) | 2  # the kernel's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    try:
        return time.clock_gettime(clock_id)
    except OSError:
        return None


def read_cpu(pid: int) -> tuple[float, float, float] | None:
    """``(own CPU s, reaped children's CPU s, start time)`` of a live or zombie process, or None
    when it is gone. Its own CPU comes from the process CPU clock (ns), else from
    ``/proc/PID/stat`` (ticks); reaped children's only exists in ticks (cutime + cstime). A zombie
    still has its CPU times until it is reaped."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            cpu = proc.cpu_times()
            create_time = proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    own = process_cpu_clock(pid)
    return cpu.user + cpu.system if own is None else own, cpu.children_user + cpu.children_system, create_time


def _meminfo(key: bytes, needs: str) -> int:
    """The ``key`` line of ``/proc/meminfo`` (``b"MemTotal"``), in bytes (the kernel gives kB);
    ``needs`` is the kernel that has the line, named when it is missing."""
    try:
        with open("/proc/meminfo", "rb") as file:
            for line in file:
                if line.startswith(key + b":"):
                    return int(line.split()[1]) * 1024
    except OSError as error:
        raise PounderError(f"cannot read /proc/meminfo: {error.strerror}") from None
    raise PounderError(f"no {key.decode()} in /proc/meminfo ({needs} is needed)")


@public
def mem_available() -> int:
    """``MemAvailable`` from ``/proc/meminfo``, in bytes: what can still be allocated without
    swapping (page cache that can be dropped included), not MemFree."""
    return _meminfo(b"MemAvailable", "Linux 3.14 or later")


@public
def mem_total() -> int:
    """``MemTotal`` from ``/proc/meminfo``, in bytes: the machine's usable RAM."""
    return _meminfo(b"MemTotal", "Linux")


@dataclass(frozen=True)
class MachineCpu:
    """The whole machine's busy CPU time so far (``busy_s``: user + nice + system + irq + softirq
    + steal from ``/proc/stat``'s ``cpu`` line, in seconds; guest time is already in user and
    nice, idle and iowait are not busy) and the number of CPUs ``/proc/stat`` lists (``cpuN``)."""

    busy_s: float
    cpus: int


_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system [idle iowait] irq softirq steal [guest guest_nice]


def read_machine_cpu() -> MachineCpu | None:
    """Read ``/proc/stat`` once: the machine's busy CPU time, all CPUs; None when it cannot be
    read or parsed (not Linux, a restricted /proc)."""
    try:
        with open("/proc/stat", "rb") as file:
            data = file.read()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    lines = data.splitlines()
    first = lines[0].split() if lines else []
    if len(first) < 4 or first[0] != b"cpu" or ticks <= 0:
        return None
    try:
        values = [int(value) for value in first[1:]]
    except ValueError:
        return None
    busy = sum(values[index] for index in _BUSY_FIELDS if index < len(values))
    cpus = sum(1 for line in lines[1:] if line.startswith(b"cpu") and line[3:4].isdigit())
    return MachineCpu(busy / ticks, cpus) if cpus else None
