"""The forked runner of the bad-input tests (tests/support/forkrun.py) gives what a real
``python -m pounder`` gives: byte-identical exit status, stdout and stderr, for bad inputs of
several commands, a help page, a version, input on stdin and a working directory of its own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psutil
import pytest

from support import forkrun
from support.cliutil import run_pounder, with_pythonpath
from support.forkrun import run_forked

URL = "http://127.0.0.1:9/"
CASES = [
    ["tune", "--demo", "--ram", "8M"],
    ["tune", "gunicorn", "app:app", "--bogus"],
    ["tune", "starman", "missing.psgi"],
    ["bench", "-c", "0", URL],
    ["bench", "http://10.1.2.3:8080/"],
    ["bench", "-f", "-"],
    ["compare", URL],
    ["compare", "--trials", "0", URL, URL],
    ["report", "no-such-result.json", "-o", "x.html"],
    ["syscalls", URL],
    ["mem"],
    ["run", "no-such-experiment.toml"],
    ["no-such-command"],
    ["--version"],
    ["bench", "--help"],
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_forked_and_real_are_byte_identical(tmp_path: Path, args: list[str]) -> None:
    results = []
    for run, where in ((run_pounder, tmp_path / "real"), (run_forked, tmp_path / "forked")):
        where.mkdir()
        done = run(*args, cwd=where, env=with_pythonpath(), timeout=60, input="not a URL\n")
        results.append((done.returncode, done.stdout, done.stderr, sorted(p.name for p in where.iterdir())))
    assert results[0] == results[1]


def test_an_environment_without_pythonpath_is_served_alike(tmp_path: Path) -> None:
    """The interpreter reads PYTHONPATH as it starts: such a request has a server of its own."""
    env = {k: v for k, v in with_pythonpath().items() if k != "PYTHONPATH"}
    forked = run_forked("run", "no-such.toml", cwd=tmp_path, env=env, timeout=60)
    real = run_pounder("run", "no-such.toml", cwd=tmp_path, env=env, timeout=60)
    assert (forked.returncode, forked.stdout, forked.stderr) == (real.returncode, real.stdout, real.stderr)
    assert forkrun.server_process(env) is not None


def test_a_request_over_its_timeout_is_killed(tmp_path: Path) -> None:
    """As subprocess.run: TimeoutExpired and the child killed (a case takes a tenth of a second at
    least: 10 ms is over), then the server serves on."""
    with pytest.raises(subprocess.TimeoutExpired):
        run_forked("tune", "--demo", "--ram", "8M", cwd=tmp_path, env=with_pythonpath(), timeout=0.01)
    server = forkrun.server_process(with_pythonpath())
    assert server is not None and psutil.Process(server.pid).children() == []
    done = run_forked("--version", env=with_pythonpath(), timeout=60)
    assert done.returncode == 0
    assert done.stdout == run_pounder("--version", env=with_pythonpath(), timeout=60).stdout
