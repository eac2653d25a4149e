"""Fixtures of the ``--metrics-out`` tests: a real Prometheus (skipped when Debian's ``prometheus`` is
not installed) and a minimal OTLP/HTTP receiver (no OpenTelemetry collector is packaged in Debian):
what it is sent decoded with the official protobufs (``opentelemetry-proto``)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.prometheus import Prometheus, prometheus_binary


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[Prometheus]:
    if prometheus_binary() is None:
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    pytest.importorskip("opentelemetry.exporter.prometheus_remote_write", reason="pip install 'pounder[metrics]'")
    server = Prometheus(tmp_path / "prometheus").start()
    try:
        yield server
    finally:
        server.stop()


class OtlpReceiver:
    """An OTLP/HTTP metrics endpoint on 127.0.0.1 (protobuf; every request decoded and kept)."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

        received = self.requests = []  # type: list[metrics_service_pb2.ExportMetricsServiceRequest]

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  # http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = metrics_service_pb2.ExportMetricsServiceRequest()
                request.ParseFromString(body)
                received.append(request)
                answer = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"otlp+http://127.0.0.1:{self.port}/v1/metrics"

    def points(self, name: str) -> list[tuple[dict[str, str], int, float, str]]:
        """Every data point received of metric ``name``: (attributes, time in ns, value, unit)."""
        found = []
        for request in self.requests:
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        if metric.name != name:
                            continue
                        data = metric.sum if metric.HasField("sum") else metric.gauge
                        for point in data.data_points:
                            attributes = {a.key: a.value.string_value for a in point.attributes}
                            value = point.as_double if point.HasField("as_double") else float(point.as_int)
                            found.append((attributes, point.time_unix_nano, value, metric.unit))
        return found

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpReceiver]:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.metric_exporter",
                        reason="pip install 'pounder[metrics]'")
    receiver = OtlpReceiver()
    try:
        yield receiver
    finally:
        receiver.close()
