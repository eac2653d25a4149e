"""The tables and verdicts of benchmarks/peers.py: medians over the rounds, each round's ratio to
wrk (median, min-max), whether a client CPU cap bound, and one line per target of issue 30."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from peers import Mode, Round

BOUND_SHARE = 0.9  # a capped run used at least this share of its quota: the cap, not the server, held it back


def _spread(values: Sequence[float]) -> str:
    finite = [v for v in values if v == v]
    if not finite:
        return "n/a"
    return f"{statistics.median(finite):.2f}x ({min(finite):.2f}-{max(finite):.2f})"


@dataclass
class Row:
    tool: str
    us: float
    rps: float
    cpu_ratios: list[float]
    rps_ratios: list[float]
    busy: float
    engine_us: float | None
    rounds: int


def rows_of(mode: Mode, baseline: str = "wrk") -> list[Row]:
    base = mode.rounds.get(baseline, [])
    rows = []
    for tool, rounds in mode.rounds.items():
        if not rounds:
            continue
        # pairwise: round i of this tool against round i of wrk (the same round, if both ran in each)
        pairs = list(zip(rounds, base, strict=False)) if len(rounds) == len(base) else []
        engine = [e for e in (r.engine_us_per_request for r in rounds) if e is not None]
        rows.append(
            Row(
                tool,
                statistics.median(r.us_per_request for r in rounds),
                statistics.median(r.long.rps for r in rounds),
                [a.us_per_request / b.us_per_request for a, b in pairs],
                [a.long.rps / b.long.rps for a, b in pairs],
                statistics.median(r.core_busy for r in rounds),
                statistics.median(engine) if engine else None,
                len(rounds),
            )
        )
    return rows


def table(mode: Mode, markdown: bool) -> list[str]:
    if mode.skipped:
        return []
    rows = rows_of(mode)
    head = ["tool", "µs CPU/request", "requests/s", "CPU vs wrk", "requests/s vs wrk", "client core busy", "rounds"]
    cells = [
        [
            r.tool,
            f"{r.us:.2f}" + (f" (engine {r.engine_us:.2f})" if r.engine_us is not None else ""),
            f"{r.rps:,.0f}",
            _spread(r.cpu_ratios),
            _spread(r.rps_ratios),
            f"{r.busy:.0%}",
            str(r.rounds),
        ]
        for r in rows
    ]
    if markdown:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(c) + " |" for c in cells]
    widths = [max(len(x) for x in col) for col in zip(head, *cells, strict=False)]
    fmt = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    return [fmt.format(*head)] + [fmt.format(*c) for c in cells]


def footnotes(mode: Mode) -> list[str]:
    lines = [f"skipped: {mode.skipped}"] if mode.skipped else []
    lines += [f"skipped, not found: {m}" for m in mode.missing]
    lines += [f"left out after it failed: {name}: {why}" for name, why in mode.errors.items()]
    if mode.count_notes:
        lines.append(
            f"counts that differ from nginx's by more than the requests in flight, or failures "
            f"({len(mode.count_notes)}): " + "; ".join(mode.count_notes[:6])
        )
    if mode.cap is not None and mode.cap.directory is not None and mode.rounds:
        lines.append(f"the cap: {mode.cap.describe()}; {cap_binding(mode)}")
    return lines


def quota_used(r: Round, fraction: float) -> float:
    """The share of its quota a capped tool used between its short and its long run (start-up not counted)."""
    wall = r.long.wall_s - r.short.wall_s
    return (r.long.cpu_s - r.short.cpu_s) / (fraction * wall) if wall > 0 else float("nan")


def throttled_share(r: Round) -> float:
    t = r.long.throttle
    return t.throttled / t.periods if t is not None and t.periods > 0 else 0.0


def bound(r: Round, fraction: float) -> bool:
    """Whether the cap held a capped round back: its long run throttled, and the quota used up (>= BOUND_SHARE)
    over the extra seconds; else the tool waited for something else (the server, a busy core)."""
    return throttled_share(r) > 0 and quota_used(r, fraction) >= BOUND_SHARE


def _bound_counts(mode: Mode, tool: str) -> tuple[int, int]:
    assert mode.cap is not None
    rounds = mode.rounds.get(tool, [])
    return sum(bound(r, mode.cap.fraction) for r in rounds), len(rounds)


def cap_binding(mode: Mode) -> str:
    """Per tool: in how many rounds the cap bound, the share of periods throttled, the share of the quota used."""
    assert mode.cap is not None
    parts = []
    for tool, rounds in mode.rounds.items():
        if not rounds:
            continue
        held, runs = _bound_counts(mode, tool)
        throttled = statistics.median(throttled_share(r) for r in rounds)
        used = statistics.median(quota_used(r, mode.cap.fraction) for r in rounds)
        loose = [
            f"round {i + 1}: {throttled_share(r):.0%}, {quota_used(r, mode.cap.fraction):.0%}"
            for i, r in enumerate(rounds)
            if not bound(r, mode.cap.fraction)
        ]
        detail = f"; not bound in {', '.join(loose)}" if loose else ""
        parts.append(
            f"{tool} {held} of {runs} (throttled in {throttled:.0%} of periods, {used:.0%} of the quota used{detail})"
        )
    every = all(held == runs for held, runs in (_bound_counts(mode, tool) for tool in mode.rounds))
    verdict = "the client core is the limit" if every else "where it did not, the client core was not the limit"
    return (
        f"bound (long run throttled, >= {BOUND_SHARE:.0%} of the quota used over the extra seconds) in the rounds "
        f"of: {', '.join(parts)}; {verdict}"
    )


def _median(values: list[float]) -> float | None:
    finite = [v for v in values if v == v]
    return statistics.median(finite) if finite else None


def _ratio_line(what: str, r: Row | None, wrk: Row | None, kind: str, target: float | None, note: str = "") -> str:
    """ "<what>: median 0.80x (0.70-0.90) over 5 rounds (target ...): PASS|FAIL"; no verdict when target is None."""
    wanted = "" if target is None else f"target {'<=' if kind == 'cpu' else '>='} {target:.1f}x"
    ratios = [] if r is None else r.cpu_ratios if kind == "cpu" else r.rps_ratios
    value = _median(ratios)
    if r is None or wrk is None or value is None:
        return f"{what}: not measured ({wanted or 'no verdict'}{note}): n/a"
    brackets = "; ".join(x for x in (wanted, note.lstrip("; ")) if x)
    line = f"{what}: median {_spread(ratios)} over {r.rounds} rounds ({brackets})"
    if target is None:
        return line
    ok = value <= target if kind == "cpu" else value >= target
    return f"{line}: {'PASS' if ok else 'FAIL'}"


def _capped_verdict(mode: Mode | None, rows: dict[tuple[str, str], Row]) -> str:
    if mode is None or mode.cap is None:
        return "requests/s vs wrk, keep-alive, the client core the limit: not measured (--mode capped): n/a"
    what = f"requests/s vs wrk, keep-alive, client capped at {mode.cap.fraction:.2f} core (the client core the limit)"
    if mode.skipped:
        return f"{what}: not measured ({mode.skipped}): n/a"
    r, wrk = rows.get(("capped", "pounder uring")), rows.get(("capped", "wrk"))
    line = _ratio_line(what, r, wrk, "rps", 1.0)
    loose = {t: _bound_counts(mode, t) for t in ("pounder uring", "wrk")}
    loose = {t: (held, runs) for t, (held, runs) in loose.items() if held < runs}
    if r is None or wrk is None or not loose:
        return line
    where = ", ".join(f"{t} {runs - held} of {runs}" for t, (held, runs) in loose.items())
    return line.rsplit(": ", 1)[0] + f": NOT JUDGED, the cap did not bind in rounds of {where}"


def verdicts(modes: dict[str, Mode]) -> list[str]:
    """One line per target of issue 30's "Must show" (pounder's io_uring path against wrk), medians of the rounds'
    ratios with their min-max; requests/s judged where a CPU cap made the client core the limit (--mode capped)."""
    rows = {(key, r.tool): r for key, mode in modes.items() for r in rows_of(mode)}
    lines = [
        _ratio_line(what, rows.get((key, "pounder uring")), rows.get((key, "wrk")), "cpu", target)
        for key, what, target in (
            ("keepalive", "CPU per request vs wrk, keep-alive", 0.7),
            ("close", "CPU per request vs wrk, new connection per request", 0.9),
        )
    ]
    lines.append(_capped_verdict(modes.get("capped"), rows))
    r, wrk = rows.get(("keepalive", "pounder uring")), rows.get(("keepalive", "wrk"))
    if r is not None and wrk is not None:
        note = f"; client core busy: wrk {wrk.busy:.0%}, pounder {r.busy:.0%}"
        if max(wrk.busy, r.busy) < 0.9:
            note += ", below 90 %: the server, not the client core, was the limit"
        lines.append(_ratio_line("requests/s vs wrk, keep-alive, uncapped (no verdict)", r, wrk, "rps", None, note))
    return lines
