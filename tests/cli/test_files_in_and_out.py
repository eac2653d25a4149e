"""Files a command reads and writes: no output overwrites an input or another output of the same
run, and an input is a regular file under a size limit named in the error. All refused before
anything is sent (the URL is a closed port) with one line and exit status 2."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import pounder
from pounder import UsageError
from pounder.report import write_report
from pounder.servers import gunicorn_missing
from support import cliutil
from support.cliutil import assert_usage_error, with_pythonpath
from support.forkrun import run_forked

URL = "http://127.0.0.1:9/"
A, B = "http://127.0.0.1:9/a", "http://127.0.0.1:9/b"


def _url_experiment(folder: Path) -> Path:
    """FOLDER/e.toml: two URL variants on a closed port (nothing is ever sent to them here)."""
    experiment = folder / "e.toml"
    experiment.write_text('title = "t"\n[server]\nadapter = "url"\n[[load]]\nrequests = 10\n'
                          '[[variant]]\nlabel = "a"\nurl = "http://127.0.0.1:9/a"\n'
                          '[[variant]]\nlabel = "b"\nurl = "http://127.0.0.1:9/b"\n')  # fmt: skip
    return experiment


def _python_pounder(*args: str) -> tuple[int, str, str]:
    """``python -m pounder`` forked from a process that imported it (tests/support/forkrun.py: the same
    status and output) bounded in time: a FIFO read by mistake would hang it."""
    done = run_forked(*args, timeout=60, env=with_pythonpath(), stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(("args", "fragment"), [
    (["bench", "--json", "{x}", "--csv", "{x}", URL], "--csv {x} would overwrite the --json output"),
    (["bench", "--json", "{x}", "--report", "{x}", URL], "--report {x} would overwrite the --json output"),
    (["bench", "--csv", "{x}", "--tsv", "{x}", URL], "--tsv {x} would overwrite the --csv output"),
    (["bench", "--tsv", "{x}", "--hdr-log", "{x}", URL], "--hdr-log {x} would overwrite the --tsv output"),
    (["bench", "--csv", "{x}", "--junit", "{x}", URL], "--junit {x} would overwrite the --csv output"),
    (["compare", "--server-pidfile", "{x}", "--junit", "{x}", A, B], "--junit {x} would overwrite the --server-pid"),
    (["bench", "-b", "@{x}", "--json", "{x}", URL], "--json {x} would overwrite the --body input"),
    (["bench", "-f", "{x}", "--csv", "{x}"], "--csv {x} would overwrite the -f/--url-file input"),
    (["compare", "--json", "{x}.svg", "--chart", "{x}.svg", A, B], "--json {x}.svg: the file is JSON, not .svg"),
    (["compare", "--json", "{x}", "--report", "{x}", A, B], "--report {x} would overwrite the --json output"),
    (["syscalls", "--json", "{x}", "--log", "{x}", URL, "--server-pid", "1"], "--log {x} would overwrite"),
    (["report", "{x}", "-o", "{x}"], "-o/--output {x} would overwrite the result input"),
    (["bench", "--server-pidfile", "{x}", "--json", "{x}", URL], "--json {x} would overwrite the --server-pidfile"),
    (["bench", "--server-pidfile", "{x}", "--report", "{x}", URL], "--report {x} would overwrite the --server-pid"),
    (["compare", "--server-pidfile", "{x}", "--json", "{x}", A, B], "--json {x} would overwrite the --server-pid"),
    (["syscalls", "--server-pidfile", "{x}", "--log", "{x}", URL], "--log {x} would overwrite the --server-pidfile"),
    (["mem", "--server-pidfile", "{x}", "--json", "{x}"], "--json {x} would overwrite the --server-pidfile input"),
    (["mem", "--pidfile", "{x}", "--json", "{x}"], "--json {x} would overwrite the --pidfile input"),
])  # fmt: skip
def test_an_output_never_overwrites_an_input_or_another_output(tmp_path: Path, args: list[str], fragment: str) -> None:
    target = tmp_path / "kept"  # no suffix: any output may take it (the page must not be .json)
    target.write_text("http://127.0.0.1:9/\n")
    before = target.read_bytes()
    filled = [arg.replace("{x}", str(target)) for arg in args]
    assert_usage_error(*cliutil.run_cli(*filled), fragment.replace("{x}", str(target)))
    assert target.read_bytes() == before


def test_an_output_through_a_symlink_is_the_same_file(tmp_path: Path) -> None:
    real = tmp_path / "out.json"
    (tmp_path / "link.csv").symlink_to(real)
    assert_usage_error(*cliutil.run_cli("bench", "--json", str(real), "--csv", str(tmp_path / "link.csv"), URL),
                       "would overwrite the --json output")  # fmt: skip


def test_run_report_never_overwrites_the_experiment(tmp_path: Path) -> None:
    experiment = _url_experiment(tmp_path)
    before = experiment.read_bytes()
    code, out, err = cliutil.run_cli("run", str(experiment), "--results", str(tmp_path / "r"), "--report",
                                     str(experiment))  # fmt: skip
    assert_usage_error(code, out, err, f"--report {experiment}")  # refused: not a page name, nor to overwrite
    assert experiment.read_bytes() == before
    assert not (tmp_path / "r").exists()


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_tune_report_never_overwrites_the_app_or_the_results(tmp_path: Path) -> None:
    app = tmp_path / "m.py"
    app.write_text("def app(environ, start_response):\n    start_response('200 OK', [])\n    return [b'ok']\n")
    before = app.read_bytes()
    tune = ["tune", "gunicorn", "m:app", "--pythonpath", str(tmp_path), "--quick"]
    assert_usage_error(*cliutil.run_cli(*tune, "--results", str(tmp_path / "r"), "--report", str(app)),
                       f"--report {app}")  # refused: not a page name, nor to overwrite the app
    assert app.read_bytes() == before
    same = tmp_path / "same.html"
    assert_usage_error(*cliutil.run_cli(*tune, "--results", str(same), "--report", str(same)),
                       f"--report {same} would overwrite the --results output")
    assert not (tmp_path / "r").exists() and not same.exists()


def test_run_report_is_not_the_results_directory(tmp_path: Path) -> None:
    experiment = _url_experiment(tmp_path)
    same = tmp_path / "same.html"
    assert_usage_error(*cliutil.run_cli("run", str(experiment), "--results", str(same), "--report", str(same)),
                       f"--report {same} would overwrite the --results output")
    assert not same.exists()
    same = tmp_path / "same.xml"
    assert_usage_error(*cliutil.run_cli("run", str(experiment), "--results", str(same), "--junit", str(same)),
                       f"--junit {same} would overwrite the --results output")
    assert not same.exists()


def test_run_results_that_is_a_file_is_called_a_file(tmp_path: Path) -> None:
    experiment = _url_experiment(tmp_path)
    results = tmp_path / "results.txt"
    results.write_text("keep\n")
    line = assert_usage_error(*cliutil.run_cli("run", str(experiment), "--results", str(results)),
                              f"the results directory {results} is a file, not a directory")
    assert "not empty" not in line
    assert results.read_text() == "keep\n"


def test_write_report_to_a_directory_is_bad_input(tmp_path: Path, testserver: Any) -> None:
    """The library says UsageError (bad input), as report -o DIR exits 2."""
    result = tmp_path / "r.json"
    result.write_text(pounder.bench(testserver().url + "/", connections=2, requests=50).to_json())
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UsageError, match=f"write_report: out: {out} is a directory, not a file"):
        write_report([result], out)
    assert list(out.iterdir()) == []
    assert_usage_error(*cliutil.run_cli("report", str(result), "-o", str(out)), "--output", f"{out} is a directory")


@pytest.mark.parametrize("command", [
    ["bench", "-n", "5", "-b", "@{fifo}", URL],
    ["bench", "-n", "5", "-f", "{fifo}"],
    ["run", "{fifo}"],
    ["report", "{fifo}"],
])  # fmt: skip
def test_a_fifo_is_no_input_file(tmp_path: Path, command: list[str]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, out, err = _python_pounder(*(arg.replace("{fifo}", str(fifo)) for arg in command))
    assert_usage_error(code, out, err, f"{fifo} is not a regular file")


def test_dev_zero_is_no_body() -> None:
    """It would be read until memory ran out."""
    assert_usage_error(*_python_pounder("bench", "-n", "5", "-b", "@/dev/zero", URL),
                       "--body file /dev/zero is not a regular file")  # fmt: skip


@pytest.mark.parametrize(("command", "size", "limit"), [
    (["bench", "-n", "5", "-b", "@{big}", URL], 64 * 2**20 + 1, "64 MiB"),
    (["bench", "-n", "5", "-f", "{big}"], 64 * 2**20 + 1, "64 MiB"),
    (["run", "{big}"], 2**20 + 1, "1 MiB"),
    (["report", "{big}"], 256 * 2**20 + 1, "256 MiB"),
])  # fmt: skip
def test_an_input_over_its_limit_names_the_limit(tmp_path: Path, command: list[str], size: int, limit: str) -> None:
    big = tmp_path / "big"
    with big.open("wb") as file:  # sparse: no disk space used
        file.truncate(size)
    code, out, err = cliutil.run_cli(*(arg.replace("{big}", str(big)) for arg in command))
    assert_usage_error(code, out, err, f"{big} is larger than the limit of {limit}")


@pytest.mark.parametrize("args", [
    ["report", "{dir}", "-o", "{dir}/x.pdf"],
    ["bench", "-n", "5", "--report", "{dir}/x.json", URL],
    ["compare", "-n", "5", "--report", "{dir}/x.svg", A, B],
    ["run", "{dir}/e.toml", "--report", "{dir}/x.PNG"],
])  # fmt: skip
def test_the_page_is_named_html(tmp_path: Path, args: list[str]) -> None:
    """The page is HTML: written into x.pdf it would hold something else than its name says."""
    _url_experiment(tmp_path)
    filled = [arg.replace("{dir}", str(tmp_path)) for arg in args]
    assert_usage_error(*cliutil.run_cli(*filled), "the page is HTML", "give a name ending in .html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.toml"]
    with pytest.raises(UsageError, match="the page is HTML, not .pdf"):
        write_report([tmp_path / "e.toml"], tmp_path / "x.pdf")
