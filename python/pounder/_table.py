"""One table model for the text ``pounder`` prints and the page ``pounder report`` draws: a
table is its columns, each a header and how a row's cell reads (with the formats below), drawn
as aligned text or as an HTML ``<table>``. A table declared once is drawn alike in both: a new
column is one :class:`Column` in its declaration.

A column marked ``mark`` holds the row's mark (``chosen``, ``best``): the text puts it last, the
page next to the first column, where a narrow window still shows it (the page's wide tables
scroll sideways)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

Row = TypeVar("Row")
Other = TypeVar("Other")


@dataclass(frozen=True)
class Column(Generic[Row]):
    """A column: its ``header`` and its ``cell`` of a row (any value; drawn as ``str`` of it)."""

    header: str
    cell: Callable[[Row], object]
    mark: bool = False

    def of(self, get: Callable[[Other], Row]) -> Column[Other]:
        """This column in a table of rows of another kind, each read through ``get``."""
        cell = self.cell
        return Column(self.header, lambda row: cell(get(row)), self.mark)


@dataclass(frozen=True)
class Table(Generic[Row]):
    """Columns over rows of one kind: :meth:`text` and :meth:`html` draw the same cells."""

    columns: Sequence[Column[Row]]

    def cells(self, rows: Sequence[Row], *, mark_first: bool) -> tuple[list[str], list[list[str]]]:
        """The headers and each row's cells, the mark columns last or (``mark_first``) after the first."""
        marks = [c for c in self.columns if c.mark]
        rest = [c for c in self.columns if not c.mark]
        columns = [*rest[:1], *marks, *rest[1:]] if mark_first else [*rest, *marks]
        return [c.header for c in columns], [[str(c.cell(row)) for c in columns] for row in rows]

    def text(self, rows: Sequence[Row]) -> list[str]:
        """The table as ``pounder`` prints it: a line per row, cells right-aligned, indented by two."""
        return text_table(*self.cells(rows, mark_first=False))

    def html(self, rows: Sequence[Row]) -> str:
        """The table as the page draws it: an HTML ``<table>``, every cell escaped."""
        return html_table(*self.cells(rows, mark_first=True))


def text_table(headers: Sequence[object], rows: Sequence[Sequence[object]]) -> list[str]:
    """Aligned text: each column as wide as its widest cell, right-aligned, two spaces apart."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return ["  " + "  ".join(cell.rjust(widths[i]) for i, cell in enumerate(row)) for row in cells]


def html_table(headers: Sequence[object], rows: Sequence[Sequence[object]]) -> str:
    """An HTML ``<table>`` with a head row, every cell escaped."""
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


# ---------------------------------------------------------------------------------------------
# formats: "-" for a figure not measured


def whole(value: float | None) -> str:
    """Requests/s, a count: ``1,234``."""
    return "-" if value is None else f"{float(value):,.0f}"


def ms(value: float | None) -> str:
    """Milliseconds: ``12.3``."""
    return "-" if value is None else f"{float(value):,.1f}"


def cores(value: float | None) -> str:
    """CPU cores: ``1.25``."""
    return "-" if value is None else f"{float(value):.2f}"


def share(value: float | None) -> str:
    """A share as a whole percentage: ``97%``."""
    return "-" if value is None else f"{float(value) * 100:.0f}%"


def interval(low: float | None, high: float | None, spec: str = ",.0f") -> str:
    """A 95 % interval ``low-high`` (each in ``spec``), "-" without one."""
    return "-" if low is None or high is None else f"{float(low):{spec}}-{float(high):{spec}}"


def percent(value: float | None) -> str:
    """A signed change: ``-4.5%``."""
    return "-" if value is None else f"{value * 100:+.1f}%"


def ratio(value: float | None, low: float | None, high: float | None) -> str:
    """A ratio against a reference as a change with its interval: ``-4.5% (-7.0..-2.1)``."""
    if value is None:
        return "-"
    if low is None or high is None:
        return percent(float(value) - 1)
    return f"{percent(float(value) - 1)} ({(float(low) - 1) * 100:+.1f}..{(float(high) - 1) * 100:+.1f})"


def times(value: float | None) -> str:
    """A ratio as ``0.512x``, ``1.013x``, ``17.6x``, ``150x``; "-" without one."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}x"
    return f"{value:.1f}x" if value >= 10 else f"{value:.3f}x"


def flags(wide: object, remeasured: object) -> str:
    """A point's flags: ``wide`` (its interval), ``re-measured``."""
    if wide:
        return "wide" + (" (re-measured)" if remeasured else "")
    return "re-measured" if remeasured else ""
