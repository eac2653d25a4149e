"""Steps 1 and 2 of a tuning run, from the size measurement (pure functions, no I/O): the
children's growth per request and the leak verdict (:func:`growth`), and the memory bound
(:func:`memory_bound`): MaxClients = (RAM - parent USS - shared) / child private size (USS), next
to the no-sharing figure RAM / child RSS.

* :func:`growth`: every criterion with its number: growth per request in the second half of the
  size measurement against ``LEAK_BYTES_PER_REQUEST``, the children's total growth in that half
  against ``LEAK_MIN_TOTAL``, and the second half's rate against ``LEAK_STILL_GROWING`` of the
  first half's (growth that slows down is the children settling).
* :func:`memory_bound`: the parent's private pages and the shared pages once, then every child's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pounder._errors import public
from pounder._records import Record
from pounder.procs import max_clients_from
from pounder.tune._text import Summary, _bytes, share_text

LEAK_BYTES_PER_REQUEST = 512
"""Growth per request (summed over the children) below which no leak is called: allocator noise
(a few pages per child over the measurement) stays under it."""

LEAK_MIN_TOTAL = 64 * 1024
"""The children's total growth in the second half below which no leak is called: too little to
tell from a page or two of allocator noise, whatever the rate."""

LEAK_STILL_GROWING = 0.25
"""The second half of the measurement must grow at least this fraction of the first half's rate."""


@public
@dataclass(frozen=True)
class Growth(Record):
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
class MemoryBound(Record):
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

    def child_limit(self, children: int) -> int:
        """The private size each of ``children`` children may reach within the budget."""
        return (self.ram - self.parent_uss - self.shared) // max(1, children)


@public
def memory_bound(measure: Summary, ram: int | None, safety_margin: int, ram_source: str | None = None) -> MemoryBound:
    """MaxClients from the sizes at the end of the size measurement (after K requests per child);
    ``ram_source``: where a given ``ram`` came from when not typed as a size (``--ram cgroup``)."""
    end = measure["end"]
    shared, child_uss, child_rss = int(end["median_shared"]), int(end["max_uss"]), int(end["max_rss"])
    if ram is None:
        ram = int(measure["mem_available"]) + int(end["footprint"])
        source = "MemAvailable + server footprint - safety margin"
    else:  # a given budget is taken as it is: the safety margin is for the default one only
        safety_margin, source = 0, ram_source or "given"
    # the parent's own private memory is in the budget too: the pool's footprint is the parent's
    # private pages + the shared pages once + every child's private pages
    parent_uss = int(measure["parent"]["uss"])
    limit = max_clients_from(ram, shared + parent_uss, child_uss, child_rss, safety_margin)
    return MemoryBound(
        ram=limit.ram, ram_source=source, shared=shared, child_uss=child_uss, child_rss=child_rss,
        max_clients=limit.max_clients, max_clients_no_sharing=limit.max_clients_no_sharing,
        parent_uss=parent_uss)

