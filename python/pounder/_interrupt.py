"""SIGINT, SIGTERM and SIGHUP stop a ``pounder`` command alike (the CLI's; the library installs
no signal handler).

While a command runs, SIGTERM and SIGHUP raise :class:`Stopped` (a ``KeyboardInterrupt``) in the
main thread, as Ctrl-C does: every code path that keeps a partial result on Ctrl-C keeps it on
them too, and every server is stopped by the ``finally`` blocks that already run on Ctrl-C. A
signal the caller set to be ignored (``nohup``, a background job) stays ignored. The exit status
says which one stopped the run: 143 for SIGTERM, 130 for SIGINT and SIGHUP. Where the main thread
may sit for seconds in a foreign library's C code that checks for no signal (Ray's start-up), a
:func:`watched` stretch still ends the command within a second.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + signal.SIGTERM
STUCK_S = 0.3
"""How long the main thread has, after a signal in a :func:`watched` stretch, to leave it before
the watcher ends the command."""

_received: list[int] = []
_deferring: list[bool] = [False]
_depth: list[int] = [0]
_reported: list[bool] = [False]


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (or SIGINT) arrived: handled as Ctrl-C is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    if not _deferring[0]:
        raise Stopped(signum)


@contextmanager
def deferred() -> Iterator[None]:
    """While what was measured is written: a signal waits until the block ends, then stops the
    command (so the files are whole)."""
    seen = len(_received)
    _deferring[0] = True
    try:
        yield
    finally:
        _deferring[0] = False
    if len(_received) > seen:
        raise Stopped(_received[seen])


def _on_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """A :class:`Stopped` raised where Python cannot raise (e.g. in ``os.fork``'s after-fork hooks,
    as a server starts) is ignored by Python: deliver the signal again a moment later, where it is
    raised, instead of losing it (and print no traceback)."""
    if isinstance(unraisable.exc_value, Stopped):
        threading.Timer(0.01, os.kill, (os.getpid(), unraisable.exc_value.signum)).start()
        return
    _previous_hook[0](unraisable)


_previous_hook = [sys.unraisablehook]


@contextmanager
def handled() -> Iterator[None]:
    """Around one command: the three signals raise :class:`Stopped`; the handlers before are put
    back. Within another ``handled()`` (the entry point's, from before the CLI is imported) it
    changes nothing."""
    if _depth[0] or threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    _deferring[0] = False
    _reported[0] = False
    _depth[0] += 1
    try:
        with _installed():
            yield
    finally:
        _depth[0] -= 1


@contextmanager
def _installed() -> Iterator[None]:
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    for signum, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(signum, _on_signal)
    _previous_hook[0], sys.unraisablehook = sys.unraisablehook, _on_unraisable
    try:
        yield
    finally:
        _deferring[0] = True  # the command has ended: a signal now is noted, not raised over its exit
        sys.unraisablehook = _previous_hook[0]
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def received() -> bool:
    """Whether a signal stopped (or is stopping) the command."""
    return bool(_received)


def reported() -> bool:
    """Whether the command said it was interrupted (:func:`mark_reported`)."""
    return _reported[0]


def mark_reported() -> None:
    """The command said it was interrupted, and where what was measured is."""
    _reported[0] = True


def exit_code() -> int:
    """The exit status of an interrupted command: 143 when the first signal was SIGTERM, else 130."""
    return EXIT_TERMINATED if _received[:1] == [signal.SIGTERM] else EXIT_INTERRUPTED


def cause() -> str:
    """What stopped the command, for the message: ``SIGTERM``, ``SIGHUP`` or ``Ctrl-C``."""
    if not _received or _received[0] == signal.SIGINT:
        return "Ctrl-C"
    return signal.Signals(_received[0]).name


class Watch:
    """A :func:`watched` stretch: ``stop`` kills what it started, should the watcher end the command."""

    def __init__(self) -> None:
        self.stop: Callable[[], None] | None = None
        self.settled = False
        self.left = threading.Event()

    def settle(self) -> None:
        """The start-up is over: a signal from now on is the main thread's alone (the run it stops
        keeps what was measured)."""
        self.settled = True


_ending = threading.Lock()


@contextmanager
def watched() -> Iterator[Watch]:
    """Around a start-up in which the main thread may sit for seconds in C code that checks for no
    signal (``ray.init``: its C++ client waits on the node; killing the node makes it wait longer),
    and the clean-up after it. A watcher thread sees a signal arrive (:func:`signal.set_wakeup_fd`);
    if the main thread has not left the stretch :data:`STUCK_S` later, the watcher calls
    ``watch.stop``, says so in the one line and exits with the signal's status at once
    (``os._exit``: the main thread cannot be unwound; nothing was measured yet). Only within
    :func:`handled`, in the main thread: the library's callers keep their own handling."""
    watch = Watch()
    if not _depth[0] or threading.current_thread() is not threading.main_thread():
        yield watch
        return
    reader, writer = os.pipe()
    os.set_blocking(writer, False)
    previous = signal.set_wakeup_fd(writer, warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(watch, reader), name="pounder-watch", daemon=True)
    watcher.start()
    try:
        yield watch
    finally:
        with _ending:  # never while the watcher ends the command: it keeps the lock
            watch.left.set()
        signal.set_wakeup_fd(previous)
        os.close(writer)  # the watcher reads the end
        watcher.join()
        os.close(reader)


def _watch(watch: Watch, reader: int) -> None:
    while chunk := os.read(reader, 64):  # a byte per signal; nothing once the stretch is left
        signums = [signum for signum in chunk if signum in SIGNALS]
        if not signums or watch.settled or watch.left.wait(STUCK_S):
            continue
        if not _ending.acquire(blocking=False):  # the main thread is leaving the stretch just now
            continue
        if watch.left.is_set():
            _ending.release()
            continue
        if not _received:  # the main thread has not run its handler yet
            _received.append(signums[0])
        if watch.stop is not None:
            try:
                watch.stop()
            except Exception:  # noqa: S110  # what it could not kill, the guard does as this process ends
                pass
        try:
            os.write(2, f"pounder: error: interrupted by {cause()}\n".encode())
        except OSError:  # stderr is gone: the exit status still says it
            pass
        os._exit(exit_code())
