"""Starman serving tests/apps/app.psgi (pounder.servers.StarmanServer)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil
import pytest

from pounder.servers import ServerStartError, starman_missing
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


def test_starts_with_its_workers_and_stops(starman_server) -> None:
    srv = starman_server(workers=3)
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


def test_max_requests_recycles_workers(starman_server) -> None:
    srv = starman_server(workers=1, max_requests=3)  # counts connections: urllib opens one per request
    pids = {int(get(srv.url + "/pid")) for _ in range(7)}
    assert len(pids) >= 2


@pytest.mark.parametrize("preload", [True, False])
def test_data_shared_only_with_preload(starman_server, preload: bool) -> None:
    srv = starman_server(workers=2, preload_app=preload, env={"APP_DATA_MB": "40"})
    answers = warm_every_child(srv, "/data")
    for pid, body in answers.items():
        data = fields(body)
        assert data["bytes"] == str(40 * MB)
        if preload:
            assert data["built_in"] == str(srv.pid)
            assert shared_mb(pid) >= 35, f"worker {pid}: shared {shared_mb(pid):.1f} MB"
            assert private_mb(pid) < 10, f"worker {pid}: private {private_mb(pid):.1f} MB"
        else:
            assert data["built_in"] == str(pid)
            assert private_mb(pid) >= 35, f"worker {pid}: private {private_mb(pid):.1f} MB"


@pytest.mark.parametrize("preload", [True, False])
def test_psgi_that_dies(starman_server, tmp_path: Path, preload: bool) -> None:
    psgi = tmp_path / "broken.psgi"
    psgi.write_text('die "pounder-test: psgi failed on purpose\\n";\n')
    srv = starman_server(psgi, start=False, preload_app=preload)
    with pytest.raises(ServerStartError, match="pounder-test: psgi failed on purpose"):
        srv.start(timeout_s=15)  # without preload: the workers keep dying, noticed as such
    assert not psutil.pid_exists(srv.pid)


def test_parent_killed_then_stop(starman_server) -> None:
    srv = starman_server(workers=2)
    workers = srv.children()
    os.kill(srv.pid, signal.SIGKILL)
    srv.stop()
    assert wait_not_running([srv.pid, *workers], 5) == []


def test_gone_when_the_starting_process_dies(tmp_path: Path) -> None:
    if starman_missing():
        pytest.skip(str(starman_missing()))
    kill_starter_and_check("starman", tmp_path / "w")
