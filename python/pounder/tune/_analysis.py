"""The decisions of a tuning run, from measured numbers only (pure functions, no I/O).

Each step's measurements come in as the ``summary`` dicts stored in the results directory (a load
point aggregated over interleaved trials: medians, a 95 % bootstrap interval of the throughput's
median in ``rps_low`` / ``rps_high``, ``wide`` when that interval stayed wider than ±10 %), so a
resumed run makes exactly the decisions the first one would have made. Every reason quotes the
figures the tables print, formatted as they print them (:func:`rps_text`, :func:`ms_text`,
:func:`share_text`, :func:`change_text`, :func:`cores_text`).

* :func:`memory_bound`: MaxClients = (RAM - parent USS - shared) / child private size (USS), next to the
  no-sharing figure RAM / child RSS.
* :func:`growth`: the leak verdict, every criterion with its number: growth per request in the
  second half of the size measurement against ``LEAK_BYTES_PER_REQUEST``, the children's total
  growth in that half against ``LEAK_MIN_TOTAL``, and the second half's rate against
  ``LEAK_STILL_GROWING`` of the first half's (growth that slows down is the children settling).
* :func:`knee`: the smallest count "as good as the best" throughput, decided on intervals.
* :func:`size_pool`: the pool by the classic method. With no target load, MaxClients = the memory
  bound (capped by ``max_children``), the knee reported as where throughput stops growing. With a
  target: ``--clients N`` needs N children; a peak rate R needs Little's law with headroom
  (square-root staffing); ``--p99`` the smallest count whose p99 met it; never fewer than the knee,
  never more than memory allows; ``decided_by`` names the constraint that decided.
* :func:`mrpc_losses` / :func:`respawn_model` / :func:`choose_max_requests`: MaxRequestsPerChild
  from the measured points and their intervals; a respawn-cost model only beyond the largest value
  measured, and only when it agrees with every measured point; with a leak, the value that keeps a
  child within its share of the memory budget.
* :func:`burst_clients` / :func:`burst_seconds` / :func:`spare_settings`: the spare-server burst
  (from idle to the target's concurrency) and the settings the method calls for.
* :func:`preload_gain` / :func:`advice`: the causes behind the numbers, named, with their figures.

The older entry points :func:`respawn_cost`, :func:`predicted_loss` and :func:`measured_loss` are
kept for the report of single-trial points (results of earlier versions).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pounder._errors import public
from pounder._units import MIB, children_text, mib
from pounder.compare import ratio_interval
from pounder.procs import max_clients_from
from pounder.tune._points import QUEUED_BUSY, WIDE, busy_measured, queued_text

LEAK_BYTES_PER_REQUEST = 512
"""Growth per request (summed over the children) below which no leak is called: allocator noise
(a few pages per child over the measurement) stays under it."""
LEAK_MIN_TOTAL = 64 * 1024
"""The children's total growth in the second half below which no leak is called: too little to
tell from a page or two of allocator noise, whatever the rate."""
LEAK_STILL_GROWING = 0.25
"""The second half of the measurement must grow at least this fraction of the first half's rate."""
BURST_FACTOR = 1.5
"""A second is part of the burst while its p99 exceeds the steady p99 by this factor."""
CPU_SATURATED = 0.8
"""The CPUs count as saturated from this fraction of the machine's cores busy (server + load generator)."""
MAX_MODELLED = 1_000_000
"""The largest MaxRequestsPerChild a leak's memory limit is rounded to."""
MAX_DECADES = 10
"""The respawn model estimates a cost at most this many times beyond the largest value measured
(one decade)."""
LOSS_NOISE = 0.05
"""A throughput difference smaller than this between two single runs is within this machine's noise."""
OTHER_BUSY = 0.25
"""Other processes (neither the server nor pounder) using at least this fraction of the cores
during a point are named as the limit or the noise, not the application."""
CPU_IDLE = 0.5
FIRST_REQUEST_GROWTH = 4 * MIB
COW_BROKEN = 0.5
"""Below this median (child shared / parent RSS) a preloading server has lost most sharing."""
HEADROOM_SIGMAS = 2.0
"""Square-root staffing: with random (Poisson) arrivals the number of busy children at an average
of ``a`` fluctuates with a standard deviation of about sqrt(a); ``a + 2 sqrt(a)`` children keep the
chance that a request finds none free near 3 % (Halfin-Whitt), where a fixed +25 % would leave
small pools short (a = 2: 3 children) and over-provision large ones."""
PRIVATE_HEAVY = 2.0
"""Preloading is suggested when a child's private memory is at least this many times its shared."""
PRELOAD_WORTH = 4 * MIB
"""... and the child's private memory right after it started (what it loaded after the fork) is at least this."""
PRELOAD_KEEPS_PRIVATE = 0.25
"""The estimate never takes a preloaded child below this fraction of its private memory: copy-on-write
decays as children write to what they share (reference counts, caches)."""

Summary = Mapping[str, Any]


def _round_down(value: int) -> int:
    """Down to two significant digits: 3456 -> 3400, 87 -> 87, 1 -> 1."""
    if value < 100:
        return max(1, value)
    scale: int = 10 ** (len(str(value)) - 2)
    return value // scale * scale


# ---------------------------------------------------------------------------------------------
# How figures are written (the tables must print them the same way)


@public
def rps_text(value: float) -> str:
    """Requests per second: ``1,089``."""
    return f"{value:,.0f}"


@public
def ms_text(value: float) -> str:
    """Milliseconds: ``12.5``."""
    return f"{value:,.1f}"


@public
def share_text(value: float) -> str:
    """A fraction as a percentage: ``4.5%``."""
    return f"{value:.1%}"


@public
def change_text(ratio: float) -> str:
    """A ratio to a baseline as a signed change: 1.045 -> ``+4.5%``, 0.8 -> ``-20.0%``."""
    return f"{ratio - 1:+.1%}"


@public
def cores_text(value: float) -> str:
    """Cores busy: ``1.6``."""
    return f"{value:.1f}"


def _bytes(value: float) -> str:
    return f"{value:,.0f}"


def _mib(value: float) -> str:
    return f"{mib(value)} MiB"


def _low(point: Summary) -> float | None:
    value = point.get("rps_low")
    return None if value is None else float(value)


def _high(point: Summary) -> float | None:
    value = point.get("rps_high")
    return None if value is None else float(value)


@public
def rate_with_interval(point: Summary) -> str:
    """``1,089 req/s (1,010-1,150)``: a point's median throughput and its 95 % interval (the
    median alone when there is no interval)."""
    low, high = _low(point), _high(point)
    text = f"{rps_text(float(point['rps']))} req/s"
    return text if low is None or high is None else f"{text} ({rps_text(low)}-{rps_text(high)})"


def _serve(count: int) -> str:
    """``count`` children and the verb that agrees: "1 child serves", "2 children serve"."""
    return f"{children_text(count)} {'serves' if count == 1 else 'serve'}"


def _counts(values: Sequence[int]) -> str:
    return ", ".join(f"{v:,}" for v in values)


# ---------------------------------------------------------------------------------------------
# Step 1 and 2: sizes, growth and the memory bound


@public
@dataclass(frozen=True)
class Growth:
    """Private memory growth per request (bytes per request served, summed over the children) in
    the two halves of the size measurement, each criterion of the leak verdict, and the verdict."""

    first: float
    second: float
    total_second: float
    requests_second: int
    enough_per_request: bool
    enough_total: bool
    still_growing: bool
    leak: bool
    reasons: list[str] = field(default_factory=list)

    @property
    def per_request(self) -> float:
        return self.second if self.leak else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _met(flag: bool) -> str:
    return "met" if flag else "not met"


@public
def growth(measure: Summary) -> Growth:
    """The leak verdict from the size measurement (module documentation): a leak is called only
    when all three criteria are met; the reasons state each with its number."""
    first = float(measure["growth_first"])
    second = float(measure["growth_second"])
    requests = int(measure["requests_second"])
    total = second * requests
    per_request = second >= LEAK_BYTES_PER_REQUEST
    enough_total = total >= LEAK_MIN_TOTAL
    still = second >= LEAK_STILL_GROWING * first
    leak = per_request and enough_total and still
    reasons = [
        f"growth per request in the second half: {_bytes(second)} bytes (a leak needs at least "
        f"{_bytes(LEAK_BYTES_PER_REQUEST)}): {_met(per_request)}",
        f"total growth of the children in the second half: {_bytes(total)} bytes over {requests:,} requests "
        f"(a leak needs at least {_bytes(LEAK_MIN_TOTAL)}): {_met(enough_total)}",
    ]
    if first > 0:
        reasons.append(f"second half against the first: {_bytes(second)} against {_bytes(first)} bytes per request "
                       f"({share_text(second / first)} of the first half's rate; a leak keeps at least "
                       f"{share_text(LEAK_STILL_GROWING)}): {'still growing' if still else 'slowing down'}")
    else:
        later = "growing later, not slowing" if second > 0 else "neither half grew"
        reasons.append(f"second half against the first: {_bytes(second)} against {_bytes(first)} bytes per request "
                       f"(the first half did not grow): {later}")
    unshared = _unshared(measure)
    if leak and unshared:
        reasons.append(f"verdict: growth (every criterion met), part of it unsharing: the children's median shared "
                       f"memory fell by {_bytes(unshared)} bytes over the measurement, pages shared with the parent "
                       "written and made private (copy-on-write)")
    elif leak:
        reasons.append("verdict: a leak (every criterion met)")
    else:
        failed = [name for name, ok in (("too little per request", per_request), ("too little in total", enough_total),
                                        ("slowing down", still)) if not ok]
        reasons.append(f"verdict: no leak ({', '.join(failed)})")
    return Growth(first=first, second=second, total_second=total, requests_second=requests,
                  enough_per_request=per_request, enough_total=enough_total, still_growing=still, leak=leak,
                  reasons=reasons)


def _unshared(measure: Summary) -> int:
    """How much the children's median shared memory fell from warm to the end of the size
    measurement (0 when it did not fall by at least ``LEAK_MIN_TOTAL``)."""
    warm, end = measure.get("warm") or {}, measure.get("end") or {}
    if warm.get("median_shared") is None or end.get("median_shared") is None:
        return 0
    fell = int(warm["median_shared"]) - int(end["median_shared"])
    return fell if fell >= LEAK_MIN_TOTAL else 0


@public
@dataclass(frozen=True)
class MemoryBound:
    """The memory step's result (bytes): ``max_clients`` = floor((ram - parent_uss - shared) /
    child_uss): the parent's private pages and the shared pages once, then every child's own."""

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
        return (self.ram - self.parent_uss - self.shared) // max(1, children)


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
    # the parent's own private memory is in the budget too: the pool's footprint is the parent's
    # private pages + the shared pages once + every child's private pages
    parent_uss = int(measure["parent"]["uss"])
    limit = max_clients_from(ram, shared + parent_uss, child_uss, child_rss, safety_margin)
    return MemoryBound(
        ram=limit.ram, ram_source=source, shared=shared, child_uss=child_uss, child_rss=child_rss,
        max_clients=limit.max_clients, max_clients_no_sharing=limit.max_clients_no_sharing,
        parent_uss=parent_uss)


# ---------------------------------------------------------------------------------------------
# Step 3: the children sweep and the knee


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


def sweep_connections(children: int, clients: int | None, *, keepalive: bool = False) -> int:
    """The concurrency of a sweep point: the expected clients; else twice the children (every
    child busy, and a queue of as many in the listen backlog), or as many as the children with
    keep-alive (a kept-alive connection holds its child: more would only wait for a free one)."""
    if clients is not None:
        return clients
    return max(1, children) if keepalive else max(2, 2 * children)


@public
@dataclass(frozen=True)
class Knee:
    """Where more children stop adding throughput.

    ``children``: the smallest count as good as the best (``best_children``, the highest median);
    ``threshold`` = (1 - tolerance) x the best's median; ``flat``: no count measured is
    distinguishably slower than the best (the sweep cannot tell the counts apart); ``wide``: the
    counts whose interval stayed wider than ±10 % after a re-measure."""

    children: int
    rps: float
    best_children: int
    best_rps: float
    threshold: float
    tolerance: float
    by_interval: bool
    flat: bool
    wide: list[int]
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_good(point: Summary, threshold: float) -> bool:
    high = _high(point)
    return float(point["rps"]) >= threshold or (high is not None and high >= threshold)


def _below(point: Summary, other: Summary) -> bool:
    """``point`` is distinguishably slower than ``other``: its interval lies under the other's
    (under the other's median when either has no interval)."""
    high, other_low = _high(point), _low(other)
    if high is None or other_low is None:
        return float(point["rps"]) < float(other["rps"]) * (1 - LOSS_NOISE)
    return high < other_low


@public
def knee(points: Sequence[Summary], tolerance: float) -> Knee:
    """The smallest count as good as the best: its median is within ``tolerance`` of the best
    median, or its 95 % interval reaches that far (the measurement cannot tell it from a count
    that is). Deciding on the interval, not the median alone, is what makes it stable: a count at
    the plateau whose median happened to land low still qualifies, so two runs of the same app
    land on the same count or one sweep step apart; a count clearly below the plateau (its whole
    interval under the threshold) never does. Ties for the best go to the smaller count. Points
    without an interval (one trial) are decided on their median."""
    ordered = sorted(points, key=lambda p: int(p["children"]))
    best = max(ordered, key=lambda p: float(p["rps"]))  # max keeps the first (smallest) of equal ones
    best_rps = float(best["rps"])
    threshold = (1 - tolerance) * best_rps
    at = next(p for p in ordered if _as_good(p, threshold))
    by_interval = float(at["rps"]) < threshold
    n, best_n = int(at["children"]), int(best["children"])
    flat = len(ordered) >= 2 and not any(_below(p, best) for p in ordered)
    wide = [int(p["children"]) for p in ordered if p.get("wide")]
    if at is best:
        reasons = [f"throughput: the best measured is {children_text(n)}, {rate_with_interval(at)}"
                   + ("" if n == int(ordered[0]["children"]) else
                      f"; every smaller count stayed below {share_text(1 - tolerance)} of its median")]
    else:
        how = (f"its interval reaches within {share_text(tolerance)} of it" if by_interval
               else f"within {share_text(tolerance)} of it")
        reasons = [f"throughput: {_serve(n)} {rate_with_interval(at)}, as good as the best measured "
                   f"({children_text(best_n)}, {rate_with_interval(best)}): {how}"]
    if flat:
        reasons.append(f"no count measured is distinguishably slower than the best ({children_text(best_n)}): "
                       "the sweep cannot tell the counts apart at this load, so where throughput stops growing is not "
                       "known")
    if wide:
        which = (f"the interval of {children_text(wide[0])}" if len(wide) == 1
                 else f"the intervals of {_counts(wide)} children")
        reasons.append(f"{which} stayed wider than ±{WIDE:.0%} after a re-measure: the machine was noisy, and the "
                       "knee may move by a step between runs")
    return Knee(children=n, rps=float(at["rps"]), best_children=best_n, best_rps=best_rps, threshold=threshold,
                tolerance=tolerance, by_interval=by_interval, flat=flat, wide=wide, reasons=reasons)


@public
@dataclass(frozen=True)
class Target:
    """The load the pool must answer (every field optional).

    * ``clients``: concurrent clients (``--clients``);
    * ``peak_rate``: arrivals per second at the peak (``--peak-rate`` or an access log's busiest
      second), ``source`` says which;
    * ``p99_s``: the p99 latency to meet (``--p99``);
    * ``keepalive``: clients keep their connections open; ``proxy``: a buffering proxy is in
      front (False = ``--no-proxy``: a slow client holds its child for the transfer);
    * ``transfer_s``: the time to send a typical answer to a slow client, added to the busy time
      when there is no proxy (pass it only when the sweep's busy time does not include it already);
    * ``keepalive_idle_s``: the idle time a kept-alive connection holds its child per request,
      added when keep-alive is on without a proxy (same rule)."""

    clients: int | None = None
    peak_rate: float | None = None
    source: str = "--peak-rate"
    p99_s: float | None = None
    keepalive: bool = False
    proxy: bool = True
    transfer_s: float | None = None
    keepalive_idle_s: float | None = None

    @property
    def load(self) -> bool:
        """Whether a target load (clients or a rate) was given."""
        return self.clients is not None or self.peak_rate is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@public
@dataclass(frozen=True)
class ChildrenChoice:
    """How many children, and why.

    ``throughput``: the knee (:func:`knee`), ``best_children`` / ``best_rps`` the best measured;
    ``for_clients`` / ``for_rate`` / ``for_p99``: what each target needs (None when not given;
    ``for_p99`` None too when no count met it); ``memory_cap``: the memory bound;
    ``max_children``: the option's cap; ``chosen``: the recommendation; ``decided_by``: "memory",
    "max-children", "clients", "peak-rate", "p99" or "cpu-knee". For a peak rate: ``busy_s`` the
    time a child is held per request used, ``offered`` = rate x busy_s (children busy on
    average), ``headroom`` the children added for random arrivals, ``needed`` = ceil(offered +
    headroom), ``little`` the arithmetic as text."""

    best_children: int
    best_rps: float
    throughput: int
    for_clients: int | None
    for_rate: int | None
    for_p99: int | None
    memory_cap: int
    max_children: int
    chosen: int
    decided_by: str
    needed: int | None
    offered: float | None
    headroom: float | None
    busy_s: float | None
    little: str | None
    knee_flat: bool
    wide: list[int]
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@public
def busy_seconds(point: Summary) -> float:
    """The time a child is held per request at a sweep point: its ``busy_s`` (busy children /
    throughput, measured by the session) or, without it, Little's law on the closed loop:
    min(children, connections) / throughput (every connection keeps one child busy)."""
    value = point.get("busy_s")
    if value is not None:
        return float(value)
    rps = float(point["rps"])
    return min(int(point["children"]), int(point["connections"])) / rps if rps > 0 else 0.0


def busy_basis(point: Summary) -> str:
    """Why the point's busy time is the time itself or an upper bound, from its accept-queue share."""
    measured = busy_measured(point)
    if measured is None:
        return "exact when every child was kept busy, else an upper bound"
    share = queued_text(point)
    if measured:
        return f"a connection waited for a free child in {share} of the accept queue's samples: every child was busy"
    return (f"a connection waited for a free child in only {share} of the accept queue's samples, under "
            f"{QUEUED_BUSY * 100:.0f}%: children sat idle at times, so this is an upper bound")


def _p99_count(ordered: Sequence[Summary], p99_s: float, reasons: list[str]) -> int | None:
    meeting = [p for p in ordered if float(p["p99_ms"]) <= p99_s * 1000]
    if meeting:
        at = meeting[0]
        reasons.append(f"--p99 {ms_text(p99_s * 1000)} ms: {children_text(int(at['children']))} is the smallest count "
                       f"whose p99 met it ({ms_text(float(at['p99_ms']))} ms with {int(at['connections'])} clients)")
        return int(at["children"])
    lowest = min(ordered, key=lambda p: float(p["p99_ms"]))
    reasons.append(f"--p99 {ms_text(p99_s * 1000)} ms is not met by any count measured (best: "
                   f"{ms_text(float(lowest['p99_ms']))} ms with {children_text(int(lowest['children']))} and "
                   f"{int(lowest['connections'])} clients)")
    return None


@public
def size_pool(points: Sequence[Summary], memory: MemoryBound, target: Target | None = None, *, tolerance: float,
              max_children: int, cores: int, kind: str, decide: bool = True) -> ChildrenChoice:
    """The pool size by the method (module documentation); ``points`` are the sweep's aggregated
    points. The rate's busy time is the knee's: the time a child is held per request when the
    pool serves its best throughput (an overestimate at lower rates, on the safe side).
    ``decide`` False: only the knee and what the target needs (its reasons), the pool itself to be
    chosen by measuring candidates at the offered load (:mod:`pounder.tune._pools`)."""
    target = target or Target()
    ordered = sorted(points, key=lambda p: int(p["children"]))
    k = knee(ordered, tolerance)
    at = next(p for p in ordered if int(p["children"]) == k.children)
    reasons = list(k.reasons)
    memory_cap = memory.max_clients
    hard = max(1, min(memory_cap, max_children))
    wants: list[tuple[str, int]] = []
    for_clients = for_rate = needed = None
    offered = headroom = busy = None
    little = None
    if target.clients is not None and not decide:
        for_clients = target.clients
    elif target.clients is not None:
        for_clients = target.clients
        held = ("for its whole connection, idle time included (keep-alive with no buffering proxy)"
                if target.keepalive and not target.proxy else "while its request runs")
        reasons.append(f"--clients {target.clients}: each concurrent client holds a child {held}, so "
                       f"{_serve(target.clients)} them without a wait in the listen queue")
        wants.append(("clients", target.clients))
    if target.peak_rate is not None:
        service = busy_seconds(at)
        busy = service
        parts = [f"{ms_text(service * 1000)} ms held per request at {children_text(k.children)} (children / "
                 f"throughput measured there; {busy_basis(at)})"]
        if not target.proxy and target.transfer_s:
            busy += target.transfer_s
            parts.append(f"{ms_text(target.transfer_s * 1000)} ms sending the answer to a slow client (no proxy)")
        if target.keepalive and not target.proxy and target.keepalive_idle_s:
            busy += target.keepalive_idle_s
            parts.append(f"{ms_text(target.keepalive_idle_s * 1000)} ms idle on a kept-alive connection")
        offered = target.peak_rate * busy
        headroom = HEADROOM_SIGMAS * math.sqrt(offered)
        needed = max(1, math.ceil(offered + headroom - 1e-9))
        for_rate = needed
        rate = f"{target.peak_rate:,.6g}"
        little = (f"{rate} req/s x {ms_text(busy * 1000)} ms = {offered:,.1f} children busy on average; "
                  f"+ {HEADROOM_SIGMAS:g} x sqrt({offered:,.1f}) = {headroom:,.1f} for random arrivals: {needed}")
        busy_text = " + ".join(parts) if len(parts) > 1 else parts[0]
        reasons.append(f"peak rate ({target.source}) by Little's law: a child is busy {ms_text(busy * 1000)} ms per "
                       f"request ({busy_text}); {little}")
        if target.peak_rate > k.best_rps:
            best = next(p for p in ordered if int(p["children"]) == k.best_children)
            reasons.append(f"the peak rate {rate} req/s is beyond what was measured (the best: {k.best_children} "
                           f"children, {rate_with_interval(best)}): more children alone may not serve it")
        wants.append(("peak-rate", needed))
    for_p99 = _p99_count(ordered, target.p99_s, reasons) if target.p99_s is not None else None
    if for_p99 is not None:
        wants.append(("p99", for_p99))
    if not decide:
        return ChildrenChoice(best_children=k.best_children, best_rps=k.best_rps, throughput=k.children,
                              for_clients=for_clients, for_rate=for_rate, for_p99=for_p99, memory_cap=memory_cap,
                              max_children=max_children, chosen=hard,
                              decided_by="memory" if memory_cap <= max_children else "max-children", needed=needed,
                              offered=offered, headroom=headroom, busy_s=busy, little=little, knee_flat=k.flat,
                              wide=k.wide, reasons=reasons)
    if not target.load:
        chosen = hard
        decided_by = "memory" if memory_cap <= max_children else "max-children"
        reasons.append(f"no target load given: the pool is the memory bound, {children_text(memory_cap)} (as many "
                       "as the RAM budget allows, so clients rarely wait for a free child)")
        if decided_by == "max-children":
            reasons.append(f"capped at --max-children {max_children} (memory allows {memory_cap})")
        reasons.append(f"beyond {children_text(k.children)} no more throughput: more children only help slow or "
                       "waiting clients (slow networks, keep-alive, requests waiting on a database)")
        reasons.append(f"a smaller pool (down to {k.children}) serves as many requests per second, but connections "
                       "beyond the pool wait in the listen queue until a child is free: their latency grows with "
                       "the queue, and when the queue is full they are refused")
    else:
        if any(int(p["children"]) > k.children for p in ordered):
            wants.append(("cpu-knee", k.children))
        else:  # the sweep's end, not a knee: no floor for the target's own need
            reasons.append(f"throughput still grew at {children_text(k.children)}, the largest count measured: no "
                           "knee was found to keep the pool at or above")
        want = max(value for _, value in wants)
        decided_by = next(name for name, value in wants if value == want)
        chosen = want
        if want > memory_cap and memory_cap <= max_children:
            chosen, decided_by = max(1, memory_cap), "memory"
            fit = "fits" if memory_cap == 1 else "fit"
            reasons.append(f"memory: only {children_text(memory_cap)} {fit} the RAM budget, fewer than the {want} "
                           "wanted")
        elif want > max_children:
            chosen, decided_by = max_children, "max-children"
            reasons.append(f"--max-children {max_children} caps it, below the {want} wanted")
        elif decided_by == "cpu-knee":
            reasons.append(f"the target needs fewer children than the knee: {k.children}, so the pool serves the "
                           "best measured throughput")
        else:
            reasons.append(f"{children_text(chosen)}, decided by the {decided_by} target (the memory bound allows "
                           f"{memory_cap})")
    return ChildrenChoice(best_children=k.best_children, best_rps=k.best_rps, throughput=k.children,
                          for_clients=for_clients, for_rate=for_rate, for_p99=for_p99, memory_cap=memory_cap,
                          max_children=max_children, chosen=max(1, chosen), decided_by=decided_by, needed=needed,
                          offered=offered, headroom=headroom, busy_s=busy, little=little, knee_flat=k.flat,
                          wide=k.wide, reasons=reasons)


# ---------------------------------------------------------------------------------------------
# Step 4: MaxRequestsPerChild


def _trial_rates(point: Summary) -> list[float]:
    trials = point.get("trials") or []
    return [float(t["rps"]) for t in trials if t.get("counted", True) and t.get("rps") is not None]


@public
def mrpc_losses(points: Sequence[Summary]) -> list[dict[str, Any]]:
    """Copies of the MaxRequestsPerChild points, each finite one with ``vs_unlimited`` =
    ``{"ratio", "low", "high", "verdict"}``: :func:`pounder.compare.ratio_interval` of its counted
    trials' rps against the unlimited point's (``max_requests`` 0), higher is better. With fewer
    than 2 trials on either side: the ratio of the medians, no interval, verdict "unknown". The
    unlimited point, and every point when none is unlimited, get ``vs_unlimited`` None."""
    base = next((p for p in points if int(p["max_requests"]) == 0), None)
    out = []
    for point in points:
        copy = dict(point)
        copy["vs_unlimited"] = None
        if base is not None and point is not base:
            ours, theirs = _trial_rates(point), _trial_rates(base)
            if len(ours) >= 2 and len(theirs) >= 2:
                estimate = ratio_interval(ours, theirs, higher_is_better=True)
                copy["vs_unlimited"] = {"ratio": estimate.ratio, "low": estimate.low, "high": estimate.high,
                                        "verdict": estimate.verdict}
            elif float(base["rps"]) > 0:
                copy["vs_unlimited"] = {"ratio": float(point["rps"]) / float(base["rps"]), "low": None,
                                        "high": None, "verdict": "unknown"}
        out.append(copy)
    return out


def _vs(point: Summary) -> Mapping[str, Any] | None:
    vs = point.get("vs_unlimited")
    return vs if vs and vs.get("ratio") is not None else None


def _change_with_interval(vs: Mapping[str, Any]) -> str:
    text = f"{change_text(float(vs['ratio']))} vs unlimited"
    if vs.get("low") is not None and vs.get("high") is not None:
        text += f" ({change_text(float(vs['low']))} to {change_text(float(vs['high']))})"
    return text


def _affordable(vs: Mapping[str, Any], max_loss: float) -> bool:
    """A value is affordable when it is shown to cost at most ``max_loss``: its median within it,
    and the interval's low end within it too; or, when the comparison cannot tell it from
    unlimited ("no clear difference"), an interval no wider than a sweep point may be before it is
    flagged (its low end within :data:`WIDE`). A wider one is too noisy to decide on (:func:`_noisy`)
    and is not affordable. Without an interval (one trial), the median alone."""
    ratio = float(vs["ratio"])
    if ratio < 1 - max_loss:
        return False
    low = vs.get("low")
    if low is None or float(low) >= 1 - max_loss:
        return True
    return vs.get("verdict") == "no clear difference" and float(low) >= 1 - WIDE


def _noisy(vs: Mapping[str, Any], max_loss: float) -> bool:
    """Not affordable only because its interval is too wide to decide: the median within
    ``max_loss``, no clear difference from unlimited, the interval's low end past :data:`WIDE`."""
    low = vs.get("low")
    return (float(vs["ratio"]) >= 1 - max_loss and low is not None and float(low) < 1 - WIDE
            and vs.get("verdict") == "no clear difference")


def _cost_text(vs: Mapping[str, Any], max_loss: float) -> str:
    """What a value's measured cost says, against ``max_loss``, in the words its interval allows."""
    if not _affordable(vs, max_loss):
        if _noisy(vs, max_loss):
            return (f"its interval is wider than ±{WIDE:.0%}: too noisy to tell whether it costs more than "
                    f"{share_text(max_loss)}")
        return f"not shown to cost at most {share_text(max_loss)}"
    low = vs.get("low")
    if low is None or float(low) >= 1 - max_loss:
        return f"within {share_text(max_loss)}"
    return f"no clear difference from unlimited, its median within {share_text(max_loss)}"


def _too_costly(vs: Mapping[str, Any], max_loss: float) -> bool:
    """The whole interval (the median without one) costs more than ``max_loss``."""
    high = vs.get("high")
    return float(high if high is not None else vs["ratio"]) < 1 - max_loss


@public
@dataclass(frozen=True)
class RespawnModel:
    """A respawn every ``v`` requests costs ``k / v`` of a request's time: the ratio to unlimited is
    1 / (1 + k / v). ``k`` is fitted on ``fitted_on``, the largest value measured clearly slower
    than unlimited; ``agrees`` / ``disagrees``: the measured values whose interval holds (or not)
    the model's prediction. Usable only with ``k`` > 0, no disagreement, and at least one agreeing
    value besides the one it was fitted on (a fit always agrees with its own point)."""

    k: float
    fitted_on: int | None
    agrees: list[int]
    disagrees: list[int]

    @property
    def usable(self) -> bool:
        return self.k > 0 and not self.disagrees and any(v != self.fitted_on for v in self.agrees)

    def ratio(self, value: int) -> float:
        return 1.0 if value <= 0 else 1 / (1 + self.k / value)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _respawned(points: Sequence[Summary]) -> list[Summary]:
    return [p for p in points if int(p["max_requests"]) > 0 and int(p["respawns"]) > 0 and _vs(p) is not None]


@public
def respawn_model(points: Sequence[Summary]) -> RespawnModel:
    """The k / v model fitted on the points with ``vs_unlimited`` (:func:`mrpc_losses`) and checked
    against every one that respawned (the prediction within its interval; within ``LOSS_NOISE`` of
    its median when it has none)."""
    respawned = _respawned(points)
    slower = [p for p in respawned if (_vs(p) or {}).get("verdict") == "slower"
              or ((_vs(p) or {}).get("low") is None and float((_vs(p) or {})["ratio"]) <= 1 - LOSS_NOISE)]
    if not slower:
        return RespawnModel(k=0.0, fitted_on=None, agrees=[], disagrees=[])
    fit = max(slower, key=lambda p: int(p["max_requests"]))
    v = int(fit["max_requests"])
    k = max(0.0, (1 / float((_vs(fit) or {})["ratio"]) - 1) * v)
    model = RespawnModel(k=k, fitted_on=v, agrees=[], disagrees=[])
    for point in sorted(respawned, key=lambda p: int(p["max_requests"])):
        vs = _vs(point) or {}
        predicted = model.ratio(int(point["max_requests"]))
        if vs.get("low") is not None and vs.get("high") is not None:
            ok = float(vs["low"]) <= predicted <= float(vs["high"])
        else:
            ok = abs(predicted - float(vs["ratio"])) <= LOSS_NOISE
        (model.agrees if ok else model.disagrees).append(int(point["max_requests"]))
    return model


@public
def respawn_mechanism(kind: str) -> str:
    """What a respawn costs on this server, by its own mechanism."""
    return {
        "apache": "Apache's parent replaces exiting children in its once-a-second maintenance and spawns at most 1, "
                  "2, 4 ... 32 per second: each respawn is a fork and a new child's warm-up, and the pool runs a "
                  "child short until the next maintenance pass",
        "gunicorn": "gunicorn's arbiter replaces an exited worker in its loop: a fork plus loading the application "
                    "(unless --preload) and the new worker's warm-up",
        "starman": "Starman (Net::Server::PreFork) checks its children periodically and forks replacements: a fork "
                   "plus loading the application (unless --preload-app) and the new child's warm-up",
    }.get(kind, "each respawn is a fork and the new child's warm-up")


@public
@dataclass(frozen=True)
class MaxRequestsChoice:
    """MaxRequestsPerChild, and why (``value`` 0 = unlimited). ``decided_by``: "measured" (a
    measured value), "model" (beyond the largest measured value), "unlimited", or "memory" (a
    leak). ``loss``: the chosen value's cost as a fraction of the throughput (measured median,
    or the model's; None when neither says). ``respawn_cost_requests``: the model's ``k`` (0
    without a usable fit)."""

    value: int
    leak: bool
    growth_bytes_per_request: float
    child_start_bytes: int
    child_limit_bytes: int
    memory_limit: int | None
    respawn_cost_requests: float
    loss: float | None
    forced_by_memory: bool
    decided_by: str
    model: RespawnModel
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _model_text(model: RespawnModel) -> str:
    return (f"the model (one respawn costs k requests' worth: ratio = 1 / (1 + k / value); k = {model.k:,.1f}, "
            f"fitted on {model.fitted_on:,}) agrees with every value measured ({_counts(model.agrees)})")


def choose_max_requests(points: Sequence[Summary], measure: Summary, memory: MemoryBound, children: int, *,
                        max_loss: float, counts: str = "requests", kind: str = "command") -> MaxRequestsChoice:
    """MaxRequestsPerChild from the measured points and their intervals (:func:`_affordable`).

    With no leak: as large as possible, unlimited (the largest value measured and its cost are
    reported). Values that never respawned during their measurement say nothing about the cost and
    are left out. With a leak: the largest value that keeps a child within its share of the budget
    for ``children`` children (``forced_by_memory`` when it costs more than ``max_loss``); its cost
    from the measured points, or from :func:`respawn_model` when the model agrees with every
    measured point and the value is at most a decade beyond the largest measured. The model never
    overrides a measured point."""
    grown = growth(measure)
    if any("vs_unlimited" not in p for p in points):
        points = mrpc_losses(points)
    model = respawn_model(points)
    start = int(measure["warm"]["max_uss"])
    limit = memory.child_limit(children)
    unit = "requests" if counts == "requests" else "connections (= requests with keep-alive off)"
    respawned = sorted(_respawned(points), key=lambda p: int(p["max_requests"]), reverse=True)
    quiet = sorted(int(p["max_requests"]) for p in points
                   if int(p["max_requests"]) > 0 and int(p["respawns"]) == 0)
    reasons = list(grown.reasons)
    memory_limit: int | None = None
    forced = False
    loss: float | None
    if quiet:
        reasons.append(f"{_counts(quiet)} {unit}: no child was replaced during the measurement, so it says nothing "
                       "about the cost of respawning")
    if grown.leak:
        headroom = limit - start
        memory_limit = max(1, int(headroom // grown.second)) if headroom > 0 else 1
        value = _round_down(min(memory_limit, MAX_MODELLED))
        decided_by = "memory"
        reasons.append(f"a child starts at {_mib(start)} and may reach {_mib(limit)} ({children_text(children)} in the "
                       f"budget): at {_bytes(grown.second)} bytes per request, at most {memory_limit:,} {unit}, "
                       f"rounded to {value:,}")
        cheaper = [p for p in respawned if int(p["max_requests"]) <= value and _affordable(_vs(p) or {}, max_loss)]
        costlier = [p for p in respawned if int(p["max_requests"]) >= value and _too_costly(_vs(p) or {}, max_loss)]
        if cheaper:
            ref = max(cheaper, key=lambda p: int(p["max_requests"]))
            vs = _vs(ref) or {}
            loss = max(0.0, 1 - float(vs["ratio"]))
            measured = int(ref["max_requests"])
            reasons.append(f"respawning every {value:,} {unit} was measured: {_change_with_interval(vs)}"
                           if measured == value else
                           f"respawning every {value:,} {unit} costs at most what {measured:,} cost when measured "
                           f"({_change_with_interval(vs)}): a larger value respawns less often")
        elif costlier:
            ref = min(costlier, key=lambda p: int(p["max_requests"]))
            vs = _vs(ref) or {}
            loss, forced = 1 - float(vs["ratio"]), True
            reasons.append(f"memory forces it: respawning every {value:,} {unit} costs at least what "
                           f"{int(ref['max_requests']):,} measured, {_change_with_interval(vs)}, more than "
                           f"{share_text(max_loss)}; fewer children would leave room for a larger limit")
        elif model.usable and value <= MAX_DECADES * max(int(p["max_requests"]) for p in respawned):
            loss = 1 - model.ratio(value)
            forced = loss > max_loss
            reasons.append(f"{_model_text(model)}: respawning every {value:,} {unit} costs about {share_text(loss)} "
                           "(modelled)" + (f", more than {share_text(max_loss)}: memory forces it" if forced else ""))
        else:
            loss = None
            reasons.append(f"what respawning every {value:,} {unit} costs was not measured")
    else:
        # no leak (growth that unshares pages shows as USS growth too): as large as possible
        value, loss, decided_by = 0, 0.0, "unlimited"
        reasons.append("no leak measured: MaxRequestsPerChild as large as possible, unlimited (0); a child replaced "
                       "only costs a fork and a warm-up")
        if respawned:
            largest = respawned[0]
            top_vs = _vs(largest) or {}
            reasons.append(f"{int(largest['max_requests']):,} {unit}, the largest value measured: "
                           f"{_change_with_interval(top_vs)}: {_cost_text(top_vs, max_loss)}; a larger value "
                           "respawns less often and costs at most as much, if a limit is wanted against slow "
                           "growth a short run cannot see")
    if respawned:
        reasons.append(f"a respawn: {respawn_mechanism(kind)}")
    return MaxRequestsChoice(value=value, leak=grown.leak, growth_bytes_per_request=grown.second,
                             child_start_bytes=start, child_limit_bytes=limit, memory_limit=memory_limit,
                             respawn_cost_requests=model.k if model.usable else 0.0, loss=loss,
                             forced_by_memory=forced, decided_by=decided_by, model=model, reasons=reasons)


@public
def respawn_cost(points: Sequence[Summary]) -> float:
    """``k`` for single-trial points: the throughput one respawn costs, in requests' worth, fitted
    as rps(0) / rps(v) - 1 = k / v on the largest ``v`` whose loss stands out of the noise
    (``LOSS_NOISE``), else the smallest ``v`` that respawned. 0 when nothing respawned or the
    difference is negative (noise)."""
    base = next((p for p in points if int(p["max_requests"]) == 0), None)
    if base is None:
        base = max(points, key=lambda p: int(p["max_requests"]))
    base_rps = float(base["rps"])
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


@public
def burst_clients(choice: ChildrenChoice, target: Target | None = None) -> int:
    """The concurrency the spare-server burst steps to from idle: the target's clients; for a rate
    target the children it needs; with no target the chosen pool. Never more than the pool
    (beyond it clients queue whatever the spare settings)."""
    target = target or Target()
    if target.clients is not None:
        wanted = target.clients
    elif target.peak_rate is not None and choice.needed is not None:
        wanted = choice.needed
    else:
        wanted = choice.chosen
    return max(1, min(wanted, choice.chosen))


def default_spares(children: int) -> tuple[int, int, int]:
    """Apache's prefork defaults (StartServers 5, MinSpareServers 5, MaxSpareServers 10), capped by
    the children allowed."""
    start = min(5, children)
    low = min(5, children)
    return start, low, max(low + 1, min(10, children))


SLOW_START = ("apache",)
"""Servers whose children are slow to start (mod_perl: compilation, preloading)."""


class SpareSettings(tuple[int, int, int]):
    """(StartServers, MinSpareServers, MaxSpareServers), a tuple as before, with ``reasons``: what
    :func:`spare_settings` returns (not built by callers, so not on the package's face)."""

    reasons: list[str]

    def __new__(cls, start_servers: int, min_spare: int, max_spare: int,
                reasons: list[str] | None = None) -> SpareSettings:
        settings = super().__new__(cls, (start_servers, min_spare, max_spare))
        settings.reasons = list(reasons or [])
        return settings

    @property
    def start_servers(self) -> int:
        return self[0]

    @property
    def min_spare(self) -> int:
        return self[1]

    @property
    def max_spare(self) -> int:
        return self[2]

    def to_dict(self) -> dict[str, Any]:
        return {"start_servers": self[0], "min_spare": self[1], "max_spare": self[2], "reasons": list(self.reasons)}


@public
def spare_settings(children: int, burst: int, kind: str = "command",
                   child_start_s: float | None = None) -> SpareSettings:
    """The spare-server settings for a burst of ``burst`` clients from idle: start them all
    (StartServers = the burst, capped by ``children``), keep them when the load drops (MaxSpare =
    the burst). MinSpare: for servers whose children are slow to start (``SLOW_START``, mod_perl),
    close to MaxSpare (three quarters of it), so a burst finds children ready; otherwise a quarter.
    MaxSpare is always above MinSpare."""
    ready = max(1, min(burst, children))
    slow = kind in SLOW_START
    share = 0.75 if slow else 0.25
    low = max(1, min(ready - 1, math.ceil(ready * share))) if ready > 1 else 1
    high = max(ready, low + 1)
    reasons = [f"StartServers {ready} and MaxSpareServers {high}: the burst steps from idle to {ready} clients, "
               "and all of them are started at once and kept when the load drops"]
    started = ("" if child_start_s is None
               else f" (a child took {ms_text(child_start_s * 1000)} ms to start here)")
    if slow:
        reasons.append(f"MinSpareServers {low}, close to MaxSpareServers: mod_perl children are slow to start"
                       f"{started}, so the parent keeps them ready instead of spawning them during a burst")
    else:
        reasons.append(f"MinSpareServers {low}: a quarter of them kept spare{started}")
    return SpareSettings(start_servers=ready, min_spare=low, max_spare=high, reasons=reasons)


# ---------------------------------------------------------------------------------------------
# Advice


def _parent_language(kind: str) -> str:
    return {"apache": "perl", "starman": "perl", "gunicorn": "python"}.get(kind, "other")


PRELOAD_REMEDY = {
    "apache": "load the application in the parent: PerlRequire a startup file that loads it (PerlModule)",
    "starman": "start Starman with --preload-app",
    "gunicorn": "start gunicorn with --preload (or preload_app = True)",
}


@public
def preload_gain(measure: Summary, memory: MemoryBound) -> int | None:
    """MaxClients if what each child loads after the fork were loaded once in the parent: an
    estimate from one run's sizes, (RAM - shared - cold USS) / (USS - cold USS), where the cold USS
    (a child's private memory right after the server started, before any request) would become
    shared (at most down to ``PRELOAD_KEEPS_PRIVATE`` of the USS). None when the run preloads
    already, or a child's private memory is not at least ``PRIVATE_HEAVY`` times its shared, or the
    cold USS is under ``PRELOAD_WORTH``, or the estimate is no better."""
    if measure.get("preload"):
        return None
    cold = int(measure["cold"]["median_uss"])
    if memory.child_uss < PRIVATE_HEAVY * memory.shared or cold < PRELOAD_WORTH:
        return None
    moved = _preload_moved(cold, memory)
    after = max_clients_from(memory.ram, memory.shared + moved, memory.child_uss - moved, memory.child_rss).max_clients
    return after if after > memory.max_clients else None


def _preload_moved(cold: int, memory: MemoryBound) -> int:
    """What preloading would move from each child's private memory to shared: the cold USS, but
    never more than leaves ``PRELOAD_KEEPS_PRIVATE`` of the private memory."""
    return max(0, min(cold, memory.child_uss - math.ceil(PRELOAD_KEEPS_PRIVATE * memory.child_uss)))


def _preload_advice(kind: str, measure: Summary, memory: MemoryBound) -> list[str]:
    if kind not in PRELOAD_REMEDY:
        return []
    after = preload_gain(measure, memory)
    if after is None:
        return []
    cold = int(measure["cold"]["median_uss"])
    moved = _preload_moved(cold, memory)
    kept = ("" if moved == cold else
            f", at most {_mib(moved)} of it (a quarter of a child's private memory is taken to stay private: "
            "copy-on-write decays as children write to what they share)")
    return [f"preloading would allow about {children_text(after)} instead of {memory.max_clients}: an estimate from "
            f"this run's sizes, not a measurement. Each child ends at {_mib(memory.child_uss)} private next to "
            f"{_mib(memory.shared)} shared, and {_mib(cold)} of it was there right after it started (the "
            f"application, loaded after the fork); loaded once in the parent it would be shared{kept}: "
            f"({_mib(memory.ram)} - {_mib(memory.shared)} - {_mib(moved)}) / ({_mib(memory.child_uss)} - "
            f"{_mib(moved)}) = {after}. Remedy: {PRELOAD_REMEDY[kind]}, then measure again."]


def _cpu_share(point: Summary, cores: int) -> str:
    other = point.get("other_cores")
    return (f"server {cores_text(float(point['server_cores']))} of {cores} cores, load generator "
            f"{cores_text(float(point['client_cores']))}"
            + ("" if other is None or float(other) < 0.05 else f", other processes {cores_text(float(other))}"))


def _others_busy(point: Summary, cores: int) -> str | None:
    """The sentence naming other processes as the limit or the noise, when they used at least
    ``OTHER_BUSY`` of the cores at ``point``; None otherwise."""
    other = point.get("other_cores")
    if other is None or float(other) < OTHER_BUSY * cores:
        return None
    return (f"other processes on this machine (neither the server nor pounder) used {cores_text(float(other))} of "
            f"{cores} cores at {children_text(int(point['children']))}: they, not the application, limit what was "
            "measured here and add noise; tune on a quiet machine")


@public
def explain_throughput(sweep: Sequence[Summary], choice: ChildrenChoice, cores: int) -> list[str]:
    """Why throughput stops growing where it does (CPU, the offered concurrency, something the
    children share, or memory), each with its figures; the I/O-bound case as concurrency:
    throughput = children / time a child is held per request."""
    if len(sweep) < 2:
        return []
    ordered = sorted(sweep, key=lambda p: int(p["children"]))
    n = choice.throughput
    at = next(p for p in ordered if int(p["children"]) == n)
    bigger = [p for p in ordered if int(p["children"]) > n]
    used = float(at["server_cores"]) + float(at["client_cores"]) + float(at.get("other_cores") or 0.0)
    said: list[str] = []
    others = _others_busy(at, cores)
    if others is not None:
        said.append(others)
    if used >= CPU_SATURATED * cores:
        if bigger and others is None:
            last = bigger[-1]
            said.append(f"the server is CPU-bound: at {children_text(n)} the CPUs are busy ({_cpu_share(at, cores)}), "
                        f"and {children_text(int(last['children']))} served {rate_with_interval(last)}, no more than "
                        f"{children_text(n)}'s {rate_with_interval(at)}: more children only queue on the CPU and cost "
                        "memory")
        if float(at["client_cores"]) > 0 and cores < 4:
            said.append(f"the load generator ran on the server's cores ({cores_text(float(at['client_cores']))} of "
                        f"{cores} at {children_text(n)}): on a machine of its own the server would have more CPU")
        return said
    busy = busy_seconds(at)
    if busy > 0:
        cpu = at.get("server_cpu_us")
        cpu_text = "" if cpu is None else f", {float(cpu):,.0f} us of it on the server's CPU"
        # an upper bound of the busy time gives a lower bound of what the children can serve
        exact = busy_measured(at)
        held, serve = ("", "at most") if exact else ("at most ", "at least")
        said.append(f"the CPUs are not saturated at {children_text(n)} ({_cpu_share(at, cores)}): throughput is "
                    f"concurrency here. Each request holds a child for {held}{ms_text(busy * 1000)} ms{cpu_text} "
                    f"({busy_basis(at)}), so {_serve(n)} {serve} {n} / {ms_text(busy * 1000)} ms = "
                    f"{rps_text(n / busy)} req/s; measured {rate_with_interval(at)}")
    offered = int(at["connections"])
    if offered <= n and all(int(p["connections"]) <= n for p in bigger):
        said.append(f"throughput stops growing at {children_text(n)} because the load offered {offered} concurrent "
                    f"clients: each holds one child, so children beyond {offered} have nothing to do; what more "
                    "children would give at a higher load was not measured")
    elif bigger:
        tried = [p for p in bigger if int(p["connections"]) > n]
        if tried and others is None:
            last = tried[-1]
            said.append(f"{children_text(int(last['children']))} with {int(last['connections'])} clients served "
                        f"{rate_with_interval(last)}, no more than {children_text(n)}'s {rate_with_interval(at)}: more "
                        "children will not help at this load. Neither the CPUs nor the pool limit it: something the "
                        "children share does (a lock, a database, the network, the load generator)")
    elif n == choice.memory_cap:
        said.append(f"throughput still grows at {children_text(n)}, the most the memory allows: memory, not CPU, "
                    "limits this server; a smaller child or more RAM means more throughput")
    else:
        said.append(f"throughput still grows at {children_text(n)}, the largest count measured: more children may "
                    "serve more")
    return said


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
        said.append(f"each child grows {_mib(first)} on its first requests: code or data is loaded on first use, "
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
        said.append(f"copy-on-write is broken early: the children still share only {_mib(shared)} of the parent's "
                    f"{_mib(parent_rss)} ({float(sharing):.0%}). Cause: {cause}.")
    if other is not None and other_memory is not None:
        on, off = (measure, other) if measure.get("preload") else (other, measure)
        mem_on, mem_off = (memory, other_memory) if measure.get("preload") else (other_memory, memory)
        saved = int(off["end"]["max_uss"]) - int(on["end"]["max_uss"])
        verb = "saves" if saved > 0 else "costs"
        said.append(f"preloading {verb} {_mib(abs(saved))} of private memory per child (max child USS "
                    f"{_mib(int(off['end']['max_uss']))} without, {_mib(int(on['end']['max_uss']))} with): "
                    f"MaxClients {mem_off.max_clients} without, {mem_on.max_clients} with"
                    + ("" if measure.get("preload") or saved <= 0 else " - turn it on"))
    else:
        said += _preload_advice(kind, measure, memory)
    said += explain_throughput(sweep, choice, cores)
    if memory.max_clients_no_sharing < memory.max_clients:
        said.append("summing RSS (as ps and top suggest) would allow only "
                    f"{children_text(memory.max_clients_no_sharing)} instead of {memory.max_clients}: "
                    f"{_mib(memory.shared)} per child is shared with the parent")
    return said
