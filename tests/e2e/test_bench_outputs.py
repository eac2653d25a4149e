"""Outputs of a real run: ``--json`` (schema, round trip), ``--csv``, ``--tsv``, ``--hdr-log``, the
series, the text report on stdout, and a silent stderr when it is not a terminal.

Most tests share one CLI run (module fixture ``cli_bench``): ``python -m pounder bench`` against
a server answering in 2 ms, 2 connections for 2.5 s, writing every file.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest

import pounder
from pounder import BenchResult
from support.hdr import decode_hdr, hdr_log_intervals
from support.schemas import REGISTRY

SCHEMA_PATH = Path(pounder.__file__).resolve().parent / "schemas" / "bench-result.schema.json"
TSV_COLUMNS = [
    "start_unix_us", "intended_offset_us", "target", "status", "latency_us", "uncorrected_us",
    "connect_us", "waiting_us", "bytes", "error", "tls_us",
]  # fmt: skip
CSV_PERCENTS = ["0", "50", "66", "75", "80", "90", "95", "98", "99", "99.9", "100"]
RUN_SECONDS = 2.5


def within(value_us: int, hdr_range: tuple[int, int]) -> bool:
    return hdr_range[0] <= value_us <= hdr_range[1]


def close_to(a: float, b: float) -> bool:
    """Equal within the HdrHistogram precision (3 significant digits: 0.1 %), plus a microsecond."""
    return abs(a - b) <= max(a, b) * 0.002 + 1


# ---------------------------------------------------------------------------------------------
# The shared run


@dataclass(frozen=True)
class CliBench:
    returncode: int
    stdout: str
    stderr: str
    json_path: Path
    csv_path: Path
    tsv_path: Path
    hdr_path: Path
    server_requests: int
    server_connections: int

    @property
    def data(self) -> dict:
        return json.loads(self.json_path.read_text())

    @property
    def result(self) -> BenchResult:
        return pounder.load_result(self.json_path)

    def tsv_rows(self) -> tuple[list[str], list[dict[str, str]]]:
        lines = self.tsv_path.read_text().splitlines()
        header = lines[0].split("\t")
        return header, [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


@pytest.fixture(scope="module")
def cli_bench(module_testserver, tmp_path_factory, cli) -> CliBench:
    srv = module_testserver(mode="ok", delay_ms=2, body_size=100)
    out = tmp_path_factory.mktemp("outputs")
    paths = {name: out / f"result.{name}" for name in ("json", "csv", "tsv", "hdr")}
    proc = cli(
        srv.url + "/", "-c", "2", "-t", "2", "-d", f"{RUN_SECONDS}s",
        "--json", str(paths["json"]), "--csv", str(paths["csv"]),
        "--tsv", str(paths["tsv"]), "--hdr-log", str(paths["hdr"]),
    )  # fmt: skip
    stats = srv.stats()
    return CliBench(
        proc.returncode, proc.stdout, proc.stderr,
        paths["json"], paths["csv"], paths["tsv"], paths["hdr"],
        stats["requests"], stats["connections"],
    )  # fmt: skip


def test_cli_exits_cleanly_without_progress(cli_bench, assert_cli_ok):
    # stderr is a pipe, not a terminal: no progress line, nothing at all on success
    assert_cli_ok(cli_bench)
    assert cli_bench.stderr == ""


def test_json_matches_schema(cli_bench):
    schema = json.loads(SCHEMA_PATH.read_text())
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker(), registry=REGISTRY)
    errors = sorted(validator.iter_errors(cli_bench.data), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_json_round_trips_through_load_result(cli_bench):
    result = cli_bench.result
    assert result.to_json() == cli_bench.json_path.read_text()
    assert json.loads(result.to_json()) == cli_bench.data
    assert result.requests.complete == cli_bench.data["requests"]["complete"]
    assert result.connections_opened == cli_bench.data["connections"]["opened"]


def test_json_counts_match_server(cli_bench):
    result = cli_bench.result
    assert result.requests.complete > 0
    assert result.requests.failed == 0
    assert result.requests.complete + result.requests.failed == cli_bench.server_requests
    assert result.connections_opened == cli_bench.server_connections == 2
    assert result.status == {"200": result.requests.complete}
    assert result.options.load.duration_s == RUN_SECONDS
    assert result.options.load.connections == 2
    assert result.options.load.threads == 2
    assert result.elapsed_s >= RUN_SECONDS


def test_json_histogram_decodes_to_corrected_latency(cli_bench):
    result = cli_bench.result
    hdr = decode_hdr(result.histogram)
    corrected = result.latency.corrected
    assert hdr.total == corrected.count == result.requests.complete
    assert within(corrected.max_us, hdr.max_range), (corrected.max_us, hdr.max_range)
    assert within(corrected.min_us, hdr.min_range), (corrected.min_us, hdr.min_range)


def test_series_add_up(cli_bench):
    result = cli_bench.result
    series = result.series
    assert [second.second for second in series] == list(range(len(series)))
    assert len(series) == math.ceil(result.elapsed_s)  # 2.5 s: seconds 0, 1 and a partial 2
    assert sum(second.complete for second in series) == result.requests.complete
    assert sum(second.failed for second in series) == result.requests.failed
    assert max(second.max_us for second in series) == result.latency.corrected.max_us
    for second in series:
        assert second.complete > 0
        assert second.p50_us <= second.p99_us <= second.max_us
        assert second.bytes > 0
    assert sum(second.bytes for second in series) == result.bytes.total


def test_csv_has_documented_rows(cli_bench):
    result = cli_bench.result
    lines = cli_bench.csv_path.read_text().splitlines()
    assert lines[0] == "percent,latency_ms"
    rows = [line.split(",") for line in lines[1:]]
    assert [percent for percent, _ in rows] == CSV_PERCENTS
    values = [float(ms) for _, ms in rows]
    assert all(len(ms.split(".")[1]) == 3 for _, ms in rows)  # milliseconds, 3 decimals
    assert values == sorted(values)
    corrected = result.latency.corrected
    expected = [corrected.min_us] + [corrected.percentiles[p] for p in CSV_PERCENTS[1:]]
    assert values == [round(us / 1000, 3) for us in expected]


def test_tsv_one_row_per_request(cli_bench):
    result = cli_bench.result
    header, rows = cli_bench.tsv_rows()
    assert header == TSV_COLUMNS
    assert len(rows) == result.requests.complete + result.requests.failed
    assert all(row["status"] == "200" and row["error"] == "" and row["target"] == "0" for row in rows)
    # closed loop: corrected == uncorrected; only the requests that opened a connection have a connect time
    assert all(row["latency_us"] == row["uncorrected_us"] for row in rows)
    assert sum(1 for row in rows if row["connect_us"] != "") == result.connections_opened
    assert sum(int(row["bytes"]) for row in rows) == result.bytes.total


def test_tsv_latencies_agree_with_json(cli_bench):
    result = cli_bench.result
    _, rows = cli_bench.tsv_rows()
    latencies = sorted(int(row["latency_us"]) for row in rows)
    corrected = result.latency.corrected
    assert len(latencies) == corrected.count
    assert close_to(latencies[-1], corrected.max_us), (latencies[-1], corrected.max_us)
    assert close_to(latencies[0], corrected.min_us), (latencies[0], corrected.min_us)
    assert close_to(statistics.fmean(latencies), corrected.mean_us), (statistics.fmean(latencies), corrected.mean_us)
    median = latencies[math.ceil(len(latencies) * 0.5) - 1]
    assert close_to(median, corrected.percentiles["50"]), (median, corrected.percentiles["50"])
    waiting = sorted(int(row["waiting_us"]) for row in rows)
    assert close_to(waiting[-1], result.phases.waiting.max_us), (waiting[-1], result.phases.waiting.max_us)


def test_tsv_start_times_are_in_the_run(cli_bench):
    result = cli_bench.result
    _, rows = cli_bench.tsv_rows()
    starts = [int(row["start_unix_us"]) for row in rows]
    offsets = [int(row["intended_offset_us"]) for row in rows]
    assert max(starts) - min(starts) <= result.elapsed_s * 1e6
    assert min(offsets) >= 0
    assert max(offsets) <= (result.warmup.elapsed_s + result.elapsed_s) * 1e6


def test_hdr_log_one_interval_per_second(cli_bench):
    result = cli_bench.result
    intervals = hdr_log_intervals(cli_bench.hdr_path)
    assert len(intervals) == len(result.series)
    for (start, length, interval_max, hdr), second in zip(intervals, result.series, strict=True):
        assert start == pytest.approx(second.second, abs=0.01)
        assert length == pytest.approx(1.0, abs=0.01)
        assert hdr.total == second.complete  # same requests, by completion second
        assert within(second.max_us, hdr.max_range), (second.max_us, hdr.max_range)
        assert close_to(interval_max, second.max_us), (interval_max, second.max_us)
    assert sum(hdr.total for *_, hdr in intervals) == result.requests.complete


def test_report_on_stdout(cli_bench):
    result = cli_bench.result
    out = cli_bench.stdout
    assert out.startswith(f"pounder {pounder.__version__}, started ")
    expected_lines = [
        f"Complete requests:        {result.requests.complete}",
        "Failed requests:          0",
        "Non-2xx responses:        0",
        f"Total transferred:        {result.bytes.total} bytes",
        f"Connections opened:       {result.connections_opened}",
        "Load model:               closed loop, 2 connections, 2 threads",
        "Status codes",
        f"  200: {result.requests.complete}",
    ]
    lines = out.splitlines()
    for expected in expected_lines:
        assert expected in lines, f"{expected!r} not in the report:\n{out}"
    for fragment in ("Target:", "Requests per second:", "Connection Times (ms)", "Latency percentiles (ms)",
                     "Reply rate [replies/s]:", "Client CPU:"):  # fmt: skip
        assert fragment in out, f"{fragment!r} not in the report:\n{out}"
    assert "Traceback" not in out


# ---------------------------------------------------------------------------------------------
# Single-purpose runs


def test_json_to_stdout_replaces_report(testserver, cli, tmp_path):
    srv = testserver(mode="ok")
    proc = cli(srv.url + "/", "-c", "2", "-n", "50", "--json", "-")

    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    data = json.loads(proc.stdout)  # only the JSON, no report around it
    assert data["schema"] == pounder.SCHEMA
    assert data["requests"]["complete"] == 50
    assert srv.count() == 50
    saved = tmp_path / "stdout.json"
    saved.write_text(proc.stdout)
    assert pounder.load_result(saved).requests.complete == 50


def test_quiet_writes_files_only(testserver, cli, tmp_path):
    srv = testserver(mode="ok")
    json_path = tmp_path / "r.json"
    proc = cli(srv.url + "/", "-c", "2", "-n", "30", "-q", "--json", str(json_path))

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == ""
    assert pounder.load_result(json_path).requests.complete == 30


def test_tsv_errors_and_library_outputs(testserver, run, tmp_path):
    srv = testserver(mode="reset")
    tsv, hdr = tmp_path / "r.tsv", tmp_path / "r.hdr"
    result = run(srv.url + "/", connections=2, requests=20, tsv_path=tsv, hdr_log_path=hdr)

    assert result.errors.reset == 20
    lines = tsv.read_text().splitlines()
    assert lines[0].split("\t") == TSV_COLUMNS
    rows = [dict(zip(TSV_COLUMNS, line.split("\t"), strict=True)) for line in lines[1:]]
    assert len(rows) == 20
    assert all(row["error"] == "reset" for row in rows)
    assert sum(hdr_.total for *_, hdr_ in hdr_log_intervals(hdr)) == 0  # no latency from failures
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator(schema, registry=REGISTRY).validate(json.loads(result.to_json()))


def test_tsv_open_loop_intended_offsets(testserver, run, tmp_path):
    srv = testserver(mode="ok")
    tsv = tmp_path / "r.tsv"
    result = run(srv.url + "/", rate=100, duration="1s", tsv_path=tsv)

    assert result.requests.complete == 100
    rows = [line.split("\t") for line in tsv.read_text().splitlines()[1:]]
    offsets = sorted(int(row[TSV_COLUMNS.index("intended_offset_us")]) for row in rows)
    assert offsets == [k * 10_000 for k in range(100)]  # the schedule: every 10 ms from the start
    for row in rows:
        corrected = int(row[TSV_COLUMNS.index("latency_us")])
        uncorrected = int(row[TSV_COLUMNS.index("uncorrected_us")])
        assert corrected >= uncorrected
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator(schema, registry=REGISTRY).validate(json.loads(result.to_json()))
    assert srv.count() == 100
