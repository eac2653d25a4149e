"""What :class:`~pounder.procs.ServerSampler` measured during a bench (:class:`ServerLoadReport`,
schema ``pounder/server-load/1``), read back from JSON, and its figures per request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from pounder._errors import PounderError, UsageError, check_instance, public
from pounder._records import Reader
from pounder._version import __version__
from pounder.procs._status import StatusPoint

LOAD_SCHEMA = "pounder/server-load/2"
_LOAD_SCHEMA_1 = "pounder/server-load/1"
"""Read too: the same layout without ``root_exited`` (read as False)."""
SERIES_COLUMNS: tuple[str, ...] = ("t", "pid", "rss", "uss", "shared", "pss")
STATUS_COLUMNS: tuple[str, ...] = ("t", "busy_workers", "idle_workers", "total_accesses")


class MalformedReportError(PounderError):
    """A server-load report dict does not have the expected shape."""


@public
@dataclass(frozen=True)
class MemPoint:
    """One process's memory at one sample, ``t`` seconds after the first sample (bytes)."""

    t: float
    pid: int
    rss: int
    uss: int
    shared: int
    pss: int


@public
@dataclass(frozen=True)
class ChildSummary:
    """One child (direct child of the root) over the window.

    ``spawned``: first seen after the first sample; ``exited``: gone (or a zombie) at the last
    sample. ``cpu_s``: its own CPU from the first sample (from its fork if spawned) to when it was
    last seen. ``private_growth_bytes`` = last USS - first USS as read (None if read once or
    never); the ``max_``/``min_`` fields are over the samples where it was read."""

    pid: int
    first_t: float
    last_t: float
    spawned: bool
    exited: bool
    cpu_s: float
    first_uss: int | None
    last_uss: int | None
    private_growth_bytes: int | None
    max_rss: int | None
    max_uss: int | None
    min_shared: int | None


@public
@dataclass(frozen=True)
class PerRequest:
    """A report's figures divided by the requests that completed during the sampling (None for 0:
    a request that failed is not one the server served, so it is never in the divisor)."""

    requests: int
    server_cpu_us_per_request: float | None
    private_growth_bytes_per_request: float | None


@public
@dataclass(frozen=True)
class ServerLoadReport:
    """What :class:`ServerSampler` measured. Times in seconds, sizes in bytes; ``t`` values are
    seconds after the first sample. "Children" are the root's direct children.

    ``private_growth_total`` sums ``last - first`` USS over the children read at both the first
    and the last sample (a child recycled during the run starts again from its new size and is
    not in the total); None when no child was present at both ends.
    """

    server_pid: int
    started_at: str
    interval_s: float
    duration_s: float
    samples: int
    sampler_cpu_s: float
    server_cpu_s: float
    server_cpu_reaped_s: float
    children_seen: int
    children_spawned: int
    children_exited: int
    max_child_rss: int | None
    max_child_uss: int | None
    min_child_shared: int | None
    private_growth_total: int | None
    children: tuple[ChildSummary, ...]
    series: tuple[MemPoint, ...]
    status_url: str | None
    status: tuple[StatusPoint, ...]
    status_failures: int
    skipped_reads: int
    messages: tuple[str, ...]
    root_exited: bool = False
    """The server's root process exited before the sampling ended: the CPU and memory after the
    last sample before that are unknown, so there are no per-request figures."""
    serves_url: bool | None = None
    """Whether a process of the server listened on the address the load went to (None: not
    known, e.g. a Unix socket). False: the requests counted are not the ones it served (another
    server, or a backend behind a proxy), so there are no per-request figures."""
    machine_cpu_s: float | None = None
    """Busy CPU time of the whole machine (all CPUs: user + nice + system + irq + softirq + steal
    from ``/proc/stat``) over the same window as ``server_cpu_s``; None when not measured."""
    machine_cpus: int | None = None
    """The number of CPUs ``/proc/stat`` lists: ``machine_cpu_s / duration_s`` is out of this many."""
    own_cpu_s: float | None = None
    """CPU time (user + system, all threads) of pounder's own process over the window."""
    other_cpu_s: float | None = None
    """What the other processes used: ``machine_cpu_s - server_cpu_s - own_cpu_s - front_cpu_s``,
    at least 0."""
    front_cpu_s: float | None = None
    """CPU time of the front that passes the load to the server (php-fpm's nginx), counted apart:
    neither the server's nor another's; None without a front."""

    @property
    def other_cores(self) -> float | None:
        """``other_cpu_s / duration_s``: how many CPUs the other processes kept busy on average;
        None when not measured or over no time."""
        if self.other_cpu_s is None or self.duration_s <= 0:
            return None
        return self.other_cpu_s / self.duration_s

    @property
    def private_growth_bytes(self) -> dict[int, int]:
        """pid → last - first USS, for each child read at least twice."""
        return {c.pid: c.private_growth_bytes for c in self.children if c.private_growth_bytes is not None}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``python/pounder/schemas/server-load.schema.json``); the time series are
        stored as column names plus rows of numbers."""
        plain = {f.name: getattr(self, f.name) for f in fields(self)}
        plain["children"] = [asdict(child) for child in self.children]
        plain["series"] = {"columns": list(SERIES_COLUMNS), "rows": [list(_row(p)) for p in self.series]}
        plain["status"] = {"columns": list(STATUS_COLUMNS), "rows": [list(_row(p)) for p in self.status]}
        plain["messages"] = list(self.messages)
        return {"schema": LOAD_SCHEMA, "tool_version": __version__, **plain}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ServerLoadReport:
        """Read back what :meth:`to_dict` wrote. Raises :class:`MalformedReportError`."""
        data = _READ.as_dict(data, "the report")
        if data.get("schema") == _LOAD_SCHEMA_1 and "root_exited" not in data:
            data = {**data, "root_exited": False}
        elif data.get("schema") != LOAD_SCHEMA:
            raise MalformedReportError(f"'schema' is {data.get('schema')!r}, expected {LOAD_SCHEMA!r}")
        missing = {name: None for name in _ADDED_LATER if name not in data}  # absent before: not measured
        if missing:
            data = {**data, **missing}
        return _READ.record(  # type: ignore[no-any-return]
            cls, data, "report", strict=True, children=_children, series=_series, status=_status, messages=_messages
        )


_ADDED_LATER = ("serves_url", "machine_cpu_s", "machine_cpus", "own_cpu_s", "other_cpu_s", "front_cpu_s")
"""Fields of version 2 that older files lack (read as None): ``serves_url`` was not checked by
pounder 0.1, the machine's CPU was not measured."""


def _row(point: MemPoint | StatusPoint) -> tuple[Any, ...]:
    return tuple(getattr(point, f.name) for f in fields(point))


@public
def per_request(report: ServerLoadReport, requests: int) -> PerRequest:
    """Server CPU (microseconds) and pool private-memory growth (bytes) per completed request
    (``requests``: those that completed while the sampler ran, warm-up included). None when no
    request completed, when the server's root exited during the sampling (``root_exited``: what
    the server used after the last sample is unknown, the requests it served then are not), or
    when it does not listen where the requests went (``serves_url`` False)."""
    check_instance(report, ServerLoadReport, "per_request: report")
    if isinstance(requests, bool) or not isinstance(requests, int) or requests < 0:
        raise UsageError(f"requests must be a whole number >= 0, got {requests!r}")
    if requests == 0 or report.root_exited or report.serves_url is False:
        return PerRequest(requests, None, None)
    growth = report.private_growth_total
    return PerRequest(
        requests=requests,
        server_cpu_us_per_request=report.server_cpu_s * 1e6 / requests,
        private_growth_bytes_per_request=None if growth is None else growth / requests,
    )


_READ = Reader(MalformedReportError)
_children = _READ.list_of(lambda value, key: _READ.record(ChildSummary, value, key))


def _series(value: object, key: str) -> tuple[MemPoint, ...]:
    return _READ.table(MemPoint, SERIES_COLUMNS, value, key)


def _status(value: object, key: str) -> tuple[StatusPoint, ...]:
    return _READ.table(StatusPoint, STATUS_COLUMNS, value, key)


def _messages(value: object, key: str) -> tuple[str, ...]:
    return tuple(_READ.as_str(item, key) for item in _READ.as_list(value, key))
