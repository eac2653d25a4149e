"""A server that dies during ``pounder profile`` (issue 39, item 7): its exit is named as the cause
(not the profiler that then finds no process), what was measured until then is written as after a
signal (marked interrupted, with a note), exit 1, and no profiler is left running."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from pounder.profile import load_profile
from support.cliutil import start_pounder

pytestmark = pytest.mark.skipif(subprocess.run(["which", "py-spy"], capture_output=True).returncode != 0,
                                reason="py-spy is not installed")  # fmt: skip


def _py_spy_running(pid: int) -> bool:
    return subprocess.run(["pgrep", "-f", f"py-spy record --pid {pid} "], capture_output=True).returncode == 0


def test_a_server_killed_during_a_profiled_trial_is_named_and_what_was_measured_is_written(
    gunicorn_server, tmp_path: Path
) -> None:
    srv = gunicorn_server(app="profile_app:app", workers=2)
    out, svg = tmp_path / "p.json", tmp_path / "f.svg"
    proc = start_pounder("profile", srv.url + "/", "--server-pid", srv.pid, "--rounds", "3", "-d", "1s", "-c", "2",
                         "--warmup", "10", "--json", out, "--flamegraph", svg, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _py_spy_running(srv.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # half a second into the profiled trial
        workers = [child.pid for child in psutil.Process(srv.pid).children()]
        os.kill(srv.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for pid in workers:  # a gunicorn worker whose master is gone exits by itself within its timeout
        if psutil.pid_exists(pid):
            os.kill(pid, signal.SIGKILL)
    lines = stderr.strip().splitlines()
    assert proc.returncode == 1, stderr
    cause = rf"the server process {srv.pid} \([^)]+\) (was killed by SIGKILL|exited) during the profile"
    assert re.match(rf"pounder: error: {cause}: the profile holds what was sampled until then, written to ", lines[-1])
    assert "py-spy ended" not in stderr and sum(line.startswith("pounder: error:") for line in lines) == 1, stderr
    result = load_profile(out)
    assert result.interrupted and result.trials and result.trials[-1].profiled
    assert any(re.match(cause, note) for note in result.notes), result.notes
    assert "Interrupted: the profile holds what was sampled until the run stopped." in stdout
    assert not _py_spy_running(srv.pid)
