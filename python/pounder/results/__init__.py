"""What a load measured, read and told: a bench result (``_result``: :class:`BenchResult`, read back
with :func:`load_result`), the engine's measurements in it (``_measured``), the options it ran with
(``_run_options``), a scenario's per-step figures (``_steps``) and the agents who sent it
(``_distributed``); whether a load failed and why (``_outcome``); its text and CSV forms
(``_report``, ``_csv``); pass/fail gates on it (``_gates``); it and its gates as JUnit XML
(``_junit``); a saved result as a baseline (``_baseline``). Below :mod:`pounder.traffic` and
:mod:`pounder.load`, which make what it records;
the public names are re-exported by :mod:`pounder`."""

from pounder.results._baseline import (
    BASELINE_NOTE,
    BASELINE_TABLE,
    FALSE_ALARMS,
    Baseline,
    BaselineFigure,
    FalseAlarms,
    baseline_title,
    check_baseline,
    compare_with_baseline,
)
from pounder.results._csv import render_csv
from pounder.results._distributed import AgentReport, Agents
from pounder.results._gates import (
    BASELINE_METRICS,
    BENCH_METRICS,
    Gate,
    GateReport,
    GateResult,
    check_gates,
    evaluate_gates,
    parse_gate,
    parse_gates,
    slowdown_verdict,
    verdict_of,
)
from pounder.results._measured import (
    ERROR_CATEGORIES,
    MAX_FAILED,
    ByteCounts,
    ClientCpu,
    ErrorCounts,
    Histogram,
    IoInfo,
    Latency,
    MalformedResultError,
    Phases,
    RequestCounts,
    SecondSample,
    TlsCounts,
    WarmupCounts,
    clean_trial,
)
from pounder.results._outcome import load_failure, parse_statuses, speaks_tls, statuses_text
from pounder.results._report import describe_load, describe_replay, format_ms, other_hosts, render_report
from pounder.results._result import READ_SCHEMAS, SCHEMA, BenchResult, Derived, ReplyRate, load_result
from pounder.results._run_options import (
    HttpOptions,
    LoadModel,
    LoadPlan,
    ReplayInfo,
    RunOptions,
    Stage,
    TargetInfo,
    TlsInfo,
)
from pounder.results._steps import StepStats

__all__ = [
    "BASELINE_METRICS",
    "BASELINE_NOTE",
    "BASELINE_TABLE",
    "baseline_title",
    "BENCH_METRICS",
    "FALSE_ALARMS",
    "Baseline",
    "BaselineFigure",
    "FalseAlarms",
    "check_baseline",
    "compare_with_baseline",
    "slowdown_verdict",
    "ERROR_CATEGORIES",
    "MAX_FAILED",
    "READ_SCHEMAS",
    "SCHEMA",
    "AgentReport",
    "Agents",
    "BenchResult",
    "ByteCounts",
    "ClientCpu",
    "Derived",
    "ErrorCounts",
    "Gate",
    "GateReport",
    "GateResult",
    "Histogram",
    "HttpOptions",
    "IoInfo",
    "Latency",
    "LoadModel",
    "LoadPlan",
    "MalformedResultError",
    "Phases",
    "ReplayInfo",
    "ReplyRate",
    "RequestCounts",
    "RunOptions",
    "SecondSample",
    "Stage",
    "StepStats",
    "TargetInfo",
    "TlsCounts",
    "TlsInfo",
    "WarmupCounts",
    "check_gates",
    "clean_trial",
    "describe_load",
    "describe_replay",
    "evaluate_gates",
    "format_ms",
    "load_failure",
    "load_result",
    "other_hosts",
    "parse_gate",
    "parse_gates",
    "parse_statuses",
    "render_csv",
    "render_report",
    "speaks_tls",
    "statuses_text",
    "verdict_of",
]
