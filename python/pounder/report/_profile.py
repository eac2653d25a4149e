"""The part of the page for a ``pounder profile`` result (``pounder/profile/1``): what was profiled
and how, the profiler's cost, the top functions by self and by inclusive share, each process, and
the flame graph drawn from the stored stacks (it is drawn, not decided again)."""

from __future__ import annotations

import base64

from pounder._units import count_text
from pounder.profile import ProfileResult, cost_lines, flame_svg, inclusive_rows, trunk_note, weight_text
from pounder.report._html import Section, bullets, details, paragraph, scroll, table

TOP = 25


def _rows(result: ProfileResult, rows: list, top: int = TOP) -> str:  # type: ignore[type-arg]
    calls = any(row.calls is not None for row in result.functions)
    unit = "samples" if result.unit == "samples" else "ms"
    headers = ["self %", "inclusive %", unit, *(["calls"] if calls else []), "function"]
    body = [[f"{row.self_share * 100:.1f}", f"{row.inclusive_share * 100:.1f}", weight_text(result, row.self_weight),
             *([f"{row.calls:,}" if row.calls is not None else ""] if calls else []), row.name] for row in rows[:top]]
    return scroll(table(headers, body))


def _flame(result: ProfileResult) -> str:
    """The flame graph as an image (self-contained: a data URI); the interactive SVG is ``--flamegraph``'s."""
    svg = flame_svg(result.stacks, title=f"{result.server_name} (pid {result.server_pid}): {result.url}",
                    unit=result.unit)
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return (f'<img class="flamegraph" alt="flame graph of the children\'s stacks" style="max-width:100%" '
            f'src="data:image/svg+xml;base64,{data}">')


def profile_sections(result: ProfileResult, source: str) -> list[Section]:
    """The sections for one profile result read from ``source``."""
    how = "" if result.found_by.startswith("pid ") else f", {result.found_by}"
    section = Section(f"Profile: {result.server_name} (pid {result.server_pid}{how})")
    profiled = sum(1 for trial in result.trials if trial.profiled)
    section.add(paragraph(
        f"{source}: profiled at {result.started_at} by {result.profiler_version or result.profiler} (pounder "
        f"{result.tool_version}) while pounder loaded {result.url}: {result.load}; "
        f"{count_text(result.rounds, 'round')} of an "
        f"unprofiled and a profiled trial, interleaved; {count_text(result.profiled_requests, 'request')} in "
        f"{count_text(profiled, 'profiled trial')}; {count_text(len(result.children), 'process', 'processes')} "
        "profiled."))
    section.add(bullets(cost_lines(result) + (["Interrupted: the profile holds what was sampled until the run stopped."]
                                              if result.interrupted else [])))
    trials = [[t.round, "yes" if t.profiled else "no", f"{t.complete:,}", f"{t.failed:,}", f"{t.requests_per_s:,.1f}",
               f"{t.p50_us / 1000:.2f}", f"{t.p99_us / 1000:.2f}"] for t in result.trials]
    section.add(details("Trials", table(["round", "profiled", "complete", "failed", "req/s", "p50 ms", "p99 ms"],
                                        trials)))
    if result.total_weight == 0:
        return [section.add(paragraph("Nothing was sampled: no functions or flame graph to show."))]
    functions = Section("Where the children's time went")
    functions.add(paragraph("Self share: the function itself; inclusive share: it and everything it called. Shares "
                            f"are of the children's {weight_text(result, result.total_weight)} "
                            f"{'samples' if result.unit == 'samples' else 'ms'}; the parent's own are kept apart."))
    functions.add(paragraph("By self share:")).add(_rows(result, result.by_self))
    rows, trunk = inclusive_rows(result)
    functions.add(paragraph(f"By inclusive share{trunk_note(trunk)}:")).add(_rows(result, rows))
    functions.add(_flame(result))
    children = [[child.pid, f"{child.share * 100:.1f}", weight_text(result, child.weight), child.top_function,
                 f"{child.top_share * 100:.1f}"] for child in result.children]
    functions.add(details(f"Each process ({len(children)})", scroll(table(
        ["pid", "share %", "samples" if result.unit == "samples" else "ms", "top function", "its share %"],
        children))))
    if result.notes:
        functions.add(bullets(list(result.notes)))
    return [section, functions]
