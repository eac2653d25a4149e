"""How often a connection waited for a free child during a load: the server's accept queue,
sampled every few milliseconds. A connection waits there only while no child is free to accept it,
so the share of samples with one waiting is the share of the time every child was busy.

The server's own view of the same load (php-fpm's status page, uWSGI's stats server, Puma's
``/stats``: :meth:`ManagedServer.status_counters`) is read right before and right after it, and
what it says of the load is its status reader's (:class:`~pounder.servers.StatusReader`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from pounder._errors import public
from pounder.servers import NO_STATUS, AcceptQueue, StatusReader

QUEUE_INTERVAL_S = 0.005
"""How often the accept queue is read (one netlink request, about 50 us)."""


@public
class QueueWatch:
    """Samples the accept queue of TCP ``port`` on ``host`` in a thread between ``with`` and its
    end (start it on the load generator's CPUs: the thread inherits the starting thread's
    affinity). :meth:`window` keeps the samples of the measured phase only (not the engine's
    start, nor the queue draining after the load). ``samples``: how many reads answered in the
    window; ``waiting``: in how many a connection waited; :attr:`share` = waiting / samples, None
    when nothing could be read (no netlink, no listener). ``status``: reads the server's own
    counters (its ``status_counters``), called on entry and at a clean end, ``reader`` what they
    say of the load (its :class:`~pounder.servers.StatusReader`): :attr:`server_status`."""

    def __init__(self, port: int, host: str | None = None, interval_s: float = QUEUE_INTERVAL_S,
                 status: Callable[[], Mapping[str, int] | None] | None = None,
                 reader: StatusReader = NO_STATUS) -> None:
        self.port, self.host, self.interval_s = port, host, interval_s
        self._status, self._reader = status, reader
        self._counters: list[Mapping[str, int] | None] = []
        self._times: list[float] = []
        self._waits: list[bool] = []
        self._window: tuple[float, float] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def window(self, start: float, end: float) -> None:
        """Count only the samples taken from ``start`` to ``end`` (``time.monotonic()`` seconds)."""
        self._window = (start, end)

    def _kept(self) -> list[bool]:
        if self._window is None:
            return self._waits
        start, end = self._window
        return [wait for t, wait in zip(self._times, self._waits, strict=True) if start <= t <= end]

    @property
    def samples(self) -> int:
        return len(self._kept())

    @property
    def waiting(self) -> int:
        return sum(self._kept())

    @property
    def share(self) -> float | None:
        kept = self._kept()
        return sum(kept) / len(kept) if kept else None

    @property
    def server_status(self) -> dict[str, int | None] | None:
        """The server's counters' change over the load (its reader's :meth:`~pounder.servers.StatusReader.change`);
        None without a status page, or when a read failed."""
        return self._reader.change(*self._counters) if len(self._counters) == 2 else None

    def _run(self) -> None:
        with AcceptQueue(self.port, self.host) as queue:
            while not self._stop.wait(self.interval_s):
                waiting = queue.waiting()
                if waiting is not None:
                    self._times.append(time.monotonic())
                    self._waits.append(waiting > 0)

    def __enter__(self) -> QueueWatch:
        self._counters = [] if self._status is None else [self._status()]
        self._thread = threading.Thread(target=self._run, name="pounder-accept-queue", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._status is not None and exc[0] is None:
            self._counters.append(self._status())
