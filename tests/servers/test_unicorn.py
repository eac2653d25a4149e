"""Unicorn serving tests/apps/rack_app.ru (pounder.servers.UnicornServer)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from pounder import UsageError
from pounder.servers import ServerStartError, UnicornServer, UnicornSettings, render_unicorn_config, unicorn_missing
from pounder.servers._unicorn import unicorn_command
from support.rack import kill_starter_and_check, rack_servers, worker_sizes
from support.srvutil import fields, get, stop_and_check, wait_not_running

MakeUnicorn = Callable[..., UnicornServer]


@pytest.fixture
def unicorn(tmp_path: Path) -> Iterator[MakeUnicorn]:
    yield from rack_servers(UnicornServer, unicorn_missing(), tmp_path)


def test_config_and_command_are_pure() -> None:
    settings = UnicornSettings(workers=3, preload_app=True, extra_args=("-N",))
    text = render_unicorn_config(settings, port=8123, host="127.0.0.1", pidfile="/w/run/unicorn.pid",
                                 stderr_path="/w/logs/error.log", stdout_path="/w/logs/access.log")
    assert text.splitlines() == [
        'listen "127.0.0.1:8123", backlog: 1024', "worker_processes 3", "preload_app true", "timeout 60",
        'pid "/w/run/unicorn.pid"', 'stderr_path "/w/logs/error.log"', 'stdout_path "/w/logs/access.log"']
    assert render_unicorn_config(UnicornSettings(workers=1), port=None).splitlines() == [
        "worker_processes 1", "preload_app false", "timeout 60"]
    assert unicorn_command(settings, config=Path("/w/unicorn.conf.rb"), rackup=Path("/app/config.ru")) == [
        "unicorn", "-E", "production", "-c", "/w/unicorn.conf.rb", "-N", "/app/config.ru"]


@pytest.mark.parametrize("bad", [{"workers": 0}, {"backlog": 0}, {"timeout_s": 2}])
def test_bad_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="^unicorn: "):
        UnicornSettings(**bad).validate()


def test_starts_exactly_its_workers_as_children_and_stops(unicorn: MakeUnicorn) -> None:
    srv = unicorn(workers=3)
    assert get(srv.url + "/") == "hello\n"
    assert srv.read_pidfile() == srv.pid
    workers = srv.children()
    assert len(workers) == 3
    assert sorted(p.pid for p in psutil.Process(srv.pid).children(recursive=True)) == workers  # no grandchildren
    assert int(get(srv.url + "/pid")) in workers
    cpu = fields(get(srv.url + "/cpu?ms=30"))
    assert cpu["cpu_ms"] == "30" and int(cpu["pid"]) in workers
    assert fields(get(srv.url + "/leak"))["leaked"] == "1"
    stop_and_check(srv)
    log = srv.error_log.read_text()
    assert "master complete" in log  # QUIT: the graceful shutdown, every worker reaped
    assert log.count("reaped #<Process::Status: pid") == 3


def test_preload_shares_the_data_built_at_load(unicorn: MakeUnicorn) -> None:
    """preload_app true vs false with 40 MB built at load: shared copy-on-write vs private per worker."""
    sizes = {}
    for preload in (False, True):
        srv = unicorn(workers=2, preload_app=preload, env={"APP_DATA_MB": "40"})
        sizes[preload] = worker_sizes(srv, 40, preload)
        srv.stop()
    print("unicorn worker (shared MB, USS MB):", sizes)
    for shared, uss in sizes[True].values():
        assert shared >= 35 and uss < 10, sizes
    for shared, uss in sizes[False].values():
        assert uss >= 35 and shared < 35, sizes
    off = sum(uss for _, uss in sizes[False].values()) / 2
    on = sum(uss for _, uss in sizes[True].values()) / 2
    assert off - on >= 30, sizes


@pytest.mark.parametrize("preload", [True, False])
def test_a_broken_rackup_fails_with_unicorns_own_words(unicorn: MakeUnicorn, tmp_path: Path, preload: bool) -> None:
    rackup = tmp_path / "broken.ru"
    rackup.write_text('raise "pounder-test: rackup failed on purpose"\n')
    srv = unicorn(rackup, start=False, preload_app=preload)
    with pytest.raises(ServerStartError) as failed:
        srv.start(timeout_s=30)
    reason, _, tail = str(failed.value).partition("\n")
    assert reason.startswith("unicorn") and "Traceback" not in str(failed.value)
    assert ("exited with status 1" if preload else "workers keep exiting") in reason
    assert "pounder-test: rackup failed on purpose" in tail
    assert not psutil.pid_exists(srv.pid)


def test_parent_killed_then_stop(unicorn: MakeUnicorn) -> None:
    srv = unicorn(workers=2)
    workers = srv.children()
    os.kill(srv.pid, signal.SIGKILL)
    srv.stop()
    assert wait_not_running([srv.pid, *workers], 5) == []


def test_gone_when_the_starting_process_dies(tmp_path: Path) -> None:
    if unicorn_missing():
        pytest.skip(str(unicorn_missing()))
    kill_starter_and_check(UnicornServer, tmp_path / "w")
