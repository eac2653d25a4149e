"""An access log's lines (or a HAR's entries) read and counted (:func:`read_tally`), for the mix
(``_access_log``) and the timed replay (``_replay``).

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
import os
import re
import zlib
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Literal, cast
from urllib.parse import urlsplit

from pounder._errors import UsageError, check_strings
from pounder._files import check_input_file
from pounder._units import GIB, KIB
from pounder.traffic._har import HAR_LIMIT, JSON_HEAD, looks_like_har, main_origin, read_har
from pounder.traffic._parse import LINE_METHODS

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
UNIT_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}

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
class Tally:
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


def _clock(text: str, tally: Tally) -> tuple[int, timezone, int | None] | None:
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
        return float(token) * UNIT_SECONDS[unit], unit
    if "." in token:
        return float(token), "float"
    return int(token) * 1e-6, "us"


def _read_line(raw: bytes, number: int, tally: Tally, methods: frozenset[str], exclude_static: bool,
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


def _read_har(path: Path, tally: Tally, methods: frozenset[str], exclude_static: bool,
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
               kept: Kept | None = None) -> Tally:  # fmt: skip
    """Every line of an access log (or entry of a HAR) counted, each request that passes the
    filters added to ``kept`` too; :class:`~pounder.UsageError` when none is left."""
    chosen = _methods(methods)
    check_input_file(where, "access log", FILE_LIMIT)
    tally = Tally(kept=kept, methods=chosen)
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
        first_bad, tally = tally.first_bad, Tally(kept=kept, methods=chosen)
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


def _methods(methods: str | Sequence[str]) -> frozenset[str]:
    names = check_strings(methods, "methods", single=True, expected="a list of methods such as ('GET', 'HEAD')")
    chosen = frozenset(name.strip().upper() for text in names for name in text.split(",") if name.strip())
    unknown = sorted(chosen - set(LINE_METHODS))
    if unknown or not chosen:
        raise UsageError(f"invalid log method {unknown[0] if unknown else '(none)'!r}: expected some of "
                         f"{', '.join(LINE_METHODS)}")
    return chosen
