"""Tuning runs of one application in different pods (``pounder tune --cpus``), side by side: what
each pod got (its quota and memory limit, the pool recommended, what the confirmation measured, how
often the quota ran out) and what changed from one to the next, as the runs stored it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pounder._units import MIB
from pounder.report._html import Section, bullets, paragraph, table
from pounder.report._tune import TuneResults


def _pod(run: TuneResults) -> str:
    options, cores = run.options, None if run.result is None else run.result.cores
    cpus = options.get("cpus")
    if cpus is None:
        return f"no pod ({cores} CPUs)" if cores is not None else "no pod"
    ram = options.get("ram")
    limit = "" if ram is None else f", {int(ram) / MIB:,.0f} MiB"
    return f"{float(cpus):g} CPU{'' if float(cpus) == 1 else 's'}{limit}"


def _figures(run: TuneResults) -> dict[str, Any]:
    confirmation = run.confirmation
    return {"children": None if run.result is None else run.result.params.max_clients,
            "rps": None if confirmation is None else confirmation.rps,
            "p99": None if confirmation is None else confirmation.p99_ms,
            "throttled": None if confirmation is None else confirmation.throttled_share}


def _number(value: Any, form: str) -> str:
    return "-" if value is None else format(float(value), form)


def pods_section(paths: Sequence[Path]) -> Section | None:
    """The runs side by side when two or more finished tuning runs are given and one ran in a pod;
    None otherwise."""
    runs = [run for run in (TuneResults(path) for path in paths) if run.finished]
    if len(runs) < 2 or all(run.options.get("cpus") is None for run in runs):
        return None
    name = runs[0].names.get("max_clients", "children")
    rows, changes = [], []
    for run in runs:
        got = _figures(run)
        throttled = "-" if got["throttled"] is None else f"{float(got['throttled']) * 100:.0f}%"
        rows.append([str(run.path), _pod(run), got["children"], _number(got["rps"], ",.0f"),
                     _number(got["p99"], ",.1f"), throttled])
    for before, after in zip(runs, runs[1:], strict=False):
        a, b = _figures(before), _figures(after)
        changes.append(f"{_pod(before)} → {_pod(after)}: {name} {a['children']} → {b['children']}; the confirmation "
                       f"answered {_number(a['rps'], ',.0f')} → {_number(b['rps'], ',.0f')} req/s, p99 "
                       f"{_number(a['p99'], ',.1f')} → {_number(b['p99'], ',.1f')} ms")
    section = Section("Pods compared")
    section.add(paragraph("The tuning runs given, each in the pod it emulated (--cpus: the server in a cgroup with "
                          "that CPU quota and its --ram as a memory limit); the confirmation's figures as stored."))
    section.add(table(["run", "pod", name, "confirmed req/s", "p99 ms", "throttled (confirmation)"], rows))
    section.add(bullets(changes))
    return section
