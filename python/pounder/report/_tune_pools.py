"""Parts of a tuning run's page for its steps at the offered load, put together by
:mod:`pounder.report._tune`: the pools compared there, the workers x threads shapes,
MaxRequestsPerChild and the spare servers. The pools' and the shapes' figures, their comparisons
with the best and the marks are the run's own (nothing is chosen again here)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pounder import _figures as figures
from pounder._tune_point import TunePoint, present
from pounder._tune_run import OfferedLoad
from pounder._tune_tables import (
    mrpc_table,
    pool_rows,
    pools_table,
    shape_rows,
    shapes_table,
    spare_table,
    versus_text,
)
from pounder._units import children_text, count_text, mib, shape_text
from pounder.pool import ADAPTERS, own_name, status_reader
from pounder.report._html import Section, bullets, chart, label_axes, paragraph, scroll, table
from pounder.report._tune_steps import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    OTHER_CORES,
    RED,
    errors,
    has_other_cores,
    mrpc_label,
    ms,
    pct,
)

if TYPE_CHECKING:
    from pounder.report._tune import TuneResults

_ON_DEMAND = {kind for kind, cls in ADAPTERS.items() if cls.on_demand}


def _counts(kind: str) -> str:
    """What MaxRequestsPerChild counts on server ``kind``: "requests" or "connections"."""
    return ADAPTERS[kind].max_requests_counts if kind in ADAPTERS else "requests"


def _number(run: TuneResults, old: int) -> int:
    """A section's number: one more than ``old`` in a run that compares pools at the offered load
    (its section 4), as the text report numbers them."""
    return old + 1 if run.at_offered_load else old


# ---------------------------------------------------------------------------------------------
# step 4: pools at the offered load


def pools_section(run: TuneResults, prefix: str) -> Section:
    """The candidate pools measured at the same offered load, as the run stored them (the chosen
    and the best marked as it chose them); an interrupted run's candidates without a choice."""
    section = Section("4. Pools at the offered load")
    if run.pools is None:
        held = run.offered is not None and run.offered.held
        section.add(paragraph("Not compared: " + (
            "every connection holds a child (no buffering proxy in front): the pool covers the connections, nothing "
            "to compare" if held else "this run stored no comparison of pools")))
        return section
    points = run.pool_points
    chosen, best = run.pools.chosen, run.pools.best
    first = points[0]
    load = (run.offered.text() if run.offered is not None
            else OfferedLoad(connections=first.connections, rate=first.rate, source="", held=False).short())
    caption = (f"Requests/s and p99 latency of each candidate pool at the same offered load, {load}: medians of "
               "interleaved trials with their 95% intervals")
    if chosen is not None:
        caption += f"; chosen: {children_text(int(chosen))}"
        caption += "." if best in (None, chosen) else f"; the most requests/s: {children_text(int(best))}."
    else:
        caption += "; nothing chosen yet."
    p99_s = None if run.target is None else run.target.p99_s
    _pools_chart(section, f"{prefix}-pools", caption, points, chosen, best,
                 None if p99_s is None else float(p99_s) * 1000)
    label, words = figures.sweep_load_text(run.sweep_points)
    section.add(scroll(pools_table(label).html(pool_rows(points, run.sweep_points, chosen, best))))
    lowest = run.pools.lowest_p99
    section.add(paragraph(
        f"MC = children; RPS {label}, p99 {label}: the children sweep's figures ({words}); NC = "
        "the offered load's connections, trials = counted/run, NR = requests (every trial); RPS and p99: medians "
        "with their 95% intervals, latency in ms; RPS vs best: the median requests/s against the best pool's, with "
        "the 95% interval of that ratio; chosen: the pool chosen at this load, best: the most requests/s (when not "
        "the chosen)" + ("" if lowest is None else f"; the lowest p99: {children_text(int(lowest))}")
        + f"; load cores: the load generator's CPU; {OTHER_CORES}."))
    status = status_reader(run.kind).note([p.to_dict() for p in points], run.kind,
                                          run.names.get("max_clients", "MaxClients"))
    if status:
        section.add(paragraph(status + "."))
    return section


def _pools_chart(section: Section, chart_id: str, caption: str, points: Sequence[TunePoint],
                 chosen: int | None, best: int | None, limit_ms: float | None) -> None:
    drawn = [(p, p.p99_ms) for p in points if p.p99_ms is not None]  # a pool whose trials all failed: no figures
    if not drawn:
        return
    points = [p for p, _ in drawn]
    counts = [p.children for p in points]
    with chart(chart_id, caption, section.body, rows=2, height=2.4) as (top, bottom):
        top.errorbar(counts, [p.rps for p in points], yerr=errors(points), fmt="o-", color=BLUE,
                     capsize=3, label="median, 95% interval")
        bottom.errorbar(counts, [p99 for _, p99 in drawn], yerr=errors(points, "p99_ms", "p99_low", "p99_high"),
                        fmt="o-", color=ORANGE, capsize=3, label="p99, 95% interval")
        bottom.plot(counts, [float(p.p50_ms) for p in points if p.p50_ms is not None], ".:", color=GREY, label="p50")
        if limit_ms is not None:
            bottom.axhline(limit_ms, color=RED, linestyle=":", label=f"--p99 {limit_ms:,.1f} ms")
        if best is not None and best != chosen:
            at = next(p for p in points if p.children == best)
            top.annotate("best", (best, at.rps_high or at.rps), textcoords="offset points",
                         xytext=(0, 5), ha="center", fontsize=8, color=BLUE)
        highest = max(p.rps_high or p.rps for p in points)
        slowest = max(p.p99_high or p99 for p, p99 in drawn)
        log_x = len(counts) > 1 and max(counts) / min(counts) >= 4
        for ax in (top, bottom):
            if chosen is not None:
                ax.axvline(chosen, color=GREEN, linestyle="--", label=f"chosen: {chosen}")
            if log_x:
                ax.set_xscale("log", base=2)
                ax.set_xlim(min(counts) / 1.4, max(counts) * 1.4)
            ax.set_xticks(sorted(set(counts)))
            ax.get_xaxis().set_major_formatter("{x:g}")
            ax.set_ylim(bottom=0)
            ax.legend(loc="best", fontsize=8)
        top.set_ylim(top=highest * 1.2 or 1)
        bottom.set_ylim(top=max(slowest, limit_ms or 0.0) * 1.15 or 1)
        label_axes(top, "", "requests/s", "Throughput at the offered load")
        label_axes(bottom, "children", "ms", "Latency at the offered load")


# ---------------------------------------------------------------------------------------------
# step 4b: workers x threads at the offered load


def shapes_section(run: TuneResults) -> Section | None:
    """The workers x threads shapes measured at the offered load, as the run stored them (the chosen
    and the best marked as it chose them), the table the text prints, then why; that they were not
    compared when the threads of each worker were given; an unfinished run's trials of the step
    counted; None when the run compared none (a server without threads, --no-thread-sweep, an
    earlier pounder)."""
    shapes = run.shapes
    if shapes is None and not run.finished:  # the choice comes with the recommendation
        trials = sum(1 for line in run.point_lines if line.step == "threads")
        if not trials:
            return None
        section = Section("4b. Workers x threads")
        were = "was" if trials == 1 else "were"
        section.add(paragraph(f"{count_text(trials, 'trial')} of the workers x threads step {were} measured (listed "
                              "above); nothing was chosen: the run did not finish"
                              + (". The shapes measured so far, medians of their trials (RPS and p99 with their 95% "
                                 "intervals; memory after the load):" if run.shape_points else ".")))
        if run.shape_points:
            section.add(scroll(shapes_table().html(shape_rows(run.shape_points, None, None))))
        return section
    if shapes is None:
        if not run.threads_given:
            return None
        section = Section("4b. Workers x threads")
        section.add(paragraph("Not compared: the threads of each worker were given (--threads)."))
        return section
    section = Section("4b. Workers x threads at the offered load")
    chosen = shapes.point(shapes.workers, shapes.threads)
    caption = (f"Shapes serving up to {shapes.slots:,} requests at once (workers x threads) at "
               f"{shapes.offered.text()}: medians of "
               f"interleaved trials (RPS and p99 with their 95% intervals; memory after the load); chosen: "
               f"{shape_text(shapes.workers, shapes.threads)}")
    best = shapes.best
    caption += "." if best == (shapes.workers, shapes.threads) else f"; the most requests/s: {shape_text(*best)}."
    section.add(paragraph(caption))
    section.add(scroll(shapes_table().html(shape_rows(list(shapes.points), (shapes.workers, shapes.threads),
                                                      best))))
    per_thread = "" if shapes.per_thread is None else (
        f"; a thread added about {mib(max(shapes.per_thread, 0))} MiB to a worker's private memory")
    section.add(paragraph(
        "workers x threads = the shape; NC = the offered load's connections, trials = counted/run, NR = requests "
        "(every trial); RPS and p99: medians with their 95% intervals, latency in ms; RPS vs best: the median "
        "requests/s against the best shape's, with the 95% interval of that ratio; footprint: the server's memory "
        "right after the load (PSS summed over its processes: shared pages counted once); worker USS and worker "
        "shared: a worker's median private and shared memory then; chosen: the smallest footprint as good as the "
        "best, best: the most requests/s (when not the chosen)" + per_thread + f"; {OTHER_CORES}."))
    if chosen is None:  # not a document pounder wrote: the chosen shape is one of those measured
        section.add(paragraph(f"The shape chosen, {shape_text(shapes.workers, shapes.threads)}, is not among "
                              "those stored."))
    section.add(paragraph(f"Chosen: {shapes.why}"))
    section.add(bullets(shapes.reasons))
    return section


# ---------------------------------------------------------------------------------------------
# step 5: MaxRequestsPerChild


_Bar = tuple[str, float, float | None, float | None, bool, bool]
"""A bar of the MaxRequestsPerChild chart: label, requests/s, measured loss, modelled loss,
recommended, drawn from the model (the recommended value was not swept)."""


def mrpc_section(run: TuneResults, prefix: str) -> Section:
    if run.old:
        return old_mrpc_section(run, prefix)
    points = run.mrpc_points
    name = own_name(run.names, "max_requests")
    at = "" if run.offered is None else f" at {run.offered.short()}"
    pool = children_text(points[0].children)
    section = Section(f"{_number(run, 4)}. {name} (MaxRequestsPerChild) with {pool}{at}")
    choice = run.max_requests or {}
    recommended = int(choice["value"]) if "value" in choice else None
    unit = _counts(run.kind)
    caption = (f"Requests/s per {name} value ({unit} a child serves before it is replaced): the median of "
               "interleaved trials with its 95% interval, the unlimited baseline measured in every round; above "
               "each bar the change against unlimited")
    caption += f"; recommended: {mrpc_label(recommended)}." if recommended is not None else "."
    with chart(f"{prefix}-max-requests", caption, section.body) as ax:
        positions = list(range(len(points)))
        values = [present(p.max_requests) for p in points]
        colors = [GREEN if v == recommended else BLUE for v in values]
        ax.bar(positions, [p.rps for p in points], color=colors, alpha=0.9, yerr=errors(points), capsize=4,
               ecolor="black")
        for x, point, value in zip(positions, points, values, strict=True):
            text = "reference" if value == 0 else versus_text(point.vs_unlimited).replace(" (", "\n(")
            ax.annotate(text, (x, point.rps_high or point.rps), textcoords="offset points", xytext=(0, 4),
                        ha="center", fontsize=7)
        ax.set_xticks(positions, [mrpc_label(v) + ("\n(recommended)" if v == recommended else "") for v in values])
        ax.set_ylim(0, max(p.rps_high or p.rps for p in points) * 1.3 or 1)
        label_axes(ax, name, "requests/s", "Throughput lost to respawning")
    other = has_other_cores(run, points)
    section.add(mrpc_table(other_cores=other).html(points))
    if other:
        section.add(paragraph(f"{OTHER_CORES[0].upper()}{OTHER_CORES[1:]}."))
    if recommended is not None and recommended not in values:
        said = "Why and its Details above say" if run.why is not None else "the reasons above say"
        section.add(paragraph(f"The recommended {recommended:,} was not swept ({said} how it was chosen)."))
    return section


def old_mrpc_section(run: TuneResults, prefix: str) -> Section:
    """The MaxRequestsPerChild part of an older run (single points, measured and modelled loss)."""
    points = run.mrpc
    name = own_name(run.names, "max_requests")
    section = Section(f"4. {name} (MaxRequestsPerChild) with {children_text(int(points[0]['children']))}")
    base = next((p for p in points if int(p["max_requests"]) == 0), None)
    base_rps = float(base["rps"]) if base is not None else None
    choice = run.max_requests or {}
    recommended = int(choice["value"]) if "value" in choice else None
    bars: list[_Bar] = []
    for p in points:
        value = int(p["max_requests"])
        model = p.get("loss_model")
        bars.append((mrpc_label(value), float(p["rps"]), p.get("loss_measured"),
                     None if model is None else float(model), value == recommended, False))
    swept = {int(p["max_requests"]) for p in points}
    if recommended is not None and recommended not in swept and base_rps is not None:
        loss = float(choice.get("loss", 0.0))
        bar: _Bar = (mrpc_label(recommended), base_rps * (1 - loss), None, loss, True, True)
        after = [i for i, p in enumerate(points) if int(p["max_requests"]) != 0
                 and int(p["max_requests"]) > recommended]  # swept values are listed from large to small
        bars.insert(after[-1] + 1 if after else (1 if base is not None else 0), bar)
    caption = f"Requests/s per {name} value ({_counts(run.kind)} " \
              "a child serves before it is replaced)"
    cost = choice.get("respawn_cost_requests")
    if base_rps is not None:
        caption += "; above each bar the loss against unlimited, measured" + (
            "" if cost is None else f" (and modelled: one respawn costs {float(cost):,.1f} requests' worth)")
    if recommended is not None:
        caption += f"; recommended: {mrpc_label(recommended)}"
        caption += " (not swept: its bar is the model's)." if recommended not in swept else "."
    with chart(f"{prefix}-max-requests", caption, section.body) as ax:
        positions = list(range(len(bars)))
        colors = [GREEN if rec else BLUE for _, _, _, _, rec, _ in bars]
        drawn = ax.bar(positions, [b[1] for b in bars], color=colors, alpha=0.9)
        for patch, bar in zip(drawn, bars, strict=True):
            if bar[5]:
                patch.set_hatch("//")
                patch.set_alpha(0.45)
        if base_rps is not None:
            modelled = [base_rps * (1 - b[3]) if b[3] is not None else math.nan for b in bars]
            ax.plot(positions, modelled, "_", color="black", markersize=22, markeredgewidth=2,
                    label="model: unlimited x (1 - predicted loss)")
            for x, bar, model_rps in zip(positions, bars, modelled, strict=True):
                if bar[0] == "unlimited":
                    text = "reference"
                elif bar[5]:
                    text = f"model {pct(-(bar[3] or 0.0))}"
                else:
                    text = pct(None if bar[2] is None else -bar[2])
                    text += "" if bar[3] is None else f"\n(model {pct(-bar[3])})"
                y = bar[1] if math.isnan(model_rps) else max(bar[1], model_rps)
                ax.annotate(text, (x, y), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=7)
            ax.legend(loc="lower left", fontsize=8)
        ax.set_xticks(positions, [b[0] + ("\n(recommended)" if b[4] else "") for b in bars])
        ax.set_ylim(0, max(b[1] for b in bars) * 1.3 or 1)
        label_axes(ax, name, "requests/s", "Throughput lost to respawning")
    rows = [[mrpc_label(int(p["max_requests"])), p["connections"], f"{int(p['complete']) + int(p['failed']):,}",
             f"{float(p['rps']):,.0f}", ms(p["p99_ms"]), p["respawns"],
             pct(-p["loss_measured"] if p.get("loss_measured") is not None else None),
             pct(-float(p.get("loss_model", 0.0))), mib(p.get("max_child_uss")), p["failed"]] for p in points]
    section.add(table(["MRPC", "NC", "NR", "RPS", "p99", "NR/MRPC", "RPS vs unl.", "model", "max USS MiB", "failed"],
                      rows))
    return section


# ---------------------------------------------------------------------------------------------
# step 6: spare servers


def spare_section(run: TuneResults, prefix: str) -> Section:
    section = Section(f"{_number(run, 5)}. Spare servers")
    if not run.spare:
        if run.spare_trials:
            were = "was" if run.spare_trials == 1 else "were"
            section.add(paragraph(f"{count_text(run.spare_trials, 'trial')} of the spare-server step {were} measured "
                                  "(listed above); each setting's figures are shown when the run finishes."))
        elif run.finished or run.kind not in _ON_DEMAND:
            section.add(paragraph(f"{run.kind} starts all its workers at once (a fixed pool): there are no spare "
                                  "servers to tune, so this report has no burst chart."))
        else:
            section.add(paragraph("The spare-server step was not measured yet."))
        return section
    reference = float(run.spare[0].get("reference_p99_ms") or 0.0)
    caption = ("p99 latency of each second after a step from idle to "
               f"{run.spare[-1]['connections']} clients, with each run's spare settings")
    if "trials" in run.spare[0]:
        caption += " (the first of each setting's trials; the table has their medians)"
    if reference:
        caption += (f"; reference: the best steady p99, {reference:,.1f} ms; a second above "
                    f"{figures.BURST_FACTOR:g} x the reference counts as slow")
    caption += ". A second that completed no request is drawn at the bottom as x."
    with chart(f"{prefix}-spare", caption, section.body, height=3.8) as ax:
        highest = 0.0
        for point, color in zip(run.spare, (ORANGE, GREEN, BLUE), strict=False):
            series = point["series"]
            label = (f"{point.get('name', '?')}{' (chosen)' if point.get('chosen') else ''}: StartServers "
                     f"{point['start_servers']}, MinSpare {point['min_spare']}, MaxSpare {point['max_spare']}")
            seconds = [int(s["second"]) for s in series]
            values = [int(s["p99_us"]) / 1000 if int(s["complete"]) else math.nan for s in series]
            highest = max([highest, *(v for v in values if not math.isnan(v))])
            ax.plot(seconds, values, "o-", color=color, label=label)
            empty = [s for s, v in zip(seconds, values, strict=True) if math.isnan(v)]
            if empty:
                ax.plot(empty, [0] * len(empty), "x", color=color, markersize=8, clip_on=False)
        if reference:
            ax.axhline(reference, color=GREY, linestyle="--", label=f"reference {reference:,.1f} ms")
            ax.axhline(reference * figures.BURST_FACTOR, color=RED, linestyle=":",
                       label=f"slow: > {figures.BURST_FACTOR:g} x")
            highest = max(highest, reference * figures.BURST_FACTOR)
        ax.set_ylim(0, highest * 1.15 or 1)
        ax.get_xaxis().get_major_locator().set_params(integer=True)
        label_axes(ax, "second of the burst", "p99 (ms)", "From idle to full load")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8)
    section.add(_spare_table(run))
    if run.unreferenced:
        section.add(paragraph("These results predate the stored reference latency: the reference line and the slow "
                              "seconds are not shown (recommendation.txt has them as that run computed them)."))
    return section


def _spare_table(run: TuneResults) -> str:
    """The spare settings' figures: medians of interleaved trials with the p99's interval and the
    setting the run chose; a single burst per setting in results of earlier versions."""
    points = run.spare
    if "trials" not in points[0]:
        rows = [[p.get("name", "?"), p["start_servers"], p["min_spare"], p["max_spare"], p["idle_children"],
                 p["connections"], f"{float(p['rps']):,.0f}", ms(p.get("first_p99_ms")), ms(p["p99_ms"]),
                 ms(p.get("steady_p99_ms")), p.get("burst_s", "-")] for p in points]
        return table(["", "Start", "MinSpare", "MaxSpare", "idle children", "NC", "RPS", "p99 1st s", "p99",
                      "steady p99", "slow s"], rows)
    return (spare_table().html(run.spare_points)
            + paragraph("Medians of interleaved trials (trials = counted/run), p99 with its 95% interval, latency in "
                        "ms; slow s: the seconds whose p99 was above the slow line; chosen: the setting recommended."))
