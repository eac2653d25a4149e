"""Report parts for a tuning results directory (``pounder tune --results DIR``).

On top the recommendation (the pool parameters in the server's own names, the configuration
snippet, Why and the advice); then one part per step, each with its chart and the table the text
report prints (:mod:`pounder.tune._render`; the steps' parts are in :mod:`._tune_steps` and
:mod:`._tune_pools`):

* ``tune-children``: requests/s (the median of the trials, with its 95 % interval) and p99
  against the number of children (the sweep), the recommended count marked;
* ``tune-leak``: a child's private memory (USS) against the requests it served, with the fitted
  growth line;
* ``tune-life``: (``--life``) the median child's shared and private memory against the requests it
  served, from its start, with the fits the run stated;
* ``tune-memory``: the MaxClients formula, shared + n x child USS against the RAM budget, next to
  the sweep's requests/s (where throughput stops growing);
* ``tune-pools``: requests/s and p99 (medians and intervals) of each candidate pool at the same
  offered load, the chosen one marked, as the run chose it; then, for the servers whose workers run
  threads, the workers x threads shapes compared at that load (the table the text prints, with
  each shape's memory after the load, the chosen and the best marked, and why);
* ``tune-max-requests``: requests/s per MaxRequestsPerChild value (median and interval), with
  its change against unlimited;
* ``tune-spare``: (servers that spawn children with the load) per-second p99 after a step from
  idle to full load, with the server's default spare settings and with the recommended ones.

Why holds the deciding facts the run stored (``why``, one line per parameter) with the long
reasons collapsed under Details; results of earlier versions, without ``why``, show the reasons
themselves. What the run decided (the pool chosen at the offered load, the best one, the spare
setting, the deciding facts) is drawn as stored, never decided again here.
The recommendation is followed by the confirmation's checks. A run without
``recommendation.json`` (interrupted, or still running) is reported from its ``summary.json``:
the figures the run derived from its points so far, as it stored them after every point, with a
note. Finished results of an older pounder (``pounder/tune/1``: one trial per point) are shown
with the figures they hold; an unfinished run of an older pounder (no ``summary.json``) is
refused with what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pounder._errors import PounderError
from pounder._figures import BURST_FACTOR
from pounder._pod_line import pod_line
from pounder._records import decode_json
from pounder._tune_point import MalformedTuneError, TunePoint
from pounder._tune_run import (
    Confirmation,
    StoredPod,
    StoredPools,
    StoredShapes,
    Target,
    TuneRun,
    target_text,
)
from pounder._tune_summary import PointLine, TuneSummary
from pounder._units import mib
from pounder.pool import (
    ADAPTERS,
    OLD_TUNE_SCHEMAS,
    RESULT_SCHEMA,
    SUMMARY_SCHEMA,
    TUNE_SCHEMA,
    ResultsDir,
    adapter_from_dict,
    own_name,
)
from pounder.profile import load_profile
from pounder.report._html import ReportError, Section, bullets, check_numbers, details, esc, paragraph, pre, table
from pounder.report._profile import profile_sections
from pounder.report._tune_life import life_section
from pounder.report._tune_pools import mrpc_section, pools_section, shapes_section, spare_section
from pounder.report._tune_steps import children_section, memory_section, sizes_section

PARAMS = ("max_clients", "max_requests", "start_servers", "min_spare", "max_spare")
_GENERIC = {"max_clients": "children (MaxClients)", "max_requests": "requests per child (MaxRequestsPerChild)",
            "start_servers": "children at start (StartServers)", "min_spare": "idle children, at least (MinSpare)",
            "max_spare": "idle children, at most (MaxSpare)", "preload": "preload the application in the parent",
            "threads": "threads of each child"}
_NAMES = {kind: cls.names for kind, cls in ADAPTERS.items()}
_OLD_RESULTS = ("pounder/tune-result/1",)
_REQUIRED = ("tool_version", "started_at", "adapter", "options")
"""The fields of ``tune.json`` (``pounder/tune/2``) the page rests on; its schema requires them."""


# ---------------------------------------------------------------------------------------------
# reading the directory


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = decode_json(path.read_text())
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


class TuneResults:
    """What the report shows, from ``recommendation.json`` when the run finished (read once as a
    :class:`pounder._tune_run.TuneRun`, ``result``), else from the ``summary.json`` the run keeps of
    its points so far: read and drawn, never decided again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = ResultsDir(path)
        self.manifest = _read(self.store.manifest_path) or {}
        check_numbers(self.manifest, "tune", self.store.manifest_path)
        self.old = self.manifest.get("schema") in OLD_TUNE_SCHEMAS
        if self.manifest.get("schema") != TUNE_SCHEMA and not self.old:  # an empty one too: it tells nothing
            raise ReportError(f"{self.store.manifest_path} is not a {TUNE_SCHEMA} document"
                              + (" (it holds no field)" if not self.manifest else ""))
        missing = [] if self.old else [key for key in _REQUIRED if key not in self.manifest]
        if missing:  # what `pounder tune` writes first, before any point: the page's every fact rests on it
            raise ReportError(f"{self.store.manifest_path}: missing '{missing[0]}'")
        try:
            self.points = self.store.points()
        except PounderError as error:
            raise ReportError(str(error)) from None
        for point in self.points:
            check_numbers(point, "tune-point", self.store.path / "points" / f"{point.get('key')}.json")
        self.by_key = {str(p.get("key")): p for p in self.points}
        document = _read(self.store.result_path)
        schema = None if document is None else document.get("schema")
        if document is not None and schema not in (RESULT_SCHEMA, *_OLD_RESULTS):
            raise ReportError(f"{self.store.result_path} is not a {RESULT_SCHEMA} document")
        if document is not None:
            self.old = schema in _OLD_RESULTS
            check_numbers(document, "tune-result", self.store.result_path)
        self.options: Mapping[str, Any] = self.manifest.get("options") or {}
        self.result = None if document is None else self._recommendation(document)
        adapter = self.manifest.get("adapter") or {}
        server = adapter if self.result is None else self.result.server or adapter
        self.kind = str(server.get("kind", "the server"))
        names = None if self.result is None else self.result.names
        self.names: Mapping[str, str] = names or _NAMES.get(self.kind) or {k: "-" for k in _GENERIC}
        described = None if self.result is None else self.result.described
        self.described = str(described or _describe(adapter) or self.kind)
        if self.result is not None:
            self._from_result(self.result)
        else:
            self._from_summary()

    def _recommendation(self, document: Mapping[str, Any]) -> TuneRun:
        """``recommendation.json`` as a typed record, its points' figures read once for every table
        and chart of the page."""
        try:
            return TuneRun.from_dict(document)
        except MalformedTuneError as error:
            raise ReportError(f"{self.store.result_path} does not hold a complete pounder tune result: "
                              f"{error}") from None

    def _steps(self, stored: TuneRun | TuneSummary) -> None:
        """The steps' figures a finished run's recommendation and an unfinished one's summary both hold."""
        self.measure, self.other_measure, self.memory = stored.measure, stored.other_measure, stored.memory
        self.sweep: list[Mapping[str, Any]] = [point.stored for point in stored.sweep]
        self.mrpc: list[Mapping[str, Any]] = [point.stored for point in stored.mrpc]
        self.sweep_points, self.mrpc_points = list(stored.sweep), list(stored.mrpc)
        self.pools: StoredPools | None = stored.pools
        self.pool_points = [] if stored.pools is None else sorted(stored.pools.points, key=lambda p: p.children)
        self.leak = stored.leak

    def _from_result(self, result: TuneRun) -> None:
        self._steps(result)
        self.children, self.max_requests = result.children, result.max_requests
        self.shapes: StoredShapes | None = result.shapes
        self.shape_points: list[TunePoint] = []
        self.spare: list[dict[str, Any]] = [self._with_series(dict(p)) for p in result.spare]
        self.spare_points, self.spare_trials = list(result.spare_points), 0
        self.why: tuple[str, ...] | None = result.why
        self.confirmation, self.target, self.offered = result.confirmation, result.target, result.offered
        self.point_lines: list[PointLine] = []

    def _from_summary(self) -> None:
        """An unfinished run: the figures it derived from its points so far, as it stored them."""
        summary = _read(self.store.summary_path)
        if summary is None and self.points:
            raise ReportError(f"{self.path} is a run that did not finish and holds no summary.json (an earlier "
                              f"pounder wrote it): finish it with pounder tune --resume {self.path}, then report it")
        summary = summary or {}
        if summary and summary.get("schema") != SUMMARY_SCHEMA:
            raise ReportError(f"{self.store.summary_path} is not a {SUMMARY_SCHEMA} document")
        check_numbers(summary, "tune-summary", self.store.summary_path)
        try:
            stored = TuneSummary.from_dict(summary)
        except MalformedTuneError as error:
            raise ReportError(f"{self.store.summary_path} does not hold a complete pounder tune result: "
                              f"{error}") from None
        self._steps(stored)
        self.children, self.max_requests = None, None
        self.shapes = None  # compared and chosen with the recommendation
        self.shape_points = list(stored.shapes)  # measured so far
        self.spare = []  # each setting's figures come with the recommendation
        self.spare_points, self.spare_trials = [], stored.spare_trials
        self.why, self.confirmation, self.target, self.offered = None, None, None, None
        self.point_lines = list(stored.points)

    def _with_series(self, summary: dict[str, Any]) -> dict[str, Any]:
        """The spare summary with its ``series`` (older results kept it only in the point's bench)."""
        if "series" not in summary:
            point = self.by_key.get(f"spare-{summary.get('name')}") or {}
            bench = point.get("bench")
            series = bench.get("series") if isinstance(bench, dict) else None
            summary["series"] = [{"second": s["second"], "complete": s["complete"], "p99_us": s["p99_us"]}
                                 for s in series or []]
        return summary

    @property
    def unreferenced(self) -> bool:
        """Spare bursts of results that predate the stored reference latency (drawn without it)."""
        return bool(self.spare) and not all("reference_p99_ms" in p for p in self.spare)

    @property
    def threads_given(self) -> bool:
        """Whether the run kept the threads of each worker as given (Puma's --threads, stored in its
        adapter) instead of comparing workers x threads shapes (options.sweep_threads)."""
        server = (None if self.result is None else self.result.server) or self.manifest.get("adapter") or {}
        kind = ADAPTERS.get(self.kind)
        return bool(kind is not None and kind.threaded and self.options.get("sweep_threads") and "threads" in server)

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def at_offered_load(self) -> bool:
        """Whether the run compares pools at the offered load (the sections are numbered as its
        text: 4 the pools, 5 MaxRequestsPerChild, 6 spare servers)."""
        return (self.why is not None or self.pools is not None or self.spare_trials > 0
                or any(line.step == "threads" for line in self.point_lines))  # shapes: compared there too


# ---------------------------------------------------------------------------------------------
# the page


def tune_sections(path: Path, chart_prefix: str = "tune") -> list[Section]:
    """The parts of the page for the tuning results directory ``path`` (chart ids start with
    ``chart_prefix``: give each directory its own when several share a page)."""
    return _sections(TuneResults(Path(path)), chart_prefix)


def _sections(run: TuneResults, prefix: str) -> list[Section]:
    sections = [_top(run)]
    if run.measure is not None:
        sections.append(sizes_section(run, prefix))
    life = None if run.result is None else run.result.stored.get("life")
    if life:  # --life: shared and private memory over a child's life
        sections.append(life_section(life, (run.max_requests or {}).get("unsharing"), prefix))
    if run.memory is not None:
        sections.append(memory_section(run, prefix))
    if run.sweep:
        sections.append(children_section(run, prefix))
    if run.at_offered_load and (run.pools is not None or run.finished):
        sections.append(pools_section(run, prefix))
    shapes = shapes_section(run)
    if shapes is not None:
        sections.append(shapes)
    if run.mrpc:
        sections.append(mrpc_section(run, prefix))
    sections.append(spare_section(run, prefix))
    profiled = run.path / "profile.json"  # tune --profile: the recommended configuration's profile
    if profiled.is_file():
        sections += profile_sections(load_profile(profiled), str(profiled))
    return sections


def _run_line(run: TuneResults) -> str:
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


def _top(run: TuneResults) -> Section:
    if not run.finished:
        return _interrupted(run)
    result = run.result
    assert result is not None
    params = result.params
    section = Section(f"Recommendation: {run.described}")
    section.add(paragraph(_run_line(run)))
    if run.target is not None:
        section.add(paragraph(f"target: {_target_text(run)}"))
    if run.offered is not None:
        section.add(paragraph(f"offered load: {run.offered.text()}; the candidate pools, MaxRequestsPerChild "
                              "and the confirmation are measured at it"))
    if result.workload:
        section.add(paragraph(f"traffic: {result.workload}"))
    traffic = [str(line) for line in run.options.get("traffic") or []]
    if traffic:
        section.add(bullets(traffic))
    if result.cpus:
        section.add(paragraph(f"CPUs: {result.cpus}"))
    pod = pod_line(run.options, run.sweep_points)
    if pod is not None:
        section.add(paragraph(pod))
    fixed_pool = not run.spare
    rows: list[list[object]] = []
    for key in PARAMS:
        name = run.names.get(key, "-")
        value = getattr(params, key)
        if key == "max_requests":
            shown = "0 (unlimited)" if not value else str(value)
        elif value is None:
            shown = f"- ({run.kind} keeps a fixed pool)" if fixed_pool else "-"
        else:
            shown = str(value)
        rows.append([_GENERIC[key], name, shown])
    if params.threads is not None:  # workers x threads compared: the threads chosen (each server calls it threads)
        rows.append([_GENERIC["threads"], own_name(run.names, "threads"), str(params.threads)])
    if params.preload is not None:
        rows.append([_GENERIC["preload"], run.names.get("preload", "-"), "yes" if params.preload else "no"])
    section.add('<div class="callout">' + table(["parameter", f"{run.kind} name", "recommended"], rows) + "</div>")
    section.add(f"<h3>Configuration ({esc(run.kind)})</h3>")
    section.add(pre(result.config))
    for fragment in _pod(result.fleet.pod):
        section.add(fragment)
    for fragment in _why(run):
        section.add(fragment)
    if not run.old:
        section.add("<h3>Confirmation</h3>")
        section.add(_confirmation(run.confirmation))
    if result.fleet.size is not None:
        section.add("<h3>Fleet</h3>")
        section.add(paragraph(result.fleet.size))
    if result.advice:
        section.add("<h3>Advice</h3>")
        section.add(bullets(result.advice, css="advice"))
    return section


def _pod(pod: StoredPod | None) -> list[str]:
    """The container's resources as the run decided them (pounder.tune._fleet): the Kubernetes
    block, the docker options, how each figure was reached; nothing without a pod."""
    if pod is None:
        return []
    return ["<h3>Container resources</h3>", pre(pod.yaml), pre(pod.docker), bullets(pod.notes)]


def _why(run: TuneResults) -> list[str]:
    """"Why": the deciding facts the run stored, one line per parameter, then its long reasons
    collapsed under "Details" (as the text report); results without ``why`` (an older pounder)
    get the reasons themselves, with a line on the spare servers made from their burst figures."""
    reasons = [*run.children["reasons"], *run.max_requests["reasons"]] if run.children and run.max_requests else []
    if run.why is not None:
        choice = None if run.result is None else run.result.spare_choice
        reasons += [] if choice is None else choice.reasons
        out = ["<h3>Why</h3>", bullets(run.why)]
        return [*out, details("Details", bullets(reasons))] if reasons else out
    if len(run.spare) >= 2 and "burst_s" in run.spare[0]:
        before, after = run.spare[0], run.spare[-1]
        reasons.append(f"spare servers: from idle to {after['connections']} clients, latency stayed high for "
                       f"{before['burst_s']} s with the defaults (StartServers {before['start_servers']}) and "
                       f"{after['burst_s']} s with StartServers {after['start_servers']}, MinSpareServers "
                       f"{after['min_spare']}, MaxSpareServers {after['max_spare']} (high: p99 above "
                       f"{BURST_FACTOR:g} x {float(after['reference_p99_ms']):,.1f} ms, the steady p99 with every "
                       "child ready)")
    return ["<h3>Why</h3>", bullets(reasons)] if reasons else []


def _target_text(run: TuneResults) -> str:
    """The target as the text report states it."""
    return target_text(run.target or Target(), run.offered, compared=run.at_offered_load,
                       trials=run.options.get("trials"))


def _confirmation(confirmation: Confirmation | None) -> str:
    """The confirmation's checks, each met or NOT MET; "not run" without one."""
    if confirmation is None:
        return paragraph("not run (--no-confirm): the recommended configuration was not checked at the target load")
    rows = [[check.name, "met" if check.ok else "NOT MET", check.text] for check in confirmation.checks]
    out = (paragraph(f"The recommended configuration {confirmation.headline}")
           + table(["check", "", "measured against the limit"], rows))
    if confirmation.lowered_text is not None:
        out += paragraph(confirmation.lowered_text)
    return out


def _interrupted(run: TuneResults) -> Section:
    section = Section(f"Tuning run without a recommendation: {run.described}")
    section.add(paragraph(_run_line(run)))
    later = len(run.points) - len(run.point_lines)
    after = f" ({later} more stored after its summary.json was written)" if later > 0 else ""
    section.add(f'<div class="callout"><p>{esc(run.store.result_path.name)} is missing: this run was interrupted '
                f"(or is still running) before it made its recommendation. Below are the {len(run.point_lines)} "
                f"points measured so far{after}; <code>pounder tune --resume {esc(run.path)}</code> measures only "
                "the missing ones and recommends.</p></div>")
    if run.point_lines:
        rows = [line.row for line in run.point_lines]
        section.add(table(["point", "step", "finished", "result"], rows))
    else:
        section.add(paragraph("No point was measured."))
    if run.memory is not None:
        section.add(paragraph("The memory bound below is the run's, from its size measurement and options; nothing "
                              "was decided yet."))
    return section


