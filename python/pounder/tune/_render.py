"""The text of a tuning run: the tables the classic guides print (MC = children, NC = concurrent
clients, NR = requests, MRPC = MaxRequestsPerChild, RPS), then the recommendation, the numbers
behind it, the advice, and the configuration in the server's own syntax."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from pounder._errors import check_instance, public
from pounder._figures import BURST_FACTOR, sweep_load_text
from pounder._platform import HEADERS, platform_heading, platform_notes, platform_table
from pounder._pod_line import pod_line
from pounder._table import text_table
from pounder._tune_point import TunePoint
from pounder._tune_run import Confirmation, target_text
from pounder._tune_tables import (
    children_table,
    mrpc_table,
    pool_rows,
    pools_table,
    shape_rows,
    shapes_table,
    spare_table,
)
from pounder._units import children_text, count_text, mib
from pounder.pool import WARM_FAILING_ROUNDS, own_name
from pounder.tune._life import life_lines
from pounder.tune._result import TuneResult

WIDTH = 100


_table = text_table


def _bullets(items: Sequence[str]) -> list[str]:
    """Each item a wrapped paragraph; lines after an item's first (a snippet of configuration to
    paste) kept as they are, under it."""
    out = []
    for item in items:
        first, *snippet = item.split("\n")
        out += textwrap.wrap(first, WIDTH, initial_indent="  - ", subsequent_indent="    ")
        out += [f"    {line}" for line in snippet]
    return out




def _target_text(result: TuneResult) -> str:
    return target_text(result.target, result.offered, compared=True, trials=result.options.trials)


def _pools_table(result: TuneResult) -> list[str]:
    """Section 4: children x concurrency, each candidate at the sweep's concurrency (when the sweep
    measured it) and at the offered load."""
    if result.pools is None or result.offered is None:
        why = ("every connection holds a child (no buffering proxy in front): the pool covers the connections, "
               "nothing to compare")
        return [f"4. Pools at the offered load: not compared ({why})", ""]
    pools = result.pools
    label, words = sweep_load_text(result.sweep)
    out = [f"4. Pools at the offered load, {result.offered.text()}: children x concurrency, medians of interleaved "
           f"trials (RPS and p99 with their 95% intervals; at {label}: the children sweep, {words})"]
    rows = pool_rows(list(pools.points), list(result.sweep), pools.chosen, pools.best)
    out += pools_table(label).text(rows)
    out += _status_lines(result, pools.points)
    out.append("")
    return out


def _shapes_section(result: TuneResult) -> list[str]:
    """Section 4b: workers x threads at the offered load, for the servers whose workers run
    threads (:mod:`pounder.tune._shapes`)."""
    shaped, adapter = result.shapes, result.adapter
    if shaped is None:  # said in a run that would have compared them (not with --no-thread-sweep, nor stored before)
        if not result.options.sweep_threads:
            return []
        why = ("the threads of each worker were given (--threads)" if adapter.threaded and adapter.threads_fixed else
               "one worker of one thread was all the target needed" if adapter.threaded else
               f"{adapter.who} runs one request per child, no threads: the children sweep above is the whole answer")
        return [f"4b. Workers x threads: not compared ({why})", ""]
    out = [f"4b. Workers x threads at the offered load, {shaped.offered.text()}: shapes serving up to "
           f"{shaped.slots:,} requests at once (workers x threads), medians of interleaved trials (RPS and p99 with "
           "their 95% intervals; memory after the load)"]
    out += shapes_table().text(shape_rows(list(shaped.points), (shaped.workers, shaped.threads), shaped.best))
    out.append("")
    return out


def _status_lines(result: TuneResult, points: Sequence[TunePoint]) -> list[str]:
    """What the server's own status page said of these loads (its adapter's status reader, which
    reads the points as stored)."""
    reader = result.adapter.status_reader
    note = reader.note([p.to_dict() for p in points], result.adapter.who or result.adapter.kind,
                       result.adapter.names["max_clients"])
    return textwrap.wrap(note, WIDTH, initial_indent="  ", subsequent_indent="    ") if note else []


@public
def render_tune(result: TuneResult) -> str:
    """The whole text ``pounder tune`` prints (also saved as recommendation.txt)."""
    check_instance(result, TuneResult, "render_tune: result")
    out = [f"pounder tune: {result.adapter.describe()}", f"results in {result.results_dir}",
           f"target: {_target_text(result)}", f"traffic: {result.workload}"]
    out += [f"  {line}" for line in result.options.traffic]
    pod = pod_line(result.options.to_dict(), result.sweep)
    out += [] if pod is None else textwrap.wrap(pod, WIDTH, subsequent_indent="  ")
    out.append("")
    for section in (_sizes_section, _life_section, _memory_section, _children_section, _pools_table,
                    _shapes_section, _mrpc_section, _spare_section, _recommendation_section, _confirmation_section,
                    _fleet_section, _profile_section):
        out += section(result)
    if result.advice:
        out.append("")
        out.append("Advice")
        out += _bullets(result.advice)
    out.append("")
    out.append(f"Configuration ({result.adapter.kind})")
    out += ["  " + line if line else "" for line in result.config.splitlines()]
    out += _pod_section(result)
    return "\n".join(out) + "\n"


def _sizes_section(result: TuneResult) -> list[str]:
    """1. The child sizes."""
    out: list[str] = []
    measure = result.measure
    out.append(f"1. Child sizes ({children_text(int(measure['children']))}; MiB; after warm-up and after "
               f"{measure['requests_first'] + measure['requests_second']:,} more requests)")
    rows = []
    for name, stage in (("started", "cold"), ("warmed", "warm"), ("half-way", "mid"), ("end", "end")):
        sizes = measure[stage]
        rows.append([name, mib(sizes["median_uss"]), mib(sizes["max_uss"]), mib(sizes["median_shared"]),
                     mib(sizes["max_rss"]), mib(sizes["footprint"])])
    out += _table(["", "USS med", "USS max", "shared med", "RSS max", "footprint (PSS)"], rows)
    out.append(f"  parent: RSS {mib(measure['parent']['rss'])}, USS {mib(measure['parent']['uss'])} MiB; "
               f"growth per request {measure['growth_first']:,.0f} B then {measure['growth_second']:,.0f} B")
    rounds = measure.get("warm_rounds")
    warm = (f"  warm-up: {'? rounds' if rounds is None else count_text(int(rounds), 'round')}, "
            + ("memory and throughput settled" if measure.get("settled") else
               f"stopped: {WARM_FAILING_ROUNDS} rounds in a row had more than 1% of their requests failed"
               if measure.get("warm_failing") else "not settled within its limit")
            + f", {measure['warm_requests']:,} requests")
    if measure.get("child_start_s") is not None:
        warm += f"; a lost child is replaced and serving after {measure['child_start_s']:,.2f} s"
    out.append(warm)
    out += _platform_lines(measure, result.adapter.kind)
    if result.other_measure is not None:
        other = result.other_measure
        out.append(f"  with preload {'on' if other['preload'] else 'off'}: child USS max "
                   f"{mib(other['end']['max_uss'])} MiB, shared {mib(other['end']['median_shared'])} MiB")
    out.append("")
    return out


def _life_section(result: TuneResult) -> list[str]:
    """1b. Shared and private memory over a child's life (--life; nothing without it)."""
    if result.life is None:
        return []
    lines = life_lines(result.life, result.max_requests.unsharing)
    return [lines[0], *(wrapped for line in lines[1:]
                        for wrapped in textwrap.wrap(line, WIDTH, initial_indent="  ", subsequent_indent="    ")), ""]


def _platform_lines(measure: Mapping[str, Any], kind: str) -> list[str]:
    """Memory as the platform counts it, next to the sum of PSS (:mod:`pounder._platform`)."""
    heading = platform_heading(measure)
    if heading is None:
        return []
    rows = platform_table(measure)
    return [f"  {heading}", *(["  " + line for line in _table(HEADERS, rows)] if rows else []),
            *_bullets(platform_notes(measure, kind))]


def _memory_section(result: TuneResult) -> list[str]:
    """2. The memory bound."""
    out: list[str] = []
    memory = result.memory
    out.append("2. Memory bound")
    out.append(f"  RAM budget {mib(memory.ram)} MiB ({memory.ram_source})")
    out.append(f"  MaxClients = (RAM - parent USS - shared) / child USS = ({mib(memory.ram)} - {mib(memory.parent_uss)}"
               f" - {mib(memory.shared)}) / {mib(memory.child_uss)} = {memory.max_clients}")
    out.append(f"  without sharing: RAM / child RSS = {mib(memory.ram)} / {mib(memory.child_rss)} = "
               f"{memory.max_clients_no_sharing}")
    out.append("")
    return out


def _children_section(result: TuneResult) -> list[str]:
    """3. The children sweep."""
    out: list[str] = []
    names = result.adapter.names
    queued = any(p.queued is not None for p in result.sweep)  # results of earlier versions lack it
    out.append(f"3. Children ({names['max_clients']}); {result.workload}; medians of interleaved trials, "
               "RPS with its 95% interval, latency in ms"
               + (", queued: how often a connection waited for a free child" if queued else ""))
    out += children_table(queued=queued).text(result.sweep)
    out.append(f"  CPUs: {result.cpus}; other cores: processes that are neither the server nor pounder"
               + _front_note(result.sweep))
    out += _status_lines(result, result.sweep)
    out.append("")
    return out


def _mrpc_section(result: TuneResult) -> list[str]:
    """5. MaxRequestsPerChild."""
    out: list[str] = []
    names = result.adapter.names
    if result.mrpc_points:
        mrpc_children = children_text(result.mrpc_points[0].children)
        at = "" if result.offered is None else f" at {result.offered.text()}"
        out.append(f"5. {names['max_requests']} (MRPC) with {mrpc_children}{at}, the unlimited baseline interleaved "
                   "with each value")
        out += mrpc_table().text(result.mrpc_points)
    else:
        out.append(f"5. {names['max_requests']}: not swept (--mrpc 0: unlimited only, nothing to compare it with)")
    out.append("")
    return out


def _spare_section(result: TuneResult) -> list[str]:
    """6. The spare servers."""
    out: list[str] = []
    if result.spare:
        reference = float(result.spare[0].reference_p99_ms or 0.0)
        out.append("6. Spare servers: a step from idle to full load; medians of interleaved trials, p99 with its "
                   f"95% interval; slow s: leading seconds whose p99 was above {BURST_FACTOR:g} x {reference:,.1f} ms, "
                   "the lowest steady p99 of any trial")
        out += spare_table().text(result.spare)
        out.append("")
    else:
        out.append(f"6. Spare servers: {result.adapter.kind} starts all its workers at once (a fixed pool); "
                   "nothing to tune")
        out.append("")
    return out


def _recommendation_section(result: TuneResult) -> list[str]:
    """The recommendation, why, and the details."""
    out: list[str] = []
    names = result.adapter.names
    params = result.params
    out.append("Recommendation")
    start, low, high = result.adapter.spares(params)  # as the server runs them
    threads = [(own_name(names, "threads"), params.threads)] if result.shapes is not None else []
    items: list[tuple[str, object]] = [(names["max_clients"], params.max_clients), *threads,
                                       (own_name(names, "max_requests"), params.max_requests or "0 (unlimited)")]
    if result.spare and not high:  # uWSGI without cheaper (cheaper-step 0): every child started and kept
        items.append((names["min_spare"], "none: every child started and kept"))
    elif result.spare:
        items += [(names["start_servers"], start), (names["min_spare"], low), (names["max_spare"], high)]
    out += [f"  {name:<24}{value}" for name, value in items]
    out.append("")
    out.append("Why")
    out += _bullets(list(result.why))
    out.append("")
    out.append("Details")
    out += _bullets([*result.children.reasons, *result.max_requests.reasons,
                     *(() if result.spare_choice is None else result.spare_choice.reasons)])
    return out


def _confirmation_section(result: TuneResult) -> list[str]:
    """The confirmation run, when there was one."""
    out: list[str] = []
    if result.confirmation is not None:
        confirmation = Confirmation.from_dict(result.confirmation)
        out.append("")
        out.append(f"Confirmation: the recommended configuration {confirmation.headline}")
        out += [f"  {'met    ' if check.ok else 'NOT MET'}  {check.text}" for check in confirmation.checks]
        if confirmation.lowered_text is not None:
            out.append(f"  {confirmation.lowered_text}")
    return out


def _fleet_section(result: TuneResult) -> list[str]:
    """The servers a peak needs, with one to spare (:mod:`pounder.tune._fleet`), as decided."""
    size = None if result.fleet is None else result.fleet.size
    if size is None:
        return []
    return ["", "Fleet", *textwrap.wrap(size.text, WIDTH, initial_indent="  ", subsequent_indent="    ")]


def _pod_section(result: TuneResult) -> list[str]:
    """A container's resources next to the configuration (:mod:`pounder.tune._fleet`), as decided."""
    pod = None if result.fleet is None else result.fleet.pod
    if pod is None:
        return []
    return ["", "Container resources (Kubernetes)", *["  " + line for line in pod.yaml.splitlines()], "",
            f"  {pod.docker}", "", *_bullets(pod.notes)]


def _profile_section(result: TuneResult) -> list[str]:
    """tune --profile: the recommended configuration's profile in short (the whole: profile.json)."""
    return ["", *result.profile_lines] if result.profile_lines else []


def _front_note(points: Sequence[TunePoint]) -> str:
    """What the front that passes the load to the server used (php-fpm's nginx), counted apart
    from "srv cores" and "other cores" ("" without a front)."""
    fronts = [(p.children, p.front_cores) for p in points if p.front_cores is not None]
    if not fronts:
        return ""
    children, cores = fronts[-1]
    return (f"; the front passing the load to the server (nginx) used {cores:.2f} cores at {children_text(children)},"
            " counted in neither")
