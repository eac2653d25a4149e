"""``--metrics-out prometheus+http://...``: a bench's seconds written to a real Prometheus
(Debian's, started by the fixture with its remote-write receiver) and read back through its HTTP
API equal the run's own figures; with Prometheus stopped mid-run the run is whole and the drops
are counted in one line."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from support.cliutil import run_pounder, start_pounder
from support.prometheus import Prometheus, dashboard_queries

DURATION = "3s"


def _bench_args(url: str, out: Path, metrics: str) -> list[str]:
    return ["bench", url, "-d", DURATION, "-c", "2", "-q", "--json", str(out), "--metrics-out", metrics]


def _one(found: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]]) -> tuple[dict[str, str], list[float]]:
    assert len(found) == 1, found
    ((labels, samples),) = found.items()
    times = [t for t, _ in samples]
    assert times == sorted(times)
    return dict(labels), [value for _, value in samples]


def test_a_bench_written_to_prometheus_reads_back_as_its_figures(testserver, prometheus: Prometheus,
                                                                 tmp_path: Path) -> None:  # fmt: skip
    server = testserver(delay_ms=2)
    out = tmp_path / "bench.json"
    proxied = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"}  # not used
    done = run_pounder(*_bench_args(server.url + "/", out, prometheus.write_url), timeout=60, env=proxied)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    complete = result["requests"]["complete"]
    assert complete == server.count() > 0  # the run's count is the server's
    line = done.stderr.strip().splitlines()[-1]
    assert re.fullmatch(rf"pounder: metrics: \d+ samples sent to http://127\.0\.0\.1:{prometheus.port}/api/v1/write",
                        line), done.stderr
    found = prometheus.samples("pounder_requests_total")
    labels, totals = _one(found)
    totals_at = [t for t, _ in next(iter(found.values()))]
    assert labels["command"] == "bench" and labels["target"] == server.url + "/"
    assert re.fullmatch(r"bench-\d{8}T\d{6}Z-\d+", labels["run"])
    seconds = result["series"]
    # the counter: each second's total, the last the run's complete requests exactly
    assert totals[-1] == complete
    assert totals == [float(sum(s["complete"] for s in seconds[:i + 1])) for i in range(len(seconds))]
    assert _one(prometheus.samples("pounder_failed_total"))[1][-1] == result["requests"]["failed"]
    assert _one(prometheus.samples("pounder_non_2xx_total"))[1][-1] == result["requests"]["non_2xx"]
    # each second's p99 and max at its own time, as the run's series says (within 1 %)
    measured = [s for s in seconds if s["complete"] > 0]
    for name, key in (("pounder_latency_p99_seconds", "p99_us"), ("pounder_latency_max_seconds", "max_us"),
                      ("pounder_latency_p50_seconds", "p50_us")):
        assert _one(prometheus.samples(name))[1] == pytest.approx([s[key] / 1e6 for s in measured], rel=0.01), name
    errors = prometheus.samples("pounder_errors_total")
    assert {dict(k)["category"] for k in errors} == set(result["errors"])
    assert all(samples[-1][1] == result["errors"][dict(k)["category"]] for k, samples in errors.items())
    # the Grafana dashboard's queries run on what was written
    for query in dashboard_queries():
        answer = prometheus.query(query.replace("$__rate_interval", "5s").replace("$run", labels["run"]),
                                  at=totals_at[-1])
        assert answer["status"] == "success", (query, answer)


def test_prometheus_stopped_mid_run_leaves_the_run_whole_and_counts_the_drops(testserver, prometheus: Prometheus,
                                                                              tmp_path: Path) -> None:  # fmt: skip
    server = testserver(delay_ms=2)
    out = tmp_path / "bench.json"
    bench = start_pounder(*_bench_args(server.url + "/", out, prometheus.write_url))
    try:
        deadline = time.monotonic() + 20
        while not prometheus.samples("pounder_requests_total") and time.monotonic() < deadline:
            time.sleep(0.1)  # Prometheus has its first second
        prometheus.stop()
        stdout, stderr = bench.communicate(timeout=60)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    assert bench.returncode == 0, stderr
    result = json.loads(out.read_text())
    assert not result["interrupted"]
    assert result["requests"]["complete"] == server.count() > 0
    assert sum(s["complete"] for s in result["series"]) == result["requests"]["complete"]
    line = stderr.strip().splitlines()[-1]
    found = re.fullmatch(r"pounder: metrics: (\d+) of (\d+) samples dropped \((.+)\)", line)
    assert found is not None, stderr
    dropped, made = int(found[1]), int(found[2])
    assert 0 < dropped < made
    assert "Connection refused" in found[3] or "connection" in found[3].lower(), found[3]
