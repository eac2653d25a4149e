"""``-c`` against the file-descriptor limit (issue 25 item 9): past ``ulimit -n`` connections failed
with EMFILE and the engine spun, ignoring signals. The limit is checked before anything is sent:
raised to the hard limit when that is enough, else one line naming both numbers (exit 2).
Real ``python -m pounder bench`` processes under real limits, against a test server."""

from __future__ import annotations

import json
import re
import resource
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.cliutil import run_pounder, with_pythonpath


def _bench(limits: tuple[int, int], *args: str) -> subprocess.CompletedProcess[str]:
    """``pounder bench ARGS`` with RLIMIT_NOFILE set to ``limits`` (soft, hard) by prlimit."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.skip("prlimit (util-linux) is not installed")
    return run_pounder("bench", *args, prefix=[prlimit, f"--nofile={limits[0]}:{limits[1]}"], env=with_pythonpath(),
                       timeout=60)


def test_connections_above_the_soft_limit_raise_it(testserver: Any, tmp_path: Path) -> None:
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:  # the test server holds the connections too
        pytest.skip("this process may open fewer than 1,200 descriptors: the test server could not hold 1,100")
    srv = testserver(mode="ok", delay_ms=50)
    out = tmp_path / "r.json"
    done = _bench((1024, 4096), srv.url + "/", "-c", "1100", "-n", "2200", "--json", str(out))
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["requests"]["complete"] == 2200 and data["requests"]["failed"] == 0
    assert srv.stats()["requests"] == 2200


def test_connections_above_the_hard_limit_are_refused_before_anything_is_sent(testserver: Any) -> None:
    srv = testserver(mode="ok")
    done = _bench((1024, 1024), srv.url + "/", "-c", "1100", "-d", "2s")
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert re.fullmatch(r"pounder: error: 1,100 connections need about 1,[12]\d\d file descriptors, more than this "
                        r"process may open \(soft limit 1,024, hard limit 1,024\): lower -c, or raise the hard limit "
                        r"\(ulimit -Hn as root\)", done.stderr.strip()), done.stderr
    assert srv.stats()["requests"] == 0 and srv.stats()["connections"] == 0
