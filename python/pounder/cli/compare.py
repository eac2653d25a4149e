"""``pounder compare``: is A faster than B, and by how much.

The command maps flags to :func:`pounder.compare.compare` and writes its outputs; the trials and the
statistics live in ``pounder.compare``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated

import typer

from pounder import _interrupt
from pounder._errors import PounderError, UsageError
from pounder._files import check_distinct, check_output_path, write_output
from pounder._flags import flag
from pounder._matplotlib import require_matplotlib
from pounder._units import parse_count
from pounder.cli._bridge import fields_of, given, takes
from pounder.cli._common import (
    COMPARE_GATES,
    Measured,
    check_junit_path,
    check_report_path,
    gates_exit,
    interrupted,
    kept_outputs,
    measured_outputs,
    write_html_report,
    write_junit_file,
)
from pounder.cli._load_options import AgentFlags, SharedOptions, measured_load, sampled_server, threads_warning
from pounder.cli._metrics_out import metrics_option, metrics_out
from pounder.cli._progress import live_status
from pounder.compare import (
    DEFAULT_TRIALS,
    MIN_TRIALS,
    CompareResult,
    Trial,
    TrialCallback,
    Variant,
    chart_format,
    check_trials,
    compare,
    default_labels,
    failure_message,
    format_rate,
    render_chart,
    render_compare,
    trial_plan,
)
from pounder.load import LoadOptions, ProgressCallback
from pounder.results import format_ms

_TRIALS = "Trials"
_LOAD = "Load (every trial)"
_OUT = "Output"
_SERVER = "Server sampling"

COMPARE_HELP = "\n\n".join(
    [
        "Is one URL faster than another, and by how much: the same load against each URL, repeated in "
        "interleaved trials (A B A B ...) after a warm-up trial each, so that drift hits every URL alike.",
        "Reports each URL's median requests/s, p50 and p99 latency (and the server's CPU per request with "
        "--server-*), and against the baseline (the first URL, or --baseline) the ratio of the medians with a 95 % "
        "bootstrap interval over the trials: faster, slower, or no clear difference when the interval contains 1 "
        "or the ratio is within --min-effect of 1. In open loop (--rate) the verdict comes from the p99 latency.",
        "A trial counts only when at most 1 % of its requests failed (refused, reset, timed out...) and it got "
        "somewhere (an answer 2xx, 3xx or of --expect-status; with --scenario a loop step that succeeded): one "
        "that does not is kept in the results, marked '!' and explained, but not counted. With fewer "
        "than 2 counted trials for a URL there is no ratio and the verdict is unknown.",
        "Targets must be on this machine (127.0.0.0/8 or ::1) unless --allow-remote.",
        "Exit status: 0 done, 1 could not run, or a URL was left with fewer than 2 counted trials because its "
        "requests failed or its trials got nowhere (no request succeeded, no answer was 2xx or 3xx or of "
        "--expect-status, or with --scenario no loop step succeeded; the results are still written and "
        "reported), 2 bad input, 3 a --fail-if gate failed, "
        "130 interrupted (the trials done are still reported, their gates too).",
    ]
)

Text = str | None

URLS = typer.Argument(metavar="URL...", help="Two or more http:// or https:// URLs to compare.", show_default=False)


# fmt: off
@dataclass(frozen=True)
class CompareFlags:
    """The options of ``pounder compare`` that are its own (the load's are :class:`~pounder.LoadOptions`',
    the server's :class:`~pounder.cli._load_options.SharedOptions`'): what it writes, then how it runs
    the trials, each in the panel --help shows it in (where the command lists them); read with
    ``given(ctx, CompareFlags)``."""

    json_path: str | None = field(default=None, metadata=flag("--json", metavar="PATH", panel=_OUT, help=(
        "Write the comparison as JSON (schema pounder/compare/1), rewritten after every trial so nothing measured "
        "is lost; '-' prints it on stdout at the end instead of the report.")))
    chart_path: str | None = field(default=None, metadata=flag("--chart", metavar="PATH.png|.svg", panel=_OUT, help=(
        "Draw median requests/s and p99 latency per URL with their 95 % intervals (needs matplotlib).")))
    label: tuple[str, ...] = field(default=(), metadata=flag("--label", metavar="NAME", panel=_TRIALS,
                                                             repeatable=True, help=(
        "A name for each URL, in order (repeat once per URL). Default: the URL's path (host:port/path when two "
        "paths are alike).")))
    baseline: str | None = field(default=None, metadata=flag("--baseline", metavar="LABEL", panel=_TRIALS, help=(
        "The label the others are compared with; default the first URL.")))
    trials: str | None = field(default=None, metadata=flag("--trials", metavar="N", panel=_TRIALS, help=(
        f"Measured trials per URL, default {DEFAULT_TRIALS} (at least {MIN_TRIALS}; 5 for --fail-if slower>N%).")))
    no_warmup: bool = field(default=False, metadata=flag("--no-warmup", panel=_TRIALS, help=(
        "Skip the warm-up trial of each URL.")))
    min_effect: str | None = field(default=None, metadata=flag("--min-effect", metavar="PERCENT", panel=_TRIALS,
                                                               help=(
        "A ratio within this many percent of 1 is 'no clear difference' even when its interval excludes 1; "
        "default 1 (0 for the interval alone).")))
# fmt: on


def parse_min_effect(text: str | None) -> float:
    """``--min-effect`` in percent (``2``, ``2%``, ``0.5``) as a fraction."""
    if text is None:
        return 0.01
    stripped = text.strip().removesuffix("%").strip()
    try:
        percent = float(stripped)
    except ValueError:
        raise UsageError(f"invalid --min-effect {text!r}: expected a percentage such as 1 or 2.5%") from None
    if not 0 <= percent < 100:
        raise UsageError(f"--min-effect must be at least 0 and less than 100 (percent), got {text}")
    return percent / 100


def parse_trials(text: str | None) -> int:
    return DEFAULT_TRIALS if text is None else parse_count(text, "--trials")


def labels_for(urls: list[str], labels: list[str] | None) -> list[str]:
    """The variants' labels: ``--label`` once per URL, else :func:`default_labels`."""
    if len(urls) < 2:
        raise UsageError(f"compare needs at least 2 URLs, got {len(urls)}")
    if labels and len(labels) != len(urls):
        raise UsageError(f"give one --label per URL: {len(urls)} URLs, {len(labels)} labels")
    return labels or default_labels(urls)


def _trial_line(trial: Trial, planned: int) -> str:
    kind = "warm-up" if trial.round == 0 else f"trial {trial.round}"
    flag = ", interrupted" if trial.interrupted else ""
    failed = f", {trial.failed:,} failed" if trial.failed else ""
    return (
        f"{trial.seq}/{planned}  {trial.label}  {kind}: {format_rate(trial.requests_per_s)} req/s, "
        f"p99 {format_ms(trial.p99_us)} ms{failed}{flag}"
    )


@contextmanager
def _progress(
    enabled: bool, plan: list[tuple[str, int]]
) -> Iterator[tuple[TrialCallback | None, ProgressCallback | None]]:
    """On a terminal: a line per finished trial and a live bar for the running one."""
    if not enabled:
        yield None, None
        return
    with live_status() as (log, status, progress):

        def describe(index: int) -> None:
            if index < len(plan):
                label, round_ = plan[index]
                kind = "warm-up" if round_ == 0 else f"trial {round_}"
                status(f"{index + 1}/{len(plan)} {label} {kind}")

        def on_trial(trial: Trial, planned: int) -> None:
            log(_trial_line(trial, planned))
            describe(trial.seq)

        describe(0)
        yield on_trial, progress


def _emit(result: CompareResult, json_out: str | None, chart_out: str | None, quiet: bool,
          junit: str | None = None) -> None:
    """The chart and the JUnit file first, then the report (or the JSON on stdout); a file that
    cannot be written is reported once the report is out, so the numbers still show."""
    failure: PounderError | None = None
    for path, write in ((chart_out, render_chart), (junit, lambda result, path: write_junit_file(
            result.to_junit, path))):  # fmt: skip
        if path is not None:
            try:
                write(result, path)
            except PounderError as error:
                failure = failure or error
    if json_out == "-":
        write_output("-", result.to_json())
    elif not quiet:
        write_output("-", render_compare(result))
    if failure is not None:
        raise failure


def _check_chart(path: str | None) -> str | None:
    if path is None:
        return None
    chart_format(path)
    checked = check_output_path(path, "--chart", None)
    if checked == "-":
        raise UsageError("--chart needs a file, not '-'")
    require_matplotlib()
    return checked


@takes(
    *fields_of(CompareFlags, "label", "baseline", "trials", "no_warmup", "min_effect"),
    *measured_load(_LOAD, sizes={"duration": "Default 5s when neither -n nor -d is given.",
                                 "rate": "Length: -d, else -n divided by the rate, else 5s."},
                   scenario="Every variant runs it; each URL is then a server's base."),
    *sampled_server(_SERVER, (
        "The server behind every URL (its parent process): sampled during each trial for its CPU per request.")),
    AgentFlags,
    *fields_of(CompareFlags, "json_path", "chart_path"),
    *measured_outputs(_OUT, "comparison", COMPARE_GATES, cases="one per --fail-if gate and URL (slower>N%: per URL "
                      "against the baseline)"),
    metrics_option(_OUT),
)  # fmt: skip
def compare_command(ctx: typer.Context, urls: Annotated[list[str], URLS]) -> None:
    """Compare URLs in interleaved trials (help: COMPARE_HELP)."""
    own, out = given(ctx, CompareFlags), given(ctx, Measured)
    load, shared = given(ctx, LoadOptions), given(ctx, SharedOptions)
    labels = labels_for(urls, list(own.label) or None)
    count = check_trials(parse_trials(own.trials))
    effect = parse_min_effect(own.min_effect)
    json_out = check_output_path(own.json_path, "--json", "JSON")
    chart_out = _check_chart(own.chart_path)
    check_report_path(out.report)
    check_junit_path(out.junit)
    check_distinct([("--json", json_out), ("--chart", chart_out), ("--report", out.report), ("--junit", out.junit)],
                   [("--server-pidfile", shared.server_pidfile), *load.input_files()])
    target = shared.target()
    pid = None if target is None else target.pid
    variants = [Variant(name, url, pid) for name, url in zip(labels, urls, strict=True)]
    with metrics_out(ctx, "compare", allow_remote=load.allow_remote):
        plan = trial_plan(labels, count, not own.no_warmup)
        with _progress(not out.quiet and sys.stderr.isatty(), plan) as (on_trial, on_progress):
            result = compare(
                variants,
                trials=count, warmup=not own.no_warmup, baseline=own.baseline, min_effect=effect,
                results=None if json_out in (None, "-") else json_out, on_trial=on_trial,
                on_progress=threads_warning(load, on_progress),
                options=load, sender=given(ctx, AgentFlags).sender(), gates=out.gates(),
            )  # fmt: skip
        with _interrupt.deferred():  # a signal now waits until every output is whole
            _emit(result, json_out, chart_out, out.quiet, out.junit)
            if out.report is not None:
                write_html_report([result.to_dict()], out.report)
        if result.interrupted:
            raise interrupted(kept_outputs([json_out, chart_out, out.report, out.junit], out.quiet))
        failure = failure_message(result)
        if failure is not None:  # written and reported; still no comparison
            raise PounderError(failure)
        gates_exit(None if result.gates is None else result.gates.failure_line())
