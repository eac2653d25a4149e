"""A timed replay (``pounder bench --replay FILE``): an access log's (or a HAR's) requests sent at
their recorded times, scaled by ``--speed``, open loop, latency from each request's time.

The log is read by ``_access_log``'s parser (a HAR by ``_har``), with the same filters as
``--access-log`` (``--log-methods``, ``--exclude-static``). Times:

* A fraction of a second inside the brackets (``[10/Oct/2000:13:55:36.123 +0000]``) is used as
  it is; a HAR's ``startedDateTime`` has milliseconds.
* A log of whole seconds only (Apache's ``%t``): the requests of one second are spread evenly
  over it (the k-th of n at k/n s) and the result says so (``whole_seconds``): the sub-second
  rhythm is not known, and is not pretended.
* A log is written when each request ends, so its lines are not quite in the order the requests
  came: they are sorted by time (a stable sort), and the result says how many were out of order.

The first request is sent at once; request i at ``(t_i - t_0) / speed``. ``-n`` stops after that
many requests, ``-d`` keeps those whose (scaled) time is before it; without ``-d`` a replay may
last at most :data:`MAX_REPLAY_S` at the given speed.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pounder._errors import UsageError, check_path, public
from pounder._units import plain
from pounder.results import LoadModel, ReplayInfo
from pounder.traffic._log_lines import SKIP_REASONS, Kept, RequestKey, read_tally
from pounder.traffic._parse import UrlLine
from pounder.traffic._request import RequestTemplate
from pounder.traffic._url import ParsedUrl

if TYPE_CHECKING:
    from pounder._engine import EngineReplay

MAX_REPLAY_S = 24 * 3600.0
"""The longest replay at the given speed, unless ``-d`` cuts it."""
MAX_DISTINCT = 100_000
"""The most distinct requests (method, path and query, a HAR's headers and body) of a replay:
each is one pre-serialized request in memory."""
ReplayLoad = tuple[LoadModel, int | None, float | None]
"""A replay's load model, its ``-n`` and the ``-d`` that cuts it (None: the whole replay)."""
MIN_SPEED, MAX_SPEED = 0.001, 1000.0
_SPEED_RE = re.compile(r"(?P<num>\d+(?:\.\d*)?|\.\d+)\s*[xX]?")


def parse_speed(value: float | int | str | None, what: str = "--speed") -> float:
    """``"10x"``, ``"0.5x"``, ``"2"`` or a number → the factor (default 1): between
    :data:`MIN_SPEED` and :data:`MAX_SPEED`."""
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UsageError(f"{what} must be a factor such as 10x, 0.5x or 2, got {value!r}")
    if isinstance(value, str):
        match = _SPEED_RE.fullmatch(value.strip())
        if match is None:
            raise UsageError(f"invalid {what} {value!r}: use a factor such as 10x, 0.5x or 2")
        value = float(match["num"])
    if not MIN_SPEED <= value <= MAX_SPEED:
        raise UsageError(f"{what} must be between {plain(MIN_SPEED)}x and {plain(MAX_SPEED)}x, got {plain(value)}x")
    return float(value)


@public
@dataclass(frozen=True)
class ReplayPlan:
    """What a replay sends: its distinct requests (``requests``), and for each request in time
    order its send time (µs from the start, scaled) and which distinct request it is. ``cut_s``:
    ``-d`` when it cuts the replay short (the engine's ``duration_s``), else None."""

    info: ReplayInfo
    requests: tuple[RequestKey, ...]
    times_us: list[int]
    which: list[int]
    load: LoadModel
    cut_s: float | None
    counts: tuple[int, ...]
    """How many of the log's requests (after the filters) each distinct request is."""

    def url_lines(self, base: str) -> tuple[UrlLine, ...]:
        """One URL line per distinct request, under ``base`` (``http://host:port``), its weight the
        number of the log's requests it is (the engine does not pick by weight in a replay: it is
        recorded for the report)."""
        return tuple(UrlLine(base + target, count, f"{self.info.path}: {method} {target}", method)
                     for (method, target, _, _), count in zip(self.requests, self.counts, strict=True))  # fmt: skip

    def engine_replay(self) -> EngineReplay:
        return {"times_us": self.times_us, "targets": self.which}


@public
def recorded_request(key: RequestKey, template: RequestTemplate, url: ParsedUrl) -> bytes | None:
    """A HAR request's own bytes: its headers (the user's win over them: ``-H``, and the headers
    options make, ``--cookie``'s Cookie, ``-A``'s Authorization) and its body; None for a request
    with neither (the template's request is then right as it is)."""
    method, _, headers, body = key
    if not headers and body is None:
        return None
    own = template.for_method(method)
    given = {name.lower() for name, _ in (*own.user, *own.generated)}
    user = tuple(pair for pair in headers if pair[0].lower() not in given) + own.user
    if body is not None:
        framing = [pair for pair in own.generated if pair[0] != "Content-Length"]
        own = replace(own, body=body, generated=(*framing, ("Content-Length", str(len(body)))))
    return replace(own, user=user).render(url)


def _ordered(kept: Kept) -> tuple[list[int], list[int], int]:
    """The times (µs) and requests sorted by time, and how many were out of order; a log of
    whole seconds has the requests of each second spread evenly over it."""
    times, which = kept.unix_us.tolist(), kept.which.tolist()
    late, latest = 0, times[0]
    for t in times:
        if t < latest:
            late += 1
        else:
            latest = t
    if late:
        order = sorted(range(len(times)), key=times.__getitem__)
        times, which = [times[i] for i in order], [which[i] for i in order]
    if kept.whole_seconds == len(times):
        start = 0
        while start < len(times):
            end = start
            while end < len(times) and times[end] == times[start]:
                end += 1
            n = end - start
            for k in range(n):
                times[start + k] += k * 1_000_000 // n
            start = end
    return times, which, late


@public
def plan_replay(replay: object, speed: float | int | str | None, load: Callable[[float], ReplayLoad], *,
                exclude_static: bool = False, log_methods: str | Sequence[str] | None = None) -> ReplayPlan:
    """Read ``replay`` (an access log or a HAR) into the requests and times to send, at ``speed``;
    ``load`` makes the load model of a replay that lasts so many seconds (with ``-n`` and the
    ``-d`` that cuts it, when given). :class:`~pounder.UsageError` with one line when the file
    cannot be replayed."""
    path = Path(check_path(replay, "replay"))
    factor = parse_speed(speed)
    kept = Kept()
    tally = read_tally(path, ("GET", "HEAD") if log_methods is None else log_methods, exclude_static, kept=kept)
    if len(kept.distinct) > MAX_DISTINCT:
        raise UsageError(
            f"--replay {path}: {len(kept.distinct):,} distinct requests, more than the limit of {MAX_DISTINCT:,}"
        )
    raw, which, late = _ordered(kept)
    first = raw[0]
    times = [round((t - first) / factor) for t in raw]
    length_s = times[-1] / 1e6
    model, requests, cut = load(length_s)
    if cut is None and length_s > MAX_REPLAY_S:
        raise UsageError(
            f"--replay {path} lasts {length_s / 3600:,.1f}h at {plain(factor)}x, more than the limit of "
            f"{MAX_REPLAY_S / 3600:g}h: speed it up (--speed) or cut it (-d)"
        )
    counts = [0] * len(kept.distinct)
    for index in which:
        counts[index] += 1
    if cut is not None:  # the engine gets the times before the cut only (a later one may pass 2^64 µs)
        sent = bisect.bisect_left(times, cut * 1e6)
        times, which = times[:sent], which[:sent]
    sent = len(times)
    fmt: Literal["access_log", "har"] = "har" if tally.har else "access_log"
    info = ReplayInfo(
        path=str(replay), format=fmt, speed=factor, log_requests=len(raw),
        requests=min(sent, requests) if requests is not None else sent, distinct=len(kept.distinct),
        span_s=(raw[-1] - first) / 1e6, length_s=length_s if cut is None else cut,
        whole_seconds=kept.whole_seconds == len(raw), out_of_order=late, lines=tally.lines,
        skipped={reason: tally.skipped[reason] for reason in SKIP_REASONS if tally.skipped[reason]},
        methods=tuple(sorted(tally.methods)), origin=tally.origin,
    )  # fmt: skip
    return ReplayPlan(info=info, requests=tuple(kept.distinct), times_us=times, which=which, load=model, cut_s=cut,
                      counts=tuple(counts))  # fmt: skip
