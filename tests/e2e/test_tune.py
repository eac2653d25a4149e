"""``pounder tune`` end to end, on real servers (Apache prefork + mod_perl, gunicorn), loopback only.

Each run is ``--quick`` (3 s points) with a short MaxRequestsPerChild list where that step is not
under test; the expected figures are computed here from the configured sizes and from an
independent reading of ``/proc/PID/smaps_rollup``, never from pounder's own numbers.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pounder.servers import apache_missing, gunicorn_missing
from pounder.servers._apache import find_apache
from pounder.tune import ResultsDir
from support.cliutil import pounder_argv, run_pounder
from support.interrupted import interrupted
from support.leftovers import processes_mentioning
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

MIB = 1024 * 1024
APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
PERL_APPS_DIR = APPS_DIR / "perl"
GROW_BYTES = 8 * MIB  # PounderTest::Grow's own string per child
DATA_BYTES = 32 * MIB + 8192 * 1024  # PounderTest::Data: built in the parent with startup_preload.pl
RAM = 256 * MIB
TUNE_LIMIT_S = 400


def _tune(*args: str, timeout_s: float = TUNE_LIMIT_S) -> subprocess.CompletedProcess[str]:
    return run_pounder("tune", *args, timeout=timeout_s)


def _stopped(results: Path, args: tuple[str, ...], when: Path, after_s: float = 0.0) -> str:
    """A real ``pounder tune`` (``args``, ``--results results``) stopped by Ctrl-C ``after_s`` after
    ``when`` exists: its stderr, once it has exited with 130 leaving no server process."""
    return interrupted(pounder_argv("tune", *args, "--results", results), results, when,
                       after_s=after_s, limit_s=TUNE_LIMIT_S)[1]



def _sizes_only(results: Path, *args: str) -> dict[str, Any]:
    """A real ``pounder tune`` stopped once its size measurement is stored: the ``summary.json`` it
    wrote (the size measurement, the leak verdict, the memory bound: what the run derived from
    it), validated. The decisions after it are tested on recorded runs (tests/tune/test_recorded.py)."""
    _stopped(results, args, results / "summary.json")
    validate_results_dir(results, finished=False)
    summary: dict[str, Any] = json.loads((results / "summary.json").read_text())
    assert summary["measure"] == json.loads((results / "points" / "sizes.json").read_text())["summary"]
    return summary


def _recommendation(results: Path, done: subprocess.CompletedProcess[str] | None = None) -> dict[str, Any]:
    """The run's recommendation.json, validated; with the run's output, its reasons checked against
    its tables."""
    validate_results_dir(results)
    data: dict[str, Any] = json.loads((results / "recommendation.json").read_text())
    if done is not None:
        check_consistent(done.stdout, data)
    return data


def _apache_conf(folder: Path, preload: bool) -> Path:
    """The user's side of an httpd.conf for the PounderTest handlers, as pounder tune takes it."""
    found = find_apache()
    assert found is not None
    shutil.copytree(PERL_APPS_DIR / "lib", folder / "lib")
    startup = "startup_preload.pl" if preload else "startup.pl"
    shutil.copy(PERL_APPS_DIR / startup, folder / startup)
    conf = folder / "app.conf"
    conf.write_text("\n".join([
        f"LoadModule perl_module {found[1]}/mod_perl.so",
        f"PerlSwitches -I{folder}/lib",
        f"PerlRequire {startup}",
        "<Location /grow>", "    SetHandler modperl", "    PerlResponseHandler PounderTest::Grow", "</Location>",
        "<Location /hello>", "    SetHandler modperl", "    PerlResponseHandler PounderTest::Hello", "</Location>",
        "StartServers 10",  # owned by pounder: replaced
        "",
    ]))
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return conf


def _rollup(pid: int) -> dict[str, int]:
    """This test's own reading of smaps_rollup (kB lines), independent of pounder.procs."""
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as file:
        for line in file:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                values[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return values


def _baseline_child(apache_server: Any, preload: bool) -> tuple[int, int, int]:
    """(max child USS, median child shared, the parent's USS) of the same app's children before
    /grow: each child answered /hello (its first request) and nothing else."""
    server = apache_server(preload=preload, start_servers=3, min_spare=3, max_spare=4, max_request_workers=3)
    children = set(server.children())
    seen: set[int] = set()
    for _ in range(300):
        with urllib.request.urlopen(server.url + "/hello", timeout=10) as response:
            seen.add(int(response.read().split()[-1]))
        if children <= seen:
            break
    uss, shared = [], []
    for pid in children:
        rollup = _rollup(pid)
        uss.append(rollup["Private_Clean"] + rollup["Private_Dirty"])
        shared.append(rollup["Shared_Clean"] + rollup["Shared_Dirty"])
    parent = _rollup(server.pid)
    server.stop()
    return max(uss), sorted(shared)[len(shared) // 2], parent["Private_Clean"] + parent["Private_Dirty"]


@pytest.mark.skipif(apache_missing(perl=True) is not None, reason=str(apache_missing(perl=True)))
def test_apache_max_clients_follows_the_formula_and_preload_raises_it(apache_server: Any,
                                                                      public_dir: Path) -> None:
    """The memory bound of a real run (its size measurement: the run is stopped after it) against
    the formula from this test's own reading of the children. What the pool, the spare settings
    and the snippet become from there is decided again on the recorded Apache run
    (tests/tune/test_recorded.py); Apache's whole live tune run is tests/e2e/test_tune_debian.py, and
    tests/e2e/test_tune_offered_load.py measures a recorded run's recommendation live."""
    bounds = {}
    for preload in (False, True):
        base_uss, base_shared, parent_uss = _baseline_child(apache_server, preload)
        # configured: every child writes 8 MB of its own on its first /grow; without preloading it
        # also builds its own copy of the ~40 MB of PounderTest::Data
        child = base_uss + GROW_BYTES + (0 if preload else DATA_BYTES)
        expected = (RAM - parent_uss - base_shared) // child
        folder = public_dir / ("preload" if preload else "plain")
        folder.mkdir()
        conf = _apache_conf(folder, preload)
        memory = _sizes_only(public_dir / f"results-{folder.name}", "apache", str(conf), "--path", "/grow", "--ram",
                             "256M", "--quick", "--point-duration", "1s", "--max-children", "2")["memory"]
        assert abs(memory["max_clients"] - expected) <= 1, (memory, expected)
        bounds[preload] = memory["max_clients"]
    # preloading moves the 40 MB from every child into the parent, shared: many more children fit
    assert bounds[True] >= 3 * bounds[False]


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_the_size_measurement_finds_a_known_leak(tmp_path: Path) -> None:
    """/leak keeps 100 KiB per request: the run's size measurement finds it and calls it a leak.
    What follows from a leak (a finite MaxRequestsPerChild within the headroom, measured on the
    recommended pool at the offered load) is decided again on the recorded demo run, which leaks
    16 KB per request (tests/tune/test_recorded.py)."""
    summary = _sizes_only(tmp_path / "leak", "gunicorn", "wsgi_app:app", "--pythonpath", str(APPS_DIR), "--path",
                          "/leak", "--quick", "--ram", "1G", "--point-duration", "1s", "--max-children", "2")
    assert summary["leak"] is True
    assert 90 * 1024 <= summary["measure"]["growth_second"] <= 120 * 1024, summary["measure"]
    assert any(p["key"] == "sizes" and "growth 1" in p["described"] for p in summary["points"])


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_sigint_leaves_no_server_and_resume_finishes(tmp_path: Path) -> None:
    """Also --profile (stored with the options: the resumed run profiles): profile_app spends most of
    its time in hot_loop."""
    results = tmp_path / "interrupted"
    args = ("gunicorn", "profile_app:app", "--pythonpath", str(APPS_DIR), "--quick", "--point-duration", "1s",
            "--mrpc", "0", "--max-children", "1", "--clients", "2", "--no-confirm", "--profile", "--no-thread-sweep")
    # in the middle of the point after the first sweep point
    err = _stopped(results, args, results / "points" / "children-1-t1.json", after_s=1.0)
    assert "--resume" in err and "Traceback" not in err
    measured = {p.name: p.read_bytes() for p in (results / "points").glob("*.json")}
    assert "sizes.json" in measured and "children-1-t1.json" in measured
    assert not (results / "recommendation.json").exists()
    # what the run derived from its points so far, stored for a report of it (issue 26)
    summary = json.loads((results / "summary.json").read_text())
    assert [p["key"] for p in summary["points"]] == [p["key"] for p in ResultsDir(results).points()]
    assert summary["measure"] == json.loads(measured["sizes.json"])["summary"] and summary["memory"] is not None
    assert [p["children"] for p in summary["sweep"]][0] == 1
    validate_results_dir(results, finished=False)
    page = run_pounder("report", results, "-o", tmp_path / "r.html", timeout=120)
    assert page.returncode == 0, page.stderr
    assert f"the {len(measured)} points measured so far" in (tmp_path / "r.html").read_text()

    done = _tune("--resume", str(results))
    assert done.returncode == 0, done.stderr
    data = _recommendation(results, done)
    assert data["params"]["max_clients"] >= 1
    for name, content in measured.items():  # what was measured before is kept, not measured again
        assert (results / "points" / name).read_bytes() == content
    assert not processes_mentioning(str(results))
    _check_profile(results, done.stdout, tmp_path / "done.html")


def _check_profile(results: Path, stdout: str, page: Path) -> None:
    """tune --profile's files (validated with the results directory), its text agreeing with
    them, and the report page showing it."""
    assert json.loads((results / "tune.json").read_text())["options"]["profile"] is True
    profile = json.loads((results / "profile.json").read_text())
    assert profile["profiler"]["name"] == "py-spy" and not profile["interrupted"]
    first = profile["functions"][0]
    assert first["name"].startswith("hot_loop (profile_app.py") and first["self_share"] > 0.5, profile["functions"][:3]
    assert "hot_loop" in (results / "flame.svg").read_text()
    text = stdout[stdout.index("Profile of the recommended configuration"):]
    row = text.splitlines()[text.splitlines().index(next(line for line in text.splitlines()
                                                         if "functions by self share" in line)) + 2]
    assert row.split()[0] == f"{first['self_share'] * 100:.1f}" and row.endswith(first["name"])
    assert "Files: profile.json, flame.svg" in text
    assert (results / "recommendation.txt").read_text() == stdout
    done = run_pounder("report", results, "-o", page, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "s time went" in page.read_text() and "hot_loop" in page.read_text()


@pytest.mark.skipif(apache_missing(perl=True) is not None, reason=str(apache_missing(perl=True)))
def test_a_server_that_does_not_start_is_reported_with_its_own_log_lines(public_dir: Path) -> None:
    conf = public_dir / "broken.conf"
    found = find_apache()
    assert found is not None
    conf.write_text(f"LoadModule perl_module {found[1]}/mod_perl.so\nPerlRequire /nonexistent/startup.pl\n")
    results = public_dir / "results"
    done = _tune("apache", str(conf), "--quick", "--results", str(results), timeout_s=120)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "\npounder: error: the server did not start: " in done.stderr
    assert "/nonexistent/startup.pl" in done.stderr  # Apache's / mod_perl's own words
    assert not processes_mentioning(str(results))


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_command_adapter_tunes_any_server(tmp_path: Path) -> None:
    results = tmp_path / "command"
    command = (f"{sys.executable} -m gunicorn --bind {{host}}:{{port}} --workers {{workers}} "
               f"--max-requests {{max_requests}} --chdir {APPS_DIR} wsgi_app:app")
    done = _tune("command", command, "--path", "/sleep?ms=10", "--quick", "--point-duration", "1s", "--mrpc", "0",
                 "--max-children", "2", "--clients", "2", "--no-confirm", "--results", str(results))
    assert done.returncode == 0, done.stderr
    data = _recommendation(results, done)
    assert [p["children"] for p in data["sweep"]] == [1, 2]
    assert f"--workers {data['params']['max_clients']} " in data["config"]
    assert f"--max-requests {data['params']['max_requests']} " in data["config"]
    assert not processes_mentioning(str(results))


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_memory_floor_stops_the_step_and_the_server(tmp_path: Path) -> None:
    """With a floor above what the machine has available, nothing may run: the step stops with
    MemoryFloorError and no server process is left; what was written stays readable."""
    from pounder.procs import mem_available
    from pounder.tune import GunicornAdapter, MemoryFloorError, TuneOptions, tune

    results = tmp_path / "floor"
    options = TuneOptions(quick=True, point_s=1.0, mrpc_values=(0,), memory_floor=mem_available() + 2**40)
    with pytest.raises(MemoryFloorError, match="below the floor"):
        tune(GunicornAdapter("wsgi_app:app", pythonpath=str(APPS_DIR)), options, results=results)
    assert not processes_mentioning(str(results))
    validate_results_dir(results, finished=False)


@pytest.mark.alone  # the step's end, timed
@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_memory_floor_stops_a_running_step(tmp_path: Path) -> None:
    """The floor is watched while the load runs: a 10 s step ends long before its time."""
    from pounder.pool import Runner
    from pounder.tune import GunicornAdapter, MemoryFloorError, PoolParams

    runner = Runner(GunicornAdapter("wsgi_app:app", pythonpath=str(APPS_DIR)), tmp_path / "servers", "/", 0, 10.0)
    with runner.started(PoolParams(2)) as server:
        runner.memory_floor = 2**60  # as if memory ran out once the step is under way
        started = time.monotonic()
        with pytest.raises(MemoryFloorError):
            runner.bench(server, 4, duration=10.0)
        assert time.monotonic() - started < 5.0
    assert not processes_mentioning(str(tmp_path / "servers"))


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_workers_that_crash_every_few_requests_end_the_run_with_one_line(tmp_path: Path) -> None:
    """Issue 25 item 13: every trial failed more than 1 % of its requests (each worker exits on its
    sixth); the knee was a point with no counted trial and the advice raised a TypeError."""
    results = tmp_path / "crash"
    done = _tune("gunicorn", "wsgi_app:app", "--pythonpath", str(APPS_DIR), "--path", "/exit?after=5", "--quick",
                 "--point-duration", "1s", "--mrpc", "0", "--max-children", "1", "--measure-children", "1",
                 "--no-thread-sweep", "--requests-per-child", "10", "--no-confirm", "--results", str(results))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("pounder: error: no trial of the children sweep counted: every one had no request "
                           "answered or more than 1% of its requests failed (1 child: "), last
    assert not processes_mentioning(str(results))
    # warming said why it stopped: its rounds failed, not a limit reached
    sizes = json.loads((results / "points" / "sizes.json").read_text())["summary"]
    assert sizes["warm_failing"] is True and sizes["settled"] is False, sizes
    again = _tune("--resume", str(results), timeout_s=60)  # decided again from the stored points: the same line
    assert again.returncode == 1 and again.stderr.strip().splitlines()[-1] == last, again.stderr


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_a_server_that_halts_while_measured_is_a_failure_with_its_log(tmp_path: Path) -> None:
    """Issue 25 item 14: workers exiting with status 3 make gunicorn's arbiter halt during the
    size measurement; that was exit 2 "process N has exited (zombie)", as if the input were bad,
    with neither the server's words nor the way to resume."""
    results = tmp_path / "halt"
    done = _tune("gunicorn", "wsgi_app:app", "--pythonpath", str(APPS_DIR), "--path", "/exit?after=3&code=3",
                 "--quick", "--point-duration", "1s", "--mrpc", "0", "--max-children", "1", "--measure-children", "1",
                 "--requests-per-child", "10", "--no-confirm", "--results", str(results), timeout_s=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    error = next(line for line in lines if line.startswith("pounder: error: "))
    assert re.match(r"pounder: error: the server \(pid \d+\) exited while it was measured \(what was measured is "
                    rf"in {re.escape(str(results))}; continue with: pounder tune --resume ", error), error
    assert any("--- last lines of" in line for line in lines), done.stderr  # gunicorn's own words follow
    assert not processes_mentioning(str(results))


NOISY_APP = '''\
import atexit
import sys

# A library that dumps its state at exit: megabytes after the cause.
atexit.register(lambda: sys.stderr.write("".join(f"state {i}: {'x' * 1000}\\\\n" for i in range(6000))))
raise RuntimeError("DATABASE_URL is not set: the cause")
'''


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_a_server_that_fails_with_a_huge_log_says_why_in_20_lines(tmp_path: Path) -> None:
    """Issue 25 item 16: an app that failed to start wrote 5.9 MB of log, all of it went to
    stderr and the cause was lost in it. Now: at most 20 lines, the errors first (the cause
    among them), the whole logs kept in the results directory."""
    (tmp_path / "noisy_app.py").write_text(NOISY_APP)
    results = tmp_path / "noisy"
    junit = tmp_path / "tune.xml"
    done = _tune("gunicorn", "noisy_app:app", "--pythonpath", str(tmp_path), "--quick", "--mrpc", "0",
                 "--no-thread-sweep", "--max-children", "2", "--no-confirm", "--results", str(results), "--junit",
                 str(junit), timeout_s=120)  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("pounder: error: ")):]
    (case,) = ElementTree.fromstring(junit.read_text()).iter("testcase")  # the JUnit file says why, as the line
    error = case.find("error")
    assert error is not None and error.get("type") == "failed"
    assert "pounder: error: " + " ".join(error.get("message", "").split()) == lines[0]
    assert len(lines) <= 20, done.stderr[-3000:]
    assert lines[0].startswith("pounder: error: the server did not start: gunicorn exited with status "), lines[0]
    assert any("RuntimeError: DATABASE_URL is not set: the cause" in line for line in lines), done.stderr
    assert all(len(line) < 400 for line in lines)
    assert not re.search(r'File ".*/pounder/', done.stderr)  # the app's traceback, never pounder's
    kept = re.fullmatch(r"pounder: its whole logs: (\S+)/ \((.+)\)", lines[-1])
    assert kept, lines[-1]
    folder = Path(kept.group(1))
    assert folder.parent == results / "logs"
    whole = "".join((folder / name).read_text() for name in kept.group(2).split(", "))
    assert whole.count("state 5999: ") >= 1 and "DATABASE_URL is not set: the cause" in whole
    assert f"--- {folder}/error.log: " in done.stderr  # the excerpt names the kept files
    assert not (results / "servers").exists()
    assert not processes_mentioning(str(tmp_path))
