"""py-spy on a Python server's pool (gunicorn, uWSGI): ``py-spy record --subprocesses`` on the
parent for each window, so every child is sampled, those forked during the window included (py-spy
looks for new children of the parent while it records). Frames are functions (``--function``: a
function's first line names it, so one function is one frame whatever line was running); native
frames off unless asked; idle threads (a worker waiting in accept) are not sampled, so the shares
are of the time the children spent running Python."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from pounder._errors import PounderError, UsageError
from pounder.procs import ServerTarget
from pounder.profile._profiler import Sampled, Sampler, read_log
from pounder.servers import die_with_parent_hook

DEFAULT_RATE = 100
"""Samples per second per process (py-spy's default)."""
MAX_RATE = 1000
_READY = "Sampling process"
_READY_TIMEOUT_S = 15.0
_CHECK_TIMEOUT_S = 20.0
_PROCESS = re.compile(r'process (\d+):".*?"(?:;|$)')


def find_py_spy(binary: str | os.PathLike[str] | None = None) -> str:
    """The py-spy program (``binary`` or ``py-spy`` on PATH); UsageError saying how to get it."""
    found = shutil.which(os.fspath(binary) if binary is not None else "py-spy")
    if found is None and binary is None:  # pip installs it next to the interpreter (a venv not activated)
        found = shutil.which("py-spy", path=os.path.dirname(sys.executable))
    if found is None:
        named = f"{binary} is not a program" if binary is not None else "py-spy is not on PATH"
        raise UsageError(f"{named}: profiling a Python server needs py-spy (pip install py-spy)")
    return found


def parse_raw(text: str, parent: int) -> dict[tuple[int, str], int]:
    """py-spy's raw output (``process P:"cmd";process C:"cmd";frame;frame N``) as stacks per process:
    the innermost ``process`` frame names the process, the frames after it are the stack."""
    stacks: dict[tuple[int, str], int] = {}
    for line in text.splitlines():
        stack, _, weight = line.rstrip().rpartition(" ")
        if not stack or not weight.isdigit():
            continue
        pid, at = parent, 0
        while match := _PROCESS.match(stack, at):
            pid, at = int(match.group(1)), match.end()
        frames = stack[at:]
        if frames:
            stacks[(pid, frames)] = stacks.get((pid, frames), 0) + int(weight)
    return stacks


class PySpy(Sampler):
    """py-spy attached to a Python server's parent, its children followed."""

    name = "py-spy"
    unit = "samples"

    def __init__(self, target: ServerTarget, *, rate: int = DEFAULT_RATE, native: bool = False,
                 binary: str | os.PathLike[str] | None = None) -> None:  # fmt: skip
        self.target = target
        self.rate = rate
        self.native = native
        self.binary = binary
        self._outputs: list[Path] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: Path | None = None
        self._version: str | None = None

    def version(self) -> str | None:
        return self._version

    def check(self) -> None:
        """py-spy present and able to read the server's parent (a Python process it may trace)."""
        if not 1 <= self.rate <= MAX_RATE:
            raise UsageError(f"--sample-rate for py-spy must be 1..{MAX_RATE} samples per second, not {self.rate}")
        self.binary = find_py_spy(self.binary)
        try:
            said = subprocess.run([self.binary, "--version"], capture_output=True, text=True,
                                  timeout=_CHECK_TIMEOUT_S, check=False,
                                  preexec_fn=die_with_parent_hook(signal.SIGKILL)).stdout.strip()  # fmt: skip
            self._version = said or None
        except (OSError, subprocess.TimeoutExpired):
            self._version = None
        try:
            done = subprocess.run([self.binary, "dump", "--nonblocking", "--pid", str(self.target.pid)],
                                  capture_output=True, timeout=_CHECK_TIMEOUT_S, check=False,
                                  preexec_fn=die_with_parent_hook(signal.SIGKILL))  # fmt: skip
        except subprocess.TimeoutExpired:
            raise UsageError(f"py-spy could not read process {self.target.pid} within {_CHECK_TIMEOUT_S:g} s") from None
        if done.returncode != 0:
            said = _first_error(done.stderr.decode(errors="replace") + done.stdout.decode(errors="replace"))
            hint = "" if os.geteuid() == 0 else " (reading another process needs root or ptrace permission)"
            raise UsageError(f"py-spy cannot profile process {self.target.pid} ({self.target.name}): {said}{hint}; "
                             "is it a Python server? (--profiler perf profiles any process)")  # fmt: skip

    def resume(self, workdir: Path) -> None:
        assert self.binary is not None, "check() first"
        output = workdir / f"py-spy.{len(self._outputs) + 1}.txt"
        self._stderr = workdir / f"py-spy.{len(self._outputs) + 1}.log"
        argv = [os.fspath(self.binary), "record", "--pid", str(self.target.pid), "--subprocesses", "--format", "raw",
                "--function", "--rate", str(self.rate), "--output", str(output), *(["--native"] if self.native else [])]
        with open(self._stderr, "wb") as stderr:
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                          start_new_session=True, preexec_fn=die_with_parent_hook(signal.SIGTERM))
        self._outputs.append(output)
        self._wait_ready(self._proc, self._stderr)

    def _wait_ready(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        """Until py-spy says it samples (so the window's load is sampled from its first request)."""
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while _READY not in read_log(log):
            if proc.poll() is not None:
                raise PounderError(f"py-spy ended with status {proc.returncode}: {_first_error(read_log(log))}")
            if time.monotonic() > deadline:
                raise PounderError(f"py-spy did not start sampling within {_READY_TIMEOUT_S:g} s")
            time.sleep(0.02)

    def pause(self) -> None:
        proc = self._stopped()  # py-spy writes what it sampled and exits
        if proc is None:
            return
        if proc.returncode not in (0, -signal.SIGINT, 130) and self._stderr is not None:
            raise PounderError(f"py-spy ended with status {proc.returncode}: {_first_error(read_log(self._stderr))}")

    def finish(self) -> Sampled:
        stacks: dict[tuple[int, str], int] = {}
        for output in self._outputs:
            for key, weight in parse_raw(read_log(output), self.target.pid).items():
                stacks[key] = stacks.get(key, 0) + weight
        notes = ("py-spy samples only what runs: a child waiting for a connection is not sampled, so the shares are "
                 "of the time the children ran Python" + ("" if self.native else " (native frames off: --native)"),)
        return Sampled(stacks=stacks, unit=self.unit, pids=tuple(sorted({pid for pid, _ in stacks})), notes=notes)

    def close(self) -> None:
        self._stopped()




def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("py-spy> ")]
    return lines[0][:200] if lines else "no message"
