"""Where the recommended server will run: the servers a peak needs, and a container's resources
(pure decisions, no I/O; issue 38).

**The fleet.** With a target rate (``--peak-rate``, or an access log's busiest second), the
servers of the recommended shape the peak needs, with one to spare: ``ceil(peak / confirmed) + 1``.
``confirmed`` is what one server carried in the confirmation, held at the offered load (the peak
itself, open loop), never the sweep's best: when the confirmation answered the peak (its rate
check met), one server carries it and the rate it was offered is its confirmed rate (its capacity
beyond the peak was not measured); when it did not, the server was held above what it can serve
and the requests/s it answered are its capacity at that load. No figure when the confirmation did
not run (``--no-confirm``) or had too many failures for its throughput to count.

**The container.** With a pod (``--cpus``, or a given ``--ram``: the memory limit a container
would have), the Kubernetes ``resources:`` requests and limits and the ``docker run`` options:

* cpu: the quota the server was measured with (``--cpus``; without it, the CPUs it ran on);
* memory request: the most the server's memory cgroup was charged during the confirmation's load
  (:class:`pounder.pool.Runner.memory_peak`: what a container's limit counts), or the pool's
  footprint after it (sum of PSS) when larger, rounded up to MiB: the sum of PSS counts the file
  pages the server maps (interpreter, libraries), which a container is charged for, while on this
  machine they may be charged to whoever read them first (:mod:`pounder.pool._charged`);
* memory limit: that peak plus the growth the measured leak (or unsharing) allows the children
  until they are replaced, less what they grew already: growth per request x (children x
  MaxRequestsPerChild - the requests the confirmation's load served), a worker killer's requests
  for a server without a request limit. The peak and the footprint were read with the
  confirmation's requests served (their growth is in them); those of its warm-up are not
  subtracted, so the growth added is an upper bound. Never simply the budget: a
  limit above the budget is not given (the reason is), nor one a leak without a request limit
  would outgrow.

Both are stored as decided (the sentences too) in ``recommendation.json``; the text and the page
print them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pounder._records import Record
from pounder._units import MIB, children_text, mib_unit, plain
from pounder.compare import clean_trial
from pounder.tune._memory import MemoryBound
from pounder.tune._memory import growth as measured_growth
from pounder.tune._options import TuneOptions

FLEET_SPARE = 1
"""Servers beyond what the peak needs: one to spare (N+1), so that one may fail or be replaced."""


@dataclass(frozen=True)
class FleetSize(Record):
    """The servers a peak needs (module documentation). ``confirmed_rps``: what one server carried
    in the confirmation (None: no figure, ``text`` says why); ``needed``: ``ceil(peak_rate /
    confirmed_rps)``; ``servers``: ``needed`` + 1; ``text``: the arithmetic, or why none."""

    peak_rate: float
    source: str
    confirmed_rps: float | None
    carried_peak: bool
    needed: int | None
    servers: int | None
    text: str


@dataclass(frozen=True)
class PodResources(Record):
    """A container's resources for one server (module documentation); sizes in bytes.
    ``memory_request`` / ``memory_limit`` None: no figure (``notes`` say why); ``yaml``: the
    Kubernetes ``resources:`` block; ``docker``: the ``docker run`` options; ``notes``: how each
    figure was reached, one sentence each."""

    cpus: float
    cpus_source: str
    cpu: str
    budget: int
    peak: int | None
    peak_source: str
    footprint: int | None
    growth: int | None
    memory_request: int | None
    memory_limit: int | None
    yaml: str
    docker: str
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Fleet:
    """What :func:`plan_fleet` decides: the servers a peak needs (None without a target rate) and
    a container's resources (None without a pod)."""

    size: FleetSize | None
    pod: PodResources | None

    def to_dict(self) -> dict[str, Any]:
        return {"size": None if self.size is None else self.size.to_dict(),
                "pod": None if self.pod is None else self.pod.to_dict()}


def _rate(value: float) -> str:
    return f"{value:,.0f} req/s"


def _shown(peak: float, rps: float) -> str:
    """``rps`` as printed: whole requests/s unless rounding would change the arithmetic's answer."""
    whole = round(rps)
    if whole > 0 and math.ceil(peak / whole - 1e-9) == math.ceil(peak / rps - 1e-9):
        return _rate(rps)
    return f"{rps:,.1f} req/s"


def fleet_size(peak_rate: float, source: str, confirmation: Mapping[str, Any] | None) -> FleetSize:
    """The servers of the recommended shape ``peak_rate`` needs, with one to spare, from the
    confirmation's summary (its ``checks``; module documentation)."""
    def none(why: str) -> FleetSize:
        return FleetSize(peak_rate, source, None, False, None, None, f"no fleet figure: {why}")

    if confirmation is None:
        return none("the confirmation did not run (--no-confirm); the servers a peak needs come from what one "
                    "server carried there, at the peak itself")
    complete, failed = int(confirmation["complete"]), int(confirmation["failed"])
    rps = float(confirmation.get("rps") or 0.0)
    if complete < 1 or rps <= 0:
        return none(f"the confirmation answered no request ({failed:,} failed)")
    if not clean_trial(complete, failed):
        return none(f"{failed:,} of the confirmation's {complete + failed:,} requests failed: its throughput "
                    "does not count")
    rate = confirmation.get("rate")
    if not rate:
        return none(f"the confirmation ran at {confirmation['connections']} clients, not at the rate")
    checks = {check["name"]: check for check in confirmation.get("checks") or []}
    carried = bool(checks.get("rate", {}).get("ok"))
    confirmed = float(rate) if carried else rps
    needed = max(1, math.ceil(peak_rate / confirmed - 1e-9))
    servers = needed + FLEET_SPARE
    arithmetic = (f"ceil({_rate(peak_rate)} / {_shown(peak_rate, confirmed)}) + {FLEET_SPARE} = "
                  f"{servers} servers")
    children = children_text(int(confirmation["children"]))
    if carried:
        answered = f"{complete:,} of {int(confirmation.get('scheduled') or complete):,} requests scheduled"
        why = (f"one server of {children} answered the whole peak in the confirmation ({answered}), so its "
               "confirmed rate is the peak itself (what it could carry beyond the peak was not measured)")
    else:
        why = (f"one server of {children}, offered {_rate(float(rate))} in the confirmation, answered "
               f"{_shown(peak_rate, rps)}: it cannot carry the peak alone")
    text = f"{arithmetic}, one to spare, for {_rate(peak_rate)} from {source}: {why}"
    return FleetSize(peak_rate, source, confirmed, carried, needed, servers, text)


def cpu_quantity(cpus: float) -> str:
    """Kubernetes' CPU quantity: whole CPUs as a number (``"2"``), else millicores (``"1500m"``)."""
    milli = round(cpus * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def memory_quantity(size: int) -> str:
    """Kubernetes' memory quantity: MiB (``"612Mi"``) when whole, else bytes."""
    return f"{size // MIB}Mi" if size % MIB == 0 else str(size)


def _docker_memory(size: int) -> str:
    return f"{size // MIB}m" if size % MIB == 0 else f"{size}b"


def _up_to_mib(size: int) -> int:
    return -(-size // MIB) * MIB


def _block(cpu: str, request: int | None, limit: int | None) -> str:
    lines = ["resources:"]
    for name, memory in (("requests", request), ("limits", limit)):
        lines += [f"  {name}:", f'    cpu: "{cpu}"']
        if memory is not None:
            lines.append(f'    memory: "{memory_quantity(memory)}"')
    return "\n".join(lines)


@dataclass(frozen=True)
class Growth:
    """What the children may grow until replaced: ``leak`` the verdict of the sizes step,
    ``per_request`` its growth per request served (bytes), ``requests`` how many requests a child
    serves before it is replaced (0: never), ``children`` the pool, ``who`` what replaces it,
    ``served`` the requests the pool served before the peak and footprint were read (their growth
    is in them already)."""

    leak: bool
    per_request: float
    requests: int
    children: int
    who: str = "MaxRequestsPerChild"
    served: int = 0


def _memory(budget: int, peak: int, source: str, footprint: int | None,
            growth: Growth) -> tuple[int | None, int | None, int | None, str]:
    """The memory request, limit, growth added, and how they were reached (:func:`pod_resources`)."""
    base = max(peak, footprint or 0)
    request: int | None = _up_to_mib(base)
    said = f"the most the server's memory cgroup was charged during the confirmation, {mib_unit(peak)} ({source})"
    if footprint is not None:
        said = (f"the larger of {said} and the pool's footprint after it (sum of PSS), {mib_unit(footprint)} (which "
                "counts the file pages the server maps: a container is charged those, this machine's cgroup may "
                "have them charged elsewhere)")
    if growth.leak and growth.requests < 1:
        return request, None, None, (f"memory request {memory_quantity(_up_to_mib(base))}: {said}; no memory limit: "
                                     f"the children grow {growth.per_request:,.0f} bytes per request and are never "
                                     f"replaced (set {growth.who})")
    left = max(0, growth.children * growth.requests - growth.served)
    added = round(growth.per_request * left) if growth.leak else 0
    if added:
        less = "" if not growth.served else f" - {growth.served:,} served in the confirmation, grown already"
        said += (f", plus what the children may grow before they are replaced: {growth.per_request:,.0f} bytes "
                 f"per request x ({growth.children} x {growth.requests:,} requests ({growth.who}){less}) = "
                 f"{mib_unit(added)}")
    else:
        said += "; no leak measured, so no growth added"
    raw = base + added
    if raw > budget:
        request = request if request is not None and request <= budget else None
        asked = "" if request is None else f"memory request {memory_quantity(request)}; "
        return request, None, added, (f"{asked}no memory limit within the budget: {said}; {mib_unit(raw)} in all, "
                                      f"more than the RAM budget of {mib_unit(budget)}")
    limit = min(_up_to_mib(raw), budget)
    request = min(_up_to_mib(base), limit)
    return request, limit, added, (f"memory {memory_quantity(request)} requested, {memory_quantity(limit)} limit: "
                                   f"{said}; rounded up to MiB (within the RAM budget of {mib_unit(budget)})")


def pod_resources(cpus: float, cpus_source: str, budget: int, peak: Mapping[str, Any] | None,
                  growth: Growth, *, footprint: int | None = None, confirmed: bool = True) -> PodResources:
    """A container's resources (module documentation): ``cpus`` the quota measured with,
    ``budget`` the RAM budget, ``peak`` the confirmation's cgroup reading (``peak``, ``source``;
    None when the confirmation had none), ``footprint`` the pool's sum of PSS after the
    confirmation's load, ``confirmed``: the confirmation ran."""
    cpu = cpu_quantity(cpus)
    notes = [f"cpu {cpu}: {cpus_source}"]
    value = None if peak is None else peak.get("peak")
    source = "" if peak is None else str(peak.get("source") or "")
    request = limit = added = None
    if not confirmed:
        notes.append("no memory figure: the confirmation did not run (--no-confirm), and the memory is what the "
                     "server's cgroup was charged at its load")
    elif value is None:
        why = source or "a result of an earlier pounder"
        notes.append(f"no memory figure: the confirmation read no peak of the server's memory cgroup ({why})")
    else:
        request, limit, added, note = _memory(budget, int(value), source, footprint, growth)
        notes.append(note)
    docker = f"docker run --cpus {plain(cpus)}" + ("" if limit is None else f" --memory {_docker_memory(limit)}")
    return PodResources(cpus=cpus, cpus_source=cpus_source, cpu=cpu, budget=budget, peak=value, peak_source=source,
                        footprint=footprint, growth=added, memory_request=request, memory_limit=limit,
                        yaml=_block(cpu, request, limit), docker=docker, notes=notes)


def plan_fleet(options: TuneOptions, confirmation: Mapping[str, Any] | None, measure: Mapping[str, Any],
               memory: MemoryBound, children: int, max_requests: int, killer_requests: int, cores: float,
               who: str) -> Fleet:
    """The fleet and the pod of a finished run (module documentation): ``options`` its
    :class:`~pounder.tune.TuneOptions`, ``confirmation`` the final confirmation's summary with its
    checks, ``measure`` the sizes, ``children`` / ``max_requests`` the recommendation,
    ``killer_requests`` what a worker killer is given where the server has no request limit,
    ``cores`` the CPUs the server ran on, ``who`` the server's name for its request limit."""
    size = None
    if options.peak_rate is not None:
        size = fleet_size(float(options.peak_rate), options.peak_source or "--peak-rate", confirmation)
    cpus = options.cpus  # the pod's quota (--cpus)
    if cpus is None and options.ram is None:
        return Fleet(size, None)
    if cpus is None:
        cpus_source = f"no --cpus: the {cores} CPUs the server ran on"
        cpus = float(cores)
    else:
        given = options.cpus_source or "--cpus"
        cpus_source = f"the CPU quota the server was measured with ({given})"
    grown = measured_growth(measure)
    limit = max_requests or killer_requests
    if not max_requests and killer_requests:
        who = "the worker killer's request limit, see the advice"
    served = 0 if confirmation is None else int(confirmation.get("complete") or 0)
    growth = Growth(grown.leak, grown.per_request, limit, children, who, served)
    peak = None if confirmation is None else confirmation.get("cgroup_peak")
    footprint = None if confirmation is None else confirmation.get("footprint")
    return Fleet(size, pod_resources(cpus, cpus_source, memory.ram, peak, growth,
                                     footprint=None if footprint is None else int(footprint),
                                     confirmed=confirmation is not None))
