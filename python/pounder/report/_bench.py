"""Report parts for bench results (``pounder/bench-result/3``, or ``/2``, ``/1``): one page, several results overlaid
(one color each, labelled).

Charts, by id: ``bench-percentiles`` (latency by percentile on a "nines" scale), ``bench-throughput``
and ``bench-latency-time`` (per second), ``bench-errors`` (failed requests and non-2xx answers per second),
``bench-phases`` (connection phases); for the N-th result (from 1) with a server report,
``bench-memory-N`` (USS and shared memory per process) and, with Apache mod_status readings,
``bench-workers-N``; a result sent by agents (``--ray``) has a table of them. A chart whose data is
missing is replaced by a one-line note. A series longer than the points a line gets is drawn
downsampled, and the chart's caption says how (:mod:`pounder.report._series`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pounder._units import MIB, mib, number
from pounder.procs import ServerLoadReport
from pounder.report._gates import gates_section
from pounder.report._html import Section, bullets, chart, label_axes, paragraph, table
from pounder.report._series import Shown, downsample, duration_text, peaks
from pounder.results import (
    BASELINE_METRICS,
    BASELINE_NOTE,
    BASELINE_TABLE,
    ERROR_CATEGORIES,
    Agents,
    Baseline,
    BenchResult,
    Histogram,
    baseline_title,
    describe_load,
    parse_gate,
)

NINES = {"50": 2.0, "90": 10.0, "99": 100.0, "99.9": 1000.0, "100": 10000.0}
"""Where the labelled percentiles sit on the x axis: 1 / (1 - p); 100 % (the max) one decade on."""
PHASES = ("connect", "waiting", "processing", "total")
MARKED_POINTS = 200
"""A line of more points than this has no dot on each (they would merge into a thick line)."""

Results = Sequence[tuple[str, BenchResult]]


def bench_sections(results: Results) -> list[Section]:
    """The summary table and the charts of ``results`` (label, result), curves overlaid."""
    overview = Section("Bench results" if len(results) > 1 else "Bench result")
    overview.add(_summary(results))
    notes = [f"{label}: interrupted, partial result" for label, r in results if r.interrupted]
    notes += [f"{label}: no requests per second, {r.why_no_rate()}" for label, r in results if r.why_no_rate()]
    notes += [f"{label}: partial result, an agent was lost (see its Agents section)" for label, r in results
              if r.agents is not None and r.agents.partial]
    if notes:
        overview.add(bullets(notes))
    latency = Section("Latency")
    _percentile_chart(results, latency)
    _latency_time_chart(results, latency)
    throughput = Section("Throughput and errors")
    per_second = [downsample(r.series, max(_full_seconds(r), 1)) for _, r in results]  # for both charts
    _throughput_chart(results, throughput, per_second)
    _errors_chart(results, throughput, per_second)
    throughput.add(_status_table(results))
    phases = Section("Connection phases")
    _phases_chart(results, phases)
    sections = [overview, latency, throughput, phases]
    for index, (label, result) in enumerate(results, start=1):
        if result.server is not None:
            sections.append(_server_section(index, label, result.server, result))
        if result.agents is not None:
            sections.append(_agents_section(label, result.agents))
        if result.steps is not None:
            sections.append(_steps_section(label, result))
        if result.baseline is not None:
            sections.append(_baseline_section(label, result.baseline))
        if result.gates is not None and result.gates.results:
            parse = parse_gate if result.baseline is None else \
                (lambda text: parse_gate(text, metrics=BASELINE_METRICS))  # fmt: skip
            sections.append(gates_section(f"Gates (--fail-if): {label}", result.gates, parse))
    return sections


def _baseline_section(label: str, baseline: Baseline) -> Section:
    """The run against its saved baseline (``--baseline``): the text report's table, what its
    columns are and how much weaker than interleaved trials the evidence is (the rates measured)."""
    section = Section(f"{baseline_title(baseline)}{f' ({label})' if label else ''}")
    section.add(BASELINE_TABLE.html(baseline.figures))
    section.add(paragraph(BASELINE_NOTE))
    section.add(paragraph(baseline.false_alarms.sentence()))
    return section


def _steps_section(label: str, result: BenchResult) -> Section:
    """A scenario's steps (``--scenario``): a row per step, its counts and percentiles."""
    section = Section(f"Scenario steps: {label} ({result.options.scenario})")
    rows = [[step.name, step.part, f"{step.requests:,}", f"{step.failed:,}", f"{step.unexpected_status:,}",
             f"{step.capture_missed:,}",
             *((_ms(step.latency.percentiles[p]) if step.latency.count else "-") for p in ("50", "90", "99"))]
            for step in result.steps or ()]  # fmt: skip
    section.add(table(["step", "part", "requests", "failed", "unexpected status", "capture missed", "p50 ms",
                       "p90 ms", "p99 ms"], rows))  # fmt: skip
    section.add(paragraph("A failed request, an unexpected status or a capture that finds nothing ends the "
                          "virtual user's session: it starts over from the login steps."))
    return section


def _agents_section(label: str, agents: Agents) -> Section:
    """Who sent the load (``--ray``): a row per agent, then what to beware of."""
    skew = "-" if agents.start_skew_ms is None else f"{agents.start_skew_ms:.1f} ms"
    section = Section(f"Agents: {label} ({len(agents.members)} on {agents.nodes} nodes of Ray cluster "
                      f"{agents.address}, began within {skew})")
    rows = [[str(a.index), a.host, str(a.pid), str(a.connections), f"{a.complete:,}", f"{a.failed:,}",
             "-" if a.p50_us is None else _ms(a.p50_us), "-" if a.p99_us is None else _ms(a.p99_us),
             "-" if a.cpu_busy is None else f"{a.cpu_busy:.0%}", f"{a.offset_ms:+.1f} ± {a.clock_error_ms:.1f}",
             a.lost or "-"] for a in agents.members]  # fmt: skip
    section.add(table(["agent", "host", "pid", "conns", "complete", "failed", "p50 ms", "p99 ms", "CPU busy",
                       "clock offset ms", "lost"], rows))  # fmt: skip
    if agents.warnings():
        section.add(bullets(agents.warnings()))
    return section


# -- helpers --------------------------------------------------------------------------------------


def _ms(us: float) -> str:
    return f"{us / 1000:,.3f}"


def _color(index: int) -> str:
    return f"C{index % 10}"


def _full_seconds(result: BenchResult) -> int:
    """Seconds of the measured phase that were measured whole (a final partial one is not)."""
    return math.floor(result.elapsed_s + 0.001)


def _with_series(results: Results, section: Section, what: str) -> list[tuple[int, str, BenchResult]]:
    """(index, label, result) of the results with a per-second series; a note for the others."""
    kept = [(i, label, r) for i, (label, r) in enumerate(results) if r.series]
    missing = [label for label, r in results if not r.series]
    if missing:
        section.add(paragraph(f"No {what} for {', '.join(missing)}: no per-second series in the result."))
    return kept


def _legend_text(label: str) -> str:
    """``label`` as matplotlib shows it: "$" not taken for mathtext, a leading "_" not hidden."""
    label = label.replace("$", r"\$")
    return " " + label if label.startswith("_") else label


def _legend(ax: Any, count: int) -> None:
    if count:
        ax.legend(fontsize=7, ncol=2 if count > 4 else 1)


# -- tables ---------------------------------------------------------------------------------------


def _summary(results: Results) -> str:
    rows = []
    for label, r in results:
        p = r.latency.corrected.percentiles
        done = r.latency.corrected.count > 0
        rows.append([
            label, f"{r.requests.complete + r.requests.failed:,}", f"{r.requests.complete:,} / {r.requests.failed:,}",
            "-" if r.why_no_rate() else number(r.derived.requests_per_s, 1),
            *(_ms(p[key]) if done else "-" for key in ("50", "90", "99", "99.9", "100")),
            describe_load(r.options.load), "-" if r.io is None else r.io.name,
            number(r.derived.client_cpu_us_per_request, 1), number(r.derived.server_cpu_us_per_request, 1),
        ])
    return table(["result", "requests", "complete / failed", "req/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms",
                  "max ms", "load", "I/O", "client CPU us/req", "server CPU us/req"], rows)


def _status_table(results: Results) -> str:
    """Responses by status code and failures by category, a column per result."""
    codes = sorted({code for _, r in results for code in r.status})
    errors = [name for name in ERROR_CATEGORIES if any(getattr(r.errors, name) for _, r in results)]
    rows: list[list[object]] = [[f"status {code}", *(f"{r.status.get(code, 0):,}" for _, r in results)]
                                for code in codes]
    rows += [[f"failed: {name}", *(f"{getattr(r.errors, name):,}" for _, r in results)] for name in errors]
    if not rows:
        return paragraph("No response and no failure recorded.")
    return table(["", *(label for label, _ in results)], rows)


# -- charts ---------------------------------------------------------------------------------------


def _time_unit(last_s: float) -> tuple[int, str]:
    """(seconds per unit, its word) for a time axis running to ``last_s`` seconds: seconds up to
    an hour, then minutes up to two days, then hours."""
    if last_s <= 3600:
        return 1, "second"
    return (60, "minute") if last_s <= 48 * 3600 else (3600, "hour")


def _seconds_axis(ax: Any, last: float, unit: int = 1) -> None:
    """Whole units (seconds, minutes, hours) 0 .. ``last`` on the x axis, half a unit of margin
    (one second alone is not drawn on an axis of hundredths)."""
    from matplotlib.ticker import MaxNLocator

    ax.set_xlim(-0.5, max(last / unit, 0) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def _markers(points: int) -> dict[str, Any]:
    """A dot on each point while they are few enough to be seen apart."""
    return {"marker": "o", "ms": 3} if points <= MARKED_POINTS else {}


def _captioned(caption: str, notes: Sequence[str]) -> str:
    """The caption, then what was downsampled (one note per result)."""
    return caption + "".join(f". {note[0].upper()}{note[1:]}" for note in notes if note)


def _nines(percent: str) -> float:
    return NINES["100"] if percent == "100" else 1 / (1 - float(percent) / 100)


def _curve(ax: Any, histogram: Histogram, **style: Any) -> None:
    keys = list(histogram.percentiles)
    ax.plot([_nines(k) for k in keys], [histogram.percentiles[k] / 1000 for k in keys], marker="o", ms=3, **style)


def _percentile_chart(results: Results, section: Section) -> None:
    measured = [(i, label, r) for i, (label, r) in enumerate(results) if r.latency.corrected.count]
    if not measured:
        section.add(paragraph("No latency percentiles: no request completed."))
        return
    with chart("bench-percentiles", "Latency by percentile (corrected: from the intended send time; dashed: "
               "uncorrected, from the actual send, open loop only)", section.body) as ax:
        for i, label, r in measured:
            corrected, uncorrected = r.latency.corrected, r.latency.uncorrected
            both = r.options.load.is_open and uncorrected.count > 0 and uncorrected.percentiles != corrected.percentiles
            _curve(ax, corrected, color=_color(i), label=_legend_text(f"{label} corrected" if both else label))
            if both:
                _curve(ax, uncorrected, color=_color(i), ls="--", label=_legend_text(f"{label} uncorrected"))
        ax.set_xscale("log")
        ax.set_xticks(list(NINES.values()), [f"{k}%" for k in NINES])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        label_axes(ax, "percentile", "latency (ms)")
        _legend(ax, len(ax.get_lines()))


def _throughput_chart(results: Results, section: Section, shown: Sequence[Shown]) -> None:
    _per_second_chart(results, shown, section, [("complete", "", "-")], "bench-throughput", "throughput over time",
                      "Requests completed per second", "complete requests / s")


def _errors_chart(results: Results, section: Section, shown: Sequence[Shown]) -> None:
    _per_second_chart(results, shown, section, [("failed", " failed", "-"), ("non_2xx", " non-2xx", "--")],
                      "bench-errors", "failures over time", "Per second: failed requests (solid; by category in the "
                      "table below) and complete answers whose status was not 2xx (dashed)", "requests / s")


def _per_second_chart(results: Results, per_second: Sequence[Shown], section: Section,
                      counts: Sequence[tuple[str, str, str]], chart_id: str, what: str, caption: str,
                      ylabel: str) -> None:
    """Counts of the per-second series (``per_second``: each result's, over its full seconds; a
    second with no sample counts 0), (attribute, label suffix, line style) each; a long series
    downsampled (each point the mean per second of its bucket: points x seconds add up to the
    totals)."""
    kept = _with_series(results, section, what)
    if not kept:
        return
    shown = [(i, label, per_second[i]) for i, label, _ in kept]
    last = max(s.span_s for _, _, s in shown) - 1
    unit, word = _time_unit(last)
    notes = [_note(label, s, "each point is the mean per second of its bucket", len(kept)) for _, label, s in shown]
    with chart(chart_id, _captioned(f"{caption} (a final partial second is left out)", notes), section.body) as ax:
        for i, label, series in shown:
            xs = [b.middle / unit for b in series.buckets]
            for count, suffix, style in counts:
                ax.plot(xs, [b.per_second(count) for b in series.buckets], color=_color(i), ls=style,
                        label=_legend_text(label + suffix), **_markers(len(xs)))
        ax.set_ylim(0, max(1, ax.get_ylim()[1]))  # counts: 0 to 0.05 would look like a measurement
        _seconds_axis(ax, last, unit)
        label_axes(ax, f"{word} of the measured phase", ylabel)
        _legend(ax, len(kept) * len(counts))


def _note(label: str, shown: Shown, how: str, results: int) -> str:
    """What the caption says of a downsampled series: its width, its points and entries, ``how``
    a point was made; "" when it is shown as it is."""
    if not shown.downsampled:
        return ""
    return f"{label + ': ' if results > 1 else ''}{shown.note()}; {how}"


def _latency_time_chart(results: Results, section: Section) -> None:
    kept = [(i, label, r) for i, label, r in _with_series(results, section, "latency over time")
            if any(s.complete for s in r.series)]
    if not kept:
        section.add(paragraph("No latency over time: no request completed."))
        return
    shown = [(i, label, downsample(r.series, max(s.second for s in r.series) + 1)) for i, label, r in kept]
    last = max(s.span_s for _, _, s in shown) - 1
    unit, word = _time_unit(last)
    notes = [_note(label, s, "each point is the highest per-second p50 and p99 of its bucket (percentiles of "
                   "different seconds cannot be averaged)", len(kept)) for _, label, s in shown]
    with chart("bench-latency-time", _captioned("Latency per second of completion: p50 (solid) and p99 (dashed)",
                                                notes), section.body) as ax:
        for i, label, series in shown:
            answered = [b for b in series.buckets if b.answered]
            xs = [b.middle / unit for b in answered]
            highest = " (highest per bucket)" if series.downsampled else ""
            ax.plot(xs, [(b.p50_us or 0) / 1000 for b in answered], color=_color(i),
                    label=_legend_text(f"{label} p50{highest}"), **_markers(len(xs)))
            ax.plot(xs, [(b.p99_us or 0) / 1000 for b in answered], ls="--", color=_color(i),
                    label=_legend_text(f"{label} p99{highest}"), **_markers(len(xs)))
        ax.set_ylim(bottom=0)
        _seconds_axis(ax, last, unit)
        label_axes(ax, f"{word} of the measured phase", "latency (ms)")
        _legend(ax, 2 * len(kept))


def _phases_chart(results: Results, section: Section) -> None:
    measured = [(i, label, r) for i, (label, r) in enumerate(results) if r.phases.total.count]
    if not measured:
        section.add(paragraph("No connection phases: no request completed."))
        return
    # https: the TLS handshake after connect, when a result had one
    phases = (*PHASES[:1], "tls", *PHASES[1:]) if any(r.tls is not None for _, _, r in measured) else PHASES
    caption = ("Per request: connect (requests that opened a connection), " + "tls (their TLS handshake), " * (
        len(phases) > len(PHASES)) + "waiting (send to first byte), processing (first to last byte), total; "
        "mean and p99")  # fmt: skip
    width = 0.8 / len(measured)
    with chart("bench-phases", caption, section.body, cols=2) as axes:
        for ax, stat in zip(axes, ("mean", "p99"), strict=True):
            for slot, (i, label, r) in enumerate(measured):
                histograms = [getattr(r.phases, name) for name in phases]
                values = [(h.mean_us if stat == "mean" else h.percentiles["99"]) / 1000 for h in histograms]
                ax.bar([p + (slot - (len(measured) - 1) / 2) * width for p in range(len(phases))], values,
                       width=width, color=_color(i), label=_legend_text(label))
            ax.set_xticks(range(len(phases)), phases)
            label_axes(ax, "", "ms", stat)
        _legend(axes[0], len(measured))
    for _, label, r in measured:  # https: how many handshakes the tls bar is made of
        if r.tls is not None:
            counts = f"{r.tls.handshakes:,} ({r.tls.resumed:,} resumed, {r.tls.handshakes - r.tls.resumed:,} full)"
            section.add(paragraph(f"{label + ': ' if len(measured) > 1 else ''}TLS handshakes: {counts}"))


# -- the server -----------------------------------------------------------------------------------


def _server_section(index: int, label: str, server: ServerLoadReport, result: BenchResult) -> Section:
    section = Section(f"Server: {label} (pid {server.server_pid})")
    _memory_chart(index, server, section)
    _workers_chart(index, server, section)
    growth = result.derived.server_private_growth_bytes_per_request
    cpu = result.derived.server_cpu_us_per_request
    reason = result.why_no_per_request(server=True)
    why = f"- ({reason})" if reason else "-"
    rows = [
        ["server CPU per completed request", why if cpu is None else f"{number(cpu, 1)} us"],
        ["server CPU", f"{server.server_cpu_s:.3f} s (reaped children: {server.server_cpu_reaped_s:.3f} s)"],
        ["children seen / spawned / exited",
         f"{server.children_seen} / {server.children_spawned} / {server.children_exited}"],
        ["max child USS", f"{mib(server.max_child_uss)} MiB"],
        ["max child RSS", f"{mib(server.max_child_rss)} MiB"],
        ["min child shared", f"{mib(server.min_child_shared)} MiB"],
        ["children's private growth per completed request", why if growth is None else f"{growth:,.0f} bytes"],
        ["samples", f"{server.samples} every {server.interval_s:g} s over {server.duration_s:.1f} s"],
    ]
    section.add(table(["server", label], rows))
    if server.messages:
        section.add(bullets(list(server.messages)))
    return section


def _memory_chart(index: int, server: ServerLoadReport, section: Section) -> None:
    if not server.series:
        section.add(paragraph("No memory chart: the sampler read no process's memory."))
        return
    pids = sorted({p.pid for p in server.series}, key=lambda pid: (pid != server.server_pid, pid))
    children = {child.pid for child in server.children}
    by_pid: dict[int, list[Any]] = {pid: [] for pid in pids}
    for point in server.series:
        by_pid[point.pid].append(point)
    lines = []
    widths = set()
    for pid in pids:
        times = [p.t for p in by_pid[pid]]
        uss_t, uss, width = peaks(times, [p.uss / MIB for p in by_pid[pid]])
        shared_t, shared, _ = peaks(times, [p.shared / MIB for p in by_pid[pid]])
        lines.append((pid, uss_t, uss, shared_t, shared))
        widths.add(width)
    caption = "Private memory (USS, solid) and memory shared with other processes (dashed) per process, MiB"
    with chart(f"bench-memory-{index}", _captioned(caption, [_peaks_note(max(widths))]), section.body) as ax:
        for slot, (pid, uss_t, uss, shared_t, shared) in enumerate(lines):
            name = "parent" if pid == server.server_pid else "child" if pid in children else "grandchild"
            color = "black" if pid == server.server_pid else _color(slot)
            dots = {"marker": "."} if len(uss_t) <= MARKED_POINTS else {}
            ax.plot(uss_t, uss, color=color, label=f"{name} {pid}", **dots)
            ax.plot(shared_t, shared, ls="--", lw=0.8, color=color)
        ax.set_ylim(bottom=0)
        label_axes(ax, "seconds since the first sample", "MiB")
        _legend(ax, len(pids))


def _peaks_note(width: int) -> str:
    if width == 1:
        return ""
    return f"downsampled: each point is the highest reading of its {duration_text(width)} bucket"


def _workers_chart(index: int, server: ServerLoadReport, section: Section) -> None:
    points = [p for p in server.status if p.busy_workers is not None or p.idle_workers is not None]
    if not points:
        return
    times = [p.t for p in points]
    busy_t, busy, width = peaks(times, [math.nan if p.busy_workers is None else p.busy_workers for p in points])
    idle_t, idle, _ = peaks(times, [math.nan if p.idle_workers is None else p.idle_workers for p in points])
    caption = f"Apache mod_status ({server.status_url or 'server-status'}): busy and idle workers"
    with chart(f"bench-workers-{index}", _captioned(caption, [_peaks_note(width)]), section.body) as ax:
        dots = {"marker": "."} if len(busy_t) <= MARKED_POINTS else {}
        ax.plot(busy_t, busy, label="busy", **dots)
        ax.plot(idle_t, idle, ls="--", label="idle", **dots)
        ax.set_ylim(bottom=0)
        label_axes(ax, "seconds since the first sample", "workers")
        _legend(ax, 2)
