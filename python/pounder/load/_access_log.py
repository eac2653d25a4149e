"""The user's real traffic from a web server's access log (:func:`read_access_log`): the mix of
requests to replay, its busiest second and minute, and the service times the server logged.

Formats, told apart line by line: Apache/nginx **common** (``%h %l %u %t "%r" %>s %b``) and
**combined** (common + ``"%{Referer}i" "%{User-Agent}i"``), each optionally followed by a service
time: a whole number is Apache's ``%D`` (microseconds), a number with a decimal point nginx's
``$request_time`` (seconds); ``time_unit`` says otherwise (Apache's ``%T``, whole seconds, is
``time_unit="s"``). A file compressed with gzip is read as such (told by its first bytes). The
time may carry a fraction of a second (``[10/Oct/2000:13:55:36.123 +0000]``, what Apache's
``%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t`` writes). A HAR file (``_har``, a JSON object with
``log.entries``) is read too, told by its content.
"""

from __future__ import annotations

import gzip
import math
import os
import re
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Literal, cast
from urllib.parse import urlsplit

from pounder._errors import UsageError, check_flag, check_path, check_strings, clip, public
from pounder._files import check_input_file, write_atomic
from pounder._units import GIB, KIB, count_text, number
from pounder.load._har import HAR_LIMIT, JSON_HEAD, looks_like_har, main_origin, read_har
from pounder.load._parse import LINE_METHODS
from pounder.load._url import parse_url

FILE_LIMIT = 1 * GIB
"""The largest access log file (compressed or not)."""
READ_LIMIT = 4 * GIB
"""The most bytes read from an access log once decompressed."""
LINE_LIMIT = 64 * KIB
"""A longer line is malformed."""
STATIC_EXTENSIONS = frozenset(
    "css js mjs map png jpg jpeg gif ico svg webp avif bmp tif tiff woff woff2 ttf otf eot "
    "mp3 mp4 webm ogg wav".split()
)
"""What ``exclude_static`` drops: paths ending in one of these extensions (any case)."""
SKIP_REASONS = ("malformed", "request", "other_host", "method", "static", "max_targets")
"""The reasons a line is not in the mix, in :attr:`AccessLog.skipped`: not a log line of either
format; a request line that names no path (``"-"`` of a connection closed before its request,
``OPTIONS *``; a HAR's ``data:`` or ``blob:`` URL); a HAR's request to another origin than its
main one (a CDN, analytics: see ``_har``); a method not kept; a static file; beyond
``max_targets``."""
BODY_LESS = frozenset({"GET", "HEAD"})
"""The methods a HAR's mix takes: the mix sends no recorded body or header (``--replay`` does)."""
TimeUnit = Literal["auto", "us", "ms", "s"]
_UNIT_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
_TIME_FIELDS = {"us": "%D (microseconds)", "ms": "milliseconds", "s": "seconds", "float": "$request_time (seconds)"}

_QUOTED = r'"[^"\\]*(?:\\.[^"\\]*)*"'
"""A quoted field, with backslash escapes (Apache writes ``\"`` inside)."""
_LINE_RE = re.compile(
    rf'\S+ \S+ (?:\S+|"[^"]*") \[(?P<time>[^\]]+)\] (?P<request>{_QUOTED}) (?P<status>\d{{3}}) (?:\d+|-)'
    rf"(?: {_QUOTED} {_QUOTED})?(?: (?P<rest>.*))?"
)
_TIME_RE = re.compile(r"(\d{2})/([A-Za-z]{3})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})")
_MONTHS = {name: index for index, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}
_METHOD_RE = re.compile(r"[A-Z]+")
_NUMBER_RE = re.compile(r"\d{1,15}(?:\.\d{1,9})?")
"""A logged service time: more digits than this (a year of microseconds has 14) is no
measurement, and Python would not convert an integer of 4,300 digits."""
_FRACTION_RE = re.compile(r"[0-9]{1,9}")


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


def other_hosts(origin: str, skipped: int) -> str:
    """What a HAR's origin filter left out, in words."""
    return (f"Only the requests to {origin} (the HAR's most frequent origin): {skipped:,} to other hosts "
            "(CDNs, analytics, fonts) left out")  # fmt: skip


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


# ---------------------------------------------------------------------------------------------
# Reading


RequestKey = tuple[str, str, tuple[tuple[str, str], ...], bytes | None]
"""A distinct request of a replay: method, path and query, headers, body (a HAR's; a log has none)."""


@dataclass
class Kept:
    """Each request that passed the filters, in the file's order, for a timed replay: its time
    (Unix microseconds; a whole second's start when the log gave no fraction) and which distinct
    request it is (an index into ``distinct``'s insertion order). Compact arrays, so that a log of
    millions of requests is not millions of objects."""

    unix_us: array[int] = field(default_factory=lambda: array("q"))
    which: array[int] = field(default_factory=lambda: array("l"))
    distinct: dict[RequestKey, int] = field(default_factory=dict)
    whole_seconds: int = 0
    """Requests whose time had no fraction of a second."""

    def add(self, unix_us: int, fraction: bool, key: RequestKey) -> None:
        self.unix_us.append(unix_us)
        self.which.append(self.distinct.setdefault(key, len(self.distinct)))
        self.whole_seconds += not fraction


@dataclass
class _Tally:
    """What the lines add up to while they are read."""

    lines: int = 0
    parsed: int = 0
    first_bad: int | None = None
    skipped: Counter[str] = field(default_factory=Counter)
    mix: Counter[tuple[str, str]] = field(default_factory=Counter)
    seconds: Counter[int] = field(default_factory=Counter)
    times: list[float] = field(default_factory=list)
    time_kinds: set[str] = field(default_factory=set)
    offset: timezone | None = None
    clock: dict[str, tuple[int, timezone]] = field(default_factory=dict)
    kept: Kept | None = None
    har: bool = False
    origin: str | None = None
    methods: frozenset[str] = frozenset()
    """The methods kept."""

    def bad(self, number: int) -> None:
        self.skipped["malformed"] += 1
        if self.first_bad is None:
            self.first_bad = number


def _open(path: Path, stack: ExitStack) -> IO[bytes]:
    """The file, read through gzip when it starts with gzip's magic bytes; closed with ``stack``."""
    try:
        file: IO[bytes] = stack.enter_context(open(path, "rb"))
    except FileNotFoundError:
        raise UsageError(f"access log not found: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"access log is a directory: {path}") from None
    except OSError as error:
        raise UsageError(f"cannot read access log {path}: {error.strerror}") from None
    compressed = file.read(2) == b"\x1f\x8b"
    file.seek(0)
    return cast(IO[bytes], stack.enter_context(gzip.GzipFile(fileobj=file, mode="rb"))) if compressed else file


def _lines(path: Path) -> Iterator[bytes]:
    """The file's lines (gzip or not); a line longer than LINE_LIMIT comes back as a NUL (a
    malformed line); more than READ_LIMIT bytes is an error."""
    total = 0
    with ExitStack() as stack:
        stream = _open(path, stack)
        try:
            while line := stream.readline(LINE_LIMIT + 1):
                total += len(line)
                if len(line) > LINE_LIMIT:
                    while line and not line.endswith(b"\n"):  # the rest of the long line
                        line = stream.readline(LINE_LIMIT)
                        total += len(line)
                    line = b"\0"
                if total > READ_LIMIT:
                    raise UsageError(f"access log {path} holds more than the limit of {READ_LIMIT // GIB} GiB "
                                     "once decompressed")
                yield line
        except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError; corrupt data zlib's
            raise UsageError(f"cannot read access log {path}: {getattr(error, 'strerror', None) or error}") from None


def _clock(text: str, tally: _Tally) -> tuple[int, timezone, int | None] | None:
    """``10/Oct/2000:13:55:36 -0700`` → (Unix second, its UTC offset, None); with a fraction,
    ``10/Oct/2000:13:55:36.123 -0700``, its microseconds third; None when malformed."""
    whole, dot, rest = text.partition(".")
    fraction = None
    if dot:
        digits, _, zone = rest.partition(" ")
        if not _FRACTION_RE.fullmatch(digits):
            return None
        fraction, text = int(digits[:6].ljust(6, "0")), f"{whole} {zone}"
    known = tally.clock.get(text)
    if known is not None:
        return (*known, fraction)
    match = _TIME_RE.fullmatch(text)
    month = _MONTHS.get(match.group(2)) if match else None
    if match is None or month is None:
        return None
    day, _, year, hour, minute, second, sign, off_h, off_m = match.groups()
    offset = timezone((1 if sign == "+" else -1) * timedelta(hours=int(off_h), minutes=int(off_m)))
    try:
        moment = datetime(int(year), month, int(day), int(hour), int(minute), int(second), tzinfo=offset)
    except ValueError:
        return None
    if len(tally.clock) > 100_000:
        tally.clock.clear()
    tally.clock[text] = found = (int(moment.timestamp()), offset)
    return (*found, fraction)


def _request(text: str) -> tuple[str, str] | None:
    """``GET /a?b HTTP/1.1`` → ("GET", "/a?b"); an absolute URI becomes its path and query."""
    parts = text.split(" ")
    if len(parts) not in (2, 3) or not _METHOD_RE.fullmatch(parts[0]):
        return None
    target = parts[1]
    if target.lower().startswith(("http://", "https://")):
        split = urlsplit(target)
        target = (split.path or "/") + (f"?{split.query}" if split.query else "")
    if not target.startswith("/"):
        return None
    return parts[0], target


def _is_static(target: str) -> bool:
    path = target.split("?", 1)[0]
    name = path.rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[1].lower() in STATIC_EXTENSIONS


def _service_time(rest: str | None, unit: TimeUnit) -> tuple[float, str] | None:
    """The logged service time in seconds and its kind, from the first field after the format."""
    token = rest.split(" ", 1)[0] if rest else ""
    if not _NUMBER_RE.fullmatch(token):
        return None
    if unit != "auto":
        return float(token) * _UNIT_SECONDS[unit], unit
    if "." in token:
        return float(token), "float"
    return int(token) * 1e-6, "us"


def _read_line(raw: bytes, number: int, tally: _Tally, methods: frozenset[str], exclude_static: bool,
               unit: TimeUnit) -> None:  # fmt: skip
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        text = "\0"
    if not text.strip():
        return
    tally.lines += 1
    match = _LINE_RE.fullmatch(text)
    clock = _clock(match.group("time"), tally) if match else None
    if match is None or clock is None:
        tally.bad(number)
        return
    tally.parsed += 1
    request = _request(match.group("request")[1:-1])
    if request is None:
        tally.skipped["request"] += 1
        return
    method, target = request
    if method not in methods:
        tally.skipped["method"] += 1
        return
    if exclude_static and _is_static(target):
        tally.skipped["static"] += 1
        return
    tally.mix[(method, target)] += 1
    second, offset, fraction = clock
    tally.seconds[second] += 1
    tally.offset = tally.offset or offset
    if tally.kept is not None:
        tally.kept.add(second * 1_000_000 + (fraction or 0), fraction is not None, (method, target, (), None))
    logged = _service_time(match.group("rest"), unit)
    if logged is not None:
        tally.times.append(logged[0])
        tally.time_kinds.add(logged[1])


def _is_har(path: Path) -> bool:
    with ExitStack() as stack:
        try:
            return looks_like_har(_open(path, stack).read(JSON_HEAD))
        except (OSError, EOFError, zlib.error):
            return False  # the reading of the lines says why


def _read_har(path: Path, tally: _Tally, methods: frozenset[str], exclude_static: bool,
              first_bad: int | None = None) -> None:  # fmt: skip
    """A HAR's entries into ``tally``. ``first_bad``: the file was read as log lines first (its
    name ends in .har), none of which is one: when it is not JSON either, both are said."""
    with ExitStack() as stack:
        try:
            data = _open(path, stack).read(HAR_LIMIT + 1)
        except (OSError, EOFError, zlib.error) as error:
            raise UsageError(f"cannot read HAR file {path}: {getattr(error, 'strerror', None) or error}") from None
    try:
        entries, no_request = read_har(data, os.fspath(path))
    except UsageError as error:
        if first_bad is None or ": not valid JSON (" not in str(error):
            raise
        raise UsageError(f"HAR file {path}: neither JSON (a HAR is a JSON object with log.entries) nor an access log "
                         f"(line {first_bad} is not in the common or combined log format)") from None
    tally.har = True
    tally.lines = tally.parsed = len(entries) + no_request
    tally.skipped["request"] += no_request
    tally.origin = main_origin(entries)
    for entry in entries:
        if entry.origin != tally.origin:
            tally.skipped["other_host"] += 1
        elif entry.method not in methods:
            tally.skipped["method"] += 1
        elif exclude_static and _is_static(entry.target):
            tally.skipped["static"] += 1
        else:
            tally.mix[(entry.method, entry.target)] += 1
            tally.seconds[entry.unix_us // 1_000_000] += 1
            tally.offset = tally.offset or entry.offset
            if tally.kept is not None:
                body = None if entry.method in ("GET", "HEAD") else entry.body
                tally.kept.add(entry.unix_us, True, (entry.method, entry.target, entry.headers, body))


def read_tally(where: Path, methods: str | Sequence[str], exclude_static: bool, time_unit: TimeUnit = "auto",
               kept: Kept | None = None) -> _Tally:  # fmt: skip
    """Every line of an access log (or entry of a HAR) counted, each request that passes the
    filters added to ``kept`` too; :class:`~pounder.UsageError` when none is left."""
    chosen = _methods(methods)
    check_input_file(where, "access log", FILE_LIMIT)
    tally = _Tally(kept=kept, methods=chosen)
    har = _is_har(where)
    if not har:
        for number_, raw in enumerate(_lines(where), start=1):
            _read_line(raw, number_, tally, chosen, exclude_static, time_unit)
        # a .har no line of which is a log line: JSON after all (its start not "{"), or neither
        har = tally.lines > 0 and tally.parsed == 0 and where.name.lower().endswith(".har")
    if har:
        if kept is None and chosen - BODY_LESS:
            raise UsageError(f"HAR file {where}: the mix (--access-log) sends no recorded body or header, so it takes "
                             f"GET and HEAD only, not {', '.join(sorted(chosen - BODY_LESS))}: replay the HAR with "
                             "--replay to send them")  # fmt: skip
        first_bad, tally = tally.first_bad, _Tally(kept=kept, methods=chosen)
        _read_har(where, tally, chosen, exclude_static, first_bad)
    what = "HAR file" if tally.har else "access log"
    if tally.lines == 0:
        raise UsageError(f"{what} {where} has no {'entries' if tally.har else 'lines'}")
    if tally.parsed == 0:
        raise UsageError(f"access log {where}: no line is in the common or combined log format (line "
                         f"{tally.first_bad} is not)")
    if not tally.mix:
        raise UsageError(f"{what} {where}: no request left: {tally.parsed:,} requests, none "
                         f"{'of ' + ', '.join(sorted(chosen))}{' outside static files' if exclude_static else ''}")
    return tally


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


def _service_summary(tally: _Tally) -> ServiceTime | None:
    if not tally.times:
        return None
    ordered = sorted(tally.times)
    kinds = sorted(tally.time_kinds)
    name = " and ".join(_TIME_FIELDS[kind] for kind in kinds)
    return ServiceTime(field=name, count=len(ordered), mean_s=sum(ordered) / len(ordered),
                       p50_s=_percentile(ordered, 0.5), p90_s=_percentile(ordered, 0.9),
                       p99_s=_percentile(ordered, 0.99), max_s=ordered[-1])  # fmt: skip


def _methods(methods: str | Sequence[str]) -> frozenset[str]:
    names = check_strings(methods, "methods", single=True, expected="a list of methods such as ('GET', 'HEAD')")
    chosen = frozenset(name.strip().upper() for text in names for name in text.split(",") if name.strip())
    unknown = sorted(chosen - set(LINE_METHODS))
    if unknown or not chosen:
        raise UsageError(f"invalid log method {unknown[0] if unknown else '(none)'!r}: expected some of "
                         f"{', '.join(LINE_METHODS)}")
    return chosen


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
    if time_unit not in ("auto", *_UNIT_SECONDS):
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
