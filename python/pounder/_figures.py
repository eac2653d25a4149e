"""How a tuning run's stored figures read: the tables ``pounder tune`` prints and the page
``pounder report`` draws write a point (its trials, the interval of its median, its flags, a ratio
to unlimited or to the best) the same way, and quote the same thresholds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder._table import ratio

WIDE = 0.10
"""An interval reaching further than this fraction of the median on either side is "wide" (a
point is measured once more; still wide, it is flagged)."""
BURST_FACTOR = 1.5
"""A second of a step from idle to full load is slow while its p99 exceeds the steady p99 by this
factor."""


def queued_text(point: Mapping[str, Any]) -> str:
    """The point's accept-queue share as the tables print it ("97%"), "-" when not sampled."""
    queued = point.get("queued")
    return "-" if queued is None else f"{float(queued) * 100:.0f}%"

def vs_unlimited_text(point: Mapping[str, Any]) -> str:
    """The point's requests/s against unlimited, with its interval: "-4.5% (-7.0..-2.1)"."""
    return versus_text(point.get("vs_unlimited"))

def versus_text(vs: Mapping[str, Any] | None) -> str:
    """"-4.5% (-7.0..-2.1)", a ratio (to the best, to unlimited) with its interval."""
    vs = vs or {}
    return ratio(vs.get("ratio"), vs.get("low"), vs.get("high"))

def sweep_load_text(sweep: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """``(label, words)`` for the concurrency the children sweep ran at, as the pools tables name
    its columns: ``2xMC`` (twice as many clients as children), ``1xMC`` (as many: kept-alive
    connections) or ``NC=32`` (the clients given, at every count)."""
    pairs = {(int(p["children"]), int(p["connections"])) for p in sweep}
    if pairs and all(c == max(2, 2 * n) for n, c in pairs):
        return "2xMC", "twice as many clients as children"
    if pairs and all(c == max(1, n) for n, c in pairs):
        return "1xMC", "as many clients as children"
    clients = {c for _, c in pairs}
    if len(clients) == 1:
        only = clients.pop()
        return f"NC={only}", f"{only} client{'s' * (only != 1)} at every count"
    return "sweep", "its own clients at each count"
