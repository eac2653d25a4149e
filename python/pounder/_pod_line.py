"""The pod line of a tuning run (``--cpus``), as ``pounder tune`` prints it and the page shows it:
the CPU quota and how the cgroup set it, the memory limit, and how often the quota ran out in each
children count of the sweep (read from the stored points; nothing decided again)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder._tune_point import TunePoint
from pounder._units import MIB, plain


def _cgroup(points: Sequence[TunePoint]) -> str | None:
    for point in points:
        for trial in [point.stored, *point.trials]:
            if trial.get("pod_cgroup"):
                return str(trial["pod_cgroup"])
    return None


def pod_line(options: Mapping[str, Any], sweep: Sequence[TunePoint]) -> str | None:
    """``pod: quota of 1 CPU (cgroup v1 cfs 100000/100000; --cpus 1), memory limit 512 MiB; throttled
    in 2% of the CFS periods at 1 child, 35% at 4 children`` from the run's options and its
    children sweep (aggregated points); None when the run emulated no pod."""
    cpus = options.get("cpus")
    if cpus is None:
        return None
    cpus = float(cpus)
    how = [part for part in (_cgroup(sweep), options.get("cpus_source")) if part]
    text = f"pod: quota of {plain(cpus)} CPU{'' if cpus == 1 else 's'}" + (f" ({'; '.join(how)})" if how else "")
    ram = options.get("ram")
    text += ", no memory limit (no --ram)" if ram is None else f", memory limit {int(ram) / MIB:,.0f} MiB"
    shares = [(p.children, p.throttled_share) for p in sorted(sweep, key=lambda p: p.children)]
    measured = [(n, share) for n, share in shares if share is not None]
    if measured:
        parts = [f"{share * 100:.0f}% at {n} child{'' if n == 1 else 'ren'}" for n, share in measured]
        parts[0] = parts[0].replace("%", "% of the CFS periods", 1)
        text += "; throttled in " + ", ".join(parts)
    return text
