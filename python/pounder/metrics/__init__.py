"""Per-second figures out while the load runs (``--metrics-out``): to Prometheus remote-write and
to OTLP/HTTP through OpenTelemetry's exporters (the optional extra ``pounder[metrics]``, imported
only when asked for). The option (``_out``: :class:`MetricsOptions`, :func:`stream_metrics`), the
endpoint checked (``_endpoint``), the series declared once (``_series``), the stream: a bounded
queue and a thread of its own, drops counted (``_stream``). What it streams is what the runs tell
:mod:`pounder._live`; nothing else knows it exists."""

from pounder.metrics._endpoint import SCHEMES, MetricsEndpoint, parse_metrics_out
from pounder.metrics._out import MetricsOptions, stream_metrics
from pounder.metrics._series import LABELS, SERIES, Series
from pounder.metrics._stream import MetricsStream, MetricsSummary

__all__ = [
    "LABELS",
    "SCHEMES",
    "SERIES",
    "MetricsEndpoint",
    "MetricsOptions",
    "MetricsStream",
    "MetricsSummary",
    "Series",
    "parse_metrics_out",
    "stream_metrics",
]
