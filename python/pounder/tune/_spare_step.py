"""The spare-server step of a tuning run, measured (:func:`measure_spares`): the server's default spare
settings and the recommended ones, each a burst from idle to the offered load in interleaved
trials (points ``spare-NAME-tN``), decided by :mod:`pounder.tune._spare`."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pounder._tune_point import TunePoint, present
from pounder._tune_run import OfferedLoad, SpareChoice, Target
from pounder.pool import PoolParams
from pounder.tune._analysis import ChildrenChoice
from pounder.tune._load import load_summary
from pounder.tune._memory import MemoryBound
from pounder.tune._spare import aggregate_spare, choose_spare, reference_us
from pounder.tune._spare_rules import burst_clients, default_spares, spare_settings, steady_p99_us

if TYPE_CHECKING:
    from pounder.tune._session import TuneSession


def _spare_trial(session: TuneSession, name: str, params: PoolParams, burst: int, trial: int) -> dict[str, Any]:
    """One trial of a spare setting (point ``spare-NAME-tN``): started, idle for a second, then
    ``burst`` clients at once."""
    runner = session.runner
    start, low, high = session.adapter.spares(params)  # as the server runs them

    def measure() -> tuple[dict[str, Any], dict[str, Any]]:
        with runner.started(params) as server:
            time.sleep(1.0)  # idle: the parent settles its spare children
            idle = len(server.children())
            result = runner.bench(server, burst, duration=max(4.0, session.options.point_s))
        series = [{"second": s.second, "complete": s.complete, "p99_us": s.p99_us} for s in result.series]
        steady = steady_p99_us(series)
        summary = {"children": params.max_clients, "start_servers": start, "min_spare": low, "max_spare": high,
                   "connections": burst, "idle_children": idle, "series": series, "trial": trial,
                   "steady_p99_ms": None if steady is None else steady / 1000,
                   "first_p99_ms": series[0]["p99_us"] / 1000 if series and series[0]["complete"] else None,
                   **load_summary(result, runner.pod_reading)}
        return summary, {"bench": result.to_dict()}

    label = (f"spare servers {name}: StartServers {start}, MinSpare {low}, MaxSpare {high}, burst of {burst} "
             "clients")
    return session._point(f"spare-{name}-t{trial}", "spare", params, f"{label}, trial {trial}", measure,
                       logged=label)

def measure_spares(session: TuneSession, choice: ChildrenChoice, target: Target, memory: MemoryBound,
                   max_requests: int, offered: OfferedLoad, child_start_s: float | None, threads: int | None) -> tuple[
                       list[TunePoint], SpareChoice | None, tuple[int | None, int | None, int | None]]:
    """The spare settings measured in interleaved bursts (:mod:`pounder.tune._spare`): the
    aggregated points, the choice and the settings recommended."""
    if not session.adapter.on_demand:
        return [], None, (None, None, None)
    options = session.options
    session._check_fits(choice.chosen, memory)
    # the offered load at once (clients beyond the pool queue alike under every setting)
    burst = max(1, offered.connections if offered.rate is None else burst_clients(choice, target))
    spares = session.adapter.spares  # as the server runs them (php-fpm caps them by the children)
    before, after = (spares(PoolParams(choice.chosen, start_servers=start, min_spare=low, max_spare=high))
                     for start, low, high in (default_spares(choice.chosen),
                                              spare_settings(choice.chosen, burst, session.adapter.kind, None,
                                                             threads or 1)))
    settings = {"before": before, **({"after": after} if tuple(after) != tuple(before) else {})}
    session.progress.expect("spare", len(settings) * options.trials)
    trials: dict[str, list[dict[str, Any]]] = {name: [] for name in settings}
    for number in range(1, options.trials + 1):
        for name, (start, low, high) in settings.items():
            params = PoolParams(choice.chosen, max_requests=max_requests, start_servers=start, min_spare=low,
                                max_spare=high, threads=threads)
            trials[name].append(_spare_trial(session, name, params, burst, number))
    reference = reference_us([t for group in trials.values() for t in group])
    points = [aggregate_spare(name, group, reference) for name, group in trials.items()]
    decided = choose_spare(points, child_start_s, tolerance=options.tolerance)
    points = [replace(point, chosen=point.name == decided.name) for point in points]
    return points, decided, tuple(settings[present(decided.name)])  # type: ignore[return-value]
