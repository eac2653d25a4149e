"""perf on any server's pool (php-fpm, Ruby, a command server): ``perf record -g -p PARENT,CHILD,...``
for each window. Children forked during the window are sampled too: perf's events are inherited
by the children of the processes it attached to (checked by tests/profile/test_perf.py). perf
starts with its events disabled and the window opens when perf acknowledges enabling them
(``--control``), so the load is sampled from its first request. The stacks are native: a PHP or
Ruby function appears as the interpreter's C functions (``execute_ex``, ``zend_*``)."""

from __future__ import annotations

import errno
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

from pounder._errors import PounderError, UsageError
from pounder.load import load_engine
from pounder.procs import ServerTarget, discover
from pounder.profile._profiler import Sampled, Sampler, read_log
from pounder.servers import die_with_parent_hook

DEFAULT_FREQUENCY = 99
"""Samples per second per process (odd, so as not to run in step with timers)."""
PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
MAX_RATE = Path("/proc/sys/kernel/perf_event_max_sample_rate")
INSTALL_PERF = "apt-get install linux-perf; on Ubuntu linux-tools-generic, on Fedora dnf install perf"
SCRIPT_FIELDS = "comm,pid,tid,time,event,ip,sym,dso"
"""``perf script``'s fields: no period, so that a sample weighs 1 whatever the event's period."""
_READY_TIMEOUT_S = 20.0
_CHECK_TIMEOUT_S = 30.0
_SCRIPT_TIMEOUT_S = 600.0
_ATTACH_TRIES = 3
_NOTES = (
    "perf sees native frames: the functions of an interpreted language (PHP, Ruby, Python, Perl) appear as the "
    "interpreter's own (php-fpm: execute_ex, zend_*)",
    "perf samples a process only while it runs on a CPU, and walks stacks by frame pointers: a binary built "
    "without them shows short stacks",
)


def find_perf(binary: str | os.PathLike[str] | None = None) -> str:
    """The perf program (``binary`` or ``perf`` on PATH); UsageError saying how to get it."""
    found = shutil.which(os.fspath(binary) if binary is not None else "perf")
    if found is None:
        named = f"{os.fspath(binary)} is not a program" if binary is not None else "perf is not installed"
        raise UsageError(f"{named}: profiling this server needs perf ({INSTALL_PERF})")
    return found




def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines()
             if line.strip() not in ("", "Error:") and not line.startswith("[ perf record")]  # fmt: skip
    return lines[0][:200].rstrip(".") if lines else "no message"


def _paranoid() -> int | None:
    try:
        return int(PARANOID.read_text().strip())
    except (OSError, ValueError):
        return None


def _permission_advice() -> str:
    level = _paranoid()
    setting = f"{PARANOID} is {level}" if level is not None else f"{PARANOID} is unreadable"
    return (f"run pounder as root, or allow it: sysctl kernel.perf_event_paranoid=1 ({setting}); "
            "in a container perf also needs the PERFMON (or SYS_ADMIN) capability")  # fmt: skip


class Perf(Sampler):
    """``perf record -g`` attached to every process of a server's pool, one recording per window."""

    name = "perf"
    unit = "samples"

    def __init__(self, target: ServerTarget, *, frequency: int = DEFAULT_FREQUENCY,
                 binary: str | os.PathLike[str] | None = None) -> None:  # fmt: skip
        self.target = target
        self.frequency = frequency
        self.binary: str | os.PathLike[str] | None = binary
        self._outputs: list[Path] = []
        self._attached: set[int] = set()
        self._proc: subprocess.Popen[bytes] | None = None
        self._fds: list[int] = []
        self._log: Path | None = None

    def check(self) -> None:
        """perf present, a frequency the kernel allows, and a short test recording of the server's
        parent that works (permission, a container's seccomp, a perf that does not fit the kernel)."""
        limit = _max_rate()
        if not 1 <= self.frequency <= limit:
            raise UsageError(f"--sample-rate for perf must be 1..{limit} samples per second, not {self.frequency}")
        self.binary = find_perf(self.binary)
        level = _paranoid()
        if os.geteuid() != 0 and level is not None and level > 2:
            raise UsageError(f"perf may not profile other processes here: {_permission_advice()}")
        argv = [self.binary, "record", "-q", "-N", "-g", "-F", str(self.frequency), "-p", str(self.target.pid),
                "-o", "-", "--", "sleep", "0.05"]  # fmt: skip
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  timeout=_CHECK_TIMEOUT_S, check=False,
                                  preexec_fn=die_with_parent_hook(signal.SIGTERM))  # fmt: skip
        except subprocess.TimeoutExpired:
            raise UsageError(f"perf record did not finish a test recording within {_CHECK_TIMEOUT_S:g} s") from None
        except OSError as error:
            raise UsageError(f"cannot run {self.binary}: {error.strerror or error}") from None
        if done.returncode != 0:
            said = _first_error(done.stderr.decode(errors="replace"))
            raise UsageError(f"perf cannot profile process {self.target.pid} ({self.target.name}): {said}; "
                             f"{_permission_advice()}")  # fmt: skip

    def resume(self, workdir: Path) -> None:
        """Record every process of the pool now (and the children they fork) until :meth:`pause`.
        A process that exits between listing the pool and attaching: listed again, 3 tries."""
        assert self.binary is not None, "check() first"
        number = len(self._outputs) + 1
        for attempt in range(_ATTACH_TRIES):
            pids = [member.pid for member in discover(self.target)]
            error = self._start(workdir, number, pids)
            if error is None:
                self._attached.update(pids)
                self._outputs.append(workdir / f"perf.{number}.data")
                return
            if "No such process" not in error or attempt == _ATTACH_TRIES - 1:
                raise PounderError(f"perf record failed: {error}")

    def _start(self, workdir: Path, number: int, pids: list[int]) -> str | None:
        """Start perf, events disabled, then enable them; None once perf acknowledged, else its error."""
        assert self.binary is not None
        ctl, ack = workdir / f"perf.{number}.ctl", workdir / f"perf.{number}.ack"
        for fifo in (ctl, ack):
            fifo.unlink(missing_ok=True)
            os.mkfifo(fifo, 0o600)
        (workdir / f"perf.{number}.data").unlink(missing_ok=True)  # else perf keeps it as .old
        self._log = workdir / f"perf.{number}.log"
        argv = [os.fspath(self.binary), "record", "-g", "-F", str(self.frequency), "-N", "-D", "-1",
                "--control", f"fifo:{ctl.name},{ack.name}", "-p", ",".join(map(str, pids)),
                "-o", f"perf.{number}.data"]  # fmt: skip  # in workdir: its path may hold a comma
        ack_fd = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)  # before perf, which opens it to write
        self._fds = [ack_fd]
        with open(self._log, "wb") as log:
            try:
                self._proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    cwd=workdir,
                    start_new_session=True,
                    preexec_fn=die_with_parent_hook(signal.SIGTERM),
                )
            except OSError as error:
                self._close_fds()
                raise PounderError(f"cannot run {self.binary}: {error.strerror or error}") from None
        try:
            return self._enable(self._proc, ctl, ack_fd)
        except BaseException:
            self.close()
            raise

    def _enable(self, proc: subprocess.Popen[bytes], ctl: Path, ack_fd: int) -> str | None:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        ctl_fd = None
        while ctl_fd is None:
            try:
                ctl_fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:
                if error.errno != errno.ENXIO:  # ENXIO: perf has not opened it yet
                    raise
                if proc.poll() is not None or time.monotonic() > deadline:
                    return self._failed(proc)
                time.sleep(0.01)
        self._fds.append(ctl_fd)
        os.write(ctl_fd, b"enable\n")
        answer = b""
        while b"ack" not in answer:
            ready, _, _ = select.select([ack_fd], [], [], 0.05)
            if ready:
                try:
                    answer += os.read(ack_fd, 64)
                except BlockingIOError:
                    pass
            if b"ack" not in answer and (proc.poll() is not None or time.monotonic() > deadline):
                return self._failed(proc)
        return None

    def _failed(self, proc: subprocess.Popen[bytes]) -> str:
        """perf's error once it is stopped (it exited, or did not enable its events in time)."""
        running = proc.poll() is None
        self.close()
        said = _first_error(read_log(self._log)) if self._log is not None else "no message"
        if running:
            return f"it did not start sampling within {_READY_TIMEOUT_S:g} s ({said})"
        return said

    def pause(self) -> None:
        proc = self._stopped()  # perf writes its recording and exits
        if proc is None:
            return
        self._close_fds()
        if proc.returncode not in (0, 130, 143, -signal.SIGINT, -signal.SIGTERM):
            said = _first_error(read_log(self._log)) if self._log is not None else "no message"
            raise PounderError(f"perf record ended with status {proc.returncode}: {said}")

    def finish(self) -> Sampled:
        """``perf script`` on each window's recording, folded by inferno (``comm-PID;outer;...;leaf``),
        the pid taken from the root frame into the key."""
        assert self.binary is not None, "check() first"
        stacks: dict[tuple[int, str], int] = {}
        for data in self._outputs:
            if not data.exists():
                continue
            folded: str = load_engine().collapse_perf(self._script(data))
            for key, weight in parse_collapsed(folded).items():
                stacks[key] = stacks.get(key, 0) + weight
        pids = tuple(sorted(self._attached | {pid for pid, _ in stacks}))
        return Sampled(stacks=stacks, unit=self.unit, pids=pids, notes=_NOTES)

    def _script(self, data: Path) -> str:
        assert self.binary is not None
        argv = [os.fspath(self.binary), "script", "-F", SCRIPT_FIELDS, "-i", str(data)]
        env = {**os.environ, "DEBUGINFOD_URLS": ""}  # symbols from this machine only: no network
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_SCRIPT_TIMEOUT_S,
                                  check=False, env=env, preexec_fn=die_with_parent_hook(signal.SIGTERM))  # fmt: skip
        except subprocess.TimeoutExpired:
            raise PounderError(f"perf script on {data} took more than {_SCRIPT_TIMEOUT_S:g} s") from None
        if done.returncode != 0:
            raise PounderError(f"perf script on {data} failed: {_first_error(done.stderr.decode(errors='replace'))}")
        return done.stdout.decode("utf-8", errors="replace")

    def close(self) -> None:
        self._stopped()
        self._close_fds()

    def _close_fds(self) -> None:
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = []


def parse_collapsed(folded: str) -> dict[tuple[int, str], int]:
    """inferno's folded perf stacks (``comm-PID;outer;...;leaf N``) keyed by pid, the root frame
    (the process) dropped; a sample with no frame at all counts as ``[unknown]``."""
    stacks: dict[tuple[int, str], int] = {}
    for line in folded.splitlines():
        stack, _, weight = line.rstrip().rpartition(" ")
        root, _, frames = stack.partition(";")
        _comm, _, pid = root.rpartition("-")
        if not weight.isdigit() or not pid.isdigit():
            raise PounderError(f"perf's folded stacks: unexpected line {line[:80]!r}")
        key = (int(pid), frames or "[unknown]")
        stacks[key] = stacks.get(key, 0) + int(weight)
    return stacks


def _max_rate() -> int:
    try:
        return int(MAX_RATE.read_text().strip())
    except (OSError, ValueError):
        return 100_000
