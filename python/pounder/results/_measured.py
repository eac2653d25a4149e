"""The engine's measurements in a bench result: typed, frozen records (counts, histograms, the
per-second series, the client's CPU), read from the engine's JSON (or a saved result) with
:data:`READ`, which names the offending key of a malformation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from pounder._errors import PounderError, public
from pounder._records import Reader

PERCENTILES: tuple[str, ...] = ("50", "66", "75", "80", "90", "95", "98", "99", "99.9", "100")
ERROR_CATEGORIES: tuple[str, ...] = (
    "refused", "reset", "timeout", "bad_response", "other", "aborted", "tls_certificate", "tls_handshake",
)  # fmt: skip


class MalformedResultError(PounderError):
    """A result JSON (from the engine or a file) does not have the expected shape."""


READ = Reader(MalformedResultError)


@public
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
        histogram: Histogram = READ.record(cls, value, key, percentiles=_percentiles)
        return histogram


def _percentiles(value: object, key: str) -> dict[str, int]:
    data = READ.as_dict(value, key)
    return {percent: READ.as_int(READ.get(data, percent), f"{key}.{percent}") for percent in PERCENTILES}


EMPTY_HISTOGRAM = Histogram(count=0, min_us=0, max_us=0, mean_us=0.0, stdev_us=0.0,
                            percentiles=dict.fromkeys(PERCENTILES, 0))
"""No sample (a result from before a histogram existed)."""


@public
@dataclass(frozen=True)
class TlsCounts:
    """https://: TLS handshakes made by the measured requests that completed (one per connection
    they opened), and of them those that resumed an earlier session (an abbreviated handshake)."""

    handshakes: int
    resumed: int


@public
@dataclass(frozen=True)
class IoInfo:
    """The engine's I/O path: ``path`` "uring" (io_uring) or "epoll" ("mixed" in a merged result
    whose agents took different ones) and the ``reason`` in words ("asked for", "auto: the kernel
    (6.8.0) allows it", "auto: HTTPS runs on the epoll path only")."""

    path: Literal["uring", "epoll", "mixed"]
    reason: str

    @property
    def name(self) -> str:
        """The path's name: "io_uring", "epoll" or "mixed"."""
        return IO_PATH_NAMES[self.path]

    def describe(self) -> str:
        """In words: "io_uring (auto: the kernel (6.8.0) allows it)"."""
        return f"{self.name} ({self.reason})"


IO_PATH_NAMES = {"uring": "io_uring", "epoll": "epoll", "mixed": "mixed"}


def read_io(value: object, key: str) -> IoInfo | None:
    """A result's ``io`` (None: a result from before the io_uring path)."""
    if value is None:
        return None
    info: IoInfo = READ.record(IoInfo, value, key, strict=True, path=READ.choice(*IO_PATH_NAMES),
                               reason=READ.as_str)  # fmt: skip
    return info


@public
@dataclass(frozen=True)
class WarmupCounts:
    """The unmeasured warmup phase."""

    complete: int
    failed: int
    elapsed_s: float


@public
@dataclass(frozen=True)
class RequestCounts:
    """Measured requests. ``complete + failed`` = requests attempted; ``non_2xx`` ⊂ complete;
    ``unsent`` and ``late`` only happen in open loop."""

    complete: int
    failed: int
    non_2xx: int
    unsent: int
    late: int


@public
@dataclass(frozen=True)
class ByteCounts:
    """Bytes received (``total``: headers + bodies; ``body``: bodies only) and ``sent``."""

    total: int
    body: int
    sent: int


@public
@dataclass(frozen=True)
class ErrorCounts:
    """Failed requests by category; each failed request has exactly one."""

    refused: int
    reset: int
    timeout: int
    bad_response: int
    other: int
    aborted: int
    tls_certificate: int = 0
    """https://: the server's certificate was not trusted, or the client's was refused."""
    tls_handshake: int = 0
    """https://: any other failed TLS handshake (no TLS server there, no common protocol...)."""

    def nonzero(self) -> dict[str, int]:
        return {name: count for name, count in asdict(self).items() if count}


@public
@dataclass(frozen=True)
class Latency:
    """``corrected``: from the intended send time; ``uncorrected``: from the actual start;
    ``schedule_lag``: actual start - intended start (open loop)."""

    corrected: Histogram
    uncorrected: Histogram
    schedule_lag: Histogram


@public
@dataclass(frozen=True)
class Phases:
    """Per-request phases like ab's "Connection Times"."""

    connect: Histogram
    waiting: Histogram
    processing: Histogram
    total: Histogram
    tls: Histogram = EMPTY_HISTOGRAM
    """https://: the TLS handshakes (of the requests that opened a connection), after ``connect``."""


@public
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
    errors: Mapping[str, int] = field(default_factory=dict)
    """Of ``failed``, by category (only those that happened; a result from before them: none)."""

    def to_dict(self) -> dict[str, Any]:
        """As the engine writes it: ``errors`` only when a request of the second failed."""
        data = asdict(self)
        if not self.errors:
            del data["errors"]
        return data


@public
@dataclass(frozen=True)
class ClientCpu:
    """CPU time of the engine threads, seconds."""

    user_s: float
    sys_s: float



def _record_of(cls: type[Any]) -> Callable[[object, str], Any]:
    return lambda value, key: READ.record(cls, value, key)


def _histograms(cls: type[Any], optional: tuple[str, ...] = ()) -> Callable[[object, str], Any]:
    """Converter for a group of histograms (:class:`Latency`, :class:`Phases`); those ``optional``
    are empty when missing (a result from before them)."""
    converters: dict[str, Any] = dict.fromkeys((field.name for field in fields(cls)), Histogram.from_dict)
    for name in optional:
        converters[name] = lambda value, key: EMPTY_HISTOGRAM if value is None else Histogram.from_dict(value, key)
    return lambda value, key: READ.record(cls, value, key, **converters)


def _count_or_zero(value: object, key: str) -> int:
    """A count that a result from before it does not have: 0 then."""
    return 0 if value is None else READ.as_int(value, key)


def _status(value: object, key: str) -> dict[str, int]:
    return {code: READ.as_int(count, f"{key}.{code}") for code, count in sorted(READ.as_dict(value, key).items())}


def _categories(value: object, key: str) -> dict[str, int]:
    """A second's failures by category (none when missing: a result from before them)."""
    if value is None:
        return {}
    counts = _status(value, key)
    unknown = sorted(set(counts) - {f.name for f in fields(ErrorCounts)})
    if unknown:
        raise READ.error(f"'{key}' has no category {unknown[0]!r}")
    return counts


def _opened(value: object, key: str) -> int:
    return READ.as_int(READ.get(READ.as_dict(value, key), "opened"), f"{key}.opened")


_MEASUREMENTS: dict[str, tuple[str, Callable[[object, str], Any]]] = {
    # BenchResult field: (engine JSON key, converter)
    "elapsed_s": ("elapsed_s", READ.as_float),
    "warmup": ("warmup", _record_of(WarmupCounts)),
    "requests": ("requests", _record_of(RequestCounts)),
    "bytes": ("bytes", _record_of(ByteCounts)),
    "connections_opened": ("connections", _opened),
    "status": ("status", _status),
    "errors": ("errors", lambda value, key: READ.record(ErrorCounts, value, key, tls_certificate=_count_or_zero,
                                                         tls_handshake=_count_or_zero)),
    "latency": ("latency", _histograms(Latency)),
    "phases": ("phases", _histograms(Phases, optional=("tls",))),
    "series": ("series", READ.list_of(lambda value, key: READ.record(SecondSample, value, key, errors=_categories))),
    "client_cpu": ("client_cpu", _record_of(ClientCpu)),
    "histogram": ("histogram", READ.as_str),
}


def measurements(data: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's measurements as :class:`BenchResult` fields."""
    found = {field: convert(READ.get(data, key), key) for field, (key, convert) in _MEASUREMENTS.items()}
    tls = data.get("tls")  # only when a target was https://
    return {**found, "tls": None if tls is None else READ.record(TlsCounts, tls, "tls"),
            "io": read_io(data.get("io"), "io")}  # fmt: skip


MAX_FAILED = 0.01
"""A trial counts only when at most this fraction of its attempted requests (complete + failed) failed."""

@public
def clean_trial(complete: int, failed: int, max_failed: float = MAX_FAILED) -> bool:
    """Whether a trial's requests went well enough for its figures to mean the server's: at least
    one request completed and ``failed`` is at most ``max_failed`` of those attempted
    (``complete + failed``). Non-2xx answers are answers, not failures."""
    if complete < 0 or failed < 0:
        raise ValueError(f"request counts must not be negative, got complete={complete}, failed={failed}")
    if not 0.0 <= max_failed < 1.0:
        raise ValueError(f"max_failed must be at least 0 and less than 1, got {max_failed}")
    return complete > 0 and failed <= max_failed * (complete + failed)
