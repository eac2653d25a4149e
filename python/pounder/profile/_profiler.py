"""The one interface every profiler of a server's pool implements (py-spy for Python, Devel::NYTProf
for Perl, perf for anything else), and what a profiling window collects.

A profile covers exactly the measured windows: :func:`pounder.profile.profile` opens the window
(:meth:`Profiler.resume`) right before a profiled trial's load and closes it (:meth:`Profiler.pause`)
right after, several times, interleaved with unprofiled trials that measure the profiler's cost;
:meth:`Profiler.finish` then collects everything (a Perl child's profile is written when it exits).
:meth:`Profiler.close` runs in every case, also after Ctrl-C: nothing the profiler started is
left running.
"""

from __future__ import annotations

import abc
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pounder.servers import interrupt_then_kill

STOP_TIMEOUT_S = 30.0
"""How long a sampler has to write what it sampled and exit after SIGINT before it is killed."""
UNITS = ("samples", "ns")
"""A stack's weight: the samples that saw it (py-spy, perf), or the nanoseconds spent in its leaf (NYTProf)."""


@dataclass(frozen=True)
class Sampled:
    """What a profiler collected over all its windows.

    ``stacks``: ``(pid, "outermost;...;leaf") -> weight``, one entry per distinct stack per process
    (frames are function names as the profiler names them, e.g. ``hot (app.py)``,
    ``main::hot``); ``calls``: function -> calls (NYTProf counts them; empty for samplers);
    ``unit``: one of :data:`UNITS`; ``pids``: every process profiled (children forked during a
    window included); ``notes``: what the user must know about it (one sentence each);
    ``files``: artefacts kept (e.g. the merged ``nytprof.out``), by name."""

    stacks: dict[tuple[int, str], int]
    unit: str
    pids: tuple[int, ...]
    calls: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)


class Profiler(abc.ABC):
    """One profiler attached to one server's pool (the parent ``pid`` and all its children, those
    forked during a window included)."""

    name: str
    """"py-spy", "nytprof" or "perf" (the ``--profiler`` choice)."""
    unit: str
    """One of :data:`UNITS`."""

    def version(self) -> str | None:
        """The profiler's version as it says it (``py-spy 0.4.3``), None when unknown."""
        return None

    @abc.abstractmethod
    def check(self) -> None:
        """Raise :class:`~pounder.UsageError` (one line, with what to do) when this profiler cannot
        run here: missing, not permitted, or the server not prepared for it. Before anything is sent."""

    @abc.abstractmethod
    def resume(self, workdir: Path) -> None:
        """Open a window: from now on the pool's processes are profiled. ``workdir`` is a private
        directory for this profiler's files (the same at every call)."""

    @abc.abstractmethod
    def pause(self) -> None:
        """Close the current window (what was collected is kept for :meth:`finish`)."""

    @abc.abstractmethod
    def finish(self) -> Sampled:
        """After the last :meth:`pause`: everything collected, read and merged."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop whatever this profiler still runs (idempotent; called in every case, Ctrl-C too)."""


class Sampler(Profiler):
    """A profiler that runs a sampling process of its own for each window (py-spy, perf)."""

    _proc: subprocess.Popen[bytes] | None = None

    def _stopped(self) -> subprocess.Popen[bytes] | None:
        """The window's sampling process, stopped (SIGINT: it writes what it sampled and exits;
        SIGKILL if it does not within :data:`STOP_TIMEOUT_S`); None when none runs."""
        proc = self._proc
        if proc is not None:
            interrupt_then_kill(proc, STOP_TIMEOUT_S)
            self._proc = None
        return proc


def read_log(path: Path) -> str:
    """A profiler's output or log file as text ("" when it is not there (yet))."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
