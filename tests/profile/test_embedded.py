"""A profile inside another run (tune --profile, an experiment's record = ["profile"]): the pure
parts (the side-by-side table, the summary lines), the profiler chosen and checked before a run
starts anything, the option stored for --resume, and what is refused as bad input."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pounder import UsageError
from pounder.experiment import ExperimentError, load_experiment
from pounder.load import LoadOptions
from pounder.pool import GunicornAdapter
from pounder.profile import (
    CostFigure,
    ProfilerCost,
    ProfileResult,
    ProfileTrial,
    check_profiler,
    function_table,
    moved_rows,
    profiler_for,
    render_moved,
    summary_lines,
)
from pounder.tune import TuneOptions, make_options
from pounder.tune._profile_step import check_profile
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"


def _result(stacks: dict[str, int], unit: str = "samples") -> ProfileResult:
    trials = tuple(ProfileTrial(round=n, profiled=profiled, complete=100, failed=0, non_2xx=0, elapsed_s=1.0,
                                requests_per_s=100.0 if profiled else 110.0, p50_us=1000, p99_us=2000)
                   for n in (1, 2) for profiled in (False, True))
    return ProfileResult(
        tool_version="0", started_at="2024-01-01T00:00:00Z", url="http://127.0.0.1:1/", server_pid=42,
        server_name="gunicorn", found_by="pid 42", profiler="py-spy", profiler_version="py-spy 0.4.3", unit=unit,
        load="closed loop, 2 connections", rounds=2, warmup_requests=0, trials=trials,
        cost=ProfilerCost(CostFigure(100 / 110, 0.85, 0.95, 5, 5, 1 / 32, True),
                          CostFigure(1.0, 0.9, 1.1, 5, 2, 0.8125, False)), total_weight=sum(stacks.values()),
        functions=tuple(function_table(stacks)), children=(), stacks=dict(stacks))


BEFORE = _result({"handle;hot_loop": 800, "handle;cold_loop": 150, "handle": 30, "handle;read": 20})
AFTER = _result({"handle;hot_loop": 200, "handle;cold_loop": 750, "handle": 30, "handle;write": 20})


def test_moved_rows_give_each_functions_self_share_in_every_profile() -> None:
    rows = dict(moved_rows({"before": BEFORE, "after": AFTER}, "before", top=3))
    assert rows["hot_loop"] == [pytest.approx(0.8), pytest.approx(0.2)]
    assert rows["cold_loop"] == [pytest.approx(0.15), pytest.approx(0.75)]
    assert "read" not in rows and "write" not in rows  # the 4th of each
    assert set(rows) == {"hot_loop", "cold_loop", "handle"}


def test_moved_rows_follow_the_baseline_and_mark_what_a_profile_lacks() -> None:
    rows = moved_rows({"after": AFTER, "before": BEFORE}, "before", top=4)
    assert [name for name, _ in rows][:2] == ["hot_loop", "cold_loop"]  # by the baseline's share
    shares = dict(rows)
    assert shares["read"] == [None, pytest.approx(0.02)]  # columns in the order given: after, before
    assert shares["write"] == [pytest.approx(0.02), None]
    with pytest.raises(ValueError, match="no profile labelled"):
        moved_rows({"after": AFTER}, "before")


def test_render_moved_is_a_table_of_percentages() -> None:
    lines = render_moved({"before": BEFORE, "after": AFTER}, "before", top=2)
    assert lines[0].split() == ["function", "before", "after"]
    assert lines[1].split() == ["hot_loop", "80.0", "20.0"]
    assert lines[2].split() == ["cold_loop", "15.0", "75.0"]


def test_summary_lines_say_the_stored_figures() -> None:
    lines = summary_lines(BEFORE, ["profile.json", "flame.svg"], heading="Profile of it", top=2)
    text = "\n".join(lines)
    assert lines[0].startswith("Profile of it: gunicorn (pid 42) by py-spy 0.4.3")
    assert "200 requests profiled" in lines[0]
    assert ("Profiler's cost on requests/s: 0.91x profiled / not (median of 5 rounds, each 0.85-0.95): a cost "
            "(5 of 5 rounds served fewer profiled; sign test p = 0.031)") in text
    assert ("p50 latency: 1.00x profiled / not (median of 5 rounds, each 0.90-1.10): no cost these rounds can "
            "tell") in text
    table = lines[lines.index("  Top 2 functions by self share (of 1,000 samples):") + 2:][:2]
    assert [row.split()[-1] for row in table] == ["hot_loop", "cold_loop"]
    assert [float(row.split()[0]) for row in table] == [80.0, 15.0]
    assert lines[-1] == "  Files: profile.json, flame.svg"


def test_the_profiler_follows_the_servers_language() -> None:
    assert profiler_for("python", False) == "py-spy"
    assert profiler_for("perl", True) == "nytprof"
    assert profiler_for("perl", False) == "perf"
    assert profiler_for("php", False) == "perf"
    assert profiler_for("ruby", False) == "perf"
    assert profiler_for("other", False) == "auto"  # a command: by what it runs, once it runs


def test_a_missing_py_spy_is_said_before_anything_starts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # nor next to the interpreter
    with pytest.raises(UsageError, match="py-spy is not on PATH"):
        check_profiler("python", False)
    with pytest.raises(UsageError, match="nytprofmerge is not installed"):
        check_profiler("perl", True)
    with pytest.raises(UsageError, match="perf is not installed"):
        check_profiler("php", False)


def test_the_option_is_stored_for_resume() -> None:
    options = make_options(quick=True, profile=True)
    assert options.profile is True
    assert TuneOptions.from_dict(options.to_dict()).profile is True
    older = options.to_dict()
    del older["profile"]  # a manifest of an earlier pounder
    assert TuneOptions.from_dict(older).profile is False


def test_a_mix_or_a_remote_server_cannot_be_profiled(tmp_path: Path) -> None:
    adapter = GunicornAdapter("profile_app:app", pythonpath=str(APPS_DIR))
    urls = tmp_path / "urls.txt"
    urls.write_text("http://127.0.0.1:8000/a\nhttp://127.0.0.1:8000/b\n")
    with pytest.raises(UsageError, match="--profile loads one URL"):
        check_profile(adapter, make_options(urls=str(urls), profile=True))
    with pytest.raises(UsageError, match="--profile needs the server on loopback"):
        check_profile(adapter, TuneOptions(listen="10.0.0.1", load=LoadOptions(keepalive=False, allow_remote=True),
                                           profile=True))
    check_profile(adapter, make_options(urls=str(urls)))  # not profiling: nothing to refuse


def test_an_experiment_with_plain_urls_cannot_record_profiles(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text('title = "t"\nrecord = ["rps", "profile"]\n[server]\nadapter = "url"\n'
                    '[[load]]\nrequests = 10\n[[variant]]\nlabel = "a"\nurl = "http://127.0.0.1:1/"\n'
                    '[[variant]]\nlabel = "b"\nurl = "http://127.0.0.1:2/"\n')
    with pytest.raises(ExperimentError, match=r"e\.toml:2: record: profiles are taken on the servers pounder starts"):
        load_experiment(path)
    path.write_text(path.read_text().replace('adapter = "url"', f'adapter = "gunicorn"\napp = "profile_app:app"\n'
                                             f'pythonpath = "{APPS_DIR}"').replace("url = ", "path = ")
                    .replace('"http://127.0.0.1:1/"', '"/"').replace('"http://127.0.0.1:2/"', '"/?hot=1"'))
    assert load_experiment(path).record == ("rps", "profile")


def test_tune_and_run_refuse_a_missing_py_spy_before_starting_anything(tmp_path: Path) -> None:
    """A PATH without py-spy (nor py-spy next to the interpreter): one line, exit 2, no results directory,
    no server."""
    env = {**os.environ, "PATH": str(tmp_path)}
    alone = tmp_path / "bin"
    alone.mkdir()
    python = alone / "python"
    python.symlink_to(sys.executable)
    results = tmp_path / "results"
    tuned = run_pounder("tune", "gunicorn", "profile_app:app", "--pythonpath", APPS_DIR, "--quick", "--profile",
                        "--no-thread-sweep", "--results", results, python=python, timeout=120, env=env)
    assert tuned.returncode == 2, tuned.stderr
    assert "py-spy is not on PATH" in tuned.stderr and "Traceback" not in tuned.stderr
    experiment = tmp_path / "e.toml"
    experiment.write_text(f'title = "t"\nrecord = ["profile"]\n[server]\nadapter = "gunicorn"\n'
                          f'app = "profile_app:app"\npythonpath = "{APPS_DIR}"\n[[load]]\nrequests = 10\n'
                          '[[variant]]\nlabel = "a"\npath = "/"\n[[variant]]\nlabel = "b"\npath = "/?hot=1"\n')
    ran = run_pounder("run", experiment, "--results", results, python=python, timeout=120, env=env)
    assert ran.returncode == 2, ran.stderr
    assert "py-spy is not on PATH" in ran.stderr and "Traceback" not in ran.stderr
    assert not results.exists()
    assert not processes_mentioning(str(tmp_path))
