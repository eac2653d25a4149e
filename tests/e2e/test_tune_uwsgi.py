"""``pounder tune uwsgi`` end to end, once (the budget of docs/architecture.md: one short run per
server): a module of tests/apps tuned with --quick, 1 s points, at most 2 children; the run ends
with a recommendation in uWSGI's syntax, and the ini it prints is then started with ``uwsgi --ini``
as a user would, and answers. Nothing is left running after either."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest

from pounder.servers import free_port, uwsgi_missing
from support.cliutil import run_pounder
from support.leftovers import kill_leftovers, processes_mentioning
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
TUNE_LIMIT_S = 300

pytestmark = pytest.mark.skipif(uwsgi_missing() is not None, reason=str(uwsgi_missing()))


def _run_printed_ini(config: str, folder: Path) -> tuple[str, int]:
    """Start the ini of ``config`` (the recommendation's first part) with ``uwsgi --ini``, on a free
    port instead of the example address: (the answer to GET /, its number of workers). Stopped
    with SIGTERM (the printed die-on-term), nothing left."""
    ini_text = config.split("\n\n")[0]
    port = free_port()
    ini_text, found = re.subn(r"^http-socket = .*$", f"http-socket = 127.0.0.1:{port}", ini_text, flags=re.M)
    assert found == 1, ini_text
    ini = folder / "uwsgi.ini"
    ini.write_text(ini_text + "\n")
    with open(folder / "uwsgi.log", "wb") as log:
        proc = subprocess.Popen(["uwsgi", "--ini", str(ini)], cwd=folder, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (folder / "uwsgi.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    body = response.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline, (folder / "uwsgi.log").read_text()
                time.sleep(0.1)
        workers = len(psutil.Process(proc.pid).children())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0, (folder / "uwsgi.log").read_text()[-2000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    left = processes_mentioning(str(folder))
    kill_leftovers(str(folder))
    assert left == [], f"left running: {left}"
    return body, workers


def test_tune_uwsgi_recommends_in_its_syntax_and_the_printed_ini_runs(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = run_pounder(
        "tune", "uwsgi", "wsgi_app:app", "--pythonpath", str(APPS_DIR), "--path", "/sleep?ms=10", "--quick",
         "--no-thread-sweep", "--no-preload", "--env", "APP_DATA_MB=40",
         "--point-duration", "1s", "--mrpc", "0", "--max-children", "1", "--clients", "2", "--measure-children", "1",
         "--requests-per-child", "20", "--no-confirm", "--results", str(results),
        timeout=TUNE_LIMIT_S)
    left = processes_mentioning(str(results))
    kill_leftovers(str(results))
    assert left == [], "a server process outlived pounder tune"
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    validate_results_dir(results)
    data: dict[str, Any] = json.loads((results / "recommendation.json").read_text())
    check_consistent(done.stdout, data)
    assert data["server"]["kind"] == "uwsgi" and data["server"]["preload"] is False
    # 40 MB built at import in every worker (lazy-apps): private, and the advice names uWSGI's way out
    assert data["measure"]["end"]["max_uss"] >= 35 * 1024 * 1024
    assert any("Remedy: drop lazy-apps" in said for said in data["advice"]), data["advice"]
    processes = data["params"]["max_clients"]
    assert 1 <= processes <= 2 and data["params"]["max_requests"] == 0
    config = data["config"]
    assert f"processes = {processes}" in config.splitlines() and "max-requests = 0" in config.splitlines()
    assert "lazy-apps = true" in config.splitlines() and "module = wsgi_app:app" in config.splitlines()
    assert f"pythonpath = {APPS_DIR}" in config.splitlines()
    assert "Configuration (uwsgi)" in done.stdout and "  [uwsgi]" in done.stdout
    assert "  processes" in done.stdout.split("\nRecommendation\n")[1].split("\nWhy\n")[0]
    body, workers = _run_printed_ini(config, tmp_path)
    assert body == "hello\n" and workers == processes
