"""pounder: benchmarking toolkit for pre-forking web servers.

The library is the API; the ``pounder`` CLI is a thin layer over it::

    import pounder

    result = pounder.bench("http://127.0.0.1:8080/", connections=20, duration="30s")
    print(result.derived.requests_per_s)
    print(pounder.render_report(result))

Importing this package does not load the Rust engine (``pounder._engine``); :func:`bench` does.
"""

from pounder._errors import PounderError, UsageError
from pounder._version import __version__
from pounder.load import (
    SCHEMA,
    BenchResult,
    BenchSpec,
    ByteCounts,
    ClientCpu,
    Derived,
    ErrorCounts,
    Histogram,
    HttpOptions,
    Latency,
    LoadModel,
    LoadOptions,
    Phases,
    Progress,
    ProgressCallback,
    ReplyRate,
    RequestCounts,
    RunOptions,
    SecondSample,
    Stage,
    Target,
    TargetInfo,
    WarmupCounts,
    bench,
    load_result,
    render_csv,
    render_report,
    run_bench,
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

__all__ = [
    "SCHEMA",
    "BenchResult",
    "BenchSpec",
    "ByteCounts",
    "ClientCpu",
    "Derived",
    "ErrorCounts",
    "Histogram",
    "HttpOptions",
    "Latency",
    "LoadModel",
    "LoadOptions",
    "MemResult",
    "Phases",
    "PoolSnapshot",
    "PounderError",
    "Progress",
    "ProgressCallback",
    "ReplyRate",
    "RequestCounts",
    "RunOptions",
    "SecondSample",
    "ServerLoadReport",
    "ServerSampler",
    "Stage",
    "Target",
    "TargetInfo",
    "UsageError",
    "WarmupCounts",
    "__version__",
    "bench",
    "find_server",
    "load_mem",
    "load_result",
    "max_clients",
    "render_csv",
    "render_report",
    "run_bench",
    "snapshot",
]
