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

import importlib
from typing import TYPE_CHECKING, Any

from pounder._errors import PounderError, UsageError
from pounder._version import __version__

if TYPE_CHECKING:
    from pounder.agents import Cluster, bench, run_bench_ray
    from pounder.load import (
        SCHEMA,
        AccessLog,
        Agents,
        BenchResult,
        BenchSpec,
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
        LoadOptions,
        OutputWriteError,
        Phases,
        Progress,
        ProgressCallback,
        ReplyRate,
        RequestCounts,
        RunOptions,
        Scenario,
        SecondSample,
        Stage,
        StepStats,
        Target,
        TargetInfo,
        TlsCounts,
        WarmupCounts,
        evaluate_gates,
        load_result,
        parse_gates,
        read_access_log,
        read_scenario,
        render_csv,
        render_report,
        run_bench,
        write_url_file,
    )
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

_LAZY = {
    "SCHEMA": "pounder.load",
    "AccessLog": "pounder.load",
    "Agents": "pounder.load",
    "BenchResult": "pounder.load",
    "BenchSpec": "pounder.load",
    "ByteCounts": "pounder.load",
    "ClientCpu": "pounder.load",
    "Cluster": "pounder.agents",
    "Derived": "pounder.load",
    "ErrorCounts": "pounder.load",
    "Histogram": "pounder.load",
    "HttpOptions": "pounder.load",
    "IoInfo": "pounder.load",
    "Latency": "pounder.load",
    "LoadModel": "pounder.load",
    "LoadOptions": "pounder.load",
    "OutputWriteError": "pounder.load",
    "Phases": "pounder.load",
    "Progress": "pounder.load",
    "ProgressCallback": "pounder.load",
    "ReplyRate": "pounder.load",
    "RequestCounts": "pounder.load",
    "RunOptions": "pounder.load",
    "SecondSample": "pounder.load",
    "Stage": "pounder.load",
    "Target": "pounder.load",
    "TargetInfo": "pounder.load",
    "WarmupCounts": "pounder.load",
    "GateReport": "pounder.load",
    "Scenario": "pounder.load",
    "StepStats": "pounder.load",
    "TlsCounts": "pounder.load",
    "evaluate_gates": "pounder.load",
    "parse_gates": "pounder.load",
    "read_scenario": "pounder.load",
    "bench": "pounder.agents",
    "load_result": "pounder.load",
    "render_csv": "pounder.load",
    "render_report": "pounder.load",
    "run_bench": "pounder.load",
    "run_bench_ray": "pounder.agents",
    "read_access_log": "pounder.load",
    "write_url_file": "pounder.load",
    "MemResult": "pounder.procs",
    "PoolSnapshot": "pounder.procs",
    "ServerLoadReport": "pounder.procs",
    "ServerSampler": "pounder.procs",
    "find_server": "pounder.procs",
    "load_mem": "pounder.procs",
    "max_clients": "pounder.procs",
    "snapshot": "pounder.procs",
}


def __getattr__(name: str) -> Any:
    """``pounder.bench`` and the rest, imported from their package on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pounder' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
