"""``pounder tune`` sizes the pool by the method, from repeated measurements (issue 15), on real
gunicorn servers, loopback only.

Every run here is short (``--quick``, 1 s points, 3 trials); the expected figures come from the
app's known behaviour (a 30 ms wait, a child that grows once it is old), never from pounder's own
numbers; and every run's printed reasons are checked against its tables
(:func:`support.tune_check.check_consistent`).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pounder._units import available_cpus
from pounder.servers import gunicorn_missing
from support.leftovers import processes_mentioning
from support.recorded import decided_again
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
TUNE_LIMIT_S = 400
SHORT = ("--quick", "--point-duration", "1s")

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def _tune(results: Path, path: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "pounder", "tune", "gunicorn", "wsgi_app:app", "--pythonpath",
                           str(APPS_DIR), "--path", path, *SHORT, "--results", str(results), *args],
                          capture_output=True, text=True, timeout=TUNE_LIMIT_S, check=False)
    assert not processes_mentioning(str(results))
    assert (results / "recommendation.json").is_file(), done.stderr
    validate_results_dir(results)
    data: dict[str, Any] = json.loads((results / "recommendation.json").read_text())
    check_consistent(done.stdout, data)
    return done, data


def test_an_io_bound_app_gets_a_child_per_client_and_the_concurrency_arithmetic(tmp_path: Path) -> None:
    # every request waits 30 ms without CPU: 32 clients need 32 children, whatever the cores
    done, data = _tune(tmp_path / "io", "/sleep?ms=30", "--clients", "32", "--ram", "4G", "--mrpc", "0",
                       "--max-children", "48")
    assert done.returncode == 0, done.stderr
    assert 28 <= data["params"]["max_clients"] <= 36, data["children"]
    reasons = " ".join(data["children"]["reasons"] + data["advice"])
    # the concurrency arithmetic: throughput = children / the time a child is held per request
    # (32 clients for 32 children: none waits for a free child, so the busy time is an upper bound)
    assert "throughput is concurrency" in reasons and "32 children serve at least 32 / " in reasons, reasons
    assert "so this is an upper bound" in reasons, reasons
    assert "because the load offered 32 concurrent clients" in reasons, reasons
    assert "waits on something else" not in done.stdout and "wait on something else" not in done.stdout
    # throughput = children / busy time while the children are the limit: 16 children ~ 16 / 30 ms
    at16 = next(p for p in data["sweep"] if p["children"] == 16)
    assert 0.6 * 16 / 0.030 <= at16["rps"] <= 16 / 0.030 * 1.05, at16["rps"]
    confirmation = data["confirmation"]
    assert confirmation["connections"] == 32 and confirmation["ok"], confirmation
    # the sweep ran at the offered load (32 clients): its points are the pools, none measured twice
    assert data["pools"]["reasons"][0].startswith("the children sweep measured these pools at the offered load")
    assert not list((tmp_path / "io" / "points").glob("pool-*")), "a pool was measured again"
    assert {p["connections"] for p in data["pools"]["points"]} == {32}


def test_the_same_app_tuned_twice_gives_the_same_answer(tmp_path: Path) -> None:
    # the first run is a recorded one (tests/data/tune-twice, made with the same options on another
    # day: tests/data/record.py), decided again by this pounder; the second is measured now
    first, _ = decided_again("tune-twice", tmp_path / "recorded")
    if first["cores"] != available_cpus():
        pytest.skip(f"recorded with {first['cores']} CPUs for the server, this machine has {available_cpus()}")
    done, second = _tune(tmp_path / "second", "/cpu?ms=4", "--ram", "1G", "--max-children", "3", "--mrpc", "0,100")
    assert done.returncode == 0, done.stderr
    # no target: the pools compared at 3 clients; noise may move the choice by one candidate
    sizes = sorted(p["children"] for p in first["pools"]["points"])
    chosen = sorted([first["params"]["max_clients"], second["params"]["max_clients"]])
    assert chosen[1] <= 2 * chosen[0] or (set(chosen) <= set(sizes) and abs(
        sizes.index(chosen[1]) - sizes.index(chosen[0])) <= 1), (chosen, sizes)
    knees = sorted([first["children"]["throughput"], second["children"]["throughput"]])
    assert knees[1] <= 2 * knees[0], knees  # within one step of the sweep (1, 2, 4)

    def decade(value: int) -> int:
        return -1 if value == 0 else int(math.log10(value))

    assert decade(first["params"]["max_requests"]) == decade(second["params"]["max_requests"]), (
        first["max_requests"]["reasons"], second["max_requests"]["reasons"])


def test_a_pool_that_outgrows_its_budget_is_caught_by_the_confirmation_and_lowered(tmp_path: Path) -> None:
    # each child allocates 48 MiB once it is 6 s old: after the size measurement, before the confirmation
    # kept-alive clients with no proxy hold a child each: the pool covers the 4 connections (the
    # memory bound, here), as large as the sizes step allows
    done, data = _tune(tmp_path / "age", "/age?after_s=6&mib=48", "--ram", "160M", "--mrpc", "0",
                       "--max-children", "4", "--measure-children", "2", "--clients", "4", "--keepalive",
                       "--no-proxy")
    first = json.loads((tmp_path / "age" / "points" / "confirm.json").read_text())["summary"]
    # the first confirmation measured the pool over the budget (the sizes step could not see it)
    assert first["footprint"] > data["memory"]["ram"], first
    # so the pool is lowered by the measured footprint and confirmed again
    confirmation = data["confirmation"]
    assert confirmation["lowered_from"] == {"children": first["children"], "footprint": first["footprint"]}
    fewer = min(first["children"] - 1, first["children"] * data["memory"]["ram"] // first["footprint"])
    assert confirmation["children"] == data["params"]["max_clients"] == max(1, fewer), (confirmation, first)
    assert data["children"]["decided_by"] == "confirmation"
    assert "the measurement beats the sizes' prediction" in data["children"]["reasons"][-1]
    again = json.loads((tmp_path / "age" / "points" / "confirm-lowered.json").read_text())["summary"]
    assert again["children"] == confirmation["children"] and again["footprint"] == confirmation["footprint"]
    if confirmation["ok"]:
        assert done.returncode == 0, done.stdout + done.stderr
    else:  # still over (the lowered children grew as well): caught, exit 1
        assert done.returncode == 1 and "did not pass its confirmation run" in done.stderr
