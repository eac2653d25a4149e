"""``pounder tune`` sizes the pool by the method, from repeated measurements (issue 15), on real
gunicorn servers, loopback only: the same app tuned twice gives the same answer (a run measured now
against one recorded on another day).

The run here is short (``--quick``, 1 s points, 3 trials; no confirmation: what is compared is
the pool chosen at the offered load and the knee, which the confirmation of the recorded run did
not change) and its printed reasons are checked against its tables
(:func:`support.tune_check.check_consistent`). The decisions for an I/O-bound
app and for a pool that outgrows its budget are made again on recorded runs
(tests/tune/test_recorded.py: tune-io, tune-outgrow); the figures they rest on are checked live
against the apps' known behaviour (tests/pool/test_runner.py, tests/e2e/test_server_measurements.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pounder._units import available_cpus
from pounder.servers import gunicorn_missing
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.recorded import decided_again
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
TUNE_LIMIT_S = 400
SHORT = ("--quick", "--point-duration", "1s")

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def _tune(results: Path, path: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = run_pounder("tune", "gunicorn", "wsgi_app:app", "--pythonpath", APPS_DIR, "--path", path, *SHORT,
                       "--no-thread-sweep", "--results", results, *args, timeout=TUNE_LIMIT_S)
    assert not processes_mentioning(str(results))
    assert (results / "recommendation.json").is_file(), done.stderr
    validate_results_dir(results)
    data: dict[str, Any] = json.loads((results / "recommendation.json").read_text())
    check_consistent(done.stdout, data)
    return done, data


def test_the_same_app_tuned_twice_gives_the_same_answer(tmp_path: Path) -> None:
    # the first run is a recorded one (tests/data/tune-twice, made with the same options on another
    # day: tests/data/record.py), decided again by this pounder; the second is measured now
    first, _ = decided_again("tune-twice", tmp_path / "recorded")
    if first["cores"] != available_cpus():
        pytest.skip(f"recorded with {first['cores']} CPUs for the server, this machine has {available_cpus()}")
    done, second = _tune(tmp_path / "second", "/cpu?ms=4", "--ram", "1G", "--max-children", "3", "--mrpc", "0",
                         "--no-confirm")
    assert done.returncode == 0, done.stderr
    # no target: the pools compared at 3 clients; noise may move the choice by one candidate
    sizes = sorted(p["children"] for p in first["pools"]["points"])
    chosen = sorted([first["pools"]["chosen"], second["pools"]["chosen"]])
    assert chosen[1] <= 2 * chosen[0] or (set(chosen) <= set(sizes) and abs(
        sizes.index(chosen[1]) - sizes.index(chosen[0])) <= 1), (chosen, sizes)
    knees = sorted([first["children"]["throughput"], second["children"]["throughput"]])
    assert knees[1] <= 2 * knees[0], knees  # within one step of the sweep (1, 2, 4)
    # (MaxRequestsPerChild is not swept here: an app that keeps nothing gets unlimited, decided on
    # the recorded tune-noleak run in tests/tune/test_recorded.py)


