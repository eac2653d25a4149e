"""How often a connection waited for a free child during a load: the server's accept queue,
sampled every few milliseconds. A connection waits there only while no child is free to accept it,
so the share of samples with one waiting is the share of the time every child was busy.

The server's own view of the same load (php-fpm's status page, uWSGI's stats server:
:meth:`ManagedServer.status_counters`) is read right before and right after it: :func:`status_change`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from pounder._errors import public
from pounder.servers import AcceptQueue

QUEUE_INTERVAL_S = 0.005
"""How often the accept queue is read (one netlink request, about 50 us)."""


Counters = Mapping[str, int]


@public
def status_change(before: Counters | None, after: Counters | None) -> dict[str, int | None] | None:
    """What a server's own counters (:meth:`~pounder.servers.ManagedServer.status_counters`, read
    right ``before`` and right ``after`` a load; php-fpm's names) say of the load (a pure function;
    None when either read failed):

    * ``accepted``: connections accepted meanwhile ("accepted conn"; the read after, which counts
      itself, left out: the load's requests and those it left queued);
    * ``slow_requests``: requests over ``request_slowlog_timeout`` ("slow requests");
    * ``max_children_reached``: how often it rose; None when it did not rise and had been counted
      before (php-fpm counts it once until it next starts a child: a pool kept full, as pounder
      measures it, counts it at most once, mostly while warming, and then cannot show the load's);
    * ``max_listen_queue``: the largest listen queue seen at its once-a-second checks during the
      load (it is the largest since its start: None when the load's did not exceed the one before,
      0 when none was ever seen).

    uWSGI's (its stats server): ``requests`` its workers served meanwhile (the load's: reading the
    stats is no request); ``listen_queue_errors``: its once-a-second checks that found its listen
    queue full meanwhile; ``workers`` running and ``busy_workers`` serving a request right after
    the load."""
    if before is None or after is None:
        return None

    def both(name: str) -> tuple[int, int] | None:
        return (int(before[name]), int(after[name])) if name in before and name in after else None

    out: dict[str, int | None] = {}
    if (accepted := both("accepted conn")) is not None:
        out["accepted"] = max(0, accepted[1] - accepted[0] - 1)
    if (slow := both("slow requests")) is not None:
        out["slow_requests"] = slow[1] - slow[0]
    if (reached := both("max children reached")) is not None:
        rose = reached[1] - reached[0]
        out["max_children_reached"] = rose if rose > 0 or reached[0] == 0 else None
    if (queued := both("max listen queue")) is not None:
        out["max_listen_queue"] = queued[1] if queued[1] > queued[0] else 0 if queued[1] == 0 else None
    # uWSGI's stats server (UwsgiServer.status_counters)
    if (requests := both("requests")) is not None:
        out["requests"] = requests[1] - requests[0]
    if (full := both("listen queue errors")) is not None:
        out["listen_queue_errors"] = full[1] - full[0]
    out.update({key: int(after[name]) for name, key in (("workers", "workers"), ("busy workers", "busy_workers"))
                if name in after})
    out.update(_puma_change(before, after))
    return out


def _puma_change(before: Counters, after: Counters) -> dict[str, int | None]:
    """Puma's (its control app's ``/stats``, :meth:`~pounder.servers.PumaServer.status_counters`):
    ``booted_workers`` right after the load (the master's count); ``threads``: its workers' threads;
    ``busy_threads`` and ``backlog``: summed as the workers reported them at their last check-in
    before the read after the load, when every worker checked in after the read before it (its
    ``checkin:PID`` later than before, or a worker started meanwhile: a check-in during the load,
    once a second), else None. Its ``requests_count`` is not a figure of the load: a worker's
    count is as of its check-in, and the warm-up's last requests may come after the one before."""
    if "pool_capacity" not in before or "pool_capacity" not in after:
        return {}
    checkins = [key for key in after if key.startswith("checkin:")]
    fresh = bool(checkins) and all(int(after[key]) > int(before.get(key, 0)) for key in checkins)
    threads = int(after["max_threads"])
    return {"booted_workers": int(after["booted_workers"]), "threads": threads,
            "busy_threads": max(0, threads - int(after["pool_capacity"])) if fresh else None,
            "backlog": int(after["backlog"]) if fresh else None}


@public
class QueueWatch:
    """Samples the accept queue of TCP ``port`` on ``host`` in a thread between ``with`` and its
    end (start it on the load generator's CPUs: the thread inherits the starting thread's
    affinity). :meth:`window` keeps the samples of the measured phase only (not the engine's
    start, nor the queue draining after the load). ``samples``: how many reads answered in the
    window; ``waiting``: in how many a connection waited; :attr:`share` = waiting / samples, None
    when nothing could be read (no netlink, no listener). ``status``: reads the server's own
    counters (its ``status_counters``), called on entry and at a clean end: :attr:`server_status`."""

    def __init__(self, port: int, host: str | None = None, interval_s: float = QUEUE_INTERVAL_S,
                 status: Callable[[], Counters | None] | None = None) -> None:
        self.port, self.host, self.interval_s = port, host, interval_s
        self._status = status
        self._counters: list[Counters | None] = []
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
        """The server's counters' change over the load (:func:`status_change`); None without a
        status page, or when a read failed."""
        return status_change(*self._counters) if len(self._counters) == 2 else None

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
