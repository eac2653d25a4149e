"""uWSGI with its master and the python3 plugin serving tests/apps/wsgi_app.py
(pounder.servers.UwsgiServer): start, answer, workers, max-requests, preload vs lazy-apps (on
/data and in memory, read by pounder and independently), the user's ini file, failures, stop, and
its stats server (uwsgi_stats) under a known load. The pure parts (uwsgi_command, the ini
stripping) without a server."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from pounder import UsageError
from pounder.procs import read_process
from pounder.servers import (
    ServerStartError,
    UwsgiServer,
    ini_lazy_apps,
    uwsgi_app_missing,
    uwsgi_missing,
    uwsgi_stats,
    uwsgi_target_is_ini,
)
from pounder.servers._uwsgi import UwsgiSettings, strip_owned_options, uwsgi_command
from support.leftovers import kill_leftovers
from support.srvutil import (
    MB,
    fields,
    get,
    start_then_sigkill,
    stop_and_check,
    wait_not_running,
    warm_every_child,
)

APPS = Path(__file__).resolve().parents[1] / "apps"
MISSING = uwsgi_missing()
needs_uwsgi = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))


def _requests(stats: dict[str, Any]) -> int:
    return sum(int(worker["requests"]) for worker in stats["workers"])


# ---------------------------------------------------------------------------------------------
# A real server


@needs_uwsgi
def test_stats_count_every_request_and_show_busy_workers(uwsgi_server) -> None:
    srv = uwsgi_server(processes=2)
    before = srv.stats()
    assert [w["pid"] for w in before["workers"]] == srv.children()
    assert {w["status"] for w in before["workers"]} == {"idle"}
    assert before["listen_queue"] == 0 and before["listen_queue_errors"] == 0
    sent = 37
    for _ in range(sent):
        get(srv.url + "/")
    # a worker counts a request after it has written the answer: wait (bounded) for the last one
    deadline = time.monotonic() + 5
    while _requests(srv.stats()) < _requests(before) + sent and time.monotonic() < deadline:
        time.sleep(0.02)
    after = srv.stats()
    assert _requests(after) - _requests(before) == sent
    assert after["listen_queue_errors"] == 0
    # a request held in a worker: that worker is busy, the other idle
    held = threading.Thread(target=get, args=(srv.url + "/sleep?ms=1500",))
    held.start()
    try:
        deadline = time.monotonic() + 5
        statuses: list[str] = []
        while statuses.count("busy") != 1 and time.monotonic() < deadline:
            statuses = [w["status"] for w in srv.stats()["workers"]]
            time.sleep(0.02)
        assert sorted(statuses) == ["busy", "idle"]
    finally:
        held.join()


def _workers_until(srv: UwsgiServer, wanted: int, timeout_s: float) -> list[int]:
    """The running workers (uWSGI's status_counters), read every 0.2 s until ``wanted`` run (at
    most ``timeout_s``)."""
    seen: list[int] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        counters = srv.status_counters()
        assert counters is not None
        seen.append(counters["workers"])
        if seen[-1] == wanted:
            break
        time.sleep(0.2)
    return seen


@needs_uwsgi
def test_cheaper_starts_its_initial_workers_grows_under_load_and_shrinks_when_idle(uwsgi_server) -> None:
    """processes 3, cheaper 1, cheaper-initial 2, cheaper-step 1 (cheaper-overload 1: uWSGI's
    checks, once a second, start a worker after two busy ones and stop one per idle one): 2 workers
    at the start, 3 under a load of 3 clients, back to 1 idle; uWSGI counts every request."""
    srv = uwsgi_server(processes=3, cheaper=1, cheaper_initial=2, cheaper_step=1)
    counters = srv.status_counters()
    deadline = time.monotonic() + 2  # a worker cheaped between the two reads takes a moment to exit
    while counters is not None and counters["workers"] != len(srv.children()) and time.monotonic() < deadline:
        time.sleep(0.05)
        counters = srv.status_counters()
    # 2 started; on a busy machine uWSGI's first idle check (a second later) may have cheaped one already
    assert counters is not None and counters["workers"] in (1, 2) and counters["workers"] == len(srv.children())
    assert [w["status"] for w in srv.stats()["workers"]].count("cheap") == 3 - counters["workers"]
    stop = threading.Event()
    served = [0, 0, 0]

    def client(index: int) -> None:
        while not stop.is_set():
            get(srv.url + "/sleep?ms=100")
            served[index] += 1

    clients = [threading.Thread(target=client, args=(i,)) for i in range(3)]
    for thread in clients:
        thread.start()
    try:
        grown = _workers_until(srv, 3, timeout_s=10)
    finally:
        stop.set()
        for thread in clients:
            thread.join()
    assert grown[-1] == 3 and len(srv.children()) == 3, grown
    shrunk = _workers_until(srv, 1, timeout_s=10)
    assert shrunk[-1] == 1 and len(srv.children()) == 1, shrunk
    after = srv.status_counters()
    # every request counted, in the worker slots cheaped since too (pounder's readiness probe before)
    assert after is not None and after["requests"] - counters["requests"] == sum(served) and after["busy workers"] == 0


@needs_uwsgi
@pytest.mark.parametrize("length", [103, 140])
def test_stats_socket_of_a_long_workdir(uwsgi_server, tmp_path: Path, length: int) -> None:
    """A stats socket path uWSGI would refuse ("invalid socket name": over 102 bytes, below the
    kernel's 107 too, as a long --results directory gives) is made in a short private directory."""
    name = "w" * (length - len(str(tmp_path / "x" / "run" / "stats.sock")) + 1)
    srv = uwsgi_server(processes=1, workdir=tmp_path / name)
    assert len(str(srv.workdir / "run" / "stats.sock")) == length
    assert not str(srv.stats_path).startswith(str(srv.workdir))
    assert len(srv.stats()["workers"]) == 1
    short = srv.stats_path.parent
    srv.stop()
    assert not short.exists()


@needs_uwsgi
def test_uwsgi_stats_of_nothing(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="cannot read uWSGI's stats on .*stats.sock"):
        uwsgi_stats(tmp_path / "stats.sock")


@needs_uwsgi
def test_max_requests_replaces_a_worker_after_that_many(uwsgi_server) -> None:
    srv = uwsgi_server(processes=1, max_requests=3)
    pids = [int(get(srv.url + "/pid")) for _ in range(9)]
    runs: list[list[int]] = []
    for pid in pids:
        if runs and runs[-1][0] == pid:
            runs[-1].append(pid)
        else:
            runs.append([pid])
    assert len({run[0] for run in runs}) == len(runs)  # a replaced worker never comes back
    # the first worker also served the readiness probe; every later one serves exactly 3
    assert len(runs[0]) <= 3 and [len(run) for run in runs[1:-1]] == [3] * (len(runs) - 2), pids
    assert len(runs) >= 3
    assert srv.children() == [runs[-1][0]]


@needs_uwsgi
@pytest.mark.parametrize("lazy_apps", [False, True])
def test_app_loaded_in_the_master_unless_lazy_apps(uwsgi_server, lazy_apps: bool) -> None:
    srv = uwsgi_server(processes=2, lazy_apps=lazy_apps, env={"APP_DATA_MB": "1"})
    answers = warm_every_child(srv, "/data")
    assert set(answers) == set(srv.children())
    for pid, body in answers.items():
        data = fields(body)
        assert data["bytes"] == str(MB)
        assert data["built_in"] == str(pid if lazy_apps else srv.pid)


def _rollup(pid: int) -> dict[str, int]:
    """This test's own reading of /proc/PID/smaps_rollup (bytes), independent of pounder.procs."""
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as file:
        for line in file:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                values[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return values


@needs_uwsgi
def test_preload_shares_what_lazy_apps_builds_in_every_worker(uwsgi_server) -> None:
    """The issue's check: 40 MB built at import. Preloaded (uWSGI's default) each worker shares
    it (>= 30 MB shared); with lazy-apps each worker holds its own copy (>= 35 MB private). Read
    by pounder (pounder.procs) and by this test from smaps_rollup, which must agree."""
    seen = {}
    for lazy_apps in (False, True):
        srv = uwsgi_server(processes=2, lazy_apps=lazy_apps, env={"APP_DATA_MB": "40"})
        warm_every_child(srv, "/data")
        for pid in srv.children():
            own = _rollup(pid)
            shared = own["Shared_Clean"] + own["Shared_Dirty"]
            private = own["Private_Clean"] + own["Private_Dirty"]
            mem = read_process(pid, "child")
            assert abs(mem.shared - shared) <= MB and abs(mem.private - private) <= MB, (mem, own)
            if lazy_apps:
                assert mem.private >= 35 * MB and private >= 35 * MB, (mem, own)
            else:
                assert mem.shared >= 30 * MB and shared >= 30 * MB, (mem, own)
                assert mem.private < 20 * MB, mem
            seen[(lazy_apps, pid)] = (mem.shared / MB, mem.private / MB)
        srv.stop()
    print("(lazy_apps, worker): (shared MiB, private MiB)", {k: tuple(round(x, 1) for x in v) for k, v in seen.items()})


@needs_uwsgi
def test_a_users_ini_with_its_own_sockets_and_pool(uwsgi_server, tmp_path: Path) -> None:
    app_dir = tmp_path / "site"
    app_dir.mkdir()
    (app_dir / "wsgi_app.py").write_text((APPS / "wsgi_app.py").read_text())
    with socket.socket() as held:  # the ini's own address is taken: it must not be bound
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        ini = app_dir / "site.ini"
        ini.write_text("\n".join([
            "[uwsgi]",
            "plugin = python3",
            "pythonpath = %d",
            "module = wsgi_app:app",
            "env = APP_DATA_MB=2",
            f"http-socket = 127.0.0.1:{taken}",
            f"socket = 127.0.0.1:{taken}",
            "processes = 7",
            "master = false",
            "lazy-apps = true",
            "cheaper = 1",
            f"pidfile = {tmp_path}/elsewhere.pid",
            f"stats = 127.0.0.1:{taken}",
            "",
        ]))
        srv = uwsgi_server(str(ini), processes=2)
        assert len(srv.children()) == 2
        answers = warm_every_child(srv, "/data")
        assert {fields(body)["bytes"] for body in answers.values()} == {str(2 * MB)}  # the ini's env
        assert {fields(body)["built_in"] for body in answers.values()} == {str(srv.pid)}  # its lazy-apps: ours
        assert not (tmp_path / "elsewhere.pid").exists() and srv.read_pidfile() == srv.pid
        copy = srv.workdir / "site.ini"
        assert f"pythonpath = {app_dir}/" in copy.read_text()  # %d: the original's directory
        assert copy.read_text().count("# set by pounder:") == 8
        assert ini.read_text().count("# set by pounder") == 0  # the user's file untouched
        stop_and_check(srv)


@needs_uwsgi
def test_an_ini_runs_in_its_own_directory(uwsgi_server, tmp_path: Path) -> None:
    (tmp_path / "wsgi_app.py").write_text((APPS / "wsgi_app.py").read_text())
    ini = tmp_path / "app.ini"
    ini.write_text("[uwsgi]\npythonpath = .\nmodule = wsgi_app:app\n")
    srv = uwsgi_server(str(ini), processes=1)
    assert get(srv.url + "/") == "hello\n"


@needs_uwsgi
@pytest.mark.parametrize("lazy_apps", [False, True])
def test_a_module_that_fails_to_import(uwsgi_server, tmp_path: Path, lazy_apps: bool) -> None:
    (tmp_path / "broken_app.py").write_text('raise RuntimeError("pounder-test: import failed on purpose")\n')
    srv = uwsgi_server("broken_app:app", start=False, pythonpath=str(tmp_path), lazy_apps=lazy_apps)
    with pytest.raises(ServerStartError) as caught:
        srv.start(timeout_s=20)
    # preloaded the master gives up (status 22); lazy, a worker asks the master to end everything
    # (it exits 22 or 0, whichever comes first): uWSGI's words say why either way
    assert str(caught.value).startswith(f"uwsgi exited with status {'' if lazy_apps else '22 '}")
    assert "pounder-test: import failed on purpose" in caught.value.log_tail
    assert "no app loaded" in caught.value.log_tail  # uWSGI's own words
    assert not psutil.pid_exists(srv.pid)


@needs_uwsgi
def test_a_missing_module_and_an_ini_naming_one(uwsgi_server, tmp_path: Path) -> None:
    assert "cannot find the module 'no_such_app'" in str(uwsgi_app_missing("no_such_app:app"))
    srv = uwsgi_server("no_such_app:app", start=False)
    with pytest.raises(ServerStartError, match="exited with status 22") as caught:
        srv.start(timeout_s=20)
    assert "No module named 'no_such_app'" in caught.value.log_tail
    ini = tmp_path / "bad.ini"
    ini.write_text("[uwsgi]\nmodule = no_such_app:app\n")
    srv = uwsgi_server(str(ini), start=False)
    with pytest.raises(ServerStartError, match="exited with status 22") as caught:
        srv.start(timeout_s=20)
    assert "No module named 'no_such_app'" in caught.value.log_tail


@pytest.mark.parametrize(("text", "message"), [
    ("module = a:b\n", "has no [uwsgi] section"),
    ("[other]\nmodule = a:b\n", "has no [uwsgi] section"),
    ("[uwsgi]\nini = other.ini\n", "uses ini = other.ini: give pounder one self-contained file"),
    ("[uwsgi]\ninclude = /etc/x.ini\n", "uses include = /etc/x.ini"),
])
def test_an_unusable_ini_is_refused_before_anything_starts(tmp_path: Path, text: str, message: str) -> None:
    ini = tmp_path / "app.ini"
    ini.write_text(text)
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")) as caught:
        UwsgiServer(tmp_path / "w", str(ini))
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "w").exists()


def test_ini_input_checks(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="uwsgi: no such ini file"):
        UwsgiServer(None, str(tmp_path / "none.ini"))
    (tmp_path / "dir.ini").mkdir()
    with pytest.raises(UsageError, match="is a directory"):
        UwsgiServer(None, str(tmp_path / "dir.ini"))
    os.mkfifo(tmp_path / "fifo.ini")
    with pytest.raises(UsageError, match="is not a regular file"):
        UwsgiServer(None, str(tmp_path / "fifo.ini"))
    (tmp_path / "big.ini").write_bytes(b"[uwsgi]\n" + b"# x\n" * 300_000)
    with pytest.raises(UsageError, match="larger than the limit"):
        UwsgiServer(None, str(tmp_path / "big.ini"))
    with pytest.raises(UsageError, match="module:callable"):
        UwsgiServer(None, "wsgi_app")


_STARTER = """
import json, sys, time
from pounder.servers import UwsgiServer
server = UwsgiServer(sys.argv[1], "wsgi_app:app", pythonpath=sys.argv[2], processes=2).start()
print(json.dumps([server.pid, *server.children()]), flush=True)
time.sleep(60)
"""


@needs_uwsgi
def test_gone_when_the_starting_process_dies(tmp_path: Path) -> None:
    pids = start_then_sigkill([sys.executable, "-c", _STARTER, str(tmp_path / "w"), str(APPS)])
    assert len(pids) == 3
    left = wait_not_running(pids, 10)
    kill_leftovers(str(tmp_path))
    assert left == []


@needs_uwsgi
def test_a_graceful_stop_finishes_the_request_in_flight(uwsgi_server) -> None:
    srv = uwsgi_server(processes=1)
    answer: list[str] = []
    held = threading.Thread(target=lambda: answer.append(get(srv.url + "/sleep?ms=800")))
    held.start()
    deadline = time.monotonic() + 5
    while "busy" not in [w["status"] for w in srv.stats()["workers"]] and time.monotonic() < deadline:
        time.sleep(0.01)
    stop_and_check(srv)
    held.join()
    assert answer and fields(answer[0])["slept_ms"] == "800"


@needs_uwsgi
def test_sigterm_ends_it_instead_of_reloading(uwsgi_server) -> None:
    """uWSGI 2.0 reloads on SIGTERM by default; pounder's instance dies on it (--die-on-term), so
    the guard's SIGTERM stops it."""
    srv = uwsgi_server(processes=1)
    pids = [srv.pid, *srv.children()]
    os.kill(srv.pid, signal.SIGTERM)
    assert wait_not_running(pids, 10) == []
    assert "reload" not in srv.console_log.read_text().lower().split("sigterm", 1)[-1]


# ---------------------------------------------------------------------------------------------
# The pure parts


def test_uwsgi_command() -> None:
    argv = uwsgi_command(UwsgiSettings(processes=3, max_requests=50, lazy_apps=True), port=8123,
                         pidfile=Path("/w/run/uwsgi.pid"), stats=Path("/w/run/stats.sock"),
                         master_fifo=Path("/w/run/master.fifo"), app="app:application", pythonpath=("/srv/a",))
    assert argv == ["/usr/bin/uwsgi", "--plugin", "python3", "--master", "--http-socket", "127.0.0.1:8123",
                    "--processes", "3", "--max-requests", "50", "--min-worker-lifetime", "0", "--need-app",
                    "--disable-logging", "--die-on-term", "--pidfile", "/w/run/uwsgi.pid", "--stats",
                    "/w/run/stats.sock", "--master-fifo", "/w/run/master.fifo", "--lazy-apps", "--pythonpath",
                    "/srv/a", "--module", "app:application"]
    ini = uwsgi_command(UwsgiSettings(), port=1, pidfile=Path("p"), stats=Path("s"), master_fifo=Path("f"),
                        ini=Path("/w/app.ini"), ini_dir=Path("/srv"), plugin=None)
    assert ini[:5] == ["/usr/bin/uwsgi", "--chdir", "/srv", "--ini", "/w/app.ini"]  # the ini's own chdir wins
    assert "--lazy-apps" not in ini and "--module" not in ini
    threaded = uwsgi_command(UwsgiSettings(threads=4), port=1, pidfile=Path("p"), stats=Path("s"),
                             master_fifo=Path("f"), ini=Path("/w/app.ini"))
    assert threaded[threaded.index("--threads"):][:3] == ["--threads", "4", "--enable-threads"]
    assert threaded.index("--threads") > threaded.index("--ini")  # after the ini: it replaces the ini's own
    assert "--threads" not in ini and "--enable-threads" not in ini
    with pytest.raises(UsageError, match="uwsgi: threads must be at least 1, not 0"):
        uwsgi_command(UwsgiSettings(threads=0), port=1, pidfile=Path("p"), stats=Path("s"), master_fifo=Path("f"),
                      app="a:b")
    with pytest.raises(UsageError, match="processes must be at least 1"):
        uwsgi_command(UwsgiSettings(processes=0), port=1, pidfile=Path("p"), stats=Path("s"), master_fifo=Path("f"),
                      app="a:b")
    with pytest.raises(UsageError, match="either the app"):
        uwsgi_command(UwsgiSettings(), port=1, pidfile=Path("p"), stats=Path("s"), master_fifo=Path("f"))
    cheaper = uwsgi_command(UwsgiSettings(processes=4, cheaper=1, cheaper_initial=3, cheaper_step=2), port=1,
                            pidfile=Path("p"), stats=Path("s"), master_fifo=Path("f"), app="a:b")
    at = cheaper.index("--cheaper-algo")
    assert cheaper[at:at + 10] == ["--cheaper-algo", "spare", "--cheaper", "1", "--cheaper-initial", "3",
                                   "--cheaper-step", "2", "--cheaper-overload", "1"]
    assert UwsgiSettings(processes=4, cheaper=2).initial == 2 and UwsgiSettings(processes=4).initial == 4
    for bad, message in ((UwsgiSettings(processes=2, cheaper=2), "cheaper must be at least 1 and below processes"),
                         (UwsgiSettings(processes=3, cheaper=2, cheaper_initial=1), "cheaper-initial must be from"),
                         (UwsgiSettings(processes=3, cheaper=1, cheaper_step=0), "cheaper-step and cheaper-overload")):
        with pytest.raises(UsageError, match=message):
            bad.validate()


def test_strip_owned_options() -> None:
    text = "\n".join([
        "[uwsgi]", "module = app:app", "http-socket = :80", "https-socket = :443,c,k", "uwsgi-socket = /s",
        "chmod-socket = 660", "socket = :3031", "http = :8080", "processes = 8", "workers = 8", "max-requests = 5",
        "master = true", "pidfile = /run/x.pid", "daemonize = /var/log/x", "logto = /var/log/x", "stats = :9191",
        "lazy-apps = true", "lazy = true", "cheaper = 2", "cheaper-initial = 2", "cheaper-step = 1", "harakiri = 30",
        "  processes=4", "# processes = 9", "[other]", "socket = :1", ""])
    kept, removed = strip_owned_options(text)
    assert removed == ["http-socket = :80", "https-socket = :443,c,k", "uwsgi-socket = /s", "socket = :3031",
                       "http = :8080", "processes = 8", "workers = 8", "max-requests = 5", "master = true",
                       "pidfile = /run/x.pid", "daemonize = /var/log/x", "logto = /var/log/x", "stats = :9191",
                       "lazy-apps = true", "lazy = true", "cheaper = 2", "cheaper-initial = 2", "cheaper-step = 1",
                       "processes=4"]
    lines = kept.splitlines()
    assert lines[:3] == ["[uwsgi]", "module = app:app", "# set by pounder: http-socket"]
    assert lines.count("# set by pounder: processes") == 2  # also the indented one
    assert len(kept.splitlines()) == len(text.splitlines())  # every line keeps its number
    assert "chmod-socket = 660" in kept and "harakiri = 30" in kept and "# processes = 9" in kept
    assert kept.splitlines()[-1] == "socket = :1"  # another section: not read by uWSGI, left alone


@pytest.mark.parametrize(("text", "lazy"), [
    ("[uwsgi]\nmodule = a:b\n", False),
    ("[uwsgi]\nlazy-apps = true\n", True),
    ("[uwsgi]\nlazy-apps =\n", True),
    ("[uwsgi]\nlazy-apps = false\n", False),
    ("[uwsgi]\nlazy-apps = Off\n", False),
    ("[uwsgi]\nlazy-apps = 0\n", False),
    ("[uwsgi]\nlazy = 1\n", True),
    ("[uwsgi]\nlazy-apps = true\nlazy-apps = no\n", False),
    ("[other]\nlazy-apps = true\n[uwsgi]\n", False),
])
def test_ini_lazy_apps(text: str, lazy: bool) -> None:
    assert ini_lazy_apps(text) is lazy


def test_what_a_target_is() -> None:
    assert not uwsgi_target_is_ini("wsgi_app:app") and not uwsgi_target_is_ini("pkg.mod:application")
    assert uwsgi_target_is_ini("app.ini") and uwsgi_target_is_ini("/srv/site/uwsgi.INI")
    assert uwsgi_target_is_ini("conf/uwsgi.cfg")

