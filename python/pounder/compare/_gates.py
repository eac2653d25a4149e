"""Gates on a comparison (``pounder compare --fail-if``, ``pounder run``).

* ``slower>N%`` (or ``>=``): a ratio gate on each variant against the baseline, on the figure the
  comparison's verdict is about (:attr:`Comparison.by`: requests/s in closed loop, p99 latency in
  open loop). It fails only when the WHOLE 95 % bootstrap interval of the ratio variant/baseline
  says the variant is more than N % slower (requests/s lower by more than N %, or p99 higher by
  more than N %), so noise does not fail a build. It needs at least :data:`SLOWER_MIN_TRIALS` (5)
  trials per variant: with 2 or 3 the percentile-bootstrap "95 % interval" is about the range of
  the ratios, and three unlucky trials would fail a build. Fewer planned is refused before anything
  is sent (:func:`check_slower_trials`); fewer counted (trials left out for their failures, or an
  interrupted run) is ``unmeasurable``, which fails. N's range follows from what is measured: in closed
  loop requests/s can be at most 100 % lower (none at all, which a counted trial never is), so N is
  below 100 (:func:`pounder.results.check_gates` refuses ``slower>100%`` there: it could never fail);
  in open loop the p99 may be any multiple of the baseline's, so N may exceed 100.
* ``p50``, ``p99``, ``rps``: each variant's median over its counted trials (the figures the
  comparison reports); ``errors`` and ``non2xx``: each variant's requests over every measured
  trial (counted or not: a trial left out for its failures still failed them); with no response
  (``non2xx``) or no request sent (``errors``) they are ``unmeasurable``. Compare keeps no other
  figure of its trials, so the other metrics of a bench are refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pounder._errors import UsageError, check_instance, public
from pounder.compare._report import format_rate, format_ratio
from pounder.compare._result import CompareResult, Comparison
from pounder.results import BENCH_METRICS, Gate, GateReport, GateResult, parse_gate, slowdown_verdict, verdict_of

COMPARE_METRICS: Mapping[str, str] = {
    "slower": "slowdown", "p50": "latency", "p99": "latency", "rps": "rate", "errors": "share", "non2xx": "share",
}  # fmt: skip
"""The metrics a comparison can be gated on."""
ACCEPTED = ("slower>N% (the whole 95 % interval of variant/baseline beyond N %), and each URL's p50, p99, rps "
            "(medians over its trials), errors, non2xx")  # fmt: skip
SLOWER_MIN_TRIALS = 5
"""The fewest trials per variant (counted) that ``slower`` is evaluated on."""


@public
def parse_compare_gates(exprs: Iterable[str] | str | None, what: str = "--fail-if") -> tuple[Gate, ...]:
    """The gates of a comparison (:data:`COMPARE_METRICS`); a metric of a bench that compare does
    not keep is refused with one line naming what it accepts."""
    if exprs is None:
        return ()
    items = (exprs,) if isinstance(exprs, str) else tuple(exprs)
    gates = []
    for item in items:
        try:
            gates.append(parse_gate(item, what, COMPARE_METRICS))  # type: ignore[arg-type]
            continue
        except UsageError as error:
            first = error
        try:
            other = parse_gate(item, what, BENCH_METRICS)
        except UsageError:
            raise first from None
        raise UsageError(
            f"invalid {what} {item!r}: a comparison keeps no {other.metric} of its trials; it takes {ACCEPTED}"
        )
    return tuple(gates)


@public
def check_slower_trials(gates: Iterable[Gate], trials: int, what: str = "--fail-if",
                        fix: str = "give --trials 5 or more") -> None:  # fmt: skip
    """Refuse, before anything is sent, a ``slower`` gate with fewer than :data:`SLOWER_MIN_TRIALS`
    ``trials`` per variant; ``fix`` says what to do."""
    for gate in gates:
        if gate.metric == "slower" and trials < SLOWER_MIN_TRIALS:
            raise UsageError(
                f"invalid {what} {gate.text!r}: slower needs at least {SLOWER_MIN_TRIALS} trials per variant, "
                f"this run has {trials} (with fewer the 95 % interval is about the range of the ratios, so noise "
                f"could fail the build); {fix}"
            )


def _slower(gate: Gate, comparison: Comparison, result: CompareResult) -> GateResult:
    """``slower>N%`` on one variant against the baseline: the smallest slowdown the interval allows
    (:func:`pounder.results.slowdown_verdict`, the rule a saved baseline's gates share)."""
    by_latency = comparison.by == "p99_us"
    estimate = comparison.p99_us if by_latency else comparison.requests_per_s
    figure = "p99" if by_latency else "requests/s"
    subject = f"{comparison.label} vs {comparison.baseline}"
    counted = (len(result.counted(comparison.label)), len(result.counted(comparison.baseline)))
    if min(counted) < SLOWER_MIN_TRIALS:
        shown = f"{figure} ratio unknown" if estimate.ratio is None else f"{figure} {format_ratio(estimate.ratio)}"
        why = f"{counted[0]} and {counted[1]} counted trials: slower needs {SLOWER_MIN_TRIALS} on each side"
        return verdict_of(gate, None, why, subject, shown)
    return slowdown_verdict(gate, estimate.ratio, estimate.low, estimate.high, latency=by_latency, figure=figure,
                            subject=subject, shown_ratio=format_ratio,
                            why_none="no interval: fewer than 2 counted trials on a side")


def _absolute(gate: Gate, result: CompareResult, label: str) -> GateResult:
    """An absolute gate on one variant: its medians, or its requests over every measured trial."""
    if gate.metric in ("errors", "non2xx"):
        measured = [trial for trial in result.trials if trial.label == label and trial.measured]
        complete = sum(trial.complete for trial in measured)
        failed = sum(trial.failed for trial in measured)
        count, total = (failed, complete + failed) if gate.metric == "errors" else \
            (sum(trial.non_2xx for trial in measured), complete)  # fmt: skip
        if total == 0:  # nothing measured: unmeasurable, for a count too (errors>0 must not pass)
            none = "no response" if complete + failed else "no request was sent"
            return verdict_of(gate, None, "no measured trial" if not measured else none, label)
        return verdict_of(gate, float(count) if gate.unit == "count" else count * 100 / total, "", label)
    summary = result.summary(label)
    estimate = {"p50": summary.p50_us, "p99": summary.p99_us, "rps": summary.requests_per_s}[gate.metric]
    if estimate is None:
        return verdict_of(gate, None, "no counted trial", label)
    value = f"{format_rate(estimate.median)} req/s" if gate.unit == "req/s" else gate.shown(estimate.median)
    shown = f"{value} (median of {estimate.samples})"
    return verdict_of(gate, estimate.median, "", label, shown)


@public
def evaluate_compare_gates(gates: Iterable[Gate], result: CompareResult) -> GateReport:
    """Each gate on ``result``, in order: ``slower`` on each variant against the baseline, the
    others on each variant (:data:`COMPARE_METRICS`)."""
    check_instance(result, CompareResult, "evaluate_compare_gates: result")
    evaluated: list[GateResult] = []
    for gate in gates:
        if not isinstance(gate, Gate) or gate.metric not in COMPARE_METRICS:
            raise UsageError(
                f"evaluate_compare_gates: {gate!r} is not a gate of a comparison (see parse_compare_gates)"
            )
        if gate.metric == "slower":
            evaluated += [_slower(gate, comparison, result) for comparison in result.comparisons]
        else:
            evaluated += [_absolute(gate, result, variant.label) for variant in result.variants]
    return GateReport(tuple(evaluated))
