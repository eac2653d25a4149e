"""``pounder compare``: is A faster than B, and by how much.

::

    from pounder.compare import Variant, compare, render_compare

    result = compare(
        [Variant("before", "http://127.0.0.1:8080/"), Variant("after", "http://127.0.0.1:8081/")],
        trials=5, connections=20, duration="5s", results="compare.json",
    )
    print(render_compare(result))
    print(result.comparison("after").verdict)      # "faster", "slower", "no clear difference", "unknown"

The same load runs against every variant, ``trials`` times each, interleaved (A B A B ...) after a
warm-up trial each; each variant's figures are medians over its trials, and each ratio against the
baseline (requests/s, p99 latency) has a 95 % percentile-bootstrap interval over the trials. A trial
counts only when at most 1 % of its requests failed (and one completed); a variant left with fewer
than 2 counted trials has no ratio and the verdict "unknown" (:attr:`CompareResult.failed_variants`,
:func:`failure_message`). See
:mod:`pounder.compare._trials` for the run, :mod:`pounder.compare._result` for the result and
:mod:`pounder._stats` for the statistics (shared: the profiler's cost uses them too);
:mod:`pounder.compare._gates` for the ``--fail-if`` gates of a comparison (``slower>5%``);
:mod:`pounder.compare._junit` for it as JUnit XML (``--junit``).
"""

from __future__ import annotations

from pounder._compare_run import MAX_TRIALS, MAX_VARIANTS  # the bounds a stored comparison is read with too
from pounder._stats import (
    Estimate,
    RatioEstimate,
    Verdict,
    median_interval,
    paired_ratio_interval,
    ratio_interval,
    verdict,
)
from pounder.compare._chart import chart_format, render_chart
from pounder.compare._gates import (
    COMPARE_METRICS,
    SLOWER_MIN_TRIALS,
    check_slower_trials,
    evaluate_compare_gates,
    parse_compare_gates,
)
from pounder.compare._report import describe_errors, failure_message, format_rate, format_ratio, render_compare
from pounder.compare._result import (
    SCHEMA,
    CompareOptions,
    CompareResult,
    Comparison,
    NotCounted,
    Trial,
    TrialCallback,
    Variant,
    VariantSummary,
)
from pounder.compare._trials import (
    DEFAULT_TRIALS,
    MIN_TRIALS,
    check_label,
    check_trials,
    compare,
    default_labels,
    trial_plan,
)
from pounder.results import MAX_FAILED, clean_trial  # a counted trial's rule, defined with the results

__all__ = [
    "COMPARE_METRICS",
    "SLOWER_MIN_TRIALS",
    "check_slower_trials",
    "evaluate_compare_gates",
    "parse_compare_gates",
    "DEFAULT_TRIALS",
    "MAX_FAILED",
    "MAX_TRIALS",
    "MAX_VARIANTS",
    "MIN_TRIALS",
    "SCHEMA",
    "CompareOptions",
    "CompareResult",
    "Comparison",
    "Estimate",
    "NotCounted",
    "RatioEstimate",
    "Trial",
    "TrialCallback",
    "Variant",
    "VariantSummary",
    "Verdict",
    "chart_format",
    "check_label",
    "check_trials",
    "clean_trial",
    "compare",
    "default_labels",
    "describe_errors",
    "failure_message",
    "format_rate",
    "format_ratio",
    "median_interval",
    "paired_ratio_interval",
    "ratio_interval",
    "render_chart",
    "render_compare",
    "trial_plan",
    "verdict",
]
