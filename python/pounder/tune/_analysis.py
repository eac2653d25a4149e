"""The decisions of a tuning run, from measured numbers only (pure functions, no I/O).

Each step's measurements come in as the ``summary`` dicts stored in the results directory, so a
resumed run makes exactly the decisions the first one would have made.

* :func:`memory_bound`: MaxClients = (RAM - shared) / child private size (USS), next to the
  no-sharing figure RAM / child RSS.
* :func:`sweep_counts` / :func:`sweep_done` / :func:`choose_children`: the children sweep and the
  smallest count within ``tolerance`` of the best throughput, raised for ``--clients`` or
  ``--p99`` when they need more, capped by memory.
* :func:`respawn_cost` / :func:`predicted_loss` / :func:`choose_max_requests`: the throughput a
  MaxRequestsPerChild value costs, from a model fitted to the sweep (a respawn every ``v``
  requests costs ``k / v`` of a request's time), and the largest value that keeps a leaking
  child under the size the memory budget allows.
* :func:`burst_seconds` / :func:`spare_settings`: how long latency stays high after a step from
  idle to full load, and the spare-server settings that keep that short.
* :func:`advice`: the causes behind the numbers, named.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pounder._errors import public
from pounder._units import KIB, MIB, mib_unit
from pounder.procs import max_clients_from

LEAK_BYTES_PER_REQUEST = 512
"""Growth per request (per child) below which no leak is called: allocator noise (a few pages per
child over the measurement) stays under it."""
LEAK_MIN_TOTAL = 64 * 1024
LEAK_STILL_GROWING = 0.25
"""The second half of the measurement must grow at least this fraction of the first half's rate."""
BURST_FACTOR = 1.5
"""A second is part of the burst while its p99 exceeds the steady p99 by this factor."""
CPU_SATURATED = 0.8
MAX_MODELLED = 1_000_000
"""The largest MaxRequestsPerChild recommended from the model alone (beyond it: unlimited)."""
LOSS_NOISE = 0.05
"""A throughput difference smaller than this between two runs is within this machine's noise."""
CPU_IDLE = 0.5
FIRST_REQUEST_GROWTH = 4 * MIB
COW_BROKEN = 0.5
"""Below this median (child shared / parent RSS) a preloading server has lost most sharing."""

Summary = Mapping[str, Any]


def _round_up(value: int) -> int:
    """Up to one significant digit: 7448 -> 8000, 12 -> 20, 3 -> 3."""
    if value < 10:
        return max(1, value)
    scale: int = 10 ** (len(str(value)) - 1)
    return -(-value // scale) * scale


def _round_down(value: int) -> int:
    """Down to two significant digits: 3456 -> 3400, 87 -> 87, 1 -> 1."""
    if value < 100:
        return max(1, value)
    scale: int = 10 ** (len(str(value)) - 2)
    return value // scale * scale


# ---------------------------------------------------------------------------------------------
# Step 1 and 2: sizes and the memory bound


@dataclass(frozen=True)
class Growth:
    """Private memory growth per request (bytes, per request a child served) in the two halves
    of the size measurement, and the verdict."""

    first: float
    second: float
    leak: bool

    @property
    def per_request(self) -> float:
        return self.second if self.leak else 0.0


@public
def growth(measure: Summary) -> Growth:
    first = float(measure["growth_first"])
    second = float(measure["growth_second"])
    total_second = second * int(measure["requests_second"])
    leak = (second >= LEAK_BYTES_PER_REQUEST and total_second >= LEAK_MIN_TOTAL
            and second >= LEAK_STILL_GROWING * first)
    return Growth(first=first, second=second, leak=leak)


@public
@dataclass(frozen=True)
class MemoryBound:
    """The memory step's result (bytes): ``max_clients`` = floor((ram - shared) / child_uss)."""

    ram: int
    ram_source: str
    shared: int
    child_uss: int
    child_rss: int
    max_clients: int
    max_clients_no_sharing: int
    parent_uss: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def child_limit(self, children: int) -> int:
        """The private size each of ``children`` children may reach within the budget."""
        return (self.ram - self.shared) // max(1, children)


@public
def memory_bound(measure: Summary, ram: int | None, safety_margin: int) -> MemoryBound:
    """MaxClients from the sizes at the end of the size measurement (after K requests per child)."""
    end = measure["end"]
    shared, child_uss, child_rss = int(end["median_shared"]), int(end["max_uss"]), int(end["max_rss"])
    if ram is None:
        ram = int(measure["mem_available"]) + int(end["footprint"])
        source = "MemAvailable + server footprint - safety margin"
    else:  # a given budget is taken as it is: the safety margin is for the default one only
        safety_margin, source = 0, "given"
    limit = max_clients_from(ram, shared, child_uss, child_rss, safety_margin)
    return MemoryBound(
        ram=limit.ram, ram_source=source, shared=shared, child_uss=child_uss, child_rss=child_rss,
        max_clients=limit.max_clients, max_clients_no_sharing=limit.max_clients_no_sharing,
        parent_uss=int(measure["parent"]["uss"]))


# ---------------------------------------------------------------------------------------------
# Step 3: the children sweep


def sweep_counts(cap: int) -> list[int]:
    """1, 2, 4, … below ``cap``, then ``cap`` itself."""
    counts = []
    n = 1
    while n < cap:
        counts.append(n)
        n *= 2
    return [*counts, cap] if cap >= 1 else []


def sweep_done(points: Sequence[Summary], tolerance: float) -> bool:
    """Stop early when the last two counts both failed to beat the best before them by more than
    ``tolerance`` (the classic finding: past the cores, more children add nothing)."""
    if len(points) < 3:
        return False
    best_before = max(float(p["rps"]) for p in points[:-2])
    return all(float(p["rps"]) <= best_before * (1 + tolerance) for p in points[-2:])


def sweep_connections(children: int, clients: int | None) -> int:
    """The concurrency of a sweep point: the expected clients, else twice the children."""
    return clients if clients is not None else max(2, 2 * children)


@public
@dataclass(frozen=True)
class ChildrenChoice:
    """How many children, and why. ``throughput``: the smallest count within tolerance of the
    best; ``for_clients`` / ``for_p99``: what those targets need (None when not given);
    ``chosen``: the recommendation (capped by ``memory_cap``)."""

    best_children: int
    best_rps: float
    throughput: int
    for_clients: int | None
    for_p99: int | None
    memory_cap: int
    chosen: int
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def choose_children(points: Sequence[Summary], memory_cap: int, *, clients: int | None, p99_s: float | None,
                    tolerance: float) -> ChildrenChoice:
    """See the module documentation. ``points`` are the sweep's summaries (``children``, ``rps``,
    ``p99_ms``)."""
    ordered = sorted(points, key=lambda p: int(p["children"]))
    best = max(ordered, key=lambda p: float(p["rps"]))
    best_rps = float(best["rps"])
    enough = next(p for p in ordered if float(p["rps"]) >= (1 - tolerance) * best_rps)
    throughput = int(enough["children"])
    reasons = [f"throughput: {throughput} children serve {float(enough['rps']):,.0f} req/s, within "
               f"{tolerance:.0%} of the best measured ({best_rps:,.0f} req/s with {int(best['children'])})"]
    need = throughput
    for_clients = None
    if clients is not None:
        for_clients = clients
        if clients > need:
            reasons.append(f"--clients {clients}: each concurrent client holds a child of a pre-forking server "
                           f"while its request runs, so {clients} children keep them out of the listen queue")
            need = clients
    for_p99 = None
    if p99_s is not None:
        meeting = [p for p in ordered if float(p["p99_ms"]) <= p99_s * 1000]
        concurrency = f"{clients} clients" if clients is not None else "twice as many clients as children"
        if meeting:
            for_p99 = int(meeting[0]["children"])
            if for_p99 > need:
                reasons.append(f"--p99 {p99_s * 1000:g}ms: {for_p99} children is the smallest count whose p99 "
                               f"({float(meeting[0]['p99_ms']):,.1f} ms with {concurrency}) meets it")
                need = for_p99
        else:
            lowest = min(ordered, key=lambda p: float(p["p99_ms"]))
            reasons.append(f"--p99 {p99_s * 1000:g}ms is not met by any count measured (best: "
                           f"{float(lowest['p99_ms']):,.1f} ms with {int(lowest['children'])} children, "
                           f"{concurrency}): more children do not reach it")
    chosen = need
    if need > memory_cap:
        chosen = memory_cap
        reasons.append(f"memory: only {memory_cap} children fit the RAM budget, fewer than the {need} wanted")
    return ChildrenChoice(best_children=int(best["children"]), best_rps=best_rps, throughput=throughput,
                          for_clients=for_clients, for_p99=for_p99, memory_cap=memory_cap, chosen=max(1, chosen),
                          reasons=reasons)


# ---------------------------------------------------------------------------------------------
# Step 4: MaxRequestsPerChild


@public
def respawn_cost(points: Sequence[Summary]) -> float:
    """``k``: the throughput one respawn costs, in requests' worth, fitted as
    rps(0) / rps(v) - 1 = k / v. The fit uses the largest ``v`` whose loss stands out of the noise
    (``LOSS_NOISE``): the closest to the values worth recommending (at small ``v`` the server's own
    spawn-rate limits add to the cost). When no loss stands out, the smallest ``v`` that
    respawned. 0 when nothing respawned or the difference is negative (noise)."""
    base = next((p for p in points if int(p["max_requests"]) == 0), None)
    if base is None:
        base = max(points, key=lambda p: int(p["max_requests"]))
    base_rps = float(base["rps"])
    # "respawns" = requests / MaxRequestsPerChild: every child is replaced after that many
    respawned = [p for p in points if int(p["max_requests"]) > 0 and int(p["respawns"]) > 0 and float(p["rps"]) > 0]
    if not respawned or base_rps <= 0:
        return 0.0
    visible = [p for p in respawned if 1 - float(p["rps"]) / base_rps >= LOSS_NOISE]
    chosen = (max(visible, key=lambda p: int(p["max_requests"])) if visible
              else min(respawned, key=lambda p: int(p["max_requests"])))
    overhead = base_rps / float(chosen["rps"]) - 1
    return max(0.0, overhead * int(chosen["max_requests"]))


@public
def predicted_loss(max_requests: int, cost: float) -> float:
    """The fraction of throughput lost to respawning every ``max_requests`` requests (0: never)."""
    if max_requests <= 0:
        return 0.0
    extra = cost / max_requests
    return extra / (1 + extra)


@public
def measured_loss(point: Summary, points: Sequence[Summary]) -> float | None:
    base = next((p for p in points if int(p["max_requests"]) == 0), None)
    if base is None or float(base["rps"]) <= 0:
        return None
    return 1 - float(point["rps"]) / float(base["rps"])


@public
@dataclass(frozen=True)
class MaxRequestsChoice:
    """MaxRequestsPerChild, and why (``value`` 0 = unlimited)."""

    value: int
    leak: bool
    growth_bytes_per_request: float
    child_start_bytes: int
    child_limit_bytes: int
    memory_limit: int | None
    respawn_cost_requests: float
    loss: float
    forced_by_memory: bool
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def choose_max_requests(points: Sequence[Summary], measure: Summary, memory: MemoryBound, children: int, *,
                        max_loss: float, counts: str = "requests") -> MaxRequestsChoice:
    """The largest MaxRequestsPerChild that keeps a child under the size the budget allows for
    ``children`` children, never one that costs more than ``max_loss`` unless memory forces it."""
    grown = growth(measure)
    cost = respawn_cost(points)
    start = int(measure["warm"]["max_uss"])
    limit = memory.child_limit(children)
    reasons: list[str] = []
    memory_limit: int | None = None
    forced = False
    unit = "requests" if counts == "requests" else "connections (= requests with keep-alive off)"
    if grown.leak:
        headroom = limit - start
        memory_limit = max(1, int(headroom // grown.second)) if headroom > 0 else 1
        value = _round_down(min(memory_limit, 1_000_000))
        loss = predicted_loss(value, cost)
        reasons.append(
            f"leak: each child's private memory grows {grown.second / KIB:,.1f} KiB per request and keeps growing "
            f"({grown.first / KIB:,.1f} KiB/request in the first half of the measurement, "
            f"{grown.second / KIB:,.1f} in the second)")
        reasons.append(
            f"a child starts at {mib_unit(start)} and may reach {mib_unit(limit)} ({children} children in the budget): "
            f"at most {memory_limit:,} {unit}, rounded to {value:,}")
        if loss > max_loss:
            forced = True
            reasons.append(f"memory forces it: respawning every {value:,} {unit} costs about {loss:.1%} of the "
                           f"throughput (more than {max_loss:.0%}); fewer children would leave room for a larger limit")
        else:
            reasons.append(f"respawning every {value:,} {unit} costs about {loss:.1%} of the throughput")
    else:
        finite = sorted((int(p["max_requests"]) for p in points if int(p["max_requests"]) > 0), reverse=True)
        value = next((v for v in finite if predicted_loss(v, cost) <= max_loss), 0)
        modelled = False
        if not value and finite and cost > 0:
            # every value swept costs too much: the smallest round value the model says is cheap enough
            value = _round_up(math.ceil(cost * (1 - max_loss) / max_loss))
            modelled = value <= MAX_MODELLED
            value = value if modelled else 0
        loss = predicted_loss(value, cost)
        reasons.append(f"no leak: private memory grew {grown.second:,.0f} bytes per request in the second half of "
                       f"the measurement (a leak is called from {LEAK_BYTES_PER_REQUEST} bytes/request)")
        if not finite:
            reasons.append("no finite value was swept: unlimited (0)")
        elif modelled:
            reasons.append(f"every value swept costs more than {max_loss:.0%} of the throughput; by the fitted cost, "
                           f"{value:,} {unit} costs about {loss:.1%} (modelled, above the values measured) and "
                           "still bounds any slow growth a short run cannot see")
        elif value:
            reasons.append(f"{value:,} {unit} costs about {loss:.1%} of the throughput and still replaces children "
                           "now and then, which bounds any slow growth a short run cannot see")
        else:
            reasons.append(f"every limit measured costs more than {max_loss:.0%} of the throughput: unlimited (0)")
    if cost > 0:
        reasons.append(f"one respawn costs about {cost:,.1f} requests' worth of throughput (fitted on the sweep)")
    return MaxRequestsChoice(value=value, leak=grown.leak, growth_bytes_per_request=grown.second,
                             child_start_bytes=start, child_limit_bytes=limit, memory_limit=memory_limit,
                             respawn_cost_requests=cost, loss=loss, forced_by_memory=forced, reasons=reasons)


# ---------------------------------------------------------------------------------------------
# Step 5: spare servers


@public
def steady_p99_us(series: Sequence[Mapping[str, Any]]) -> float | None:
    """The median p99 of the second half of a run's seconds (None without a completed second)."""
    seconds = [s for s in series if int(s["complete"]) > 0]
    if not seconds:
        return None
    return float(statistics.median(int(s["p99_us"]) for s in seconds[len(seconds) // 2:]))


@public
def burst_seconds(series: Sequence[Mapping[str, Any]], reference_us: float) -> int:
    """Leading seconds of a step from idle to full load whose p99 stays above ``BURST_FACTOR``
    times ``reference_us`` (the steady p99 with every child ready)."""
    count = 0
    for sample in series:
        if int(sample["complete"]) == 0 or int(sample["p99_us"]) > BURST_FACTOR * reference_us:
            count += 1
        else:
            break
    return count


def default_spares(children: int) -> tuple[int, int, int]:
    """Apache's prefork defaults (StartServers 5, MinSpareServers 5, MaxSpareServers 10), capped by
    the children allowed."""
    start = min(5, children)
    low = min(5, children)
    return start, low, max(low + 1, min(10, children))


def spare_settings(children: int, burst: int) -> tuple[int, int, int]:
    """(StartServers, MinSpareServers, MaxSpareServers) for a burst of ``burst`` clients: start
    them all, keep them when the load drops (MaxSpare = burst), and keep a quarter spare."""
    ready = max(1, min(burst, children))
    low = max(1, min(ready - 1, math.ceil(ready / 4))) if ready > 1 else 1
    return ready, low, max(ready, low + 1)


# ---------------------------------------------------------------------------------------------
# Advice


def _parent_language(kind: str) -> str:
    return {"apache": "perl", "starman": "perl", "gunicorn": "python"}.get(kind, "other")


def advice(kind: str, measure: Summary, other: Summary | None, memory: MemoryBound, other_memory: MemoryBound | None,
           sweep: Sequence[Summary], choice: ChildrenChoice, cores: int) -> list[str]:
    """The causes behind the numbers, each with its figures."""
    said: list[str] = []
    language = _parent_language(kind)
    # the first requests' growth, less what the per-request growth explains (a leak)
    per_child = int(measure.get("warm_requests", 0)) / max(1, int(measure["children"]))
    first = (int(measure["warm"]["median_uss"]) - int(measure["cold"]["median_uss"])
             - max(0.0, float(measure["growth_first"])) * per_child)
    if first >= FIRST_REQUEST_GROWTH:
        if measure.get("preload"):
            remedy = ("even with preloading, something is loaded on first use: imports inside functions, caches "
                      "or connections built lazily; do that at load time, in the parent")
        else:
            remedy = {
                "perl": "load the modules and data in the parent: PerlRequire startup.pl / PerlModule (Apache) "
                        "or --preload-app (Starman)",
                "python": "import the application and build its data in the arbiter with --preload",
            }.get(language, "load the code and data in the parent before it forks")
        said.append(f"each child grows {mib_unit(first)} on its first requests: code or data is loaded on first use, "
                    f"in every child, instead of once in the parent. Remedy: {remedy}.")
    sharing = measure.get("sharing")
    if measure.get("preload") and sharing is not None and float(sharing) < COW_BROKEN:
        parent_rss = int(measure["parent"]["rss"])
        shared = int(measure["end"]["median_shared"])
        cause = {
            "perl": "Perl writes to preloaded variables when it uses them (a string used as a number, reference "
                    "counts, hash iteration): keep preloaded data read-only, build it in startup.pl, and avoid "
                    "touching large structures per request",
            "python": "reference counting and the cycle collector write to every object they touch: call "
                      "gc.freeze() at the end of the preload (before the fork) and prefer few large objects "
                      "(bytes, arrays) to many small ones",
        }.get(language, "the children write to memory they inherited")
        said.append(f"copy-on-write is broken early: the children still share only {mib_unit(shared)} of the parent's "
                    f"{mib_unit(parent_rss)} ({float(sharing):.0%}). Cause: {cause}.")
    if other is not None and other_memory is not None:
        on, off = (measure, other) if measure.get("preload") else (other, measure)
        mem_on, mem_off = (memory, other_memory) if measure.get("preload") else (other_memory, memory)
        saved = int(off["end"]["max_uss"]) - int(on["end"]["max_uss"])
        verb = "saves" if saved > 0 else "costs"
        said.append(f"preloading {verb} {mib_unit(abs(saved))} of private memory per child (max child USS "
                    f"{mib_unit(int(off['end']['max_uss']))} without, {mib_unit(int(on['end']['max_uss']))} with): "
                    f"MaxClients {mem_off.max_clients} without, {mem_on.max_clients} with"
                    + ("" if measure.get("preload") or saved <= 0 else " - turn it on"))
    if len(sweep) >= 2:
        ordered = sorted(sweep, key=lambda p: int(p["children"]))
        at = next(p for p in ordered if int(p["children"]) == choice.throughput)
        bigger = [p for p in ordered if int(p["children"]) > choice.throughput]
        used = float(at["server_cores"]) + float(at["client_cores"])
        if bigger and max(float(p["rps"]) for p in bigger) <= float(at["rps"]) * 1.05:
            if used >= CPU_SATURATED * cores:
                said.append(f"the server is CPU-bound at {cores} cores: {choice.throughput} children already keep "
                            f"the CPUs busy ({used:.1f} of {cores} cores with the load generator), and "
                            f"{int(bigger[-1]['children'])} children served no faster - more children only queue "
                            "on the CPU and cost memory")
            elif used < CPU_IDLE * cores:
                said.append(f"throughput stops growing at {choice.throughput} children while the CPUs are mostly "
                            f"idle ({used:.1f} of {cores} cores busy): requests wait on something else (I/O, a "
                            "lock, a database); more children will not help")
        elif not bigger and choice.throughput == choice.memory_cap and used < CPU_IDLE * cores:
            said.append(f"throughput still grows at {choice.throughput} children with the CPUs mostly idle "
                        f"({used:.1f} of {cores} cores): requests wait (I/O), so memory, not CPU, limits this "
                        "server; a smaller child or more RAM means more throughput")
    if memory.max_clients_no_sharing < memory.max_clients:
        said.append(f"summing RSS (as ps and top suggest) would allow only {memory.max_clients_no_sharing} children "
                    f"instead of {memory.max_clients}: {mib_unit(memory.shared)} per child is shared with the parent")
    return said
