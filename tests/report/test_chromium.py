"""Every report kind, made from real results, loaded in headless Chromium with no network: no
console errors, every chart present in the rendered page, a screenshot kept as a test artifact
(``test-artifacts/report-<kind>.png``, 1280 x 6000 pixels, or under ``$POUNDER_ARTIFACTS``)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pounder
from pounder.compare import Variant, compare
from pounder.experiment import load_experiment, run_experiment
from pounder.report import render_report
from pounder.servers import gunicorn_missing
from support.chromium import CHROMIUM, console_messages, run_chromium

REPO = Path(__file__).resolve().parents[2]
APPS = REPO / "tests" / "apps"
ARTIFACTS = Path(os.environ.get("POUNDER_ARTIFACTS", REPO / "test-artifacts"))
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
              pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))]


def check_in_chromium(html: Path, kind: str, charts: set[str]) -> str:
    """Load ``html``; return the DOM Chromium rendered. Fails on any console message of the page
    and unless the charts drawn are exactly ``charts`` (each once, each an inline SVG). One
    Chromium both dumps the DOM and takes the screenshot (the pages have no script: the window's
    size changes no DOM)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"report-{kind}.png"
    shot.unlink(missing_ok=True)
    done = run_chromium(html, "--dump-dom", f"--screenshot={shot}", "--window-size=1280,6000", "--hide-scrollbars")
    assert done.returncode == 0, done.stderr[-2000:]
    assert not console_messages(done.stderr), console_messages(done.stderr)
    dom = done.stdout
    figures = re.findall(r'<figure class="chart" id="([^"]+)">\s*<svg', dom)
    assert len(figures) == len(set(figures)), figures
    assert set(figures) == charts, figures
    assert shot.stat().st_size > 10_000, done.stderr[-2000:]
    return dom


def test_a_console_error_would_be_seen(tmp_path: Path) -> None:
    """The check above can fail: this Chromium reports a page's console messages on stderr."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><script>console.error("pounder-check"); nothing();</script>'
                    "</body></html>")
    messages = console_messages(run_chromium(page, "--dump-dom").stderr)
    assert any("pounder-check" in line for line in messages), messages
    assert any("nothing is not defined" in line for line in messages), messages


BENCH_CHARTS = {"bench-percentiles", "bench-latency-time", "bench-throughput", "bench-errors", "bench-phases"}
TUNE_CHARTS = {"tune-leak", "tune-memory", "tune-children", "tune-max-requests"}


def _tune_charts(run: Path, prefix: str = "tune") -> set[str]:
    """The charts of a finished tuning run's page: the pools chart too when the run compared pools
    at the offered load (runs of earlier versions did not)."""
    pools = json.loads((run / "recommendation.json").read_text()).get("pools")
    return {chart.replace("tune", prefix, 1) for chart in TUNE_CHARTS | ({"tune-pools"} if pools else set())}


@pytest.fixture(scope="module")
def gunicorn_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    from pounder.servers import GunicornServer

    server = GunicornServer(tmp_path_factory.mktemp("g"), "wsgi_app:app", pythonpath=str(APPS), workers=2)
    with server:
        yield server.url, server.pid


@pytest.fixture(scope="module")
def bench_files(tmp_path_factory: pytest.TempPathFactory, gunicorn_url: tuple[str, int]) -> list[Path]:
    """Two bench --json results against gunicorn, its processes sampled; the second asks for a
    path the app does not have (404) half of the time."""
    url, pid = gunicorn_url
    folder = tmp_path_factory.mktemp("bench")
    urls = folder / "urls.txt"
    urls.write_text(f"{url}/cpu?ms=2\n{url}/no-such-page\n")
    paths = []
    for name, target in (("cheap", {"url": url + "/"}), ("costly", {"url_file": urls, "order": "sequential"})):
        result = pounder.bench(**target, connections=4, duration="1.5s", keepalive=False, server_pid=pid,
                               sample_interval="250ms")
        assert result.server is not None and result.requests.complete > 0
        paths.append(folder / f"{name}.json")
        paths[-1].write_text(result.to_json())
    return paths


@pytest.fixture(scope="module")
def compare_file(tmp_path_factory: pytest.TempPathFactory, gunicorn_url: tuple[str, int]) -> Path:
    url, pid = gunicorn_url
    out = tmp_path_factory.mktemp("compare") / "compare.json"
    compare([Variant("cheap", url + "/", pid), Variant("costly", url + "/cpu?ms=2", pid)], trials=3,
            connections=2, duration="0.5s", keepalive=False, results=out)
    return out


def _write(tmp_path: Path, kind: str, paths: list[Any]) -> Path:
    html = tmp_path / f"{kind}.html"
    html.write_text(render_report(paths))
    assert "<script" not in html.read_text()
    return html


def test_bench_report(tmp_path: Path, bench_files: list[Path]) -> None:
    html = _write(tmp_path, "bench", bench_files)
    dom = check_in_chromium(html, "bench", BENCH_CHARTS | {"bench-memory-1", "bench-memory-2"})
    assert "cheap" in dom and "costly" in dom
    assert "status 404" in dom


def test_compare_report(tmp_path: Path, compare_file: Path) -> None:
    html = _write(tmp_path, "compare", [compare_file])
    check_in_chromium(html, "compare", {"compare-bars"})


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
    check_in_chromium(html, "experiment", {"experiment-load-1-bars", "experiment-memory"})


def test_tune_report(tmp_path: Path, demo_run: Path) -> None:
    html = _write(tmp_path, "tune", [demo_run])
    dom = check_in_chromium(html, "tune", _tune_charts(demo_run))
    assert "--workers" in dom
    assert "<details><summary>Details</summary>" in dom  # the long reasons collapsed


def test_apache_tune_report(tmp_path: Path, apache_run: Path) -> None:
    html = _write(tmp_path, "tune-apache", [apache_run])
    dom = check_in_chromium(html, "tune-apache", _tune_charts(apache_run) | {"tune-spare"})
    assert "MaxRequestWorkers" in dom


def test_several_results_on_one_page(tmp_path: Path, bench_files: list[Path], compare_file: Path,
                                     demo_run: Path) -> None:
    """Every kind at once, two of some: each chart keeps an id of its own."""
    html = _write(tmp_path, "mixed", [*bench_files, compare_file, compare_file, demo_run, demo_run])
    check_in_chromium(html, "mixed", BENCH_CHARTS | {"bench-memory-1", "bench-memory-2", "compare-bars",
                                                     "compare2-bars"} | _tune_charts(demo_run)
                      | _tune_charts(demo_run, "tune2"))
