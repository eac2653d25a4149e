"""``pounder run EXPERIMENT.toml`` end to end: servers per distinct variant setting, side by side,
interleaved trials, memory recorded, results written, nothing left running."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pounder.servers import apache_missing, gunicorn_missing, phpfpm_missing, puma_missing
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.schemas import validate

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "experiments"
MIB = 1024 * 1024


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_pounder("run", *args, timeout=300)


@pytest.mark.alone  # "slower": a verdict on rates (tests/e2e/conftest.py)
@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_variants_with_their_own_settings_get_their_own_servers(public_dir: Path) -> None:
    experiment = public_dir / "e.toml"
    experiment.write_text(f"""
title = "cheap against costly"
[server]
adapter = "gunicorn"
app = "wsgi_app:app"
pythonpath = "{APPS_DIR}"
workers = 2

[[load]]
connections = 2
requests = 60
trials = 3

[[variant]]
label = "cheap"
path = "/"

[[variant]]
label = "costly"
path = "/cpu?ms=5"

[[variant]]
label = "one worker"
path = "/"
workers = 1
""")
    results = public_dir / "results"
    done = _run(str(experiment), "--results", str(results))
    assert done.returncode == 0, done.stderr
    assert "costly" in done.stdout and "slower" in done.stdout
    load = json.loads((results / "load-1.json").read_text())
    assert [v["label"] for v in load["variants"]] == ["cheap", "costly", "one worker"]
    memory = json.loads((results / "memory.json").read_text())["variants"]
    assert memory["cheap"]["after"]["children"] == 2 and memory["one worker"]["after"]["children"] == 1
    # two servers: the variants that share settings share one (same parent pid)
    pids = {v["label"]: v["server_pid"] for v in load["variants"]}
    assert pids["cheap"] == pids["costly"] != pids["one worker"]
    assert (results / "summary.txt").read_text() == done.stdout
    validate(json.loads((results / "experiment.json").read_text()), "experiment")
    validate(json.loads((results / "memory.json").read_text()), "experiment")
    validate(load, "compare")
    assert not processes_mentioning(str(results))


@pytest.mark.alone  # the dynamic pool grows with the load it is given in seconds
@pytest.mark.skipif(phpfpm_missing() is not None, reason=str(phpfpm_missing()))
def test_php_fpm_stock_dynamic_pool_against_a_fixed_one(public_dir: Path) -> None:
    """Spare settings in a variant: php-fpm's stock pm = dynamic (start 2, min spare 1, max spare 3)
    grows with the load, the fixed pool keeps its 2; behind its nginx front no server is sampled
    (the pool's parent does not listen where the requests go), and the comparison runs."""
    experiment = public_dir / "e.toml"
    experiment.write_text(f"""
title = "stock dynamic against fixed"
[server]
adapter = "php-fpm"
conf = "{APPS_DIR / 'php' / 'pool.conf'}"
root = "{APPS_DIR / 'php'}"
workers = 2

[[load]]
connections = 6
duration = "1s"
trials = 3

[[variant]]
label = "fixed"
path = "/sleep.php?ms=20"

[[variant]]
label = "stock"
path = "/sleep.php?ms=20"
workers = 20
start_servers = 2
min_spare = 1
max_spare = 3
""")
    results = public_dir / "results"
    done = _run(str(experiment), "--results", str(results))
    assert done.returncode == 0, done.stderr
    load = json.loads((results / "load-1.json").read_text())
    assert [(v["label"], v["trials"], v["server_pid"]) for v in load["variants"]] == [("fixed", 3, None),
                                                                                      ("stock", 3, None)]
    memory = json.loads((results / "memory.json").read_text())["variants"]
    assert memory["fixed"]["after"]["children"] == 2
    assert memory["stock"]["after"]["children"] > 2, memory["stock"]
    validate(json.loads((results / "experiment.json").read_text()), "experiment")
    validate(load, "compare")
    assert not processes_mentioning(str(results))


# not alone: py-spy's shares are of the app's own time, hot against cold loop, which a busy
# machine slows alike (test_tune.py's --profile run checks the same beside other tests)
@pytest.mark.skipif(gunicorn_missing() is not None or shutil.which("py-spy") is None,
                    reason="needs gunicorn and py-spy")
def test_recorded_profiles_show_where_the_time_moved(public_dir: Path) -> None:
    """record = ["profile"], quick: each variant profiled on a server of its own (py-spy), and the
    side-by-side table shows profile_app's time moving from hot_loop to cold_loop."""
    experiment = public_dir / "e.toml"
    experiment.write_text(f"""
title = "hot against cold"
record = ["rps", "profile"]
[server]
adapter = "gunicorn"
app = "profile_app:app"
pythonpath = "{APPS_DIR}"
workers = 2

[[load]]
connections = 2
duration = "1s"
trials = 3

[[variant]]
label = "hot"
path = "/?hot=400000&cold=100000"

[[variant]]
label = "cold"
path = "/?hot=100000&cold=400000"
""")
    results = public_dir / "results"
    done = _run(str(experiment), "--quick", "--results", str(results))
    assert done.returncode == 0, done.stderr
    profiles = [json.loads((results / f"profile-{n}.json").read_text()) for n in (1, 2)]
    for profile in profiles:
        validate(profile, "profile")
    shares = [{row["name"].split()[0]: row["self_share"] for row in profile["functions"]} for profile in profiles]
    assert profiles[0]["functions"][0]["name"].startswith("hot_loop (profile_app.py")
    assert profiles[1]["functions"][0]["name"].startswith("cold_loop (profile_app.py")
    assert shares[0]["hot_loop"] > shares[1]["hot_loop"] + 0.3 and shares[1]["cold_loop"] > shares[0]["cold_loop"]
    assert profiles[0]["url"].endswith("/?hot=400000&cold=100000")
    assert "hot_loop" in (results / "flame-1.svg").read_text()
    # the table: a row per function, the self share in each variant as the files store it
    lines = done.stdout.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("Where did the time move")) + 1:]
    assert table[0].split() == ["function", "hot", "cold"]
    rows = {line.split()[0]: line.split()[-2:] for line in table[1:] if line.startswith("  ") and "(" in line}
    for name in ("hot_loop", "cold_loop"):
        assert rows[name] == [f"{shares[0][name] * 100:.1f}", f"{shares[1][name] * 100:.1f}"]
    assert (results / "summary.txt").read_text() == done.stdout
    page = run_pounder("report", results, "-o", public_dir / "r.html", timeout=120)
    assert page.returncode == 0, page.stderr
    assert "Where did the time move" in (public_dir / "r.html").read_text()
    assert not processes_mentioning(str(results))


@pytest.mark.skipif(apache_missing(perl=True) is not None, reason=str(apache_missing(perl=True)))
def test_classic_preload_experiment_shows_the_memory_saved(public_dir: Path) -> None:
    """examples/experiments/preload.toml, quick: loading Example::Big in the parent leaves each child
    far less private memory than loading it on first use in every child."""
    shutil.copytree(EXAMPLES, public_dir / "experiments")
    for path in (public_dir / "experiments").rglob("*"):
        path.chmod(0o755 if path.is_dir() or path.suffix == ".pl" else 0o644)
    results = public_dir / "results"
    done = _run(str(public_dir / "experiments" / "preload.toml"), "--quick", "--results", str(results))
    assert done.returncode == 0, done.stderr
    memory = json.loads((results / "memory.json").read_text())["variants"]
    lazy, preloaded = memory["on first use"]["after"], memory["preloaded"]["after"]
    assert lazy["max_child_uss"] - preloaded["max_child_uss"] > 10 * MIB
    assert preloaded["median_child_shared"] - lazy["median_child_shared"] > 10 * MIB
    assert not processes_mentioning(str(results))


@pytest.mark.skipif(apache_missing(perl=True) is not None or shutil.which("strace") is None,
                    reason="needs Apache + mod_perl and strace")
def test_classic_stat_experiment_counts_the_lookups(public_dir: Path) -> None:
    """examples/experiments/stat-calls.toml, quick: the per-request system calls of each variant.
    Its load's trials are 200 requests instead of 3 s (1 s with --quick) each: the calls are traced
    after the load, on 200 requests of their own, and only they are checked here."""
    shutil.copytree(EXAMPLES, public_dir / "experiments")
    for path in (public_dir / "experiments").rglob("*"):
        path.chmod(0o755 if path.is_dir() or path.suffix == ".pl" else 0o644)
    stat_calls = public_dir / "experiments" / "stat-calls.toml"
    stat_calls.write_text(stat_calls.read_text().replace('duration = "3s"\n', "requests = 200\n", 1))
    assert "requests = 200\n" in stat_calls.read_text()
    results = public_dir / "results"
    done = _run(str(public_dir / "experiments" / "stat-calls.toml"), "--quick", "--results", str(results))
    assert done.returncode == 0, done.stderr
    # syscalls-N.json: the Nth variant of the file
    reports = [json.loads((results / f"syscalls-{n}.json").read_text()) for n in range(1, 6)]

    def lookups(report: dict[str, object]) -> float:
        calls = report["calls"]
        assert isinstance(calls, list)
        return sum(c["per_request"] for c in calls if c["name"] in ("newfstatat", "stat", "lstat", "statx", "openat"))

    by_label = dict(zip(["All", "None", "Alias", "Trans", "All+Trans"], reports, strict=True))
    assert lookups(by_label["All"]) > lookups(by_label["None"]) > lookups(by_label["Alias"]) > 0
    for name in ("Trans", "All+Trans"):
        assert lookups(by_label[name]) == 0
        assert not [f for f in by_label[name]["failures"] if f["path"] and "news" in f["path"]]
    assert any(f["path"] and f["path"].endswith(".htaccess") for f in by_label["All"]["failures"])
    for report in reports:  # whole numbers per request: every request makes the same calls
        assert all(c["per_request"] == int(c["per_request"]) for c in report["calls"])


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_a_server_input_that_cannot_work_is_bad_input_before_anything_is_created(public_dir: Path) -> None:
    """gunicorn's pythonpath does not exist: exit 2, one line, no results directory, no server."""
    experiment = public_dir / "e.toml"
    experiment.write_text("""
title = "a server that cannot start"
[server]
adapter = "gunicorn"
app = "wsgi_app:app"
pythonpath = "/nonexistent"

[[load]]
requests = 20

[[variant]]
label = "one"
path = "/"

[[variant]]
label = "two"
path = "/"
workers = 1
""")
    results = public_dir / "results"
    done = _run(str(experiment), "--results", str(results))
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("pounder: error: ") and "/nonexistent" in done.stderr
    assert not results.exists()
    assert not processes_mentioning(str(public_dir))


def test_a_variant_nothing_answers_is_written_then_exit_1(public_dir: Path, testserver: Any) -> None:
    """As pounder compare: everything is written and printed, then one line names the load and the
    variant no request succeeded to, and the exit status is 1 (not a comparison, not success)."""
    srv = testserver(mode="ok")
    experiment = public_dir / "refused.toml"
    experiment.write_text(f"""
title = "one answers, one refuses"
[server]
adapter = "url"

[[load]]
connections = 2
requests = 50
trials = 3

[[variant]]
label = "good"
url = "{srv.url}/"

[[variant]]
label = "refused"
url = "http://127.0.0.1:1/b"
""")
    results = public_dir / "results"
    done = _run(str(experiment), "--results", str(results))
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last == ("pounder: error: load 1 (NC 2, NR 50): no request succeeded to refused (150 failed: refused "
                    "150): no comparison with it (at least 2 counted trials needed)"), done.stderr
    assert "good" not in last and done.stderr.count("no request succeeded") == 1
    assert (results / "summary.txt").read_text() == done.stdout and "refused" in done.stdout
    load = json.loads((results / "load-1.json").read_text())
    validate(load, "compare")
    summaries = {v["label"]: v for v in load["variants"]}
    assert summaries["good"]["complete"] == 150 and summaries["refused"]["complete"] == 0
    refused = [t for t in load["trials"] if t["label"] == "refused" and t["round"] > 0]
    assert sum(t["failed"] for t in refused) == 150 and not any(t["counted"] for t in refused)
    assert not processes_mentioning(str(results))


def _example(public_dir: Path, name: str, *changes: tuple[str, str]) -> Path:
    """The shipped experiment ``name`` in ``public_dir``, its app's directory absolute and each
    ``(old, new)`` of ``changes`` made (shorter loads)."""
    text = (EXAMPLES / name).read_text().replace('"../../tests/apps', f'"{APPS_DIR}')
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    path = public_dir / name
    path.write_text(text)
    return path


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_gc_freeze_experiment_keeps_the_preloaded_objects_shared(public_dir: Path) -> None:
    """examples/experiments/gc-freeze.toml, quick, 100 requests a trial: the full collections the
    requests start write to every preloaded object's GC header and copy its pages into each
    worker, unless gc.freeze() moved the objects out of the collector's reach before the fork."""
    results = public_dir / "results"
    done = _run(str(_example(public_dir, "gc-freeze.toml", ("requests = 2000", "requests = 100"))), "--quick",
                "--results", str(results))
    assert done.returncode == 0, done.stderr
    memory = json.loads((results / "memory.json").read_text())["variants"]
    collector, frozen = memory["collector"]["after"], memory["gc.freeze()"]["after"]
    assert collector["children"] == frozen["children"] == 4
    trials = json.loads((results / "load-1.json").read_text())["trials"]
    for label in ("collector", "gc.freeze()"):  # the warm-up's, then the load's 4 trials (one not counted)
        sent = [t["complete"] + t["failed"] for t in trials if t["label"] == label]
        assert len(sent) == 4 and memory[label]["after"]["requests"] == memory[label]["warm"]["requests"] + sum(sent)
    assert frozen["median_child_shared"] - collector["median_child_shared"] > 10 * MIB
    assert collector["max_child_uss"] - frozen["max_child_uss"] > 10 * MIB
    assert collector["footprint"] - frozen["footprint"] > 4 * 10 * MIB
    validate(json.loads((results / "memory.json").read_text()), "experiment")
    assert f"{frozen['requests']:>8,}" in done.stdout
    assert not processes_mentioning(str(results))


@pytest.mark.skipif(puma_missing() is not None, reason=str(puma_missing()))
def test_puma_fork_worker_experiment_shares_what_worker_0_built(public_dir: Path) -> None:
    """examples/experiments/puma-fork-worker.toml without fork_worker 0, quick, 100 requests a
    trial and a refork after 50 (in the warm-up): each worker builds 16 MiB of caches over its first
    requests; with preload_app! each keeps its own, reforked from worker 0 they share its copy. The
    workers worker 0 forked count as workers (4 children)."""
    results = public_dir / "results"
    path = _example(public_dir, "puma-fork-worker.toml", ("requests = 1000", "requests = 100"),
                    ('[[variant]]\nlabel = "fork_worker 0"\npath = "/lazy"\nfork_worker = 0\n\n', ""),
                    ('label = "fork_worker 300"', 'label = "fork_worker 50"'),
                    ("fork_worker = 300", "fork_worker = 50"))
    done = _run(str(path), "--quick", "--results", str(results))
    assert done.returncode == 0, done.stderr
    memory = json.loads((results / "memory.json").read_text())["variants"]
    preloaded, reforked = memory["preload_app!"]["after"], memory["fork_worker 50"]["after"]
    assert preloaded["children"] == reforked["children"] == 4
    assert reforked["median_child_shared"] - preloaded["median_child_shared"] > 10 * MIB
    assert preloaded["max_child_uss"] - reforked["max_child_uss"] > 10 * MIB
    assert preloaded["footprint"] - reforked["footprint"] > 3 * 10 * MIB
    assert not processes_mentioning(str(results))
