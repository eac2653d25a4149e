"""The percentile table as CSV, like ``ab -e``.

Header ``percent,latency_ms``, then one row per percentile the engine reports for the corrected
latency: 0 (the minimum), 50, 66, 75, 80, 90, 95, 98, 99, 99.9 and 100 (the maximum). Latencies
are milliseconds with 3 decimals (µs resolution). ab prints every percent from 0 to 100; we only
have these points (the full distribution is in the result's ``histogram``). With no completed
request only the header is written.
"""

from __future__ import annotations

from pounder._errors import check_instance, public
from pounder.results._measured import PERCENTILES
from pounder.results._result import BenchResult

CSV_HEADER = "percent,latency_ms"


def percentile_rows(result: BenchResult) -> list[tuple[str, float]]:
    """(percent, milliseconds) pairs of the corrected latency, as written to the CSV."""
    histogram = result.latency.corrected
    if histogram.count == 0:
        return []
    rows = [("0", histogram.min_us / 1000)]
    rows += [(percent, histogram.percentiles[percent] / 1000) for percent in PERCENTILES]
    return rows


@public
def render_csv(result: BenchResult) -> str:
    check_instance(result, BenchResult, "render_csv: result")
    lines = [CSV_HEADER] + [f"{percent},{ms:.3f}" for percent, ms in percentile_rows(result)]
    return "\n".join(lines) + "\n"
