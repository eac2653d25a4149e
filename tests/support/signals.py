"""The signal dispositions the suite tests, whoever started it (issue 39 item 22).

A background job of a non-interactive shell (``make test &`` from a CI runner's script, cron) starts
with SIGINT and SIGQUIT ignored, ``nohup`` with SIGHUP ignored; an ignored signal is inherited
across exec, and pounder keeps a signal its caller ignores ignored (as nohup means). The tests
that send SIGINT (or SIGTERM, SIGHUP) to a pounder they started, or to this process, would then
test nothing. :func:`set_test_dispositions`, called by tests/conftest.py in every pytest process
(the pytest-xdist controller and each worker) before any test starts a process:

- SIGINT raises KeyboardInterrupt here, as in a foreground pytest (the in-process Ctrl-C tests
  need Python's handler: ``_thread.interrupt_main`` does nothing when SIGINT is ignored);
- SIGTERM, SIGHUP and SIGQUIT, when the caller ignored them, get a handler that does nothing:
  the suite itself still runs on (a logout does not end ``nohup make test``);
- a Python handler becomes SIG_DFL across exec (SIG_IGN would stay): every process a test starts
  begins with the default disposition of all four, as from an interactive shell.

The signals the caller ignored are passed on in :data:`ENV` (pytest-xdist's workers start from
this process, so they inherit the defaults, not the caller's SIG_IGN)."""

from __future__ import annotations

import os
import signal
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
ENV = "POUNDER_TESTS_CALLER_IGNORED"
"""The numbers of the signals the suite's caller ignored, comma-separated (for the xdist workers)."""


def _runs_on(signum: int, frame: FrameType | None) -> None:
    """A signal the suite's caller ignored: still ignored by the suite itself (but not across exec)."""


def caller_ignored() -> set[int]:
    """The signals ignored by whoever started the suite: ignored in this process now, or in the
    pytest process that started this one (an xdist worker)."""
    inherited = {int(n) for n in os.environ.get(ENV, "").split(",") if n.isdigit()}
    return inherited | {s for s in SIGNALS if signal.getsignal(s) is signal.SIG_IGN}


def set_test_dispositions() -> None:
    """Put the dispositions the tests assume in place (see the module's text)."""
    ignored = caller_ignored()
    os.environ[ENV] = ",".join(str(int(s)) for s in sorted(ignored))
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in SIGNALS:
        if signum != signal.SIGINT and signum in ignored:
            signal.signal(signum, _runs_on)

