"""The text of a profile (``pounder profile``'s output): what was profiled and how, the profiler's
cost, the top functions by self and by inclusive share, and, with ``per_child``, each process."""

from __future__ import annotations

import statistics

from pounder._units import count_text, number
from pounder.profile._cost import CostFigure, ProfilerCost, counted_rounds, needed
from pounder.profile._result import ProfileResult
from pounder.profile._stacks import FunctionShare

DEFAULT_TOP = 15
TRUNK = 0.99
"""A function on at least this share of the stacks, and hardly ever the leaf, is the server's own loop
(``main``, the worker's run loop): left out of the inclusive table, which would show only those."""
_NAME_WIDTH = 100


def _figure(what: str, figure: CostFigure, *, dearer: str) -> str:
    if figure.ratio is None or figure.low is None or figure.high is None or figure.p_value is None:
        return f"{what}: not known (no round had both its trials whole)"
    rounds = count_text(figure.rounds, "round")
    spread = f"{figure.ratio:.2f}x profiled / not (median of {rounds}, each {figure.low:.2f}-{figure.high:.2f})"
    if figure.told:
        return f"{what}: {spread}: a cost ({figure.costly} of {rounds} {dearer}; sign test p = {figure.p_value:.3f})"
    least = needed(figure.rounds)
    rule = (f"a cost needs at least {least} of {figure.rounds} dearer" if least is not None
            else "a cost needs at least 5 rounds, all dearer")
    return f"{what}: {spread}: no cost these rounds can tell ({figure.costly} of {rounds} {dearer}; {rule})"


def cost_lines(result: ProfileResult) -> list[str]:
    """The profiler's cost in words: on requests/s and on the p50 latency, with the medians of the
    counted rounds' trials, and the rounds left out."""
    cost: ProfilerCost = result.cost
    lines = [_figure("Profiler's cost on requests/s", cost.throughput, dearer="served fewer profiled"),
             _figure("Profiler's cost on p50 latency", cost.p50, dearer="slower profiled")]
    pairs, _ = counted_rounds(result.trials)
    if pairs:
        on = statistics.median(p.requests_per_s for _, p in pairs)
        off = statistics.median(u.requests_per_s for u, _ in pairs)
        lines[0] += f"; median {on:,.0f} vs {off:,.0f} req/s"
    lines += [f"Left out of the cost: {why}" for why in cost.left_out]
    return lines


def _name(name: str) -> str:
    """A function's name as the table shows it: a long one shortened in the middle, its end (the file and
    line) kept."""
    if len(name) <= _NAME_WIDTH:
        return name
    half = (_NAME_WIDTH - 1) // 2
    return name[:half] + "…" + name[-half:]


def _shown(share: float) -> float:
    """A share as the tables print it (percent, one decimal): the rule below is read on these."""
    return round(share * 100, 1)


def is_trunk(row: FunctionShare) -> bool:
    """The server's own loop: on at least :data:`TRUNK` of the stacks and the leaf of under
    1 - :data:`TRUNK` of them, both as the tables print the shares (a row shown at 99.0 % is
    left out, one shown at 98.9 % is not; so what the note says and what is listed agree)."""
    return _shown(row.inclusive_share) >= TRUNK * 100 and _shown(row.self_share) < (1 - TRUNK) * 100


def inclusive_rows(result: ProfileResult) -> tuple[list[FunctionShare], int]:
    """(the functions by inclusive share, the server's own loop left out (:func:`is_trunk`); how
    many were left out)."""
    kept = [row for row in result.by_inclusive if not is_trunk(row)]
    return kept, len(result.by_inclusive) - len(kept)


def trunk_note(left_out: int) -> str:
    return (f" ({count_text(left_out, 'function')} with an inclusive share of {TRUNK * 100:.1f} % or more and a "
            f"self share under {(1 - TRUNK) * 100:.1f} %, the server's own loop, left out)" if left_out else "")


def weight_text(result: ProfileResult, weight: int) -> str:
    """A weight as shown: samples, or milliseconds for a profiler that times (NYTProf)."""
    return _weight(result, weight)


def _unit(result: ProfileResult) -> str:
    return "samples" if result.unit == "samples" else "ms"


def _weight(result: ProfileResult, weight: int) -> str:
    return number(weight) if result.unit == "samples" else f"{weight / 1e6:,.1f}"


def _rows(result: ProfileResult, rows: list[FunctionShare], top: int) -> list[str]:
    calls = any(row.calls is not None for row in result.functions)
    head = f"  {'self %':>6}  {'incl %':>6}  {_unit(result):>9}" + (f"  {'calls':>9}" if calls else "") + "  function"
    lines = [head]
    for row in [row for row in rows if row.self_weight or row.inclusive_weight][:top]:
        count = f"  {number(row.calls) if row.calls is not None else '':>9}" if calls else ""
        lines.append(f"  {row.self_share * 100:6.1f}  {row.inclusive_share * 100:6.1f}  "
                     f"{_weight(result, row.self_weight):>9}{count}  {_name(row.name)}")
    return lines


def render_profile(result: ProfileResult, *, top: int = DEFAULT_TOP, per_child: bool = False) -> str:
    """The text ``pounder profile`` prints."""
    how = "" if result.found_by.startswith("pid ") else f" (from {result.found_by})"
    version = result.profiler_version or result.profiler
    profiled = sum(1 for t in result.trials if t.profiled)
    lines = [f"Profile of process {result.server_pid}{how}, {result.server_name}, by {version}",
             f"URL: {result.url}",
             f"Load: {result.load}; {result.rounds} round{'s' if result.rounds != 1 else ''} of an unprofiled and a "
             f"profiled trial, interleaved, after {number(result.warmup_requests)} unprofiled warm-up requests",
             f"Profiled: {number(result.profiled_requests)} requests in {count_text(profiled, 'trial')}; "
             f"{count_text(len(result.children), 'process', 'processes')} seen"
             + (f" ({len(result.started)} forked during the run)" if result.started else "")
             + (f", {len(result.exited)} exited" if result.exited else ""),
             *cost_lines(result)]
    if result.interrupted:
        lines.append("Interrupted: the profile holds what was sampled until the run stopped.")
    if result.total_weight == 0:
        lines.append("Nothing was sampled: no table to show.")
        return "\n".join([*lines, *(f"Note: {note}" for note in result.notes)]) + "\n"
    total = (f"{number(result.total_weight)} sample{'s' * (result.total_weight != 1)}" if result.unit == "samples"
             else f"{result.total_weight / 1e9:,.3f} s of profiled time")
    lines += ["", f"Top functions by self share (of {total}):", *_rows(result, result.by_self, top),
              ""]
    rows, trunk = inclusive_rows(result)
    lines += [f"Top functions by inclusive share{trunk_note(trunk)}:", *_rows(result, rows, top)]
    if per_child:
        lines += ["", "Per process:",
                  f"  {'pid':>8}  {'share %':>7}  {_unit(result):>9}  top function (its share of the process)"]
        lines += [f"  {child.pid:>8}  {child.share * 100:7.1f}  {_weight(result, child.weight):>9}  "
                  f"{_name(child.top_function)} ({child.top_share * 100:.1f} %)" for child in result.children]
    if result.parent_weight:
        lines.append(f"Note: the parent's own {_weight(result, result.parent_weight)} {_unit(result)} (its loop, "
                     "forking) are not in the shares: they are not the requests' work.")
    if result.dropped_weight:
        lines.append(f"Note: {_weight(result, result.dropped_weight)} {_unit(result)} in rare stacks are in the shares "
                     "but not in the stored stacks (the flame graph).")
    lines += [f"Note: {note}" for note in result.notes]
    lines += [f"File: {name} {path}" for name, path in result.files.items()]
    return "\n".join(lines) + "\n"
