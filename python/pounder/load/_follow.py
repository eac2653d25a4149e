"""A run in flight followed to its end: its progress, as :class:`Progress`, to the caller's
callback about every :data:`POLL_INTERVAL_S`, its finished seconds and requests in flight told to
whoever listens (:mod:`pounder._live`, ``--metrics-out``), Ctrl-C turned into a cancel and a drain
followed closely, and any other exception into a cancel."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pounder import _live
from pounder._errors import public
from pounder._records import decode_json
from pounder.results import LoadModel

if TYPE_CHECKING:
    from pounder._engine import ProgressInfo, Run

POLL_INTERVAL_S = 0.25
DRAIN_POLL_S = 0.05
CANCEL_WAIT_S = 5.0


@public
@dataclass(frozen=True)
class Progress:
    """A snapshot of a running bench, given to the ``on_progress`` callback about every 0.25 s.

    ``phase`` is "waiting" (for a start time), "warmup", "measure", "drain" or "done";
    ``elapsed_s`` is the time since the measured phase began (0 during warm-up); ``complete`` and
    ``failed`` count measured requests only; ``rate`` the completions in the last full second; ``planned_s`` and
    ``planned_requests`` what the run is set to measure (``None`` when not bounded by it); ``in_flight`` the
    requests sent (or connecting) and not yet answered, failed or aborted, now.
    """

    phase: str
    elapsed_s: float
    complete: int
    failed: int
    rate: float
    planned_s: float | None
    planned_requests: int | None
    interrupted: bool
    in_flight: int


ProgressCallback = Callable[[Progress], None]


def _snapshot(info: ProgressInfo, load: LoadModel, interrupted: bool) -> Progress:
    return Progress(
        phase=info["phase"],
        elapsed_s=info["elapsed_s"],
        complete=info["complete"],
        failed=info["failed"],
        rate=info["rate"],
        planned_s=load.duration_s,
        planned_requests=load.requests,
        interrupted=interrupted,
        in_flight=info["in_flight"],
    )


class Told:
    """The finished seconds of a run told to whoever listens (:mod:`pounder._live`), as they come."""

    def __init__(self, run: Run, target: str) -> None:
        self._run, self._target = run, target
        self._start_unix: float | None = None
        self._told = 0

    def poll(self, info: ProgressInfo) -> None:
        if self._start_unix is None:
            if info["phase"] not in ("measure", "drain", "done"):
                return
            self._start_unix = time.time() - info["elapsed_s"]
        entries = [decode_json(entry) for entry in self._run.seconds(self._told)]
        self._told += len(entries)
        _live.tell_seconds(self._target, self._start_unix, entries)
        if info["phase"] == "measure":
            _live.tell_in_flight(self._target, time.time(), info["in_flight"])


def _poll(run: Run, load: LoadModel, on_progress: ProgressCallback | None, interrupted: bool,
          told: Told | None) -> None:  # fmt: skip
    interval = DRAIN_POLL_S if interrupted else POLL_INTERVAL_S  # a drain lasts 0.2 s: follow it closely
    while True:
        done = run.wait(interval)
        if on_progress is not None or told is not None:
            info = run.progress()
            if told is not None:
                told.poll(info)
            if on_progress is not None:
                on_progress(_snapshot(info, load, interrupted))
        if done:
            return


def follow(run: Run, load: LoadModel, on_progress: ProgressCallback | None, told: Told | None = None) -> bool:
    """Wait for the run to finish; returns True when it was interrupted by Ctrl-C."""
    try:
        _poll(run, load, on_progress, interrupted=False, told=told)
        return False
    except KeyboardInterrupt:
        run.cancel()
        _poll(run, load, on_progress, interrupted=True, told=told)
        return True
    except BaseException:  # the progress callback stopped the run (e.g. memory ran low)
        run.cancel()
        run.wait(CANCEL_WAIT_S)
        raise
