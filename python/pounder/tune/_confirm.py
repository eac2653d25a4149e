"""The confirmation run's checks: the recommended configuration, started and warmed, held at the
target load for one point, must meet each limit (pure, no I/O).

* failures: at most 1 % of the requests attempted (:func:`pounder.compare.clean_trial`);
* throughput: not below every counted trial of the best pool measured at the same offered load
  (:func:`pounder.tune._points.trial_values`: not a failed trial, nor one measured again because a
  neighbour was busy) by more than the tolerance or 10 % (:func:`throughput_check`);
* the rate (open loop, a ``--peak-rate`` or the access log's peak): at least 97 % of the requests
  the schedule sent in the load's duration answered;
* p99 (when ``--p99`` is given): at or below it (the corrected p99: from when each request was
  meant to go);
* memory: the pool's footprint (sum of PSS over the server's processes) within the RAM budget.

A pool over the budget is lowered by the measured footprint (children x budget / footprint,
rounded down: :func:`lowered_pool`) and confirmed again: the measurement beats the prediction of
the sizes step, whose children were fewer and had served fewer requests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pounder._figures import WIDE
from pounder._tune_point import TunePoint
from pounder._tune_run import Target
from pounder._units import children_text, mib, mib_unit
from pounder.compare import MAX_FAILED, clean_trial
from pounder.tune._analysis import ChildrenChoice
from pounder.tune._memory import MemoryBound
from pounder.tune._points import trial_values

RATE_MET = 0.97


def _check(name: str, ok: bool, measured: float | None, limit: float | None, text: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "measured": measured, "limit": limit, "text": text}


def throughput_check(summary: Mapping[str, Any], best: TunePoint, tolerance: float) -> dict[str, Any]:
    """The confirmation's requests/s against the best pool measured at the same offered load: not
    met when it is below every counted trial of the best by more than ``tolerance`` or ``WIDE``,
    whichever is larger (one run against a point's spread, not against the median's narrower
    interval: a single run scatters as far as a trial may before its point is called wide)."""
    rates = trial_values(best, "rps") or [best.rps]
    floor = (1 - max(tolerance, WIDE)) * min(rates)
    rps = float(summary["rps"])
    best_text = f"{children_text(best.children)}'s {best.rps:,.0f} req/s"
    return _check("throughput", rps >= floor, rps, floor,
                  f"{rps:,.0f} req/s against the best measured at this load, {best_text} (its slowest trial "
                  f"{min(rates):,.0f}; at least {floor:,.0f} needed)")


def confirmation_checks(summary: Mapping[str, Any], memory: MemoryBound, target: Target,
                        p99_s: float | None, *, best: TunePoint | None = None,
                        tolerance: float = 0.05) -> list[dict[str, Any]]:
    """Every check of the confirmation run, each with its figures and one sentence; ``best``: the
    best pool measured at the confirmation's load (its throughput is checked against it)."""
    complete, failed = int(summary["complete"]), int(summary["failed"])
    attempted = complete + failed
    checks = [_check("failures", clean_trial(complete, failed), float(failed), MAX_FAILED * attempted,
                     f"{failed:,} of {attempted:,} requests failed (at most {MAX_FAILED:.0%} allowed)")]
    if best is not None:
        checks.append(throughput_check(summary, best, tolerance))
    rate = summary.get("rate")
    if rate and summary.get("scheduled"):
        # every request the schedule sent in the load's duration answered: not answered req/s over
        # the elapsed time, which also counts the last answers' latency after the schedule ended
        scheduled = int(summary["scheduled"])
        checks.append(_check("rate", complete >= RATE_MET * scheduled, float(complete), float(scheduled),
                             f"{complete:,} of the {scheduled:,} requests scheduled at {float(rate):,.6g} req/s "
                             f"answered (at least {RATE_MET:.0%} needed)"))
    if p99_s is not None:
        p99 = float(summary["p99_ms"])
        checks.append(_check("p99", p99 <= p99_s * 1000, p99, p99_s * 1000,
                             f"p99 {p99:,.1f} ms against the target of {p99_s * 1000:,.1f} ms"))
    footprint = int(summary["footprint"])
    checks.append(_check("memory", footprint <= memory.ram, float(footprint), float(memory.ram),
                         f"the pool's footprint (sum of PSS, {children_text(int(summary['pool_children']))}) "
                         f"{mib_unit(footprint)} against the RAM budget of {mib_unit(memory.ram)}"))
    if summary.get("oom_kills") is not None:  # --cpus with --ram: the pod's memory limit enforced
        kills = int(summary["oom_kills"])
        checks.append(_check("oom", kills == 0, float(kills), 0.0, str(summary.get("oom_note")) if kills else
                             "no process killed by the OOM killer at the pod's memory limit"))
    return checks


def lowered_pool(confirmation: Mapping[str, Any] | None, memory: MemoryBound) -> int | None:
    """The pool the confirmation's measured footprint allows when its memory check failed:
    children x RAM budget / footprint, rounded down, at least 1 and fewer than confirmed. None when
    the memory check passed, was not run, or one child was confirmed."""
    if confirmation is None:
        return None
    check = next((c for c in confirmation["checks"] if c["name"] == "memory"), None)
    children = int(confirmation["children"])
    if check is None or check["ok"] or children <= 1:
        return None
    return max(1, min(children - 1, math.floor(children * memory.ram / float(confirmation["footprint"]))))


def lower_pool(choice: ChildrenChoice, fewer: int, confirmation: Mapping[str, Any],
               memory: MemoryBound) -> ChildrenChoice:
    """``choice`` lowered to ``fewer`` children (:func:`lowered_pool`), with the reason."""
    children, footprint = int(confirmation["children"]), int(confirmation["footprint"])
    reason = (f"the confirmation of {children_text(children)} measured a footprint (sum of PSS) of "
              f"{mib_unit(footprint)}, over the RAM budget of {mib_unit(memory.ram)}: the measurement beats the "
              f"sizes' prediction, so the pool is lowered to {fewer} ({children} x {mib(memory.ram)} / "
              f"{mib(footprint)} MiB, rounded down) and confirmed again")
    return replace(choice, chosen=fewer, decided_by="confirmation", reasons=[*choice.reasons, reason])
