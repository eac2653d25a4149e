"""What a real (small) ``pounder tune`` run leaves behind, used as a user would (issue 14):

* item 17: the recommended gunicorn command line and gunicorn.conf.py, pasted and run from
  another directory, start a server that answers, with the environment the run was measured with;
* item 14: a corrupt point file stops ``tune --resume DIR`` before anything starts, with one line
  naming the file and what to do (exit 2); once it is removed the point is measured again.

One finished run for the whole module: a real run recorded in tests/data/tune-outputs (gunicorn,
1-2 children, 500 ms points), decided again here; the resumes measure for real. Every server
started here is stopped, and no process of the run outlives it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from pounder.servers import free_port, gunicorn_missing
from support.cliutil import run_pounder, with_pythonpath
from support.leftovers import processes_mentioning
from support.recorded import decided_again
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
DATA_BYTES = 256 * 4096  # wsgi_app's APP_DATA_MB=1
pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def _pounder(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_pounder("tune", *args, cwd=cwd, env=with_pythonpath(), timeout=120)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results directory of a finished run: the recorded tests/data/tune-outputs (gunicorn with
    --pythonpath and an environment variable the app reads, 500 ms points), decided again here so
    that its recommendation names this checkout's paths (nothing is measured)."""
    base = tmp_path_factory.mktemp("tune-outputs")
    data, text = decided_again("tune-outputs", base)
    check_consistent(text, data)
    return base / "tune-outputs"


def _serve(words: list[str], cwd: Path) -> str:
    """Run ``gunicorn ARGS`` (``words``, pasted from the recommendation) with this interpreter, in
    ``cwd``, on a free port (bounded); return what it answers on /data; stop it."""
    assert words[0] == "gunicorn", words
    port = free_port()
    log = cwd / "server.log"
    with open(log, "wb") as out:
        # this interpreter's gunicorn (the one on PATH may be another Python's), on our port
        proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}",
                                 "--no-control-socket", *words[1:]],
                                cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, f"the server exited ({proc.returncode}): {log.read_text()}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/data", timeout=2) as answer:
                    return str(answer.read().decode())
            except OSError:
                assert time.monotonic() < deadline, f"no answer in time: {log.read_text()}"
                time.sleep(0.2)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def test_the_recommended_command_line_starts_the_server(finished: Path, tmp_path: Path) -> None:
    config = json.loads((finished / "recommendation.json").read_text())["config"]
    command = config.splitlines()[-1]
    assert f"--pythonpath {APPS_DIR}" in command and "--env APP_DATA_MB=1" in command
    answer = _serve(shlex.split(command), tmp_path)
    assert f"bytes {DATA_BYTES} " in answer, answer


def test_the_recommended_gunicorn_conf_starts_the_server(finished: Path, tmp_path: Path) -> None:
    config = json.loads((finished / "recommendation.json").read_text())["config"]
    conf = config.split("\n\n")[0]
    assert conf.startswith("# gunicorn.conf.py\n")
    (tmp_path / "gunicorn.conf.py").write_text(conf + "\n")
    run_line = next(line for line in conf.splitlines() if line.startswith("# run with: "))
    assert f"bytes {DATA_BYTES} " in _serve(shlex.split(run_line.removeprefix("# run with: ")), tmp_path)


def _interrupted_copy(finished: Path, folder: Path) -> Path:
    """A copy of the finished run as if it had been interrupted before the recommendation."""
    copy = folder / "run"
    shutil.copytree(finished, copy, ignore=shutil.ignore_patterns("servers"))
    (copy / "recommendation.json").unlink()
    (copy / "recommendation.txt").unlink()
    return copy


@pytest.mark.parametrize(("how", "problem"), [
    ("truncated", "(line 1: Unterminated string starting at column 2)"),
    ("empty", "(empty)"),
    ("another document", "(schema 'pounder/tune/2', not pounder/tune-point/2)"),
    ("directory", "(not a regular file)"),
])
def test_resume_with_a_corrupt_point_names_the_file(finished: Path, tmp_path: Path, how: str, problem: str) -> None:
    copy = _interrupted_copy(finished, tmp_path)
    bad = copy / "points" / "children-2-t1.json"
    if how == "truncated":
        bad.write_text('{"sch')
    elif how == "empty":
        bad.write_text("")
    elif how == "another document":
        bad.write_text((copy / "tune.json").read_text())
    else:
        bad.unlink()
        bad.mkdir()
    before = {p.name: p.is_dir() or p.read_bytes() for p in (copy / "points").iterdir()}
    done = _pounder(tmp_path, "--resume", str(copy))
    assert "Traceback" not in done.stderr
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"pounder: error: {bad} is not a pounder point {problem}; remove it to measure that point again"]
    assert not (copy / "servers").exists() and not processes_mentioning(str(copy)), "a server was started"
    assert {p.name: p.is_dir() or p.read_bytes() for p in (copy / "points").iterdir()} == before
    assert not (copy / "recommendation.json").exists()


def test_resume_measures_a_removed_point_again(finished: Path, tmp_path: Path) -> None:
    copy = _interrupted_copy(finished, tmp_path)
    bad = copy / "points" / "children-2-t1.json"
    bad.write_text('{"sch')
    assert _pounder(tmp_path, "--resume", str(copy)).returncode == 2
    bad.unlink()  # as the message says
    kept = {p.name: p.read_bytes() for p in (copy / "points").iterdir()}
    done = _pounder(tmp_path, "--resume", str(copy))
    assert done.returncode == 0, done.stderr
    validate_results_dir(copy)
    assert json.loads(bad.read_text())["key"] == "children-2-t1"
    assert {name: (copy / "points" / name).read_bytes() for name in kept} == kept
    assert not processes_mentioning(str(copy))
