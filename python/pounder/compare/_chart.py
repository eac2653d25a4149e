"""A chart of a comparison: one bar per variant of its median requests/s with the 95 % bootstrap
interval as error bars, and a second panel for the median p99 latency (ms), likewise.

matplotlib is imported only here, when a chart is drawn, through its object-oriented API
(``matplotlib.figure.Figure`` with the Agg canvas): no pyplot, no global backend switch, no display
needed. The format follows the file name: ``.png`` or ``.svg``. The file is written to a temporary
name and renamed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pounder._errors import public
from pounder._files import output_format, replacing
from pounder._matplotlib import require_matplotlib
from pounder._stats import Estimate
from pounder._units import count_text
from pounder.compare._report import format_ratio
from pounder.compare._result import CompareResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_BASELINE_COLOUR = "#7f7f7f"
_FASTER_COLOUR = "#2a9d4b"
_SLOWER_COLOUR = "#c0392b"
_SAME_COLOUR = "#4a78b5"


@public
def chart_format(path: str | os.PathLike[str]) -> str:
    """``"png"`` or ``"svg"`` from the file name; raises :class:`~pounder.UsageError` otherwise."""
    return output_format(path, "--chart", ("PNG", "SVG")).lower()


def _errors(estimates: list[Estimate | None], scale: float) -> tuple[list[float], list[list[float]]]:
    """Bar heights and asymmetric error-bar lengths (0 where there is no interval)."""
    heights: list[float] = []
    below: list[float] = []
    above: list[float] = []
    for estimate in estimates:
        if estimate is None:
            heights.append(0.0)
            below.append(0.0)
            above.append(0.0)
            continue
        middle = estimate.median * scale
        heights.append(middle)
        low = middle if estimate.low is None else estimate.low * scale
        high = middle if estimate.high is None else estimate.high * scale
        below.append(max(0.0, middle - low))
        above.append(max(0.0, high - middle))
    return heights, [below, above]


def _colours(result: CompareResult) -> list[str]:
    verdicts = {comparison.label: comparison.verdict for comparison in result.comparisons}
    colours = []
    for variant in result.variants:
        verdict = verdicts.get(variant.label)
        if verdict is None:
            colours.append(_BASELINE_COLOUR)
        else:
            colours.append({"faster": _FASTER_COLOUR, "slower": _SLOWER_COLOUR}.get(verdict, _SAME_COLOUR))
    return colours


def _panel(axes: Axes, labels: list[str], estimates: list[Estimate | None], scale: float, colours: list[str],
           title: str, notes: list[str]) -> None:  # fmt: skip
    heights, errors = _errors(estimates, scale)
    positions = list(range(len(labels)))
    axes.bar(positions, heights, color=colours, yerr=errors, capsize=6, ecolor="#222222", width=0.6)
    axes.set_xticks(positions)
    long_labels = max(len(label) for label in labels) > 12
    axes.set_xticklabels(labels, rotation=20 if long_labels else 0, ha="right" if long_labels else "center")
    axes.set_title(title, fontsize=10)
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)
    top = max((height + error for height, error in zip(heights, errors[1], strict=True)), default=0.0) or 1.0
    axes.set_ylim(0, top * 1.15)
    for position, height, error, note in zip(positions, heights, errors[1], notes, strict=True):
        if note:
            axes.text(position, height + error + top * 0.02, note, ha="center", va="bottom", fontsize=9)


@public
def render_chart(result: CompareResult, path: str | os.PathLike[str]) -> Path:
    """Draw the chart of ``result`` to ``path`` (``.png`` or ``.svg``) and return the path.
    Raises :class:`~pounder.UsageError` for another extension, :class:`~pounder.PounderError` when
    matplotlib is missing or the file cannot be written."""
    target = Path(path)
    kind = chart_format(target)
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    summaries = result.summaries
    labels = [summary.label for summary in summaries]
    ratios = {comparison.label: comparison for comparison in result.comparisons}
    rate_notes = [
        "baseline" if label not in ratios else format_ratio(ratios[label].requests_per_s.ratio) for label in labels
    ]
    p99_notes = ["baseline" if label not in ratios else format_ratio(ratios[label].p99_us.ratio) for label in labels]
    colours = _colours(result)
    figure = Figure(figsize=(max(8.0, 2.2 + 1.8 * len(labels)), 4.4), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    rate_axes, p99_axes = figure.subplots(1, 2)
    _panel(rate_axes, labels, [summary.requests_per_s for summary in summaries], 1.0, colours,
           "requests/s (higher is better)", rate_notes)  # fmt: skip
    _panel(p99_axes, labels, [summary.p99_us for summary in summaries], 1e-3, colours,
           "p99 latency, ms (lower is better)", p99_notes)  # fmt: skip
    counted = min((summary.trials for summary in summaries), default=0)
    partial = ", interrupted: partial" if result.interrupted else ""
    figure.suptitle(
        f"pounder compare: medians of {count_text(counted, 'trial')} per variant, 95 % bootstrap intervals, ratios vs "
        f"{result.options.baseline}{partial}",
        fontsize=10,
    )
    with replacing(target, "--chart", suffix=target.suffix) as tmp:
        figure.savefig(tmp, format=kind)
    return target
