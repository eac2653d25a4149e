"""A real ``pounder`` command stopped by Ctrl-C at a chosen moment (once a file of its results
exists, or once a condition holds), as the tests of what a stopped run keeps and leaves do."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from support.leftovers import kill_leftovers, processes_mentioning


def interrupted(argv: list[str], results: Path, when: Path | Callable[[], bool], *, after_s: float = 0.0,
                limit_s: float = 400.0, started: Callable[[int], None] | None = None) -> tuple[int, str]:
    """Run ``argv`` (a ``pounder ... --results results``), Ctrl-C it ``after_s`` after ``when``
    exists (a path) or holds (a condition); ``started`` is told its pid first. Its pid and stderr,
    once it has exited with 130 leaving no process that names ``results`` (whatever is left is
    killed, also when the test fails)."""
    ready = when if callable(when) else when.exists
    what = getattr(when, "name", "the moment to stop it")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if started is not None:
        started(proc.pid)
    try:
        deadline = time.monotonic() + limit_s
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"no {what} in time"
            time.sleep(0.05)
        time.sleep(after_s)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        left = processes_mentioning(str(results))
        kill_leftovers(str(results))
    assert proc.returncode == 130, err
    assert not left, f"left running: {[p.cmdline() for p in left]}"
    return proc.pid, err
