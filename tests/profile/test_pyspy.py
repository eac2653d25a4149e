"""pounder profile with py-spy on gunicorn (4 workers): the hot function is named first, with the
share the app's own timing measures, and the result validates against its schema."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from pounder.profile import PROFILE_SCHEMA, load_profile, profile, profile_from_dict, render_profile
from support.chromium import CHROMIUM, rendered_dom
from support.cliutil import pounder_argv, run_pounder
from support.interrupted import interrupted
from support.schemas import validate

pytestmark = pytest.mark.skipif(shutil.which("py-spy") is None, reason="py-spy is not installed")


def _app_share(timing: Path) -> float:
    """hot_loop's share of the app's time, summed over every worker (the app's own timing)."""
    hot = whole = 0
    for path in timing.iterdir():
        values = [int(v) for v in path.read_text().split()]
        hot, whole = hot + values[0], whole + values[2]
    return hot / whole


def test_the_hot_function_first_with_the_share_the_app_times(gunicorn_server, tmp_path: Path) -> None:
    timing = tmp_path / "timing"
    timing.mkdir()
    srv = gunicorn_server(app="profile_app:app", workers=4, max_requests=12, env={"APP_TIMING_DIR": str(timing)})
    result = profile(srv.url + "/", server_pid=srv.pid, rounds=2, duration=1.5, connections=4, warmup=20)
    top = result.by_self[0]
    assert top.name.startswith("hot_loop (profile_app.py"), render_profile(result)
    measured = _app_share(timing)
    assert abs(top.self_share - measured) <= 0.15, (top.self_share, measured, render_profile(result, top=25))
    assert result.profiler == "py-spy" and result.unit == "samples"
    # every worker forked during the windows (max_requests 40) is in the profile
    assert len(result.children) > 4 and result.started
    assert result.parent_weight >= 0 and srv.pid not in {child.pid for child in result.children}
    assert sum(child.weight for child in result.children) == result.total_weight
    assert [t.profiled for t in result.trials] == [False, True, True, False]
    assert result.cost.throughput.ratio is not None and result.cost.throughput.rounds == 2
    doc = json.loads(json.dumps(result.to_dict()))
    validate(doc, "profile")
    assert doc["schema"] == PROFILE_SCHEMA and profile_from_dict(doc) == result
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    assert load_profile(path) == result


def test_bad_input_is_one_line_before_anything_runs(gunicorn_server, tmp_path: Path) -> None:
    srv = gunicorn_server(app="profile_app:app", workers=1)
    cases = {
        "pidfile": [srv.url + "/", "--server-pidfile", str(tmp_path / "missing.pid")],
        "other port": ["http://127.0.0.1:1/", "--server-pid", str(srv.pid)],
        "profiler": [srv.url + "/", "--server-pid", str(srv.pid), "--profiler", "gprof"],
        "perl": [srv.url + "/", "--server-pid", str(srv.pid), "--profiler", "nytprof"],
        "rounds": [srv.url + "/", "--server-pid", str(srv.pid), "--rounds", "0"],
    }
    for name, args in cases.items():
        done = run_pounder("profile", *args, timeout=60)
        assert done.returncode == 2, (name, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pounder: error: "), (name, done.stderr)
    # py-spy missing (not on PATH, not next to the interpreter): one line naming it, nothing sent
    alone = tmp_path / "bin"
    alone.mkdir()
    (alone / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": "/usr/bin:/bin", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    done = run_pounder("profile", srv.url + "/", "--server-pid", srv.pid, python=alone / "python", timeout=60, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "pip install py-spy" in done.stderr, done.stderr
    assert not _py_spy_running(srv.pid)


def _py_spy_running(pid: int) -> bool:
    """A py-spy recording server ``pid`` runs (tests of other servers may run py-spy meanwhile)."""
    return subprocess.run(["pgrep", "-f", f"py-spy record --pid {pid} "], capture_output=True).returncode == 0


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_the_command_writes_json_flame_graph_and_a_report_page(gunicorn_server, tmp_path: Path) -> None:
    """pounder profile --json --flamegraph, then pounder report on the JSON: the SVG and the page open
    in Chromium without console messages and name the hot function."""
    srv = gunicorn_server(app="profile_app:app", workers=2)
    out, svg, page = tmp_path / "p.json", tmp_path / "flame.svg", tmp_path / "page.html"
    done = run_pounder("profile", srv.url + "/", "--server-pid", srv.pid, "--rounds", "2", "-d", "1s", "-c", "2",
                       "--warmup", "10", "--per-child", "--json", out, "--flamegraph", svg, timeout=120)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    result = load_profile(out)
    top = result.by_self[0]
    assert top.name.startswith("hot_loop")
    # the text shows the table the JSON holds: the top row's share as stored
    assert f"{top.self_share * 100:6.1f}  {top.inclusive_share * 100:6.1f}" in text.split("Top functions by self")[1]
    assert "Per process:" in text and "Profiler's cost on requests/s:" in text
    assert "hot_loop" in rendered_dom(svg)
    assert run_pounder("report", out, "-o", page, timeout=120).returncode == 0
    dom = rendered_dom(page)
    assert "Where the children" in dom and "hot_loop" in dom and "data:image/svg+xml;base64," in dom
    assert not _py_spy_running(srv.pid)


def test_a_signal_during_a_profile_keeps_what_was_sampled(gunicorn_server, tmp_path: Path) -> None:
    """Ctrl-C while py-spy samples: exit 130, no py-spy left running, and the JSON holds the samples
    taken until then, marked interrupted. (SIGTERM and SIGHUP reach the same path: pounder._interrupt
    raises each as Ctrl-C, tests/cli/test_interrupt.py.)"""
    srv = gunicorn_server(app="profile_app:app", workers=2)
    out = tmp_path / "p.json"
    argv = pounder_argv("profile", srv.url + "/", "--server-pid", srv.pid, "--rounds", "3", "-d", "3s", "-c", "2",
                        "--warmup", "10", "--json", out)
    _, err = interrupted(argv, out, lambda: _py_spy_running(srv.pid), after_s=1.0, limit_s=60)
    assert "interrupted by" in err and err.strip().splitlines()[-1].startswith("pounder: error: interrupted")
    result = load_profile(out)
    assert result.interrupted and result.total_weight > 0
    assert result.by_self[0].name.startswith("hot_loop")
    assert not _py_spy_running(srv.pid)
    assert psutil.pid_exists(srv.pid)  # pounder did not start this server: it is left as it was
