"""A measured load in the pod (``--cpus``): what the server's cpu cgroup says of it.

The runner reads the cgroup's usage and throttling (:meth:`~pounder.servers.CpuCgroup.usage`)
right before and right after each measured load and keeps :func:`pod_figures` of the difference:
the server's CPU in cores (the CPU its cgroup used over the load's wall time, the cgroup's own
count: v1 ``cpuacct.usage``, v2 ``cpu.stat`` ``usage_usec``), the share of the CFS periods in
which the quota ran out, the time its processes waited for the next period; and the OOM kills its
memory cgroup counted since the server started (the trial's warm-up and load: a fresh server per
trial), which make the trial a failed one (:func:`oom_note` names it).
"""

from __future__ import annotations

from typing import Any

from pounder._units import MIB
from pounder.servers import CpuUsage, ManagedServer


def pod_before(server: ManagedServer) -> CpuUsage | None:
    """The server's cpu cgroup read now (None without a pod, or once it cannot be read)."""
    cgroup = server.cpu_cgroup
    if cgroup is None:
        return None
    try:
        return cgroup.usage()
    except (OSError, KeyError, ValueError):
        return None


def oom_note(kills: int, limit: int | None, who: str = "child") -> str:
    """``1 child process killed by the OOM killer at the limit of 512 MiB`` (``who``: what they were)."""
    at = f"the limit of {limit / MIB:,.0f} MiB" if limit is not None else "the memory limit"
    return f"{kills} {who} process{'es' if kills != 1 else ''} killed by the OOM killer at {at}"


def pod_figures(server: ManagedServer, before: CpuUsage | None) -> dict[str, Any]:
    """The load's figures in the pod since ``before`` (:func:`pod_before`), for a trial's summary:
    ``pod_cores`` (CPU seconds / wall seconds), ``pod_cpu_s``, ``pod_window`` (the two readings'
    ``time.monotonic()``), ``throttled_share`` (throttled periods / periods; 0 when no period
    elapsed), ``throttled_s``, ``oom_kills`` (None where the kernel does not count them) and
    ``oom_note`` when it killed; {} without a pod."""
    cgroup = server.cpu_cgroup
    after = pod_before(server)
    if cgroup is None or before is None or after is None:
        return {}
    wall = max(after.at - before.at, 1e-9)
    periods, throttled = after.periods - before.periods, after.throttled - before.throttled
    memory = server.cgroup
    kills = None if memory is None else memory.oom_kills()
    figures: dict[str, Any] = {
        "pod_cores": (after.usage_s - before.usage_s) / wall, "pod_cpu_s": after.usage_s - before.usage_s,
        "pod_window": [before.at, after.at], "pod_quota": cgroup.cpus, "pod_cgroup": cgroup.describe(),
        "throttled_share": throttled / periods if periods > 0 else 0.0,
        "throttled_s": after.throttled_s - before.throttled_s, "oom_kills": kills}
    if kills:
        figures["oom_note"] = oom_note(kills, None if server.pod is None else server.pod.memory)
    return figures
