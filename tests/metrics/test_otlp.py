"""``--metrics-out otlp+http://...``: a bench's seconds sent through OpenTelemetry's OTLP/HTTP
exporter to a minimal receiver (no collector is packaged in Debian; the receiver decodes with the
official protobufs, opentelemetry-proto) equal the run's own figures."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from pounder import _live
from pounder.metrics import stream_metrics
from support.cliutil import run_pounder


def test_a_bench_sent_over_otlp_arrives_as_its_figures(testserver, otlp_receiver, tmp_path: Path) -> None:
    server = testserver(delay_ms=2)
    out = tmp_path / "bench.json"
    done = run_pounder("bench", server.url + "/", "-d", "2s", "-c", "2", "-q", "--json", out,
                       "--metrics-out", otlp_receiver.url, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    seconds = result["series"]
    totals = otlp_receiver.points("pounder_requests_total")
    assert [value for _, _, value, _ in totals] == [float(sum(s["complete"] for s in seconds[:i + 1]))
                                                     for i in range(len(seconds))]  # fmt: skip
    assert totals[-1][2] == result["requests"]["complete"] == server.count()
    attributes, _, _, unit = totals[-1]
    assert attributes["command"] == "bench" and attributes["target"] == server.url + "/" and attributes["run"]
    assert unit == "{request}"
    times = [t for _, t, _, _ in totals]
    assert times == sorted(times)  # each whole second at its end, 1 s after the one before
    assert all(abs(b - a - 1e9) < 1e6 for a, b in itertools.pairwise(times[:-1]))
    p99 = otlp_receiver.points("pounder_latency_p99_seconds")
    assert [value for _, _, value, _ in p99] == pytest.approx(
        [s["p99_us"] / 1e6 for s in seconds if s["complete"] > 0], rel=0.01)
    assert {unit for _, _, _, unit in p99} == {"s"}
    assert done.stderr.strip().splitlines()[-1].startswith("pounder: metrics: ")
    assert "samples sent to http://127.0.0.1:" in done.stderr


def test_a_sample_of_the_children_arrives_as_the_children_series(otlp_receiver, monkeypatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy"):  # the endpoint named, never a proxy of the environment
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    with stream_metrics(otlp_receiver.url, command="tune", run="tune-1") as stream:
        for at, cores in ((1000.0, None), (1000.5, 1.25)):
            _live.tell_children(_live.ChildrenSample(at_unix=at, children=3, uss_bytes=30 << 20,
                                                     pss_bytes=45 << 20, cpu_cores=cores))  # fmt: skip
    assert stream is not None and stream.summary is not None
    assert (stream.summary.samples, stream.summary.dropped) == (7, 0)
    labels = {"run": "tune-1", "command": "tune"}
    for name, values in (("pounder_children", [3.0, 3.0]), ("pounder_children_uss_bytes", [30 << 20] * 2),
                         ("pounder_children_pss_bytes", [45 << 20] * 2), ("pounder_children_cpu_cores", [1.25])):
        points = otlp_receiver.points(name)
        assert [value for _, _, value, _ in points] == values, name
        assert all(attributes == labels for attributes, _, _, _ in points)
    assert [t for _, t, _, _ in otlp_receiver.points("pounder_children")] == [1000 * 10**9, 1000_500_000_000]


def test_a_compare_streams_each_variant_under_its_own_target(testserver, otlp_receiver, tmp_path: Path) -> None:
    server = testserver()
    out = tmp_path / "compare.json"
    urls = [f"{server.url}/a", f"{server.url}/b"]
    done = run_pounder("compare", *urls, "--trials", "3", "-n", "200", "-c", "2", "-q", "--json", out,
                       "--metrics-out", otlp_receiver.url, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    trials = json.loads(out.read_text())["trials"]
    last: dict[str, float] = {}
    for attributes, _, value, _ in otlp_receiver.points("pounder_requests_total"):
        assert attributes["command"] == "compare"
        last[attributes["target"]] = value
    # every load counted, its warm-up trial too: the server's own count
    assert last == {url: float(sum(t["complete"] for t in trials if url.endswith(t["label"]))) for url in urls}
    assert sum(last.values()) == server.count()


def test_the_requests_in_flight_are_the_connections_waiting_on_a_slow_server(testserver, otlp_receiver) -> None:
    """Closed loop, 4 connections, a server that answers each request 100 ms after it read it: each
    connection has its request out but for the moment between an answer and the next request, so
    nearly every poll of the measured phase finds 4 in flight (fewer at such a moment: 3, or 2 when
    the ring's completions of two connections were counted before either sent its next request)."""
    server = testserver(delay_ms=100)
    done = run_pounder("bench", server.url + "/", "-d", "2s", "-c", "4", "-q",
                       "--metrics-out", otlp_receiver.url, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    points = otlp_receiver.points("pounder_in_flight_requests")
    counts = [value for _, _, value, _ in points]
    assert len(counts) >= 5, counts  # about 4 a second for 2 s
    assert set(counts) <= {2.0, 3.0, 4.0} and counts.count(4.0) * 10 >= len(counts) * 8, counts
    assert {attributes["target"] for attributes, _, _, _ in points} == {server.url + "/"}
    assert all(unit == "{request}" for _, _, _, unit in points)
