"""The series ``--metrics-out`` writes, declared once: their names, kinds, units and meaning (the
docs' table, docs/metrics.md, and the Grafana dashboard are checked against this list)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from pounder.results import ErrorCounts

LABELS = ("run", "command", "target")
"""The labels of every series: the run's id (one per command: ``bench-20261129T101500Z-4242``),
the command (bench, compare, run, tune) and what the load is on (its URL, or its origin when it
has several); the children's series have no ``target``, ``pounder_errors_total`` one more,
``category``."""


@dataclass(frozen=True)
class Series:
    """One exported series: its Prometheus name (the OTLP metric's name too), ``counter`` (a
    cumulative total) or ``gauge``, its OTLP unit and what it says."""

    name: str
    kind: Literal["counter", "gauge"]
    unit: str
    help: str


REQUESTS = Series("pounder_requests_total", "counter", "{request}",
                  "Requests completed (any status), added up second by second: at the end, the run's complete "
                  "requests.")
NON_2XX = Series("pounder_non_2xx_total", "counter", "{request}",
                 "Of those completed, the responses whose status was not 2xx.")
FAILED = Series("pounder_failed_total", "counter", "{request}",
                "Requests that failed (no complete response: refused, reset, timed out, ...).")
BYTES = Series("pounder_received_bytes_total", "counter", "By", "Bytes received.")
CATEGORIES = tuple(category.name for category in fields(ErrorCounts))
"""The categories of a failed request, as a result counts them."""
ERRORS = Series("pounder_errors_total", "counter", "{request}",
                f"Failed requests by category (label category: {', '.join(CATEGORIES)}), second by second: at the "
                "end, the run's errors.")
P50 = Series("pounder_latency_p50_seconds", "gauge", "s", "The second's median latency (corrected).")
P99 = Series("pounder_latency_p99_seconds", "gauge", "s", "The second's 99th percentile latency (corrected).")
MAX = Series("pounder_latency_max_seconds", "gauge", "s", "The second's longest latency (corrected).")
MEAN = Series("pounder_latency_mean_seconds", "gauge", "s", "The second's mean latency (corrected).")
IN_FLIGHT = Series("pounder_in_flight_requests", "gauge", "{request}",
                   "Requests sent (or connecting) and not yet answered, failed or aborted, as the run is polled "
                   "(about 4 times a second) during each load's measured phase.")
CHILDREN = Series("pounder_children", "gauge", "{process}", "The sampled server's children (tune; bench with "
                  "--server-pid).")
CHILDREN_USS = Series("pounder_children_uss_bytes", "gauge", "By", "Their unique memory (USS), summed.")
CHILDREN_PSS = Series("pounder_children_pss_bytes", "gauge", "By", "Their proportional memory (PSS), summed.")
CHILDREN_CPU = Series("pounder_children_cpu_cores", "gauge", "1",
                      "The CPU they used per second since the previous sample (1 = one core busy).")

SERIES = (REQUESTS, NON_2XX, FAILED, BYTES, ERRORS, P50, P99, MAX, MEAN, IN_FLIGHT, CHILDREN, CHILDREN_USS,
          CHILDREN_PSS, CHILDREN_CPU)
"""Every series pounder exports."""
