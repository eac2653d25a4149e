"""Report parts for comparisons (``pounder/compare/1``) and experiments (``pounder run``
results directories): bars with their 95 % intervals, the tables, and the trials not counted and why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pounder._compare_run import CompareFigure, CompareRun, CompareTrial, MalformedCompareError
from pounder._records import decode_json
from pounder._units import MIB, count_text, number
from pounder.compare import (
    MAX_FAILED,
    clean_trial,
    describe_errors,
    format_ratio,
    parse_compare_gates,
)
from pounder.profile import ProfileResult, load_profile, moved_rows
from pounder.report._gates import gates_section
from pounder.report._html import ReportError, Section, chart, check_numbers, esc, label_axes, paragraph, pre, table
from pounder.report._profile import profile_sections
from pounder.results import GateReport, MalformedResultError

_WHY = {"warm-up": "warm-up", "interrupted": "interrupted (Ctrl-C)", "failures": "requests failed"}


def _bars(ax: Any, labels: Sequence[str], estimates: Sequence[CompareFigure | None], scale: float,
          ylabel: str, title: str) -> None:
    medians = [(e.median / scale) if e else 0.0 for e in estimates]
    low = [max(0.0, m - e.low / scale) if e and e.low is not None else 0.0
           for m, e in zip(medians, estimates, strict=True)]
    high = [max(0.0, e.high / scale - m) if e and e.high is not None else 0.0
            for m, e in zip(medians, estimates, strict=True)]
    positions = range(len(labels))
    ax.bar(positions, medians, yerr=[low, high], capsize=4, color="#4c78a8")
    ax.set_xticks(list(positions), labels, rotation=20 if max(len(x) for x in labels) > 10 else 0, ha="right"
                  if max(len(x) for x in labels) > 10 else "center")
    label_axes(ax, "", ylabel, title)


def _got_nowhere(trial: CompareTrial) -> bool:
    """Not counted for its ``nowhere`` alone (its requests did not fail: :func:`clean_trial`)."""
    failed, complete = trial.failed, trial.complete
    return (isinstance(trial.nowhere, str) and isinstance(failed, int) and isinstance(complete, int)
            and clean_trial(complete, failed))


def _excluded(trials: Sequence[CompareTrial]) -> str:
    """The rows of the trials not counted other than the warm-ups: why, and how requests failed."""
    rows = []
    for trial in trials:
        why = trial.why
        if why is None or why == "warm-up":
            continue
        failed, complete = int(trial.failed or 0), int(trial.complete or 0)
        if why == "failures" and _got_nowhere(trial):  # no answer that counts: the line saying so
            why = f"got nowhere: {str(trial.nowhere)[:300]}"
        rows.append([trial.stored.get("label", "-"), trial.stored.get("round", "-"), _WHY.get(why, why),
                     f"{failed:,} of {failed + complete:,}", describe_errors(trial.errors or {})])
    return table(["variant", "trial", "not counted", "failed requests", "errors"], rows) if rows else ""


def _unknown_reasons(run: CompareRun) -> list[str]:
    """For each comparison without a verdict: the side(s) with fewer than 2 counted trials."""
    reasons = []
    for c in run.comparisons:
        if c.verdict != "unknown":
            continue
        short = []
        for label in (c.baseline, c.label):
            mine = [t for t in run.trials if t.label == label]
            counted = sum(1 for t in mine if t.why is None)
            failed = sum(1 for t in mine if t.why == "failures")
            nowhere = sum(1 for t in mine if t.why == "failures" and _got_nowhere(t))
            what = "got nowhere" if nowhere == failed else "requests failed or got nowhere" if nowhere else \
                "requests failed"  # fmt: skip
            if counted < 2:
                short.append(f"{label} has {counted} counted trial{'' if counted == 1 else 's'}"
                             + (f" ({failed} not counted: {what})" if failed else ""))
        why = f"no ratio: {' and '.join(short)}; at least 2 per variant are needed" if short else "no interval"
        reasons.append(f"{c.label} vs {c.baseline}: unknown, {why}.")
    return reasons


def _read(doc: Mapping[str, Any], source: str) -> CompareRun:
    """The comparison as :class:`CompareRun`; :class:`ReportError` naming ``source`` and the key
    when its numbers are out of the schema's bounds or its variants or trials are not as
    ``pounder compare`` measures them."""
    check_numbers(doc, "compare", source)
    try:
        return CompareRun.from_dict(doc)
    except MalformedCompareError as error:
        raise ReportError(f"{source}: {error}") from None


def compare_sections(doc: Mapping[str, Any], source: str, chart_prefix: str = "compare",
                     heading: str | None = None) -> list[Section]:
    """The comparison: the bar charts (requests/s and p99 with their intervals) and the tables.
    :class:`ReportError` naming ``source`` when a count of ``doc`` is negative or a fraction."""
    run = _read(doc, source)
    variants = run.variants
    section = Section(heading or f"Comparison: {source}")
    trials = run.rounds
    if run.interrupted:
        section.add(paragraph("This comparison was interrupted: the figures cover the trials done."))
    elif not run.stored.get("complete", True) and any(t.why == "failures" for t in run.trials):
        section.add(paragraph(f"Some trials are not counted: more than {MAX_FAILED * 100:g} % of their requests "
                              "failed, or they got nowhere (listed below); the figures cover the counted trials."))
    if trials:
        section.add(paragraph(f"{count_text(trials, 'trial')} per variant, interleaved, after a warm-up trial each; "
                              "medians over the trials with 95 % bootstrap intervals."))
    labels = [v.label for v in variants]
    if not any(v.requests_per_s for v in variants):
        section.add(paragraph("No trial was counted (the warm-up trials are not): there is no figure to show yet."))
        for reason in _unknown_reasons(run):
            section.add(paragraph(reason))
        section.add(_excluded(run.trials))
        return [section]
    out: list[str] = []
    with chart(f"{chart_prefix}-bars", "Median requests/s and p99 latency per variant, with 95 % intervals",
               out, cols=2) as axes:
        _bars(axes[0], labels, [v.requests_per_s for v in variants], 1.0, "requests/s", "Throughput")
        _bars(axes[1], labels, [v.p99_us for v in variants], 1000.0, "ms", "p99 latency")
    section.body += out
    rows = []
    for v in variants:
        rps, p50, p99, cpu = v.requests_per_s, v.p50_us, v.p99_us, v.server_cpu_us_per_request
        rows.append([v.label, v.stored.get("trials", "-"), number(rps.median if rps else None),
                     f"{number(rps.bound('low') if rps else None)}-{number(rps.bound('high') if rps else None)}",
                     number(p50.median / 1000 if p50 else None, 3), number(p99.median / 1000 if p99 else None, 3),
                     number(cpu.median if cpu else None, 1), v.stored.get("failed", 0)])
    section.add(table(["variant", "trials", "req/s", "95% interval", "p50 ms", "p99 ms", "server CPU us/req",
                       "failed"], rows))
    if run.comparisons:
        rows = []
        for c in run.comparisons:
            title = c.title
            r, p = c.ratios
            rows.append([title, format_ratio(r.ratio), f"{format_ratio(r.low)}-{format_ratio(r.high)}",
                         format_ratio(p.ratio), f"{format_ratio(p.low)}-{format_ratio(p.high)}",
                         c.stored.get("verdict", "-")])
        section.add(table(["", "req/s ratio", "95% interval", "p99 ratio", "95% interval", "verdict"], rows))
    for reason in _unknown_reasons(run):
        section.add(paragraph(reason))
    section.add(_excluded(run.trials))
    if not run.gates:
        return [section]
    try:
        gates = GateReport.from_list(run.gates)
    except MalformedResultError as error:
        raise ReportError(f"{source}: {error}") from None
    return [section, gates_section(f"Gates (--fail-if): {heading or source}", gates, parse_compare_gates)]


def experiment_sections(path: Path, chart_prefix: str = "experiment") -> list[Section]:
    """An experiment results directory: what it is, each load's comparison, the memory and the
    system calls recorded (chart ids start with ``chart_prefix``)."""
    manifest = decode_json((path / "experiment.json").read_text())
    check_numbers(manifest, "experiment", path / "experiment.json")
    exp = manifest.get("experiment") or {}
    head = Section(f"Experiment: {exp.get('title', path.name)}")
    if exp.get("description"):
        head.add(paragraph(str(exp["description"])))
    server = exp.get("server") or {}
    what = server.get("conf") or server.get("app") or server.get("psgi") or server.get("command") or "URLs"
    how_many = count_text(len(exp.get("variants") or []), "variant")
    head.add(paragraph(f"Server: {server.get('adapter')} ({what}); {how_many}; results in {path}."))
    sections = [head]
    loads = sorted(path.glob("load-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    for index, load_path in enumerate(loads, start=1):
        doc = decode_json(load_path.read_text())
        sections += compare_sections(doc, str(load_path), chart_prefix=f"{chart_prefix}-load-{index}",
                                     heading=f"Load {index}")
    memory_path = path / "memory.json"
    if memory_path.is_file():
        memory_doc = decode_json(memory_path.read_text())
        check_numbers(memory_doc, "experiment", memory_path)
        sections.append(_memory_section(memory_doc.get("variants") or {}, chart_prefix))
    traces = sorted(path.glob("syscalls-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    if traces:
        section = Section("System calls per request")
        variants = exp.get("variants") or []
        rows = []
        failing: list[str] = []
        for trace_path in traces:
            report = decode_json(trace_path.read_text())
            check_numbers(report, "syscalls", trace_path)
            index = int(trace_path.stem.split("-")[1]) - 1
            label = variants[index]["label"] if index < len(variants) else trace_path.stem
            calls = report.get("calls") or []
            total = sum(float(c["per_request"]) for c in calls)
            rows.append([label, f"{total:.2f}"] + [
                f"{sum(float(c['per_request']) for c in calls if c['name'] in names):.2f}"
                for names in (("stat", "lstat", "newfstatat", "statx", "fstatat64"), ("open", "openat", "openat2"))])
            failing += [f"{label}: {f['name']} {f['errno']} {f.get('path') or '-'} "
                        f"{float(f['per_request']):.2f}/request" for f in report.get("failures") or []]
        section.add(table(["variant", "all", "stat", "open"], rows))
        if failing:
            section.add(f"<h3>{esc('Failing calls')}</h3>")
            section.add(pre("\n".join(failing)))
        sections.append(section)
    sections += _profiles(path, exp.get("variants") or [], str(exp.get("baseline") or ""))
    summary = path / "summary.txt"
    if summary.is_file():
        sections.append(Section("As printed").add(pre(summary.read_text())))
    return sections

def _memory_section(memory: dict[str, Any], chart_prefix: str) -> Section:
    """The children's memory of each variant (``memory.json``'s variants): a chart and a table."""
    section = Section("Children's memory")
    early = [label for label, sizes in memory.items() if "after" not in sizes]
    if early:
        section.add(paragraph(f"Stopped before a load ran: {', '.join(early)} (figures after warm-up only)."))
    memory = {label: {**sizes, "after": sizes.get("after", sizes["warm"])} for label, sizes in memory.items()}
    labels = list(memory)
    out: list[str] = []
    with chart(f"{chart_prefix}-memory", "Per child after the loads: private (USS, the cost of one more child) and "
               "shared with the parent (MiB)", out) as ax:
        uss = [(memory[label]["after"].get("max_child_uss") or 0) / MIB for label in labels]
        shared = [(memory[label]["after"].get("median_child_shared") or 0) / MIB for label in labels]
        positions = list(range(len(labels)))
        ax.bar([p - 0.2 for p in positions], uss, width=0.4, label="max child USS", color="#e45756")
        ax.bar([p + 0.2 for p in positions], shared, width=0.4, label="median child shared", color="#4c78a8")
        ax.set_xticks(positions, labels)
        ax.set_ylim(0, max([*uss, *shared]) * 1.3 or 1)  # room for the legend above the bars
        ax.legend(loc="upper right", ncol=2)
        label_axes(ax, "", "MiB")
    section.body += out
    rows = [[label, sizes["after"]["children"],
             "-" if "requests" not in sizes["after"] else number(sizes["after"]["requests"]),
             number((sizes["warm"]["max_child_uss"] or 0) / MIB, 1),
             number((sizes["after"]["max_child_uss"] or 0) / MIB, 1),
             number((sizes["after"]["median_child_shared"] or 0) / MIB, 1),
             number(sizes["after"]["footprint"] / MIB, 1)]
            for label, sizes in memory.items()]
    section.add(table(["variant", "children", "requests sent", "max USS warm MiB", "max USS after MiB",
                       "shared MiB", "footprint MiB"], rows))
    return section



def _profiles(path: Path, variants: Sequence[Mapping[str, Any]], baseline: str) -> list[Section]:
    """An experiment's ``record = ["profile"]``: where the time moved between the variants (self
    shares of each one's top functions), then each variant's profile (``profile-N.json``)."""
    found: dict[str, tuple[Path, ProfileResult]] = {}
    for profile_path in sorted(path.glob("profile-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        index = int(profile_path.stem.split("-")[1]) - 1
        label = str(variants[index]["label"]) if index < len(variants) else profile_path.stem
        found[label] = (profile_path, load_profile(profile_path))
    sections = []
    profiles = {label: result for label, (_, result) in found.items()}
    if baseline in profiles and len(profiles) > 1:
        rows = [[name, *("-" if share is None else f"{share * 100:.1f}" for share in shares)]
                for name, shares in moved_rows(profiles, baseline)]
        sections.append(Section("Where did the time move").add(paragraph(
            "Self share (%) of each variant's profiled time, for the top functions of each variant's profile "
            "(- : not among a profile's stored functions).")).add(table(["function", *profiles], rows)))
    for label, (profile_path, result) in found.items():
        for section in profile_sections(result, str(profile_path)):
            section.title = f"{label}: {section.title}"
            sections.append(section)
    return sections
