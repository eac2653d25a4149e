"""php-fpm behind its nginx front (pounder.servers.PhpFpmServer), serving tests/apps/php with the
pool file tests/apps/php/pool.conf: the generated files (pure functions), then the real pool."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from pounder import UsageError
from pounder.procs import find_server
from pounder.servers import (
    PhpFpmServer,
    ServerStartError,
    check_pool_conf,
    parse_pool_conf,
    phpfpm_missing,
    read_pool_conf,
)
from pounder.servers._nginx import render_front_conf
from pounder.servers._phpfpm import FpmSettings, fpm_status, render_fpm_conf
from support.leftovers import kill_leftovers, processes_mentioning
from support.srvutil import REPO, ManagedServerPool, get, smaps_kb, start_then_sigkill, tree, wait_not_running

PHP_APP = REPO / "tests" / "apps" / "php"
POOL_CONF = PHP_APP / "pool.conf"
START_TIMEOUT_S = 60.0
needs_phpfpm = pytest.mark.skipif(phpfpm_missing() is not None, reason=str(phpfpm_missing()))


# -- the generated files (nothing started) ---------------------------------------------------------

def test_render_fpm_conf_replaces_the_owned_settings_line_for_line(tmp_path: Path) -> None:
    user = POOL_CONF.read_text()
    text = render_fpm_conf(FpmSettings(max_children=3, max_requests=50), workdir=tmp_path, port=9123,
                           user_conf=user, user_conf_name=str(POOL_CONF))
    lines = text.splitlines()
    first = lines.index(next(line for line in lines if line.startswith("; From"))) + 1
    for number, line in enumerate(user.splitlines()):  # every user line kept at its place, or commented out
        copied = lines[first + number]
        assert copied == line or copied == f"; set by pounder: {line.split('=')[0].strip()}"
    pool_part = lines[first:]
    settings = [line for line in pool_part if line and not line.startswith(";") and "=" in line]
    assert "listen = 127.0.0.1:9123" in settings and "listen = /run/php/php8.2-fpm.sock" not in settings
    assert [s for s in settings if s.startswith("pm")] == [
        "pm.status_path = /fpm-status", "pm = static", "pm.max_children = 3", "pm.max_requests = 50"]
    assert "catch_workers_output = yes" in settings
    assert f'pid = "{tmp_path}/run/php-fpm.pid"' in lines[:first]
    assert "daemonize = no" in lines[:first]
    assert not any("access.log" in s for s in settings)


def test_render_fpm_conf_dynamic_status_user_and_env(tmp_path: Path) -> None:
    user = "[site]\nlisten = 9000\naccess.log = /var/log/x.log\npm = ondemand\n"
    settings = FpmSettings(max_children=6, start_servers=2, min_spare=1, max_spare=3, user="www-data",
                           env={"APP_MODE": "test"})
    text = render_fpm_conf(settings, workdir=tmp_path, port=9, host="127.0.0.1", user_conf=user)
    tail = text.split("; set by pounder:\n", 1)[1].splitlines()
    assert tail == ["listen = 127.0.0.1:9", "pm = dynamic", "pm.max_children = 6", "pm.start_servers = 2",
                    "pm.min_spare_servers = 1", "pm.max_spare_servers = 3", "pm.max_requests = 0",
                    "catch_workers_output = yes", "pm.status_path = /pounder-fpm-status", "user = www-data",
                    'env[APP_MODE] = "test"']
    assert "; set by pounder: access.log" in text and "; set by pounder: pm" in text


@pytest.mark.parametrize(("settings", "words"), [
    (FpmSettings(max_children=0), "at least 1"),
    (FpmSettings(max_children=2, start_servers=3, min_spare=1, max_spare=2), "between"),
    (FpmSettings(max_children=2, start_servers=1, min_spare=1, max_spare=3), "<= pm.max_children"),
    (FpmSettings(max_children=2, env={"A": 'x"y'}), "cannot be written"),
])
def test_settings_php_fpm_would_refuse(settings: FpmSettings, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        settings.validate()


@pytest.mark.parametrize(("text", "words"), [
    ("[www]\npm = static\n[other]\npm = static\n", "more than one pool"),
    ("[global]\npid = /run/x.pid\n[www]\n", r"\[global\] section"),
    ("[www]\ninclude = /etc/php/other.conf\n", "uses include"),
    ("; comment\npm = static\n[www]\n", "before its \\[pool\\] section"),
    ("; nothing but comments\n", "no \\[pool\\] section"),
])
def test_pool_files_refused(text: str, words: str) -> None:
    with pytest.raises(UsageError, match=words) as refused:
        parse_pool_conf(text, source="pool.conf")
    assert "\n" not in str(refused.value)


def test_pool_file_read_as_an_input_file(tmp_path: Path) -> None:
    assert parse_pool_conf(read_pool_conf(POOL_CONF)).name == "www"
    assert parse_pool_conf(read_pool_conf(POOL_CONF)).status_path == "/fpm-status"
    fifo = tmp_path / "fifo.conf"
    os.mkfifo(fifo)
    big = tmp_path / "big.conf"
    big.write_text("[www]\n" + ";" * (2 << 20) + "\n")
    for path, words in ((tmp_path / "missing.conf", "not found"), (tmp_path, "is a directory"),
                        (fifo, "not a regular file"), (big, "larger than")):
        with pytest.raises(UsageError, match=words) as refused:
            read_pool_conf(path)
        assert "\n" not in str(refused.value)


def test_render_front_conf(tmp_path: Path) -> None:
    text = render_front_conf(front_dir=tmp_path, port=8080, root=PHP_APP, fastcgi=("127.0.0.1", 9000),
                             status_path="/fpm-status", user="www-data", group="www-data")
    lines = [line.strip() for line in text.splitlines()]
    assert "worker_processes 1;" in lines and "user www-data www-data;" in lines
    assert "listen 127.0.0.1:8080;" in lines and f'root "{PHP_APP}";' in lines and "index index.php;" in lines
    assert "access_log off;" in lines and "keepalive_timeout 0;" in lines
    assert "location ~ \\.php$ { fastcgi_pass 127.0.0.1:9000; }" in lines
    assert "location = /fpm-status { fastcgi_pass 127.0.0.1:9000; }" in lines
    assert "fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;" in lines
    assert not any(line.startswith("user") for line in render_front_conf(
        front_dir=tmp_path, port=1, root=PHP_APP, fastcgi=("127.0.0.1", 2), status_path="/s").splitlines())
    with pytest.raises(UsageError, match="plain path"):
        render_front_conf(front_dir=tmp_path, port=1, root=PHP_APP, fastcgi=("127.0.0.1", 2), status_path="/a b")


def test_a_status_path_the_front_cannot_pass_is_refused_before_anything(tmp_path: Path) -> None:
    odd = tmp_path / "odd.conf"
    odd.write_text("[www]\npm.status_path = /status page\n")
    for attempt in (lambda: check_pool_conf(odd), lambda: PhpFpmServer(tmp_path / "w", odd, root=PHP_APP)):
        with pytest.raises(UsageError, match="must be a plain path"):
            attempt()
    assert not (tmp_path / "w").exists()


@needs_phpfpm
def test_check_pool_conf_names_the_users_line(tmp_path: Path) -> None:
    check_pool_conf(POOL_CONF)
    bad = tmp_path / "bad.conf"
    bad.write_text("; mine\n[www]\npm.max_children = 4\npm.bogus = 3\n")
    with pytest.raises(UsageError) as refused:
        check_pool_conf(bad)
    assert str(refused.value) == f"php-fpm refuses {bad}: ERROR: [{bad}:4] unknown entry 'pm.bogus'"
    bad.write_text('[www]\npm.max_children = 4\nphp_value[x] = "abc\n')
    with pytest.raises(UsageError) as refused:
        check_pool_conf(bad)
    assert str(refused.value).startswith(f"php-fpm refuses {bad}: PHP:  syntax error")
    assert str(refused.value).endswith(f" on line 3 of {bad}")


# -- the real pool ---------------------------------------------------------------------------------

def _make_phpfpm(workdir: Path, conf: Path = POOL_CONF, **options: Any) -> PhpFpmServer:
    return PhpFpmServer(workdir, conf, root=PHP_APP, **options)


@pytest.fixture
def phpfpm(tmp_path: Path) -> Iterator[ManagedServerPool]:
    """``phpfpm(**options)``: a PhpFpmServer of tests/apps/php/pool.conf in a fresh directory,
    started; every one stopped at teardown, with nothing of it left running."""
    pool = ManagedServerPool(_make_phpfpm, folder=tmp_path, name="fpm", timeout_s=START_TIMEOUT_S, check_left=True)
    try:
        yield pool
    finally:
        pool.stop_all()


def _all_pids(server: PhpFpmServer) -> tuple[list[int], list[int]]:
    return tree(server.pid), tree(server.front.pid)


@needs_phpfpm
def test_static_pool_behind_its_front(phpfpm: Callable[..., PhpFpmServer]) -> None:
    server = phpfpm(max_children=3)
    assert server.url == f"http://127.0.0.1:{server.front.port}" != f"http://127.0.0.1:{server.port}"
    assert get(server.url + "/") == "hello\n"
    assert get(server.url + "/index.php") == "hello\n"
    workers = server.children()
    assert len(workers) == 3
    assert sorted(p.pid for p in psutil.Process(server.pid).children()) == workers
    assert int(get(server.url + "/pid.php")) in workers
    assert get(server.url + "/cpu.php?ms=20").splitlines()[0] == "cpu_ms=20"
    assert server.read_pidfile() == server.pid
    # the front is a server of its own: never among the pool's processes
    pool, front = _all_pids(server)
    assert len(front) == 2 and not set(front) & set(pool)
    measured = find_server(pid=server.pid)
    assert {m.pid for m in measured.members} == set(pool) == {server.pid, *workers}
    assert os.getpgid(server.front.pid) == server.front.pid != os.getpgid(server.pid) == server.pid
    workdir = server.workdir
    server.stop()
    assert wait_not_running(pool + front, 10) == []
    assert [p for p in pool + front if psutil.pid_exists(p)] == []
    assert processes_mentioning(str(workdir)) == []
    server.stop()  # idempotent


@needs_phpfpm
def test_dynamic_pool_starts_start_servers(phpfpm: Callable[..., PhpFpmServer]) -> None:
    server = phpfpm(max_children=5, start_servers=2, min_spare=1, max_spare=3)
    assert len(server.children()) == 2
    status = server.status()
    assert status["process manager"] == "dynamic" and status["total processes"] == 2


@needs_phpfpm
def test_max_requests_replaces_the_child(phpfpm: Callable[..., PhpFpmServer]) -> None:
    server = phpfpm(max_children=1, max_requests=3)
    # the readiness probe (GET /) was the first child's first request
    pids = [int(get(server.url + "/pid.php")) for _ in range(7)]
    runs = [pids[0]]
    for pid in pids[1:]:
        if pid != runs[-1]:
            runs.append(pid)
    assert len(runs) == len(set(runs)) == 3, pids
    assert [pids.count(pid) for pid in runs] == [2, 3, 2], pids


@needs_phpfpm
def test_status_counts_requests(phpfpm: Callable[..., PhpFpmServer]) -> None:
    server = phpfpm(max_children=2)
    before = fpm_status(server.status_url)
    for _ in range(7):
        get(server.url + "/index.php")
    after = fpm_status(server.status_url)
    # each read of the page is a request too: the second one counts itself
    assert after["accepted conn"] - before["accepted conn"] == 7 + 1
    assert after["pool"] == "www" and after["process manager"] == "static"
    assert after["total processes"] == 2 and after["max children reached"] == 0


@needs_phpfpm
def test_max_children_reached_with_a_pool_smaller_than_the_load(phpfpm: Callable[..., PhpFpmServer]) -> None:
    # "max children reached" is counted by the dynamic process manager (static never spawns more)
    server = phpfpm(max_children=1, start_servers=1, min_spare=1, max_spare=1)
    assert server.status()["max children reached"] == 0
    answers: list[str] = []
    threads = [threading.Thread(target=lambda: answers.append(get(server.url + "/sleep.php?ms=700", 30)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(answers) == 4 and len({a.splitlines()[1] for a in answers}) == 1  # one child served them all
    status = server.status()
    assert status["max children reached"] > 0, status
    assert status["max listen queue"] >= 1, status


@needs_phpfpm
def test_a_fixed_pool_as_pounder_measures_it_keeps_every_child(phpfpm: Callable[..., PhpFpmServer]) -> None:
    """pounder runs a fixed pool as pm = dynamic with start = max spare = max_children and min spare
    1 (pool.PhpFpmAdapter), so that php-fpm counts "max children reached": equivalent to static,
    every child started and kept, idle and under a load larger than the pool."""
    server = phpfpm(max_children=3, start_servers=3, min_spare=1, max_spare=3)
    children = server.children()
    assert len(children) == 3 and server.status()["process manager"] == "dynamic"
    before = server.status_counters()
    assert before is not None and set(before) == {"accepted conn", "max children reached", "max listen queue",
                                                  "slow requests"}
    assert before["max children reached"] == 0
    answers: list[str] = []
    threads = [threading.Thread(target=lambda: [answers.append(get(server.url + "/sleep.php?ms=50", 30))
                                                for _ in range(40)]) for _ in range(8)]
    for thread in threads:
        thread.start()
    seen = []
    while any(thread.is_alive() for thread in threads):  # php-fpm's checks run once a second
        seen.append(len(server.children()))
        threading.Event().wait(0.2)
    for thread in threads:
        thread.join(60)
    assert len(answers) == 320 and {int(a.splitlines()[1].split("=")[1]) for a in answers} == set(children)
    assert set(seen) == {3}, seen  # none started beyond, none stopped
    after = server.status_counters()
    assert after is not None and after["max children reached"] == 1  # no child idle at a check: counted once
    assert after["accepted conn"] - before["accepted conn"] == 320 + 1
    threading.Event().wait(2.5)  # idle through two checks: no idle child stopped (max spare = max_children)
    assert server.children() == children and server.status()["idle processes"] >= 2
    server.stop()
    assert server.status_counters() is None  # no page: None, never an exception


@needs_phpfpm
def test_leak_php_keeps_100_kb_per_request(phpfpm: Callable[..., PhpFpmServer]) -> None:
    server = phpfpm(max_children=1)
    child = server.children()[0]
    get(server.url + "/leak.php")
    before = smaps_kb(child)["Private_Dirty"]
    for _ in range(50):
        assert get(server.url + "/leak.php").splitlines()[1] == f"pid={child}"
    grown = smaps_kb(child)["Private_Dirty"] - before
    assert 50 * 100 * 0.9 <= grown <= 50 * 100 * 1.15, f"{grown} kB for 50 requests"


@needs_phpfpm
def test_a_bad_pool_file_fails_with_php_fpms_words(phpfpm: Callable[..., PhpFpmServer], tmp_path: Path) -> None:
    bad = tmp_path / "bad.conf"
    bad.write_text("[www]\npm.max_children = 4\npm.bogus = 3\n")
    server = phpfpm(bad, start=False)
    with pytest.raises(ServerStartError) as failed:
        server.start(timeout_s=START_TIMEOUT_S)
    first = str(failed.value).splitlines()[0]
    assert first.startswith("php-fpm exited with status 78 while starting on http://127.0.0.1:")
    assert f"[{bad}:3] unknown entry 'pm.bogus'" in failed.value.log_tail
    assert not server.running and not server.front.running
    assert wait_not_running([server.pid, server.front.pid], 10) == []


@needs_phpfpm
@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the workers as another user")
def test_root_unreachable_for_the_workers(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "index.php").write_text("<?php echo 1;\n")
    os.chmod(tmp_path, 0o700)
    server = PhpFpmServer(tmp_path / "w", POOL_CONF, root=private)
    with pytest.raises(ServerStartError, match="www-data, who cannot enter"):
        server.start(timeout_s=START_TIMEOUT_S)
    assert not server.running


_STARTER = """
import json, sys, time
from pounder.servers import PhpFpmServer
server = PhpFpmServer(sys.argv[1], sys.argv[2], root=sys.argv[3], max_children=2).start(timeout_s=60)
import psutil
pids = [server.pid, *server.children(), server.front.pid, *[p.pid for p in psutil.Process(server.front.pid).children()]]
print(json.dumps(pids), flush=True)
time.sleep(60)
"""


@needs_phpfpm
def test_pool_and_front_gone_when_the_starting_process_dies(tmp_path: Path) -> None:
    pids = start_then_sigkill([sys.executable, "-c", _STARTER, str(tmp_path / "w"), str(POOL_CONF), str(PHP_APP)])
    assert len(pids) == 5
    left = wait_not_running(pids, 15)
    kill_leftovers(str(tmp_path))
    assert left == []
