"""Report parts for a tuning results directory (``pounder tune --results DIR``).

On top the recommendation (the pool parameters in the server's own names, the configuration
snippet, the reasons and the advice); then one part per step, each with its chart and the table
the text report prints (:mod:`pounder.tune._render`):

* ``tune-children``: requests/s (the median of the trials, with its 95 % interval) and p99
  against the number of children (the sweep), the recommended count marked;
* ``tune-leak``: a child's private memory (USS) against the requests it served, with the fitted
  growth line;
* ``tune-memory``: the MaxClients formula, shared + n x child USS against the RAM budget, next to
  the sweep's requests/s (where throughput stops growing);
* ``tune-max-requests``: requests/s per MaxRequestsPerChild value (median and interval), with
  its change against unlimited;
* ``tune-spare``: (servers that spawn children with the load) per-second p99 after a step from
  idle to full load, with the server's default spare settings and with the recommended ones.

The recommendation is followed by the confirmation's checks. A run without
``recommendation.json`` (interrupted, or still running) is reported from the points measured so
far, each sweep point aggregated from its trials as the run does, with a note. Results of an older
pounder (``pounder/tune/1``: one trial per point) are shown with the figures they hold.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pounder import tune
from pounder._errors import PounderError
from pounder._units import KIB, MIB, mib
from pounder.pool import ADAPTERS, OLD_TUNE_SCHEMAS, RESULT_SCHEMA, TUNE_SCHEMA, ResultsDir, adapter_from_dict
from pounder.report._html import ReportError, Section, bullets, chart, esc, label_axes, paragraph, pre, table

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PARAMS = ("max_clients", "max_requests", "start_servers", "min_spare", "max_spare")
_GENERIC = {"max_clients": "children (MaxClients)", "max_requests": "requests per child (MaxRequestsPerChild)",
            "start_servers": "children at start (StartServers)", "min_spare": "idle children, at least (MinSpare)",
            "max_spare": "idle children, at most (MaxSpare)", "preload": "preload the application in the parent"}
_NAMES = {kind: cls.names for kind, cls in ADAPTERS.items()}
_ON_DEMAND = {kind for kind, cls in ADAPTERS.items() if cls.on_demand}
_OLD_RESULTS = ("pounder/tune-result/1",)
_BLUE, _ORANGE, _GREEN, _RED, _GREY = "#4c78a8", "#f58518", "#54a24b", "#e45756", "#8c8c8c"


# ---------------------------------------------------------------------------------------------
# formatting (as the text report)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _cpu(point: Mapping[str, Any]) -> str:
    value = point.get("server_cpu_us")
    return "-" if value is None else f"{value:,.0f}"


def _mrpc_label(value: int) -> str:
    return "unlimited" if value == 0 else str(value)


def _cores(value: float | None) -> str:
    return "-" if value is None else f"{float(value):.2f}"


def _errors(points: Sequence[Mapping[str, Any]]) -> list[list[float]] | None:
    """matplotlib ``yerr`` (below, above) of the points' requests/s intervals; None without any."""
    if not any(p.get("rps_low") is not None for p in points):
        return None
    below = [float(p["rps"]) - float(p["rps_low"]) if p.get("rps_low") is not None else 0.0 for p in points]
    above = [float(p["rps_high"]) - float(p["rps"]) if p.get("rps_high") is not None else 0.0 for p in points]
    return [[max(0.0, v) for v in below], [max(0.0, v) for v in above]]


# ---------------------------------------------------------------------------------------------
# reading the directory


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except OSError as error:
        raise ReportError(f"cannot read {path}: {error.strerror or error}") from None
    except (ValueError, UnicodeDecodeError):
        raise ReportError(f"{path} is not valid JSON") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path} does not hold a JSON object")
    return data


def _describe(adapter: Mapping[str, Any]) -> str | None:
    """The one-line description of the server that ``recommendation.json`` would hold."""
    try:
        return adapter_from_dict(adapter).describe() if adapter else None
    except PounderError:  # e.g. the user's configuration file is gone: the kind says enough
        return None


class _Run:
    """What the report shows, from ``recommendation.json`` when the run finished, else from the
    stored points (with the figures the run derives from them computed the same way)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = ResultsDir(path)
        self.manifest = _read(self.store.manifest_path) or {}
        self.old = self.manifest.get("schema") in OLD_TUNE_SCHEMAS
        if self.manifest and self.manifest.get("schema") != TUNE_SCHEMA and not self.old:
            raise ReportError(f"{self.store.manifest_path} is not a {TUNE_SCHEMA} document")
        try:
            self.points = self.store.points()
        except PounderError as error:
            raise ReportError(str(error)) from None
        self.by_key = {str(p.get("key")): p for p in self.points}
        self.result = _read(self.store.result_path)
        if self.result is not None and self.result.get("schema") not in (RESULT_SCHEMA, *_OLD_RESULTS):
            raise ReportError(f"{self.store.result_path} is not a {RESULT_SCHEMA} document")
        if self.result is not None:
            self.old = self.result.get("schema") in _OLD_RESULTS
        self.confirmation: Mapping[str, Any] | None = None
        self.target: Mapping[str, Any] | None = None
        self.options: Mapping[str, Any] = self.manifest.get("options") or {}
        adapter = self.manifest.get("adapter") or {}
        result = self.result or {}
        self.kind = str((result.get("server") or adapter).get("kind", "the server"))
        self.names: Mapping[str, str] = result.get("names") or _NAMES.get(self.kind) or {k: "-" for k in _GENERIC}
        self.described = str(result.get("described") or _describe(adapter) or self.kind)
        if self.result is not None:
            self._from_result(self.result)
        else:
            self._from_points()

    def _from_result(self, result: Mapping[str, Any]) -> None:
        self.measure: Mapping[str, Any] | None = result["measure"]
        self.other_measure: Mapping[str, Any] | None = result.get("other_measure")
        self.memory: Mapping[str, Any] | None = result["memory"]
        self.sweep: list[Mapping[str, Any]] = list(result["sweep"])
        self.children: Mapping[str, Any] | None = result["children"]
        self.mrpc: list[Mapping[str, Any]] = list(result["mrpc"])
        self.max_requests: Mapping[str, Any] | None = result["max_requests"]
        self.spare: list[dict[str, Any]] = [self._with_series(dict(p)) for p in result.get("spare") or []]
        self.confirmation = result.get("confirmation")
        self.target = result.get("target")
        self._reference()

    def _from_points(self) -> None:
        summaries = {key: p.get("summary") or {} for key, p in self.by_key.items()}
        self.measure = summaries.get("sizes")
        self.other_measure = next((summaries[k] for k in ("sizes-preload-on", "sizes-preload-off")
                                   if k in summaries), None)
        self.memory = None
        if self.measure is not None and "safety_margin" in self.options:
            ram = self.options.get("ram")
            self.memory = tune.memory_bound(self.measure, None if ram is None else int(ram),
                                       int(self.options["safety_margin"])).to_dict()
        by_step: dict[str, list[Mapping[str, Any]]] = {}
        for point in self.points:
            by_step.setdefault(str(point.get("step")), []).append(point.get("summary") or {})
        self.children = None
        order = [int(v) for v in self.options.get("mrpc_values") or []]
        if not self.old:  # one file per trial: each point aggregated as the run aggregates it
            grouped = tune.trials_by(by_step.get("children", []), "children")
            by_step["children"] = [tune.aggregate_trials(grouped[count]) for count in grouped]
            grouped = tune.trials_by(by_step.get("max-requests", []), "max_requests")
            by_step["max-requests"] = [tune.aggregate_trials(grouped[value]) for value in grouped]
        self.sweep = sorted(by_step.get("children", []), key=lambda p: int(p["children"]))
        mrpc = [dict(p) for p in by_step.get("max-requests", [])]
        mrpc.sort(key=lambda p: order.index(int(p["max_requests"])) if int(p["max_requests"]) in order else 1 << 40)
        if mrpc and not self.old:
            mrpc = tune.mrpc_losses(mrpc)
        elif mrpc:  # an older run's single points
            cost = tune.respawn_cost(mrpc)
            for point in mrpc:
                point["loss_measured"] = tune.measured_loss(point, mrpc)
                point["loss_model"] = tune.predicted_loss(int(point["max_requests"]), cost)
        self.mrpc = list(mrpc)
        self.max_requests = None
        self.spare = []
        for name in ("before", "after"):
            stored = self.by_key.get(f"spare-{name}")
            if stored is not None:
                self.spare.append(self._with_series({**(stored.get("summary") or {}), "name": name}))
        self._reference()

    def _with_series(self, summary: dict[str, Any]) -> dict[str, Any]:
        """The spare summary with its ``series`` (older results kept it only in the point's bench)."""
        if "series" not in summary:
            point = self.by_key.get(f"spare-{summary.get('name')}") or {}
            bench = point.get("bench")
            series = bench.get("series") if isinstance(bench, dict) else None
            summary["series"] = [{"second": s["second"], "complete": s["complete"], "p99_us": s["p99_us"]}
                                 for s in series or []]
        return summary

    def _reference(self) -> None:
        """``reference_p99_ms`` and ``burst_s`` as the run computes them, when they are not stored
        (an interrupted run, or results written before ``reference_p99_ms`` existed)."""
        self.recomputed = bool(self.spare) and not all("reference_p99_ms" in p for p in self.spare)
        if not self.recomputed:
            return
        steady = [s for s in (tune.steady_p99_us(p["series"]) for p in self.spare) if s is not None]
        reference = min(steady) if steady else 0.0
        for point in self.spare:
            point["reference_p99_ms"] = reference / 1000
            point["burst_s"] = tune.burst_seconds(point["series"], reference)

    @property
    def finished(self) -> bool:
        return self.result is not None


# ---------------------------------------------------------------------------------------------
# the page


def tune_sections(path: Path, chart_prefix: str = "tune") -> list[Section]:
    """The parts of the page for the tuning results directory ``path`` (chart ids start with
    ``chart_prefix``: give each directory its own when several share a page)."""
    return _sections(_Run(Path(path)), chart_prefix)


def _sections(run: _Run, prefix: str) -> list[Section]:
    sections = [_top(run)]
    if run.measure is not None:
        sections.append(_sizes_section(run, prefix))
    if run.memory is not None:
        sections.append(_memory_section(run, prefix))
    if run.sweep:
        sections.append(_children_section(run, prefix))
    if run.mrpc:
        sections.append(_mrpc_section(run, prefix))
    sections.append(_spare_section(run, prefix))
    return sections


def _run_line(run: _Run) -> str:
    options, machine = run.options, run.manifest.get("machine") or {}
    parts = [f"results in {run.path}"]
    if machine:
        parts.append(f"measured on {machine.get('hostname', '?')} ({machine.get('cpus', '?')} CPUs)")
    if run.manifest.get("started_at"):
        parts.append(f"started {run.manifest['started_at']}")
    if options:
        ram = options.get("ram")
        asked = [f"RAM budget {'from MemAvailable' if ram is None else mib(ram) + ' MiB'}",
                 f"path {options.get('path', '/')}"]
        if options.get("clients") is not None:
            asked.append(f"{options['clients']} clients")
        if options.get("p99_s") is not None:
            asked.append(f"p99 target {float(options['p99_s']) * 1000:g} ms")
        if options.get("quick"):
            asked.append(f"--quick ({options.get('point_s')} s points)")
        parts.append("; ".join(asked))
    return "; ".join(parts)


def _top(run: _Run) -> Section:
    if not run.finished:
        return _interrupted(run)
    result = run.result or {}
    params = result["params"]
    section = Section(f"Recommendation: {run.described}")
    section.add(paragraph(_run_line(run)))
    if run.target is not None:
        section.add(paragraph(f"target: {_target_text(run)}"))
    if result.get("workload"):
        section.add(paragraph(f"traffic: {result['workload']}"))
    traffic = [str(line) for line in run.options.get("traffic") or []]
    if traffic:
        section.add(bullets(traffic))
    if result.get("cpus"):
        section.add(paragraph(f"CPUs: {result['cpus']}"))
    fixed_pool = not run.spare
    rows: list[list[object]] = []
    for key in PARAMS:
        name = run.names.get(key, "-")
        value = params.get(key)
        if key == "max_requests":
            shown = "0 (unlimited)" if not value else str(value)
        elif value is None:
            shown = f"- ({run.kind} keeps a fixed pool)" if fixed_pool else "-"
        else:
            shown = str(value)
        rows.append([_GENERIC[key], name, shown])
    if params.get("preload") is not None:
        rows.append([_GENERIC["preload"], run.names.get("preload", "-"), "yes" if params["preload"] else "no"])
    section.add('<div class="callout">' + table(["parameter", f"{run.kind} name", "recommended"], rows) + "</div>")
    section.add(f"<h3>Configuration ({esc(run.kind)})</h3>")
    section.add(pre(str(result["config"])))
    reasons = [*run.children["reasons"], *run.max_requests["reasons"]] if run.children and run.max_requests else []
    if len(run.spare) >= 2 and "burst_s" in run.spare[0]:
        before, after = run.spare[0], run.spare[-1]
        reasons.append(f"spare servers: from idle to {after['connections']} clients, latency stayed high for "
                       f"{before['burst_s']} s with the defaults (StartServers {before['start_servers']}) and "
                       f"{after['burst_s']} s with StartServers {after['start_servers']}, MinSpareServers "
                       f"{after['min_spare']}, MaxSpareServers {after['max_spare']} (high: p99 above "
                       f"{tune.BURST_FACTOR:g} x {float(after['reference_p99_ms']):,.1f} ms, the steady p99 with every "
                       "child ready)")
    if reasons:
        section.add("<h3>Why</h3>")
        section.add(bullets(reasons))
    if not run.old:
        section.add("<h3>Confirmation</h3>")
        section.add(_confirmation(run.confirmation))
    if result.get("advice"):
        section.add("<h3>Advice</h3>")
        section.add(bullets([str(a) for a in result["advice"]], css="advice"))
    return section


def _target_text(run: _Run) -> str:
    """The target as the text report states it."""
    target, options = run.target or {}, run.options
    parts = []
    if target.get("clients") is not None:
        parts.append(f"{target['clients']} concurrent clients (--clients)")
    if target.get("peak_rate") is not None:
        parts.append(f"{float(target['peak_rate']):,.6g} req/s at the peak ({target.get('source', '--peak-rate')})")
    if target.get("p99_s") is not None:
        parts.append(f"p99 at most {float(target['p99_s']) * 1000:,.1f} ms")
    if not parts:
        parts.append("none given (no --clients, --peak-rate or access log): the pool is sized by memory")
    if target.get("proxy") is False:
        parts.append("no buffering proxy in front (--no-proxy)")
    if options.get("trials") is not None:
        parts.append(f"{options['trials']} interleaved trials per point")
    return "; ".join(parts)


def _confirmation(confirmation: Mapping[str, Any] | None) -> str:
    """The confirmation's checks, each met or NOT MET; "not run" without one."""
    if confirmation is None:
        return paragraph("not run (--no-confirm): the recommended configuration was not checked at the target load")
    if confirmation.get("rate"):
        load = (f"{float(confirmation['rate']):,.0f} req/s (open loop; {float(confirmation['rps']):,.0f} "
                "answered)")
    else:
        load = f"{confirmation['connections']} clients ({float(confirmation['rps']):,.0f} req/s)"
    attempted = int(confirmation["complete"]) + int(confirmation["failed"])
    verdict = "every check met" if confirmation.get("ok") else "NOT MET"
    rows = [[check["name"], "met" if check["ok"] else "NOT MET", check["text"]]
            for check in confirmation.get("checks") or []]
    return (paragraph(f"The recommended configuration at {load}, {attempted:,} requests, every child warm: "
                      f"{verdict}") + table(["check", "", "measured against the limit"], rows))


def _interrupted(run: _Run) -> Section:
    section = Section(f"Tuning run without a recommendation: {run.described}")
    section.add(paragraph(_run_line(run)))
    section.add(f'<div class="callout"><p>{esc(run.store.result_path.name)} is missing: this run was interrupted '
                f"(or is still running) before it made its recommendation. Below are the {len(run.points)} points "
                f"measured so far; <code>pounder tune --resume {esc(run.path)}</code> measures only the missing ones "
                "and recommends.</p></div>")
    if run.points:
        rows = [[p.get("key", "?"), p.get("step", "?"), p.get("finished_at", "-"),
                 tune.describe_point(str(p.get("step")), p.get("summary") or {})] for p in run.points]
        section.add(table(["point", "step", "finished", "result"], rows))
    else:
        section.add(paragraph("No point was measured."))
    if run.memory is not None:
        section.add(paragraph("The memory bound below is computed from the size measurement and the run's options, "
                              "as the run would have; nothing was decided yet."))
    return section


# ---------------------------------------------------------------------------------------------
# step 1: sizes and the leak


def _leak_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares (slope, intercept) of ys on xs."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    var = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    return slope, mean_y - slope * mean_x


def _sizes_section(run: _Run, prefix: str) -> Section:
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
    verdict = tune.growth(measure)
    choice = run.max_requests or {}
    caption = (f"Private memory (USS) of a child against the requests it served: {children} children after the "
               f"warm-up, half-way and at the end of {total:,} requests. Fitted on the medians: "
               f"{slope / KIB:,.1f} KiB/request ({'a leak' if verdict.leak else 'no leak'}; pounder measured "
               f"{verdict.first:,.0f} then {verdict.second:,.0f} B/request).")
    if choice.get("memory_limit"):
        caption += (f" At that rate a child reaches its share of the budget ({mib(choice['child_limit_bytes'])} MiB) "
                    f"after {int(choice['memory_limit']):,} requests.")
    with chart(f"{prefix}-leak", caption, section.body) as ax:
        ax.plot(xs, [v / MIB for v in median], "o", color=_BLUE, label="median child USS")
        ax.plot(xs, [v / MIB for v in biggest], "s", color=_ORANGE, label="largest child USS")
        ends = [xs[0], xs[-1]]
        ax.plot(ends, [(intercept + slope * x) / MIB for x in ends], "-", color=_BLUE, alpha=0.6,
                label=f"fit: {slope / KIB:,.1f} KiB per request")
        for x, y, text in zip(xs, biggest, ("warm", "mid", "end"), strict=True):
            ax.annotate(text, (x, y / MIB), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
        ax.set_ylim(bottom=0, top=max(biggest + median) / MIB * 1.2 or 1)
        label_axes(ax, "requests served per child", "MiB", "A child's private memory as it serves requests")
        ax.legend(loc="lower right", fontsize=8)
    section.add(f"<h3>Sizes ({children} children; MiB)</h3>")
    section.add(table(["", "USS med", "USS max", "shared med", "RSS max", "footprint (PSS)"], rows))
    parent = measure["parent"]
    section.add(paragraph(f"parent: RSS {mib(parent['rss'])}, USS {mib(parent['uss'])} MiB; growth per request "
                          f"{float(measure['growth_first']):,.0f} B then {float(measure['growth_second']):,.0f} B"))
    other = run.other_measure
    if other is not None:
        section.add(paragraph(f"with preload {'on' if other['preload'] else 'off'}: child USS max "
                              f"{mib(other['end']['max_uss'])} MiB, shared {mib(other['end']['median_shared'])} MiB"))
    return section


# ---------------------------------------------------------------------------------------------
# step 2: the memory bound


def _twin(ax: Axes) -> Any:
    other = ax.twinx()
    other.spines["right"].set_visible(True)
    other.grid(False)
    return other


def _memory_section(run: _Run, prefix: str) -> Section:
    memory = run.memory or {}
    ram, shared, uss, rss = (float(memory[k]) for k in ("ram", "shared", "child_uss", "child_rss"))
    bound, no_sharing = int(memory["max_clients"]), int(memory["max_clients_no_sharing"])
    section = Section("2. Memory bound (MaxClients)")
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
    swept = max([chosen or 1, *(int(p["children"]) for p in run.sweep)])
    top = max([bound, no_sharing, swept]) * 1.15 + 1
    # far more children fit than the sweep ran: a log scale keeps the sweep readable
    log_x = bound > 6 * swept
    xs = [top ** (i / 100) for i in range(101)] if log_x else [0.0, top]
    caption = (f"Memory needed for n children (parent {mib(parent)} MiB + shared {mib(shared)} MiB once + n x "
               f"{mib(uss)} MiB child USS) against "
               f"the RAM budget of {mib(ram)} MiB: at most {bound} children.")
    if knee is not None:
        last = max((int(p["children"]) for p in run.sweep), default=0)
        caption += (f" Throughput (right axis) was still growing at {knee} children, the most the sweep ran"
                    if knee >= last else f" Throughput (right axis) stops growing at {knee} children")
        caption += f"; recommended {chosen}." if chosen is not None else "."
    if log_x:
        caption += " Children on a log scale: the memory line curves upward."
    with chart(f"{prefix}-memory", caption, section.body, height=3.8) as ax:
        ax.plot(xs, [(parent + shared + x * uss) / MIB for x in xs], "-", color=_BLUE,
                label="parent + shared + n x child USS")
        ax.plot(xs, [x * rss / MIB for x in xs], ":", color=_GREY,
                label=f"n x child RSS (summing RSS): {no_sharing}")
        ax.axhline(ram / MIB, color=_RED, linestyle="--", label=f"RAM budget {mib(ram)} MiB")
        ax.axvline(bound, color=_BLUE, linestyle="--", alpha=0.7)
        low = not log_x and bound < top * 0.3
        ax.annotate(f"memory bound: {bound}", (bound, ram / MIB), textcoords="offset points",
                    xytext=(4 if low else -4, 5), ha="left" if low else "right", fontsize=8, color=_BLUE)
        if log_x:
            ax.set_xscale("log", base=2)
            ax.get_xaxis().set_major_formatter("{x:g}")
            ax.set_xlim(0.8, top)
        else:
            ax.set_xlim(0, top)
        ax.set_ylim(0, ram / MIB * 1.3)
        label_axes(ax, "children (n)", "MiB", "MaxClients: the memory line against the CPU knee")
        handles, labels = ax.get_legend_handles_labels()
        if run.sweep:
            right = _twin(ax)
            counts = [int(p["children"]) for p in run.sweep]
            most = max(float(p["rps"]) for p in run.sweep)
            right.plot(counts, [float(p["rps"]) for p in run.sweep], "o-", color=_GREEN, label="requests/s (sweep)")
            if knee is not None:
                right.axvline(knee, color=_GREEN, linestyle=":", alpha=0.8)
                text = (f"still growing at {knee}, the last count swept" if knee >= max(counts)
                        else f"throughput stops growing: {knee}")
                left = not log_x and knee > top / 2
                right.annotate(text, (knee, 0), textcoords="offset points", xytext=(-4 if left else 4, 6),
                               ha="right" if left else "left", fontsize=8, color=_GREEN)
            right.set_ylim(bottom=0, top=most * 1.3 or 1)
            right.set_ylabel("requests/s")
            more_handles, more_labels = right.get_legend_handles_labels()
            handles, labels = handles + more_handles, labels + more_labels
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8)
    return section


# ---------------------------------------------------------------------------------------------
# step 3: the children sweep


def _children_section(run: _Run, prefix: str) -> Section:
    sweep = sorted(run.sweep, key=lambda p: int(p["children"]))
    section = Section(f"3. Children ({run.names.get('max_clients', '-')})")
    counts = [int(p["children"]) for p in sweep]
    chosen = int(run.children["chosen"]) if run.children else None
    tolerance = run.options.get("tolerance")
    caption = "Requests/s and p99 latency against the number of children (closed loop"
    caption += ", keep-alive off)" if run.old else "; medians of interleaved trials, requests/s with its 95% interval)"
    caption += f"; recommended: {chosen} children." if chosen is not None else "; nothing decided yet."
    with chart(f"{prefix}-children", caption, section.body, rows=2, height=2.4) as (top, bottom):
        errors = _errors(sweep)
        if errors is None:
            top.plot(counts, [float(p["rps"]) for p in sweep], "o-", color=_BLUE)
        else:
            top.errorbar(counts, [float(p["rps"]) for p in sweep], yerr=errors, fmt="o-", color=_BLUE, capsize=3,
                         label="median, 95% interval")
        bottom.plot(counts, [float(p["p99_ms"]) for p in sweep], "o-", color=_ORANGE, label="p99")
        bottom.plot(counts, [float(p["p50_ms"]) for p in sweep], ".:", color=_GREY, label="p50")
        best = max(float(p.get("rps_high") or p["rps"]) for p in sweep)
        if tolerance is not None:
            top.axhline(best * (1 - float(tolerance)), color=_GREY, linestyle=":",
                        label=f"within {float(tolerance):.0%} of the best")
        for ax in (top, bottom):
            if chosen is not None:
                ax.axvline(chosen, color=_GREEN, linestyle="--", label=f"recommended: {chosen}")
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
        rows = [[p["children"], p["connections"], f"{int(p['complete']) + int(p['failed']):,}",
                 f"{float(p['rps']):,.0f}", _ms(p["p50_ms"]), _ms(p["p95_ms"]), _ms(p["p99_ms"]), _cpu(p),
                 f"{float(p['server_cores']):.2f}", mib(p.get("max_child_uss")), p["failed"]] for p in run.sweep]
        section.add(table(["MC", "NC", "NR", "RPS", "p50", "p95", "p99", "srv CPU us/req", "srv cores",
                           "max USS MiB", "failed"], rows))
        section.add(paragraph("MC = children, NC = concurrent clients, NR = requests; latency in ms."))
        return section
    queued = any(p.get("queued") is not None for p in run.sweep)  # results of earlier versions lack it
    rows = [[p["children"], p["connections"], tune.trials_text(p), f"{int(p['complete']) + int(p['failed']):,}",
             f"{float(p['rps']):,.0f}", tune.interval_text(p), _ms(p["p50_ms"]), _ms(p["p99_ms"]),
             *([tune.queued_text(p)] if queued else []), _cpu(p), _cores(p.get("server_cores")),
             _cores(p.get("client_cores")), mib(p.get("max_child_uss")), p["failed"], tune.flag_text(p)]
            for p in run.sweep]
    section.add(table(["MC", "NC", "trials", "NR", "RPS", "95% CI", "p50", "p99", *(["queued"] if queued else []),
                       "srv CPU us/req", "srv cores", "load cores", "max USS MiB", "failed", ""], rows))
    queued_legend = ("queued: the share of the accept queue's samples with a connection waiting for a free child "
                     "(every child busy); " if queued else "")
    section.add(paragraph("MC = children, NC = concurrent clients, trials = counted/run, NR = requests (every "
                          "trial), RPS = median requests/s with its 95% interval, latency medians in ms; "
                          f"{queued_legend}load cores: the load generator's CPU; wide: the interval reaches further "
                          f"than {tune.WIDE:.0%} of the median."))
    return section


# ---------------------------------------------------------------------------------------------
# step 4: MaxRequestsPerChild


_Bar = tuple[str, float, float | None, float | None, bool, bool]
"""A bar of the MaxRequestsPerChild chart: label, requests/s, measured loss, modelled loss,
recommended, drawn from the model (the recommended value was not swept)."""


def _mrpc_section(run: _Run, prefix: str) -> Section:
    if run.old:
        return _old_mrpc_section(run, prefix)
    points = run.mrpc
    name = run.names.get("max_requests", "-")
    section = Section(f"4. {name} (MaxRequestsPerChild) with {points[0]['children']} children")
    choice = run.max_requests or {}
    recommended = int(choice["value"]) if "value" in choice else None
    unit = "requests" if run.kind in ("gunicorn", "command") else "connections"
    caption = (f"Requests/s per {name} value ({unit} a child serves before it is replaced): the median of "
               "interleaved trials with its 95% interval, the unlimited baseline measured in every round; above "
               "each bar the change against unlimited")
    caption += f"; recommended: {_mrpc_label(recommended)}." if recommended is not None else "."
    with chart(f"{prefix}-max-requests", caption, section.body) as ax:
        positions = list(range(len(points)))
        values = [int(p["max_requests"]) for p in points]
        colors = [_GREEN if v == recommended else _BLUE for v in values]
        ax.bar(positions, [float(p["rps"]) for p in points], color=colors, alpha=0.9, yerr=_errors(points),
               capsize=4, ecolor="black")
        for x, point in zip(positions, points, strict=True):
            text = ("reference" if int(point["max_requests"]) == 0
                    else tune.vs_unlimited_text(point).replace(" (", "\n("))
            ax.annotate(text, (x, float(point.get("rps_high") or point["rps"])), textcoords="offset points",
                        xytext=(0, 4), ha="center", fontsize=7)
        ax.set_xticks(positions, [_mrpc_label(v) + ("\n(recommended)" if v == recommended else "") for v in values])
        ax.set_ylim(0, max(float(p.get("rps_high") or p["rps"]) for p in points) * 1.3 or 1)
        label_axes(ax, name, "requests/s", "Throughput lost to respawning")
    rows = [[p["max_requests"] or "unlimited", p["connections"], tune.trials_text(p),
             f"{int(p['complete']) + int(p['failed']):,}", f"{float(p['rps']):,.0f}", tune.interval_text(p),
             tune.vs_unlimited_text(p), _ms(p["p99_ms"]), p["respawns"], mib(p.get("max_child_uss")), p["failed"],
             tune.flag_text(p)] for p in points]
    section.add(table(["MRPC", "NC", "trials", "NR", "RPS", "95% CI", "RPS vs unlimited (95% CI)", "p99", "NR/MRPC",
                       "max USS MiB", "failed", ""], rows))
    if recommended is not None and recommended not in values:
        section.add(paragraph(f"The recommended {recommended:,} was not swept (the reasons above say how it was "
                              "chosen)."))
    return section


def _old_mrpc_section(run: _Run, prefix: str) -> Section:
    """The MaxRequestsPerChild part of an older run (single points, measured and modelled loss)."""
    points = run.mrpc
    name = run.names.get("max_requests", "-")
    section = Section(f"4. {name} (MaxRequestsPerChild) with {points[0]['children']} children")
    base = next((p for p in points if int(p["max_requests"]) == 0), None)
    base_rps = float(base["rps"]) if base is not None else None
    choice = run.max_requests or {}
    recommended = int(choice["value"]) if "value" in choice else None
    bars: list[_Bar] = []
    for p in points:
        value = int(p["max_requests"])
        model = p.get("loss_model")
        bars.append((_mrpc_label(value), float(p["rps"]), p.get("loss_measured"),
                     None if model is None else float(model), value == recommended, False))
    swept = {int(p["max_requests"]) for p in points}
    if recommended is not None and recommended not in swept and base_rps is not None:
        loss = float(choice.get("loss", 0.0))
        bar: _Bar = (_mrpc_label(recommended), base_rps * (1 - loss), None, loss, True, True)
        after = [i for i, p in enumerate(points) if int(p["max_requests"]) != 0
                 and int(p["max_requests"]) > recommended]  # swept values are listed from large to small
        bars.insert(after[-1] + 1 if after else (1 if base is not None else 0), bar)
    caption = f"Requests/s per {name} value ({'requests' if run.kind in ('gunicorn', 'command') else 'connections'} " \
              "a child serves before it is replaced)"
    if base_rps is not None:
        caption += ("; above each bar the loss against unlimited, measured (and modelled: one respawn costs "
                    f"{float(choice.get('respawn_cost_requests', tune.respawn_cost(points))):,.1f} requests' worth)")
    if recommended is not None:
        caption += f"; recommended: {_mrpc_label(recommended)}"
        caption += " (not swept: its bar is the model's)." if recommended not in swept else "."
    with chart(f"{prefix}-max-requests", caption, section.body) as ax:
        positions = list(range(len(bars)))
        colors = [_GREEN if rec else _BLUE for _, _, _, _, rec, _ in bars]
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
                    text = f"model {_pct(-(bar[3] or 0.0))}"
                else:
                    text = _pct(None if bar[2] is None else -bar[2])
                    text += "" if bar[3] is None else f"\n(model {_pct(-bar[3])})"
                y = bar[1] if math.isnan(model_rps) else max(bar[1], model_rps)
                ax.annotate(text, (x, y), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=7)
            ax.legend(loc="lower left", fontsize=8)
        ax.set_xticks(positions, [b[0] + ("\n(recommended)" if b[4] else "") for b in bars])
        ax.set_ylim(0, max(b[1] for b in bars) * 1.3 or 1)
        label_axes(ax, name, "requests/s", "Throughput lost to respawning")
    rows = [[_mrpc_label(int(p["max_requests"])), p["connections"], f"{int(p['complete']) + int(p['failed']):,}",
             f"{float(p['rps']):,.0f}", _ms(p["p99_ms"]), p["respawns"],
             _pct(-p["loss_measured"] if p.get("loss_measured") is not None else None),
             _pct(-float(p.get("loss_model", 0.0))), mib(p.get("max_child_uss")), p["failed"]] for p in points]
    section.add(table(["MRPC", "NC", "NR", "RPS", "p99", "NR/MRPC", "RPS vs unl.", "model", "max USS MiB", "failed"],
                      rows))
    return section


# ---------------------------------------------------------------------------------------------
# step 5: spare servers


def _spare_section(run: _Run, prefix: str) -> Section:
    section = Section("5. Spare servers")
    if not run.spare:
        if run.finished or run.kind not in _ON_DEMAND:
            section.add(paragraph(f"{run.kind} starts all its workers at once (a fixed pool): there are no spare "
                                  "servers to tune, so this report has no burst chart."))
        else:
            section.add(paragraph("The spare-server step was not measured yet."))
        return section
    reference = float(run.spare[0].get("reference_p99_ms") or 0.0)
    caption = ("p99 latency of each second after a step from idle to "
               f"{run.spare[-1]['connections']} clients, with each run's spare settings")
    if reference:
        caption += (f"; reference: the best steady p99, {reference:,.1f} ms; a second above "
                    f"{tune.BURST_FACTOR:g} x the reference counts as slow")
    caption += ". A second that completed no request is drawn at the bottom as x."
    with chart(f"{prefix}-spare", caption, section.body, height=3.8) as ax:
        highest = 0.0
        for point, color in zip(run.spare, (_ORANGE, _GREEN, _BLUE), strict=False):
            series = point["series"]
            label = (f"{point.get('name', '?')}: StartServers {point['start_servers']}, MinSpare "
                     f"{point['min_spare']}, MaxSpare {point['max_spare']}")
            seconds = [int(s["second"]) for s in series]
            values = [int(s["p99_us"]) / 1000 if int(s["complete"]) else math.nan for s in series]
            highest = max([highest, *(v for v in values if not math.isnan(v))])
            ax.plot(seconds, values, "o-", color=color, label=label)
            empty = [s for s, v in zip(seconds, values, strict=True) if math.isnan(v)]
            if empty:
                ax.plot(empty, [0] * len(empty), "x", color=color, markersize=8, clip_on=False)
        if reference:
            ax.axhline(reference, color=_GREY, linestyle="--", label=f"reference {reference:,.1f} ms")
            ax.axhline(reference * tune.BURST_FACTOR, color=_RED, linestyle=":",
                       label=f"slow: > {tune.BURST_FACTOR:g} x")
            highest = max(highest, reference * tune.BURST_FACTOR)
        ax.set_ylim(0, highest * 1.15 or 1)
        ax.get_xaxis().get_major_locator().set_params(integer=True)
        label_axes(ax, "second of the burst", "p99 (ms)", "From idle to full load")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8)
    rows = [[p.get("name", "?"), p["start_servers"], p["min_spare"], p["max_spare"], p["idle_children"],
             p["connections"], f"{float(p['rps']):,.0f}", _ms(p.get("first_p99_ms")), _ms(p["p99_ms"]),
             _ms(p.get("steady_p99_ms")), p.get("burst_s", "-")] for p in run.spare]
    section.add(table(["", "Start", "MinSpare", "MaxSpare", "idle children", "NC", "RPS", "p99 1st s", "p99",
                       "steady p99", "slow s"], rows))
    if run.finished and run.recomputed:
        section.add(paragraph("These results predate the stored reference latency: the reference and the slow "
                              "seconds are computed here as the current pounder computes them, and may differ from "
                              "recommendation.txt."))
    return section
