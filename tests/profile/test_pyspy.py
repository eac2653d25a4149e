"""pounder profile with py-spy on gunicorn (4 workers): the hot function is named first, with the
share the app's own timing measures, and the result validates against its schema."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pounder.profile import PROFILE_SCHEMA, load_profile, profile, profile_from_dict, render_profile
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
    assert result.cost.throughput_ratio is not None
    doc = json.loads(json.dumps(result.to_dict()))
    validate(doc, "profile")
    assert doc["schema"] == PROFILE_SCHEMA and profile_from_dict(doc) == result
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    assert load_profile(path) == result


def test_bad_input_is_one_line_before_anything_runs(gunicorn_server, tmp_path: Path) -> None:
    srv = gunicorn_server(app="profile_app:app", workers=1)
    pounder = [sys.executable, "-m", "pounder", "profile"]
    cases = {
        "pidfile": [srv.url + "/", "--server-pidfile", str(tmp_path / "missing.pid")],
        "other port": ["http://127.0.0.1:1/", "--server-pid", str(srv.pid)],
        "profiler": [srv.url + "/", "--server-pid", str(srv.pid), "--profiler", "gprof"],
        "perl": [srv.url + "/", "--server-pid", str(srv.pid), "--profiler", "nytprof"],
        "rounds": [srv.url + "/", "--server-pid", str(srv.pid), "--rounds", "0"],
    }
    for name, args in cases.items():
        done = subprocess.run([*pounder, *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, (name, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pounder: error: "), (name, done.stderr)
    assert not _py_spy_running()


def _py_spy_running() -> bool:
    return subprocess.run(["pgrep", "-f", "py-spy record"], capture_output=True).returncode == 0
