"""Every process pounder starts dies with it, SIGKILL included (issue 25 item 11): a server started
through a shell (``bash -c 'gunicorn ...; echo stopped'``) kept its gunicorn arbiter and workers
running under init when pounder was SIGKILLed, because the kernel's parent-death signal reaches
only the shell. The guard stops the server's whole process group once pounder is gone. Real
processes: a Python process starts the server and is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pounder.servers import gunicorn_missing
from support.leftovers import kill_leftovers, processes_mentioning

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"

# the shell holds no listening socket (its gunicorn does), so start() waits for one until it is killed
STARTER = """
import sys
from pounder.servers import CommandServer
CommandServer(sys.argv[2], sys.argv[1], workers=2).start()
"""


def gunicorn_workers(pid_file: Path) -> list[psutil.Process]:
    """The workers of the gunicorn arbiter whose pid ``pid_file`` holds; none before it is written."""
    try:
        return psutil.Process(int(pid_file.read_text())).children()
    except (OSError, ValueError, psutil.Error):
        return []


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_a_shell_wrapped_server_dies_with_the_process_that_started_it(tmp_path: Path, how: str) -> None:
    marker = str(tmp_path / "guarded")
    command = (f"bash -c '{sys.executable} -m gunicorn --bind {{host}}:{{port}} --workers {{workers}} "
               f"--chdir {APPS_DIR} --pid {marker}.pid wsgi_app:app; echo stopped'")
    starter = subprocess.Popen([sys.executable, "-c", STARTER, command, str(tmp_path / "work")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": str(PYTHON_DIR)})
    try:
        # counted from the arbiter's pid file, not from every process naming the marker: a fork
        # between its fork and its exec (the starter's, the shell's) names it too, for a moment
        deadline = time.monotonic() + 60  # a loaded machine (tests on two workers) starts them slowly
        while len(gunicorn_workers(Path(f"{marker}.pid"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        logs = "".join(path.read_text(errors="replace")[-3000:] for path in (tmp_path / "work").rglob("*.log"))
        running = [(p.cmdline(), p.status()) for p in processes_mentioning(marker)]
        assert len(gunicorn_workers(Path(f"{marker}.pid"))) == 2, (running, logs)
        assert any(p.name() == "bash" for p in processes_mentioning(marker)), running
        starter.send_signal(getattr(signal, how))
        starter.wait(timeout=10)
        deadline = time.monotonic() + 5
        while processes_mentioning(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not processes_mentioning(marker), [p.cmdline() for p in processes_mentioning(marker)]
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
        kill_leftovers(marker)
