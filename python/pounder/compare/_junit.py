"""A comparison as JUnit XML (``pounder compare --junit FILE``, :mod:`pounder._junit`): the run's
case (an error when it was interrupted or a URL was left with fewer than 2 counted trials: the
lines compare exits 130 or 1 with), a case per gate and variant (``p99>300ms for B``, ``slower>5%
for B vs A``), and each variant's medians and each ratio with its interval as properties;
:meth:`CompareResult.to_junit`, and its cases and properties among a run's
(:meth:`CompareResult.junit_cases`, :meth:`CompareResult.junit_properties`)."""

from __future__ import annotations

from pounder._junit import RUN_CASE, Case, Suite, figure, interrupted_text, run_case
from pounder._stats import Estimate, RatioEstimate
from pounder.compare._report import failure_message
from pounder.compare._result import CompareResult
from pounder.results import describe_load


def _estimate(name: str, estimate: Estimate | None, scale: float = 1.0) -> list[tuple[str, str]]:
    if estimate is None:
        return [(name, "-")]
    low, high = estimate.low, estimate.high
    return [(name, figure(estimate.median / scale)), (f"{name}.low", figure(None if low is None else low / scale)),
            (f"{name}.high", figure(None if high is None else high / scale))]  # fmt: skip


def _ratio(name: str, estimate: RatioEstimate) -> list[tuple[str, str]]:
    return [(name, figure(estimate.ratio, 4)), (f"{name}.low", figure(estimate.low, 4)),
            (f"{name}.high", figure(estimate.high, 4))]  # fmt: skip


def compare_properties(result: CompareResult, prefix: str = "") -> list[tuple[str, str]]:
    """Each variant's counted trials, requests and medians (requests/s, p50 and p99 in ms, with
    their 95 % intervals), then each comparison's ratios and verdict; each name after ``prefix``."""
    options = result.options
    props = [(f"{prefix}load", describe_load(options.load)), (f"{prefix}trials", str(options.trials)),
             (f"{prefix}baseline", options.baseline)]  # fmt: skip
    for summary in result.summaries:
        at = f"{prefix}{summary.label}."
        props += [(f"{at}url", summary.url), (f"{at}trials_counted", str(summary.trials)),
                  (f"{at}requests.complete", str(summary.complete)), (f"{at}requests.failed", str(summary.failed)),
                  (f"{at}requests.non_2xx", str(summary.non_2xx)),
                  *_estimate(f"{at}requests_per_s", summary.requests_per_s),
                  *_estimate(f"{at}p50_ms", summary.p50_us, 1000), *_estimate(f"{at}p99_ms", summary.p99_us, 1000)]
    for comparison in result.comparisons:
        at = f"{prefix}{comparison.label} vs {comparison.baseline}."
        props += [(f"{at}verdict", comparison.verdict), (f"{at}by", comparison.by),
                  *_ratio(f"{at}requests_per_s_ratio", comparison.requests_per_s),
                  *_ratio(f"{at}p99_ratio", comparison.p99_us)]  # fmt: skip
    return props


def compare_cases(result: CompareResult, classname: str, prefix: str = "") -> list[Case]:
    """The run's case and each gate's (names after ``prefix``)."""
    elapsed = sum(trial.elapsed_s for trial in result.trials)
    failure = failure_message(result)
    run = run_case(classname, elapsed, [failure] if failure else [],
                   interrupted_text(elapsed) if result.interrupted else None, name=prefix + RUN_CASE)  # fmt: skip
    return [run, *([] if result.gates is None else result.gates.junit_cases(classname, prefix))]


def compare_junit(result: CompareResult) -> Suite:
    """``result`` (a fresh comparison or one read back) as a JUnit suite."""
    name = "pounder compare " + " ".join(variant.label for variant in result.variants)
    elapsed = sum(trial.elapsed_s for trial in result.trials)
    return Suite(name, tuple(compare_cases(result, "pounder.compare")), tuple(compare_properties(result)), elapsed,
                 result.started_at)  # fmt: skip
