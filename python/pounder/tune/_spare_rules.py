"""Step 5: the spare-server burst and the settings the method calls for (pure, no I/O)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pounder._errors import public
from pounder._figures import BURST_FACTOR
from pounder._tune_run import Target
from pounder.tune._analysis import ChildrenChoice
from pounder.tune._text import (
    ms_text,
)

# ---------------------------------------------------------------------------------------------
# Step 5: spare servers


@public
def steady_p99_us(series: Sequence[Mapping[str, Any]]) -> float | None:
    """The median p99 of the second half of a run's seconds (None without a completed second)."""
    seconds = [s for s in series if int(s["complete"]) > 0]
    if not seconds:
        return None
    return float(statistics.median(int(s["p99_us"]) for s in seconds[len(seconds) // 2:]))


@public
def burst_seconds(series: Sequence[Mapping[str, Any]], reference_us: float) -> int:
    """Leading seconds of a step from idle to full load whose p99 stays above ``BURST_FACTOR``
    times ``reference_us`` (the steady p99 with every child ready)."""
    count = 0
    for sample in series:
        if int(sample["complete"]) == 0 or int(sample["p99_us"]) > BURST_FACTOR * reference_us:
            count += 1
        else:
            break
    return count


@public
def burst_clients(choice: ChildrenChoice, target: Target | None = None) -> int:
    """The concurrency the spare-server burst steps to from idle: the target's clients; for a rate
    target the children it needs; with no target the chosen pool. Never more than the pool
    (beyond it clients queue whatever the spare settings)."""
    target = target or Target()
    if target.clients is not None:
        wanted = target.clients
    elif target.peak_rate is not None and choice.needed is not None:
        wanted = choice.needed
    else:
        wanted = choice.chosen
    return max(1, min(wanted, choice.chosen))


def default_spares(children: int) -> tuple[int, int, int]:
    """Apache's prefork defaults (StartServers 5, MinSpareServers 5, MaxSpareServers 10), capped by
    the children allowed."""
    start = min(5, children)
    low = min(5, children)
    return start, low, max(low + 1, min(10, children))


SLOW_START = ("apache",)
"""Servers whose children are slow to start (mod_perl: compilation, preloading)."""


class SpareSettings(tuple[int, int, int]):
    """(StartServers, MinSpareServers, MaxSpareServers), a tuple as before, with ``reasons``: what
    :func:`spare_settings` returns (not built by callers, so not on the package's face)."""

    reasons: list[str]

    def __new__(cls, start_servers: int, min_spare: int, max_spare: int,
                reasons: list[str] | None = None) -> SpareSettings:
        settings = super().__new__(cls, (start_servers, min_spare, max_spare))
        settings.reasons = list(reasons or [])
        return settings

    @property
    def start_servers(self) -> int:
        return self[0]

    @property
    def min_spare(self) -> int:
        return self[1]

    @property
    def max_spare(self) -> int:
        return self[2]

    def to_dict(self) -> dict[str, Any]:
        return {"start_servers": self[0], "min_spare": self[1], "max_spare": self[2], "reasons": list(self.reasons)}


@public
def spare_settings(children: int, burst: int, kind: str = "command",
                   child_start_s: float | None = None, threads: int = 1) -> SpareSettings:
    """The spare-server settings for a burst of ``burst`` clients from idle: start as many children
    as it needs (StartServers = the burst over each child's ``threads``, capped by ``children``),
    keep them when the load drops (MaxSpare the same). MinSpare: for servers whose children are
    slow to start (``SLOW_START``, mod_perl), close to MaxSpare (three quarters of it), so a burst
    finds children ready; otherwise a quarter. MaxSpare is always above MinSpare."""
    ready = max(1, min(math.ceil(burst / max(1, threads)), children))
    served = "" if threads <= 1 else f" served by {ready} children of {threads} threads"
    slow = kind in SLOW_START
    share = 0.75 if slow else 0.25
    low = max(1, min(ready - 1, math.ceil(ready * share))) if ready > 1 else 1
    high = max(ready, low + 1)
    reasons = [f"StartServers {ready} and MaxSpareServers {high}: the burst steps from idle to "
               f"{min(burst, ready * max(1, threads))} clients{served}, "
               "and all of them are started at once and kept when the load drops"]
    started = ("" if child_start_s is None
               else f" (a child took {ms_text(child_start_s * 1000)} ms to start here)")
    if slow:
        reasons.append(f"MinSpareServers {low}, close to MaxSpareServers: mod_perl children are slow to start"
                       f"{started}, so the parent keeps them ready instead of spawning them during a burst")
    else:
        reasons.append(f"MinSpareServers {low}: a quarter of them kept spare{started}")
    return SpareSettings(start_servers=ready, min_spare=low, max_spare=high, reasons=reasons)


