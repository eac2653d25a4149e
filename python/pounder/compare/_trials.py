"""Running a comparison: repeated, interleaved trials of the same load against each variant.

Order: one warm-up trial per variant (not counted), then rounds ``A B C``, ``A B C``, ... (``trials``
rounds), so that drift over time (a machine warming up, another job starting) falls on every
variant alike. Each trial is one :func:`~pounder.run_bench` of the same validated load, with the
variant's server sampled when it has a pid (for its CPU per request).

``results``: one JSON document (schema ``pounder/compare/1``) rewritten after every trial,
atomically (a temporary file in the same directory, renamed), so it always holds every trial
measured so far and the statistics over them; ``finished_at`` stays ``null`` until the run ended.

Ctrl-C stops the comparison: the trial running then is kept but not counted (marked
``interrupted``), the trials done are reported, and the result says ``interrupted``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pounder._errors import PounderError, UsageError
from pounder._version import __version__
from pounder.compare._stats import (
    CONFIDENCE,
    MIN_EFFECT,
    RESAMPLES,
    SEED,
    Estimate,
    RatioEstimate,
    Verdict,
    median_interval,
    ratio_interval,
)
from pounder.load._bench import ProgressCallback, run_bench
from pounder.load._parse import Stage
from pounder.load._result import BenchResult, HttpOptions, LoadModel
from pounder.load._spec import BenchSpec, Number, check_output_path
from pounder.procs import ServerSampler, ServerTarget, find_server

SCHEMA = "pounder/compare/1"
DEFAULT_TRIALS = 5
MIN_TRIALS = 3
MAX_TRIALS = 100
MAX_VARIANTS = 20
MAX_LABEL = 60
DEFAULT_TRIAL_S = 5.0
"""Length of a trial when neither ``requests``, ``duration`` nor ``stages`` is given."""
SAMPLE_INTERVAL_S = 0.5


@dataclass(frozen=True)
class Variant:
    """One thing to compare: a ``label`` (unique, shown in the tables), the ``url`` loaded, and
    optionally the pid of the server's parent process, sampled during each trial for its CPU."""

    label: str
    url: str
    server_pid: int | None = None


@dataclass(frozen=True)
class Trial:
    """One run of the load against one variant, reduced to the figures the comparison uses.

    ``seq`` is the run's position (1-based, warm-ups included); ``round`` 0 is the warm-up, 1..N
    the measured rounds. ``requests_per_s`` is complete / elapsed_s; ``p50_us``/``p99_us`` the
    corrected latency percentiles (µs, 0 when nothing completed); ``server_cpu_us_per_request``
    None without a server pid."""

    seq: int
    round: int
    label: str
    started_at: str
    interrupted: bool
    elapsed_s: float
    complete: int
    failed: int
    non_2xx: int
    unsent: int
    late: int
    errors: Mapping[str, int]
    requests_per_s: float
    p50_us: int
    p99_us: int
    server_cpu_us_per_request: float | None

    @property
    def counted(self) -> bool:
        """Part of the statistics: a measured round that ran to its end."""
        return self.round > 0 and not self.interrupted

    @classmethod
    def from_bench(cls, seq: int, round_: int, label: str, result: BenchResult) -> Trial:
        corrected = result.latency.corrected.percentiles
        return cls(
            seq=seq,
            round=round_,
            label=label,
            started_at=result.started_at,
            interrupted=result.interrupted,
            elapsed_s=result.elapsed_s,
            complete=result.requests.complete,
            failed=result.requests.failed,
            non_2xx=result.requests.non_2xx,
            unsent=result.requests.unsent,
            late=result.requests.late,
            errors=result.errors.nonzero(),
            requests_per_s=result.derived.requests_per_s,
            p50_us=corrected["50"],
            p99_us=corrected["99"],
            server_cpu_us_per_request=result.derived.server_cpu_us_per_request,
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "errors": dict(self.errors), "counted": self.counted}


TrialCallback = Callable[[Trial, int], None]
"""Called after every trial (warm-ups included) with the trial and the number of runs planned."""


@dataclass(frozen=True)
class CompareOptions:
    """How the comparison ran: the trials, the statistics' settings and the load of every trial."""

    trials: int
    warmup: bool
    baseline: str
    load: LoadModel
    http: HttpOptions
    min_effect: float = MIN_EFFECT
    confidence: float = CONFIDENCE
    resamples: int = RESAMPLES
    seed: int = SEED

    def to_dict(self) -> dict[str, Any]:
        plain = asdict(self)
        plain["load"]["stages"] = _stages(self.load.stages)
        plain["http"]["headers"] = [list(pair) for pair in self.http.headers]
        return plain


@dataclass(frozen=True)
class VariantSummary:
    """One variant over its counted trials: medians with their bootstrap intervals (None without
    a counted trial; latency over the trials that completed something; server CPU only with a
    pid) and the request counts summed."""

    label: str
    url: str
    connect: str
    server_pid: int | None
    trials: int
    complete: int
    failed: int
    non_2xx: int
    requests_per_s: Estimate | None
    p50_us: Estimate | None
    p99_us: Estimate | None
    server_cpu_us_per_request: Estimate | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """A variant against the baseline: requests/s and p99 latency ratios (variant / baseline) with
    their intervals and verdicts. ``by`` names the one that gives the headline ``verdict``:
    requests/s in closed loop, p99 latency in open loop (where the rate is fixed by the schedule)."""

    label: str
    baseline: str
    by: Literal["requests_per_s", "p99_us"]
    verdict: Verdict
    requests_per_s: RatioEstimate
    p99_us: RatioEstimate

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CompareResult:
    """Every trial of a comparison and the statistics over them (computed on first use).

    ``finished_at`` is None while the comparison runs (the documents written during the run);
    ``interrupted`` is True after Ctrl-C; ``complete`` says whether every planned trial counted."""

    tool_version: str
    started_at: str
    finished_at: str | None
    interrupted: bool
    options: CompareOptions
    variants: tuple[Variant, ...]
    connect: tuple[str, ...]
    """Where pounder connected for each variant ("ip:port")."""
    trials: tuple[Trial, ...] = field(default=())

    @property
    def complete(self) -> bool:
        counted = sum(trial.counted for trial in self.trials)
        return counted == self.options.trials * len(self.variants)

    def counted(self, label: str) -> list[Trial]:
        """The counted trials of the variant ``label``, in order."""
        return [trial for trial in self.trials if trial.label == label and trial.counted]

    @cached_property
    def summaries(self) -> tuple[VariantSummary, ...]:
        pairs = zip(self.variants, self.connect, strict=True)
        return tuple(self._summary(variant, connect) for variant, connect in pairs)

    @cached_property
    def comparisons(self) -> tuple[Comparison, ...]:
        base = self.options.baseline
        return tuple(self._compare(variant.label, base) for variant in self.variants if variant.label != base)

    def summary(self, label: str) -> VariantSummary:
        for summary in self.summaries:
            if summary.label == label:
                return summary
        raise KeyError(label)

    def comparison(self, label: str) -> Comparison:
        for comparison in self.comparisons:
            if comparison.label == label:
                return comparison
        raise KeyError(label)

    def _estimate(self, values: Sequence[float]) -> Estimate | None:
        if not values:
            return None
        options = self.options
        return _median_interval(tuple(values), options.resamples, options.confidence, options.seed)

    def _summary(self, variant: Variant, connect: str) -> VariantSummary:
        trials = self.counted(variant.label)
        answered = [trial for trial in trials if trial.complete > 0]
        cpu = [trial.server_cpu_us_per_request for trial in trials if trial.server_cpu_us_per_request is not None]
        return VariantSummary(
            label=variant.label,
            url=variant.url,
            connect=connect,
            server_pid=variant.server_pid,
            trials=len(trials),
            complete=sum(trial.complete for trial in trials),
            failed=sum(trial.failed for trial in trials),
            non_2xx=sum(trial.non_2xx for trial in trials),
            requests_per_s=self._estimate([trial.requests_per_s for trial in trials]),
            p50_us=self._estimate([trial.p50_us for trial in answered]),
            p99_us=self._estimate([trial.p99_us for trial in answered]),
            server_cpu_us_per_request=self._estimate(cpu),
        )

    def _ratio(self, ours: Sequence[float], theirs: Sequence[float], higher_is_better: bool) -> RatioEstimate:
        options = self.options
        if not ours or not theirs:
            return RatioEstimate(None, None, None, higher_is_better, "unknown")
        return _ratio_interval(
            tuple(ours), tuple(theirs), higher_is_better, options.min_effect, options.resamples, options.confidence,
            options.seed,
        )  # fmt: skip

    def _compare(self, label: str, base: str) -> Comparison:
        ours, theirs = self.counted(label), self.counted(base)
        rate = self._ratio([t.requests_per_s for t in ours], [t.requests_per_s for t in theirs], True)
        p99 = self._ratio([t.p99_us for t in ours if t.complete], [t.p99_us for t in theirs if t.complete], False)
        by: Literal["requests_per_s", "p99_us"] = "p99_us" if self.options.load.is_open else "requests_per_s"
        return Comparison(
            label=label,
            baseline=base,
            by=by,
            verdict=p99.verdict if by == "p99_us" else rate.verdict,
            requests_per_s=rate,
            p99_us=p99,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict (schema ``pounder/compare/1``, see docs/results.md)."""
        return {
            "schema": SCHEMA,
            "tool_version": self.tool_version,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "interrupted": self.interrupted,
            "complete": self.complete,
            "options": self.options.to_dict(),
            "variants": [summary.to_dict() for summary in self.summaries],
            "comparisons": [comparison.to_dict() for comparison in self.comparisons],
            "trials": [trial.to_dict() for trial in self.trials],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False) + "\n"


@lru_cache(maxsize=256)
def _median_interval(values: tuple[float, ...], resamples: int, confidence: float, seed: int) -> Estimate:
    """:func:`median_interval`, remembered: the results file is rewritten after every trial, and
    only the variant that just ran has new trials."""
    return median_interval(values, resamples=resamples, confidence=confidence, seed=seed)


@lru_cache(maxsize=256)
def _ratio_interval(
    ours: tuple[float, ...],
    theirs: tuple[float, ...],
    higher_is_better: bool,
    min_effect: float,
    resamples: int,
    confidence: float,
    seed: int,
) -> RatioEstimate:
    return ratio_interval(
        ours, theirs, higher_is_better=higher_is_better, min_effect=min_effect, resamples=resamples,
        confidence=confidence, seed=seed,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Input


def _stages(stages: tuple[Stage, ...] | None) -> list[list[float]] | None:
    if stages is None:
        return None
    return [[stage.duration_s, stage.start_rate, stage.end_rate] for stage in stages]


def default_labels(urls: Sequence[str]) -> list[str]:
    """Labels for ``urls``: each URL's path (and query); where two are alike, ``host:port/path``;
    where the URLs themselves are alike, ``#1``, ``#2``... appended in order."""

    def path(url: str) -> str:
        parts = urlsplit(url.strip())
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def full(url: str) -> str:
        return urlsplit(url.strip()).netloc + path(url)

    labels = [path(url) for url in urls]
    if len(set(labels)) < len(labels):
        labels = [full(url) for url in urls]
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    numbered: dict[str, int] = {}
    unique = []
    for label in labels:
        if seen[label] > 1:
            numbered[label] = numbered.get(label, 0) + 1
            label = f"{label} #{numbered[label]}"
        unique.append(label)
    return unique


def _check_variants(variants: Sequence[Variant]) -> tuple[Variant, ...]:
    checked = tuple(variants)
    if not all(isinstance(variant, Variant) for variant in checked):
        raise UsageError("variants must be pounder.compare.Variant objects")
    if not 2 <= len(checked) <= MAX_VARIANTS:
        raise UsageError(f"compare needs between 2 and {MAX_VARIANTS} URLs, got {len(checked)}")
    labels: set[str] = set()
    for variant in checked:
        label = variant.label
        if not isinstance(label, str) or not label.strip() or label != label.strip() or not label.isprintable():
            raise UsageError(f"invalid label {label!r}: it must be printable text without leading or trailing spaces")
        if len(label) > MAX_LABEL:
            raise UsageError(f"label {label!r} is longer than {MAX_LABEL} characters")
        if label in labels:
            raise UsageError(f"label {label!r} is given twice; labels must be unique")
        labels.add(label)
    return checked


def check_trials(trials: int) -> int:
    if isinstance(trials, bool) or not isinstance(trials, int) or not MIN_TRIALS <= trials <= MAX_TRIALS:
        raise UsageError(f"--trials must be a whole number between {MIN_TRIALS} and {MAX_TRIALS}, got {trials!r}")
    return trials


def _check_min_effect(min_effect: float) -> float:
    if isinstance(min_effect, bool) or not isinstance(min_effect, (int, float)) or not 0 <= min_effect < 1:
        raise UsageError(f"--min-effect must be at least 0 % and less than 100 %, got {min_effect!r}")
    return float(min_effect)


def _server(variant: Variant) -> ServerTarget | None:
    if variant.server_pid is None:
        return None
    try:
        return find_server(pid=variant.server_pid)
    except UsageError as error:
        raise UsageError(f"{variant.label}: {error}") from None


def trial_plan(labels: Sequence[str], trials: int, warmup: bool) -> list[tuple[str, int]]:
    """The runs in order as ``(label, round)``: round 0 (warm-up) for every label when
    ``warmup``, then rounds 1..``trials``, each going through the labels in order."""
    rounds = range(0 if warmup else 1, trials + 1)
    return [(label, round_) for round_ in rounds for label in labels]


# ---------------------------------------------------------------------------------------------
# Output


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory, renamed: a
    reader (or a crash) sees the previous whole file or the new one, never half of one."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as error:
        raise PounderError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise PounderError(f"cannot write {path}: {error.strerror or error}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------------------------
# The comparison


def compare(
    variants: Sequence[Variant],
    *,
    trials: int = DEFAULT_TRIALS,
    warmup: bool = True,
    baseline: str | None = None,
    min_effect: float = MIN_EFFECT,
    connections: int | str | None = None,
    requests: int | str | None = None,
    duration: Number | None = None,
    threads: int | str | None = None,
    rate: float | int | str | None = None,
    stages: str | Sequence[Stage] | None = None,
    max_in_flight: int | str | None = None,
    keepalive: bool = True,
    calls_per_conn: int | str | None = None,
    throttle: int | str | None = None,
    method: str | None = None,
    body: str | bytes | None = None,
    content_type: str | None = None,
    headers: Sequence[str] | Mapping[str, str] = (),
    cookies: Sequence[str] = (),
    auth: str | None = None,
    timeout: Number | None = None,
    allow_remote: bool = False,
    results: str | os.PathLike[str] | None = None,
    on_trial: TrialCallback | None = None,
    on_progress: ProgressCallback | None = None,
) -> CompareResult:
    """Is one variant faster than another, and by how much: the same load against each variant,
    ``trials`` times, interleaved, after a warm-up trial each (``warmup=False``: none).

    The load options are :func:`pounder.bench`'s and apply to every trial alike; when neither
    ``requests``, ``duration`` nor ``stages`` is given a trial lasts 5 s. ``baseline`` is the label
    the others are compared with (default: the first variant). ``min_effect``: a ratio within this
    fraction of 1 is "no clear difference" even when its interval excludes 1 (default 1 %).

    ``results``: a JSON file rewritten after every trial (see the module documentation).
    ``on_trial(trial, planned)`` is called after every trial, ``on_progress`` during each (as for
    :func:`pounder.run_bench`).

    Raises :class:`~pounder.UsageError` on bad input, before anything is sent. On Ctrl-C the
    trials done are returned, with ``interrupted=True``.
    """
    checked = _check_variants(variants)
    labels = [variant.label for variant in checked]
    base = labels[0] if baseline is None else baseline
    if base not in labels:
        raise UsageError(f"--baseline {base!r} is not one of the labels: {', '.join(labels)}")
    trials = check_trials(trials)
    min_effect = _check_min_effect(min_effect)
    if not isinstance(warmup, bool):
        raise UsageError(f"warmup must be True or False, got {warmup!r}")
    if requests is None and duration is None and stages is None:
        duration = DEFAULT_TRIAL_S
    specs = [
        BenchSpec.from_options(
            variant.url,
            connections=connections, requests=requests, duration=duration, threads=threads, rate=rate,
            stages=stages, max_in_flight=max_in_flight, keepalive=keepalive, calls_per_conn=calls_per_conn,
            throttle=throttle, method=method, body=body, content_type=content_type, headers=headers,
            cookies=cookies, auth=auth, timeout=timeout, allow_remote=allow_remote,
        )  # fmt: skip
        for variant in checked
    ]
    servers = [_server(variant) for variant in checked]
    output = check_output_path(os.fspath(results), "--json") if results is not None else None
    if output == "-":
        raise UsageError("results must be a file, not '-'")
    first = specs[0].run_options()
    result = CompareResult(
        tool_version=__version__,
        started_at=_now_iso(),
        finished_at=None,
        interrupted=False,
        options=CompareOptions(trials=trials, warmup=warmup, baseline=base, load=first.load, http=first.http,
                               min_effect=min_effect),
        variants=checked,
        connect=tuple(spec.targets[0].info().connect for spec in specs),
    )  # fmt: skip
    path = None if output is None else Path(output)

    def save(current: CompareResult) -> None:
        if path is not None:
            write_atomically(path, current.to_json())

    save(result)
    plan = trial_plan(labels, trials, warmup)
    done: list[Trial] = []
    interrupted = False
    try:
        for seq, (label, round_) in enumerate(plan, start=1):
            index = labels.index(label)
            server = servers[index]
            sampler = None if server is None else ServerSampler(server, interval_s=SAMPLE_INTERVAL_S)
            bench = run_bench(specs[index], on_progress, sampler)
            trial = Trial.from_bench(seq, round_, label, bench)
            done.append(trial)
            save(_with(result, done, finished=False, interrupted=bench.interrupted))
            if on_trial is not None:
                on_trial(trial, len(plan))
            if bench.interrupted:
                interrupted = True
                break
    except KeyboardInterrupt:
        interrupted = True
    final = _with(result, done, finished=True, interrupted=interrupted)
    save(final)
    return final


def _with(result: CompareResult, trials: Sequence[Trial], *, finished: bool, interrupted: bool) -> CompareResult:
    return CompareResult(
        tool_version=result.tool_version,
        started_at=result.started_at,
        finished_at=_now_iso() if finished else None,
        interrupted=interrupted,
        options=result.options,
        variants=result.variants,
        connect=result.connect,
        trials=tuple(trials),
    )

