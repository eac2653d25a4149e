"""A :class:`~pounder.top.TopView` as text: the table of ``pounder top`` (one row per child, the
exited ones at the end, a totals line) and the one line shown under a bench's progress."""

from __future__ import annotations

from pounder._errors import public
from pounder._units import age_text, children_text, count_text, mib, mib_unit
from pounder.top._view import ChildRow, TopView

_DASH = "—"
_HEADER = ("pid", "state", "requests", "CPU %", "USS MiB", "shared MiB", "PSS MiB", "age", "")
_RIGHT = (True, False, True, True, True, True, True, True, False)


def _state(row: ChildRow) -> str:
    return f"{row.state} ({row.detail})" if row.detail and row.state != "running" else row.state


def _cells(row: ChildRow) -> tuple[str, ...]:
    return (str(row.pid), _state(row), _DASH if row.requests is None else f"{row.requests:,}",
            _DASH if row.cpu_percent is None else f"{row.cpu_percent:.1f}", mib(row.uss), mib(row.shared),
            mib(row.pss), age_text(row.age_s), "new" if row.new else "")


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    return ["  ".join(cell.rjust(w) if right else cell.ljust(w)
                      for cell, w, right in zip(row, widths, _RIGHT, strict=True)).rstrip() for row in rows]


def totals_line(view: TopView) -> str:
    """children by state, footprint, req/s, accept queue: "6 children (4 accept, 2 running) ..."."""
    totals = view.totals
    states = ", ".join(f"{n} {state}" for state, n in totals.by_state.items())
    rate = _DASH if totals.requests_per_s is None else f"{totals.requests_per_s:,.1f}"
    queue = _DASH if totals.accept_queue is None else f"{totals.accept_queue:,}"
    return (children_text(totals.children) + (f" ({states})" if states else "")
            + f"  footprint {mib_unit(totals.footprint)}  req/s {rate}  accept queue {queue}")


@public
def render_top(view: TopView, *, max_rows: int | None = None) -> str:
    """The view as the text ``pounder top`` shows (``max_rows``: at most that many child rows, the
    busiest by CPU first, then by pid; the totals always)."""
    source = f"states from {view.status}'s status page" if view.status else "states from /proc"
    title = (f"pounder top: {view.name} (pid {view.root_pid}, {view.found_by}); {source}; "
             + ("CPU % since the view before" if view.interval_s is not None else "CPU % from the next view"))
    children = list(view.children)
    if max_rows is not None and len(children) > max_rows:
        children = sorted(children, key=lambda c: (-(c.cpu_percent or 0.0), c.pid))[:max_rows]
    children.sort(key=lambda c: c.pid)
    rows = [_HEADER, *(_cells(child) for child in children)]
    rows += [(str(e.pid), "exited", _DASH if e.requests is None else f"{e.requests:,}", "", "", "", "",
              age_text(e.age_s), "exited") for e in view.exited]
    lines = [title, totals_line(view), "", *_table(rows)]
    hidden = len(view.children) - len(children)
    if hidden:
        lines.append(f"... {count_text(hidden, 'more child', 'more children')} (a taller terminal shows them)")
    lines.extend(f"note: {note}" for note in view.notes)
    return "\n".join(lines) + "\n"


@public
def compact_line(view: TopView, count: int = 3) -> str:
    """The children in one line, for a bench's progress: by state, footprint, the ``count``
    busiest by CPU: "server: 5 children (3 accept, 2 running)  footprint 88.1 MiB  top CPU 1234
    41%, 1240 38%"."""
    states = ", ".join(f"{n} {state}" for state, n in view.totals.by_state.items())
    busiest = ", ".join(f"{c.pid} {c.cpu_percent:.0f}%" for c in view.top_by_cpu(count))
    return (f"server: {children_text(view.totals.children)}" + (f" ({states})" if states else "")
            + f"  footprint {mib_unit(view.totals.footprint)}" + (f"  top CPU {busiest}" if busiest else ""))
