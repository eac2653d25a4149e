"""Step 1 of a tuning run, measured: the children's sizes once warm (every child served requests,
USS and throughput stopped moving) and after K requests each (growth per request, in two halves),
the parent's, how long a fresh child takes to serve (:func:`measure_sizes`)."""

from __future__ import annotations

from typing import Any

from pounder._errors import PounderError
from pounder.pool import Adapter, PoolParams, Runner, child_sizes, child_statm, growth_per_request
from pounder.procs import mem_available


def measure_sizes(runner: Runner, adapter: Adapter, params: PoolParams,
                  half: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sizes step's point for ``params``: the server started, its children's sizes cold, once
    warm, after ``half`` requests each and after ``half`` more; the summary and the detail kept
    beside it (the four snapshots, the two loads)."""
    with runner.started(params) as server:
        cold = runner.snapshot(server)
        warmed = runner.warm(server)
        warm = runner.snapshot(server)
        if warm.totals.children < 1 and server.wait_for_children(1, 2.0):  # a crashed child replaced
            warm = runner.snapshot(server)
        count, statm, charged = warm.totals.children, child_statm(warm), {"warm": runner.charged(server, warm)}
        if count < 1:
            raise PounderError(f"the server (pid {server.pid}) runs no child process to measure: is it a "
                               "pre-forking server, and does it fork before answering?")
        first = runner.bench(server, count, requests=half * count)
        mid = runner.snapshot(server)
        second = runner.bench(server, count, requests=half * count)
        end = runner.snapshot(server)
        available, charged["end"] = mem_available(), runner.charged(server, end)
        child_start = runner.child_start_s(server)
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
        "settled": warmed.settled,
        "warm_failing": warmed.failing,
        "warm_rounds": warmed.rounds,
        "child_start_s": child_start,
        "preload": adapter.with_preload(params),
        "parent": {"rss": end.parent.rss, "uss": end.parent.private, "shared": end.parent.shared,
                   "pss": end.parent.pss},
        "cold": child_sizes(cold), "warm": child_sizes(warm), "mid": child_sizes(mid), "end": child_sizes(end),
        "requests_first": done_first,
        "requests_second": done_second,
        "failed": first.requests.failed + second.requests.failed,
        "growth_first": growth_per_request(warm, mid, served_first),
        "growth_second": growth_per_request(mid, end, served_second),
        "sharing": end.totals.median_sharing,
        "mem_available": available, "statm": statm, "cgroup": {**charged, "note": server.cgroup_note},
        **runner.pod_reading,  # --cpus: the second half's figures in the pod
    }
    snapshots = {name: snap.to_dict() for name, snap in
                 (("cold", cold), ("warm", warm), ("mid", mid), ("end", end))}
    return summary, {"snapshots": snapshots, "bench": [first.to_dict(), second.to_dict()]}
