"""A tuning run: the steps, each sweep point measured in interleaved trials, every trial stored as
it is measured.

1. sizes: the children's size once they are warm (every child served requests, USS and
   throughput stopped moving) and after K requests each (growth per request); with the other
   preload setting too when the adapter can start the server both ways; how long a fresh child
   takes to serve.
2. memory bound: MaxClients from the measured sizes and the RAM budget.
3. children sweep: 1, 2, 4, ... children up to the memory bound, in ``trials`` interleaved
   rounds (:mod:`pounder.tune._points`: medians and intervals, wide points measured again);
   the pool sized by the method (:func:`~pounder.tune.size_pool`).
4. MaxRequestsPerChild sweep at the throughput knee, the unlimited baseline interleaved with the
   values in every round, so that each value's loss has an interval.
5. spare servers (servers that spawn children with the load): a step from idle to the target's
   concurrency with the server's default spare settings and with the recommended ones.
6. confirmation: the recommended configuration started, warmed and held at the target load;
   footprint, p99 and failures checked against their limits.

Every trial is a file in the results directory (:class:`pounder.pool.ResultsDir`); one already there
is read instead of measured, so an interrupted run resumes where it stopped, deciding the same."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pounder import _interrupt
from pounder._errors import PounderError, public
from pounder._files import utc_timestamp
from pounder._tune_point import TunePoint, tune_points
from pounder._tune_run import OfferedLoad, Target
from pounder._units import MIB, available_cpus, children_text, count_text
from pounder.load import ENGINE, ProgressCallback, Sender
from pounder.pool import (
    Adapter,
    PoolParams,
    ResultsDir,
    Runner,
    Workload,
)
from pounder.servers import Pod
from pounder.tune._advice import advice, advises_preload, unsharing_remedy
from pounder.tune._analysis import (
    ChildrenChoice,
    size_pool,
    sweep_connections,
    sweep_counts,
    sweep_done,
)
from pounder.tune._confirm import confirmation_checks, lower_pool, lowered_pool
from pounder.tune._fleet import plan_fleet
from pounder.tune._leak import child_limit, room_for_growth
from pounder.tune._life import Life, life_curve, life_targets, may_decide
from pounder.tune._life_step import measure_life
from pounder.tune._load import load_summary
from pounder.tune._machine import cpus_for
from pounder.tune._memory import MemoryBound, growth, memory_bound
from pounder.tune._mrpc import (
    MaxRequestsChoice,
    choose_max_requests,
    mrpc_losses,
    unlimited_only,
)
from pounder.tune._options import TuneOptions
from pounder.tune._points import neighbour_busy, still_growing
from pounder.tune._pools import (
    SWEPT_NOTE,
    PoolChoice,
    apply_pool,
    between_for,
    choose_pool,
    needs,
    offered_load,
    pool_candidates,
    swept_at_offered,
)
from pounder.tune._progress import StepProgress
from pounder.tune._result import TuneResult
from pounder.tune._shapes import apply_shape
from pounder.tune._sizes import measure_sizes
from pounder.tune._spare_step import measure_spares
from pounder.tune._summary import describe_point, summarize
from pounder.tune._sweep import Plan, interleaved
from pounder.tune._threads_step import measure_shapes
from pounder.tune._why import deciding_facts

Log = Callable[[str], None]


@public
class TuneSession:
    """Runs (or resumes) the steps for ``adapter`` with ``options``, storing into ``results``.
    ``log`` receives one line per finished point; ``progress`` every bench's live progress;
    ``status`` a short label of what is being measured now."""

    def __init__(self, adapter: Adapter, options: TuneOptions, results: ResultsDir, *, log: Log | None = None,
                 progress: ProgressCallback | None = None, status: Log | None = None,
                 sender: Sender = ENGINE, measured_on: tuple[int, str] | None = None) -> None:
        self.adapter = adapter
        self.options = options
        self.results = results
        self._log = log or (lambda line: None)
        self._status = status or (lambda line: None)
        server_cpus, load_cpus, self.cpus_note = cpus_for(options, sender)
        workload = Workload(path=options.path, targets=options.targets, keepalive=options.keepalive,
                            throttle=options.throttle)
        self.runner = Runner(adapter, results.servers_dir, workload, options.memory_floor, options.timeout_s,
                             progress, server_cpus=server_cpus, load_cpus=load_cpus, host=options.listen,
                             sender=sender, log=self._log,
                             pod=None if options.cpus is None else Pod(options.cpus, options.ram))
        # a resumed run decides with the CPUs it was measured on (and measures nothing on others); a pod: its quota
        machine = len(server_cpus) if server_cpus else available_cpus()
        self._cores_here: float = options.cpus or machine
        self.cores = self._cores_here if measured_on is None or options.cpus else measured_on[0]
        # the CPUs the server may run on: a neighbour is measured against these, not a pod's quota
        self.machine_cores: float = machine if measured_on is None else measured_on[0]
        if measured_on is not None and measured_on[0] != self._cores_here and not options.cpus:
            self.cpus_note = measured_on[1]
        self.sweeps_threads = options.sweep_threads and adapter.threaded and not adapter.threads_fixed
        steps = ["sizes", "children", "pools", *(["threads"] if self.sweeps_threads else []), "max-requests",
                 *(["spare"] if adapter.on_demand else []),
                 *(["confirm"] if options.confirm else [])]
        steps[1:1] = ["life"] if options.life else []  # the children of the sizes followed over their life
        between = between_for(options.quick) + 2
        values = len(options.mrpc_values) if any(options.mrpc_values) else 0
        self.progress = StepProgress(steps, {
            "sizes": 2 if adapter.preload_toggle and options.compare_preload else 1, "life": 1,
            "children": len(sweep_counts(options.max_children)) * options.trials,
            "pools": between * options.trials, "threads": 4 * options.trials, "max-requests": values * options.trials,
            "spare": 2 * options.trials, "confirm": 1})
        self._stored: dict[str, Mapping[str, Any]] | None = None
        """The stored points as the summary needs them (read once, then kept as they are saved)."""
        self._memory: MemoryBound | None = None
        self._killer_requests = 0  # without a request limit: what a leaking child may serve (0: no leak)
        self._threads: int | None = None  # the threads of each child chosen by the shapes (None: not compared)

    # -- points -----------------------------------------------------------------------------

    def _summarize(self, key: str, point: Mapping[str, Any]) -> None:
        """``summary.json`` rewritten with the point just stored: what the run derives from its
        points so far, for a report of the run should it not finish."""
        def kept(point: Mapping[str, Any]) -> dict[str, Any]:  # not its bench: the summary reads none
            return {name: point[name] for name in ("key", "step", "finished_at", "summary") if name in point}

        if self._stored is None:
            self._stored = {str(p.get("key")): kept(p) for p in self.results.points()}
        self._stored[key] = kept({"key": key, **point})
        self.results.save_summary(summarize(self.options, list(self._stored.values()), self._memory))

    def _point(self, key: str, step: str, params: PoolParams, label: str,
               measure: Callable[[], tuple[dict[str, Any], dict[str, Any]]],
               logged: str | None = None) -> dict[str, Any]:
        """The stored summary of point ``key``, measuring it first if it is not stored yet."""
        stored = self.results.load_point(key)
        if stored is not None and stored.get("params") != params.to_dict():
            if step != "confirm":
                raise PounderError(f"{self.results.path}/points/{key}.json was measured with other pool parameters "
                                   "(an earlier pounder measured this run): start a new run instead of resuming it")
            # a resumed run whose points now decide another configuration: its confirmation is new
            self._log(f"the stored {key} was of {children_text(int(stored['params']['max_clients']))}: measured "
                      f"again for the configuration recommended now")
            stored = None
        if stored is not None:
            self.progress.skipped(step)
            summary: dict[str, Any] = stored["summary"]
            return summary
        if self.cores != self._cores_here:
            raise PounderError(f"{self.results.path} was measured with {self.cores} CPUs for the server and this "
                               f"machine gives it {self._cores_here}: {key} cannot be measured here and compared "
                               "with the stored points; start a new run")
        self.progress.start(step)
        self._status(f"{self.progress.where(step)}: {label}")
        started = utc_timestamp()
        summary, detail = measure()
        point = {"step": step, "params": params.to_dict(), "started_at": started, "finished_at": utc_timestamp(),
                 "summary": summary, **detail}
        with _interrupt.deferred():  # a point stored is in summary.json too, whatever signal comes between
            self.results.save_point(key, point)
            self._summarize(key, point)
        self.progress.measured(step)
        self._log(f"[{self.progress.where(step)}] {logged or label}: {describe_point(step, summary)}")
        return summary

    def _sizes_point(self, key: str, params: PoolParams) -> dict[str, Any]:
        half = max(1, self.options.requests_per_child // 2)
        label = f"sizes ({children_text(params.max_clients)}{', preload' if self.adapter.with_preload(params) else ''})"
        return self._point(key, "sizes", params, label, lambda: measure_sizes(self.runner, self.adapter, params, half))

    def _life_step(self) -> Life | None:
        """The children of the size measurement followed over their life (point ``life``,
        :mod:`pounder.tune._life_step`); None with ``--life 0``."""
        targets = life_targets(self.options.requests_per_child, self.options.life)
        if not targets:
            return None
        params = PoolParams(min(self.options.measure_children, self.options.max_children))
        label = f"life ({children_text(params.max_clients)} to {targets[-1]:,} requests each)"
        summary = self._point("life", "life", params, label,
                              lambda: measure_life(self.runner, self.adapter, params, targets))
        return life_curve(summary)

    def _trial(self, key: str, step: str, params: PoolParams, connections: int, trial: int, label: str, *,
               warm_rounds: bool = True, rate: float | None = None, again: bool = False) -> dict[str, Any]:
        """One stored trial of a sweep point (point file ``KEY-tN``, ``KEY-tN-again`` when measured
        once more for a busy neighbour): the server started, warmed, loaded for ``point_s`` (open
        loop at ``rate`` when given), stopped; with ``params.threads`` (a shape), its memory
        measured after the load too."""
        runner = self.runner

        def measure() -> tuple[dict[str, Any], dict[str, Any]]:
            with runner.started(params) as server:
                warmed = runner.warm(server, rounds=None if warm_rounds else 1)
                queue = runner.queue_watch(server)
                result = runner.bench(server, connections, duration=self.options.point_s, queue=queue, rate=rate)
                after = None if params.threads is None else runner.snapshot(server)
            memory = {} if after is None else {
                "threads": params.threads, "footprint": after.totals.footprint,
                "child_uss": _median_of([c.private for c in after.children]),
                "child_shared": _median_of([c.shared for c in after.children])}
            summary = {"children": params.max_clients, "max_requests": params.max_requests, "trial": trial,
                       "connections": connections, "rate": rate, "warmed": warmed.warmed, "settled": warmed.settled,
                       **load_summary(result, runner.pod_reading), "queued": queue.share,
                       "server_status": queue.server_status, **memory}
            done = summary["complete"] + summary["failed"]
            summary["respawns"] = done // params.max_requests if params.max_requests else 0
            summary.update(neighbour=neighbour_busy(summary, self.machine_cores), **({"again": True} if again else {}))
            return summary, {"bench": result.to_dict()}

        again_text = " again (other processes were busy)" if again else ""
        return self._point(f"{key}-t{trial}{'-again' if again else ''}", step, params,
                           f"{label}, trial {trial}{again_text}", measure, logged=label + again_text)

    def _sweep(self, step: str, plan: Plan, rounds: int, *, warm_rounds: bool = True,
               rate: float | None = None) -> list[TunePoint]:
        """Rounds of interleaved trials over ``plan`` (:func:`pounder.tune._sweep.interleaved`), the
        points read as records."""
        self.progress.expect(step, len(plan) * rounds)
        return tune_points(interleaved(plan, rounds, lambda key, params, connections, number, label, again: self._trial(
            key, step, params, connections, number, label, warm_rounds=warm_rounds, rate=rate, again=again)), step)

    def _children_sweep(self, memory: MemoryBound) -> list[TunePoint]:
        """1, 2, 4, ... children up to the memory bound: a first round stops where two counts in a
        row add nothing, the other rounds measure the same counts again (interleaved); when the
        medians say throughput still grows at the largest count, the next count is added."""
        options = self.options
        cap = min(memory.max_clients, options.max_children)
        counts = sweep_counts(cap)
        plan = []

        def entry(count: int) -> tuple[str, PoolParams, int, str]:
            self._check_fits(count, memory)
            connections = sweep_connections(count, options.clients, keepalive=options.keepalive)
            label = f"{children_text(count)}, {count_text(connections, 'client')}"
            return f"children-{count}", PoolParams(count), connections, label

        first: list[dict[str, Any]] = []
        for count in counts:
            plan.append(entry(count))
            key, params, connections, label = plan[-1]
            first.append(self._trial(key, "children", params, connections, 1, label))
            if sweep_done([float(t["rps"]) for t in first], options.tolerance):
                break
        points = self._sweep("children", plan, options.trials)
        while len(plan) < len(counts) and not sweep_done([p.rps for p in points], options.tolerance) and still_growing(
                points, options.tolerance):
            plan.append(entry(counts[len(plan)]))
            points = self._sweep("children", plan, options.trials)
        return points

    def _confirm(self, params: PoolParams, memory: MemoryBound, target: Target, offered: OfferedLoad,
                 best: TunePoint | None, key: str = "confirm") -> dict[str, Any]:
        """The recommended configuration started, every child warmed, held at the offered load for
        one point; each figure checked against its limit (throughput against ``best``, the best
        pool measured at that load)."""
        runner, options = self.runner, self.options
        rate, connections = offered.rate, offered.connections

        def measure() -> tuple[dict[str, Any], dict[str, Any]]:
            with runner.started(params) as server:
                warmed = runner.warm(server)
                with runner.memory_peak(server) as peak:  # the pod's memory: the most its cgroup is charged
                    result = runner.bench(server, connections, duration=max(5.0, options.point_s), rate=rate)
                after = runner.snapshot(server)
            stages = result.options.load.stages or ()
            scheduled = round(sum(st.duration_s * (st.start_rate + st.end_rate) / 2 for st in stages)) \
                if rate is not None else None
            summary = {"children": params.max_clients, "max_requests": params.max_requests,
                       "connections": connections, "rate": rate, "scheduled": scheduled, "warmed": warmed.warmed,
                       "pool_children": after.totals.children, **load_summary(result, runner.pod_reading),
                       "footprint": after.totals.footprint, "max_child_uss_after": max(
                           (c.private for c in after.children), default=None), "cgroup_peak": peak.reading()}
            return summary, {"bench": result.to_dict(), "snapshot": after.to_dict()}

        load = f"{rate:,.0f} req/s" if rate is not None else f"{connections} clients"
        summary = dict(self._point(key, "confirm", params,
                                   f"confirmation: the recommended {children_text(params.max_clients)} at {load}",
                                   measure,
                                   logged="confirmation"))
        summary["checks"] = confirmation_checks(summary, memory, target, options.p99_s, best=best,
                                                tolerance=options.tolerance)
        summary["ok"] = all(check["ok"] for check in summary["checks"])
        return summary

    # -- the run ----------------------------------------------------------------------------

    def target(self) -> Target:
        """What the pool must answer, from the options."""
        options = self.options
        # no transfer_s / keepalive_idle_s: the sweep loads the server directly, with the slow
        # clients and kept-alive connections themselves, so its busy time per request includes them
        return Target(clients=options.clients, peak_rate=options.peak_rate, source=options.peak_source or "--peak-rate",
                      p99_s=options.p99_s, keepalive=options.keepalive, proxy=options.proxy)

    def _sizes_step(self) -> tuple[dict[str, Any], dict[str, Any] | None, MemoryBound, MemoryBound | None]:
        """The sizes (with the other preload setting when the adapter can start it) and the memory bound."""
        options, adapter = self.options, self.adapter
        measure_n = min(options.measure_children, options.max_children)
        measure = self._sizes_point("sizes", PoolParams(measure_n))
        other = other_memory = None
        if adapter.preload_toggle and options.compare_preload:
            flipped = not adapter.preload
            other = self._sizes_point(f"sizes-preload-{'on' if flipped else 'off'}",
                                      PoolParams(measure_n, preload=flipped))
            other_memory = memory_bound(other, options.ram, options.safety_margin, options.ram_source)
        memory = memory_bound(measure, options.ram, options.safety_margin, options.ram_source)
        if memory.max_clients < 1:
            raise PounderError(f"not even one child fits the RAM budget of {memory.ram / MIB:.0f} MiB "
                               f"(shared {memory.shared / MIB:.0f} MiB, child {memory.child_uss / MIB:.0f} MiB)")
        self._log(f"memory bound: {children_text(memory.max_clients)} in {memory.ram / MIB:,.0f} MiB "
                  f"({memory.max_clients_no_sharing} if nothing were shared)")
        return measure, other, memory, other_memory

    def _pools_step(self, choice: ChildrenChoice, memory: MemoryBound, target: Target, offered: OfferedLoad,
                    sweep: Sequence[TunePoint]) -> PoolChoice | None:
        """Candidate pools measured at the offered load in interleaved trials (:mod:`pounder.tune._pools`);
        None when every connection holds a child (the pool covers them: nothing to compare)."""
        if offered.held:
            return None
        options = self.options
        candidates = pool_candidates(choice.throughput, offered, memory, options.max_children, needs=needs(choice),
                                     between=between_for(options.quick))
        swept = swept_at_offered(candidates, sweep, offered, needs(choice))
        if swept is not None:  # the sweep ran at this very load: its points are compared, nothing measured again
            self.progress.expect("pools", 0)
            decided = choose_pool(swept, offered, target, tolerance=options.tolerance, cores=self.cores, sweep=sweep)
            return replace(decided, reasons=[SWEPT_NOTE.format(offered.short()), *decided.reasons])
        plan = []
        for n in candidates:
            self._check_fits(n, memory)
            plan.append((f"pool-{n}", PoolParams(n), offered.connections, f"{children_text(n)} at {offered.short()}"))
        points = self._sweep("pools", plan, options.trials, rate=offered.rate)
        return choose_pool(points, offered, target, tolerance=options.tolerance, cores=self.cores, sweep=sweep)

    def _mrpc_step(self, choice: ChildrenChoice, measure: Mapping[str, Any], memory: MemoryBound,
                   offered: OfferedLoad, life: Life | None = None, threaded: tuple[int, int] | None = None
                   ) -> tuple[list[TunePoint], MaxRequestsChoice, ChildrenChoice]:
        """MaxRequestsPerChild measured on the chosen pool at the offered load, the unlimited
        baseline interleaved; the pool lowered when a leaking child needs room to grow (a child
        starting larger by what the chosen shape's ``threaded`` add)."""
        options, adapter = self.options, self.adapter
        n = choice.chosen
        self._check_fits(n, memory)
        # no leak: unlimited whatever the values cost, so only the largest is measured (its cost reported)
        # (nor without unsharing that may decide it: a limit from the unsharing is costed as a leak's)
        values = options.mrpc_values if growth(measure).leak or may_decide(life) else (0, max(options.mrpc_values))
        shape = "" if self._threads is None else f"x{self._threads}"
        plan = [(f"mrpc-{n}{shape}-{value}-at-{offered.connections}",
                 PoolParams(n, max_requests=value, threads=self._threads),
                 offered.connections, f"MaxRequestsPerChild {value or 'unlimited'} ({children_text(n)}, "
                 f"{offered.short()})") for value in values]
        if not any(options.mrpc_values) or not adapter.request_limit:  # unlimited alone: nothing to compare
            plan = []
        points = mrpc_losses(self._sweep("max-requests", plan, options.trials, warm_rounds=False, rate=offered.rate))
        choice = room_for_growth(choice, points, measure, memory, max_loss=options.max_loss,
                                 counts=adapter.max_requests_counts, target=self.target().load, threaded=threaded)
        mrpc = choose_max_requests(points, measure, memory, choice.chosen, max_loss=options.max_loss,
                                   counts=adapter.max_requests_counts, kind=adapter.kind, life=life,
                                   threaded=threaded)
        if not adapter.request_limit:  # what a leak would need goes to the worker killer (advice)
            mrpc, self._killer_requests = unlimited_only(mrpc, adapter.who)
        return points, mrpc, choice

    def run(self) -> TuneResult:
        options, adapter = self.options, self.adapter
        measure, other, memory, other_memory = self._sizes_step()
        self._memory = memory
        life = self._life_step()
        target = self.target()
        sweep = self._children_sweep(memory)
        offered = offered_load(target, memory, options.max_children)
        choice = size_pool(sweep, memory, target, tolerance=options.tolerance, max_children=options.max_children,
                           cores=self.cores, kind=adapter.kind, decide=offered.held)
        pools = self._pools_step(choice, memory, target, offered, sweep)
        if pools is not None:
            choice = apply_pool(choice, pools)
        shaped = measure_shapes(self, choice, memory, target, offered, pools) if self.sweeps_threads else None
        if shaped is not None:
            choice = apply_shape(choice, shaped)
            self._threads = shaped.threads
        mrpc_points, mrpc, choice = self._mrpc_step(choice, measure, memory, offered, life,
                                                    None if shaped is None else shaped.thread_memory())
        spare, spare_choice, spares = measure_spares(self, choice, target, memory, mrpc.value, offered,
                                                     measure.get("child_start_s"), self._threads)
        # a server without a request limit runs unlimited; its users' worker killer gets the limit (advice)
        params = PoolParams(choice.chosen, max_requests=mrpc.value if adapter.request_limit else 0,
                            start_servers=spares[0], min_spare=spares[1], max_spare=spares[2], preload=adapter.preload,
                            threads=self._threads)
        # the confirmation is held against the best measured at the offered load: the best shape when shapes were
        best = None if pools is None else pools.point(pools.best)
        if shaped is not None:
            best = shaped.point(shaped.best)
        confirmation = self._confirm(params, memory, target, offered, best) if options.confirm else None
        fewer = lowered_pool(confirmation, memory)
        if confirmation is not None and fewer is not None:
            # the measured footprint beats the sizes' prediction: fewer children, confirmed again
            choice = lower_pool(choice, fewer, confirmation, memory)
            kept = [None if value is None else min(value, fewer) for value in spares]
            params = replace(params, max_clients=fewer, start_servers=kept[0], min_spare=kept[1], max_spare=kept[2])
            self._log(choice.reasons[-1])
            first = confirmation
            confirmation = self._confirm(params, memory, target, offered, best, key="confirm-lowered")
            confirmation["lowered_from"] = {"children": first["children"], "footprint": first["footprint"]}
        said = advice(adapter.kind, measure, other, memory, other_memory, sweep, choice, self.cores,
                      machine=self.machine_cores)
        if growth(measure).leak and mrpc.forced_by_memory:
            said.append("the leak forces frequent respawns at this many children: fix the leak, or give each child "
                        "more room (fewer children, more RAM)")
        said += unsharing_remedy(adapter, life, mrpc)
        said += filter(None, [adapter.size_limit(child_limit(measure, memory, mrpc, params.max_clients,
                                                             self._killer_requests))])
        why = deciding_facts(adapter.names, choice, pools, memory, mrpc, spare_choice, options.max_children, shaped)
        return TuneResult(adapter=adapter, options=options, params=params,
                          config=adapter.render_advised(params, keepalive=options.keepalive, preload_advised=(
                              advises_preload(adapter.kind, measure, other, memory, other_memory))),
                          measure=measure, other_measure=other, memory=memory, other_memory=other_memory, sweep=sweep,
                          children=choice, mrpc_points=mrpc_points, max_requests=mrpc, spare=spare, advice=said,
                          cores=self.cores, results_dir=str(self.results.path), target=target,
                          confirmation=confirmation, workload=self.runner.workload.describe(),
                          cpus=self.cpus_note, offered=offered, pools=pools, spare_choice=spare_choice, why=why,
                          shapes=shaped,
                          fleet=plan_fleet(options, confirmation, measure, memory, params.max_clients,
                                           params.max_requests, self._killer_requests, self.cores,
                                           adapter.names["max_requests"]), life=life)

    def _check_fits(self, children: int, memory: MemoryBound) -> None:
        """Never start a configuration whose predicted memory exceeds the budget."""
        predicted = memory.shared + children * memory.child_uss
        if predicted > memory.ram:
            raise PounderError(f"{children_text(children)} would need {predicted / MIB:,.0f} MiB, more than the budget "
                               f"of {memory.ram / MIB:,.0f} MiB")


def _median_of(values: Sequence[int]) -> int | None:
    """The median of ``values`` in whole bytes (None when there are none)."""
    return round(statistics.median(values)) if values else None
