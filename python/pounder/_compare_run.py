"""A stored comparison (schema ``pounder/compare/1``, what ``pounder compare`` and each load of
``pounder run`` write) as typed records, read once for the page ``pounder report`` draws:

* :class:`CompareRun`: the document, its variants, comparisons and trials, checked as the page
  needs them (2 to :data:`MAX_VARIANTS` labelled variants, at most :data:`MAX_TRIALS` trials each and
  a warm-up) with :class:`MalformedCompareError` naming the key;
* :class:`CompareVariant`: a variant's medians over its counted trials (:class:`CompareFigure`,
  None without one) and its counts;
* :class:`CompareVersus`: a variant against the baseline, its ratios (:class:`CompareRatio`) and
  verdict;
* :class:`CompareTrial`: one trial, why it was not counted (:attr:`CompareTrial.why`, read the same
  from a file written before ``not_counted`` was stored).

A document of an earlier pounder lacks some members: they read as None. Every record keeps the
document as stored (``stored``, :class:`pounder._tune_point.Stored`): ``to_dict`` gives it back as
it was read. Its numbers are checked against the schema before (:func:`pounder._records.number_problem`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pounder._errors import UsageError
from pounder._records import shown
from pounder._tune_point import Stored

MAX_TRIALS = 100
"""The most trials per variant ``pounder compare`` runs (a warm-up besides)."""
MAX_VARIANTS = 20
"""The most variants it measures."""


class MalformedCompareError(UsageError):
    """A stored comparison lacks what the page draws (its variants, their labels, its trials)."""


def _require(record: Stored, name: str) -> Any:
    """The stored member ``name`` that a cell cannot draw missing: the KeyError the page reports
    as "'name' is missing"."""
    return record.stored[name]


@dataclass(frozen=True)
class CompareFigure(Stored):
    """A median over the counted trials with its 95 % interval (``low``, ``high``: None when absent)."""

    median: float
    low: float | None
    high: float | None

    @classmethod
    def read(cls, value: object) -> CompareFigure | None:
        """None when there is no median (no counted trial, or no server pid for the CPU)."""
        if not isinstance(value, Mapping) or value.get("median") is None:
            return None
        return cls(value["median"], value.get("low"), value.get("high"), stored=value)

    def bound(self, name: str) -> float | None:
        """``low`` or ``high`` for a cell: stored (null or not), else the KeyError of a missing member."""
        value: float | None = _require(self, name)
        return value


@dataclass(frozen=True)
class CompareRatio(Stored):
    """A ratio against the baseline with its 95 % interval (each None when unknown or absent)."""

    ratio: float | None
    low: float | None
    high: float | None

    @classmethod
    def read(cls, value: object) -> CompareRatio | None:
        """An absent or empty ratio reads as every figure None; one that is something else than an
        object as None (no ratio to draw: :attr:`CompareVersus.ratios` refuses it)."""
        data = value or {}
        if not isinstance(data, Mapping):
            return None
        return cls(data.get("ratio"), data.get("low"), data.get("high"), stored=data)


@dataclass(frozen=True)
class CompareVariant(Stored):
    """One variant over its counted trials: ``label``, ``trials`` counted, ``failed`` requests and
    the medians (None without a counted trial)."""

    label: str
    trials: int | None
    failed: int | None
    requests_per_s: CompareFigure | None
    p50_us: CompareFigure | None
    p99_us: CompareFigure | None
    server_cpu_us_per_request: CompareFigure | None

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> CompareVariant:
        figures = {name: CompareFigure.read(value.get(name))
                   for name in ("requests_per_s", "p50_us", "p99_us", "server_cpu_us_per_request")}
        return cls(value["label"], value.get("trials"), value.get("failed"), **figures, stored=value)


@dataclass(frozen=True)
class CompareVersus(Stored):
    """A variant (``label``) against the ``baseline``: the ratios and the ``verdict``."""

    label: str | None
    baseline: str | None
    verdict: str | None
    requests_per_s: CompareRatio | None
    p99_us: CompareRatio | None

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> CompareVersus:
        return cls(value.get("label"), value.get("baseline"), value.get("verdict"),
                   CompareRatio.read(value.get("requests_per_s")), CompareRatio.read(value.get("p99_us")),
                   stored=value)

    @property
    def ratios(self) -> tuple[CompareRatio, CompareRatio]:
        """Requests/s and p99 for a row; the TypeError of a value of another type than an object."""
        if self.requests_per_s is None or self.p99_us is None:
            raise TypeError("a ratio is no object")
        return self.requests_per_s, self.p99_us

    @property
    def title(self) -> str:
        """``b vs a``; the KeyError of a missing label or baseline."""
        return f"{_require(self, 'label')} vs {_require(self, 'baseline')}"


@dataclass(frozen=True)
class CompareTrial(Stored):
    """One trial: its variant's ``label``, ``round`` (0: the warm-up), whether it was ``counted``
    and why not, its requests (``complete``, ``failed``), its ``errors`` and ``nowhere``, the line
    saying it got nowhere."""

    label: str | None
    round: int | None
    counted: bool | None
    not_counted: str | None
    interrupted: bool | None
    complete: int | None
    failed: int | None
    errors: Mapping[str, int] | None
    nowhere: str | None

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> CompareTrial:
        names = ("label", "round", "counted", "not_counted", "interrupted", "complete", "failed", "errors", "nowhere")
        return cls(*(value.get(name) for name in names), stored=value)

    @property
    def why(self) -> str | None:
        """Why the trial is not counted, None when it is: its ``not_counted``, else (a file written
        before that member) round 0 is the warm-up, then interrupted, then failed requests."""
        if self.stored.get("counted", True):
            return None
        if isinstance(self.not_counted, str):
            return self.not_counted
        if self.round == 0:
            return "warm-up"
        return "interrupted" if self.interrupted else "failures"


@dataclass(frozen=True)
class CompareRun(Stored, key="compare"):
    """A stored comparison: its ``variants`` (2 or more, labelled), ``comparisons`` against the
    baseline, its ``trials`` (the members that are objects), whether it was ``interrupted`` and
    ``complete`` (every planned trial counted)."""

    variants: tuple[CompareVariant, ...]
    comparisons: tuple[CompareVersus, ...]
    trials: tuple[CompareTrial, ...]
    interrupted: bool | None
    complete: bool | None

    @classmethod
    def from_dict(cls, value: object, key: str | None = None) -> CompareRun:
        """The comparison in ``value``; :class:`MalformedCompareError` when its variants are not 2
        to :data:`MAX_VARIANTS`, one lacks its label, ``options.trials`` is out of 1 to
        :data:`MAX_TRIALS` or the trials are missing or too many (a comparison of no variant has
        no figure to show); a comparison that is not an object is the TypeError of a value of
        another type."""
        data: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
        variants, trials = data.get("variants"), data.get("trials")
        if not isinstance(variants, list) or not 2 <= len(variants) <= MAX_VARIANTS:
            got = f"{len(variants)}" if isinstance(variants, list) else "none" if variants is None else "no list"
            raise MalformedCompareError(f"'variants' must list 2 to {MAX_VARIANTS} variants, as pounder compare "
                                        f"measures them; got {got}")
        for index, variant in enumerate(variants):
            if not isinstance(variant, Mapping) or not isinstance(variant.get("label"), str):
                raise MalformedCompareError(f"'variants[{index}].label' is missing")
        rounds = (data.get("options") or {}).get("trials")
        if rounds is not None and not (isinstance(rounds, int) and 1 <= rounds <= MAX_TRIALS):
            raise MalformedCompareError(f"'options.trials' must be from 1 to {MAX_TRIALS}, got {shown(rounds)}")
        if not isinstance(trials, list) or len(trials) > len(variants) * (MAX_TRIALS + 1):
            raise MalformedCompareError(f"'trials' must list at most {MAX_TRIALS + 1} trials per variant"
                                        + ("" if isinstance(trials, list) else "; it is missing"))
        return cls(
            tuple(CompareVariant.read(variant) for variant in variants),
            tuple(CompareVersus.read(versus) for versus in data.get("comparisons") or []),
            tuple(CompareTrial.read(trial) for trial in trials if isinstance(trial, Mapping)),
            data.get("interrupted"), data.get("complete"), stored=data,
        )  # fmt: skip

    @property
    def rounds(self) -> int | None:
        """The trials per variant (``options.trials``), None when not stored."""
        rounds: int | None = (self.stored.get("options") or {}).get("trials")
        return rounds

    @property
    def gates(self) -> Any:
        """The ``--fail-if`` gates as stored (None or empty: none given)."""
        return self.stored.get("gates")

    def to_dict(self) -> dict[str, Any]:
        """The document as it was read (its records' figures are its own)."""
        return dict(self.stored)
