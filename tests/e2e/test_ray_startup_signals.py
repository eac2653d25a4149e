"""A signal while ``pounder bench --ray local`` starts its one-machine Ray cluster (issue 25, item 12):
pounder ends within a second with its exit status and one line, and no process of that cluster
stays (Ray's DashboardAgent and RuntimeEnvAgent used to stay for minutes, ppid 1, and SIGTERM
ended pounder with Ray's own status 15, without a word). SIGKILL of pounder leaves nothing either.

The processes of a run are told from those of any other Ray cluster on the machine by their
session: pounder starts in a session of its own, and every process Ray starts stays in it (an
orphan too; a mark in the environment would not do: Ray's agents write their titles over it).
Each signal is sent at a moment of the start-up seen from outside (the raylet started, its agents
started, a worker started), not after a sleep; whatever the test started is killed at teardown,
also on failure."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import psutil
import pytest

from support.cliutil import start_pounder, with_pythonpath

pytest.importorskip("ray")

EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 130}
CAUSE = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
HONOURED_S = 1.0
"""The rule: a signal is honoured within a second, in every state."""
GONE_S = 5.0
"""How long the run's processes may take to go once pounder has exited (after SIGKILL the guard
gives them two seconds' grace)."""
START_S = 60.0


def _in_session(session: int) -> list[psutil.Process]:
    """The running processes (zombies aside) of ``session``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == session and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def _names(procs: list[psutil.Process]) -> list[str]:
    names = []
    for proc in procs:
        try:
            names.append(proc.name() + " " + " ".join(proc.cmdline())[:60])
        except psutil.Error:
            continue
    return names


def _has(*words: str) -> Callable[[list[str]], bool]:
    """Whether one of the names holds one of ``words``."""
    return lambda names: any(word in name for name in names for word in words)


@pytest.fixture
def ray_run(testserver: Any) -> Iterator[Callable[[], subprocess.Popen[str]]]:
    """Start ``pounder bench --ray local`` (a load that outlasts the test) in a session of its own;
    every process of each run is killed at teardown."""
    url = testserver(mode="ok").url + "/"
    procs: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        proc = start_pounder("bench", "--ray", "local", url, "-n", "1000000", stdin=subprocess.DEVNULL,
                             env=with_pythonpath(), start_new_session=True)
        procs.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
            for leftover in _in_session(proc.pid):
                try:
                    leftover.kill()
                except psutil.Error:
                    continue


def _when(proc: subprocess.Popen[str], ready: Callable[[list[str]], bool]) -> list[str]:
    """Wait until the run's processes satisfy ``ready`` (pounder still starting); their names."""
    deadline = time.monotonic() + START_S
    while proc.poll() is None and time.monotonic() < deadline:
        names = _names(_in_session(proc.pid))
        if ready(names):
            return names
        time.sleep(0.02)
    out, err = proc.communicate() if proc.poll() is not None else ("", "")
    pytest.fail(f"the start-up never reached that moment (exit {proc.returncode}):\n{out}\n{err}")


def _gone(proc: subprocess.Popen[str]) -> list[str]:
    """The run's processes still running once they had :data:`GONE_S` to go."""
    deadline = time.monotonic() + GONE_S
    while (left := _in_session(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _names(left)


@pytest.mark.parametrize(
    ("signum", "moment"),
    [
        pytest.param(signal.SIGTERM, ("raylet",), id="SIGTERM-raylet-started"),
        pytest.param(signal.SIGHUP, ("ray::DashboardAgent",), id="SIGHUP-agents-started"),
        pytest.param(signal.SIGINT, ("ray::IDLE", "ray::Agent"), id="SIGINT-worker-started"),
    ],
)
def test_a_signal_during_ray_start_up_ends_the_run_and_its_cluster(
        ray_run: Callable[[], subprocess.Popen[str]], signum: signal.Signals, moment: tuple[str, ...]) -> None:
    proc = ray_run()
    seen = _when(proc, _has(*moment))
    sent = time.monotonic()
    proc.send_signal(signum)
    proc.wait(timeout=30)
    took = time.monotonic() - sent
    out, err = proc.communicate()
    assert proc.returncode == EXIT[signum], (proc.returncode, err)
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("pounder:")]
    assert lines == [f"pounder: error: interrupted by {CAUSE[signum]}"], err
    assert took <= HONOURED_S, f"{took:.2f} s from {signum.name} to the exit"
    assert _gone(proc) == [], f"left running (of {seen})"


def test_sigkill_during_ray_start_up_leaves_no_process(ray_run: Callable[[], subprocess.Popen[str]]) -> None:
    """The raylet's agents and workers have no parent-death signal (they stayed for minutes once a
    worker had started); the guard kills their group."""
    proc = ray_run()
    seen = _when(proc, _has("ray::IDLE", "ray::Agent"))
    proc.kill()
    proc.wait(timeout=30)
    assert _gone(proc) == [], f"left running (of {seen})"
