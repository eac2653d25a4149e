"""Running a bench for real: ``pounder.bench()`` and ``pounder bench`` with the Rust engine against the
test servers of tests/support/testserver.py (the ``testserver`` fixture), on loopback.

Progress callbacks, Ctrl-C (a real interrupt of the main thread, a real SIGINT to the CLI), output
files, and what happens before anything is sent (bad input, unwritable outputs, no engine). Each test
loads a server for at most about 1.5 s.
"""

from __future__ import annotations

import _thread
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from typer.testing import CliRunner

import pounder
from pounder import BenchResult, Progress, Stage, UsageError, bench
from pounder.cli import app
from support.cliutil import pounder_argv, start_pounder

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
PHASES = ("warmup", "measure", "drain", "done")
INTERRUPTED_LINE = "Interrupted:              yes: partial result"
TSV_COLUMNS = [
    "start_unix_us", "intended_offset_us", "target", "status", "latency_us",
    "uncorrected_us", "connect_us", "waiting_us", "bytes", "error", "tls_us",
]  # fmt: skip
HAS_PROC = os.path.isdir("/proc/self")
needs_proc = pytest.mark.skipif(not HAS_PROC, reason="needs /proc (a directory where no file can be created)")
SUBPROCESS_TIMEOUT_S = 20.0
T = TypeVar("T")


def runner() -> CliRunner:
    """A runner that keeps stderr apart from stdout (click < 8.2 needs mix_stderr=False for that)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg,unused-ignore]
    except TypeError:  # click >= 8.2: always separate
        return CliRunner()


def invoke(*args: str) -> Any:
    return runner().invoke(app, ["bench", *args])


def interrupted_after(delays_s: Sequence[float], call: Callable[[], T]) -> T:
    """``call()`` while the main thread gets a real interrupt (as from Ctrl-C) after each delay.
    A KeyboardInterrupt escaping ``call`` fails the test instead of ending the pytest session."""
    timers = [threading.Timer(delay, _thread.interrupt_main) for delay in delays_s]
    for timer in timers:
        timer.start()
    try:
        return call()
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped the bench")
    finally:
        for timer in timers:
            timer.cancel()
            timer.join()


def assert_sane_progress(seen: list[Progress], result: BenchResult) -> None:
    """Phases in order, counters never going back, the last snapshot agreeing with the result."""
    assert seen, "on_progress was never called"
    assert all(p.phase in PHASES for p in seen), [p.phase for p in seen]
    order = [PHASES.index(p.phase) for p in seen]
    assert order == sorted(order), [p.phase for p in seen]
    completes = [p.complete for p in seen]
    assert completes == sorted(completes) and completes[0] >= 0
    fails = [p.failed for p in seen]
    assert fails == sorted(fails) and fails[0] >= 0
    assert all(p.rate >= 0 and p.elapsed_s >= 0 for p in seen)
    measured = [p.elapsed_s for p in seen if p.phase != "warmup"]
    assert measured == sorted(measured)
    last = seen[-1]
    assert last.phase == "done"
    assert (last.complete, last.failed) == (result.requests.complete, result.requests.failed)
    assert last.interrupted is result.interrupted
    flags = [p.interrupted for p in seen]
    assert flags == sorted(flags)  # once interrupted, always interrupted
    assert all(p.planned_s == result.options.load.duration_s for p in seen)
    assert all(p.planned_requests == result.options.load.requests for p in seen)


# ---------------------------------------------------------------------------------------------
# Library


def test_bench_result_matches_what_the_server_saw(testserver: Any, io_path: str) -> None:
    srv = testserver(delay_ms=20, body_size=100)
    result = bench(srv.url + "/", connections=2, duration="0.5s", io=io_path)
    assert isinstance(result, BenchResult)
    assert result.io is not None and (result.io.path, result.io.reason) == (io_path, "asked for")
    assert result.interrupted is False
    assert result.tool_version == pounder.__version__
    assert result.started_at.endswith("Z")
    load = result.options.load
    assert (load.kind, load.connections, load.duration_s, load.requests) == ("closed", 2, 0.5, None)
    assert 0.45 <= result.elapsed_s <= 1.0
    complete = result.requests.complete
    # 2 connections, each waiting 20 ms per response for 0.5 s (+ one in flight each at the end)
    assert 20 <= complete <= 2 * 0.5 / 0.020 + 2, complete
    assert result.requests.failed == 0 and result.errors.aborted == 0
    assert result.status == {"200": complete}
    assert result.bytes.body == 100 * complete
    assert result.latency.uncorrected.min_us >= 20_000  # the server's delay is in every latency
    assert result.latency.uncorrected.count == complete
    assert result.connections_opened == 2
    assert srv.count() == complete
    assert srv.connections() == 2


@pytest.mark.parametrize(
    "limits",
    [
        pytest.param({"warmup": "0.6s", "duration": "0.6s"}, id="warmup+duration"),
        pytest.param({"requests": 2000}, id="requests"),
    ],
)
def test_progress_callback(testserver: Any, limits: dict[str, Any]) -> None:
    srv = testserver()
    seen: list[Progress] = []
    result = bench(srv.url + "/", connections=4, on_progress=seen.append, **limits)
    assert_sane_progress(seen, result)
    assert result.interrupted is False and result.requests.failed == 0
    phases = {p.phase for p in seen}
    assert "measure" in phases
    if "warmup" in limits:
        assert seen[0].phase == "warmup"
        assert seen[-1].planned_s == 0.6 and seen[-1].planned_requests is None
        assert result.warmup.complete > 0
        assert len(seen) >= 4  # every 0.25 s over 1.2 s
    else:
        assert seen[-1].planned_s is None and seen[-1].planned_requests == 2000
        assert result.requests.complete == 2000
    assert srv.count() == result.warmup.complete + result.requests.complete


def test_ctrl_c_returns_partial_result(testserver: Any) -> None:
    srv = testserver()
    seen: list[Progress] = []
    start = time.monotonic()
    result = interrupted_after(
        [1.0], lambda: bench(srv.url + "/", connections=4, duration="30s", on_progress=seen.append)
    )
    wall = time.monotonic() - start
    assert wall < 5, wall
    assert result.interrupted is True
    assert result.requests.complete > 0 and result.requests.failed == 0
    assert 0.5 <= result.elapsed_s <= 3, result.elapsed_s  # measured until the interrupt, not 30 s
    assert_sane_progress(seen, result)
    assert seen[0].interrupted is False and seen[-1].interrupted is True
    assert srv.count() == result.requests.complete  # nothing sent after the drain


def test_ctrl_c_aborts_requests_still_in_flight_after_the_drain(testserver: Any) -> None:
    srv = testserver(mode="silent")  # never answers: both requests stay in flight
    seen: list[Progress] = []
    start = time.monotonic()
    result = interrupted_after(
        [0.5], lambda: bench(srv.url + "/", connections=2, duration="30s", on_progress=seen.append)
    )
    wall = time.monotonic() - start
    assert wall < 4, wall  # the drain after a Ctrl-C lasts 0.2 s
    assert result.interrupted is True
    assert result.requests.complete == 0
    assert result.requests.failed == result.errors.aborted == 2
    assert "drain" in {p.phase for p in seen}
    assert_sane_progress(seen, result)
    assert srv.count() == 2


def test_second_ctrl_c_while_draining_propagates(testserver: Any) -> None:
    srv = testserver(mode="silent")  # the drain after the first Ctrl-C lasts its full 0.2 s
    sent: list[str] = []

    def second(progress: Progress) -> None:
        if progress.phase == "drain" and not sent:  # the first was seen: the run drains
            sent.append(progress.phase)
            _thread.interrupt_main()

    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            bench(srv.url + "/", connections=2, duration="30s", on_progress=second)
    finally:
        timer.cancel()
        timer.join()
    assert sent == ["drain"]


def test_bad_input_sends_nothing(testserver: Any) -> None:
    srv = testserver()
    port = srv.url.rsplit(":", 1)[1]
    for kwargs in ({"connections": 0}, {"duration": "soon"}, {"rate": 100, "stages": "1s@100"}):
        with pytest.raises(UsageError):
            bench(srv.url + "/", **kwargs)
    with pytest.raises(UsageError, match="--insecure applies to https:// targets"):
        bench(f"http://127.0.0.1:{port}/", insecure=True)
    assert srv.count(settle_s=0.3) == 0


@needs_proc
def test_unwritable_output_is_a_usage_error_before_sending(testserver: Any) -> None:
    srv = testserver()
    with pytest.raises(UsageError, match=r"--tsv: cannot write /proc/"):
        bench(srv.url + "/", requests=10, tsv_path="/proc/pounder-test.tsv")
    assert srv.count(settle_s=0.3) == 0


@pytest.fixture
def no_engine_path(tmp_path: Path) -> Iterator[Path]:
    """A directory holding a copy of the pure-Python package without the compiled engine: with it
    first on PYTHONPATH, ``import pounder`` works and ``pounder._engine`` cannot be imported."""
    root = tmp_path / "no-engine"
    skip = shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    shutil.copytree(PYTHON_DIR / "pounder", root / "pounder", ignore=skip)
    assert not list((root / "pounder").glob("_engine*.so"))
    yield root


def run_without_engine(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, *args],
        check=False, cwd=root, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S,
    )  # fmt: skip


def test_engine_missing(testserver: Any, no_engine_path: Path) -> None:
    srv = testserver()
    code = (
        "import sys, pounder\n"
        "assert pounder.__file__.startswith(sys.argv[1]), pounder.__file__\n"
        "try:\n"
        "    pounder.bench(sys.argv[2])\n"
        "except pounder.PounderError as error:\n"
        "    print(type(error).__name__, error)\n"
    )
    proc = run_without_engine(no_engine_path, "-c", code, str(no_engine_path), srv.url + "/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("PounderError the load engine pounder._engine cannot be loaded ("), proc.stdout
    assert proc.stdout.rstrip().endswith("is pounder built?")
    assert srv.count(settle_s=0.3) == 0


# ---------------------------------------------------------------------------------------------
# CLI


def report_value(report: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}:\s+(.*)$", report, re.MULTILINE)
    assert match, f"no {label!r} line in the report:\n{report}"
    return match.group(1)


def test_cli_prints_report(testserver: Any) -> None:
    srv = testserver(body_size=50)
    result = invoke("-c", "3", "-n", "300", srv.url + "/")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # no progress when stderr is not a terminal
    assert report_value(result.stdout, "Complete requests") == "300"
    assert report_value(result.stdout, "Failed requests") == "0"
    assert report_value(result.stdout, "Body transferred") == f"{300 * 50} bytes"
    assert report_value(result.stdout, "Load model").startswith("closed loop, 3 connections")
    assert "Interrupted" not in result.stdout
    assert srv.count() == 300
    assert srv.connections() == 3


def test_cli_output_files(testserver: Any, tmp_path: Path, io_path: str) -> None:
    srv = testserver()
    paths = {name: tmp_path / f"r.{name}" for name in ("json", "csv", "tsv", "hlog")}
    result = invoke(
        "--rate", "100", "-n", "50", "-q", "--json", str(paths["json"]), "--csv", str(paths["csv"]),
        "--tsv", str(paths["tsv"]), "--hdr-log", str(paths["hlog"]), "--io", io_path, srv.url + "/",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    assert srv.count() == 50

    saved = pounder.load_result(paths["json"])
    assert saved.io is not None and saved.io.path == io_path
    assert saved.interrupted is False
    assert saved.options.load.kind == "open"
    assert saved.options.load.stages == (Stage(0.5, 100.0, 100.0),)
    assert saved.requests.complete == 50

    csv_lines = paths["csv"].read_text().splitlines()
    assert csv_lines[0] == "percent,latency_ms"
    percents = [line.split(",")[0] for line in csv_lines[1:]]
    assert percents == ["0", "50", "66", "75", "80", "90", "95", "98", "99", "99.9", "100"]
    assert all(float(line.split(",")[1]) > 0 for line in csv_lines[1:])

    tsv_lines = paths["tsv"].read_text().splitlines()
    assert tsv_lines[0].split("\t") == TSV_COLUMNS
    rows = [line.split("\t") for line in tsv_lines[1:]]
    assert len(rows) == 50
    assert {row[3] for row in rows} == {"200"} and {row[9] for row in rows} == {""}
    # open loop at 100 req/s: one request intended every 10 ms
    assert sorted(int(row[1]) for row in rows) == [10_000 * k for k in range(50)]

    hlog = paths["hlog"].read_text().splitlines()
    assert hlog[0].startswith("#")
    assert any(not line.startswith("#") and "HISTF" in line for line in hlog), hlog


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_cli_output_to_stdout_replaces_report(testserver: Any, flag: str) -> None:
    srv = testserver()
    result = invoke(flag, "-", "-n", "100", srv.url + "/")
    assert result.exit_code == 0, result.stderr
    assert "Complete requests" not in result.stdout
    if flag == "--json":
        data = json.loads(result.stdout)
        assert data["schema"] == pounder.SCHEMA
        assert data["requests"]["complete"] == 100
    else:
        assert result.stdout.startswith("percent,latency_ms\n0,")
    assert srv.count() == 100


def test_cli_ctrl_c_exits_130_with_partial_report(testserver: Any, tmp_path: Path) -> None:
    srv = testserver()
    out = tmp_path / "out.json"
    start = time.monotonic()
    proc = start_pounder("bench", srv.url + "/", "-d", "30s", "--json", out, stdin=subprocess.DEVNULL)
    try:
        # SIGINT once the load is really on (not while Python is still importing), about 1 s in
        deadline = start + 10
        while srv.count(settle_s=0) == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(max(0.2, 1.0 - (time.monotonic() - start)))
        interrupted_at = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert time.monotonic() - interrupted_at < 5
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert "Traceback" not in stderr
    assert stderr == ("pounder: error: interrupted by Ctrl-C; the partial result is reported above and written to "
                      f"{out}\n")
    assert INTERRUPTED_LINE in stdout
    saved = json.loads(out.read_text())
    assert saved["interrupted"] is True
    complete = saved["requests"]["complete"]
    assert complete > 0 and saved["requests"]["failed"] == 0
    assert report_value(stdout, "Complete requests") == str(complete)
    assert saved["elapsed_s"] < 5
    assert srv.count() == complete


@pytest.mark.parametrize(
    ("flag", "where", "code", "message"),
    [
        ("--json", "dir", 2, "--json: {path} is a directory"),
        ("--csv", "missing", 2, "--csv: directory {parent} does not exist"),
        ("--tsv", "missing", 2, "--tsv: directory {parent} does not exist"),
        ("--hdr-log", "dir", 2, "--hdr-log: {path} is a directory"),
        pytest.param("--tsv", "proc", 2, "--tsv: cannot write {path}", marks=needs_proc),
        pytest.param("--hdr-log", "proc", 2, "--hdr-log: cannot write {path}", marks=needs_proc),
        pytest.param("--json", "proc", 2, "--json: cannot write {path}", marks=needs_proc),
        pytest.param("--csv", "proc", 2, "--csv: cannot write {path}", marks=needs_proc),
    ],
)
def test_cli_bad_output_path_sends_nothing(
    testserver: Any, tmp_path: Path, flag: str, where: str, code: int, message: str
) -> None:
    srv = testserver()
    if where == "dir":  # a directory where the file should go
        path = tmp_path / "out"
        path.mkdir()
    elif where == "missing":
        path = tmp_path / "no-such-dir" / "out"
    else:  # an existing directory in which no file can be created, even by root
        path = Path("/proc/pounder-test-output")
    result = invoke(flag, str(path), "-n", "20", srv.url + "/")
    assert result.exit_code == code, (result.exit_code, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("pounder: error: " + message.format(path=path, parent=path.parent)), lines[0]
    assert srv.count(settle_s=0.3) == 0


def test_cli_engine_missing_is_one_line_exit_1(testserver: Any, no_engine_path: Path) -> None:
    srv = testserver()
    proc = run_without_engine(no_engine_path, *pounder_argv("bench", "-n", "10", srv.url + "/")[1:])
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("pounder: error: the load engine pounder._engine cannot be loaded ("), proc.stderr
    assert srv.count(settle_s=0.3) == 0


def test_version() -> None:
    result = runner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"pounder {pounder.__version__}\n"
