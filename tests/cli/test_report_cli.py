"""``pounder report`` and ``--report PATH`` on the commands that measure: the page written where
asked and its path said, the page on stdout with ``-o -``, and bad input as one line with exit
status 2 (checked before anything is sent)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import pounder
from support.cliutil import assert_usage_error, run_cli, run_pounder, with_pythonpath


def chart_ids(page: str) -> list[str]:
    return re.findall(r'<figure class="chart" id="([^"]+)"><svg', page)


@pytest.fixture
def bench_json(testserver: Any, tmp_path: Path) -> Path:
    srv = testserver()
    path = tmp_path / "one.json"
    path.write_text(pounder.bench(srv.url + "/", connections=2, requests=200).to_json())
    return path


def test_report_writes_the_page_and_says_where(bench_json: Path, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    code, stdout, stderr = run_cli("report", str(bench_json), "-o", str(out), "--title", "Before <the> change")
    assert (code, stderr) == (0, "")
    assert stdout == f"report: {out.resolve()}\n"
    page = out.read_text()
    assert "<title>Before &lt;the&gt; change</title>" in page
    assert {"bench-percentiles", "bench-throughput", "bench-errors"} <= set(chart_ids(page))


def test_report_on_stdout(bench_json: Path) -> None:
    code, stdout, stderr = run_cli("report", str(bench_json), "-o", "-")
    assert (code, stderr) == (0, "")
    assert stdout.startswith("<!DOCTYPE html>") and stdout.rstrip().endswith("</html>")
    assert "bench-percentiles" in chart_ids(stdout)


def test_bad_input_is_one_line_exit_2(bench_json: Path, tmp_path: Path) -> None:
    not_json = tmp_path / "notes.txt"
    not_json.write_text("not a result\n")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "somebody/else/1"}))
    broken = tmp_path / "broken-compare.json"
    broken.write_text(json.dumps({"schema": "pounder/compare/1", "variants": "none"}))
    truncated = tmp_path / "truncated.json"
    truncated.write_text(bench_json.read_text()[:500])
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    out = str(tmp_path / "out.html")
    cases = [
        ((str(tmp_path / "missing.json"), "-o", out), ("cannot read", "No such file")),
        ((str(not_json), "-o", out), ("not a pounder JSON result",)),
        ((str(other), "-o", out), ("somebody/else/1", "pounder/bench-result/3")),
        ((str(broken), "-o", out), ("broken-compare.json", "'variants' must list 2 to 20 variants")),
        ((str(truncated), "-o", out), ("truncated.json", "not JSON")),
        ((str(empty_dir), "-o", out), ("no pounder results directory",)),
        ((str(bench_json), "-o", str(tmp_path / "no-such-dir" / "x.html")), ("--output", "does not exist")),
        ((str(bench_json), "-o", str(tmp_path)), ("--output", "is a directory")),
        ((str(bench_json), "-o", "-", "--open"), ("--open",)),
    ]
    for args, fragments in cases:
        assert_usage_error(*run_cli("report", *args), *fragments)
    assert not Path(out).exists()


def test_report_needs_a_result() -> None:
    code, stdout, stderr = run_cli("report")
    assert code == 2 and "Traceback" not in stderr and "RESULT" in stderr


def test_bench_report_option(testserver: Any, tmp_path: Path) -> None:
    srv = testserver()
    page, result = tmp_path / "bench.html", tmp_path / "bench.json"
    code, stdout, stderr = run_cli("bench", srv.url + "/", "-n", "100", "-c", "2", "--json", str(result),
                                   "--report", str(page), "-q")
    assert code == 0, stderr
    assert stderr.splitlines()[-1] == f"pounder: report: {page.resolve()}"
    assert set(chart_ids(page.read_text())) >= {"bench-percentiles", "bench-phases"}
    complete = json.loads(result.read_text())["requests"]["complete"]
    assert complete == 100 and f"{complete:,} / 0" in page.read_text()


def test_report_option_is_checked_before_anything_is_sent(testserver: Any, tmp_path: Path) -> None:
    srv = testserver()
    for where, fragments in (("-", ("--report", "file name")),
                             (str(tmp_path / "no-such-dir" / "x.html"), ("--report", "does not exist"))):
        for command in (["bench", srv.url + "/", "-n", "10"], ["compare", srv.url + "/a", srv.url + "/b"]):
            assert_usage_error(*run_cli(*command, "--report", where), *fragments)
    assert srv.count(settle_s=0.3) == 0


def test_real_process_prints_no_traceback(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"schema": "pounder/compare/1", "variants": [{"trials": 3}, {"trials": 3}]}))
    done = run_pounder("report", broken, "-o", tmp_path / "x.html", timeout=60,
                       env=with_pythonpath({"PATH": "/usr/bin:/bin"}))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("pounder: error: ") and len(done.stderr.splitlines()) == 1, done.stderr
    assert "label" in done.stderr


def test_missing_matplotlib_is_known_before_the_run(monkeypatch: pytest.MonkeyPatch, testserver: Any,
                                                     bench_json: Path, tmp_path: Path) -> None:
    srv = testserver()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, stdout, stderr = run_cli("bench", srv.url + "/", "-n", "10", "--report", str(tmp_path / "x.html"))
    assert (code, stdout) == (2, "")
    assert stderr == "pounder: error: --report needs matplotlib, which is not installed: pip install 'pounder[report]'\n"
    assert srv.count(settle_s=0.3) == 0
    code, stdout, stderr = run_cli("report", str(bench_json), "-o", str(tmp_path / "y.html"))
    assert (code, stdout) == (2, "")
    assert stderr.startswith("pounder: error: an HTML report needs matplotlib") and len(stderr.splitlines()) == 1
    assert list(tmp_path.glob("*.html")) == []


@pytest.mark.parametrize("kind", ["report", "load_result", "load_mem", "tune point"])
def test_a_document_nested_too_deeply_is_bad_input_not_a_traceback(tmp_path: Path, kind: str) -> None:
    """Issue 25 item 15: 100,000 ``[`` made the JSON decoder raise RecursionError."""
    from pounder import PounderError
    from pounder.procs import load_mem
    from pounder.tune import ResultsDir

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    if kind == "report":
        code, out, err = run_cli("report", str(deep), "-o", str(tmp_path / "page.html"))
        assert_usage_error(code, out, err, "not a pounder JSON result (not JSON)")
        assert not (tmp_path / "page.html").exists()
    elif kind == "load_result":
        with pytest.raises(PounderError, match="nested too deeply"):
            pounder.load_result(deep)
    elif kind == "load_mem":
        with pytest.raises(PounderError, match="not a pounder mem result"):
            load_mem(deep)
    else:
        run = tmp_path / "run"
        (run / "points").mkdir(parents=True)
        (run / "tune.json").write_text(json.dumps({"schema": "pounder/tune/2"}))
        (run / "points" / "sizes.json").write_text(deep.read_text())
        with pytest.raises(PounderError, match="sizes.json"):
            ResultsDir.open(run)[0].check_points()
