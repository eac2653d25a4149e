"""pounder: benchmarking toolkit for pre-forking web servers.

The library is the API; the ``pounder`` CLI is a thin layer over it::

    import pounder

    result = pounder.bench("http://127.0.0.1:8080/", connections=20, duration="30s")
    print(result.derived.requests_per_s)
    print(pounder.render_report(result))

Importing this package loads nothing but its errors and version: each name is imported from its
package on first use (so ``pounder`` starts at once and handles a signal from its first moment);
the Rust engine (``pounder._engine``) is loaded by :func:`bench`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pounder._errors import PounderError, UsageError
from pounder._lazy import lazy_getattr
from pounder._version import __version__

if TYPE_CHECKING:
    from pounder.agents import Cluster, bench, run_bench_ray
    from pounder.load import BenchSpec, LoadOptions, OutputWriteError, Progress, ProgressCallback, Target, run_bench
    from pounder.procs import (
        MemResult,
        PoolSnapshot,
        ServerLoadReport,
        ServerSampler,
        find_server,
        load_mem,
        max_clients,
        snapshot,
    )
    from pounder.results import (
        SCHEMA,
        Agents,
        BenchResult,
        ByteCounts,
        ClientCpu,
        Derived,
        ErrorCounts,
        GateReport,
        Histogram,
        HttpOptions,
        IoInfo,
        Latency,
        LoadModel,
        Phases,
        ReplyRate,
        RequestCounts,
        RunOptions,
        SecondSample,
        Stage,
        StepStats,
        TargetInfo,
        TlsCounts,
        WarmupCounts,
        evaluate_gates,
        load_result,
        parse_gates,
        render_csv,
        render_report,
    )
    from pounder.traffic import AccessLog, Scenario, read_access_log, read_scenario, write_url_file

_LAZY = {
    "SCHEMA": "pounder.results",
    "AccessLog": "pounder.traffic",
    "Agents": "pounder.results",
    "BenchResult": "pounder.results",
    "BenchSpec": "pounder.load",
    "ByteCounts": "pounder.results",
    "ClientCpu": "pounder.results",
    "Cluster": "pounder.agents",
    "Derived": "pounder.results",
    "ErrorCounts": "pounder.results",
    "Histogram": "pounder.results",
    "HttpOptions": "pounder.results",
    "IoInfo": "pounder.results",
    "Latency": "pounder.results",
    "LoadModel": "pounder.results",
    "LoadOptions": "pounder.load",
    "OutputWriteError": "pounder.load",
    "Phases": "pounder.results",
    "Progress": "pounder.load",
    "ProgressCallback": "pounder.load",
    "ReplyRate": "pounder.results",
    "RequestCounts": "pounder.results",
    "RunOptions": "pounder.results",
    "SecondSample": "pounder.results",
    "Stage": "pounder.results",
    "Target": "pounder.load",
    "TargetInfo": "pounder.results",
    "WarmupCounts": "pounder.results",
    "GateReport": "pounder.results",
    "Scenario": "pounder.traffic",
    "StepStats": "pounder.results",
    "TlsCounts": "pounder.results",
    "evaluate_gates": "pounder.results",
    "parse_gates": "pounder.results",
    "read_scenario": "pounder.traffic",
    "bench": "pounder.agents",
    "load_result": "pounder.results",
    "render_csv": "pounder.results",
    "render_report": "pounder.results",
    "run_bench": "pounder.load",
    "run_bench_ray": "pounder.agents",
    "read_access_log": "pounder.traffic",
    "write_url_file": "pounder.traffic",
    "MemResult": "pounder.procs",
    "PoolSnapshot": "pounder.procs",
    "ServerLoadReport": "pounder.procs",
    "ServerSampler": "pounder.procs",
    "find_server": "pounder.procs",
    "load_mem": "pounder.procs",
    "max_clients": "pounder.procs",
    "snapshot": "pounder.procs",
}


__getattr__ = lazy_getattr("pounder", _LAZY, globals())


__all__ = [
    "SCHEMA",
    "AccessLog",
    "Agents",
    "BenchResult",
    "BenchSpec",
    "ByteCounts",
    "ClientCpu",
    "Cluster",
    "Derived",
    "ErrorCounts",
    "GateReport",
    "Histogram",
    "HttpOptions",
    "IoInfo",
    "Latency",
    "LoadModel",
    "LoadOptions",
    "MemResult",
    "OutputWriteError",
    "Phases",
    "PoolSnapshot",
    "PounderError",
    "Progress",
    "ProgressCallback",
    "ReplyRate",
    "RequestCounts",
    "RunOptions",
    "Scenario",
    "SecondSample",
    "ServerLoadReport",
    "ServerSampler",
    "Stage",
    "StepStats",
    "Target",
    "TargetInfo",
    "TlsCounts",
    "UsageError",
    "WarmupCounts",
    "__version__",
    "bench",
    "evaluate_gates",
    "find_server",
    "load_mem",
    "load_result",
    "max_clients",
    "parse_gates",
    "read_access_log",
    "read_scenario",
    "render_csv",
    "render_report",
    "run_bench",
    "run_bench_ray",
    "snapshot",
    "write_url_file",
]


def __dir__() -> list[str]:
    return sorted(__all__)
