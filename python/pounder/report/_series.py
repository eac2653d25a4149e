"""Long series as the page shows them: at most :data:`MAX_POINTS` points per line.

A bench's per-second series has one entry a second (a run of two weeks: 1.2 million); drawn whole
it makes a page of hundreds of MB that no browser shows, and no screen has the pixels for it. The
page puts the seconds in buckets of a round width (1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10 min, ...,
the smallest that gives at most :data:`MAX_POINTS` of them) and aggregates each honestly:

* counts (complete, non-2xx, failed, bytes) are summed: a line of "per second" shows the bucket's
  sum over the seconds it covers (its mean rate), so the points times their seconds add up to the
  result's totals;
* the mean latency is the mean of the seconds' means weighted by their completions;
* the per-second p50 and p99 cannot be combined into a bucket's percentile (percentiles of
  different seconds do not average), so a bucket shows the highest of its seconds' p50 (p99): an
  upper bound of what any one second saw, and the page says so; the maximum is the maximum.

With a width of 1 s every bucket is one second: the page shows the series as it is.
Readings of the server (memory, workers) are thinned the same way by :func:`peaks`: each bucket's
highest reading.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pounder._units import count_text
from pounder.results import SecondSample

MAX_POINTS = 2000
"""The most points a line of a chart gets."""
WIDTHS_S = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
"""The bucket widths, seconds: round ones; past a day, whole days."""


@dataclass(frozen=True)
class Bucket:
    """The seconds ``start`` to ``start + seconds - 1`` of the measured phase (the last bucket may
    cover fewer than the width). Counts are the sums over its seconds; the latency figures (µs)
    are over the seconds with a completion (``answered`` of them; None with none): ``mean_us``
    weighted by completions, ``p50_us``, ``p99_us`` and ``max_us`` the highest of the seconds'. Every
    figure is given (:func:`downsample` sums them): none defaults to a count of 0."""

    start: int
    seconds: int
    complete: int
    non_2xx: int
    failed: int
    bytes: int
    answered: int
    mean_us: float | None
    p50_us: int | None
    p99_us: int | None
    max_us: int | None

    @property
    def middle(self) -> float:
        """Where the bucket sits on a time axis: the middle of its seconds."""
        return self.start + (self.seconds - 1) / 2

    def per_second(self, count: str) -> float:
        """The count ``count`` (``"complete"``, ``"failed"``, ...) per second of the bucket."""
        total: int = getattr(self, count)
        return total / self.seconds


@dataclass(frozen=True)
class Shown:
    """A series as shown: ``buckets`` of ``width_s`` seconds over the seconds 0 to ``span_s - 1``,
    made from ``entries`` entries of the series (those in that span)."""

    width_s: int
    span_s: int
    entries: int
    buckets: tuple[Bucket, ...]

    @property
    def downsampled(self) -> bool:
        return self.width_s > 1

    def note(self) -> str:
        """What the page says next to a chart drawn from a downsampled series ("" when it is not)."""
        if not self.downsampled:
            return ""
        return (f"downsampled, shown at 1 point per {duration_text(self.width_s)}: "
                f"{count_text(len(self.buckets), 'point')} for {count_text(self.entries, 'entry', 'entries')}")


def duration_text(seconds: float) -> str:
    """``45 s``, ``10 min``, ``2 h``, ``3 days``."""
    for size, unit in ((86400, "day"), (3600, "h"), (60, "min")):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if unit == 'day' and count != 1 else ''}"
    return f"{seconds:g} s"


def bucket_width(span_s: float, limit: int = MAX_POINTS) -> int:
    """The smallest round width (seconds) that cuts ``span_s`` seconds into at most ``limit`` buckets."""
    for width in WIDTHS_S:
        if math.ceil(span_s / width) <= limit:
            return width
    return WIDTHS_S[-1] * math.ceil(span_s / (WIDTHS_S[-1] * limit))


def downsample(series: Iterable[SecondSample], span_s: int, limit: int = MAX_POINTS) -> Shown:
    """The seconds 0 to ``span_s - 1`` of ``series`` in at most ``limit`` buckets (a second with
    no entry counts 0 and has no latency); entries outside that span are left out."""
    span_s = max(span_s, 0)
    width = bucket_width(span_s, limit)
    count = math.ceil(span_s / width)
    sums = [[0, 0, 0, 0, 0, 0.0] for _ in range(count)]  # complete, non_2xx, failed, bytes, answered, weighted mean
    highs: list[list[int] | None] = [None] * count  # p50, p99, max
    entries = 0
    for sample in series:
        if not 0 <= sample.second < span_s:
            continue
        entries += 1
        index = sample.second // width
        row = sums[index]
        row[0] += sample.complete
        row[1] += sample.non_2xx
        row[2] += sample.failed
        row[3] += sample.bytes
        if sample.complete:
            row[4] += 1
            row[5] += sample.mean_us * sample.complete
            high = highs[index]
            if high is None:
                highs[index] = [sample.p50_us, sample.p99_us, sample.max_us]
            else:
                high[0], high[1], high[2] = (max(high[0], sample.p50_us), max(high[1], sample.p99_us),
                                             max(high[2], sample.max_us))
    buckets = []
    for index, (row, high) in enumerate(zip(sums, highs, strict=True)):
        start = index * width
        complete = int(row[0])
        buckets.append(Bucket(
            start=start, seconds=min(width, span_s - start), complete=complete, non_2xx=int(row[1]),
            failed=int(row[2]), bytes=int(row[3]), answered=int(row[4]),
            mean_us=row[5] / complete if complete else None,
            p50_us=None if high is None else high[0], p99_us=None if high is None else high[1],
            max_us=None if high is None else high[2],
        ))  # fmt: skip
    return Shown(width, span_s, entries, tuple(buckets))


def peaks(times: Sequence[float], values: Sequence[float],
          limit: int = MAX_POINTS) -> tuple[list[float], list[float], int]:
    """Readings at ``times`` (seconds, ascending) as at most ``limit`` points: each bucket of a
    round width its highest reading (a NaN, a reading not taken, only when it has no other), at
    the time of its first reading; and the width (1: the readings as they are, no more than
    ``limit`` of them)."""
    if len(times) <= limit:
        return list(times), list(values), 1
    width = bucket_width(times[-1] - times[0] + 1, limit)
    xs: list[float] = []
    ys: list[float] = []
    last = None
    for t, value in zip(times, values, strict=True):
        index = int((t - times[0]) // width)
        if index != last:
            xs.append(t)
            ys.append(value)
            last = index
        elif math.isnan(ys[-1]) or value > ys[-1]:
            ys[-1] = value
    return xs, ys, width
