"""Load from many machines: agents on a Ray cluster, each sending its share of one load, started
together and merged exactly. A :class:`Cluster` is a :class:`~pounder.load.Sender` (where the
agents run: ``_cluster``, with :func:`make_sender`, the one place that chooses between this
machine's engine and agents); opened, it is an :class:`AgentPool` (the driver: ``_pool``, each
agent's line of the result made in ``_report``) of agents (the actor: ``_boot``, sent by value, which
imports the pounder sent with the job by ``_ship`` and checks it, then runs ``_agent``). Joining the
cluster (``_connect``) probes the head first (``_gcs``) and keeps what ``ray.init`` does to this
process in bounds (``_ray_init``: a local cluster's processes in one guarded process group).
Ray is imported only here, and only when asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pounder._lazy import lazy_getattr

if TYPE_CHECKING:
    from pounder.agents._cluster import Cluster, agent_pool, bench, make_sender, run_bench_ray
    from pounder.agents._connect import RAY_EXTRA
    from pounder.agents._pool import AgentPool, agent_file, check_distributable

_LAZY = {
    "RAY_EXTRA": "pounder.agents._connect",
    "AgentPool": "pounder.agents._pool",
    "Cluster": "pounder.agents._cluster",
    "agent_file": "pounder.agents._pool",
    "agent_pool": "pounder.agents._cluster",
    "bench": "pounder.agents._cluster",
    "check_distributable": "pounder.agents._pool",
    "make_sender": "pounder.agents._cluster",
    "run_bench_ray": "pounder.agents._cluster",
}
"""Each name's module, imported on first use: an agent imports ``pounder.agents._agent`` (so this
package) on its node, and needs none of the driver's modules (the load, the results, the servers)."""


__getattr__ = lazy_getattr("pounder.agents", _LAZY, globals())


__all__ = [
    "RAY_EXTRA",
    "AgentPool",
    "Cluster",
    "agent_file",
    "agent_pool",
    "bench",
    "check_distributable",
    "make_sender",
    "run_bench_ray",
]
