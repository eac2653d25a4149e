"""Every report kind, made from real results, loaded in headless Chromium with no network: no
console errors, every chart present in the rendered page, a screenshot kept as a test artifact
(``test-artifacts/report-<kind>.png``, or under ``$POUNDER_ARTIFACTS``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pounder
from pounder.compare import Variant, compare
from pounder.experiment import load_experiment
from pounder.experiment._run import run_experiment
from pounder.report import render_report
from pounder.servers import gunicorn_missing
from pounder.tune import demo_adapter, make_options, tune

REPO = Path(__file__).resolve().parents[2]
APPS = REPO / "tests" / "apps"
ARTIFACTS = Path(os.environ.get("POUNDER_ARTIFACTS", REPO / "test-artifacts"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_NETWORK = ["--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--disable-background-networking"]

pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
              pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))]


def _chromium(html: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", *NO_NETWORK, *args, html.as_uri()], capture_output=True, text=True, timeout=120,
                          check=False)


def check_in_chromium(html: Path, kind: str, charts: int) -> str:
    """Load ``html``; return the DOM Chromium rendered. Fails on any console message of the page."""
    done = _chromium(html, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
    dom = done.stdout
    figures = re.findall(r'<figure class="chart" id="([^"]+)">\s*<svg', dom)
    assert len(figures) == charts == len(set(figures)), figures
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"report-{kind}.png"
    shot.unlink(missing_ok=True)
    taken = _chromium(html, f"--screenshot={shot}", "--window-size=1280,2400", "--hide-scrollbars")
    assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]
    return dom


def _chart_count(text: str) -> int:
    return len(re.findall(r'<figure class="chart" id="', text))


@pytest.fixture(scope="module")
def gunicorn_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    from pounder.servers import GunicornServer

    server = GunicornServer(tmp_path_factory.mktemp("g"), "wsgi_app:app", pythonpath=str(APPS), workers=2)
    with server:
        yield server.url, server.pid


def _write(tmp_path: Path, kind: str, paths: list[Any]) -> Path:
    html = tmp_path / f"{kind}.html"
    html.write_text(render_report(paths))
    assert "<script" not in html.read_text()
    return html


def test_bench_report(tmp_path: Path, gunicorn_url: tuple[str, int]) -> None:
    url, pid = gunicorn_url
    paths = []
    for name, path in (("cheap", "/"), ("costly", "/cpu?ms=2")):
        result = pounder.bench(url + path, connections=4, duration="1.5s", keepalive=False, server_pid=pid,
                               sample_interval="250ms")
        target = tmp_path / f"{name}.json"
        target.write_text(result.to_json())
        paths.append(target)
    html = _write(tmp_path, "bench", paths)
    dom = check_in_chromium(html, "bench", _chart_count(html.read_text()))
    assert "cheap" in dom and "costly" in dom


def test_compare_report(tmp_path: Path, gunicorn_url: tuple[str, int]) -> None:
    url, pid = gunicorn_url
    out = tmp_path / "compare.json"
    compare([Variant("cheap", url + "/", pid), Variant("costly", url + "/cpu?ms=2", pid)], trials=3,
            connections=2, duration="0.5s", keepalive=False, results=out)
    html = _write(tmp_path, "compare", [out])
    check_in_chromium(html, "compare", _chart_count(html.read_text()))


def test_experiment_report(tmp_path: Path) -> None:
    experiment = tmp_path / "e.toml"
    experiment.write_text(f"""
title = "cheap against costly"
record = ["rps", "latency", "cpu", "memory"]
[server]
adapter = "gunicorn"
app = "wsgi_app:app"
pythonpath = "{APPS}"
workers = 2
[[load]]
connections = 2
requests = 100
trials = 3
[[variant]]
label = "cheap"
path = "/"
[[variant]]
label = "costly"
path = "/cpu?ms=2"
""")
    run_experiment(load_experiment(experiment), tmp_path / "results")
    html = _write(tmp_path, "experiment", [tmp_path / "results"])
    check_in_chromium(html, "experiment", _chart_count(html.read_text()))


def test_tune_report(tmp_path: Path) -> None:
    results = tmp_path / "tune"
    options = make_options(quick=True, ram="512M", point_duration="1s", mrpc="0,100", max_children=4)
    tune(demo_adapter(), options, results=results)
    html = _write(tmp_path, "tune", [results])
    dom = check_in_chromium(html, "tune", _chart_count(html.read_text()))
    assert "--workers" in dom
