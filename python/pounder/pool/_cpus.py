"""Which CPUs the server and the load generator run on.

On one machine the load generator (pounder's engine, in pounder's own process) competes with the
server for the CPUs: pinned apart, the server's throughput is not bent by the load generator's
own bursts, and each side's CPU use can be read on its own.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence

from pounder._errors import UsageError, public
from pounder._units import cpu_list_text

MIN_SPLIT = 4


@public
def split_cpus(available: Sequence[int]) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None, str]:
    """``(server_cpus, load_cpus, text)`` for the CPUs ``available`` (e.g.
    ``os.sched_getaffinity(0)``). With 4 or more the load generator gets the last quarter,
    rounded down (so at least one, and the server always most: 4-7 CPUs → 1, 8-11 → 2), the
    server the rest; with fewer the two share every CPU (None, None)."""
    cpus = sorted(set(available))
    if len(cpus) < MIN_SPLIT:
        return None, None, (f"only {len(cpus)} CPU{'s' if len(cpus) != 1 else ''}: server and load generator "
                            "share them; the load generator's CPU is reported next to the server's")
    count = max(1, len(cpus) // 4)
    server, load = tuple(cpus[:-count]), tuple(cpus[-count:])
    return server, load, (f"{len(cpus)} CPUs: the server runs on {cpu_list_text(server)}, "
                          f"the load generator on {cpu_list_text(load)}")


@public
def check_cpus(server_cpus: Collection[int] | None, load_cpus: Collection[int] | None) -> None:
    """:class:`~pounder.UsageError` unless each list is None or a non-empty set of CPUs this
    process may run on, and the two do not overlap."""
    allowed = os.sched_getaffinity(0)
    for what, cpus in (("server CPUs", server_cpus), ("load generator CPUs", load_cpus)):
        if cpus is None:
            continue
        if isinstance(cpus, (str, bytes)) or not all(isinstance(c, int) and not isinstance(c, bool) for c in cpus):
            raise UsageError(f"the {what} must be CPU numbers, got {cpus!r}")
        if not cpus:
            raise UsageError(f"the {what} list is empty")
        outside = set(cpus) - allowed
        if outside:
            raise UsageError(f"the {what} {cpu_list_text(cpus)} include CPU {cpu_list_text(outside)}, not available "
                             f"here (this process may run on {cpu_list_text(allowed)})")
    if server_cpus is not None and load_cpus is not None:
        both = set(server_cpus) & set(load_cpus)
        if both:
            raise UsageError(f"the server and the load generator would share CPU {cpu_list_text(both)}: "
                             "give them separate CPUs")
