"""Parts of a tuning run's page for its first steps, put together by :mod:`pounder.report._tune`:
the child sizes and the leak, the memory bound and the children sweep; with the formatting and
the colours every part of a tuning run's page shares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pounder import _figures as figures
from pounder._platform import HEADERS as PLATFORM_HEADERS
from pounder._platform import platform_heading, platform_notes, platform_table
from pounder._table import cores as table_cores
from pounder._table import ms as table_ms
from pounder._table import percent, whole
from pounder._tune_point import TunePoint, present
from pounder._tune_tables import children_table
from pounder._units import KIB, MIB, children_text, mib
from pounder.pool import status_reader
from pounder.procs import why_no_max_clients
from pounder.report._html import Section, bullets, chart, label_axes, paragraph, table

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from pounder.report._tune import TuneResults

BLUE, ORANGE, GREEN, RED, GREY = "#4c78a8", "#f58518", "#54a24b", "#e45756", "#8c8c8c"


# ---------------------------------------------------------------------------------------------
# formatting (as the text report)


pct, ms, cores = percent, table_ms, table_cores


def mrpc_label(value: int) -> str:
    return "unlimited" if value == 0 else str(value)



def errors(points: Sequence[TunePoint], key: str = "rps", low: str = "rps_low",
           high: str = "rps_high") -> list[list[float]] | None:
    """matplotlib ``yerr`` (below, above) of the points' intervals of ``key`` (requests/s unless
    told); None without any."""
    if not any(getattr(p, low) is not None for p in points):
        return None
    below = [_gap(getattr(p, key), getattr(p, low)) for p in points]
    above = [_gap(getattr(p, high), getattr(p, key)) for p in points]
    return [[max(0.0, v) for v in below], [max(0.0, v) for v in above]]


def _gap(upper: float | None, lower: float | None) -> float:
    """``upper - lower``, 0 where the interval's end is missing."""
    return 0.0 if upper is None or lower is None else float(upper) - float(lower)


def has_other_cores(run: TuneResults, points: Sequence[TunePoint]) -> bool:
    """Whether the tables of ``points`` have an "other cores" column (other processes' CPU): in
    every run that compares pools at the offered load ("-" where unknown, as the text report), and
    wherever a point measured it."""
    return run.at_offered_load or any(p.other_cores is not None for p in points)


OTHER_CORES = "other cores: processes that are neither the server nor pounder"




# ---------------------------------------------------------------------------------------------
# step 1: sizes and the leak


def _leak_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares (slope, intercept) of ys on xs."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    var = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    return slope, mean_y - slope * mean_x


def sizes_section(run: TuneResults, prefix: str) -> Section:
    measure = run.measure or {}
    total = int(measure["requests_first"]) + int(measure["requests_second"])
    section = Section("1. Child sizes and the leak")
    rows = []
    for name, stage in (("started", "cold"), ("warmed", "warm"), ("half-way", "mid"), ("end", "end")):
        sizes = measure[stage]
        rows.append([name, mib(sizes["median_uss"]), mib(sizes["max_uss"]), mib(sizes["median_shared"]),
                     mib(sizes["max_rss"]), mib(sizes["footprint"])])
    children = max(1, int(measure["children"]))
    xs = [0.0, int(measure["requests_first"]) / children, total / children]
    stages = [measure["warm"], measure["mid"], measure["end"]]
    median = [float(s["median_uss"]) for s in stages]
    biggest = [float(s["max_uss"]) for s in stages]
    slope, intercept = _leak_fit(xs, median)
    choice = run.max_requests or {}
    verdict = "" if run.leak is None else f"{'a leak' if run.leak else 'no leak'}; "
    caption = (f"Private memory (USS) of a child against the requests it served: {children_text(children)} after the "
               f"warm-up, half-way and at the end of {total:,} requests. Fitted on the medians: "
               f"{slope / KIB:,.1f} KiB/request ({verdict}pounder measured "
               f"{float(measure['growth_first']):,.0f} then {float(measure['growth_second']):,.0f} B/request).")
    if choice.get("memory_limit"):
        caption += (f" At that rate a child reaches its share of the budget ({mib(choice['child_limit_bytes'])} MiB) "
                    f"after {int(choice['memory_limit']):,} requests.")
    with chart(f"{prefix}-leak", caption, section.body) as ax:
        ax.plot(xs, [v / MIB for v in median], "o", color=BLUE, label="median child USS")
        ax.plot(xs, [v / MIB for v in biggest], "s", color=ORANGE, label="largest child USS")
        ends = [xs[0], xs[-1]]
        ax.plot(ends, [(intercept + slope * x) / MIB for x in ends], "-", color=BLUE, alpha=0.6,
                label=f"fit: {slope / KIB:,.1f} KiB per request")
        for x, y, text in zip(xs, biggest, ("warm", "mid", "end"), strict=True):
            ax.annotate(text, (x, y / MIB), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
        ax.set_ylim(bottom=0, top=max(biggest + median) / MIB * 1.2 or 1)
        label_axes(ax, "requests served per child", "MiB", "A child's private memory as it serves requests")
        ax.legend(loc="lower right", fontsize=8)
    section.add(f"<h3>Sizes ({children_text(children)}; MiB)</h3>")
    section.add(table(["", "USS med", "USS max", "shared med", "RSS max", "footprint (PSS)"], rows))
    parent = measure["parent"]
    section.add(paragraph(f"parent: RSS {mib(parent['rss'])}, USS {mib(parent['uss'])} MiB; growth per request "
                          f"{float(measure['growth_first']):,.0f} B then {float(measure['growth_second']):,.0f} B"))
    _platform(section, measure, run.kind)
    other = run.other_measure
    if other is not None:
        section.add(paragraph(f"with preload {'on' if other['preload'] else 'off'}: child USS max "
                              f"{mib(other['end']['max_uss'])} MiB, shared {mib(other['end']['median_shared'])} MiB"))
    return section


def _platform(section: Section, measure: Mapping[str, Any], kind: str) -> None:
    """Memory as the platform counts it, as the text report shows it (stored figures only)."""
    heading = platform_heading(measure)
    if heading is None:
        return
    section.add(paragraph(heading[0].upper() + heading[1:]))
    rows = platform_table(measure)
    if rows:
        section.add(table(PLATFORM_HEADERS, rows))
    notes = platform_notes(measure, kind)
    if notes:
        section.add(bullets(notes))


# ---------------------------------------------------------------------------------------------
# step 2: the memory bound


def _twin(ax: Axes) -> Any:
    other = ax.twinx()
    other.spines["right"].set_visible(True)
    other.grid(False)
    return other


def memory_section(run: TuneResults, prefix: str) -> Section:
    memory = run.memory or {}
    ram, shared, uss, rss = (float(memory[k]) for k in ("ram", "shared", "child_uss", "child_rss"))
    bound, no_sharing = int(memory["max_clients"]), int(memory["max_clients_no_sharing"])
    section = Section("2. Memory bound (MaxClients)")
    why = why_no_max_clients(1, int(uss), int(rss))  # the sizes were measured on at least one child
    if why is not None:
        return section.add(paragraph(f"MaxClients is not shown: {why}."))
    section.add(paragraph(f"RAM budget {mib(ram)} MiB ({memory['ram_source']})"))
    parent = float(memory.get("parent_uss") or 0)
    if uss > 0 and int((ram - parent - shared) // uss) != bound:
        parent = 0.0  # a run made before the parent's own memory was counted
    if parent:
        section.add(paragraph(f"MaxClients = (RAM - parent USS - shared) / child USS = ({mib(ram)} - {mib(parent)} - "
                              f"{mib(shared)}) / {mib(uss)} = {bound}"))
    else:
        section.add(paragraph(f"MaxClients = (RAM - shared) / child USS = ({mib(ram)} - {mib(shared)}) / {mib(uss)} "
                              f"= {bound}"))
    section.add(paragraph(f"without sharing: RAM / child RSS = {mib(ram)} / {mib(rss)} = {no_sharing}"))
    chosen = int(run.children["chosen"]) if run.children else None
    knee = int(run.children["throughput"]) if run.children else None
    swept = max([chosen or 1, *(p.children for p in run.sweep_points)])
    top = max([bound, no_sharing, swept]) * 1.15 + 1
    # far more children fit than the sweep ran: a log scale keeps the sweep readable
    log_x = bound > 6 * swept
    xs = [top ** (i / 100) for i in range(101)] if log_x else [0.0, top]
    caption = (f"Memory needed for n children (parent {mib(parent)} MiB + shared {mib(shared)} MiB once + n x "
               f"{mib(uss)} MiB child USS) against "
               f"the RAM budget of {mib(ram)} MiB: at most {children_text(bound)}.")
    if knee is not None:
        last = max((p.children for p in run.sweep_points), default=0)
        caption += (f" Throughput (right axis) was still growing at {children_text(knee)}, the most the sweep ran"
                    if knee >= last else f" Throughput (right axis) stops growing at {children_text(knee)}")
        caption += f"; recommended {chosen}." if chosen is not None else "."
    if log_x:
        caption += " Children on a log scale: the memory line curves upward."
    with chart(f"{prefix}-memory", caption, section.body, height=3.8) as ax:
        ax.plot(xs, [(parent + shared + x * uss) / MIB for x in xs], "-", color=BLUE,
                label="parent + shared + n x child USS")
        ax.plot(xs, [x * rss / MIB for x in xs], ":", color=GREY,
                label=f"n x child RSS (summing RSS): {no_sharing}")
        ax.axhline(ram / MIB, color=RED, linestyle="--", label=f"RAM budget {mib(ram)} MiB")
        ax.axvline(bound, color=BLUE, linestyle="--", alpha=0.7)
        low = not log_x and bound < top * 0.3
        ax.annotate(f"memory bound: {bound}", (bound, ram / MIB), textcoords="offset points",
                    xytext=(4 if low else -4, 5), ha="left" if low else "right", fontsize=8, color=BLUE)
        if log_x:
            ax.set_xscale("log", base=2)
            ax.get_xaxis().set_major_formatter("{x:g}")
            ax.set_xlim(0.8, top)
        else:
            ax.set_xlim(0, top)
        ax.set_ylim(0, ram / MIB * 1.3)
        label_axes(ax, "children (n)", "MiB", "MaxClients: the memory line against the CPU knee")
        handles, labels = ax.get_legend_handles_labels()
        if run.sweep_points:
            right = _twin(ax)
            counts = [p.children for p in run.sweep_points]
            most = max(p.rps for p in run.sweep_points)
            right.plot(counts, [p.rps for p in run.sweep_points], "o-", color=GREEN, label="requests/s (sweep)")
            if knee is not None:
                right.axvline(knee, color=GREEN, linestyle=":", alpha=0.8)
                text = (f"still growing at {knee}, the last count swept" if knee >= max(counts)
                        else f"throughput stops growing: {knee}")
                left = not log_x and knee > top / 2
                right.annotate(text, (knee, 0), textcoords="offset points", xytext=(-4 if left else 4, 6),
                               ha="right" if left else "left", fontsize=8, color=GREEN)
            right.set_ylim(bottom=0, top=most * 1.3 or 1)
            right.set_ylabel("requests/s")
            more_handles, more_labels = right.get_legend_handles_labels()
            handles, labels = handles + more_handles, labels + more_labels
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8)
    return section


# ---------------------------------------------------------------------------------------------
# step 3: the children sweep


def children_section(run: TuneResults, prefix: str) -> Section:
    sweep = sorted(run.sweep_points, key=lambda p: p.children)
    section = Section(f"3. Children ({run.names.get('max_clients', '-')})")
    counts = [p.children for p in sweep]
    chosen = int(run.children["chosen"]) if run.children else None
    tolerance = run.options.get("tolerance")
    caption = "Requests/s and p99 latency against the number of children (closed loop"
    caption += ", keep-alive off)" if run.old else "; medians of interleaved trials, requests/s with its 95% interval)"
    caption += f"; recommended: {children_text(chosen)}." if chosen is not None else "; nothing decided yet."
    with chart(f"{prefix}-children", caption, section.body, rows=2, height=2.4) as (top, bottom):
        yerr = errors(sweep)
        if yerr is None:
            top.plot(counts, [p.rps for p in sweep], "o-", color=BLUE)
        else:
            top.errorbar(counts, [p.rps for p in sweep], yerr=yerr, fmt="o-", color=BLUE, capsize=3,
                         label="median, 95% interval")
        bottom.plot(counts, [present(p.p99_ms) for p in sweep], "o-", color=ORANGE, label="p99")
        bottom.plot(counts, [present(p.p50_ms) for p in sweep], ".:", color=GREY, label="p50")
        best = max(p.rps_high or p.rps for p in sweep)
        if tolerance is not None:
            top.axhline(best * (1 - float(tolerance)), color=GREY, linestyle=":",
                        label=f"within {float(tolerance):.0%} of the best")
        for ax in (top, bottom):
            if chosen is not None:
                ax.axvline(chosen, color=GREEN, linestyle="--", label=f"recommended: {chosen}")
            if len(counts) > 1 and max(counts) / min(counts) >= 4:
                ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(set(counts + ([chosen] if chosen else []))))
            ax.get_xaxis().set_major_formatter("{x:g}")
            ax.set_ylim(bottom=0)
        label_axes(top, "", "requests/s", "Throughput")
        label_axes(bottom, "children", "ms", "Latency")
        top.set_ylim(top=best * 1.15 or 1)
        for ax in (top, bottom):
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="best", fontsize=8)
    if run.old:
        rows = [[p.children, p.connections, f"{present(p.complete) + present(p.failed):,}", f"{p.rps:,.0f}",
                 ms(p.p50_ms), ms(p.p95_ms), ms(p.p99_ms), whole(p.server_cpu_us), f"{present(p.server_cores):.2f}",
                 mib(p.max_child_uss), present(p.failed)] for p in run.sweep_points]
        section.add(table(["MC", "NC", "NR", "RPS", "p50", "p95", "p99", "srv CPU us/req", "srv cores",
                           "max USS MiB", "failed"], rows))
        section.add(paragraph("MC = children, NC = concurrent clients, NR = requests; latency in ms."))
        return section
    queued = any(p.queued is not None for p in run.sweep_points)  # results of earlier versions lack it
    other = has_other_cores(run, run.sweep_points)
    section.add(children_table(queued=queued, other_cores=other).html(run.sweep_points))
    queued_legend = ("queued: the share of the accept queue's samples with a connection waiting for a free child "
                     "(every child busy); " if queued else "")
    section.add(paragraph("MC = children, NC = concurrent clients, trials = counted/run, NR = requests (every "
                          "trial), RPS = median requests/s with its 95% interval, latency medians in ms; "
                          f"{queued_legend}load cores: the load generator's CPU; "
                          f"{OTHER_CORES + '; ' if other else ''}wide: the interval reaches further "
                          f"than {figures.WIDE:.0%} of the median."))
    status = status_reader(run.kind).note(run.sweep, run.kind, run.names.get("max_clients", "MaxClients"))
    if status:
        section.add(paragraph(status + "."))
    return section


