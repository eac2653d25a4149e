"""A tuning run's point as a typed record: the figures of one point of the children sweep, of the
pools compared at the offered load, of the MaxRequestsPerChild sweep or of a spare setting (the
medians and intervals :func:`pounder.tune._points.aggregate_trials` made of its trials, and the
comparisons its step added), read once from the stored document with :class:`pounder._records.Reader` for every table
that draws it, in the text ``pounder tune`` prints and on the page ``pounder report`` draws.

A point stored by an earlier pounder lacks some figures (no interval with one trial per point, no
cores, no comparisons): they read as ``None``. The document as stored is kept (``stored``):
:meth:`TunePoint.to_dict` gives it back, with the record's figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from pounder._errors import UsageError, public
from pounder._records import Convert, Reader


class MalformedTuneError(UsageError):
    """A tuning run's stored point lacks a figure or holds one of another type than pounder writes."""


READ = Reader(MalformedTuneError)
T = TypeVar("T")
R = TypeVar("R")


S = TypeVar("S", bound="Stored")


@dataclass(frozen=True)
class Stored:
    """A record read from a stored document that keeps the document as it was (``stored``):
    :meth:`from_dict` reads it (each field by its type, or by the record's :meth:`converters`),
    :meth:`to_dict` gives it back with the record's figures."""

    stored: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False, kw_only=True)
    default_key: ClassVar[str] = "document"
    """Its key in messages when :meth:`from_dict` is given none (``class X(Stored, key="point")``)."""

    def __init_subclass__(cls, key: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if key is not None:
            cls.default_key = key

    @classmethod
    def converters(cls) -> dict[str, Convert]:
        """How the fields not read by their type alone are read."""
        return may_be_missing(cls)

    @classmethod
    def from_dict(cls: type[S], value: object, key: str | None = None) -> S:
        """The record stored at ``key`` (its name in messages); raises :class:`MalformedTuneError`
        naming the key of a figure that is missing or of another type."""
        return read_stored(cls, value, cls.default_key if key is None else key, **cls.converters())

    def to_dict(self) -> dict[str, Any]:
        """The document as stored, its figures those of the record."""
        return stored_dict(self)


@dataclass(frozen=True)
class Versus(Stored):
    """A point's median against a reference's (the best pool, unlimited, the lowest p99):
    ``ratio`` with its 95 % interval ``low``-``high`` (None without one), the ``verdict``."""

    ratio: float | None
    low: float | None
    high: float | None
    verdict: str | None
    worse: bool | None
    pairs: int | None


@public
@dataclass(frozen=True)
class TunePoint(Stored, key="point"):
    """One point of a tuning run: medians over its counted trials (``counted`` of ``len(trials)``),
    requests/s and p99 with their 95 % intervals, the requests of every trial (``complete``,
    ``failed``), the CPU of the server, of the load generator and of other processes (cores), its
    flags and comparisons, the time a request held a child (``busy_s``), the server's own counters
    (``server_status``) and, run in a pod, its CPU, quota, throttling and OOM kills; a spare
    setting's point (``name`` before or after) also its settings, the idle children before the
    burst, the p99 of its first and steady seconds against the steady reference, its seconds
    (``series``), its slow seconds (``burst_s``) and whether it was ``chosen``."""

    children: int
    connections: int
    rps: float
    max_requests: int | None = None
    rate: float | None = None
    counted: int | None = None
    trials: tuple[Mapping[str, Any], ...] = ()
    rps_low: float | None = None
    rps_high: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    p99_low: float | None = None
    p99_high: float | None = None
    complete: int | None = None
    failed: int | None = None
    non_2xx: int | None = None
    respawns: int | None = None
    server_cores: float | None = None
    client_cores: float | None = None
    other_cores: float | None = None
    front_cores: float | None = None
    server_cpu_us: float | None = None
    queued: float | None = None
    max_child_uss: int | None = None
    wide: bool | None = None
    remeasured: bool | None = None
    vs_best: Versus | None = None
    vs_unlimited: Versus | None = None
    p99_vs_lowest: Versus | None = None
    name: str | None = None
    start_servers: int | None = None
    min_spare: int | None = None
    max_spare: int | None = None
    idle_children: int | None = None
    first_p99_ms: float | None = None
    steady_p99_ms: float | None = None
    burst_s: int | None = None
    chosen: bool | None = None
    busy_s: float | None = None
    elapsed_s: float | None = None
    warmed: int | None = None
    neighbours: tuple[int, ...] = ()
    server_status: Mapping[str, Any] | None = None
    pod_cores: float | None = None
    pod_quota: float | None = None
    throttled_s: float | None = None
    throttled_share: float | None = None
    oom_kills: int | None = None
    reference_p99_ms: float | None = None
    series: tuple[Mapping[str, Any], ...] = ()
    threads: int | None = None
    footprint: int | None = None
    child_uss: int | None = None
    child_shared: int | None = None

    @property
    def attempted(self) -> int:
        """The requests of every trial: completed and failed."""
        return (self.complete or 0) + (self.failed or 0)

    @property
    def trials_text(self) -> str:
        """``counted/run``, as the tables print it."""
        return f"{self.counted or 0}/{len(self.trials)}"

    @classmethod
    def converters(cls) -> dict[str, Convert]:
        return _CONVERTERS



def tune_points(points: Points, key: str) -> list[TunePoint]:
    """``points`` as records (:class:`TunePoint`), each document read at ``key[i]``, a record as it is."""
    return [tune_point(p, f"{key}[{i}]") for i, p in enumerate(points)]


Points = Sequence[Mapping[str, Any] | TunePoint]
"""Points as records (what a tuning run holds) or as documents (as stored, as a test writes them): a
decision's boundary reads them as records with :func:`tune_points`."""


def tune_point(point: Mapping[str, Any] | TunePoint, key: str = "point") -> TunePoint:
    """``point`` as a record (:class:`TunePoint`), a document read at ``key``, a record as it is."""
    return point if isinstance(point, TunePoint) else TunePoint.from_dict(point, key)


def read_stored(cls: type[R], value: object, key: str, **converters: Any) -> R:
    """Record ``cls`` read from the document at ``key`` (:meth:`pounder._records.Reader.record`
    with ``converters``), the document kept as it was in its ``stored``."""
    data = READ.as_dict(value, key)
    record: R = READ.record(cls, data, key, **converters, stored=lambda _value, _key: data)
    return record


def may_be_missing(cls: type[Any], *others: str) -> dict[str, Convert]:
    """A converter for each figure of ``cls`` that may be None (``float | None``, ...), but the
    ``others``: a document of an earlier pounder without it reads as None."""
    return {f.name: READ.by_type(str(f.type), f.name) for f in fields(cls)
            if str(f.type).endswith("| None") and f.name not in others}


def stored_dict(record: Any) -> dict[str, Any]:
    """``record.stored`` (a record read from a document that keeps it) with each field's value of
    the record written over it, a nested record's the same way; a field that is None keeps what
    the document held, and one the document did not hold stays out while it is empty (no trials)."""
    out = dict(record.stored)
    for f in fields(record):
        value = getattr(record, f.name)
        if f.name == "stored" or value is None or (f.name not in out and value == ()):
            continue
        if hasattr(value, "stored"):
            value = stored_dict(value)
        elif isinstance(value, tuple):
            value = [stored_dict(item) if hasattr(item, "stored") else dict(item) if isinstance(item, Mapping)
                     else item for item in value]
        out[f.name] = value
    return out


def present(value: T | None) -> T:
    """A figure every stored point of its kind holds, for a chart or a cell that cannot draw it
    missing: a point without it is no result pounder wrote (the TypeError the page reports as such)."""
    if value is None:
        raise TypeError("a figure is missing")
    return value


def _versus(value: object, key: str) -> Versus | None:
    return None if value is None else Versus.from_dict(value, key)


def _trials(value: object, key: str) -> tuple[Mapping[str, Any], ...]:
    items = () if value is None else READ.list_of(READ.as_dict)(value, key)
    return tuple(items)


def _status(value: object, key: str) -> Mapping[str, Any] | None:
    return None if value is None else READ.as_dict(value, key)


def _neighbours(value: object, key: str) -> tuple[int, ...]:
    return () if value is None else READ.list_of(READ.as_int)(value, key)


_CONVERTERS: dict[str, Convert] = {
    **may_be_missing(TunePoint, "vs_best", "vs_unlimited", "p99_vs_lowest", "server_status"),
    "trials": _trials, "series": _trials, "neighbours": _neighbours, "server_status": _status,
    "vs_best": _versus, "vs_unlimited": _versus, "p99_vs_lowest": _versus,
}
"""Every figure but ``children``, ``connections`` and ``rps`` may be missing (an earlier pounder's
point): read as None."""
