"""The suite passes however it is started (issue 39 item 22): from a background job of a
non-interactive shell under nohup (SIGINT, SIGQUIT and SIGHUP ignored, as a CI runner's
``make test &``, cron or ``nohup make test &`` start it), the tests that send signals to a
pounder they started, or to themselves, still pass: tests/support/signals.py, installed by
tests/conftest.py, gives them the dispositions they test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from support.signals import SIGNALS, caller_ignored

ROOT = Path(__file__).resolve().parents[2]
EXPECT = "POUNDER_TESTS_EXPECT_CALLER_IGNORED"
"""Set by the test below for the pytest it starts: the signals its caller (nohup, bash's ``&``) ignored."""

SELECTION = [  # one of each kind: in-process SIGINT and SIGHUP, interrupt_main, real SIGINT to a pounder
    "tests/support/test_signal_dispositions.py::test_a_process_a_test_starts_takes_every_signal_by_default",
    "tests/cli/test_interrupt.py::test_each_signal_raises_a_keyboard_interrupt_and_names_itself",
    "tests/load/test_bench.py::test_ctrl_c_returns_partial_result",
    "tests/load/test_bench.py::test_cli_ctrl_c_exits_130_with_partial_report",
]


def test_a_process_a_test_starts_takes_every_signal_by_default() -> None:
    """SigIgn of a child, as the kernel reports it, holds none of SIGINT, SIGTERM, SIGHUP, SIGQUIT;
    in the pytest started below, its caller really ignored SIGINT, SIGQUIT and SIGHUP."""
    status = subprocess.run([sys.executable, "-c", "print(open('/proc/self/status').read())"], capture_output=True,
                            text=True, check=True, timeout=30).stdout  # fmt: skip
    ignored_mask = int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
    assert [s.name for s in SIGNALS if ignored_mask & (1 << (s - 1))] == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if EXPECT in os.environ:
        assert caller_ignored() == {int(n) for n in os.environ[EXPECT].split(",")}


def test_the_signal_tests_pass_in_a_background_job_under_nohup() -> None:
    expected = {signal.SIGINT, signal.SIGQUIT, signal.SIGHUP}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "POUNDER_TESTS_"))}
    env[EXPECT] = ",".join(str(int(s)) for s in sorted(expected))
    # in an xdist worker, as make test runs them
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1", *SELECTION]
    done = subprocess.run(["bash", "-c", 'nohup "$@" & wait $!', "bash", *argv], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " 6 passed" in f" {summary}" and "failed" not in summary and "skipped" not in summary, summary
