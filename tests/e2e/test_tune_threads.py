"""``pounder tune gunicorn`` comparing workers x threads (issue 41), once: requests that wait 10 ms
without CPU, 2 clients, at most 1 worker. One worker of 1 thread serves one request at a time; one of
2 threads (a gthread worker) serves both clients: the run must choose it (twice the throughput,
told apart in every trial), print it in gunicorn's syntax (``worker_class = "gthread"``), and the
command line it prints, started as a user would, must run one worker whose two threads hold two
requests at once (counted by the app's ``/hold``, not timed). Nothing is left running after either."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from pounder.servers import free_port, gunicorn_missing
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.printed import serving
from support.schemas import validate_results_dir
from support.threads import in_flight

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def test_waiting_requests_get_a_gthread_worker_that_runs_as_printed(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = run_pounder("tune", "gunicorn", "wsgi_app:app", "--pythonpath", APPS_DIR, "--path", "/sleep?ms=10",
                       "--quick", "--point-duration", "1s", "--mrpc", "0", "--max-children", "1", "--clients", "2",
                       "--measure-children", "1", "--no-confirm", "--results", results, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert processes_mentioning(str(results)) == [], "a server outlived pounder tune"
    validate_results_dir(results, finished=True)
    data = json.loads((results / "recommendation.json").read_text())
    shapes = data["shapes"]
    assert (shapes["workers"], shapes["threads"], shapes["slots"]) == (1, 2, 2)
    assert data["params"]["max_clients"] == 1 and data["params"]["threads"] == 2
    # both shapes measured in interleaved trials, each with its memory after the load
    rows = {(p["children"], p["threads"]): p for p in shapes["points"]}
    assert set(rows) == {(1, 1), (1, 2)} and all(p["footprint"] > 0 and p["child_uss"] > 0 for p in rows.values())
    assert rows[(1, 1)]["vs_best"]["worse"] and not rows[(1, 2)]["vs_best"]["worse"]
    assert "4b. Workers x threads at the offered load" in done.stdout
    assert "threads 2: 1 worker x 2 threads" in done.stdout
    block = done.stdout.split("Configuration (gunicorn)\n", 1)[1]
    assert 'worker_class = "gthread"' in block and "threads = 2" in block and "worker_connections = 2" in block
    command = next(line.strip() for line in block.splitlines() if line.strip().startswith("gunicorn --workers"))
    assert "--worker-class gthread --threads 2 --worker-connections 2" in command
    port = free_port()
    user = tmp_path / "user"
    user.mkdir()
    with serving([*shlex.split(command), "--bind", f"127.0.0.1:{port}"], user, port) as url:
        pids, most = in_flight(url, clients=2)
    assert len(pids) == 1 and most == 2  # one worker, its two threads holding both requests at once
