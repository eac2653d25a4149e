"""A profile's flame graph: an SVG drawn by inferno (in the native engine) from the folded stacks;
it opens in any browser (click a frame to zoom, Ctrl-F to search)."""

from __future__ import annotations

from collections.abc import Mapping

from pounder.load import load_engine
from pounder.profile._profiler import UNITS
from pounder.profile._stacks import folded_text


def flame_svg(stacks: Mapping[str, int], *, title: str, unit: str) -> str:
    """The SVG text of the flame graph of ``stacks`` (``"outer;...;leaf" -> weight``, e.g. the
    pool's merged stacks), titled ``title``, weights in ``unit`` (one of :data:`UNITS`); colours
    follow the function names (the same every time). ValueError when nothing has a weight."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, not {unit!r}")
    folded = folded_text(stacks)
    if not folded:
        raise ValueError("no flame graph: nothing was sampled")
    svg: str = load_engine().flamegraph_svg(folded, title, unit)  # loaded here: the CLI starts without it
    return svg
