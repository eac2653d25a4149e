"""The life point of the sizes step, measured: the size measurement's server started again and its
children followed over their life (:func:`measure_life`; the curve and its fits are
:mod:`pounder.tune._life`'s)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pounder._errors import PounderError
from pounder.pool import Adapter, PoolParams, Runner
from pounder.tune._life import life_snapshot

LIFE_CAP_S = 60.0
"""The most the life point loads the server (seconds): a load that would end past it is not
started, and the point says where it stopped."""


def measure_life(runner: Runner, adapter: Adapter, params: PoolParams, targets: Sequence[int],
                 cap_s: float = LIFE_CAP_S) -> tuple[dict[str, Any], dict[str, Any]]:
    """The life point for ``params``: the server started, its children snapshotted as forked (0
    requests), then loaded closed loop at as many clients as children to each of ``targets``
    requests per child in turn (the mean: requests completed / children), snapshotted after each.
    A load whose time, predicted from the rate so far, would end past ``cap_s`` is not started
    (``stopped`` says so). The summary and the detail kept beside it (the snapshots, the loads)."""
    snaps, benches, stored = [], [], []
    served = failed = 0
    stopped: str | None = None
    with runner.started(params) as server:
        server.wait_for_children(params.max_clients, 5.0)  # all forked (fewer on timeout: those there are followed)
        first = runner.snapshot(server)
        count = len(first.children)
        if count < 1:
            raise PounderError(f"the server (pid {server.pid}) runs no child process to follow over its life")
        snaps.append(first)
        stored.append(life_snapshot(0.0, [c.to_dict() for c in first.children]))
        loading = 0.0
        for target in targets:
            needed = target * count - served
            if needed <= 0:
                continue
            if served and loading > 0:
                predicted = needed / (served / loading)
                if loading + predicted > cap_s:
                    stopped = (f"stopped at {served / count:,.0f} of {targets[-1]:,} requests per child: the "
                               f"next load ({target:,} requests per child) would have ended past the life "
                               f"measurement's cap of {cap_s:,.0f} s of load")
                    break
            began = time.monotonic()
            result = runner.bench(server, count, requests=needed, sample=False)
            loading += time.monotonic() - began
            served += result.completed_requests
            failed += result.requests.failed
            snap = runner.snapshot(server)
            snaps.append(snap)
            benches.append(result)
            stored.append(life_snapshot(served / count, [c.to_dict() for c in snap.children]))
    if not served:
        raise PounderError(f"the server (pid {server.pid}) completed no request in the life measurement "
                           f"({failed:,} failed): its memory over a child's life cannot be measured")
    summary = {"children": count, "preload": adapter.with_preload(params), "target": targets[-1],
               "elapsed_s": loading, "cap_s": cap_s, "stopped": stopped, "requests": served, "failed": failed,
               "snapshots": stored}
    return summary, {"snapshots": [s.to_dict() for s in snaps], "bench": [b.to_dict() for b in benches]}
