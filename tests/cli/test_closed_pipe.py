"""A closed standard output (``pounder --help | head -1``: the reader has all it wanted) ends
quietly: no error line, the exit status the command would have had, its files still written
(issue 39, item 17)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.cliutil import run_pounder

COMMANDS = ["bench", "compare", "mem", "syscalls", "profile", "top", "tune", "run", "report", "completion"]


def _closed_stdout(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``pounder ARGS`` whose stdout is a pipe nobody reads any more (its read end closed)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return run_pounder(*args, stdout=write, stdin=subprocess.DEVNULL, timeout=60, cwd=cwd)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [["--help"], ["--version"], *([name, "--help"] for name in COMMANDS)])
def test_help_and_version_into_a_closed_pipe_end_quietly(args: list[str]) -> None:
    done = _closed_stdout(*args)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr


def test_a_run_into_a_closed_pipe_still_writes_its_files(testserver: Any, tmp_path: Path) -> None:
    """bench | head: the figures go nowhere, quietly; --json is written whole; exit 0."""
    srv = testserver()
    done = _closed_stdout("bench", srv.url + "/", "-n", "20", "-c", "1", "--json", "r.json", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["requests"]["complete"] == 20
