"""SIGINT, SIGTERM and SIGHUP sent to a real ``pounder`` process stop it alike: it writes
everything measured, says so on one line, exits 130 (143 for SIGTERM) and leaves nothing
running; what it wrote renders with ``pounder report``.

Every signal is sent once the process has measured something (its own files say so), so the
tests do not depend on timing; every load is bounded and every server stopped, also on failure.

Which signal each command gets (issue 40, CI time): what a signal changes is per signal, and
shared by every command: pounder._interrupt turns each into KeyboardInterrupt, names it (Ctrl-C,
SIGTERM, SIGHUP) and gives the status (130, 143, 130); tests/cli/test_interrupt.py tests that for
all three, and here bench (the cheapest command) gets all three, end to end, from a real process.
What is per command is the same whichever signal comes: stopping its servers (or strace), writing
what was measured, saying so on one line. So each other command gets ONE signal, rotated so that
each of SIGINT, SIGTERM and SIGHUP still stops a command that has servers running: ``run`` SIGINT,
``syscalls`` SIGTERM, ``tune`` SIGHUP (and ``compare`` SIGHUP for its trials, SIGTERM before any).
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pounder.servers import gunicorn_missing
from support.cliutil import run_pounder, start_pounder, with_pythonpath
from support.leftovers import processes_mentioning
from support.schemas import validate

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 130}
CAUSE = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
SIGNALS = [pytest.param(signum, id=signum.name) for signum in EXIT]
needs_gunicorn = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def start(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    return start_pounder(*args, stdin=subprocess.DEVNULL, env=with_pythonpath(), cwd=cwd)


def signal_when(proc: subprocess.Popen[str], ready: Callable[[], bool], signum: int,
                timeout_s: float = 120.0) -> tuple[int, str, str]:
    """Send ``signum`` once ``ready()``; (exit status, stdout, stderr). Kills the process on failure."""
    try:
        deadline = time.monotonic() + timeout_s
        while not ready():
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"pounder ended ({proc.returncode}) before the signal:\n{out}\n{err}")
            assert time.monotonic() < deadline, "nothing measured in time"
            time.sleep(0.05)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def last_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def json_holds(path: Path, check: Callable[[Any], bool]) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            return check(json.loads(path.read_text()))
        except (OSError, ValueError):
            return False

    return ready


def render(tmp_path: Path, *results: Path) -> str:
    page = tmp_path / f"page-{len(list(tmp_path.glob('page-*')))}.html"
    done = run_pounder("report", *results, "-o", page, timeout=120)
    assert done.returncode == 0, done.stderr
    return page.read_text()


# -- bench and compare -----------------------------------------------------------------------


@pytest.mark.parametrize("signum", SIGNALS)
def test_bench_writes_every_output_and_the_count_is_exact(testserver: Any, tmp_path: Path,
                                                          signum: signal.Signals) -> None:
    pytest.importorskip("matplotlib")
    srv = testserver(mode="ok", delay_ms=2)
    json_path, csv_path, page = tmp_path / "o.json", tmp_path / "o.csv", tmp_path / "o.html"
    proc = start("bench", srv.url + "/", "-c", "2", "-d", "30s", "--json", str(json_path), "--csv", str(csv_path),
                 "--report", str(page))
    code, out, err = signal_when(proc, lambda: srv.count(settle_s=0) >= 50, signum)

    assert code == EXIT[signum], err
    assert "Traceback" not in out + err
    assert last_line(err) == (f"pounder: error: interrupted by {CAUSE[signum]}; the partial result is reported "
                              f"above and written to {json_path}, {csv_path}, {page}")
    document = json.loads(json_path.read_text())
    validate(document, "bench-result")
    assert document["interrupted"] is True
    requests = document["requests"]
    assert requests["complete"] >= 50 and requests["failed"] == 0
    warmup = document["warmup"]
    attempted = requests["complete"] + requests["failed"] + warmup["complete"] + warmup["failed"]
    assert srv.count() == attempted  # the server's own count
    assert csv_path.read_text().splitlines()[-1].startswith("100,")  # the percentiles of what was measured
    assert "interrupted" in page.read_text()
    assert "Interrupted:" in out


@pytest.mark.alone  # within a second of the signal: timed (tests/e2e/conftest.py)
@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_during_a_connection_storm_is_honoured_within_a_second(tmp_path: Path,
                                                                       signum: signal.Signals) -> None:
    """Issue 25: 2,000 connections waiting on a listener whose backlog is full (it never accepts):
    the run stops, writes its result and exits within 1 s of the signal (the drain after a cancel
    is 0.2 s; it was the 1 s of a run's normal end, 1.5 s in all)."""
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(1)
        json_path = tmp_path / "storm.json"
        proc = start("bench", f"http://127.0.0.1:{full.getsockname()[1]}/", "-c", "2000", "-d", "30s",
                     "--timeout", "20s", "-q", "--json", str(json_path))
        try:
            deadline = time.monotonic() + 60
            while not all(catches(proc.pid, s) for s in EXIT) or not _connecting(full.getsockname()[1], 1000):
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
            sent = time.monotonic()
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == EXIT[signum], err
    assert took < 1.0, f"{took:.2f} s from the signal to the exit"
    said = f"pounder: error: interrupted by {CAUSE[signum]}; the partial result is written to {json_path}"
    assert last_line(err) == said
    document = json.loads(json_path.read_text())
    assert document["interrupted"] is True and document["requests"]["complete"] == 0


def _connecting(port: int, at_least: int) -> bool:
    """Whether at least ``at_least`` connections to 127.0.0.1:``port`` are being made (SYN_SENT in
    /proc/net/tcp: on the io_uring path the sockets are in the ring's own table, not /proc/PID/fd)."""
    target = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as table:
        lines = table.read().splitlines()[1:]
    return sum(1 for line in lines if line.split()[2] == target and line.split()[3] == "02") >= at_least


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (its SigCgt mask in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(mask >> (signum - 1) & 1)


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_from_the_first_moment_is_one_line(testserver: Any, tmp_path: Path, signum: signal.Signals) -> None:
    """Sent as soon as pounder handles it, while the CLI is still being imported or read: one
    line, 130 or 143, no traceback (it was a silent 130, or a traceback, or death by the signal)."""
    srv = testserver(mode="ok")
    proc = start("bench", srv.url + "/", "-d", "30s", "--json", str(tmp_path / "o.json"))
    code, out, err = signal_when(proc, lambda: catches(proc.pid, signal.SIGTERM), signum, timeout_s=30)
    assert code == EXIT[signum], err
    assert "Traceback" not in err and out == ""
    assert err.splitlines()[-1].startswith(f"pounder: error: interrupted by {CAUSE[signum]}")
    assert len(err.splitlines()) == 1, err


def test_a_signal_while_the_outputs_are_written_waits_for_them(testserver: Any, tmp_path: Path) -> None:
    """SIGTERM right after the run ends, as the files are being written: every file is whole."""
    srv = testserver(mode="ok")
    json_path = tmp_path / "o.json"
    proc = start("bench", srv.url + "/", "-n", "200", "-c", "2", "--json", str(json_path), "-q")
    code, _out, err = signal_when(proc, lambda: srv.count(settle_s=0) >= 200, signal.SIGTERM)
    assert code in (0, 143, -signal.SIGTERM), err  # 0 or killed when it was already ending
    assert "Traceback" not in err
    document = json.loads(json_path.read_text())
    assert document["requests"]["complete"] + document["requests"]["failed"] <= 200


@pytest.mark.parametrize("signum", [signal.SIGHUP])
def test_compare_keeps_the_trials_done_and_they_render(testserver: Any, tmp_path: Path,
                                                       signum: signal.Signals) -> None:
    pytest.importorskip("matplotlib")
    srv = testserver(mode="ok", delay_ms=5)
    json_path, page = tmp_path / "c.json", tmp_path / "c.html"
    proc = start("compare", srv.url + "/a", srv.url + "/b", "-c", "2", "-d", "0.5s", "--trials", "5",
                 "--json", str(json_path), "--report", str(page))
    # after the warm-ups and a counted trial of each, before the end: ratios exist, the plan is not done
    code, out, err = signal_when(proc, json_holds(json_path, lambda d: len(d["trials"]) >= 4), signum)

    assert code == EXIT[signum], err
    assert last_line(err).startswith(f"pounder: error: interrupted by {CAUSE[signum]}; the partial result is")
    document = json.loads(json_path.read_text())
    validate(document, "compare")
    assert document["interrupted"] is True and document["complete"] is False
    assert srv.count() == sum(trial["complete"] + trial["failed"] for trial in document["trials"])
    assert "Interrupted:     yes, after" in out
    assert "interrupted" in page.read_text()
    assert "interrupted" in render(tmp_path, json_path)


def test_compare_stopped_before_any_trial_counted_renders(testserver: Any, tmp_path: Path) -> None:
    """No trial counted yet: the ratios are null; the report says there is no figure (it was a
    TypeError on None)."""
    srv = testserver(mode="ok", delay_ms=5)
    json_path = tmp_path / "c.json"
    proc = start("compare", srv.url + "/a", srv.url + "/b", "-c", "2", "-d", "2s", "--json", str(json_path), "-q")
    code, _out, err = signal_when(proc, json_holds(json_path, lambda d: len(d["trials"]) >= 1), signal.SIGTERM)
    assert code == 143, err
    document = json.loads(json_path.read_text())
    assert document["comparisons"][0]["requests_per_s"]["ratio"] is None
    assert "No trial was counted" in render(tmp_path, json_path)


# -- run, tune, syscalls: servers pounder started or traces --------------------------------


EXPERIMENT = """
title = "two loads"
[server]
adapter = "gunicorn"
app = "wsgi_app:app"
pythonpath = "{apps}"
workers = 2

[[load]]
connections = 2
requests = 40
trials = 3

[[load]]
connections = 2
duration = "1s"
trials = 5

[[variant]]
label = "cheap"
path = "/sleep?ms=5"

[[variant]]
label = "costly"
path = "/sleep?ms=10"
"""


@needs_gunicorn
@pytest.mark.parametrize("signum", [signal.SIGINT])
def test_run_writes_what_was_measured_and_stops_its_servers(public_dir: Path, signum: signal.Signals) -> None:
    pytest.importorskip("matplotlib")
    experiment = public_dir / "e.toml"
    experiment.write_text(EXPERIMENT.format(apps=APPS_DIR))
    results, page = public_dir / "results", public_dir / "r.html"
    proc = start("run", str(experiment), "--results", str(results), "--report", str(page))
    # the first load is done; the second one has a trial done
    code, out, err = signal_when(proc, json_holds(results / "load-2.json", lambda d: len(d["trials"]) >= 1), signum)

    assert code == EXIT[signum], err
    assert "Traceback" not in out + err
    assert last_line(err) == (f"pounder: error: interrupted by {CAUSE[signum]}; every server was stopped; what was "
                              f"measured is in {results}")
    validate(json.loads((results / "load-1.json").read_text()), "compare")
    second = json.loads((results / "load-2.json").read_text())
    validate(second, "compare")
    assert second["interrupted"] is True
    memory = json.loads((results / "memory.json").read_text())
    validate(memory, "experiment")
    assert memory["variants"]["cheap"]["after"]["children"] == 2
    assert "interrupted after 2 of 2 loads" in out
    assert (results / "summary.txt").read_text() == out
    assert "Load 2" in page.read_text()
    assert "Load 2" in render(public_dir, results)
    assert not processes_mentioning(str(results)), "a server outlived pounder run"


@needs_gunicorn
@pytest.mark.parametrize("signum", [signal.SIGHUP])
def test_tune_says_how_to_resume_and_writes_its_report(public_dir: Path, signum: signal.Signals) -> None:
    pytest.importorskip("matplotlib")
    results, page, junit = public_dir / "results", public_dir / "t.html", public_dir / "t.xml"
    proc = start("tune", "gunicorn", "wsgi_app:app", "--pythonpath", str(APPS_DIR), "--path", "/sleep?ms=10",
                 "--no-thread-sweep", "--quick", "--mrpc", "0,100", "--point-duration", "1s", "--max-children", "4",
                 "--results", str(results), "--report", str(page), "--junit", str(junit))
    code, out, err = signal_when(proc, lambda: (results / "points" / "children-1-t1.json").is_file(), signum)

    assert code == EXIT[signum], err
    assert "Traceback" not in out + err
    assert last_line(err) == (f"pounder: error: interrupted by {CAUSE[signum]}; every server was stopped; what was "
                              f"measured is in {results}; continue with: pounder tune --resume {results}")
    assert f"pounder: report: {page}" in err
    assert "children-1" in page.read_text() or "1 child" in page.read_text()
    (case,) = ElementTree.fromstring(junit.read_text()).iter("testcase")  # the run, stopped: where it is, how to go on
    assert case.find("error").get("message") == (  # type: ignore[union-attr]
        f"interrupted by {CAUSE[signum]} before the recommendation; what was measured is in {results}; continue "
        f"with: pounder tune --resume {results}")
    assert not (results / "recommendation.json").exists()
    assert not processes_mentioning(str(results)), "a server outlived pounder tune"


@needs_gunicorn
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_syscalls_stops_strace_and_the_server_runs_on(gunicorn_server: Any, tmp_path: Path) -> None:
    server = gunicorn_server(workers=2)
    log = tmp_path / "strace.log"
    proc = start("syscalls", server.url + "/cpu?ms=5", "--server-pid", str(server.pid), "-n", "100000", "-c", "1",
                 "--warmup", "0", "--log", str(log))
    code, out, err = signal_when(proc, lambda: log.is_file() and log.stat().st_size > 10_000, signal.SIGTERM)

    assert code == 143, err
    assert last_line(err) == ("pounder: error: interrupted by SIGTERM; strace was stopped; a trace cut short is not "
                              f"divided among requests, so nothing was counted; strace's own log is in {log}")
    assert out == ""
    deadline = time.monotonic() + 10
    while processes_mentioning(str(log)):  # strace -o LOG ...
        assert time.monotonic() < deadline, "strace outlived pounder syscalls"
        time.sleep(0.1)
    for pid in [server.pid, *server.children()]:  # detached: no tracer left on the server
        status = Path(f"/proc/{pid}/status").read_text()
        assert "TracerPid:\t0" in status, (pid, status)
