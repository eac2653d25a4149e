"""The part of a tuning run's page for a child's life (``--life``; :mod:`pounder.tune._life`): the
median child's shared and private memory against the requests it served (log scale), with the fits
the run stated, the snapshots' table and the unsharing's verdict, all as stored."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pounder._units import MIB, mib
from pounder.report._html import Section, bullets, chart, label_axes, paragraph, table

BLUE, ORANGE, GREY = "#4c78a8", "#f58518", "#8c8c8c"


def _fitted(fit: Mapping[str, Any], requests: float) -> float:
    """The stored fit's value at ``requests`` (bytes), as :meth:`pounder.tune._life.LifeFit.at`."""
    if fit["fit"] == "log":
        return float(fit["log_intercept"]) + float(fit["log_slope"]) * math.log(max(1.0, requests))
    return float(fit["linear_intercept"]) + float(fit["linear_slope"]) * requests


def life_section(life: Mapping[str, Any], unsharing: Mapping[str, Any] | None, prefix: str) -> Section:
    """``life`` (``recommendation.json``'s ``life``) and ``unsharing`` (its ``max_requests.unsharing``)."""
    section = Section("1b. Shared memory over a child's life")
    snapshots = list(life["snapshots"])
    loaded = [s for s in snapshots if float(s["requests"]) > 0]
    xs = [float(s["requests"]) for s in loaded]
    caption = (f"The median child's shared and private memory (USS) against the requests it served, "
               f"{int(life['children'])} children followed from their start (log scale); lines: the fits stated. "
               f"{str(life['summary'])[0].upper()}{str(life['summary'])[1:]}.")
    with chart(f"{prefix}-life", caption, section.body) as ax:
        ax.set_xscale("log")
        for key, colour, name in (("shared", BLUE, "shared"), ("private", ORANGE, "private (USS)")):
            ax.plot(xs, [int(s[key]) / MIB for s in loaded], "o", color=colour, label=f"median child {name}")
            fit = life[key]
            grid = [xs[0] * (xs[-1] / xs[0]) ** (i / 40) for i in range(41)] if xs[-1] > xs[0] else xs
            ax.plot(grid, [_fitted(fit, x) / MIB for x in grid], "-", color=colour, alpha=0.6,
                    label=f"{fit['fit']} fit" + (" (stable)" if fit["stable"] else ""))
        top = max(max(int(s["shared"]), int(s["private"])) for s in loaded) / MIB
        ax.set_ylim(bottom=0, top=top * 1.2 or 1)
        label_axes(ax, "requests served per child", "MiB", "Shared and private memory over a child's life")
        ax.legend(loc="best", fontsize=8)
    section.add(table(["requests per child", "private med", "shared med", "PSS med", "USS max", "children"],
                      [[f"{float(s['requests']):,.0f}", mib(s["private"]), mib(s["shared"]), mib(s["pss"]),
                        mib(s["max_private"]), int(s["children"])] for s in snapshots]))
    section.add(paragraph(f"over {float(life['reached']):,.0f} requests per child, {float(life['elapsed_s']):,.1f} s "
                          f"of load; {float(life['fall']):.1%} of the median child's shared memory lost"))
    lines = list(life.get("reasons") or [])
    if unsharing is not None:
        lines.append(str(unsharing["reason"]))
    section.add(bullets(lines))
    return section
