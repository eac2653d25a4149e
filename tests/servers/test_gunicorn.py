"""gunicorn (sync workers) serving tests/apps/wsgi_app.py (pounder.servers.GunicornServer)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from pounder.servers import ServerStartError, gunicorn_missing
from support.srvutil import (
    MB,
    fields,
    get,
    kill_starter_and_check,
    private_mb,
    shared_mb,
    stop_and_check,
    wait_not_running,
    warm_every_child,
)


def test_starts_with_its_workers_and_stops(gunicorn_server) -> None:
    srv = gunicorn_server(workers=3)
    assert get(srv.url + "/") == "hello\n"
    assert srv.read_pidfile() == srv.pid
    workers = srv.children()
    assert len(workers) == 3
    assert sorted(p.pid for p in psutil.Process(srv.pid).children()) == workers
    assert int(get(srv.url + "/pid")) in workers
    cpu = fields(get(srv.url + "/cpu?ms=30"))
    assert cpu["cpu_ms"] == "30" and int(cpu["pid"]) in workers
    assert fields(get(srv.url + "/leak"))["leaked"] == "1"
    stop_and_check(srv)


def test_max_requests_recycles_workers(gunicorn_server) -> None:
    srv = gunicorn_server(workers=1, max_requests=3)
    pids = {int(get(srv.url + "/pid")) for _ in range(7)}
    assert len(pids) >= 2


@pytest.mark.parametrize("preload", [True, False])
def test_data_shared_only_with_preload(gunicorn_server, preload: bool) -> None:
    srv = gunicorn_server(workers=2, preload=preload, env={"APP_DATA_MB": "40"})
    answers = warm_every_child(srv, "/data")
    for pid, body in answers.items():
        data = fields(body)
        assert data["bytes"] == str(40 * MB)
        if preload:
            assert data["built_in"] == str(srv.pid)
            assert shared_mb(pid) >= 35, f"worker {pid}: shared {shared_mb(pid):.1f} MB"
            assert private_mb(pid) < 20, f"worker {pid}: private {private_mb(pid):.1f} MB"
        else:
            assert data["built_in"] == str(pid)
            assert private_mb(pid) >= 35, f"worker {pid}: private {private_mb(pid):.1f} MB"


@pytest.mark.parametrize("preload", [True, False])
def test_app_that_fails_to_import(gunicorn_server, tmp_path: Path, preload: bool) -> None:
    (tmp_path / "broken_app.py").write_text('raise RuntimeError("pounder-test: import failed on purpose")\n')
    srv = gunicorn_server("broken_app:app", start=False, pythonpath=str(tmp_path), preload=preload)
    with pytest.raises(ServerStartError, match="pounder-test: import failed on purpose") as caught:
        srv.start(timeout_s=15)
    assert str(caught.value).startswith("gunicorn exited with status")
    assert not psutil.pid_exists(srv.pid)


def test_parent_killed_then_stop(gunicorn_server) -> None:
    srv = gunicorn_server(workers=2)
    workers = srv.children()
    os.kill(srv.pid, signal.SIGKILL)
    srv.stop()
    assert wait_not_running([srv.pid, *workers], 5) == []


def test_gone_when_the_starting_process_dies(tmp_path: Path) -> None:
    if gunicorn_missing():
        pytest.skip(str(gunicorn_missing()))
    kill_starter_and_check("gunicorn", tmp_path / "w")


def test_restart_after_stop(gunicorn_server) -> None:
    srv = gunicorn_server(workers=1)
    first = srv.pid
    srv.stop()
    srv.start()
    assert srv.pid != first and get(srv.url + "/") == "hello\n"
    started = time.monotonic()
    stop_and_check(srv)
    assert time.monotonic() - started < 5
