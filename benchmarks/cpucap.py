"""A CPU cap for a benchmark's client: a cgroup holding the client (the process, its threads and its
children) to a fraction of one core, so that the client core, not the server, is the limit.

cgroup v1 (a writable cpu controller: cpu.cfs_period_us and cpu.cfs_quota_us) or v2 (cpu.max in a
sub-directory of this process's cgroup, or of the nearest ancestor where the cpu controller can be
enabled for children). The client enters the cgroup itself, between fork and exec (Popen's
preexec_fn=cap.enter), so it runs capped from its first instruction. Whether the cap really bound
is for the caller to judge from cap.stat() (periods throttled) and the client's CPU time.

    with cpu_cap(0.5) as cap:  # cap.error: why there is none (not root, no cpu controller, ...)
        before = cap.stat()
        subprocess.Popen(argv, preexec_fn=cap.enter) ...
        throttled = cap.stat() - before

The cgroup is removed at the end, also after an error or Ctrl-C (a process still in it is moved out
to the parent first).
"""

from __future__ import annotations

import errno
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PERIOD_US = 100_000


@dataclass(frozen=True)
class Throttle:
    """cpu.stat's counters: CFS periods in which the cgroup ran, and those in which it hit its quota."""

    periods: int
    throttled: int

    def __sub__(self, other: Throttle) -> Throttle:
        return Throttle(self.periods - other.periods, self.throttled - other.throttled)


@dataclass
class Cap:
    """A cgroup limiting its processes to `fraction` of one core; `directory` None when there is none (`error`)."""

    fraction: float
    directory: Path | None = None
    version: int = 0
    error: str | None = None

    def enter(self) -> None:
        """Put the calling process into the cgroup (as Popen's preexec_fn: runs in the child before exec)."""
        assert self.directory is not None
        fd = os.open(self.directory / "cgroup.procs", os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)

    def stat(self) -> Throttle:
        assert self.directory is not None
        fields = dict(line.split()[:2] for line in (self.directory / "cpu.stat").read_text().splitlines() if line)
        return Throttle(int(fields["nr_periods"]), int(fields["nr_throttled"]))

    def describe(self) -> str:
        quota = round(self.fraction * PERIOD_US)
        what = f"cpu.cfs_quota_us {quota}" if self.version == 1 else f"cpu.max {quota} {PERIOD_US}"
        return f"cgroup v{self.version} {self.directory} ({what}, period {PERIOD_US} µs)"

    def remove(self) -> None:
        """rmdir the cgroup; a process still in it (a client being killed) is moved to the parent first."""
        if self.directory is None:
            return
        for _ in range(50):
            try:
                self.directory.rmdir()
                return
            except OSError as error:
                if error.errno != errno.EBUSY:
                    break
            for pid in (self.directory / "cgroup.procs").read_text().split():
                try:
                    (self.directory.parent / "cgroup.procs").write_text(pid)
                except OSError:
                    pass  # it has exited meanwhile
            time.sleep(0.1)
        print(f"peers: could not remove the cgroup {self.directory}: remove it by hand (rmdir)", file=sys.stderr)


def _own_cgroup(match: str) -> str:
    """This process's cgroup path in the hierarchy whose controller list is `match` ('' for v2) or contains it."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (match == "" and controllers == "") or (match and match in controllers.split(",")):
            return path
    raise LookupError(f"this process is in no cgroup with {match or 'v2'}")


def _mounts(fstype: str) -> list[tuple[str, list[str]]]:
    rows = [line.split() for line in Path("/proc/self/mounts").read_text().splitlines()]
    return [(row[1], row[3].split(",")) for row in rows if len(row) > 3 and row[2] == fstype]


def _make_v1(fraction: float, name: str) -> Cap:
    mounts = [mount for mount, options in _mounts("cgroup") if "cpu" in options]
    if not mounts:
        raise LookupError("v1: no cpu controller mounted")
    directory = Path(mounts[0] + _own_cgroup("cpu").rstrip("/")) / name
    directory.mkdir()
    try:
        (directory / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (directory / "cpu.cfs_quota_us").write_text(str(round(fraction * PERIOD_US)))
    except OSError:
        directory.rmdir()
        raise
    return Cap(fraction, directory, 1)


def _cpu_for_children(directory: Path) -> bool:
    """Whether cgroup v2 `directory` gives its children the cpu controller (enabling it if it can)."""
    if "cpu" not in (directory / "cgroup.controllers").read_text().split():
        return False
    if "cpu" in (directory / "cgroup.subtree_control").read_text().split():
        return True
    try:
        (directory / "cgroup.subtree_control").write_text("+cpu")
    except OSError:
        return False  # EBUSY: processes in it (the no-internal-processes rule); EACCES: not ours
    return True


def _make_v2(fraction: float, name: str) -> Cap:
    mounts = [mount for mount, _ in _mounts("cgroup2")]
    if not mounts:
        raise LookupError("v2: not mounted")
    root = Path(mounts[0])
    here = Path(str(root) + _own_cgroup("").rstrip("/"))
    for parent in (here, *here.parents):
        if not parent.is_relative_to(root):
            break
        if _cpu_for_children(parent):
            directory = parent / name
            directory.mkdir()
            try:
                (directory / "cpu.max").write_text(f"{round(fraction * PERIOD_US)} {PERIOD_US}")
            except OSError:
                directory.rmdir()
                raise
            return Cap(fraction, directory, 2)
    raise LookupError(f"v2: the cpu controller cannot be enabled for a child of {here} or its parents")


@contextmanager
def cpu_cap(fraction: float) -> Iterator[Cap]:
    """A cgroup capping its processes at `fraction` of a core, removed at the end; Cap.error when none can be made."""
    name = f"pounder-peers-{os.getpid()}"
    reasons = []
    cap = None
    for make in (_make_v1, _make_v2):
        try:
            cap = make(fraction, name)
            break
        except (OSError, LookupError, ValueError) as error:
            reasons.append(f"{make.__name__[-2:]}: {error}" if isinstance(error, OSError) else str(error))
    if cap is None:
        yield Cap(fraction, error="no writable cpu cgroup (" + "; ".join(reasons) + ")")
        return
    try:
        yield cap
    finally:
        cap.remove()
