"""``pounder top`` against a real Apache prefork + mod_perl (pounder.servers.ApacheServer): the live
view in tmux while a bounded pounder bench loads it (every child on the screen with its state; a
child recycled by MaxConnectionsPerChild marked new, then exited, then gone; q quits with 0), the
``--once --json -`` view against its schema and /proc, and bad input."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from support.burner import cpu_seconds
from support.cliutil import assert_usage_error, pounder_command, run_cli, run_pounder, start_pounder
from support.leftovers import processes_mentioning
from support.schemas import validate
from support.srvutil import smaps_bytes

PYTHON_DIR = str(Path(__file__).resolve().parents[2] / "python")
ENV = {**os.environ, "PYTHONPATH": PYTHON_DIR}
PROC_STATES = {"running", "accept", "sleeping", "exiting"}
APACHE_STATES = {"status", "idle", "starting", "reading", "writing", "keepalive", "dns", "closing", "logging",
                 "finishing", "cleanup"}
MIB = 1 << 20


def _children(parent: int) -> set[int]:
    """The parent's live children now (an exited child not yet reaped, a zombie, is not one)."""
    alive = set()
    for child in psutil.Process(parent).children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return alive


def _rows(screen: str) -> dict[int, list[str]]:
    """pid → the cells of its row on the screen (a row starts with a pid)."""
    return {int(line.split()[0]): line.split()[1:] for line in screen.splitlines()
            if re.match(r"^\s*\d+\s+\S", line) and line.split()[1] != "children"}


def _capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True,
                          timeout=10, check=True).stdout


def _whole_frame(session: str) -> str:
    screen = _capture(session)
    for _ in range(10):  # a capture taken while the terminal redraws holds half a frame
        if "accept queue" in screen:
            break
        time.sleep(0.05)
        screen = _capture(session)
    return screen


def _screens_during_load(srv, session: str, load: subprocess.Popen[bytes]
                         ) -> tuple[list[tuple[set[int], str]], list[str]]:
    """(children alive since a refresh before the capture, screen) while the load runs, and every
    glimpse taken in between: a child's 'exited' mark stays three refreshes (1.5 s), so the glimpses,
    0.3 s apart, see every mark even when a busy machine stretches the 1.3 s between screens."""
    screens, glimpses = [], []
    while load.poll() is None:
        before = _children(srv.pid)
        # more than two refreshes of 0.5 s: the screen shows every child of ``before``
        deadline = time.monotonic() + 1.3
        while time.monotonic() < deadline:
            time.sleep(0.3)
            glimpses.append(_whole_frame(session))
        screen = _whole_frame(session)
        screens.append((before & _children(srv.pid), screen))
    return screens, glimpses


def test_live_view_in_tmux_follows_recycled_children(apache_server, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    srv = apache_server(start_servers=3, min_spare=2, max_spare=4, max_request_workers=4,
                        max_connections_per_child=20, keepalive=False)
    session = f"pounder-top-{os.getpid()}"
    exit_file = tmp_path / "exit"
    command = (pounder_command("top", "--pidfile", srv.pidfile, "--interval", "0.5s", "--status",
                               f"{srv.url}/server-status") + f"; echo $? > {exit_file}; sleep 30")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50",
                    f"env PYTHONPATH={PYTHON_DIR} sh -c '{command}'"], check=True, timeout=10)
    load = None
    try:
        time.sleep(2.0)
        first = _children(srv.pid)
        load = start_pounder("bench", f"{srv.url}/cpu?ms=2", "--rate", "15", "-d", "9s", "-n", "400", "--no-keepalive",
                             "--warmup", "0", "-q", env=ENV, stdout=subprocess.DEVNULL, text=False)
        screens, glimpses = _screens_during_load(srv, session, load)
        assert load.wait(timeout=30) == 0, load.stderr.read() if load.stderr else ""
        time.sleep(2.5)  # more than 3 refreshes: the exited children's marks are gone
        last = _capture(session)
        for _ in range(8):  # Apache may fork a spare between a refresh and the capture: the next shows it
            if set(_rows(last)) == _children(srv.pid):
                break
            time.sleep(0.5)
            last = _capture(session)
        during = [_rows(screen) for _, screen in screens]
        seen = during + [_rows(screen) for screen in glimpses]
        # children recycled in step (each served 20) can all be replaced within one capture's window,
        # and a busy machine stretches the windows: one screen with children alive throughout is enough
        assert any(alive for alive, _ in screens), [screen for _, screen in screens]
        for (alive, screen), rows in zip(screens, during, strict=True):
            for pid in alive:
                assert pid in rows, f"child {pid} is not on the screen:\n{screen}"
                assert rows[pid][0] in APACHE_STATES, screen
            assert "req/s" in screen and "accept queue" in screen
        new = {pid for rows in seen for pid, cells in rows.items() if cells[-1] == "new"}
        exited = {pid for rows in seen for pid, cells in rows.items() if cells[-1] == "exited"}
        assert new - first, "no child started during the load was marked new"
        recycled = (new - first) & exited  # appeared, then exited (MaxConnectionsPerChild 20)
        assert recycled, (new, exited, screens[-1][1])
        assert first & exited, "no child of before the load was seen exiting"
        assert not (exited & set(_rows(last))), f"an exited child is still listed:\n{last}"
        assert set(_rows(last)) == _children(srv.pid), last
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True, timeout=10)
        deadline = time.monotonic() + 10
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert exit_file.read_text().strip() == "0"
    finally:
        if load is not None and load.poll() is None:
            load.kill()
            load.wait()
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, timeout=10)
    srv.stop()
    assert processes_mentioning(str(srv.workdir)) == []


def test_once_json_follows_its_schema_and_proc(apache_server) -> None:
    srv = apache_server(start_servers=3, min_spare=2, max_spare=4, preload=True)
    result = run_pounder("top", "--pidfile", srv.pidfile, "--once", "--interval", "0.3s", "--json", "-", env=ENV,
                         timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    view = json.loads(result.stdout)
    validate(view, "top")
    children = _children(srv.pid)
    assert {child["pid"] for child in view["children"]} == children
    assert view["status"] is None and view["totals"]["requests_per_s"] is None
    assert view["totals"]["accept_queue"] == 0
    for child in view["children"]:
        assert child["state_from"] == "proc" and child["state"] in PROC_STATES
        assert child["state"] == "accept", child  # an idle prefork child waits in accept4
        assert child["cpu_percent"] is not None and child["requests"] is None
        assert abs(child["cpu_s"] - cpu_seconds(child["pid"])) <= 0.05, child  # /proc/PID/stat's ticks of 10 ms
        mine = smaps_bytes(child["pid"])
        uss = mine["Private_Clean"] + mine["Private_Dirty"]
        assert abs(child["uss"] - uss) <= MIB, (child, mine)
        assert abs(child["pss"] - mine["Pss"]) <= MIB, (child, mine)
        assert abs(child["shared"] - (mine["Shared_Clean"] + mine["Shared_Dirty"])) <= MIB
        assert child["shared"] >= 35 * MIB  # startup_preload.pl's 40 MB, built in the parent
    footprint = sum(smaps_bytes(pid)["Pss"] for pid in (srv.pid, *children))
    assert abs(view["totals"]["footprint"] - footprint) <= 2 * MIB


def test_once_text_with_the_status_page(apache_server) -> None:
    srv = apache_server(start_servers=2, min_spare=1, max_spare=3)
    result = run_pounder("top", "--pidfile", srv.pidfile, "--once", "--interval", "0.2s", "--status",
                         f"{srv.url}/server-status", env=ENV, timeout=60)
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    assert set(rows) == _children(srv.pid), result.stdout
    assert "states from apache's status page" in result.stdout
    # the status read itself is served by a child: "status" (not counted busy); the others idle
    states = [cells[0] for cells in rows.values()]
    assert states.count("idle") >= len(rows) - 1 and set(states) <= {"idle", "status"}, result.stdout


def test_bad_input(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.pid"
    assert_usage_error(*run_cli("top", "--pidfile", str(missing)), "does not exist")
    empty = tmp_path / "empty.pid"
    empty.write_text("")
    assert_usage_error(*run_cli("top", "--pidfile", str(empty)), "does not contain a process id")
    stale = tmp_path / "stale.pid"
    stale.write_text("4194303\n")
    assert_usage_error(*run_cli("top", "--pidfile", str(stale)), "no process with pid 4194303")
    assert_usage_error(*run_cli("top"), "give exactly one of --pid, --pidfile and --name")
    assert_usage_error(*run_cli("top", "--pid", "1", "--status", "http://192.0.2.1/server-status"), "loopback")
    assert_usage_error(*run_cli("top", "--pid", "1", "--interval", "0"), "--interval")
    assert_usage_error(*run_cli("top", "--pid", "1", "--json", "-"), "--json - needs --once")
    assert_usage_error(*run_cli("top", "--pid", str(os.getpid()), "--status",
                                "http://127.0.0.1:1/server-status?auto", "--once"), "?auto")


def test_bench_shows_the_compact_line_on_a_terminal(apache_server, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    srv = apache_server(start_servers=2, min_spare=1, max_spare=3, max_request_workers=3, keepalive=False)
    session = f"pounder-top-bench-{os.getpid()}"
    command = (pounder_command("bench", f"{srv.url}/cpu?ms=10", "-c", "2", "-d", "4s", "--warmup", "0",
                               "--server-pidfile", srv.pidfile) + f"; echo $? > {tmp_path / 'exit'}; sleep 30")
    # COLUMNS: the pane's width for rich, which takes 80 when the new pane still reads 0x0 (seen once
    # on a busy machine: the line cut at 80 columns)
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "20",
                    f"env PYTHONPATH={PYTHON_DIR} COLUMNS=160 sh -c '{command}'"], check=True, timeout=10)
    try:
        deadline = time.monotonic() + 15  # the line is drawn once a second while the load runs
        screen = _capture(session)
        while "server: " not in screen and time.monotonic() < deadline:
            time.sleep(0.2)
            screen = _capture(session)
        deadline = time.monotonic() + 20
        while not (tmp_path / "exit").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "exit").read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, timeout=10)
    line = next((row for row in screen.splitlines() if row.startswith("server: ")), None)
    assert line is not None, screen
    assert re.search(r"server: \d+ children \(.+\)  footprint [\d.]+ MiB  top CPU \d+ \d+%", line), line
    srv.stop()
    assert processes_mentioning(str(srv.workdir)) == []


def test_a_worker_is_no_server_and_another_servers_status_page_is_not_believed(apache_server) -> None:
    """top on a child names its parent (exit 2); a status page whose pids are none of this server's
    children is set aside with a note, the states then from /proc."""
    srv = apache_server(start_servers=2, min_spare=1, max_spare=3)
    child = sorted(_children(srv.pid))[0]
    assert_usage_error(*run_cli("top", "--pid", str(child), "--once"), "has no children",
                       f"this one's parent is {srv.pid}")
    page = json.dumps({"accepted conn": 7, "processes": [{"pid": 4194000, "state": "Idle", "requests": 3}]})
    with _json_server(page) as url:
        result = run_pounder("top", "--pidfile", srv.pidfile, "--once", "--interval", "0.2s", "--status", url,
                             "--json", "-", env=ENV, timeout=60)
    assert result.returncode == 0, result.stderr
    view = json.loads(result.stdout)
    assert view["status"] is None and view["totals"]["requests_per_s"] is None
    assert any("names none of this server's children" in note for note in view["notes"]), view["notes"]
    assert {child["state_from"] for child in view["children"]} == {"proc"}


def test_php_fpm_child_serving_the_status_read_is_not_busy() -> None:
    from pounder.top import parse_status_page

    page = {"accepted conn": 9, "processes": [
        {"pid": 11, "state": "Idle", "requests": 4, "request uri": "/index.php"},
        {"pid": 12, "state": "Running", "requests": 5, "request uri": "/fpm-status?full&json"},
        {"pid": 13, "state": "Running", "requests": 2, "request uri": "/slow.php"}]}
    read = parse_status_page(json.dumps(page), "http://127.0.0.1:8080/fpm-status?full&json")
    assert {pid: (c.state, c.busy) for pid, c in read.children.items()} == {
        11: ("idle", False), 12: ("status", False), 13: ("running", True)}


@contextlib.contextmanager
def _json_server(body: str) -> Iterator[str]:
    """A small server of our own on loopback answering every GET with ``body`` (JSON)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/status"
    finally:
        server.shutdown()
        server.server_close()
