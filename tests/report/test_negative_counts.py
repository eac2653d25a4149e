"""Issue 25 item 17: a result edited to hold a negative count (or a fraction of a request, or a
negative duration) is bad input, read by the library or by ``pounder report``: one line naming
the file and the key, :class:`~pounder.UsageError` from the library, exit status 2 from the
command, never a traceback and never a page. The results are real: a bench against the test
server, a ``pounder mem`` snapshot of this process, a comparison, a recorded tuning run."""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pounder
from pounder import UsageError
from pounder.compare import Variant, compare
from pounder.procs import load_mem, snapshot
from support.cliutil import assert_usage_error, run_cli, run_pounder, with_pythonpath

DEMO = Path(__file__).resolve().parents[1] / "data" / "tune-demo"

Document = dict[str, Any]


def setter(*path: str | int, value: object = -5) -> Callable[[Document], str]:
    """Sets ``path`` of a document to ``value``; returns the key as the messages name it."""
    def mutate(document: Document) -> str:
        target: Any = document
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return mutate


BENCH_CASES = {
    "complete": setter("requests", "complete"),
    "failed": setter("requests", "failed", value=-1),
    "status": setter("status", "200", value=-7),
    "error": setter("errors", "refused", value=-3),
    "bytes": setter("bytes", "total", value=-100),
    "connections": setter("connections", "opened", value=-1),
    "series": setter("series", 0, "complete", value=-2),
    "series bytes": setter("series", 0, "bytes", value=-2),
    "percentile": setter("latency", "corrected", "percentiles", "99", value=-1),
    "histogram count": setter("phases", "total", "count", value=-1),
    "warm-up": setter("warmup", "complete", value=-1),
    "fraction": setter("requests", "complete", value=1.5),
    "elapsed": setter("elapsed_s", value=-1.0),
    "cpu": setter("client_cpu", "user_s", value=-0.5),
}


@pytest.fixture
def bench_doc(testserver: Any) -> Document:
    """A real bench result (50 requests to the test server), as its JSON document."""
    result = pounder.bench(testserver().url + "/", connections=2, requests=50)
    document: Document = json.loads(result.to_json())
    assert document["requests"]["complete"] == 50 and document["series"] and document["status"]["200"] == 50
    return document


def write(path: Path, document: Document) -> Path:
    path.write_text(json.dumps(document, indent=2))
    return path


@pytest.mark.parametrize("case", list(BENCH_CASES))
def test_a_bench_result_with_a_negative_count_is_refused(bench_doc: Document, tmp_path: Path, case: str) -> None:
    document = copy.deepcopy(bench_doc)
    key = BENCH_CASES[case](document)
    path = write(tmp_path / "edited.json", document)
    with pytest.raises(UsageError) as raised:
        pounder.load_result(path)
    message = str(raised.value)
    assert str(path) in message and f"'{key}'" in message and "\n" not in message, message
    page = tmp_path / "page.html"
    line = assert_usage_error(*run_cli("report", str(path), "-o", str(page)), str(path), f"'{key}'")
    assert ">= 0" in line, line
    assert not page.exists()


def test_the_unedited_result_still_loads_and_renders(bench_doc: Document, tmp_path: Path) -> None:
    path = write(tmp_path / "fine.json", bench_doc)
    assert pounder.load_result(path).requests.complete == 50
    code, stdout, stderr = run_cli("report", str(path), "-o", str(tmp_path / "page.html"))
    assert (code, stderr) == (0, ""), stderr


def test_the_real_command_prints_one_line_and_exits_2(bench_doc: Document, tmp_path: Path) -> None:
    document = copy.deepcopy(bench_doc)
    document["requests"]["complete"] = -5
    path = write(tmp_path / "negative.json", document)
    done = run_pounder("report", path, "-o", tmp_path / "x.html", timeout=60, env=with_pythonpath())
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr == (f"pounder: error: {path}: 'requests.complete' must be a whole number >= 0, "
                           "got -5\n")


def test_a_whole_number_written_as_a_float_is_still_a_count(bench_doc: Document, tmp_path: Path) -> None:
    document = copy.deepcopy(bench_doc)
    document["series"][0]["complete"] = float(document["series"][0]["complete"])
    path = write(tmp_path / "fine.json", document)
    assert pounder.load_result(path).series[0].complete == bench_doc["series"][0]["complete"]


def test_a_mem_result_with_a_negative_size_is_refused(tmp_path: Path) -> None:
    document: Document = snapshot(os.getpid()).to_dict()
    path = write(tmp_path / "mem.json", document)
    assert load_mem(path).snapshot.processes[0].rss > 0
    document["processes"][0]["rss"] = -4096
    write(path, document)
    with pytest.raises(UsageError, match=r"mem\.json is not a pounder mem result: 'processes\[0\]\.rss' must be a "
                                         r"whole number >= 0, got -4096$"):
        load_mem(path)
    assert_usage_error(*run_cli("report", str(path), "-o", str(tmp_path / "page.html")), str(path),
                       "'processes[0].rss'")


def test_a_comparison_with_a_negative_count_is_refused(testserver: Any, tmp_path: Path) -> None:
    srv = testserver()
    path = tmp_path / "compare.json"
    compare([Variant("a", srv.url + "/a"), Variant("b", srv.url + "/b")], trials=3, requests=20, connections=2,
            results=path)
    document: Document = json.loads(path.read_text())
    code, stdout, stderr = run_cli("report", str(path), "-o", str(tmp_path / "fine.html"))
    assert (code, stderr) == (0, ""), stderr
    for key, mutate in (("trials[0].complete", setter("trials", 0, "complete", value=-9)),
                        ("variants[1].failed", setter("variants", 1, "failed", value=-1)),
                        ("trials[2].elapsed_s", setter("trials", 2, "elapsed_s", value=-1.0)),
                        ("options.trials", setter("options", "trials", value=2.5))):
        edited = copy.deepcopy(document)
        assert mutate(edited) == key
        write(path, edited)
        assert_usage_error(*run_cli("report", str(path), "-o", str(tmp_path / "page.html")), str(path), f"'{key}'")
    assert not (tmp_path / "page.html").exists()


def test_a_tuning_run_with_a_negative_count_is_refused(tmp_path: Path) -> None:
    run = Path(shutil.copytree(DEMO, tmp_path / "demo"))
    point = sorted((run / "points").glob("children-*.json"))[0]
    document: Document = json.loads(point.read_text())
    document["summary"]["failed"] = -3
    write(point, document)
    assert_usage_error(*run_cli("report", str(run), "-o", str(tmp_path / "page.html")), str(point),
                       "'summary.failed' must be a whole number >= 0, got -3")
    shutil.copy(DEMO / "points" / point.name, point)
    result: Document = json.loads((run / "recommendation.json").read_text())
    result["sweep"][0]["complete"] = -1
    write(run / "recommendation.json", result)
    assert_usage_error(*run_cli("report", str(run), "-o", str(tmp_path / "page.html")),
                       str(run / "recommendation.json"), "'sweep[0].complete'")
    assert not (tmp_path / "page.html").exists()
