"""What a load tells while it runs, to whoever listens (``--metrics-out``, :mod:`pounder.metrics`):
each finished second of a load's series as the engine hands it over (its failures by category
among its figures), the requests in flight as the run is polled, and each sample the server sampler
takes of the children. Here, at the top level, so
that the engine's runner (:mod:`pounder.load`) and the sampler (:mod:`pounder.procs`) tell it
without knowing who listens, and whoever runs loads (bench, compare, run, tune) needs no change.

A listener only takes note (it queues, it never blocks and never sends); one that raises is
no longer told: the measurement goes on in every case.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ChildrenSample:
    """One sample of a server's children: when (Unix time, s), how many, the sum of their USS and
    PSS (bytes), the CPU they used per second since the previous sample (None at the first)."""

    at_unix: float
    children: int
    uss_bytes: int
    pss_bytes: int
    cpu_cores: float | None


class Listener(Protocol):
    """Who is told (:func:`listening`)."""

    def seconds(self, target: str, start_unix: float, entries: Sequence[Mapping[str, Any]]) -> None:
        """Finished seconds of the load on ``target`` (its first URL) whose measured phase began at
        ``start_unix``: entries of the result's ``series`` (``second`` counts from 0)."""

    def children(self, sample: ChildrenSample) -> None:
        """A sample of the sampled server's children."""

    def in_flight(self, target: str, at_unix: float, requests: int) -> None:
        """During the measured phase of the load on ``target``, at ``at_unix``: ``requests`` sent
        (or connecting) and not yet answered, failed or aborted."""


_LOCK = threading.Lock()
_LISTENERS: list[Listener] = []


@contextmanager
def listening(listener: Listener) -> Iterator[Listener]:
    """``listener`` is told of every load and server sample in this process until the block ends."""
    with _LOCK:
        _LISTENERS.append(listener)
    try:
        yield listener
    finally:
        with _LOCK:
            if listener in _LISTENERS:
                _LISTENERS.remove(listener)


def anyone() -> bool:
    """Whether someone listens (the engine's seconds are read only then)."""
    return bool(_LISTENERS)


def _tell(call: str, *args: Any) -> None:
    with _LOCK:
        listeners = list(_LISTENERS)
    for listener in listeners:
        try:
            getattr(listener, call)(*args)
        except Exception:  # a listener never stops the measurement: it is no longer told
            with _LOCK:
                if listener in _LISTENERS:
                    _LISTENERS.remove(listener)


def tell_seconds(target: str, start_unix: float, entries: Sequence[Mapping[str, Any]]) -> None:
    if entries:
        _tell("seconds", target, start_unix, entries)


def tell_children(sample: ChildrenSample) -> None:
    _tell("children", sample)


def tell_in_flight(target: str, at_unix: float, requests: int) -> None:
    _tell("in_flight", target, at_unix, requests)
