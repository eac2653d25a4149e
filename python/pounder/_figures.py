"""How a tuning run's stored figures read: the tables ``pounder tune`` prints and the page
``pounder report`` draws write a point (its trials, the interval of its median, its flags, a ratio
to unlimited or to the best) the same way, and quote the same thresholds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

WIDE = 0.10
"""An interval reaching further than this fraction of the median on either side is "wide" (a
point is measured once more; still wide, it is flagged)."""
BURST_FACTOR = 1.5
"""A second of a step from idle to full load is slow while its p99 exceeds the steady p99 by this
factor."""


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def queued_text(point: Mapping[str, Any]) -> str:
    """The point's accept-queue share as the tables print it ("97%"), "-" when not sampled."""
    queued = point.get("queued")
    return "-" if queued is None else f"{float(queued) * 100:.0f}%"

def interval_text(point: Mapping[str, Any]) -> str:
    """The 95 % interval of the median requests/s, "-" without one (fewer than 2 counted trials)."""
    low, high = point.get("rps_low"), point.get("rps_high")
    return "-" if low is None or high is None else f"{float(low):,.0f}-{float(high):,.0f}"

def flag_text(point: Mapping[str, Any]) -> str:
    if point.get("wide"):
        return "wide" + (" (re-measured)" if point.get("remeasured") else "")
    return "re-measured" if point.get("remeasured") else ""

def trials_text(point: Mapping[str, Any]) -> str:
    return f"{point.get('counted', 0)}/{len(point.get('trials') or [])}"

def vs_unlimited_text(point: Mapping[str, Any]) -> str:
    """The point's requests/s against unlimited, with its interval: "-4.5% (-7.0..-2.1)"."""
    loss = point.get("vs_unlimited") or {}
    ratio, low, high = loss.get("ratio"), loss.get("low"), loss.get("high")
    if ratio is None:
        return "-"
    if low is None or high is None:
        return _pct(float(ratio) - 1)
    return f"{_pct(float(ratio) - 1)} ({(float(low) - 1) * 100:+.1f}..{(float(high) - 1) * 100:+.1f})"

def p99_interval_text(point: Mapping[str, Any]) -> str:
    """The 95 % interval of the median p99 (ms), "-" without one."""
    low, high = point.get("p99_low"), point.get("p99_high")
    return "-" if low is None or high is None else f"{float(low):,.1f}-{float(high):,.1f}"

def versus_text(vs: Mapping[str, Any] | None) -> str:
    """"-4.5% (-7.0..-2.1)", a ratio to the best with its interval."""
    if not vs or vs.get("ratio") is None:
        return "-"
    return vs_unlimited_text({"vs_unlimited": vs})

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
