"""MaxClients from measured numbers, the classic mod_perl guide formula::

    MaxClients = (RAM - shared) / (max child size - shared)

with "max child size - shared" taken as the largest child's USS (its private memory, which is
what the kernel would free if it exited) and "shared" as the **median** child's shared size
(Shared_Clean + Shared_Dirty). The median, not the minimum: the shared pages sit in RAM once,
whatever the number of children, and the typical child's shared size estimates that set better
than the one child that has written to most of them (that child is already accounted for by the
max USS in the denominator); the median also subtracts more than the minimum, so the result is
the more cautious of the two.

The figure without any sharing, RAM / max child RSS, is given next to it: it is what a tool that
sums RSS would conclude.

The arithmetic is :func:`max_clients_from` (pure: numbers in, numbers out), used by ``pounder mem``
(:func:`max_clients`, from a snapshot) and ``pounder tune`` (``memory_bound``, from its stored
size measurement).
"""

from __future__ import annotations

from dataclasses import dataclass

from pounder._errors import PounderError, UsageError, check_instance, check_type, public
from pounder._records import Record
from pounder.procs._read import mem_available
from pounder.procs._snapshot import PoolSnapshot
from pounder.servers import RamBudget, parse_ram_budget

PAGE_SIZE = 4096
SHARED_BASIS = "median child shared"


class NoChildrenError(PounderError):
    """The server has no child process, so there is no child size to compute MaxClients from."""

    reason = "the server has no child processes to measure"

    def __init__(self, reason: str | None = None) -> None:
        super().__init__(f"cannot compute MaxClients: {reason or self.reason}")


@public
def why_no_max_clients(children: int, child_uss: int | None, child_rss: int | None) -> str | None:
    """Why MaxClients is no figure for these child sizes (bytes), None when it is one: no child
    was measured (:attr:`NoChildrenError.reason`), or the largest child's USS or RSS is less than
    a page: no process runs in less, so such a size is no measurement and a MaxClients divided
    by it is no limit. ``pounder mem``, ``pounder tune`` and the page read by this one rule."""
    if children == 0 or child_uss is None or child_rss is None:
        return NoChildrenError.reason
    small = [f"{name} {size:,} bytes" for name, size in (("USS", child_uss), ("RSS", child_rss)) if size < PAGE_SIZE]
    if small:
        return (f"the largest child measured {' and '.join(small)}, less than a page ({PAGE_SIZE:,} bytes): "
                "no process runs in less, so it is no measurement")
    return None


@public
@dataclass(frozen=True)
class ClientLimit:
    """What :func:`max_clients_from` computed: ``ram``, the budget the counts are for (the RAM
    less the safety margin, at least 0), and the two counts."""

    ram: int
    max_clients: int
    max_clients_no_sharing: int


@public
def max_clients_from(ram: int, shared: int, child_uss: int, child_rss: int, safety_margin: int = 0) -> ClientLimit:
    """MaxClients for ``ram`` bytes less ``safety_margin``: floor((budget - shared) / child USS),
    and without sharing floor(budget / child RSS), both at least 0. A child is taken as at least
    one page (no child runs in less)."""
    for name, value in (("ram", ram), ("shared", shared), ("child_uss", child_uss), ("child_rss", child_rss),
                        ("safety_margin", safety_margin)):
        check_type(value, int, f"max_clients_from: {name}", "a whole number of bytes")
    budget = max(0, ram - safety_margin)
    return ClientLimit(
        ram=budget,
        max_clients=max(0, (budget - shared) // max(child_uss, PAGE_SIZE)),
        max_clients_no_sharing=max(0, budget // max(child_rss, PAGE_SIZE)),
    )


@public
def default_ram_budget(snapshot: PoolSnapshot) -> tuple[int, int]:
    """``(budget, MemAvailable)``: the RAM the server could use = MemAvailable (what is still
    free for it) + what the server already uses (its sum of PSS)."""
    available = mem_available()
    return available + snapshot.totals.footprint, available


@public
@dataclass(frozen=True)
class MaxClients(Record):
    """The MaxClients computation with every input (bytes).

    * ``ram``: the budget; ``ram_source`` says where it came from ("given", a cgroup's memory
      limit as :class:`~pounder.servers.RamBudget` names it (``--ram cgroup``), or
      "MemAvailable + footprint"), ``mem_available`` is set in the latter case.
    * ``shared``: the median child's shared size (``shared_basis``).
    * ``max_child_uss``: the largest child's USS, the formula's "max child size - shared".
    * ``max_clients`` = floor((ram - shared) / max_child_uss), at least 0.
    * ``max_clients_no_sharing`` = floor(ram / max_child_rss): as if nothing were shared.
    """

    ram: int
    ram_source: str
    mem_available: int | None
    footprint: int
    shared: int
    shared_basis: str
    max_child_uss: int
    max_child_rss: int
    children: int
    max_clients: int
    max_clients_no_sharing: int


@public
def max_clients(ram_bytes: int | str | RamBudget | None, snapshot: PoolSnapshot) -> MaxClients:
    """MaxClients for a RAM budget (bytes, a budget as ``--ram`` takes it: a size such as ``"4G"``
    or ``"cgroup[:PATH]"``, see :func:`~pounder.servers.parse_ram_budget`, or one already parsed;
    None: MemAvailable plus the server's own footprint) from a snapshot's measured child sizes.
    Raises :class:`NoChildrenError` when the server has no children to measure."""
    check_instance(snapshot, PoolSnapshot, "max_clients: snapshot")
    budget = None if ram_bytes is None else _ram(ram_bytes)
    ram = None if budget is None else budget.bytes
    totals = snapshot.totals
    if totals.children == 0 or totals.median_child_shared is None:
        raise NoChildrenError
    why = why_no_max_clients(totals.children, totals.max_child_uss, totals.max_child_rss)
    if why is not None or totals.max_child_uss is None or totals.max_child_rss is None:
        raise NoChildrenError(why)
    available: int | None = None
    if ram is None:
        ram, available = default_ram_budget(snapshot)
        source = "MemAvailable + footprint"
    else:
        source = (budget.source if budget is not None else None) or "given"
    limit = max_clients_from(ram, totals.median_child_shared, totals.max_child_uss, totals.max_child_rss)
    return MaxClients(
        ram=ram, ram_source=source, mem_available=available, footprint=totals.footprint,
        shared=totals.median_child_shared, shared_basis=SHARED_BASIS,
        max_child_uss=totals.max_child_uss, max_child_rss=totals.max_child_rss, children=totals.children,
        max_clients=limit.max_clients, max_clients_no_sharing=limit.max_clients_no_sharing,
    )  # fmt: skip


def _ram(ram_bytes: int | str | RamBudget) -> RamBudget:
    """A RAM budget in bytes, as ``--ram`` takes it, or already parsed; :class:`~pounder.UsageError` otherwise."""
    if isinstance(ram_bytes, RamBudget):
        budget = ram_bytes
    elif isinstance(ram_bytes, str):
        budget = parse_ram_budget(ram_bytes)
    elif isinstance(ram_bytes, bool) or not isinstance(ram_bytes, int):
        budget = RamBudget(0)
    else:
        budget = RamBudget(ram_bytes)
    if isinstance(budget.bytes, bool) or not isinstance(budget.bytes, int) or budget.bytes <= 0:
        raise UsageError(f"the RAM budget must be a positive number of bytes or a size such as 4G, got {ram_bytes!r}")
    return budget
