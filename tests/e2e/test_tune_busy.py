"""``pounder tune`` on a busy machine (issue 38), live: the CPU-bound test app (5 ms of CPU per
request) on gunicorn, tuned while tests/support/burner.py burns 0.5-1 core in bursts. The answer
is the quiet machine's within one sweep step (the quiet run: tests/data/tune-busy-quiet, decided
again here) and never fewer children than it takes to use the cores; every trial disturbed by the
burner is measured again and named. The burner's share is checked against its own clock
(/proc/PID/stat), not pounder's. The live run is short: at most 2 children, its sweep at the 2
clients offered (its points are the pools compared, none measured again), no confirmation. The
same decision on three recorded busy runs: tests/tune/test_recorded.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pounder._units import available_cpus
from pounder.servers import gunicorn_missing
from support.burner import burning, cpu_seconds
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.recorded import decided_again
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
TUNE_LIMIT_S = 300

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def test_a_busy_machine_gives_the_quiet_machines_answer(tmp_path: Path) -> None:
    quiet, _ = decided_again("tune-busy-quiet", tmp_path / "quiet")
    if quiet["cores"] != available_cpus():
        pytest.skip(f"recorded with {quiet['cores']} CPUs for the server, this machine has {available_cpus()}")
    results = tmp_path / "busy"
    with burning(seed=7) as burner:
        started, burned = time.monotonic(), cpu_seconds(burner.pid)
        done = run_pounder("tune", "gunicorn", "wsgi_app:app", "--no-thread-sweep", "--pythonpath",
                               str(APPS_DIR), "--path", "/cpu?ms=5", "--quick", "--point-duration", "1s", "--ram", "2G",
                               "--mrpc", "0", "--max-children", "2", "--clients", "2", "--measure-children", "2",
                               "--no-confirm",
                               "--results", str(results), timeout=TUNE_LIMIT_S)
        share = (cpu_seconds(burner.pid) - burned) / (time.monotonic() - started)
    assert done.returncode == 0, done.stderr
    assert not processes_mentioning(str(results))
    validate_results_dir(results)
    data: dict[str, Any] = json.loads((results / "recommendation.json").read_text())
    check_consistent(done.stdout, data)
    assert 0.4 <= share <= 1.05, share  # the burner did burn 0.5-1 core
    n, quiet_n, cores = data["params"]["max_clients"], quiet["params"]["max_clients"], data["cores"]
    assert max(n, quiet_n) <= 2 * min(n, quiet_n), (n, quiet_n, data["pools"])  # within one sweep step
    # at most 2 children here (a short run): the busy answer was 1, leaving a core idle
    assert n == 2, (data["pools"] or {}).get("reasons", data["children"]["reasons"])
    # other processes' share as pounder measured it: at least the burner's (by its own clock), less a
    # tolerance for the load's edges; more when the rest of the machine is busy too, never above the cores
    pools = data["pools"] or {"points": [], "reasons": [""]}
    swept = pools["reasons"][0].startswith("the children sweep measured these pools at the offered load")
    trials = [t for p in [*data["sweep"], *([] if swept else pools["points"])] for t in p["trials"]]
    others = sorted(float(t["other_cores"]) for t in trials)
    assert share - 0.3 <= others[len(others) // 2] <= cores, (share, others)
    stored = {path.stem for path in (results / "points").glob("*-again.json")}
    first = [t for t in trials if t.get("neighbour") and not t.get("again")]
    assert len(stored) == len(first) and all(float(t["other_cores"]) > 0.25 * cores for t in first)
    if first:
        assert "again (other processes were busy)" in done.stderr
