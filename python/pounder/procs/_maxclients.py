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

Sizes: ``k``, ``M``, ``G``, ``T`` are powers of 1024 here (``512M`` = 512 MiB, ``4G`` = 4 GiB,
``1.5GiB``), as RAM is sold and as ``free -h`` and ``top`` show it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from pounder._errors import PounderError, UsageError
from pounder.procs._read import mem_available
from pounder.procs._snapshot import PoolSnapshot

MIB = 1024 * 1024
PAGE_SIZE = 4096
SHARED_BASIS = "median child shared"
_SIZE_RE = re.compile(r"(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?:(?P<prefix>[kKmMgGtT])(?:i?[bB])?|[bB])?")
_PREFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str, what: str = "--ram") -> int:
    """A size in bytes: ``512M``, ``4G``, ``1.5GiB``, ``4gb``, ``2048k``, ``1000000`` (a bare number
    is bytes). Every prefix is a power of 1024 (``G`` = ``GiB`` = 2**30). Raises
    :class:`~pounder.UsageError` for anything else."""
    match = _SIZE_RE.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"invalid {what} {text!r}: use e.g. 512M, 4G, 1.5GiB (k/M/G/T are powers of 1024)")
    return round(float(match["num"]) * _PREFIX[(match["prefix"] or "").lower()])


def parse_ram(text: str, what: str = "--ram") -> int:
    """:func:`parse_size` for a RAM budget: at least 1 MiB (``--ram 4`` is surely a missing unit)."""
    size = parse_size(text, what)
    if size < MIB:
        raise UsageError(f"{what} {text!r} is less than 1 MiB: give a unit, e.g. 4G or 512M")
    return size


def default_ram_budget(snapshot: PoolSnapshot) -> tuple[int, int]:
    """``(budget, MemAvailable)``: the RAM the server could use = MemAvailable (what is still
    free for it) + what the server already uses (its sum of PSS)."""
    available = mem_available()
    return available + snapshot.totals.footprint, available


@dataclass(frozen=True)
class MaxClients:
    """The MaxClients computation with every input (bytes).

    * ``ram``: the budget; ``ram_source`` says where it came from ("given" or
      "MemAvailable + footprint"), ``mem_available`` and ``footprint`` are set in the latter case.
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def max_clients(ram_bytes: int | str | None, snapshot: PoolSnapshot) -> MaxClients:
    """MaxClients for a RAM budget (bytes, or a size such as ``"4G"``; None: MemAvailable plus
    the server's own footprint) from a snapshot's measured child sizes. Raises
    :class:`~pounder.PounderError` when the server has no children to measure."""
    totals = snapshot.totals
    if (
        totals.children == 0
        or totals.max_child_uss is None
        or totals.max_child_rss is None
        or totals.median_child_shared is None
    ):
        raise PounderError("cannot compute MaxClients: the server has no child processes to measure")
    available: int | None = None
    if ram_bytes is None:
        ram, available = default_ram_budget(snapshot)
        source = "MemAvailable + footprint"
    else:
        ram = parse_ram(ram_bytes) if isinstance(ram_bytes, str) else ram_bytes
        if isinstance(ram, bool) or not isinstance(ram, int) or ram <= 0:
            raise UsageError(f"the RAM budget must be a positive number of bytes, got {ram_bytes!r}")
        source = "given"
    shared = totals.median_child_shared
    uss = max(totals.max_child_uss, PAGE_SIZE)  # no child runs in less than a page
    rss = max(totals.max_child_rss, PAGE_SIZE)
    return MaxClients(
        ram=ram,
        ram_source=source,
        mem_available=available,
        footprint=totals.footprint,
        shared=shared,
        shared_basis=SHARED_BASIS,
        max_child_uss=totals.max_child_uss,
        max_child_rss=totals.max_child_rss,
        children=totals.children,
        max_clients=max(0, (ram - shared) // uss),
        max_clients_no_sharing=ram // rss,
    )
