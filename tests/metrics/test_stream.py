"""``--metrics-out``'s refusals (one line, exit 2, before anything is sent) and its stream against
endpoints that fail: never waiting on them, every sample that does not arrive counted with why."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator

import pytest

from pounder import UsageError
from pounder.metrics import MetricsStream, parse_metrics_out, stream_metrics
from support.cliutil import assert_usage_error, run_pounder
from support.forkrun import run_forked

SECOND = {"second": 0, "complete": 10, "non_2xx": 1, "failed": 2, "bytes": 100, "mean_us": 900.0, "p50_us": 800,
          "p99_us": 2000, "max_us": 3000, "errors": {"refused": 2}}
PER_SECOND = 8 + 8  # 4 counters and 4 latency gauges, and the failures of each of the 8 categories


def test_an_unknown_scheme_is_refused_before_anything_is_sent(testserver) -> None:
    server = testserver()
    done = run_pounder("bench", server.url + "/", "-n", "5", "--metrics-out", "influx+http://127.0.0.1:8086/write",
                       timeout=60)  # fmt: skip
    assert_usage_error(done.returncode, done.stdout, done.stderr, "--metrics-out", "unknown scheme 'influx+http'",
                       "prometheus+http://HOST:PORT/api/v1/write")
    assert server.count(settle_s=0.05) == 0


@pytest.mark.parametrize("command", [("bench", "http://127.0.0.1:1/"), ("compare", "http://127.0.0.1:1/a",
                                                                           "http://127.0.0.1:1/b")])
def test_an_endpoint_off_the_loopback_needs_allow_remote(command: tuple[str, ...]) -> None:
    done = run_forked(*command, "--metrics-out", "otlp+http://192.0.2.1:4318/v1/metrics", timeout=60)
    assert_usage_error(done.returncode, done.stdout, done.stderr, "192.0.2.1 is not a loopback address",
                       "--allow-remote")


def test_the_endpoint_is_checked_as_a_url() -> None:
    assert parse_metrics_out("prometheus+http://localhost:9090").url == "http://localhost:9090/api/v1/write"
    assert parse_metrics_out("OTLP+https://127.0.0.1/v1/metrics").url == "https://127.0.0.1/v1/metrics"
    for bad, why in (("prometheus+http://127.0.0.1:99999/", "port"), ("prometheus+http:///api/v1/write", "no host"),
                     ("http://127.0.0.1:9090/api/v1/write", "unknown scheme 'http'"), ("", "give a URL")):
        with pytest.raises(UsageError, match=why):
            parse_metrics_out(bad)


@pytest.mark.parametrize("module", ["opentelemetry.exporter.prometheus_remote_write",
                                    "opentelemetry.exporter.otlp.proto.http.metric_exporter"])
def test_without_the_extra_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    url = "prometheus+http://127.0.0.1:9/api/v1/write" if "prometheus" in module else "otlp+http://127.0.0.1:9/"
    with pytest.raises(UsageError, match=r"pip install 'pounder\[metrics\]'"), stream_metrics(url, command="bench"):
        pass


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


def test_an_endpoint_that_never_answers_costs_the_run_nothing_and_its_samples_are_counted(silent_port: int) -> None:
    pytest.importorskip("opentelemetry.exporter.prometheus_remote_write", reason="pip install 'pounder[metrics]'")
    stream = MetricsStream(parse_metrics_out(f"prometheus+http://127.0.0.1:{silent_port}/api/v1/write"),
                           command="bench", queue_batches=2)  # fmt: skip
    stream.start()
    told = time.monotonic()
    for second in range(6):  # the first is being sent (and waits), two are queued, the rest find it full
        stream.seconds("http://127.0.0.1:1/", time.time() - 10, [{**SECOND, "second": second}])
        time.sleep(0.05)
    assert time.monotonic() - told < 1.5  # told without waiting for the endpoint (2 s per request)
    summary = stream.close(wait_s=0.2)
    assert summary.samples == 6 * PER_SECOND
    assert summary.dropped == summary.samples
    reasons = dict(summary.reasons)
    assert reasons["the queue of 2 batches was full: the endpoint is slower than the run"] == 3 * PER_SECOND
    assert reasons["not sent within 0.2 s of the end"] == 3 * PER_SECOND
    assert summary.line() == ("metrics: 96 of 96 samples dropped (the queue of 2 batches was full: the endpoint is "
                              "slower than the run: 48; not sent within 0.2 s of the end: 48)")


def test_a_refused_connection_is_a_drop_with_its_reason() -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.metric_exporter",
                        reason="pip install 'pounder[metrics]'")
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # closed again: nobody listens there
    stream = MetricsStream(parse_metrics_out(f"otlp+http://127.0.0.1:{port}/v1/metrics"), command="tune")
    stream.start()
    stream.seconds("http://127.0.0.1:1/", time.time() - 10, [SECOND])
    summary = stream.close()
    assert (summary.samples, summary.dropped) == (PER_SECOND, PER_SECOND)
    assert "refused" in summary.reasons[0][0].lower(), summary.reasons


def test_a_password_in_the_endpoint_is_never_printed() -> None:
    """The summary line and a refusal go to CI logs: a password in the URL shows as ***."""
    endpoint = parse_metrics_out("prometheus+http://user:secret@127.0.0.1:9/api/v1/write")
    assert endpoint.url == "http://user:secret@127.0.0.1:9/api/v1/write"  # sent as given
    assert endpoint.shown == "http://user:***@127.0.0.1:9/api/v1/write"
    with pytest.raises(UsageError) as refused:
        parse_metrics_out("prometheus+http://user:secret@192.0.2.1:9/api/v1/write")
    assert "secret" not in str(refused.value) and "user:***@192.0.2.1" in str(refused.value)
