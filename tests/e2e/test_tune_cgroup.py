"""Memory as the platform counts it, through ``pounder tune`` itself (issue 27): a real run on
gunicorn (2 sync workers, no --preload, 40 MB built at import in each worker: a pool with no
page-cache activity once started), started inside a cgroup this test made with a known limit (as in
a container) and given ``--ram cgroup`` (the limit of the cgroup pounder runs in), stopped by Ctrl-C
once its size measurement is stored (a few seconds). ``--ram cgroup:PATH`` and its refusals: through
the options and the CLI, on a cgroup made here.

What is checked, from the stored results: the sizes point has the server's cgroup figures (warm and
end) next to the sum of PSS, within 10 % of it, anon equal to the processes' Pss_Anon (2 %); the
budget is the cgroup's limit, its source named in tune.json and in the memory bound. Independently
of pounder: while the run measured, this test read the server's cgroup itself (the directory
``pounder-PID-N`` pounder made under its own cgroup, found by pounder's pid): every process of
the stored end snapshot was in it, and the stored anon agrees with the test's own readings of the
cgroup's ``anon`` (v1 ``total_rss``) while the pool ran (10 %). Skipped (with the reason) when not
root or when no memory cgroup can be made here.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pounder import UsageError
from pounder.servers import MemoryCgroup, gunicorn_missing, make_cgroup
from pounder.servers._cgroup import cgroup_limit
from pounder.tune import make_options
from support.cliutil import pounder_argv, run_pounder
from support.interrupted import interrupted
from support.schemas import validate_results_dir
from support.srvutil import cgroup_probe

MIB = 1024 * 1024
APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
LIMIT = 1024 * MIB
RUN_LIMIT_S = 120


def _probe() -> tuple[MemoryCgroup | None, str]:
    if gunicorn_missing() is not None:
        return None, str(gunicorn_missing())
    return cgroup_probe()


PROBE, WHY = _probe()
pytestmark = pytest.mark.skipif(PROBE is None, reason=WHY)


def _stat(path: Path) -> dict[str, int]:
    words = (line.split() for line in (path / "memory.stat").read_text().splitlines())
    return {w[0]: int(w[1]) for w in words if len(w) == 2 and w[1].isdigit()}


class _Watch(threading.Thread):
    """Reads the cgroups pounder (pid ``owner``) makes under ``parent`` every 50 ms: the pids seen in
    them and their anon figure (v2 ``anon``, v1 ``total_rss``) whenever two children and the parent run."""

    def __init__(self, parent: Path, owner: int) -> None:
        super().__init__(daemon=True)
        self.parent, self.owner = parent, owner
        self.pids: set[int] = set()
        self.anon: list[int] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for path in self.parent.glob(f"pounder-{self.owner}-*"):
                try:
                    pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
                    stat = _stat(path)
                except (OSError, ValueError):
                    continue
                self.pids.update(pids)
                if len(pids) == 3:
                    self.anon.append(stat.get("anon", stat.get("total_rss", 0)))
            time.sleep(0.05)


def _sizes_only(results: Path, args: list[str], inside: MemoryCgroup) -> tuple[_Watch, str]:
    """A real ``pounder tune`` started inside the cgroup ``inside`` (as in a container), stopped by
    Ctrl-C once ``summary.json`` exists; the watch of the cgroups it made and its stderr."""
    watch_parent = inside.path
    watches: list[_Watch] = []

    def watch(pid: int) -> None:
        watches.append(_Watch(watch_parent, pid))
        watches[0].start()

    try:
        pid, err = interrupted(inside.command(pounder_argv("tune", *args, "--results", results), os.environ), results,
                               results / "summary.json",
                               limit_s=RUN_LIMIT_S, started=watch)
    finally:
        for started in watches:
            started.done.set()
            started.join(5)
    assert list(watch_parent.glob(f"pounder-{pid}-*")) == [], "pounder left a cgroup"
    return watches[0], err


def _refused(cwd: Path, ram: str) -> str:
    """``pounder tune gunicorn ... --ram RAM`` refused before anything starts: its one line."""
    done = run_pounder("tune", "gunicorn", "wsgi_app:app", "--no-thread-sweep", "--pythonpath", APPS_DIR, "--ram", ram,
                       cwd=cwd, timeout=60)
    lines = done.stderr.splitlines()
    assert (done.returncode, done.stdout, len(lines)) == (2, "", 1), done.stderr
    assert list(cwd.iterdir()) == [], "a results directory was created"
    return lines[0]


def test_a_cgroup_budget_that_cannot_be_read_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    made, why = make_cgroup()
    assert made is not None, why
    try:
        assert _refused(tmp_path, "cgroup:/pounder-no-such-cgroup").startswith(
            "pounder: error: --ram cgroup:/pounder-no-such-cgroup: no such memory cgroup (looked for ")
        limit = made.path / ("memory.max" if made.version == 2 else "memory.limit_in_bytes")
        limit.write_text(str(8 * MIB))
        assert _refused(tmp_path, f"cgroup:{made.name}").endswith(f"--ram must be at least 16M, got {8 * MIB} bytes")
        limit.write_text(str(300 * MIB))
        for named in (made.name, str(made.path)):
            options = make_options(ram=f"cgroup:{named}")
            assert (options.ram, options.ram_source) == (300 * MIB, f"--ram cgroup:{named}: the cgroup's memory limit")
        try:
            cgroup_limit()
        except UsageError:  # nothing above sets a limit: nor does a fresh cgroup
            limit.write_text("-1" if made.version == 1 else "max")
            assert _refused(tmp_path, f"cgroup:{made.name}") == (
                f"pounder: error: --ram cgroup:{made.name}: cgroup {made.name} sets no memory limit (nor does any "
                "cgroup above it)")
    finally:
        assert made.remove()


def _within(value: int, reference: int, share: float) -> bool:
    return abs(value - reference) <= share * reference


def test_the_sizes_are_stored_with_the_cgroup_and_the_budget_is_a_cgroup_limit(tmp_path: Path) -> None:
    assert PROBE is not None
    budget, why = make_cgroup()  # a cgroup with a known limit, as a container's
    assert budget is not None, why
    try:
        (budget.path / ("memory.max" if budget.version == 2 else "memory.limit_in_bytes")).write_text(str(LIMIT))
        results = tmp_path / "run"
        watch, err = _sizes_only(results, [
            "gunicorn", "wsgi_app:app", "--pythonpath", str(APPS_DIR), "--env", "APP_DATA_MB=40", "--no-preload",
            "--quick", "--point-duration", "1s", "--mrpc", "0", "--max-children", "2", "--measure-children", "2",
            "--no-confirm", "--ram", "cgroup"], budget)
    finally:
        assert budget.remove()
    validate_results_dir(results, finished=False)
    summary: dict[str, Any] = json.loads((results / "summary.json").read_text())
    point = json.loads((results / "points" / "sizes.json").read_text())
    measure = point["summary"]
    assert summary["measure"] == measure

    # the budget: the cgroup's limit, and where it came from
    source = "--ram cgroup: the memory limit of the cgroup pounder runs in"
    options = json.loads((results / "tune.json").read_text())["options"]
    assert (options["ram"], options["ram_source"]) == (LIMIT, source)
    assert (summary["memory"]["ram"], summary["memory"]["ram_source"]) == (LIMIT, source)

    # the cgroup figures, stored next to the sum of PSS
    cgroup = measure["cgroup"]
    assert cgroup["note"] == "" and cgroup["warm"] is not None and cgroup["end"] is not None, cgroup
    for stage in ("warm", "end"):
        charged, pss = cgroup[stage], measure[stage]["footprint"]
        figures = f"{stage}: {charged}, sum of PSS {pss}"
        assert charged["version"] == PROBE.version, figures
        assert charged["anon"] >= 80 * MIB, figures  # the two workers' 40 MB each
        assert _within(charged["anon"], pss, 0.10), figures
        assert _within(charged["current"], pss, 0.10), figures
        assert _within(charged["anon"], charged["pss_anon"], 0.02), figures
        assert charged["shmem"] == 0 and charged["file"] < 4 * MIB, figures
    # the sum of PSS stored is the end snapshot's, whose processes were in the cgroup this test watched
    end = point["snapshots"]["end"]
    assert sum(p["pss"] for p in end["processes"]) == measure["end"]["footprint"]
    assert {p["pid"] for p in end["processes"]} <= watch.pids, (watch.pids, end["processes"])
    assert watch.anon, "the test never saw the pool in its cgroup"
    own = statistics.median(watch.anon)  # mostly the warm pool (also its start and a child's replacement)
    assert _within(cgroup["end"]["anon"], round(own), 0.10), (watch.anon, cgroup["end"])
    print(f"v{cgroup['end']['version']}: end {cgroup['end']}; sum of PSS {measure['end']['footprint']}; "
          f"the test's own anon readings: median {own:.0f} of {len(watch.anon)}")
    assert "its cgroup's current" in err  # the log line of the sizes point
