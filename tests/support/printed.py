"""A configuration pounder printed, started as a user would: its command line run in a directory
of its own until it answers, then stopped, nothing of it left."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from pounder.servers._net import answers_http
from support.leftovers import kill_leftovers, processes_mentioning
from support.srvutil import wait_not_running


@contextlib.contextmanager
def serving(argv: Sequence[str], cwd: Path, port: int, stop: signal.Signals = signal.SIGTERM,
            timeout_s: float = 60.0) -> Iterator[str]:
    """Run ``argv`` in ``cwd`` (a printed configuration's command line, listening on ``port``) until
    it answers HTTP; yield its URL; then stop it with ``stop``: it must exit and leave nothing
    running in ``cwd``. Its whole session is killed in every case, also on failure."""
    log = cwd / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while not answers_http(port):
            assert proc.poll() is None, f"exited {proc.returncode}: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no answer in {timeout_s:g} s: {log.read_text()[-3000:]}"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
        proc.send_signal(stop)
        proc.wait(timeout=30)
        assert wait_not_running([p.pid for p in processes_mentioning(str(cwd))], 10) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kill_leftovers(str(cwd))
