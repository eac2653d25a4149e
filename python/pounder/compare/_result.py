"""The result of a comparison (schema ``pounder/compare/1``): the variants, every trial, and the
statistics over them, computed on first use (:class:`CompareResult`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal

from pounder._errors import public
from pounder._junit import Case
from pounder._records import Record
from pounder._stats import (
    CONFIDENCE,
    MIN_EFFECT,
    MIN_SAMPLES,
    RESAMPLES,
    SEED,
    Estimate,
    RatioEstimate,
    Verdict,
    median_interval,
    ratio_interval,
)
from pounder.results import (
    MAX_FAILED,
    BenchResult,
    GateReport,
    HttpOptions,
    LoadModel,
    clean_trial,
    load_failure,
)

SCHEMA = "pounder/compare/1"

NotCounted = Literal["warm-up", "interrupted", "failures"]
"""Why a trial is not part of the statistics: the warm-up round, stopped by Ctrl-C, or more than
:data:`~pounder.results.MAX_FAILED` of its requests failed (or none completed)."""


@public
@dataclass(frozen=True)
class Variant:
    """One thing to compare: a ``label`` (unique, shown in the tables), the ``url`` loaded, and
    optionally the pid of the server's parent process, sampled during each trial for its CPU."""

    label: str
    url: str
    server_pid: int | None = None


@public
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
    nowhere: str | None = None
    """The trial got nowhere (:func:`~pounder.results.load_failure`: no request succeeded, no answer
    was 2xx or 3xx (or of ``--expect-status``), a scenario's users never got through): the line
    saying so; None when it got somewhere. Such a trial is not counted (``"failures"``)."""

    @property
    def not_counted(self) -> NotCounted | None:
        """Why the trial is not part of the statistics, None when it is."""
        if self.round == 0:
            return "warm-up"
        if self.interrupted:
            return "interrupted"
        if not clean_trial(self.complete, self.failed) or self.nowhere is not None:
            return "failures"
        return None

    @property
    def got_nowhere(self) -> bool:
        """Not counted for ``nowhere`` alone: its requests did not fail (they were answered with
        statuses that do not count, or a scenario's users never got through)."""
        return self.nowhere is not None and clean_trial(self.complete, self.failed)

    @property
    def counted(self) -> bool:
        """Part of the statistics: a measured round that ran to its end with at most 1 % of its
        requests failed and at least one completed."""
        return self.not_counted is None

    @property
    def measured(self) -> bool:
        """A measured round that ran to its end (counted or not counted for its failures)."""
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
            nowhere=None if result.interrupted else load_failure(result),
        )

    def to_dict(self) -> dict[str, Any]:
        plain = {**asdict(self), "errors": dict(self.errors), "counted": self.counted, "not_counted": self.not_counted}
        if self.nowhere is None:  # only for a trial that got nowhere
            del plain["nowhere"]
        return plain


TrialCallback = Callable[[Trial, int], None]
"""Called after every trial (warm-ups included) with the trial and the number of runs planned."""


@public
@dataclass(frozen=True)
class CompareOptions:
    """How the comparison ran: the trials, the statistics' settings and the load of every trial."""

    trials: int
    warmup: bool
    baseline: str
    load: LoadModel
    http: HttpOptions
    min_effect: float = MIN_EFFECT
    max_failed: float = MAX_FAILED
    """A trial counts only with at most this fraction of its requests failed (fixed; recorded)."""
    confidence: float = CONFIDENCE
    resamples: int = RESAMPLES
    seed: int = SEED
    ray: str | None = None
    """The Ray cluster whose agents sent every trial (``--ray``), else None."""
    agents: int | None = None
    """How many agents sent each trial (with ``ray``)."""
    scenario: str | None = None
    """The scenario file every trial's virtual users ran (``--scenario``), else None."""
    expect_status: tuple[tuple[int, int], ...] | None = None
    """``--expect-status`` as ``(low, high)`` ranges, else None (:func:`~pounder.results.load_failure`)."""

    def to_dict(self) -> dict[str, Any]:
        plain = asdict(self)
        for name in ("scenario", "expect_status"):  # only when given
            if plain[name] is None:
                del plain[name]
        if self.expect_status is not None:
            plain["expect_status"] = [list(pair) for pair in self.expect_status]
        plain["load"] = self.load.to_dict()
        plain["http"]["headers"] = [list(pair) for pair in self.http.headers]
        return plain


@public
@dataclass(frozen=True)
class VariantSummary(Record):
    """One variant over its counted trials: medians with their bootstrap intervals (None without
    a counted trial; server CPU only with a pid) and the request counts summed."""

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


@public
@dataclass(frozen=True)
class Comparison(Record):
    """A variant against the baseline: requests/s and p99 latency ratios (variant / baseline) with
    their intervals and verdicts. ``by`` names the one that gives the headline ``verdict``:
    requests/s in closed loop, p99 latency in open loop (where the rate is fixed by the schedule)."""

    label: str
    baseline: str
    by: Literal["requests_per_s", "p99_us"]
    verdict: Verdict
    requests_per_s: RatioEstimate
    p99_us: RatioEstimate


@public
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
    gates: GateReport | None = None
    """The ``--fail-if`` gates evaluated once the comparison ended (:mod:`pounder.compare._gates`), else None."""

    @property
    def complete(self) -> bool:
        counted = sum(trial.counted for trial in self.trials)
        return counted == self.options.trials * len(self.variants)

    def counted(self, label: str) -> list[Trial]:
        """The counted trials of the variant ``label``, in order."""
        return [trial for trial in self.trials if trial.label == label and trial.counted]

    def failed(self, label: str) -> list[Trial]:
        """The trials of the variant ``label`` not counted because their requests failed, in order."""
        return [trial for trial in self.trials if trial.label == label and trial.not_counted == "failures"]

    @property
    def failed_variants(self) -> tuple[str, ...]:
        """The labels of the variants left with fewer than 2 counted trials (no ratio, no interval)
        because requests failed in their trials."""
        return tuple(
            variant.label for variant in self.variants
            if self.failed(variant.label) and len(self.counted(variant.label)) < MIN_SAMPLES
        )  # fmt: skip

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
        trials = self.counted(variant.label)  # every one completed requests (clean_trial)
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
            p50_us=self._estimate([trial.p50_us for trial in trials]),
            p99_us=self._estimate([trial.p99_us for trial in trials]),
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
        # counted trials all completed requests: a side where nothing was answered has none, and no
        # ratio ("unknown", not "0.000x slower"); nor has a side with a single counted trial
        ours, theirs = self.counted(label), self.counted(base)
        rate = self._ratio([t.requests_per_s for t in ours], [t.requests_per_s for t in theirs], True)
        p99 = self._ratio([t.p99_us for t in ours], [t.p99_us for t in theirs], False)
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
        """The JSON-ready dict (schema ``pounder/compare/1``, see docs/reference/results.md)."""
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
            **({} if self.gates is None else {"gates": self.gates.to_list()}),  # only when gates were given
        }

    def to_junit(self) -> str:
        """The comparison as JUnit XML (``pounder compare --junit``: :mod:`pounder.compare._junit`)."""
        from pounder.compare._junit import compare_junit

        return compare_junit(self).render()

    def junit_cases(self, classname: str, prefix: str = "") -> list[Case]:
        """Its JUnit cases among a run's: its own and each gate's, named after ``prefix``."""
        from pounder.compare._junit import compare_cases

        return compare_cases(self, classname, prefix)

    def junit_properties(self, prefix: str = "") -> list[tuple[str, str]]:
        """Its figures as JUnit properties among a run's, named after ``prefix``."""
        from pounder.compare._junit import compare_properties

        return compare_properties(self, prefix)

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
