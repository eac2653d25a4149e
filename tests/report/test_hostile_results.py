"""Issue 39 items 4, 5, 6, 15 and 21: ``pounder report`` on hostile results. A figure its input
makes meaningless is not drawn (the page says why), a number or a size no pounder result holds is
refused in one line (exit 2) naming the key and the bound before anything is sized by it, and
every JSON pounder writes is read. The documents are real (a bench against the test server, a
comparison, a ``pounder mem`` snapshot, ``pounder top --json`` and ``pounder syscalls --json`` of a
real gunicorn, a recorded tuning run), then edited."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import pounder
from pounder.compare import Variant, compare
from pounder.procs import snapshot
from pounder.report import render_report
from pounder.results import evaluate_gates, parse_gates
from support.cliutil import assert_usage_error, run_cli, run_pounder, with_pythonpath

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
DEMO = Path(__file__).resolve().parents[1] / "data" / "tune-demo"
BOUND = "2**63 - 1"

Document = dict[str, Any]


def write(path: Path, document: Document) -> Path:
    path.write_text(json.dumps(document))
    return path


def text_of(page: str) -> str:
    """The page's words, without its tags and its charts."""
    page = re.sub(r"<svg.*?</svg>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)).replace("&#x27;", "'")


def refused(path: Path, *fragments: str) -> str:
    """The real command on ``path``: one ``pounder: error:`` line holding ``fragments``, exit 2, no page."""
    page = path.with_suffix(".html")
    line = assert_usage_error(*run_cli("report", str(path), "-o", str(page)), str(path), *fragments)
    assert not page.exists()
    return line


@pytest.fixture
def bench_doc(testserver: Any) -> Document:
    """A real bench result (50 requests to the test server) with a real gate, as its JSON document."""
    result = pounder.bench(testserver().url + "/", connections=2, requests=50)
    document: Document = json.loads(result.to_json())
    document["gates"] = evaluate_gates(parse_gates(["p99>1s", "errors>0"]), result).to_list()
    assert document["requests"]["complete"] == 50 and [g["verdict"] for g in document["gates"]] == ["pass"] * 2
    return document


@pytest.fixture
def compare_doc(testserver: Any, tmp_path: Path) -> Document:
    """A real comparison of two URLs of the test server, 3 trials of 20 requests each."""
    srv = testserver()
    path = tmp_path / "compare.json"
    compare([Variant("a", srv.url + "/a"), Variant("b", srv.url + "/b")], trials=3, requests=20, connections=2,
            results=path)
    document: Document = json.loads(path.read_text())
    return document


# -- item 5: sizes taken from the input --------------------------------------------------------------


def test_a_duration_of_1e308_seconds_is_refused_in_one_line(bench_doc: Document, tmp_path: Path) -> None:
    """Before: a per-second list built from the duration, 800 MB after 6 s and growing."""
    document = copy.deepcopy(bench_doc)
    document["elapsed_s"] = 1e308
    path = write(tmp_path / "long.json", document)
    started = time.monotonic()
    done = run_pounder("report", path, "-o", tmp_path / "x.html", timeout=120, env=with_pythonpath())
    assert time.monotonic() - started < 60  # a generous limit: it is refused as read, nothing sized by it
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "'elapsed_s'" in done.stderr and BOUND in done.stderr and "a number of 309 digits" in done.stderr


def test_a_long_duration_is_read_in_the_time_of_its_series(bench_doc: Document, tmp_path: Path) -> None:
    """1e7 s (116 days) of which the series holds one second: the reply rate counts the seconds
    without an entry, it does not list them (before: 11 s and 438 MB)."""
    document = copy.deepcopy(bench_doc)
    document["elapsed_s"] = 1e7
    path = write(tmp_path / "long.json", document)
    result = pounder.load_result(path)
    started = time.monotonic()
    rate = result.derived.reply_rate
    assert time.monotonic() - started < 5
    complete = sum(s["complete"] for s in document["series"] if s["second"] < 1e7)
    assert rate is not None and rate.samples == 10_000_000 and rate.min == 0.0
    assert rate.avg == pytest.approx(complete / 1e7) and rate.max == max(s["complete"] for s in document["series"])
    assert "Bench result" in render_report(path)


# -- item 6: magnitudes -------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "value"), [
    (("requests", "complete"), 10**400), (("bytes", "total"), 10**30), (("status", "200"), 2**63),
    (("latency", "corrected", "mean_us"), 1e300), (("series", 0, "complete"), 10**25),
], ids=["complete-10**400", "bytes-10**30", "status-2**63", "mean-1e300", "series-10**25"])  # fmt: skip
def test_a_number_no_result_holds_is_refused_naming_key_and_bound(bench_doc: Document, tmp_path: Path,
                                                                  path: tuple[Any, ...], value: Any) -> None:
    """Before: OverflowError (int too large to convert to float, integer division result too large)."""
    document = copy.deepcopy(bench_doc)
    target: Any = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    line = refused(write(tmp_path / "big.json", document), f"'{key}'", BOUND)
    assert len(line) < 300  # the digits of 10**400 are not in it
    with pytest.raises(pounder.UsageError, match=re.escape(f"'{key}'")):
        pounder.load_result(tmp_path / "big.json")


def test_huge_numbers_in_a_mem_result_and_a_comparison_are_refused(compare_doc: Document, tmp_path: Path) -> None:
    mem: Document = snapshot(os.getpid()).to_dict()
    mem["processes"][0]["rss"] = 10**400
    assert "a number of 401 digits" in refused(write(tmp_path / "mem.json", mem), "'processes[0].rss'", BOUND)
    document = copy.deepcopy(compare_doc)
    document["variants"][0]["complete"] = 10**400
    refused(write(tmp_path / "compare.json", document), "'variants[0].complete'", BOUND)


def test_nan_is_no_number_of_a_result(compare_doc: Document, tmp_path: Path) -> None:
    """Before: a NaN median drawn as "nan"."""
    document = copy.deepcopy(compare_doc)
    document["variants"][0]["requests_per_s"]["median"] = float("nan")
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(document))  # Python writes NaN; pounder never does
    refused(path, "NaN", "null")


# -- item 4: figures the input makes meaningless ---------------------------------------------------


def test_a_zero_duration_draws_no_rate(bench_doc: Document, tmp_path: Path) -> None:
    """Before: "req/s 0.0" next to 50 complete requests."""
    document = copy.deepcopy(bench_doc)
    document["elapsed_s"] = 0.0
    words = text_of(render_report(write(tmp_path / "zero.json", document)))
    summary = words[words.index("Bench result"):words.index("Latency")]
    assert " 0.0 " not in summary and "no requests per second, the measured phase lasted 0 s" in summary
    assert pounder.load_result(tmp_path / "zero.json").why_no_rate() == "the measured phase lasted 0 s"


def test_mem_maxclients_is_not_drawn_from_a_child_of_no_size_nor_without_children(tmp_path: Path) -> None:
    """Before: "MaxClients 6107" from a child of 0 bytes, and a MaxClients with no child."""
    from pounder.procs import max_clients, mem_from_dict

    alone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.2)
        document: Document = snapshot(alone.pid).to_dict()
        with pytest.raises(pounder.procs.NoChildrenError):
            max_clients(1 << 30, snapshot(alone.pid))
    finally:
        alone.kill()
        alone.wait()
    taken = mem_from_dict(document)
    assert taken.max_clients is None  # this process has no child: nothing computed
    document["max_clients"] = {"ram": 1 << 30, "ram_source": "given", "mem_available": None, "footprint": 1 << 20,
                               "shared": 0, "shared_basis": "median child shared", "max_child_uss": 0,
                               "max_child_rss": 0, "children": 1, "max_clients": 262144,
                               "max_clients_no_sharing": 262144}
    words = text_of(render_report(write(tmp_path / "nochild.json", document)))
    assert "MaxClients is not shown: the server has no child processes to measure." in words
    assert "262144" not in words


def test_a_child_of_less_than_a_page_gives_no_maxclients(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        document = snapshot(os.getpid()).to_dict()
    finally:
        child.kill()
        child.wait()
    assert document["totals"]["children"] >= 1
    document["processes"] = [p if p["role"] != "child" else {**p, "private": 0} for p in document["processes"]]
    document["max_clients"] = {"ram": 1 << 30, "ram_source": "given", "mem_available": None, "footprint": 1 << 20,
                               "shared": 0, "shared_basis": "median child shared", "max_child_uss": 0,
                               "max_child_rss": 4096, "children": 1, "max_clients": 262144,
                               "max_clients_no_sharing": 262144}
    words = text_of(render_report(write(tmp_path / "small.json", document)))
    assert "MaxClients is not shown: the largest child measured USS 0 bytes, less than a page" in words
    assert "262144" not in words


def test_a_tuning_run_with_a_child_of_no_size_draws_no_memory_bound(tmp_path: Path) -> None:
    run = Path(shutil.copytree(DEMO, tmp_path / "demo"))
    result: Document = json.loads((run / "recommendation.json").read_text())
    result["memory"]["child_uss"] = 0
    write(run / "recommendation.json", result)
    words = text_of(render_report(run))
    part = words[words.index("2. Memory bound"):words.index("3. Children")]
    assert "MaxClients is not shown: the largest child measured USS 0 bytes" in part
    assert "MaxClients =" not in part


def test_a_gate_the_parser_refuses_is_not_counted(bench_doc: Document, tmp_path: Path) -> None:
    """Before: a gate no parser reads counted as failed ("1 of 1 gates failed")."""
    document = copy.deepcopy(bench_doc)
    document["gates"][0]["expression"] = "p99>>zz"
    document["gates"][0]["verdict"] = "fail"
    words = text_of(render_report(write(tmp_path / "gate.json", document)))
    part = words[words.index("Gates (--fail-if)"):]
    assert "failed" not in part.split("cannot be read")[0], part
    assert "The gate passed." in part and "1 gate cannot be read" in part and "not read" in part
    assert "FAIL" not in part


def test_a_comparison_without_variants_is_refused(compare_doc: Document, tmp_path: Path) -> None:
    """Before: a page saying "No variant was measured" and exit 0."""
    for variants, got in (([], "got 0"), (None, "got none")):
        document = copy.deepcopy(compare_doc)
        document["variants"] = variants
        refused(write(tmp_path / "c.json", document), "'variants' must list 2 to 20 variants", got)
    document = copy.deepcopy(compare_doc)
    document["options"]["trials"] = 10**9
    refused(write(tmp_path / "c.json", document), "'options.trials' must be from 1 to 100")


# -- item 21 ----------------------------------------------------------------------------------


def test_an_empty_tune_json_is_refused(tmp_path: Path) -> None:
    """Before: a page asserting "the server starts all its workers at once (a fixed pool)"."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "tune.json").write_text("{}")
    assert_usage_error(*run_cli("report", str(run), "-o", str(tmp_path / "x.html")), "tune.json",
                       "is not a pounder/tune/2 document (it holds no field)")
    (run / "tune.json").write_text('{"schema": "pounder/tune/2"}')
    assert_usage_error(*run_cli("report", str(run), "-o", str(tmp_path / "x.html")), "missing 'tool_version'")


def test_an_incomplete_comparison_names_the_key_not_python(compare_doc: Document, tmp_path: Path) -> None:
    """Before: "(KeyError: 'label')"."""
    document = copy.deepcopy(compare_doc)
    del document["comparisons"][0]["label"]
    line = refused(write(tmp_path / "c.json", document), "'label' is missing")
    assert "KeyError" not in line and "Error:" not in line.removeprefix("pounder: error:")


def test_a_comparison_gate_is_read_by_compares_parser(compare_doc: Document, tmp_path: Path) -> None:
    document = copy.deepcopy(compare_doc)
    document["gates"] = [{"expression": "what?", "metric": "slower", "operator": ">", "threshold": 5.0,
                          "unit": "percent", "subject": "b vs a", "measured": 1.0, "measured_text": "1.0%",
                          "verdict": "fail", "why": ""}]
    words = text_of(render_report(write(tmp_path / "c.json", document)))
    assert "1 gate cannot be read" in words and "gates failed" not in words
    del document["gates"][0]["verdict"]
    refused(write(tmp_path / "c.json", document), "'verdict'")


# -- item 15: every JSON pounder writes --------------------------------------------------------------


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(p) for p in (task / "children").read_text().split()}
    return found


def test_top_and_syscalls_json_are_reported(gunicorn_server: Any, tmp_path: Path) -> None:
    """Before: "is not a result pounder can report on (schema 'pounder/top/1' ...)"."""
    srv = gunicorn_server(workers=2)
    top_json, sys_json = tmp_path / "top.json", tmp_path / "sys.json"
    code, _, stderr = run_cli("top", "--server-pid", str(srv.pid), "--once", "--json", str(top_json))
    assert code == 0, stderr
    code, _, stderr = run_cli("syscalls", srv.url + "/", "--server-pid", str(srv.pid), "-n", "20", "-c", "1",
                              "--warmup", "0", "--json", str(sys_json))
    assert code == 0, stderr
    children = _children(srv.pid)
    page = render_report([top_json, sys_json])
    words = text_of(page)
    rows = re.findall(r"<tr><td>(\d+)</td><td>([^<]*)</td>", page)
    assert {int(pid) for pid, _ in rows} == children and len(children) == 2
    assert "2 children" in words and "pounder top, syscalls" not in words
    document = json.loads(sys_json.read_text())
    assert f"{document['total']['calls']:,} in all" in words and "20 requests" in words
    for call in document["calls"]:
        assert f"{call['name']} " in words
    for path, key, value in ((top_json, "children", [{"pid": 0}]), (sys_json, "load", {"requests": 0})):
        edited = json.loads(path.read_text())
        edited[key] = value if key == "children" else {**edited["load"], **value}
        refused(write(tmp_path / "bad.json", edited), "'children[0].state'" if key == "children" else
                "'load.requests' must be from 1")


def test_the_files_of_a_results_directory_stand_for_it(tmp_path: Path) -> None:
    run = Path(shutil.copytree(DEMO, tmp_path / "demo"))
    point = sorted((run / "points").glob("*.json"))[0]
    code, _, stderr = run_cli("report", str(point), "-o", str(tmp_path / "p.html"))
    assert (code, stderr) == (0, "")
    assert "Tuning" in text_of((tmp_path / "p.html").read_text()) or "tune" in (tmp_path / "p.html").read_text()


def test_every_schema_pounder_writes_alone_is_read_by_report() -> None:
    """The schemas of python/pounder/schemas: each one a file pounder writes alone is read by
    report (by its kind or as its results directory's), the others are parts of one."""
    from pounder.report import _report

    schemas = {json.loads(p.read_text())["$id"].rsplit("/", 1)[1].removesuffix(".schema.json")
               for p in (PYTHON_DIR / "pounder" / "schemas").glob("*.schema.json")}
    source = Path(_report.__file__).read_text()
    by_directory = {"tune": "tune.json", "tune-result": "recommendation.json", "tune-summary": "summary.json",
                    "tune-point": '"points"', "experiment": "experiment.json"}
    by_schema = {"bench-result": "BENCH_SCHEMAS", "compare": "COMPARE_SCHEMA", "mem": "MEM_READ_SCHEMAS",
                 "profile": "PROFILE_SCHEMA", "top": "TOP_SCHEMA", "syscalls": "SYSCALLS_SCHEMA"}
    parts = {"server-load"}  # the server's section of a bench result (and a tuning point), never a file alone
    assert schemas == set(by_directory) | set(by_schema) | parts
    for name, needle in {**by_directory, **by_schema}.items():
        assert needle in source, name


def test_a_count_of_one_is_singular_on_the_page(compare_doc: Document, tmp_path: Path) -> None:
    """Before: "1 trials per variant", "largest of 1 children"."""
    parent = subprocess.Popen([sys.executable, "-c", "import os, sys, time\nif os.fork():\n    print(flush=True)\n"
                               "time.sleep(30)"], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline() == b"\n"  # forked
        time.sleep(0.2)
        taken = snapshot(parent.pid)
        document: Document = {**taken.to_dict(),
                              "max_clients": pounder.procs.max_clients(1 << 30, taken).to_dict()}
    finally:
        os.killpg(parent.pid, 9)
        parent.wait()
    assert document["totals"]["children"] == 1
    words = text_of(render_report(write(tmp_path / "mem.json", document)))
    assert "largest of 1 child " in words and "1 children" not in words
    edited = copy.deepcopy(compare_doc)
    edited["options"]["trials"] = 1
    words = text_of(render_report(write(tmp_path / "c.json", edited)))
    assert "1 trial per variant" in words and "1 trials" not in words


def test_the_bench_text_of_a_zero_duration_has_no_rate(bench_doc: Document, tmp_path: Path) -> None:
    """The same rule in the text ``pounder bench`` prints (pounder.results.render_report)."""
    from pounder.results import render_report as bench_text

    document = copy.deepcopy(bench_doc)
    document["elapsed_s"] = 0.0
    text = bench_text(pounder.load_result(write(tmp_path / "zero.json", document)))
    assert "Requests per second:" in text and "n/a (the measured phase lasted 0 s)" in text
    assert "Kbytes/sec" not in text
    assert "[#/sec]" in bench_text(pounder.load_result(write(tmp_path / "fine.json", bench_doc)))
