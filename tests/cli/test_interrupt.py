"""The signal handling every command runs under (pounder._interrupt), with real signals sent
to this process: SIGTERM and SIGHUP raise as Ctrl-C does, the exit status names the first one,
a signal Python would swallow is delivered again, a signal while outputs are written waits, and
a signal set to be ignored stays ignored."""

from __future__ import annotations

import os
import signal
import time

import pytest

from pounder import _interrupt


def wait_for_signal(seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)
    pytest.fail("no signal raised")


@pytest.mark.parametrize(("signum", "code", "cause"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM"),
                                                       (signal.SIGHUP, 130, "SIGHUP")])
def test_each_signal_raises_a_keyboard_interrupt_and_names_itself(signum: int, code: int, cause: str) -> None:
    before = signal.getsignal(signum)
    with pytest.raises(KeyboardInterrupt), _interrupt.handled():
        os.kill(os.getpid(), signum)
        wait_for_signal()
    assert (_interrupt.exit_code(), _interrupt.cause()) == (code, cause)
    assert signal.getsignal(signum) is before  # put back


def test_a_signal_python_swallows_is_delivered_again() -> None:
    """A signal whose handler runs inside ``__del__`` (as in os.fork's after-fork hooks) raises
    where Python ignores exceptions: it must not be lost."""

    class SignalledOnDelete:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs in here; its exception is "ignored"
                time.sleep(0.0001)

    with pytest.raises(_interrupt.Stopped) as caught, _interrupt.handled():
        SignalledOnDelete()  # deleted at once
        wait_for_signal()
    assert caught.value.signum == signal.SIGTERM
    assert _interrupt.exit_code() == 143


def test_a_signal_while_writing_waits_for_the_end_of_the_block() -> None:
    written = []
    with pytest.raises(_interrupt.Stopped), _interrupt.handled(), _interrupt.deferred():
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.2)  # the handler has run by now, and did not raise
        written.append("whole file")
    assert written == ["whole file"]
    assert _interrupt.cause() == "SIGHUP"


def test_an_ignored_signal_stays_ignored() -> None:
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with _interrupt.handled():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN  # nohup: pounder runs on
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.1)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_signal_while_the_cli_is_built_is_one_line() -> None:
    """A signal raised while typer builds the commands (before any command handles it) reached
    Python as an uncaught exception: a traceback and exit 1. The entry point says it in one line.
    Simulated: the CLI's main raises as the handler would; a real signal then is in test_signals."""
    import subprocess
    import sys

    code = ("import os, signal, sys, time\n"
            "import pounder.cli\n"
            "def built():\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(5)\n"
            "pounder.cli.main = built\n"
            "from pounder.__main__ import main\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (143, "", "pounder: error: interrupted by SIGTERM\n")
