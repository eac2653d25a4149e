"""What a bench result records of the options it ran with (:class:`RunOptions`): the targets, the
load model and the request options, and their reading from a saved result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Generic, Literal, TypeVar

from pounder._errors import public
from pounder.results._measured import READ, MalformedResultError


@public
@dataclass(frozen=True)
class Stage:
    """One open-loop stage: the global rate goes linearly from ``start_rate`` to ``end_rate``
    (requests per second) over ``duration_s`` seconds. A constant stage has both rates equal."""

    duration_s: float
    start_rate: float
    end_rate: float


@public
@dataclass(frozen=True)
class TargetInfo:
    """A target as given (``url``), its ``weight`` and where pounder connects: ``"host:port"``
    (resolved address) or ``"unix:/path"``; ``method``: the URL file line's own method, or
    ``None`` (the run's ``http.method``)."""

    url: str
    weight: int
    connect: str
    method: str | None = None


@public
@dataclass(frozen=True)
class LoadModel:
    """How load was generated. ``kind`` "closed": ``connections`` users each send the next request
    when the previous one finished; "open": requests are sent on a schedule (``stages``), with at
    most ``connections`` in flight."""

    kind: Literal["closed", "open"]
    connections: int
    threads: int
    requests: int | None
    duration_s: float | None
    stages: tuple[Stage, ...] | None
    warmup_requests: int
    warmup_s: float

    @property
    def is_open(self) -> bool:
        return self.kind == "open"

    def to_dict(self) -> dict[str, Any]:
        """As a result's JSON holds it: the stages ``[duration_s, start_rate, end_rate]`` each."""
        plain = asdict(self)
        plain["stages"] = (None if self.stages is None
                           else [[stage.duration_s, stage.start_rate, stage.end_rate] for stage in self.stages])
        return plain


@public
@dataclass(frozen=True)
class HttpOptions:
    """Request options. ``headers`` are those the user asked for (-H, -T, --cookie, -A), with
    the values of ``Authorization`` and ``Cookie`` replaced by ``"<redacted>"``."""

    method: str
    keepalive: bool
    calls_per_conn: int
    timeout_s: float
    throttle_bps: int | None
    body_bytes: int
    headers: tuple[tuple[str, str], ...]
    body_sha256: str | None = None
    """The SHA-256 of the body (hex): what ``--baseline`` compares it by; None in results from before it."""


@public
@dataclass(frozen=True)
class ReplayInfo:
    """A timed replay (``--replay``): the file (``format`` "access_log" or "har"), the requests
    in it after the filters (``log_requests``, ``distinct`` of them) and those replayed
    (``requests``, fewer when ``-n`` or ``-d`` cut it), the span from its first request to its
    last as logged (``span_s``), the ``speed`` and the replay's length at that speed
    (``length_s``: ``-d`` when it cut). ``whole_seconds``: the log's times had no fraction of a
    second, so the requests of each second were spread evenly over it. ``out_of_order``: lines
    earlier than a line before them (sorted by time for the replay). ``lines``: the file's
    non-blank lines (a HAR's entries), so ``lines == log_requests + sum(skipped.values())``;
    ``skipped``: the others by reason (``pounder.traffic._log_lines.SKIP_REASONS``, those that occurred);
    ``methods``: the methods kept (``--log-methods``); ``origin``: a HAR's main origin, the only
    one replayed (requests to others are ``skipped["other_host"]``), None for an access log."""

    path: str
    format: Literal["access_log", "har"]
    log_requests: int
    distinct: int
    requests: int
    span_s: float
    speed: float
    length_s: float
    whole_seconds: bool
    out_of_order: int
    lines: int
    skipped: Mapping[str, int]
    methods: tuple[str, ...]
    origin: str | None = None


@public
@dataclass(frozen=True)
class TlsInfo:
    """The TLS settings of a run with https:// targets: ``insecure`` (any certificate accepted),
    the ``cacert`` and client ``cert`` files as given (None: the system's roots, no client
    certificate), and ``resume`` (False: ``--no-tls-resume``, every handshake a full one)."""

    insecure: bool
    cacert: str | None
    cert: str | None
    resume: bool


TargetOf = TypeVar("TargetOf")
"""What a target is to a :class:`LoadPlan`: as the engine takes it (:class:`pounder.load.Target`) or as
a result records it (:class:`TargetInfo`)."""


@public
@dataclass(frozen=True)
class LoadPlan(Generic[TargetOf]):
    """What a run sends, declared once for the options handed to the engine
    (:class:`pounder.load.BenchSpec`) and the options a result records (:class:`RunOptions`): the
    ``targets``, the ``order`` they are picked in, the ``load`` model and the ``http`` request
    options; each adds its own fields after these."""

    targets: tuple[TargetOf, ...]
    order: Literal["sequential", "random"]
    load: LoadModel
    http: HttpOptions


@public
@dataclass(frozen=True)
class RunOptions(LoadPlan[TargetInfo]):
    """The options a bench ran with."""

    scenario: str | None = None
    """The scenario file the virtual users ran (``--scenario``), or None."""
    replay: ReplayInfo | None = None
    """The log replayed at its recorded times (``--replay``), or None."""
    tls: TlsInfo | None = None
    """The TLS settings when a target was https://, else None (and in results from before HTTPS)."""
    expect_status: tuple[tuple[int, int], ...] | None = None
    """``--expect-status``: the statuses that count as answers instead of 2xx and 3xx, as inclusive
    ``(low, high)`` ranges (:func:`~pounder.results.load_failure`); None when not given."""


def _stage(value: object, key: str) -> Stage:
    items = READ.as_list(value, key)
    if len(items) != 3:
        raise MalformedResultError(f"'{key}' must be [duration_s, start_rate, end_rate]")
    return Stage(*(READ.as_float(item, key) for item in items))


def _header(value: object, key: str) -> tuple[str, str]:
    items = READ.as_list(value, key)
    if len(items) != 2:
        raise MalformedResultError(f"'{key}' must be [name, value]")
    return READ.as_str(items[0], key), READ.as_str(items[1], key)


def _load_model(value: object, key: str) -> LoadModel:
    model: LoadModel = READ.record(
        LoadModel,
        value,
        key,
        kind=READ.choice("closed", "open"),
        requests=READ.nullable(READ.as_int),
        duration_s=READ.nullable(READ.as_float),
        stages=READ.nullable(READ.list_of(_stage)),
    )
    return model


def _http_options(value: object, key: str) -> HttpOptions:
    options: HttpOptions = READ.record(
        HttpOptions, value, key, throttle_bps=READ.nullable(READ.as_int), headers=READ.list_of(_header),
        body_sha256=READ.nullable(READ.as_str),
    )
    return options


def _target(value: object, key: str) -> TargetInfo:
    target: TargetInfo = READ.record(TargetInfo, value, key, method=READ.nullable(READ.as_str))
    return target


def _counts(value: object, key: str) -> dict[str, int]:
    return {name: READ.as_int(count, f"{key}.{name}") for name, count in READ.as_dict(value, key).items()}


def _replay_info(value: object, key: str) -> ReplayInfo:
    info: ReplayInfo = READ.record(ReplayInfo, value, key, strict=True, format=READ.choice("access_log", "har"),
                                   skipped=_counts, methods=READ.list_of(READ.as_str))  # fmt: skip
    return info


def _status_range(value: object, key: str) -> tuple[int, int]:
    items = READ.as_list(value, key)
    if len(items) != 2:
        raise MalformedResultError(f"'{key}' must be [low, high]")
    low, high = (READ.as_int(item, key) for item in items)
    if not 100 <= low <= high <= 599:
        raise MalformedResultError(f"'{key}' must be statuses from 100 to 599, low first")
    return low, high


def _tls_info(value: object, key: str) -> TlsInfo:
    info: TlsInfo = READ.record(TlsInfo, value, key)
    return info


def read_run_options(value: object, key: str) -> RunOptions:
    options: RunOptions = READ.record(
        RunOptions,
        value,
        key,
        targets=READ.list_of(_target),
        order=READ.choice("sequential", "random"),
        load=_load_model,
        http=_http_options,
        scenario=READ.nullable(READ.as_str),
        replay=READ.nullable(_replay_info),
        tls=READ.nullable(_tls_info),
        expect_status=READ.nullable(READ.list_of(_status_range)),
    )
    return options
