"""The text report of ``pounder compare``: plain ASCII tables with columns sized to their contents.

Sections: what ran (load, trials, baseline); one row per variant (medians over its counted trials
and 95 % intervals); one row per variant against the baseline (ratios, intervals, verdicts); one
sentence per comparison; every trial's requests/s in order; notes (trials not counted for their
failures, failures in counted trials).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pounder._errors import check_instance, public
from pounder._stats import MIN_SAMPLES, Estimate, RatioEstimate
from pounder._table import times
from pounder._units import count_text, plain
from pounder.compare._result import CompareOptions, CompareResult, Comparison, Trial
from pounder.results import ERROR_CATEGORIES, MAX_FAILED, describe_load, format_ms, statuses_text

_GAP = "  "


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """First column left-aligned, the others right-aligned, each as wide as its widest cell."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append(_GAP.join(cells).rstrip())
    return lines


@public
def format_rate(value: float) -> str:
    """Requests per second: 3 significant digits at least, thousands separated."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


@public
def format_ratio(value: float | None) -> str:
    """A ratio as ``0.512x``, ``1.013x``, ``17.6x``; ``-`` when unknown (:func:`pounder._table.times`,
    which a saved baseline's gates show too)."""
    return times(value)


def _interval(estimate: Estimate | None, *, ms: bool = False) -> str:
    if estimate is None or estimate.low is None or estimate.high is None:
        return "-"
    render = format_ms if ms else format_rate
    return f"{render(estimate.low)}-{render(estimate.high)}"


def _median(estimate: Estimate | None, *, ms: bool = False) -> str:
    if estimate is None:
        return "-"
    return format_ms(estimate.median) if ms else format_rate(estimate.median)


def _cpu(estimate: Estimate | None) -> str:
    return "-" if estimate is None else f"{estimate.median:,.1f}"


def _ratio_interval(ratio: RatioEstimate) -> str:
    if ratio.low is None or ratio.high is None:
        return "-"
    return f"{format_ratio(ratio.low)}-{format_ratio(ratio.high)}"


@public
def describe_errors(errors: Mapping[str, int]) -> str:
    """A trial's (or trials') error counts as ``refused 66,835, reset 3``, in the engine's order."""
    named = [f"{name.replace('_', ' ')} {errors[name]:,}" for name in ERROR_CATEGORIES if errors.get(name)]
    return ", ".join(named) or "no error recorded"


def _failures(trials: Sequence[Trial]) -> str:
    """``137,315 failed: refused 137,315`` over ``trials``."""
    errors: dict[str, int] = {}
    for trial in trials:
        for name, count in trial.errors.items():
            errors[name] = errors.get(name, 0) + count
    return f"{sum(trial.failed for trial in trials):,} failed: {describe_errors(errors)}"


@public
def failure_message(result: CompareResult) -> str | None:
    """The error for the variants left with fewer than 2 counted trials because requests failed
    (:attr:`CompareResult.failed_variants`), naming each and how its requests failed; None when
    there is none."""
    check_instance(result, CompareResult, "failure_message: result")
    parts = []
    for label in result.failed_variants:
        failed = result.failed(label)
        measured = [trial for trial in result.trials if trial.label == label and trial.measured]
        nowhere = [trial.nowhere for trial in failed if trial.got_nowhere and trial.nowhere is not None]
        if not any(trial.complete for trial in measured):
            parts.append(f"no request succeeded to {label} ({_failures(failed)})")
        elif nowhere and len(nowhere) == len(measured):
            parts.append(f"every trial of {label} got nowhere ({nowhere[-1]})")
        elif nowhere:
            counted = len(result.counted(label))
            parts.append(
                f"trials of {label} failed or got nowhere in {len(failed)} of {len(measured)} trials (e.g. "
                f"{nowhere[-1]}), {count_text(counted, 'counted trial')} left"
            )
        else:
            counted = len(result.counted(label))
            parts.append(
                f"requests to {label} failed in {len(failed)} of {len(measured)} trials ({_failures(failed)}), "
                f"{count_text(counted, 'counted trial')} left"
            )
    if not parts:
        return None
    them = "it" if len(parts) == 1 else "them"
    return f"{'; '.join(parts)}: no comparison with {them} (at least {MIN_SAMPLES} counted trials needed)"


def _requests(options: CompareOptions) -> str:
    """What every trial sent: ``GET`` (with the statuses expected), or ``scenario FILE``."""
    if options.scenario is not None:
        return f"scenario {options.scenario} (each step's method)"
    expected = "" if options.expect_status is None else f" (expected: {statuses_text(options.expect_status)})"
    return f"{options.http.method}{expected}"


def _header(result: CompareResult) -> list[str]:
    options = result.options
    load = options.load
    planned = []
    if load.duration_s is not None:
        planned.append(f"{plain(load.duration_s)} s")
    if load.requests is not None:
        planned.append(f"{load.requests:,} requests")
    http = options.http
    connection = "keep-alive" if http.keepalive else "keep-alive off"
    order = " ".join(variant.label for variant in result.variants[:3]) + (" ..." if len(result.variants) > 3 else "")
    warmup = ", after a warm-up trial each" if options.warmup else ", no warm-up"
    measured = sum(trial.measured for trial in result.trials)
    lines = [
        f"pounder {result.tool_version} compare, started {result.started_at}",
        "",
        f"Load per trial:  {describe_load(load)}; {' or '.join(planned)}; {_requests(options)}, {connection}",
        f"Trials:          {options.trials} per variant, interleaved ({order}){warmup}",
        f"Baseline:        {options.baseline}",
    ]
    if options.ray is not None:
        agents = f"{options.agents} agent{'s' * (options.agents != 1)}"
        lines.insert(3, f"Sent by:         {agents} of Ray cluster {options.ray}, the same each trial")
    if result.interrupted:
        planned_total = options.trials * len(result.variants)
        lines.append(f"Interrupted:     yes, after {measured} of {planned_total} trials: partial result")
    return lines


def _variants(result: CompareResult) -> list[str]:
    rows = [["variant", "trials", "req/s", "95% interval", "p50 ms", "p99 ms", "95% interval", "CPU us/req", "failed"]]
    for summary in result.summaries:
        rows.append([
            summary.label,
            str(summary.trials),
            _median(summary.requests_per_s),
            _interval(summary.requests_per_s),
            _median(summary.p50_us, ms=True),
            _median(summary.p99_us, ms=True),
            _interval(summary.p99_us, ms=True),
            _cpu(summary.server_cpu_us_per_request),
            f"{summary.failed:,}",
        ])  # fmt: skip
    lines = _table(rows)
    lines.append("(medians over the trials; intervals: 95 % bootstrap; CPU: the server's, per request)")
    return lines


def _comparisons(result: CompareResult) -> list[str]:
    rows = [[f"vs {result.options.baseline}", "req/s ratio", "95% interval", "p99 ratio", "95% interval", "verdict"]]
    for comparison in result.comparisons:
        rows.append([
            comparison.label,
            format_ratio(comparison.requests_per_s.ratio),
            _ratio_interval(comparison.requests_per_s),
            format_ratio(comparison.p99_us.ratio),
            _ratio_interval(comparison.p99_us),
            comparison.verdict,
        ])  # fmt: skip
    return _table(rows)


def _too_few(result: CompareResult, label: str) -> str | None:
    """Why ``label`` has fewer than 2 counted trials, or None when it has enough."""
    counted = len(result.counted(label))
    if counted >= MIN_SAMPLES:
        return None
    failed = result.failed(label)
    nowhere = sum(trial.got_nowhere for trial in failed)
    what = "got nowhere" if nowhere == len(failed) else "requests failed or got nowhere" if nowhere else \
        "requests failed"  # fmt: skip
    why = f" ({len(failed)} not counted: {what})" if failed else ""
    return f"{label} has {count_text(counted, 'counted trial')}{why}"


def _sentence(result: CompareResult, comparison: Comparison) -> str:
    min_effect = result.options.min_effect
    label, base = comparison.label, comparison.baseline
    ratio = comparison.p99_us if comparison.by == "p99_us" else comparison.requests_per_s
    what = "the p99 latency" if comparison.by == "p99_us" else "the requests/s"
    figures = f"{format_ratio(ratio.ratio)} {what} of {base}"
    if ratio.low is not None and ratio.high is not None:
        figures += f" (95 % interval {format_ratio(ratio.low)} to {format_ratio(ratio.high)})"
    if comparison.verdict in ("faster", "slower"):
        return f"{label} is {comparison.verdict} than {base}: {figures}."
    if comparison.verdict == "no clear difference":
        low, high = ratio.low, ratio.high
        if low is not None and high is not None and not low <= 1.0 <= high:
            figures += f"; within the {min_effect:.0%} minimum effect"
        return f"{label} vs {base}: no clear difference, {figures}."
    short = [why for why in (_too_few(result, base), _too_few(result, label)) if why is not None]
    if short:
        return (f"{label} vs {base}: unknown, no ratio: {' and '.join(short)}; at least {MIN_SAMPLES} per variant "
                "are needed.")
    return f"{label} vs {base}: unknown, too few trials measured something for an interval."


_MARKS = {None: "", "warm-up": "*", "interrupted": "*", "failures": "!"}


def _trials(result: CompareResult) -> list[str]:
    lines = ["Trials (req/s, in order; not counted: * warm-up or interrupted, ! requests failed or got nowhere):"]
    width = max(len(variant.label) for variant in result.variants)
    for variant in result.variants:
        cells = [
            format_rate(trial.requests_per_s) + _MARKS[trial.not_counted]
            for trial in result.trials
            if trial.label == variant.label
        ]
        lines.append(f"  {variant.label:<{width}}  {' '.join(cells) if cells else '-'}")
    return lines


def _notes(result: CompareResult) -> list[str]:
    notes = []
    for trial in result.trials:
        if trial.not_counted == "failures" and trial.got_nowhere:
            notes.append(f"Not counted: {trial.label} trial {trial.round} got nowhere: {trial.nowhere}.")
        elif trial.not_counted == "failures":
            attempted = trial.complete + trial.failed
            notes.append(
                f"Not counted: {trial.label} trial {trial.round}, {trial.failed:,} of {attempted:,} requests failed "
                f"({describe_errors(trial.errors)}); a trial counts with at most {MAX_FAILED * 100:g} % failed."
            )
    for summary in result.summaries:
        if summary.failed or summary.non_2xx:
            notes.append(
                f"Note: {summary.label} had {summary.failed:,} failed requests and {summary.non_2xx:,} non-2xx "
                "responses in its counted trials; its figures include them."
            )
    return notes


@public
def render_compare(result: CompareResult) -> str:
    """The whole text report, ending with a newline."""
    check_instance(result, CompareResult, "render_compare: result")
    sections = [_header(result), _variants(result), _comparisons(result)]
    sections.append([_sentence(result, comparison) for comparison in result.comparisons])
    sections.append(_trials(result))
    notes = _notes(result)
    if notes:
        sections.append(notes)
    if result.gates is not None and result.gates.results:
        sections.append(result.gates.render())
    return "\n\n".join("\n".join(section) for section in sections) + "\n"
