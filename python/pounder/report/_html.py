"""The page: one self-contained HTML file (inline CSS, charts as inline SVG drawn by matplotlib),
readable on a laptop, printable, nothing fetched at view time.

Every report kind builds a list of :class:`Section` s; :func:`page` puts them together. Charts
are ``<figure class="chart" id="...">`` elements holding one inline ``<svg>`` each, so a test can
check that every chart is there.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pounder._errors import UsageError, public
from pounder._records import number_problem
from pounder._table import html_table
from pounder._version import __version__

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH_IN = 7.5
HEIGHT_IN = 3.2

_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d232a;
       margin: 0 auto; padding: 1.5em 2em 3em; max-width: 62em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
.meta { color: #57606a; font-size: 0.9em; }
figure.chart { margin: 1em 0; }
figure.chart svg { width: 100%; height: auto; }
figcaption { color: #57606a; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.8em 0; font-variant-numeric: tabular-nums; font-size: 0.92em; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e5e8eb; text-align: right; }
th { background: #f6f8fa; }
td:first-child, th:first-child { text-align: left; }
pre { background: #f6f8fa; padding: 0.8em 1em; overflow-x: auto; font-size: 0.88em; border-radius: 4px; }
.callout { background: #eef6ee; border-left: 4px solid #2da44e; padding: 0.6em 1em; margin: 1em 0; }
ul.reasons li { margin: 0.2em 0; }
div.scroll { overflow-x: auto; }
details { margin: 0.6em 0; }
details > summary { cursor: pointer; color: #57606a; }
@media print { body { max-width: none; padding: 0; } h2 { break-after: avoid; } figure { break-inside: avoid; } }
"""


class ReportError(UsageError):
    """A result given cannot be reported on: unreadable, incomplete or malformed (the CLI exits
    with status 2)."""


def check_numbers(document: object, schema: str, source: object) -> None:
    """:class:`ReportError` naming ``source`` (its path) and the key when a number of
    ``document`` is out of the bounds of its schema ``schema``: a negative count, a fraction of a
    request (:func:`pounder._records.number_problem`)."""
    problem = number_problem(document, schema)
    if problem:
        raise ReportError(f"{source}: {problem}")


@public
@dataclass
class Section:
    """A titled part of the page; ``body`` is HTML (already escaped where needed)."""

    title: str
    body: list[str] = field(default_factory=list)

    def add(self, fragment: str) -> Section:
        self.body.append(fragment)
        return self


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def paragraph(text: str) -> str:
    return f"<p>{esc(text)}</p>"


def pre(text: str) -> str:
    return f"<pre>{esc(text.rstrip())}</pre>"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """An HTML table, every cell escaped (:func:`pounder._table.html_table`)."""
    return html_table(headers, rows)


def bullets(items: Sequence[str], css: str = "reasons") -> str:
    """A list; an item's lines after its first (a snippet of configuration) kept as lines."""
    def item(text: str) -> str:
        first, _, snippet = text.partition("\n")
        return f"<li>{esc(first)}" + (f"<pre>{esc(snippet)}</pre>" if snippet else "") + "</li>"

    return f'<ul class="{css}">' + "".join(item(i) for i in items) + "</ul>"


def scroll(fragment: str) -> str:
    """``fragment`` (a wide table) in a block that scrolls sideways instead of overflowing the page."""
    return f'<div class="scroll">{fragment}</div>'


def details(summary: str, body: str) -> str:
    """A collapsed part: ``summary`` (escaped here) is shown, ``body`` (HTML, already escaped
    where needed) when the reader opens it."""
    return f"<details><summary>{esc(summary)}</summary>{body}</details>"


def _pyplot() -> Any:
    from pounder._matplotlib import require_matplotlib

    matplotlib = require_matplotlib("an HTML report")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                         "axes.spines.top": False, "axes.spines.right": False, "svg.hashsalt": "pounder"})
    return plt


@contextmanager
def chart(chart_id: str, caption: str, out: list[str], *, rows: int = 1, cols: int = 1,
          height: float = HEIGHT_IN) -> Iterator[Any]:
    """Draw a figure with ``rows`` x ``cols`` axes (yielded: one Axes, or an array of them) and
    append it to ``out`` as ``<figure class="chart" id=chart_id>`` with inline SVG."""
    plt = _pyplot()
    fig, axes = plt.subplots(rows, cols, figsize=(WIDTH_IN, height * rows), squeeze=True)
    try:
        yield axes
        fig.tight_layout()
        out.append(f'<figure class="chart" id="{esc(chart_id)}">{svg_of(fig)}'
                   f"<figcaption>{esc(caption)}</figcaption></figure>")
    finally:
        plt.close(fig)


def svg_of(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog, no DOCTYPE, no fixed size)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    return re.sub(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"', r"\1", text, count=1)


def label_axes(ax: Axes, x: str, y: str, title: str | None = None) -> None:
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if title:
        ax.set_title(title, fontsize=10)


def page(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    """The whole HTML document."""
    from jinja2 import Environment

    template = Environment(autoescape=True).from_string(_TEMPLATE)
    return template.render(title=title, subtitle=subtitle, css=_CSS, version=__version__,
                           sections=[(s.title, "\n".join(s.body)) for s in sections])


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="pounder {{ version }}">
<title>{{ title }}</title>
<style>{{ css | safe }}</style>
</head>
<body>
<h1>{{ title }}</h1>
<p class="meta">{{ subtitle }}</p>
{% for name, body in sections %}
<section>
<h2>{{ name }}</h2>
{{ body | safe }}
</section>
{% endfor %}
<p class="meta">Made by pounder {{ version }}: one self-contained file, charts drawn with matplotlib.</p>
</body>
</html>
"""
