"""Load generation for ``pounder bench``: the load options (``_options``, declared once), their
parsing and validation (``_parse``; the load model ``_model``, URLs ``_url``, the request
``_request``, put together in ``_spec``), what sends a load (``_sender``: the
interface; this machine's engine, run in ``_bench``, is the first; agents on a cluster, in
:mod:`pounder.agents`, the second), results (``_result``, with the engine's measurements in
``_measured``, the options it ran with in ``_run_options`` and the agents who sent it in
``_distributed``) and their
text and CSV forms (``_report``, ``_csv``); pass/fail gates on a result (``_gates``); the user's
traffic from an access log (``_access_log``). The public names are re-exported by :mod:`pounder`."""

from pounder.load._access_log import (
    STATIC_EXTENSIONS,
    AccessLog,
    Peak,
    ServiceTime,
    read_access_log,
    write_url_file,
)
from pounder.load._bench import (
    ENGINE,
    POLL_INTERVAL_S,
    Engine,
    OutputWriteError,
    Progress,
    ProgressCallback,
    bench,
    check_io,
    check_tls,
    ensure_descriptors,
    load_engine,
    run_bench,
    server_sampler,
    serves_all,
)
from pounder.load._csv import render_csv
from pounder.load._distributed import AgentReport, Agents
from pounder.load._gates import (
    BENCH_METRICS,
    Gate,
    GateReport,
    GateResult,
    check_gates,
    evaluate_gates,
    parse_gate,
    parse_gates,
    verdict_of,
)
from pounder.load._measured import (
    ERROR_CATEGORIES,
    MAX_FAILED,
    PERCENTILES,
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
from pounder.load._model import Number
from pounder.load._options import LoadOptions
from pounder.load._outcome import SUCCESS, StatusRanges, load_failure, parse_statuses, speaks_tls, statuses_text
from pounder.load._parse import Stage, read_url_targets
from pounder.load._replay import MAX_REPLAY_S, describe_replay
from pounder.load._report import describe_load, format_ms, render_report
from pounder.load._result import READ_SCHEMAS, SCHEMA, BenchResult, Derived, ReplyRate, load_result
from pounder.load._run_options import HttpOptions, LoadModel, ReplayInfo, RunOptions, TargetInfo, TlsInfo
from pounder.load._scenario import Scenario, read_scenario
from pounder.load._sender import Sender
from pounder.load._spec import BenchSpec, Target
from pounder.load._steps import StepStats, scenario_failure
from pounder.load._url import NotLoopbackError, is_loopback, parse_url, resolve

__all__ = [
    "BENCH_METRICS",
    "Gate",
    "GateReport",
    "GateResult",
    "check_gates",
    "evaluate_gates",
    "parse_gate",
    "parse_gates",
    "verdict_of",
    "MAX_FAILED",
    "clean_trial",
    "ensure_descriptors",
    "OutputWriteError",
    "ENGINE",
    "ERROR_CATEGORIES",
    "POLL_INTERVAL_S",
    "PERCENTILES",
    "READ_SCHEMAS",
    "SCHEMA",
    "STATIC_EXTENSIONS",
    "AccessLog",
    "AgentReport",
    "Agents",
    "BenchResult",
    "BenchSpec",
    "ByteCounts",
    "ClientCpu",
    "Derived",
    "Engine",
    "ErrorCounts",
    "Histogram",
    "HttpOptions",
    "IoInfo",
    "Latency",
    "LoadModel",
    "LoadOptions",
    "MalformedResultError",
    "NotLoopbackError",
    "Number",
    "Peak",
    "Phases",
    "Progress",
    "ProgressCallback",
    "MAX_REPLAY_S",
    "ReplayInfo",
    "ReplyRate",
    "RequestCounts",
    "RunOptions",
    "SecondSample",
    "Sender",
    "ServiceTime",
    "Scenario",
    "Stage",
    "StepStats",
    "Target",
    "TargetInfo",
    "TlsCounts",
    "TlsInfo",
    "WarmupCounts",
    "bench",
    "check_io",
    "check_tls",
    "describe_load",
    "describe_replay",
    "format_ms",
    "is_loopback",
    "load_engine",
    "load_result",
    "parse_url",
    "read_access_log",
    "read_scenario",
    "read_url_targets",
    "render_csv",
    "render_report",
    "resolve",
    "run_bench",
    "scenario_failure",
    "SUCCESS",
    "StatusRanges",
    "load_failure",
    "parse_statuses",
    "speaks_tls",
    "statuses_text",
    "server_sampler",
    "serves_all",
    "write_url_file",
]
