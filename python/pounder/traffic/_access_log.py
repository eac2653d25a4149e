"""The user's real traffic from a web server's access log (:func:`read_access_log`): the mix of
requests to replay, its busiest second and minute, and the service times the server logged. The
lines (or a HAR's entries) are read and counted in ``_log_lines``, which says which formats.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

from pounder._errors import UsageError, check_flag, check_path, clip, public
from pounder._files import write_atomic
from pounder._units import count_text, number
from pounder.results import other_hosts
from pounder.traffic._log_lines import SKIP_REASONS, UNIT_SECONDS, Tally, TimeUnit, read_tally
from pounder.traffic._url import parse_url

_TIME_FIELDS = {"us": "%D (microseconds)", "ms": "milliseconds", "s": "seconds", "float": "$request_time (seconds)"}


@public
@dataclass(frozen=True)
class Peak:
    """The busiest stretch of the log: its ``start`` and the requests in it (``count``)."""

    start: datetime
    count: int


@public
@dataclass(frozen=True)
class ServiceTime:
    """Service times the server logged, in seconds, over the requests in the mix that carry one
    (``count`` of them); ``field``: what they were read from. Percentiles by nearest rank."""

    field: str
    count: int
    mean_s: float
    p50_s: float
    p90_s: float
    p99_s: float
    max_s: float


@public
@dataclass(frozen=True)
class AccessLog:
    """What :func:`read_access_log` found. ``lines``: the non-blank lines read; ``used``: the
    requests in the mix; ``skipped``: the other lines by reason (:data:`SKIP_REASONS`, those that
    occurred), so ``lines == used + sum(skipped.values())``. Every status is kept (the server saw
    those requests too). ``targets``: the mix, ``(weight, method, path_and_query)`` with weight
    the number of requests, most frequent first; ``dropped_targets``: distinct requests left out
    beyond ``max_targets`` (their requests are ``skipped["max_targets"]``).

    ``first``, ``last``, ``mean_rate``, ``peak_second``, ``peak_minute`` and ``service_time`` are
    taken over the requests that passed the method and static filters (``max_targets`` only
    shortens the mix). ``mean_rate`` is those requests over the span from the first to the end of
    the last logged second; ``peak_minute`` is the busiest 60 s window starting on a whole logged
    second (not a calendar minute). Times are those the server logged, with its UTC offset."""

    path: str
    lines: int
    used: int
    skipped: Mapping[str, int]
    targets: tuple[tuple[int, str, str], ...]
    dropped_targets: int
    first: datetime
    last: datetime
    mean_rate: float
    peak_second: Peak
    peak_minute: Peak
    service_time: ServiceTime | None
    har: bool = False
    """The file was a HAR (``lines``: its entries), not an access log."""
    origin: str | None = None
    """A HAR's main origin (``scheme://host[:port]``): only its requests are in the mix."""

    @property
    def span_s(self) -> float:
        """Seconds from the first logged second to the end of the last."""
        return (self.last - self.first).total_seconds() + 1

    def url_lines(self, base_url: str) -> str:
        """The mix as a URL file for ``pounder bench -f``: ``WEIGHT METHOD BASE/PATH`` lines."""
        return url_lines(self.targets, base_url)

    def describe(self, top: int = 5) -> list[str]:
        """A few lines for a human: the requests, their span and rate, the busiest second and
        minute, the ``top`` requests of the mix with their shares, the service times."""
        skipped = ", ".join(f"{reason.replace('_', ' ')} {count:,}" for reason, count in self.skipped.items())
        lines = [
            f"{'HAR file' if self.har else 'Access log'} {self.path}: "
            f"{count_text(self.lines, 'entry', 'entries') if self.har else count_text(self.lines, 'line')}, "
            f"{count_text(self.used, 'request')} in the mix"
            + (f" (skipped: {skipped})" if skipped else ""),
            f"Span {self.first.isoformat()} to {self.last.isoformat()} ({number(self.span_s)} s), "
            f"mean {number(self.mean_rate, 1)} req/s",
            f"Busiest second {self.peak_second.start.isoformat()}: {count_text(self.peak_second.count, 'request')}",
            # a 60 s window over a shorter log would divide its requests by time it does not cover
            "Busiest minute: not shown (the log spans less than a minute)" if self.span_s < 60 else
            f"Busiest minute from {self.peak_minute.start.isoformat()}: "
            f"{count_text(self.peak_minute.count, 'request')} "
            f"({number(self.peak_minute.count / 60, 1)} req/s)",
            f"Mix: {count_text(len(self.targets), 'distinct request')}"
            + (f" ({self.dropped_targets:,} more left out)" if self.dropped_targets else ""),
        ]
        if self.origin is not None and self.skipped.get("other_host"):
            lines.insert(1, other_hosts(self.origin, self.skipped["other_host"]))
        total = sum(weight for weight, _, _ in self.targets)
        lines += [f"  {100 * weight / total:5.1f} %  {method} {clip(path)}"
                  for weight, method, path in self.targets[:top]]  # fmt: skip
        times = self.service_time
        if times is not None:
            ms = [number(1000 * value, 1) for value in (times.p50_s, times.p90_s, times.p99_s, times.max_s)]
            lines.append(f"Service time ({times.field}, {count_text(times.count, 'request')}): p50 {ms[0]} ms, "
                         f"p90 {ms[1]} ms, "
                         f"p99 {ms[2]} ms, max {ms[3]} ms")
        return lines


@public
def base_of(base_url: str) -> str:
    """``http://host:port`` (``https://`` for an https base) from a base URL, which must have no path
    (but ``/``), query or fragment."""
    parsed = parse_url(base_url, "base URL: ")
    parts = urlsplit(base_url.strip())
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise UsageError(f"the base URL {base_url!r} must be scheme://host[:port] only: the paths come from the "
                         "access log")
    return f"{'https' if parsed.tls else 'http'}://{parsed.host_header}"


def url_lines(targets: Iterable[tuple[int, str, str]], base_url: str) -> str:
    """``(weight, method, path_and_query)`` targets as URL file lines under ``base_url``."""
    base = base_of(base_url)
    return "".join(f"{weight} {method} {base}{path}\n" for weight, method, path in targets)


@public
def write_url_file(mix: AccessLog | Iterable[tuple[int, str, str]], base_url: str, path: str | Path) -> None:
    """Write an access log's mix (or ``(weight, method, path_and_query)`` targets) as a URL file
    for ``pounder bench -f`` (``WEIGHT METHOD http://host:port/path`` lines), atomically.
    ``base_url``: ``http://host:port``, no path."""
    check_path(path, "path")
    targets = mix.targets if isinstance(mix, AccessLog) else tuple(mix)
    write_atomic(path, url_lines(targets, base_url), "URL file")


def _peak_window(seconds: Mapping[int, int], width: int) -> tuple[int, int]:
    """The busiest ``width``-second window starting on a logged second: (start, count); the
    earliest of equal ones."""
    ordered = sorted(seconds.items())
    best_start, best = ordered[0][0], 0
    total, low = 0, 0
    for start_index, (start, _) in enumerate(ordered):
        while low < len(ordered) and ordered[low][0] < start + width:
            total += ordered[low][1]
            low += 1
        if total > best:
            best_start, best = start, total
        total -= ordered[start_index][1]
    return best_start, best


def _percentile(ordered: Sequence[float], share: float) -> float:
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _service_summary(tally: Tally) -> ServiceTime | None:
    if not tally.times:
        return None
    ordered = sorted(tally.times)
    kinds = sorted(tally.time_kinds)
    name = " and ".join(_TIME_FIELDS[kind] for kind in kinds)
    return ServiceTime(field=name, count=len(ordered), mean_s=sum(ordered) / len(ordered),
                       p50_s=_percentile(ordered, 0.5), p90_s=_percentile(ordered, 0.9),
                       p99_s=_percentile(ordered, 0.99), max_s=ordered[-1])  # fmt: skip


@public
def read_access_log(
    path: str | Path,
    *,
    methods: str | Sequence[str] = ("GET", "HEAD"),
    exclude_static: bool = False,
    max_targets: int = 10_000,
    time_unit: TimeUnit = "auto",
) -> AccessLog:
    """Read an Apache or nginx access log (common or combined format, gzip or not) into the mix
    of requests to replay and what the server went through: see :class:`AccessLog`.

    ``methods``: the methods kept (``"GET,HEAD"`` or a list); GET and HEAD by default, since a
    POST replayed without the body it had (the log has none) is not the request the server saw.
    ``exclude_static``: drop paths ending in one of :data:`STATIC_EXTENSIONS` (which a front server
    or a CDN usually serves). ``max_targets``: the mix keeps the most frequent distinct requests
    (method, path and query) up to this many. ``time_unit``: how a trailing service time is read:
    ``"auto"`` (a whole number is Apache's ``%D`` in microseconds, a decimal nginx's
    ``$request_time`` in seconds) or ``"us"``, ``"ms"``, ``"s"`` (Apache's ``%T`` is ``"s"``).

    A line that is neither format is counted as malformed; a file with no line of either format,
    or with no request left after the filters, is a :class:`~pounder.UsageError`, as is a file
    that is not a regular file, is larger than 1 GiB or holds more than 4 GiB decompressed."""
    check_path(path, "path")
    check_flag(exclude_static, "exclude_static")
    if isinstance(max_targets, bool) or not isinstance(max_targets, int) or max_targets < 1:
        raise UsageError(f"max_targets must be a whole number >= 1, got {max_targets!r}")
    if time_unit not in ("auto", *UNIT_SECONDS):
        raise UsageError(f"time_unit must be 'auto', 'us', 'ms' or 's', got {time_unit!r}")
    where = Path(path)
    tally = read_tally(where, methods, exclude_static, time_unit)
    ranked = sorted(tally.mix.items(), key=lambda item: (-item[1], item[0]))
    kept, dropped = ranked[:max_targets], ranked[max_targets:]
    if dropped:
        tally.skipped["max_targets"] += sum(count for _, count in dropped)
    offset = tally.offset or timezone.utc
    first, last = min(tally.seconds), max(tally.seconds)
    second = max(sorted(tally.seconds.items()), key=lambda item: item[1])
    minute = _peak_window(tally.seconds, 60)
    considered = sum(tally.seconds.values())

    def moment(unix: int) -> datetime:
        return datetime.fromtimestamp(unix, offset)

    return AccessLog(
        path=os.fspath(path),
        lines=tally.lines,
        used=sum(count for _, count in kept),
        skipped={reason: tally.skipped[reason] for reason in SKIP_REASONS if tally.skipped[reason]},
        targets=tuple((count, method, target) for (method, target), count in kept),
        dropped_targets=len(dropped),
        first=moment(first),
        last=moment(last),
        mean_rate=considered / (last - first + 1),
        peak_second=Peak(moment(second[0]), second[1]),
        peak_minute=Peak(moment(minute[0]), minute[1]),
        service_time=_service_summary(tally),
        har=tally.har,
        origin=tally.origin,
    )
