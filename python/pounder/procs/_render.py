"""The ``pounder mem`` text: one fixed-width row per process, then the pool totals and the
MaxClients block. Plain text (the same on a terminal and in a pipe), so it can be parsed:
columns are separated by spaces and no cell contains a space, except the last one (the name)."""

from __future__ import annotations

from pounder import _units as units
from pounder._errors import check_instance, public
from pounder._units import count_text
from pounder._version import __version__
from pounder.procs._find import ServerTarget
from pounder.procs._maxclients import MaxClients, NoChildrenError
from pounder.procs._read import ProcMem
from pounder.procs._snapshot import PoolSnapshot

COLUMNS: tuple[tuple[str, int], ...] = (
    # (header, width); a negative width is left-aligned
    ("pid", 8),
    ("role", -10),
    ("VSZ", 10),
    ("RSS", 9),
    ("shared", 9),
    ("private", 9),
    ("PSS", 9),
    ("swap", 8),
    ("CPU", 9),
    ("age", 9),
)
_LABEL = 30


def mib(size: int | None) -> str:
    """A cell in MiB without thousands separators ("4096.0"): a number a script reads as it is."""
    return units.mib(size, grouped=False)




def _cells(cells: tuple[str, ...], name: str) -> str:
    parts = [
        cell.ljust(-width) if width < 0 else cell.rjust(width) for cell, (_, width) in zip(cells, COLUMNS, strict=True)
    ]
    return " ".join(parts) + "  " + name


def header_line() -> str:
    return _cells(tuple(header for header, _ in COLUMNS), "name")


def process_line(proc: ProcMem) -> str:
    cells = (
        str(proc.pid),
        proc.role,
        mib(proc.vsz),
        mib(proc.rss),
        mib(proc.shared),
        mib(proc.private),
        mib(proc.pss),
        mib(proc.swap),
        f"{proc.cpu_s:.2f}",
        units.age_text(proc.age_s),
    )
    return _cells(cells, proc.name)


def _rows(processes: tuple[ProcMem, ...], max_rows: int | None) -> list[str]:
    if max_rows is None or len(processes) <= max_rows:
        return [process_line(proc) for proc in processes]
    shown = max(1, max_rows - 1)
    hidden = len(processes) - shown
    more = f"... and {hidden} more process{'es' if hidden > 1 else ''}"
    return [*(process_line(proc) for proc in processes[:shown]), more]


def _line(label: str, value: str) -> str:
    return f"{label + ':':<{_LABEL}}{value}"


def _max_clients_lines(result: MaxClients | None, reason: str | None, children: int) -> list[str]:
    if result is None:
        reason = reason or (NoChildrenError.reason if children == 0 else "not computed")
        return [_line("MaxClients", f"n/a ({reason})")]
    if result.ram_source == "given":
        budget = f"{mib(result.ram)} MiB (--ram)"
    elif result.mem_available is None:  # a cgroup's memory limit: the source names it (--ram cgroup)
        budget = f"{mib(result.ram)} MiB ({result.ram_source})"
    else:
        budget = (
            f"{mib(result.ram)} MiB (MemAvailable {mib(result.mem_available)} MiB"
            f" + footprint {mib(result.footprint)} MiB)"
        )
    return [
        "MaxClients",
        _line("  RAM budget", budget),
        _line("  shared (median child)", f"{mib(result.shared)} MiB"),
        _line("  max child USS", f"{mib(result.max_child_uss)} MiB"),
        _line("  MaxClients", f"{result.max_clients} = (RAM - shared) / max child USS"),
        _line(
            "  without sharing",
            f"{result.max_clients_no_sharing} = RAM / max child RSS ({mib(result.max_child_rss)} MiB)",
        ),
    ]


@public
def render_mem(
    snapshot: PoolSnapshot,
    max_clients: MaxClients | None = None,
    *,
    target: ServerTarget | None = None,
    max_clients_reason: str | None = None,
    max_rows: int | None = None,
) -> str:
    """The ``pounder mem`` report as text (ends with a newline). With ``max_rows``, only the
    first ``max_rows`` processes get a row (the totals still cover them all)."""
    check_instance(snapshot, PoolSnapshot, "render_mem: snapshot")
    totals = snapshot.totals
    grandchildren = totals.grandchildren
    found = f", found by {target.found_by}" if target is not None else ""
    lines = [
        f"pounder {__version__} mem: {snapshot.parent.name} (pid {snapshot.root_pid}{found})",
        "Sizes in MiB (1 MiB = 1,048,576 bytes); private = USS; CPU = user + system seconds",
        "",
        header_line(),
        *_rows(snapshot.processes, max_rows),
        "",
        _line(
            "Footprint (sum of PSS)",
            f"{mib(totals.footprint)} MiB for {count_text(totals.processes, 'process', 'processes')} "
            f"(the sum of RSS, {mib(totals.rss_sum)} MiB, would count shared pages once per process)",
        ),
        _line("Children", str(totals.children) + (f" + {grandchildren} grandchildren" if grandchildren else "")),
    ]
    if totals.children:
        sharing = totals.median_sharing
        lines += [
            _line(
                "One more child costs",
                f"median {mib(totals.median_child_uss)} MiB, max {mib(totals.max_child_uss)} MiB (private, USS)",
            ),
            _line(
                "Child shared",
                f"min {mib(totals.min_child_shared)} MiB, median {mib(totals.median_child_shared)} MiB",
            ),
            _line(
                "Sharing with the parent",
                "n/a" if sharing is None else f"median {sharing * 100:.1f} % (child shared / parent RSS)",
            ),
        ]
    lines.append(_line("Swap", f"{mib(totals.swap)} MiB"))
    if not snapshot.own_excluded:
        lines.append(_line("Note", "pounder's own process could not be taken out of the figures (needs root): "
                                   "file pages the server shares only with it (the same Python, libraries) "
                                   "count as shared, so private reads lower than without pounder"))
    if snapshot.skipped:
        pids = ", ".join(str(pid) for pid in snapshot.skipped)
        noun = "pid" if len(snapshot.skipped) == 1 else "pids"
        lines.append(_line("Skipped", f"{noun} {pids} (exited while being read)"))
    lines += ["", *_max_clients_lines(max_clients, max_clients_reason, totals.children)]
    return "\n".join(lines) + "\n"
