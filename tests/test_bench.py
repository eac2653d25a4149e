"""Running a bench against a fake ``pounder._engine`` (library and CLI): progress, Ctrl-C, outputs."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import pounder
from pounder import BenchResult, PounderError, Progress, bench
from pounder.cli import app

ENGINE_JSON = (Path(__file__).parent / "data" / "engine_result.json").read_text()
URL = "http://127.0.0.1:8080/"


def runner() -> CliRunner:
    """A runner that keeps stderr apart from stdout (click < 8.2 needs mix_stderr=False for that)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg,unused-ignore]
    except TypeError:  # click >= 8.2: always separate
        return CliRunner()


class FakeRun:
    """Finishes after ``finish_after`` waits; raises KeyboardInterrupt on wait number ``interrupt_at``."""

    def __init__(self, spec: dict[str, Any], finish_after: int, interrupt_at: int | None, result: str) -> None:
        self.spec = spec
        self.finish_after = finish_after
        self.interrupt_at = interrupt_at
        self.waits = 0
        self.cancelled = False
        self._result = result

    def wait(self, timeout_s: float) -> bool:
        assert 0 < timeout_s <= 1
        self.waits += 1
        if self.waits == self.interrupt_at:
            raise KeyboardInterrupt
        return self.cancelled or self.waits >= self.finish_after

    def progress(self) -> dict[str, Any]:
        return {
            "phase": "measure",
            "elapsed_s": self.waits * 0.25,
            "complete": 100 * self.waits,
            "failed": 0,
            "rate": 400.0,
        }

    def cancel(self) -> None:
        self.cancelled = True

    def result(self) -> str:
        return self._result


class FakeEngine(types.ModuleType):
    def __init__(self, finish_after: int = 3, interrupt_at: int | None = None, result: str = ENGINE_JSON) -> None:
        super().__init__("pounder._engine")
        self.finish_after, self.interrupt_at, self.result = finish_after, interrupt_at, result
        self.runs: list[FakeRun] = []

    def start(self, spec: dict[str, Any]) -> FakeRun:
        if spec["connections"] < 1:
            raise ValueError("connections must be >= 1")
        run = FakeRun(spec, self.finish_after, self.interrupt_at, self.result)
        self.runs.append(run)
        return run


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    fake = FakeEngine()
    monkeypatch.setitem(sys.modules, "pounder._engine", fake)
    monkeypatch.setattr(pounder, "_engine", fake, raising=False)
    return fake


# ---------------------------------------------------------------------------------------------
# Library


def test_bench_returns_result_and_reports_progress(engine: FakeEngine) -> None:
    seen: list[Progress] = []
    result = bench(URL, connections=4, duration="2s", on_progress=seen.append)
    assert isinstance(result, BenchResult)
    assert result.interrupted is False
    assert result.requests.complete == 4971
    assert result.options.load.connections == 4
    assert result.tool_version == pounder.__version__
    assert result.started_at.endswith("Z")
    assert [p.complete for p in seen] == [100, 200, 300]
    assert seen[-1].planned_s == 2.0 and seen[-1].planned_requests is None
    run = engine.runs[0]
    assert run.spec["duration_s"] == 2.0 and run.spec["connections"] == 4
    assert run.spec["targets"][0]["request"].startswith(b"GET / HTTP/1.1\r\n")


def test_ctrl_c_cancels_and_returns_partial_result(engine: FakeEngine) -> None:
    engine.finish_after, engine.interrupt_at = 100, 2
    seen: list[Progress] = []
    result = bench(URL, on_progress=seen.append)
    run = engine.runs[0]
    assert run.cancelled
    assert result.interrupted is True
    assert seen[-1].interrupted is True
    assert run.waits == 3  # the interrupted wait, then one more that returned at once


def test_bad_input_never_starts_the_engine(engine: FakeEngine) -> None:
    with pytest.raises(pounder.UsageError):
        bench("https://127.0.0.1/")
    assert engine.runs == []


def test_engine_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pounder._engine", None)  # makes the import fail
    monkeypatch.delattr(pounder, "_engine", raising=False)
    with pytest.raises(PounderError, match=r"pounder\._engine cannot be loaded"):
        bench(URL)


def test_malformed_engine_result(engine: FakeEngine) -> None:
    engine.result = json.dumps({"elapsed_s": 1.0})
    with pytest.raises(PounderError, match="the engine returned a malformed result: missing '"):
        bench(URL)


# ---------------------------------------------------------------------------------------------
# CLI


def invoke(*args: str) -> Any:
    return runner().invoke(app, ["bench", *args])


def test_cli_prints_report(engine: FakeEngine) -> None:
    result = invoke("-c", "8", "-d", "1s", URL)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # no progress when stderr is not a terminal
    assert "Complete requests:        4971" in result.stdout
    assert engine.runs[0].spec["connections"] == 8


def test_cli_outputs(engine: FakeEngine, tmp_path: Path) -> None:
    json_path, csv_path = tmp_path / "r.json", tmp_path / "r.csv"
    result = invoke("--rate", "100", "-n", "500", "--json", str(json_path), "--csv", str(csv_path), "-q", URL)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    saved = pounder.load_result(json_path)
    assert saved.options.load.stages == (pounder.Stage(5.0, 100.0, 100.0),)
    assert csv_path.read_text().startswith("percent,latency_ms\n0,0.391\n")


def test_cli_json_to_stdout_replaces_report(engine: FakeEngine) -> None:
    result = invoke("--json", "-", URL)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["schema"] == "pounder/bench-result/1"


def test_cli_interrupted_exits_130_with_report(engine: FakeEngine) -> None:
    engine.finish_after, engine.interrupt_at = 100, 1
    result = invoke(URL)
    assert result.exit_code == 130
    assert "Interrupted:              yes (Ctrl-C): partial result" in result.stdout


def test_cli_engine_missing_is_one_line_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pounder._engine", None)
    monkeypatch.delattr(pounder, "_engine", raising=False)
    result = invoke(URL)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("pounder: error: the load engine")


def test_cli_output_write_failure(engine: FakeEngine, tmp_path: Path) -> None:
    target = tmp_path / "readonly"
    target.mkdir()
    out = target / "r.json"
    out.mkdir()  # a directory where the file should go: caught before the run
    result = invoke("--json", str(out), URL)
    assert result.exit_code == 2 and "is a directory" in result.stderr
    assert engine.runs == []


def test_version() -> None:
    result = runner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"pounder {pounder.__version__}\n"
