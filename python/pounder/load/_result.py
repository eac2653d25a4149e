"""The result of a bench: typed, frozen records of the engine's measurements plus what the Python
side adds (tool version, start time, the options used, whether the run was interrupted), and the
figures derived from them. ``docs/results.md`` documents every field; the JSON written by
:meth:`BenchResult.to_json` follows ``pounder/schemas/bench-result.schema.json``.

Units follow the field names: ``_us`` microseconds, ``_ms`` milliseconds, ``_s`` seconds, bytes
unless said otherwise; ``KiB`` is 1024 bytes (like ab's "Kbytes/sec").
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pounder._errors import PounderError, UsageError
from pounder._records import Reader
from pounder.load._parse import Stage
from pounder.procs import MalformedReportError, ServerLoadReport, per_request

SCHEMA = "pounder/bench-result/1"
PERCENTILES: tuple[str, ...] = ("50", "66", "75", "80", "90", "95", "98", "99", "99.9", "100")
ERROR_CATEGORIES: tuple[str, ...] = ("refused", "reset", "timeout", "bad_response", "other", "aborted")
_FULL_SECOND_SLACK_S = 0.001


class MalformedResultError(PounderError):
    """A result JSON (from the engine or a file) does not have the expected shape."""


_READ = Reader(MalformedResultError)


# ---------------------------------------------------------------------------------------------
# The engine's measurements


@dataclass(frozen=True)
class Histogram:
    """A latency distribution, all in microseconds (all zero when ``count`` is 0).
    ``percentiles`` maps "50", "66", …, "99.9", "100" to µs."""

    count: int
    min_us: int
    max_us: int
    mean_us: float
    stdev_us: float
    percentiles: Mapping[str, int]

    @classmethod
    def from_dict(cls, value: object, key: str) -> Histogram:
        histogram: Histogram = _READ.record(cls, value, key, percentiles=_percentiles)
        return histogram


def _percentiles(value: object, key: str) -> dict[str, int]:
    data = _READ.as_dict(value, key)
    return {percent: _READ.as_int(_READ.get(data, percent), f"{key}.{percent}") for percent in PERCENTILES}


@dataclass(frozen=True)
class WarmupCounts:
    """The unmeasured warmup phase."""

    complete: int
    failed: int
    elapsed_s: float


@dataclass(frozen=True)
class RequestCounts:
    """Measured requests. ``complete + failed`` = requests attempted; ``non_2xx`` ⊂ complete;
    ``unsent`` and ``late`` only happen in open loop."""

    complete: int
    failed: int
    non_2xx: int
    unsent: int
    late: int


@dataclass(frozen=True)
class ByteCounts:
    """Bytes received (``total``: headers + bodies; ``body``: bodies only) and ``sent``."""

    total: int
    body: int
    sent: int


@dataclass(frozen=True)
class ErrorCounts:
    """Failed requests by category; each failed request has exactly one."""

    refused: int
    reset: int
    timeout: int
    bad_response: int
    other: int
    aborted: int

    def nonzero(self) -> dict[str, int]:
        return {name: count for name, count in asdict(self).items() if count}


@dataclass(frozen=True)
class Latency:
    """``corrected``: from the intended send time; ``uncorrected``: from the actual start;
    ``schedule_lag``: actual start - intended start (open loop)."""

    corrected: Histogram
    uncorrected: Histogram
    schedule_lag: Histogram


@dataclass(frozen=True)
class Phases:
    """Per-request phases like ab's "Connection Times"."""

    connect: Histogram
    waiting: Histogram
    processing: Histogram
    total: Histogram


@dataclass(frozen=True)
class SecondSample:
    """One second of the measured phase, by completion time."""

    second: int
    complete: int
    non_2xx: int
    """Of ``complete``, the responses whose status was not 2xx."""
    failed: int
    bytes: int
    mean_us: float
    p50_us: int
    p99_us: int
    max_us: int


@dataclass(frozen=True)
class ClientCpu:
    """CPU time of the engine threads, seconds."""

    user_s: float
    sys_s: float


# ---------------------------------------------------------------------------------------------
# What the Python side adds: the options used


@dataclass(frozen=True)
class TargetInfo:
    """A target as given (``url``), its ``weight`` and where pounder connects: ``"host:port"``
    (resolved address) or ``"unix:/path"``."""

    url: str
    weight: int
    connect: str


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


@dataclass(frozen=True)
class RunOptions:
    """The options a bench ran with."""

    targets: tuple[TargetInfo, ...]
    order: Literal["sequential", "random"]
    load: LoadModel
    http: HttpOptions


def _stage(value: object, key: str) -> Stage:
    items = _READ.as_list(value, key)
    if len(items) != 3:
        raise MalformedResultError(f"'{key}' must be [duration_s, start_rate, end_rate]")
    return Stage(*(_READ.as_float(item, key) for item in items))


def _header(value: object, key: str) -> tuple[str, str]:
    items = _READ.as_list(value, key)
    if len(items) != 2:
        raise MalformedResultError(f"'{key}' must be [name, value]")
    return _READ.as_str(items[0], key), _READ.as_str(items[1], key)


def _load_model(value: object, key: str) -> LoadModel:
    model: LoadModel = _READ.record(
        LoadModel,
        value,
        key,
        kind=_READ.choice("closed", "open"),
        requests=_READ.nullable(_READ.as_int),
        duration_s=_READ.nullable(_READ.as_float),
        stages=_READ.nullable(_READ.list_of(_stage)),
    )
    return model


def _http_options(value: object, key: str) -> HttpOptions:
    options: HttpOptions = _READ.record(
        HttpOptions, value, key, throttle_bps=_READ.nullable(_READ.as_int), headers=_READ.list_of(_header)
    )
    return options


def _run_options(value: object, key: str) -> RunOptions:
    options: RunOptions = _READ.record(
        RunOptions,
        value,
        key,
        targets=_READ.list_of(lambda item, where: _READ.record(TargetInfo, item, where)),
        order=_READ.choice("sequential", "random"),
        load=_load_model,
        http=_http_options,
    )
    return options


# ---------------------------------------------------------------------------------------------
# Derived figures


@dataclass(frozen=True)
class ReplyRate:
    """Completed replies per second over the full seconds of the measured phase (a final partial
    second is left out): minimum, mean, maximum, sample standard deviation, number of seconds."""

    min: float
    avg: float
    max: float
    stddev: float
    samples: int


@dataclass(frozen=True)
class Derived:
    """Figures computed from the measurements (never stored by the engine)."""

    requests_per_s: float
    """complete / elapsed_s."""
    time_per_request_ms: float | None
    """ab's "Time per request (mean)": connections x elapsed / complete. Closed loop only (in open
    loop ``connections`` is a cap, not a concurrency); None when nothing completed."""
    time_per_request_all_ms: float | None
    """ab's "(mean, across all concurrent requests)": elapsed / complete; None when nothing completed."""
    received_kib_per_s: float
    """bytes.total / 1024 / elapsed_s."""
    sent_kib_per_s: float
    """bytes.sent / 1024 / elapsed_s."""
    reply_rate: ReplyRate | None
    """None when the measured phase lasted less than one full second."""
    client_cpu_us_per_request: float | None
    """Engine CPU (user + sys) per attempted request, warmup included (the CPU time covers it)."""
    server_cpu_us_per_request: float | None = None
    """Server CPU (parent and children, user + sys) per attempted request, warmup included (the
    sampling covers it); None without ``--server-*`` or with no request."""
    server_private_growth_bytes_per_request: float | None = None
    """Growth of the children's private memory (USS, summed over the children present from the
    first to the last sample) per attempted request: a leak shows as a steady positive value."""


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else 0.0


def reply_rate(series: tuple[SecondSample, ...], elapsed_s: float) -> ReplyRate | None:
    """Reply-rate statistics over the full seconds (missing seconds count as 0 replies)."""
    full_seconds = math.floor(elapsed_s + _FULL_SECOND_SLACK_S)
    if full_seconds < 1:
        return None
    by_second = {sample.second: sample.complete for sample in series}
    rates = [float(by_second.get(second, 0)) for second in range(full_seconds)]
    return ReplyRate(
        min=min(rates),
        avg=statistics.fmean(rates),
        max=max(rates),
        stddev=statistics.stdev(rates) if len(rates) > 1 else 0.0,
        samples=len(rates),
    )


# ---------------------------------------------------------------------------------------------
# The result


@dataclass(frozen=True)
class BenchResult:
    """Everything a bench measured plus what it was run with. Build one with
    :meth:`from_engine` (fresh run) or :meth:`from_json` (saved file); ``derived`` holds the
    computed figures."""

    tool_version: str
    started_at: str
    interrupted: bool
    options: RunOptions
    elapsed_s: float
    warmup: WarmupCounts
    requests: RequestCounts
    bytes: ByteCounts
    connections_opened: int
    status: Mapping[str, int]
    errors: ErrorCounts
    latency: Latency
    phases: Phases
    series: tuple[SecondSample, ...]
    client_cpu: ClientCpu
    histogram: str
    server: ServerLoadReport | None = None
    """The server's processes sampled during the run (``--server-pid`` and co.), else None."""

    @cached_property
    def derived(self) -> Derived:
        complete, elapsed = self.requests.complete, self.elapsed_s
        attempted = complete + self.requests.failed + self.warmup.complete + self.warmup.failed
        cpu_s = self.client_cpu.user_s + self.client_cpu.sys_s
        server = None if self.server is None else per_request(self.server, attempted)
        return Derived(
            requests_per_s=_ratio(complete, elapsed),
            time_per_request_ms=(
                None
                if complete == 0 or self.options.load.is_open
                else self.options.load.connections * elapsed * 1000 / complete
            ),
            time_per_request_all_ms=None if complete == 0 else elapsed * 1000 / complete,
            received_kib_per_s=_ratio(self.bytes.total / 1024, elapsed),
            sent_kib_per_s=_ratio(self.bytes.sent / 1024, elapsed),
            reply_rate=reply_rate(self.series, elapsed),
            client_cpu_us_per_request=None if attempted == 0 else cpu_s * 1e6 / attempted,
            server_cpu_us_per_request=None if server is None else server.server_cpu_us_per_request,
            server_private_growth_bytes_per_request=(
                None if server is None else server.private_growth_bytes_per_request
            ),
        )

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_engine(
        cls,
        engine_json: str,
        *,
        options: RunOptions,
        started_at: str,
        interrupted: bool,
        tool_version: str,
        server: ServerLoadReport | None = None,
    ) -> BenchResult:
        """Combine the engine's result JSON with the run's metadata (and the server sampling).
        Raises :class:`MalformedResultError` if the engine's JSON does not follow the contract."""
        return cls(
            tool_version=tool_version,
            started_at=started_at,
            interrupted=interrupted,
            options=options,
            server=server,
            **_measurements(_decode(engine_json)),
        )

    @classmethod
    def from_json(cls, text: str) -> BenchResult:
        """Read what :meth:`to_json` wrote (``derived`` is recomputed, not read)."""
        data = _decode(text)
        schema = data.get("schema")
        if schema != SCHEMA:
            raise MalformedResultError(f"'schema' is {schema!r}, expected {SCHEMA!r}")
        return cls(
            tool_version=_READ.as_str(_READ.get(data, "tool_version"), "tool_version"),
            started_at=_READ.as_str(_READ.get(data, "started_at"), "started_at"),
            interrupted=_READ.as_bool(_READ.get(data, "interrupted"), "interrupted"),
            options=_run_options(_READ.get(data, "options"), "options"),
            server=_server(data.get("server")),
            **_measurements(data),
        )

    # -- output ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict :meth:`to_json` writes (see the schema)."""
        plain = asdict(self)
        connections_opened = plain.pop("connections_opened")
        plain["server"] = None if self.server is None else self.server.to_dict()
        plain["options"]["load"]["stages"] = _stages_as_lists(self.options.load.stages)
        plain["options"]["http"]["headers"] = [list(pair) for pair in self.options.http.headers]
        plain["options"]["targets"] = list(plain["options"]["targets"])
        return {
            "schema": SCHEMA,
            **plain,
            "connections": {"opened": connections_opened},
            "series": [asdict(sample) for sample in self.series],
            "derived": asdict(self.derived),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False) + "\n"


def _record_of(cls: type[Any]) -> Callable[[object, str], Any]:
    return lambda value, key: _READ.record(cls, value, key)


def _histograms(cls: type[Any]) -> Callable[[object, str], Any]:
    """Converter for a group of histograms (:class:`Latency`, :class:`Phases`)."""
    converters: dict[str, Any] = dict.fromkeys((field.name for field in fields(cls)), Histogram.from_dict)
    return lambda value, key: _READ.record(cls, value, key, **converters)


def _status(value: object, key: str) -> dict[str, int]:
    return {code: _READ.as_int(count, f"{key}.{code}") for code, count in sorted(_READ.as_dict(value, key).items())}


def _opened(value: object, key: str) -> int:
    return _READ.as_int(_READ.get(_READ.as_dict(value, key), "opened"), f"{key}.opened")


_MEASUREMENTS: dict[str, tuple[str, Callable[[object, str], Any]]] = {
    # BenchResult field: (engine JSON key, converter)
    "elapsed_s": ("elapsed_s", _READ.as_float),
    "warmup": ("warmup", _record_of(WarmupCounts)),
    "requests": ("requests", _record_of(RequestCounts)),
    "bytes": ("bytes", _record_of(ByteCounts)),
    "connections_opened": ("connections", _opened),
    "status": ("status", _status),
    "errors": ("errors", _record_of(ErrorCounts)),
    "latency": ("latency", _histograms(Latency)),
    "phases": ("phases", _histograms(Phases)),
    "series": ("series", _READ.list_of(_record_of(SecondSample))),
    "client_cpu": ("client_cpu", _record_of(ClientCpu)),
    "histogram": ("histogram", _READ.as_str),
}


def _measurements(data: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's measurements as :class:`BenchResult` fields."""
    return {field: convert(_READ.get(data, key), key) for field, (key, convert) in _MEASUREMENTS.items()}


def _server(value: object) -> ServerLoadReport | None:
    if value is None:
        return None
    try:
        return ServerLoadReport.from_dict(_READ.as_dict(value, "server"))
    except MalformedReportError as error:
        raise MalformedResultError(f"server: {error}") from None


def _stages_as_lists(stages: tuple[Stage, ...] | None) -> list[list[float]] | None:
    if stages is None:
        return None
    return [[stage.duration_s, stage.start_rate, stage.end_rate] for stage in stages]


def _decode(text: str) -> Mapping[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedResultError(f"not valid JSON ({error.msg} at line {error.lineno})") from None
    return _READ.as_dict(data, "the top level")


def load_result(path: str | Path) -> BenchResult:
    """Read a result JSON written by ``pounder bench --json`` (or :meth:`BenchResult.to_json`).

    Raises :class:`~pounder.UsageError` if the file is missing or is not a pounder bench result.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"result file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read result file {path}: {error}") from None
    try:
        return BenchResult.from_json(text)
    except MalformedResultError as error:
        raise UsageError(f"{path} is not a pounder bench result: {error}") from None
