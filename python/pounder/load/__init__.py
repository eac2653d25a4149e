"""Load generation for ``pounder bench``: the load options (``_options``, declared once), their
parsing and validation (``_parse``; the load model ``_model``, URLs ``_url``, the request
``_request``, put together in ``_spec``), running the engine (``_bench``; from many
machines ``_ray``, with its agents ``_agent``, their record ``_distributed``, the head's
probe ``_gcs`` and what ``ray.init`` does to this process kept in bounds ``_ray_init``), results (``_result``,
with the engine's measurements in ``_measured`` and the options it ran with in ``_run_options``) and their
text and CSV forms (``_report``, ``_csv``); the user's traffic from an access log
(``_access_log``). The public names are re-exported by :mod:`pounder`."""

from pounder.load._access_log import (
    STATIC_EXTENSIONS,
    AccessLog,
    Peak,
    ServiceTime,
    read_access_log,
    write_url_file,
)
from pounder.load._bench import (
    OutputWriteError,
    Progress,
    ProgressCallback,
    bench,
    ensure_descriptors,
    run_bench,
    server_sampler,
)
from pounder.load._csv import render_csv
from pounder.load._distributed import AgentReport, Agents
from pounder.load._measured import (
    ERROR_CATEGORIES,
    MAX_FAILED,
    PERCENTILES,
    ByteCounts,
    ClientCpu,
    ErrorCounts,
    Histogram,
    Latency,
    MalformedResultError,
    Phases,
    RequestCounts,
    SecondSample,
    WarmupCounts,
    clean_trial,
)
from pounder.load._model import Number
from pounder.load._options import LoadOptions
from pounder.load._parse import Stage, read_url_targets
from pounder.load._ray import (
    RAY_EXTRA,
    AgentPool,
    Cluster,
    agent_file,
    agent_pool,
    check_distributable,
    run_bench_ray,
)
from pounder.load._report import describe_load, format_ms, render_report
from pounder.load._result import READ_SCHEMAS, SCHEMA, BenchResult, Derived, ReplyRate, load_result
from pounder.load._run_options import HttpOptions, LoadModel, RunOptions, TargetInfo
from pounder.load._spec import BenchSpec, Target
from pounder.load._url import NotLoopbackError, parse_url, resolve

__all__ = [
    "MAX_FAILED",
    "clean_trial",
    "ensure_descriptors",
    "OutputWriteError",
    "ERROR_CATEGORIES",
    "PERCENTILES",
    "RAY_EXTRA",
    "READ_SCHEMAS",
    "SCHEMA",
    "STATIC_EXTENSIONS",
    "AccessLog",
    "AgentPool",
    "AgentReport",
    "Agents",
    "BenchResult",
    "BenchSpec",
    "ByteCounts",
    "ClientCpu",
    "Cluster",
    "Derived",
    "ErrorCounts",
    "Histogram",
    "HttpOptions",
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
    "ReplyRate",
    "RequestCounts",
    "RunOptions",
    "SecondSample",
    "ServiceTime",
    "Stage",
    "Target",
    "TargetInfo",
    "WarmupCounts",
    "agent_file",
    "agent_pool",
    "bench",
    "check_distributable",
    "describe_load",
    "format_ms",
    "load_result",
    "parse_url",
    "read_access_log",
    "read_url_targets",
    "render_csv",
    "render_report",
    "resolve",
    "run_bench",
    "run_bench_ray",
    "server_sampler",
    "write_url_file",
]
