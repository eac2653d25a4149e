"""Issue 25 item 17: ``pounder report`` on a result of 1.2 million seconds took 115 s and 4 GB
and wrote a page of 637 MB, every second drawn. A long per-second series is now drawn in at most
2,000 buckets, aggregated honestly (counts summed, means weighted, percentiles as the highest of
the bucket's seconds), and the page says so next to each chart.

The result is a real bench (against the test server) whose series is extended to 10,000
entries, kept valid for its schema; what the page draws is caught at ``Axes.plot`` and checked
against sums and maxima computed here, independently of the report's code."""

from __future__ import annotations

import html
import json
import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes

import pounder
from pounder.report._series import MAX_POINTS, bucket_width, downsample, peaks
from pounder.results import SecondSample
from support.cliutil import run_cli
from support.schemas import validate

SPAN_S = 10_050
"""Full seconds of the measured phase; 50 of them have no entry (nothing completed or failed)."""
MISSING = {second for second in range(SPAN_S) if second % 200 == 199}
IDLE = {second for second in range(SPAN_S) if second % 97 == 0}
"""Seconds where every request failed: counts, but no latency."""


def long_series(seed: int = 7) -> list[dict[str, Any]]:
    """10,000 entries over 10,050 full seconds, then the final partial second."""
    rng = random.Random(seed)
    series = []
    for second in [s for s in range(SPAN_S) if s not in MISSING] + [SPAN_S]:
        complete = 0 if second in IDLE else rng.randint(50, 1500)
        p50 = rng.randint(300, 3000) if complete else 0
        p99 = p50 + rng.randint(0, 20_000) if complete else 0
        series.append({"second": second, "complete": complete, "non_2xx": rng.randint(0, 3) if complete else 0,
                       "failed": 3 if second in IDLE else rng.randint(0, 2), "bytes": complete * 424,
                       "mean_us": (p50 + p99) / 2 if complete else 0.0, "p50_us": p50, "p99_us": p99,
                       "max_us": p99 + rng.randint(0, 5000) if complete else 0})
    return series


@pytest.fixture
def long_result(testserver: Any, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A real bench result with its series made 10,000 entries long, totals to match."""
    document: dict[str, Any] = json.loads(pounder.bench(testserver().url + "/", connections=2,
                                                        requests=100).to_json())
    series = long_series()
    document["series"] = series
    document["elapsed_s"] = SPAN_S + 0.4
    requests = document["requests"]
    requests["complete"] = sum(s["complete"] for s in series)
    requests["failed"] = sum(s["failed"] for s in series)
    requests["non_2xx"] = sum(s["non_2xx"] for s in series)
    document["status"] = {"200": requests["complete"] - requests["non_2xx"], "500": requests["non_2xx"]}
    document["errors"] = {**dict.fromkeys(document["errors"], 0), "timeout": requests["failed"]}
    document["bytes"]["total"] = sum(s["bytes"] for s in series)
    validate(document, "bench-result")
    path = tmp_path / "long.json"
    path.write_text(json.dumps(document))
    return path, document


def drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[list[float], list[float]]]:
    """Label -> (x, y) of every line the page draws from now on."""
    lines: dict[str, tuple[list[float], list[float]]] = {}
    plot = Axes.plot

    def spy(self: Axes, *args: Any, **kwargs: Any) -> Any:
        if "label" in kwargs and len(args) == 2:
            lines[str(kwargs["label"])] = (list(args[0]), list(args[1]))
        return plot(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", spy)
    return lines


def test_the_page_draws_a_long_series_in_buckets_and_says_so(long_result: tuple[Path, dict[str, Any]],
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, document = long_result
    lines = drawn(monkeypatch)
    page_path = tmp_path / "page.html"
    code, _, stderr = run_cli("report", str(path), "-o", str(page_path))
    assert (code, stderr) == (0, ""), stderr
    page = html.unescape(page_path.read_text())
    assert page_path.stat().st_size < 1_000_000  # each of the 10,000 seconds drawn: about 6 MB

    # What the page says, next to each chart: 10,050 full seconds in 10 s buckets.
    assert page.count("Downsampled, shown at 1 point per 10 s: 1,005 points for 10,000 entries; each point is "
                      "the mean per second of its bucket") == 2
    assert ("Downsampled, shown at 1 point per 10 s: 1,006 points for 10,001 entries; each point is the highest "
            "per-second p50 and p99 of its bucket") in page

    # Counts: the buckets' sums, computed here; times 10 s they add up to the totals.
    full = [s for s in document["series"] if s["second"] < SPAN_S]
    for label, count in (("long", "complete"), ("long failed", "failed"), ("long non-2xx", "non_2xx")):
        xs, ys = lines[label]
        sums: dict[int, int] = defaultdict(int)
        for sample in full:
            sums[sample["second"] // 10] += sample[count]
        assert len(ys) == 1005 <= MAX_POINTS
        assert ys == pytest.approx([sums[b] / 10 for b in range(1005)])
        assert xs == pytest.approx([(b * 10 + 4.5) / 60 for b in range(1005)])  # each at its middle, in minutes
        assert round(sum(y * 10 for y in ys)) == sum(s[count] for s in full)
    assert round(sum(y * 10 for y in lines["long"][1])) == (document["requests"]["complete"]
                                                           - document["series"][-1]["complete"])

    # Percentiles: the highest per-second p50 and p99 of each bucket with a completion.
    highest: dict[int, list[int]] = {}
    for sample in document["series"]:
        if sample["complete"]:
            top = highest.setdefault(sample["second"] // 10, [0, 0])
            top[0], top[1] = max(top[0], sample["p50_us"]), max(top[1], sample["p99_us"])
    for label, column in (("long p50 (highest per bucket)", 0), ("long p99 (highest per bucket)", 1)):
        _, ys = lines[label]
        assert ys == pytest.approx([highest[b][column] / 1000 for b in sorted(highest)])


def test_buckets_against_a_computation_of_their_own() -> None:
    samples = [SecondSample(**entry) for entry in long_series(seed=11)]
    shown = downsample(samples, SPAN_S + 1, limit=700)
    assert (shown.width_s, len(shown.buckets), shown.entries) == (15, 671, 10_001)
    assert shown.buckets[-1].start == 670 * 15 and shown.buckets[-1].seconds == SPAN_S + 1 - 670 * 15
    for bucket in shown.buckets:
        inside = [s for s in samples if bucket.start <= s.second < bucket.start + bucket.seconds]
        answered = [s for s in inside if s.complete]
        assert bucket.complete == sum(s.complete for s in inside)
        assert (bucket.failed, bucket.non_2xx, bucket.bytes) == (
            sum(s.failed for s in inside), sum(s.non_2xx for s in inside), sum(s.bytes for s in inside))
        assert bucket.answered == len(answered)
        if answered:
            weighted = math.fsum(s.mean_us * s.complete for s in answered) / sum(s.complete for s in answered)
            assert bucket.mean_us == pytest.approx(weighted)
            assert (bucket.p50_us, bucket.p99_us, bucket.max_us) == (
                max(s.p50_us for s in answered), max(s.p99_us for s in answered), max(s.max_us for s in answered))
        else:
            assert (bucket.mean_us, bucket.p99_us) == (None, None)
    assert sum(b.complete for b in shown.buckets) == sum(s.complete for s in samples)


def test_a_short_series_is_drawn_as_it_is() -> None:
    samples = [SecondSample(**entry) for entry in long_series()[:300]]
    shown = downsample(samples, 300)
    assert (shown.width_s, shown.downsampled, shown.note()) == (1, False, "")
    kept = [s for s in samples if s.second < 300]
    assert [(b.start, b.complete, b.p99_us) for b in shown.buckets if b.answered] == [
        (s.second, s.complete, s.p99_us) for s in kept if s.complete]


def test_widths_and_peaks() -> None:
    assert [bucket_width(s) for s in (0, 1, 2000, 2001, 10_050, 1_200_000, 400 * 86400, 5000 * 86400)] == [
        1, 1, 1, 2, 10, 600, 21600, 3 * 86400]
    times = [i * 0.5 for i in range(5000)]  # a reading every half second for 2,500 s
    values = [float(i % 7) for i in range(5000)]
    values[10] = math.nan
    xs, ys, width = peaks(times, values, limit=1000)
    assert width == 5 and len(xs) == len(ys) == 500
    assert xs[:2] == [0.0, 5.0] and ys == [max(v for v in values[i:i + 10] if not math.isnan(v))
                                          for i in range(0, 5000, 10)]
    assert peaks(times[:10], values[:10]) == (times[:10], values[:10], 1)
