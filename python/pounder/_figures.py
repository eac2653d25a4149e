"""How a tuning run's stored figures read in the text ``pounder tune`` prints and on the page
``pounder report`` draws alike: the thresholds both quote, a point's accept-queue share, the
concurrency the children sweep ran at. The tables of the steps are :mod:`pounder._tune_tables`."""

from __future__ import annotations

from collections.abc import Sequence

from pounder._table import share
from pounder._tune_point import TunePoint

WIDE = 0.10
"""An interval reaching further than this fraction of the median on either side is "wide" (a
point is measured once more; still wide, it is flagged)."""
BURST_FACTOR = 1.5
"""A second of a step from idle to full load is slow while its p99 exceeds the steady p99 by this
factor."""


def queued_text(point: TunePoint) -> str:
    """The point's accept-queue share as the tables print it ("97%"), "-" when not sampled."""
    return share(point.queued)

def sweep_load_text(sweep: Sequence[TunePoint]) -> tuple[str, str]:
    """``(label, words)`` for the concurrency the children sweep ran at, as the pools tables name
    its columns: ``2xMC`` (twice as many clients as children), ``1xMC`` (as many: kept-alive
    connections) or ``NC=32`` (the clients given, at every count)."""
    pairs = {(p.children, p.connections) for p in sweep}
    if pairs and all(c == max(2, 2 * n) for n, c in pairs):
        return "2xMC", "twice as many clients as children"
    if pairs and all(c == max(1, n) for n, c in pairs):
        return "1xMC", "as many clients as children"
    clients = {c for _, c in pairs}
    if len(clients) == 1:
        only = clients.pop()
        return f"NC={only}", f"{only} client{'s' * (only != 1)} at every count"
    return "sweep", "its own clients at each count"
