"""The contract every pre-forking server pounder starts keeps (gunicorn, Starman, Puma, Unicorn,
uWSGI: ``prefork_server``, tests/conftest.py), one suite run against each real server: it starts
exactly its workers and stops, recycles a worker after its requests, shares what preloading builds,
fails to start with its own words, is stopped with its parent killed, goes away with the process that
started it, and starts again. What one server alone does stays in its own file (tests/servers/test_KIND.py);
where the servers' own words differ, the difference is stated here, next to the check."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from pounder.servers import PumaServer, ServerStartError, UnicornServer, owns_listener
from support import rack, srvutil
from support.leftovers import processes_mentioning
from support.srvutil import (
    MB,
    fields,
    get,
    private_mb,
    shared_mb,
    stop_and_check,
    wait_not_running,
    warm_every_child,
)


def only(*kinds: str) -> pytest.MarkDecorator:
    """A check made of these servers only (``prefork_server`` is each of them in turn)."""
    return pytest.mark.parametrize("prefork_server", kinds, indirect=True)


# ---------------------------------------------------------------------------------------------
# Starts exactly its workers and stops


NO_GRANDCHILDREN = {"puma", "unicorn", "uwsgi"}
"""Servers whose workers are checked to be the master's only descendants (no process below them);
gunicorn's and Starman's are checked to be its children."""


def _puma_started(srv: Any) -> None:
    assert "Environment: production" in srv.console_log.read_text()


def _uwsgi_started(srv: Any) -> None:
    # no router process: the master owns the listening socket, the workers are its direct children
    assert owns_listener(srv.pid, srv.port, srv.host)


def _unicorn_stopped(srv: Any, workdir: Path) -> None:
    log = srv.error_log.read_text()
    assert "master complete" in log  # QUIT: the graceful shutdown, every worker reaped
    assert log.count("reaped #<Process::Status: pid") == 3


def _uwsgi_stopped(srv: Any, workdir: Path) -> None:
    assert processes_mentioning(str(workdir)) == []
    assert "graceful shutdown" in srv.console_log.read_text()


STARTED: dict[str, Callable[[Any], None]] = {"puma": _puma_started, "uwsgi": _uwsgi_started}
STOPPED: dict[str, Callable[[Any, Path], None]] = {"unicorn": _unicorn_stopped, "uwsgi": _uwsgi_stopped}


def test_starts_with_its_workers_and_stops(prefork_server: Any) -> None:
    srv = prefork_server(workers=3)
    assert get(srv.url + "/") == "hello\n"
    assert srv.read_pidfile() == srv.pid
    workers = srv.children()
    assert len(workers) == 3
    below = psutil.Process(srv.pid).children(recursive=prefork_server.kind in NO_GRANDCHILDREN)
    assert sorted(p.pid for p in below) == workers
    assert int(get(srv.url + "/pid")) in workers
    cpu = fields(get(srv.url + "/cpu?ms=30"))
    assert cpu["cpu_ms"] == "30" and int(cpu["pid"]) in workers
    assert fields(get(srv.url + "/leak"))["leaked"] == "1"
    STARTED.get(prefork_server.kind, lambda srv: None)(srv)
    workdir = srv.workdir
    stop_and_check(srv)
    STOPPED.get(prefork_server.kind, lambda srv, workdir: None)(srv, workdir)


# ---------------------------------------------------------------------------------------------
# Recycles a worker after its requests (Puma and Unicorn have no such setting; uWSGI's own test
# counts each worker's share: tests/servers/test_uwsgi.py)


@only("gunicorn", "starman")
def test_max_requests_recycles_workers(prefork_server: Any) -> None:
    srv = prefork_server(workers=1, max_requests=3)  # Starman counts connections: urllib opens one per request
    pids = {int(get(srv.url + "/pid")) for _ in range(7)}
    assert len(pids) >= 2


# ---------------------------------------------------------------------------------------------
# Shares what preloading builds (uWSGI's, with lazy-apps: tests/servers/test_uwsgi.py)


PRIVATE_MB_PRELOADED = {"gunicorn": 20, "starman": 10}
"""A preloaded worker's private memory is below this (MB) after answering /data."""


@only("gunicorn", "starman")
@pytest.mark.parametrize("preload", [True, False])
def test_data_shared_only_with_preload(prefork_server: Any, preload: bool) -> None:
    srv = prefork_server(workers=2, preload=preload, env={"APP_DATA_MB": "40"})
    answers = warm_every_child(srv, "/data")
    for pid, body in answers.items():
        data = fields(body)
        assert data["bytes"] == str(40 * MB)
        if preload:
            limit = PRIVATE_MB_PRELOADED[prefork_server.kind]
            assert data["built_in"] == str(srv.pid)
            assert shared_mb(pid) >= 35, f"worker {pid}: shared {shared_mb(pid):.1f} MB"
            assert private_mb(pid) < limit, f"worker {pid}: private {private_mb(pid):.1f} MB"
        else:
            assert data["built_in"] == str(pid)
            assert private_mb(pid) >= 35, f"worker {pid}: private {private_mb(pid):.1f} MB"


@only("puma", "unicorn")
def test_preload_shares_the_data_built_at_load(prefork_server: Any) -> None:
    """Preloading on vs off with 40 MB built at load: shared copy-on-write vs private per worker,
    each worker's sizes as pounder reads them and as smaps_rollup says (rack.worker_sizes)."""
    sizes = {}
    for preload in (False, True):
        srv = prefork_server(workers=2, preload=preload, env={"APP_DATA_MB": "40"})
        sizes[preload] = rack.worker_sizes(srv, 40, preload)
        srv.stop()
    print(f"{prefork_server.kind} worker (shared MB, USS MB):", sizes)
    for shared, uss in sizes[True].values():
        assert shared >= 35 and uss < 10, sizes
    for shared, uss in sizes[False].values():
        assert uss >= 35 and shared < 35, sizes
    off = sum(uss for _, uss in sizes[False].values()) / 2
    on = sum(uss for _, uss in sizes[True].values()) / 2
    assert off - on >= 30, sizes


# ---------------------------------------------------------------------------------------------
# Fails to start with its own words (uWSGI's: tests/servers/test_uwsgi.py)

FAILED_ON_PURPOSE = "pounder-test: {} failed on purpose"


def _broken_app(kind: str, folder: Path) -> tuple[Path | str, dict[str, Any]]:
    """An app of ``kind``'s own sort that fails as it loads: (the target, the options it needs)."""
    if kind == "gunicorn":
        (folder / "broken_app.py").write_text(f'raise RuntimeError("{FAILED_ON_PURPOSE.format("import")}")\n')
        return "broken_app:app", {"pythonpath": str(folder)}
    if kind == "starman":
        psgi = folder / "broken.psgi"
        psgi.write_text(f'die "{FAILED_ON_PURPOSE.format("psgi")}\\n";\n')
        return psgi, {}
    rackup = folder / "broken.ru"
    rackup.write_text(f'raise "{FAILED_ON_PURPOSE.format("rackup")}"\n')
    return rackup, {}


def _says_why(kind: str, error: ServerStartError, preload: bool, app: Path | str) -> None:
    """What each server's failure says."""
    text = str(error)
    if kind == "gunicorn":
        assert FAILED_ON_PURPOSE.format("import") in text
        assert text.startswith("gunicorn exited with status")
        return
    if kind == "starman":  # without preload: the workers keep dying, noticed as such
        assert FAILED_ON_PURPOSE.format("psgi") in text
        return
    reason, _, tail = text.partition("\n")
    assert reason.startswith(kind) and "Traceback" not in text
    assert ("exited with status 1" if preload else "workers keep exiting") in reason
    if kind == "puma" and not preload:  # each worker loads it and dies: Puma 5.6 logs the first line of
        assert "Unable to start worker" in tail and f"{app}:1" in tail  # the backtrace, not the message
    else:  # the master loads it (or, Unicorn, says why a worker died)
        assert FAILED_ON_PURPOSE.format("rackup") in tail


@only("gunicorn", "starman", "puma", "unicorn")
@pytest.mark.parametrize("preload", [True, False])
def test_an_app_that_fails_to_load(prefork_server: Any, tmp_path: Path, preload: bool) -> None:
    app, options = _broken_app(prefork_server.kind, tmp_path)
    srv = prefork_server(app, start=False, preload=preload, **options)
    with pytest.raises(ServerStartError) as failed:
        srv.start(timeout_s=15 if prefork_server.kind in ("gunicorn", "starman") else 30)
    _says_why(prefork_server.kind, failed.value, preload, app)
    assert not psutil.pid_exists(srv.pid)


# ---------------------------------------------------------------------------------------------
# Stopped with its parent killed; gone with the process that started it; starts again


def test_parent_killed_then_stop(prefork_server: Any) -> None:
    srv = prefork_server(workers=2)
    workers = srv.children()
    os.kill(srv.pid, signal.SIGKILL)
    srv.stop()
    assert wait_not_running([srv.pid, *workers], 5) == []


STARTERS: dict[str, Callable[[Path], None]] = {
    "gunicorn": lambda workdir: srvutil.kill_starter_and_check("gunicorn", workdir),
    "starman": lambda workdir: srvutil.kill_starter_and_check("starman", workdir),
    "puma": lambda workdir: rack.kill_starter_and_check(PumaServer, workdir),
    "unicorn": lambda workdir: rack.kill_starter_and_check(UnicornServer, workdir),
}
"""A separate process starts the server and is SIGKILLed: the server must go away by itself (uWSGI's
starter: tests/servers/test_uwsgi.py)."""


@only(*STARTERS)
def test_gone_when_the_starting_process_dies(prefork_server: Any, tmp_path: Path) -> None:
    STARTERS[prefork_server.kind](tmp_path / "w")


@only("gunicorn", "uwsgi")
def test_restart_after_stop(prefork_server: Any) -> None:
    srv = prefork_server(workers=1)
    first = srv.pid
    srv.stop()
    srv.start()
    assert srv.pid != first and get(srv.url + "/") == "hello\n"
    started = time.monotonic()
    stop_and_check(srv)
    assert time.monotonic() - started < 5
