"""A process named as a server must be one, checked first (issue 39, item 9): it or one of its
children listens on a socket; pid 1, a shell and its sleeping children are refused in one line, exit
2, before anything is started or sent, by every command that takes a server's pid; and a process the
kernel will not show even to root is not called a permission problem ("run as root") when root."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from support.cliutil import assert_usage_error, run_cli


@pytest.fixture
def not_a_server() -> Iterator[int]:
    """A shell with two sleeping children: a parent with children, listening nowhere."""
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True,
                             stdin=subprocess.DEVNULL)  # fmt: skip
    try:
        import psutil

        while len(psutil.Process(shell.pid).children()) < 2:
            time.sleep(0.02)
        yield shell.pid
    finally:
        os.killpg(shell.pid, 9)
        shell.wait()


def _commands(pid: str, url: str) -> list[list[str]]:
    return [["top", "--pid", pid, "--once"], ["mem", "--server-pid", pid],
            ["bench", url, "-n", "5", "--server-pid", pid], ["compare", url, url + "x", "--server-pid", pid],
            ["syscalls", url, "--server-pid", pid], ["profile", url, "--server-pid", pid]]  # fmt: skip


def test_a_parent_that_listens_nowhere_is_no_server(not_a_server: int, testserver: Any) -> None:
    srv = testserver()
    for args in _commands(str(not_a_server), srv.url + "/"):
        assert_usage_error(*run_cli(*args), f"process {not_a_server} (sh) is not a server",
                           "neither it nor its children listen")  # fmt: skip
    assert srv.connections() == 0


def test_pid_1_is_refused_before_any_profiler_runs(testserver: Any) -> None:
    """pid 1 is an ancestor of the server behind the URL, not the server: profile refuses it before
    perf or py-spy is started (it used to reach perf's permission check); top and mem never ask
    root to run as root."""
    srv = testserver()
    for args in _commands("1", srv.url + "/"):
        code, out, err = run_cli(*args)
        if args[0] in ("top", "mem") and code == 0:  # pid 1 may listen (systemd's sockets): then it is shown
            continue
        line = assert_usage_error(code, out, err, "process 1 ")
        assert "perf" not in line and "py-spy" not in line, line
        if os.geteuid() == 0:
            assert "run as root" not in line and "run as the server's user or root" not in line, line
    assert srv.connections() == 0


def test_a_server_without_children_is_still_named_as_such() -> None:
    """The identity check keeps the message it precedes: a listening process without children."""
    lone = subprocess.Popen([sys.executable, "-c", "import socket, time; s = socket.socket(); "
                             "s.bind(('127.0.0.1', 0)); s.listen(); print(1, flush=True); time.sleep(60)"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert lone.stdout is not None and lone.stdout.readline()
        assert_usage_error(*run_cli("top", "--pid", str(lone.pid), "--once"), "has no children")
    finally:
        lone.kill()
        lone.wait()
