"""The stream of ``--metrics-out``: what a run tells while it runs (:mod:`pounder._live`) made into
samples at their own times, queued, and sent by a thread of its own through OpenTelemetry's
exporters (Prometheus remote-write from opentelemetry-python-contrib, OTLP/HTTP from
opentelemetry-python), so that the measurement never waits for the endpoint.

The queue is bounded (:data:`QUEUE_BATCHES`), each request has a timeout (:data:`TIMEOUT_S`), and
the end waits at most :data:`FLUSH_S` for what is left: a sample that could not be queued or sent
is dropped and counted, with why (:class:`MetricsSummary`, one line at the end). The counters are
totals, so a dropped batch loses the steps between, never the total a later sample carries.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pounder._errors import UsageError, public
from pounder._live import ChildrenSample
from pounder.metrics._endpoint import MetricsEndpoint
from pounder.metrics._series import (
    BYTES,
    CATEGORIES,
    CHILDREN,
    CHILDREN_CPU,
    CHILDREN_PSS,
    CHILDREN_USS,
    ERRORS,
    FAILED,
    IN_FLIGHT,
    MAX,
    MEAN,
    NON_2XX,
    P50,
    P99,
    REQUESTS,
    Series,
)

QUEUE_BATCHES = 256
"""Batches (one per second of a load, one per server sample) waiting to be sent at most."""
TIMEOUT_S = 2
"""One request to the endpoint at most (s)."""
FLUSH_S = 5.0
"""How long the end waits for what is still queued (s)."""
EXTRA = "pip install 'pounder[metrics]'"

_LOGGERS = ("opentelemetry.exporter", "opentelemetry.sdk")

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class _Point:
    series: Series
    labels: Labels
    value: float
    t_ns: int


@public
@dataclass(frozen=True)
class MetricsSummary:
    """What a stream did: ``samples`` made, ``dropped`` of them (``reasons``: why, with how many)."""

    url: str
    samples: int
    dropped: int
    reasons: tuple[tuple[str, int], ...]

    def line(self) -> str:
        """One line: ``metrics: 30 samples sent to URL``, or ``metrics: N of M samples dropped (why)``."""
        if not self.dropped:
            return f"metrics: {self.samples} samples sent to {self.url}"
        why = "; ".join(f"{reason}: {count}" if len(self.reasons) > 1 else reason for reason, count in self.reasons)
        return f"metrics: {self.dropped} of {self.samples} samples dropped ({why})"


class _FirstWords(logging.Handler):
    """The exporters say why a request failed in their log: the first thing said of a request is
    the reason (OTLP's retries end on a sentence that no longer says why)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.first: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.first is None:
            try:
                self.first = _reason(record.getMessage())
            except Exception:  # noqa: BLE001  # a record that cannot be formatted says nothing
                pass


def _reason(message: str) -> str:
    """What went wrong, in a few words: the system's (``Connection refused``) when the exporter's
    message holds it deep in its chain of causes, else the message's first 200 characters."""
    errno = re.search(r"\[Errno -?\d+\] ([^\"'()\[\]]+)", message)
    return errno[1].strip() if errno else " ".join(message.split())[:200]


def _exporter(endpoint: MetricsEndpoint) -> Any:
    """The library's exporter for ``endpoint`` (:class:`~pounder.UsageError` naming the extra when
    it is not installed)."""
    try:  # straight to the endpoint named, never through a proxy of the environment (HTTP_PROXY)
        if endpoint.protocol == "prometheus":
            from opentelemetry.exporter.prometheus_remote_write import PrometheusRemoteWriteMetricsExporter

            return PrometheusRemoteWriteMetricsExporter(endpoint=endpoint.url, timeout=TIMEOUT_S,
                                                        resources_as_labels=False,
                                                        proxies={"http": None, "https": None})  # fmt: skip
        import requests
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        session = requests.Session()
        session.trust_env = False
        return OTLPMetricExporter(endpoint=endpoint.url, timeout=TIMEOUT_S, session=session)
    except ImportError as error:
        raise UsageError(f"--metrics-out needs the OpenTelemetry exporters, not installed here ({error.name}): "
                         f"{EXTRA}") from None


def _metrics_data(points: Sequence[_Point], start_ns: int, units: bool) -> Any:
    """The points as the SDK's ``MetricsData``, each at its own time (``units``: OTLP's; the
    Prometheus names already end in theirs, and its exporter would add them again)."""
    from opentelemetry.sdk.metrics.export import (
        AggregationTemporality,
        Gauge,
        Metric,
        MetricsData,
        NumberDataPoint,
        ResourceMetrics,
        ScopeMetrics,
        Sum,
    )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from pounder._version import __version__

    by_series: dict[Series, list[NumberDataPoint]] = {}
    for point in points:
        start = start_ns if point.series.kind == "counter" else point.t_ns
        by_series.setdefault(point.series, []).append(
            NumberDataPoint(attributes=dict(point.labels), start_time_unix_nano=min(start, point.t_ns),
                            time_unix_nano=point.t_ns, value=point.value))  # fmt: skip
    metrics = []
    for series, data_points in by_series.items():
        data: Any = Gauge(data_points=data_points)
        if series.kind == "counter":
            data = Sum(data_points=data_points, aggregation_temporality=AggregationTemporality.CUMULATIVE,
                       is_monotonic=True)
        metrics.append(Metric(name=series.name, description=series.help, unit=series.unit if units else "", data=data))
    scope = ScopeMetrics(scope=InstrumentationScope("pounder", __version__), metrics=metrics, schema_url="")
    resource = Resource({"service.name": "pounder"})
    return MetricsData(resource_metrics=[ResourceMetrics(resource=resource, scope_metrics=[scope], schema_url="")])


def run_id(command: str) -> str:
    """A run's id: the command, the UTC time it started and this process's id."""
    return f"{command}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}"


@public
class MetricsStream:
    """A listener of :mod:`pounder._live` that sends what it is told to ``endpoint``, labelled with
    the run (``run``: its id, default :func:`run_id`; ``command``). Made before anything is sent
    (a missing exporter is a :class:`~pounder.UsageError` then); :meth:`start`, then :meth:`close`."""

    def __init__(self, endpoint: MetricsEndpoint, *, command: str, run: str | None = None,
                 queue_batches: int = QUEUE_BATCHES) -> None:  # fmt: skip
        self.endpoint = endpoint
        self.run = run or run_id(command)
        self._base: Labels = (("run", self.run), ("command", command))
        self._exporter = _exporter(endpoint)
        self._queue: queue.Queue[list[_Point]] = queue.Queue(maxsize=queue_batches)
        self._lock = threading.Lock()
        self._totals: dict[tuple[Series, Labels], float] = {}
        self._samples = 0
        self._dropped: Counter[str] = Counter()
        self._in_flight = 0
        self._closing = threading.Event()
        self._abandoned = False
        self._start_ns = time.time_ns()
        self._words = _FirstWords()
        self._thread = threading.Thread(target=self._send_loop, name="pounder-metrics-out", daemon=True)
        self.summary: MetricsSummary | None = None
        """What was done, once closed."""

    # -- what the run tells (pounder._live.Listener) --------------------------------------------

    def seconds(self, target: str, start_unix: float, entries: Sequence[Mapping[str, Any]]) -> None:
        labels = (*self._base, ("target", target))
        now = time.time()
        for entry in entries:  # at the second's end (the last, partial one ended at the latest now)
            t_ns = int(min(start_unix + int(entry["second"]) + 1, now) * 1e9)
            points = [self._total(series, labels, float(entry[key]), t_ns)
                      for series, key in ((REQUESTS, "complete"), (NON_2XX, "non_2xx"), (FAILED, "failed"),
                                          (BYTES, "bytes"))]  # fmt: skip
            errors = entry.get("errors") or {}  # every category each second: a counter from 0
            points += [self._total(ERRORS, (*labels, ("category", category)), float(errors.get(category, 0)), t_ns)
                       for category in CATEGORIES]
            if int(entry["complete"]) > 0:
                points += [_Point(series, labels, float(entry[key]) / 1e6, t_ns)
                           for series, key in ((P50, "p50_us"), (P99, "p99_us"), (MAX, "max_us"), (MEAN, "mean_us"))]
            self._put(points)

    def children(self, sample: ChildrenSample) -> None:
        t_ns = int(sample.at_unix * 1e9)
        points = [_Point(series, self._base, float(value), t_ns)
                  for series, value in ((CHILDREN, sample.children), (CHILDREN_USS, sample.uss_bytes),
                                        (CHILDREN_PSS, sample.pss_bytes))]  # fmt: skip
        if sample.cpu_cores is not None:
            points.append(_Point(CHILDREN_CPU, self._base, sample.cpu_cores, t_ns))
        self._put(points)

    def in_flight(self, target: str, at_unix: float, requests: int) -> None:
        self._put([_Point(IN_FLIGHT, (*self._base, ("target", target)), float(requests), int(at_unix * 1e9))])

    def _total(self, series: Series, labels: Labels, value: float, t_ns: int) -> _Point:
        key = (series, labels)
        self._totals[key] = self._totals.get(key, 0.0) + value
        return _Point(series, labels, self._totals[key], t_ns)

    def _put(self, points: list[_Point]) -> None:
        with self._lock:
            self._samples += len(points)
            if self._closing.is_set():
                self._dropped["told after the end"] += len(points)
                return
        try:
            self._queue.put_nowait(points)
        except queue.Full:
            with self._lock:
                self._dropped[f"the queue of {self._queue.maxsize} batches was full: the endpoint is slower than "
                              "the run"] += len(points)

    # -- sending ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start sending (the exporters' log is kept for the reasons of drops, not printed)."""
        for name in _LOGGERS:
            logger = logging.getLogger(name)
            logger.addHandler(self._words)
            logger.propagate = False
        self._thread.start()

    def _send_loop(self) -> None:
        while True:
            try:
                points = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._closing.is_set():
                    return
                continue
            while len(points) < 2000:  # what else is waiting goes in the same request
                try:
                    points += self._queue.get_nowait()
                except queue.Empty:
                    break
            with self._lock:
                if self._abandoned:
                    return
                self._in_flight = len(points)
            reason = self._send(points)
            with self._lock:
                if self._abandoned:
                    return
                self._in_flight = 0
                if reason is not None:
                    self._dropped[reason] += len(points)

    def _send(self, points: list[_Point]) -> str | None:
        """Why the endpoint did not take ``points`` (None: it did)."""
        self._words.first = None
        try:
            from opentelemetry.sdk.metrics.export import MetricExportResult

            data = _metrics_data(points, self._start_ns, units=self.endpoint.protocol == "otlp")
            result = self._exporter.export(data, timeout_millis=TIMEOUT_S * 1000)
        except Exception as error:  # noqa: BLE001  # a failed send is a drop, never the run's failure
            return f"{type(error).__name__}: {error}"[:200]
        if result == MetricExportResult.SUCCESS:
            return None
        return self._words.first or f"{self.endpoint.shown} did not accept them"

    def close(self, wait_s: float = FLUSH_S) -> MetricsSummary:
        """Send what is queued (waiting at most ``wait_s``), stop, and say what was done."""
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join(wait_s)
        with self._lock:
            self._abandoned = True
            left = self._in_flight
            while True:
                try:
                    left += len(self._queue.get_nowait())
                except queue.Empty:
                    break
            if left:
                self._dropped[f"not sent within {wait_s:g} s of the end"] += left
            summary = MetricsSummary(url=self.endpoint.shown, samples=self._samples,
                                     dropped=sum(self._dropped.values()),
                                     reasons=tuple(self._dropped.most_common()))  # fmt: skip
        if not self._thread.is_alive():  # else a request still waiting would print its failure at exit
            for name in _LOGGERS:
                logger = logging.getLogger(name)
                logger.removeHandler(self._words)
                logger.propagate = True
        return summary
