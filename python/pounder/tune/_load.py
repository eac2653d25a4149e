"""The figures of one measured load that the decisions and tables use (a trial's summary)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pounder.results import BenchResult


def load_summary(result: BenchResult, pod: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The figures of a load point that the decisions and tables use; with ``pod`` (the runner's
    :attr:`~pounder.pool.Runner.pod_reading` of this load, ``--cpus``) the server's cgroup's own
    figures: ``pod_cores``, ``throttled_share``, ``throttled_s``, ``oom_kills`` ...
    (:func:`pounder.pool.pod_figures`)."""
    corrected = result.latency.corrected.percentiles
    elapsed = result.elapsed_s or 1e-9
    server = result.server
    return {
        "complete": result.requests.complete,
        "failed": result.requests.failed,
        "non_2xx": result.requests.non_2xx,
        "errors": result.errors.nonzero(),
        "elapsed_s": result.elapsed_s,
        "rps": result.derived.requests_per_s,
        "p50_ms": corrected["50"] / 1000,
        "p95_ms": corrected["95"] / 1000,
        "p99_ms": corrected["99"] / 1000,
        "server_cpu_us": result.derived.server_cpu_us_per_request,
        "server_cores": 0.0 if server is None else server.server_cpu_s / max(server.duration_s, 1e-9),
        "client_cores": (result.client_cpu.user_s + result.client_cpu.sys_s) / elapsed,
        "other_cores": None if server is None or server.other_cpu_s is None
        else server.other_cpu_s / max(server.duration_s, 1e-9),
        "front_cores": None if server is None or server.front_cpu_s is None
        else server.front_cpu_s / max(server.duration_s, 1e-9),
        "children_seen_spawned": 0 if server is None else server.children_spawned,
        "max_child_uss": None if server is None else server.max_child_uss,
        **(pod or {}),
    }
