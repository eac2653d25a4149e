"""``pounder tune`` under the user's traffic (issue 15), on real gunicorn servers, loopback only:
slow clients with no buffering proxy in front. (An access log as the target: tests/tune/test_recorded.py,
on a recorded real run.)

The expected figures come from the app's known behaviour (its waits) or from the app's own
timing of how long each request held its worker (``APP_HELD_DIR``), never from pounder's own
numbers; every run's reasons are checked against its tables (:func:`support.tune_check.check_consistent`).
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pounder.servers import gunicorn_missing
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
TUNE_LIMIT_S = 400

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def _tune(results: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = run_pounder("tune", "gunicorn", "wsgi_app:app", "--pythonpath", APPS_DIR, "--quick", "--results", results,
                       "--no-thread-sweep", "--mrpc", "0", *args, timeout=TUNE_LIMIT_S)
    assert not processes_mentioning(str(results))
    assert done.returncode == 0, done.stdout + done.stderr
    validate_results_dir(results)
    data: dict[str, Any] = json.loads((results / "recommendation.json").read_text())
    check_consistent(done.stdout, data)
    return done, data


def _little(data: dict[str, Any], rate: float) -> float:
    """The busy time per request the pool was sized on; checks Little's law was applied to it,
    with the square-root headroom, and stated in the reasons with the same figures."""
    children = data["children"]
    busy = float(children["busy_s"])
    assert children["needed"] == math.ceil(rate * busy + 2 * math.sqrt(rate * busy) - 1e-9), children
    text = next(r for r in children["reasons"] if "Little's law" in r)
    assert text.endswith(f"for random arrivals: {children['needed']}"), text
    return busy


def test_a_slow_client_holds_its_child_for_the_transfer_and_the_pool_counts_it(tmp_path: Path) -> None:
    # 8 MiB answers read at 32 MB/s: about 0.26 s each; the worker is held until its client has
    # read it all (the app times the part until its answer is closed)
    held_dir = tmp_path / "held"
    held_dir.mkdir()
    done, data = _tune(tmp_path / "slow", "--path", "/big?kb=8192", "--throttle", "32MB/s", "--no-proxy",
                       "--peak-rate", "4", "--ram", "2G", "--max-children", "2", "--point-duration", "1s",
                       "--measure-children", "2", "--requests-per-child", "20", "--no-confirm",
                       "--env", f"APP_HELD_DIR={held_dir}")
    # the app's own timing of the requests that ended during the loads of the point the pool was
    # sized on (busy time is the knee's: its trials)
    knee = data["children"]["throughput"]
    windows = []
    for point in (tmp_path / "slow" / "points").glob(f"children-{knee}-t*.json"):
        bench = json.loads(point.read_text())["bench"]
        began = datetime.fromisoformat(bench["started_at"].replace("Z", "+00:00")).timestamp()
        windows.append((began, began + bench["elapsed_s"]))
    held = [float(ms) / 1000 for f in held_dir.iterdir() for ended, ms in (line.split() for line in
            f.read_text().splitlines()) if any(a <= float(ended) <= b for a, b in windows)]
    assert len(held) >= 10, held
    app_held = statistics.mean(held)
    assert app_held >= 0.05, app_held  # the transfer held the worker: the app itself answers in a millisecond
    # the app sees only part of the hold: gunicorn writes what the kernel's buffers take, then waits
    # for the slow client to finish reading before it takes the next connection (tests/pool checks
    # pounder's figure against strace's accept-to-close time of each request)
    busy = _little(data, 4)
    assert app_held <= busy * 1.05, (busy, app_held)
    # and pounder says whether its figure is the time itself: the accept queue tells whether every
    # child was busy
    at = next(p for p in data["sweep"] if p["children"] == knee)
    little = next(r for r in data["children"]["reasons"] if "Little's law" in r)
    assert at["queued"] is not None, at
    if at["queued"] >= 0.9:
        assert "every child was busy" in little, little
    else:
        assert "so this is an upper bound" in little, little
    assert data["target"]["proxy"] is False and "32MB/s" in data["workload"], data["workload"]
    assert "no proxy" in done.stdout or "--no-proxy" in done.stdout
