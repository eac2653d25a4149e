"""A tuning run: the five steps, each point measured once and stored as it is measured.

1. sizes: the children's size after warm-up and after K requests each (growth per request);
   with the other preload setting too when the adapter can start the server both ways.
2. memory bound: MaxClients from the measured sizes and the RAM budget.
3. children sweep: 1, 2, 4, … children up to the memory bound; the smallest count within a few
   percent of the best throughput, raised for ``clients`` / ``p99`` targets.
4. MaxRequestsPerChild sweep at that count: the throughput lost to respawning, and the largest
   value that keeps a (leaking) child within its share of the budget.
5. spare servers (servers that spawn children with the load): a step from idle to full load with
   the server's default spare settings and with the recommended ones.

Every point is a file in the results directory (:class:`pounder.pool.ResultsDir`); a point already there
is read instead of measured, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pounder._errors import PounderError, public
from pounder._files import utc_timestamp
from pounder._units import MIB, available_cpus, mib_unit
from pounder._version import __version__
from pounder.load import BenchResult, ProgressCallback
from pounder.pool import Adapter, PoolParams, ResultsDir, Runner, child_sizes, growth_per_request
from pounder.procs import mem_available
from pounder.tune._analysis import (
    ChildrenChoice,
    MaxRequestsChoice,
    MemoryBound,
    advice,
    burst_seconds,
    choose_children,
    choose_max_requests,
    default_spares,
    growth,
    measured_loss,
    memory_bound,
    predicted_loss,
    respawn_cost,
    spare_settings,
    steady_p99_us,
    sweep_connections,
    sweep_counts,
    sweep_done,
)
from pounder.tune._options import TuneOptions

Log = Callable[[str], None]


def _load_summary(result: BenchResult) -> dict[str, Any]:
    """The figures of a load point that the decisions and tables use."""
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
        "children_seen_spawned": 0 if server is None else server.children_spawned,
        "max_child_uss": None if server is None else server.max_child_uss,
    }


@public
def describe_point(step: str, summary: Mapping[str, Any]) -> str:
    """One line for a measured point (the log line of the run, a row of an interrupted run's report)."""
    if step == "sizes":
        end = summary["end"]
        return (f"child USS {mib_unit(end['max_uss'])} (max), shared {mib_unit(end['median_shared'])}, "
                f"growth {summary['growth_second']:,.0f} B/request")
    text = f"{summary['rps']:,.0f} req/s, p99 {summary['p99_ms']:,.1f} ms"
    if summary.get("failed"):
        text += f", {summary['failed']} failed"
    if step == "max-requests":
        text += f", {summary['respawns']} respawns"
    if step == "spare":
        text += f", {summary['idle_children']} children ready at the start"
    return text


@public
@dataclass(frozen=True)
class TuneResult:
    """What a tuning run recommends, with everything behind it."""

    adapter: Adapter
    options: TuneOptions
    params: PoolParams
    config: str
    measure: Mapping[str, Any]
    other_measure: Mapping[str, Any] | None
    memory: MemoryBound
    other_memory: MemoryBound | None
    sweep: list[Mapping[str, Any]]
    children: ChildrenChoice
    mrpc_points: list[dict[str, Any]]
    max_requests: MaxRequestsChoice
    spare: list[dict[str, Any]]
    advice: list[str]
    cores: int
    results_dir: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_version": __version__,
            "server": self.adapter.to_dict(),
            "described": self.adapter.describe(),
            "names": dict(self.adapter.names),
            "params": self.params.to_dict(),
            "config": self.config,
            "cores": self.cores,
            "measure": dict(self.measure),
            "other_measure": None if self.other_measure is None else dict(self.other_measure),
            "memory": self.memory.to_dict(),
            "other_memory": None if self.other_memory is None else self.other_memory.to_dict(),
            "sweep": [dict(p) for p in self.sweep],
            "children": self.children.to_dict(),
            "mrpc": [dict(p) for p in self.mrpc_points],
            "max_requests": self.max_requests.to_dict(),
            "spare": [dict(p) for p in self.spare],
            "advice": list(self.advice),
        }


@public
class TuneSession:
    """Runs (or resumes) the steps for ``adapter`` with ``options``, storing into ``results``.
    ``log`` receives one line per finished point; ``progress`` every bench's live progress;
    ``status`` a short label of what is being measured now."""

    def __init__(self, adapter: Adapter, options: TuneOptions, results: ResultsDir, *, log: Log | None = None,
                 progress: ProgressCallback | None = None, status: Log | None = None) -> None:
        self.adapter = adapter
        self.options = options
        self.results = results
        self._log = log or (lambda line: None)
        self._status = status or (lambda line: None)
        self.runner = Runner(adapter, results.servers_dir, options.path, options.memory_floor, options.timeout_s,
                             progress)
        self.cores = available_cpus()

    # -- points -----------------------------------------------------------------------------

    def _point(self, key: str, step: str, params: PoolParams, label: str,
               measure: Callable[[], tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
        """The stored summary of point ``key``, measuring it first if it is not stored yet."""
        stored = self.results.load_point(key)
        if stored is not None:
            summary: dict[str, Any] = stored["summary"]
            return summary
        self._status(label)
        started = utc_timestamp()
        summary, detail = measure()
        self.results.save_point(key, {"step": step, "params": params.to_dict(), "started_at": started,
                                      "finished_at": utc_timestamp(), "summary": summary, **detail})
        self._log(f"{label}: {describe_point(step, summary)}")
        return summary

    def _sizes_point(self, key: str, params: PoolParams) -> dict[str, Any]:
        runner = self.runner
        half = max(1, self.options.requests_per_child // 2)

        def measure() -> tuple[dict[str, Any], dict[str, Any]]:
            with runner.started(params) as server:
                cold = runner.snapshot(server)
                warmed = runner.warm(server)
                warm = runner.snapshot(server)
                count = warm.totals.children
                if count < 1:
                    raise PounderError(f"the server (pid {server.pid}) runs no child process to measure: is it a "
                                       "pre-forking server, and does it fork before answering?")
                first = runner.bench(server, count, requests=half * count)
                mid = runner.snapshot(server)
                second = runner.bench(server, count, requests=half * count)
                end = runner.snapshot(server)
                available = mem_available()
            done_first = first.requests.complete + first.requests.failed
            done_second = second.requests.complete + second.requests.failed
            # growth per request served: a failed request is not one the children handled
            served_first, served_second = first.completed_requests, second.completed_requests
            if not served_first or not served_second:
                failed = first.requests.failed + second.requests.failed
                raise PounderError(f"the server (pid {server.pid}) completed no request in a half of the sizes "
                                   f"measurement ({failed:,} failed): its memory growth per request cannot be "
                                   "measured")  # fmt: skip
            summary = {
                "children": count,
                "warmed": warmed.warmed,
                "warm_requests": warmed.requests,
                "preload": self.adapter.with_preload(params),
                "parent": {"rss": end.parent.rss, "uss": end.parent.private, "shared": end.parent.shared,
                           "pss": end.parent.pss},
                "cold": child_sizes(cold), "warm": child_sizes(warm), "mid": child_sizes(mid), "end": child_sizes(end),
                "requests_first": done_first,
                "requests_second": done_second,
                "failed": first.requests.failed + second.requests.failed,
                "growth_first": growth_per_request(warm, mid, served_first),
                "growth_second": growth_per_request(mid, end, served_second),
                "sharing": end.totals.median_sharing,
                "mem_available": available,
            }
            snapshots = {name: snap.to_dict() for name, snap in
                         (("cold", cold), ("warm", warm), ("mid", mid), ("end", end))}
            return summary, {"snapshots": snapshots, "bench": [first.to_dict(), second.to_dict()]}

        label = f"sizes ({params.max_clients} children{', preload' if self.adapter.with_preload(params) else ''})"
        return self._point(key, "sizes", params, label, measure)

    def _load_point(self, key: str, step: str, params: PoolParams, connections: int, label: str, *,
                    warm_rounds: bool = True, duration: float | None = None) -> dict[str, Any]:
        runner = self.runner

        def measure() -> tuple[dict[str, Any], dict[str, Any]]:
            with runner.started(params) as server:
                warmed = runner.warm(server, rounds=None if warm_rounds else 1)
                result = runner.bench(server, connections, duration=duration or self.options.point_s)
            summary = {"children": params.max_clients, "max_requests": params.max_requests,
                       "connections": connections, "warmed": warmed.warmed, **_load_summary(result)}
            done = summary["complete"] + summary["failed"]
            summary["respawns"] = done // params.max_requests if params.max_requests else 0
            return summary, {"bench": result.to_dict()}

        return self._point(key, step, params, label, measure)

    def _spare_point(self, key: str, params: PoolParams, burst: int, label: str) -> dict[str, Any]:
        runner = self.runner
        start, low, high = params.fixed()

        def measure() -> tuple[dict[str, Any], dict[str, Any]]:
            with runner.started(params) as server:
                time.sleep(1.0)  # idle: the parent settles its spare children
                idle = len(server.children())
                result = runner.bench(server, burst, duration=max(4.0, self.options.point_s))
            series = [{"second": s.second, "complete": s.complete, "p99_us": s.p99_us} for s in result.series]
            steady = steady_p99_us(series)
            summary = {"children": params.max_clients, "start_servers": start, "min_spare": low, "max_spare": high,
                       "connections": burst, "idle_children": idle, "series": series,
                       "steady_p99_ms": None if steady is None else steady / 1000,
                       "first_p99_ms": series[0]["p99_us"] / 1000 if series and series[0]["complete"] else None,
                       **_load_summary(result)}
            return summary, {"bench": result.to_dict()}

        return self._point(key, "spare", params, label, measure)

    # -- the run ----------------------------------------------------------------------------

    def run(self) -> TuneResult:
        options, adapter = self.options, self.adapter
        measure_n = min(options.measure_children, options.max_children)
        measure = self._sizes_point("sizes", PoolParams(measure_n))
        other = other_memory = None
        if adapter.preload_toggle and options.compare_preload:
            flipped = not adapter.preload
            other = self._sizes_point(f"sizes-preload-{'on' if flipped else 'off'}",
                                      PoolParams(measure_n, preload=flipped))
            other_memory = memory_bound(other, options.ram, options.safety_margin)
        memory = memory_bound(measure, options.ram, options.safety_margin)
        if memory.max_clients < 1:
            raise PounderError(f"not even one child fits the RAM budget of {memory.ram / MIB:.0f} MiB "
                               f"(shared {memory.shared / MIB:.0f} MiB, child {memory.child_uss / MIB:.0f} MiB)")
        self._log(f"memory bound: {memory.max_clients} children in {memory.ram / MIB:,.0f} MiB "
                  f"({memory.max_clients_no_sharing} if nothing were shared)")

        cap = min(memory.max_clients, options.max_children)
        sweep: list[Mapping[str, Any]] = []
        for count in sweep_counts(cap):
            self._check_fits(count, memory)
            connections = sweep_connections(count, options.clients)
            sweep.append(self._load_point(f"children-{count}", "children", PoolParams(count), connections,
                                          f"{count} children, {connections} clients"))
            if sweep_done(sweep, options.tolerance):
                break
        choice = choose_children(sweep, memory.max_clients, clients=options.clients, p99_s=options.p99_s,
                                 tolerance=options.tolerance)

        mrpc_n = min(choice.chosen, options.max_children)
        self._check_fits(mrpc_n, memory)
        mrpc_points: list[dict[str, Any]] = []
        for value in options.mrpc_values:
            connections = sweep_connections(mrpc_n, None)
            mrpc_points.append(self._load_point(f"mrpc-{mrpc_n}-{value}", "max-requests",
                                                PoolParams(mrpc_n, max_requests=value), connections,
                                                f"MaxRequestsPerChild {value or 'unlimited'} ({mrpc_n} children)",
                                                warm_rounds=False))
        cost = respawn_cost(mrpc_points)
        for point in mrpc_points:
            point["loss_measured"] = measured_loss(point, mrpc_points)
            point["loss_model"] = predicted_loss(int(point["max_requests"]), cost)
        mrpc = choose_max_requests(mrpc_points, measure, memory, choice.chosen, max_loss=options.max_loss,
                                   counts=adapter.max_requests_counts)

        spare: list[dict[str, Any]] = []
        spares: tuple[int | None, int | None, int | None] = (None, None, None)
        if adapter.on_demand:
            self._check_fits(choice.chosen, memory)
            burst = min(options.clients or choice.chosen, options.max_children)
            before = default_spares(choice.chosen)
            after = spare_settings(choice.chosen, burst)
            for name, (start, low, high) in (("before", before), ("after", after)):
                params = PoolParams(choice.chosen, max_requests=mrpc.value, start_servers=start, min_spare=low,
                                    max_spare=high)
                point = dict(self._spare_point(f"spare-{name}", params, burst,
                                               f"spare servers {name}: StartServers {start}, MinSpare {low}, "
                                               f"MaxSpare {high}, burst of {burst} clients"))
                point["name"] = name
                spare.append(point)
            spares = after
            steady = [float(p["steady_p99_ms"]) for p in spare if p["steady_p99_ms"] is not None]
            reference = min(steady) * 1000 if steady else 0.0
            for point in spare:  # against the best steady latency: the "before" run may never get there
                point["reference_p99_ms"] = reference / 1000
                point["burst_s"] = burst_seconds(point["series"], reference)
        params = PoolParams(choice.chosen, max_requests=mrpc.value, start_servers=spares[0], min_spare=spares[1],
                            max_spare=spares[2], preload=adapter.preload)
        said = advice(adapter.kind, measure, other, memory, other_memory, sweep, choice, self.cores)
        if growth(measure).leak and mrpc.forced_by_memory:
            said.append("the leak forces frequent respawns at this many children: fix the leak, or give each child "
                        "more room (fewer children, more RAM)")
        return TuneResult(adapter=adapter, options=options, params=params, config=adapter.render(params),
                          measure=measure, other_measure=other, memory=memory, other_memory=other_memory, sweep=sweep,
                          children=choice, mrpc_points=mrpc_points, max_requests=mrpc, spare=spare, advice=said,
                          cores=self.cores, results_dir=str(self.results.path))

    def _check_fits(self, children: int, memory: MemoryBound) -> None:
        """Never start a configuration whose predicted memory exceeds the budget."""
        predicted = memory.shared + children * memory.child_uss
        if predicted > memory.ram:
            raise PounderError(f"{children} children would need {predicted / MIB:,.0f} MiB, more than the budget "
                               f"of {memory.ram / MIB:,.0f} MiB")


def manifest(adapter: Adapter, options: TuneOptions) -> dict[str, Any]:
    """What ``tune.json`` records about a run (enough to resume it)."""
    return {"tool_version": __version__, "started_at": utc_timestamp(), "adapter": adapter.to_dict(),
            "options": options.to_dict(),
            "machine": {"cpus": available_cpus(), "mem_available": mem_available(), "hostname": os.uname().nodename}}
