"""Puma in cluster mode serving tests/apps/rack_app.ru (pounder.servers.PumaServer): its configuration,
threads, status counters and control app; what it keeps in common with the other servers is
tests/servers/test_contract.py."""

from __future__ import annotations

import http.client
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from pounder import PounderError, UsageError
from pounder.pool import QueueWatch
from pounder.servers import (
    PUMA_STATUS,
    PumaServer,
    PumaSettings,
    PumaStats,
    puma_missing,
    puma_stats,
    render_puma_config,
)
from pounder.servers._puma import puma_command
from support.leftovers import processes_mentioning
from support.rack import RACK_APP
from support.srvutil import fields, get

MakePuma = Callable[..., PumaServer]


def test_config_and_command_are_pure() -> None:
    settings = PumaSettings(workers=3, preload_app=True, extra_args=("--tag", "x"))
    text = render_puma_config(settings, port=8123, host="127.0.0.1", pidfile="/w/run/puma.pid",
                              control_socket="run/ctl.sock")
    assert text.splitlines() == [
        'bind "tcp://127.0.0.1:8123?backlog=1024"', "workers 3", "threads 1, 1", "preload_app! true",
        'environment "production"', 'pidfile "/w/run/puma.pid"',
        'activate_control_app "unix://run/ctl.sock", { no_token: true }']
    assert "bind" not in render_puma_config(PumaSettings(workers=1), port=None)
    assert "worker_check_interval" not in text  # the user's: Puma's default
    assert "worker_check_interval 1" in render_puma_config(settings, port=1, check_interval_s=1).splitlines()
    assert "threads 0, 4" in render_puma_config(PumaSettings(threads=(0, 4)), port=None).splitlines()
    assert "fork_worker" not in text
    assert render_puma_config(PumaSettings(fork_worker=0), port=None).splitlines()[2:4] == [
        "preload_app! false", "fork_worker 0"]
    assert "silence_single_worker_warning" in render_puma_config(PumaSettings(workers=1), port=None)
    assert 'pidfile "/a\\#{x}\\"b"' in render_puma_config(settings, port=1, pidfile='/a#{x}"b')  # no interpolation
    assert puma_command(settings, config=Path("/w/puma.rb"), rackup=Path("/app/config.ru")) == [
        "puma", "-C", "/w/puma.rb", "--tag", "x", "/app/config.ru"]


@pytest.mark.parametrize("bad", [{"workers": 0}, {"threads": (2, 1)}, {"threads": (0, 0)}, {"backlog": 0},
                                 {"fork_worker": -1}, {"fork_worker": True}])
def test_bad_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="^puma: "):
        PumaSettings(**bad).validate()


SLEEP_MS = 1500
"""Longer than a check-in interval (CHECK_INTERVAL_S): a worker reports itself during the sleeps."""


@pytest.mark.parametrize("threads", [1, 4])
def test_threads_serve_that_many_requests_at_once_in_one_worker(puma_server: MakePuma, threads: int) -> None:
    """One worker and 4 clients asking for /sleep at once: with threads 4 the worker holds all 4
    at once (Puma's own count at a check-in during the sleeps, and the status change pounder stores
    for the load); with threads 1 it serves them one after the other (the k-th answer comes at
    least k sleeps after they were sent)."""
    srv = puma_server(workers=1, threads=(threads, threads))
    assert srv.settings.threads == (threads, threads)
    assert "worker_check_interval 1" in srv.config_file.read_text().splitlines()
    wait_checked_in(srv)
    answers: list[tuple[float, str]] = []
    sent = time.monotonic()

    def ask() -> None:
        body = get(f"{srv.url}/sleep?ms={SLEEP_MS}", timeout_s=60)
        answers.append((time.monotonic() - sent, body))

    with QueueWatch(srv.port, srv.host, status=srv.status_counters, reader=PUMA_STATUS) as watch:
        clients = [threading.Thread(target=ask) for _ in range(4)]
        for client in clients:
            client.start()
        for client in clients:
            client.join()
    assert len(answers) == 4 and len({fields(body)["pid"] for _, body in answers}) == 1
    status = watch.server_status
    assert status is not None and status["booted_workers"] == 1 and status["threads"] == threads
    # every worker checked in during the load (it lasts 1.5 s at least, they check in every second)
    assert status["busy_threads"] == threads and status["backlog"] == 0, status
    if threads == 1:
        done = sorted(at for at, _ in answers)
        assert all(at >= (k + 1) * SLEEP_MS / 1000 for k, at in enumerate(done)), done


def wait_checked_in(srv: PumaServer) -> None:
    """Until every worker has reported itself at a check-in."""
    deadline = time.monotonic() + 20
    while not all(w.booted and w.max_threads for w in srv.stats().worker_status):
        assert time.monotonic() < deadline, srv.stats()
        time.sleep(0.1)


def test_status_counters_say_when_the_workers_checked_in(puma_server: MakePuma) -> None:
    srv = puma_server(workers=2, threads=(1, 2))
    wait_checked_in(srv)
    first = srv.status_counters()  # a first check-in may come while the readiness probe is served
    assert first is not None
    deadline = time.monotonic() + 20
    while (before := srv.status_counters()) is None or not all(
            before[key] > first[key] for key in first if key.startswith("checkin:")):
        assert time.monotonic() < deadline, before
        time.sleep(0.2)
    assert (before["booted_workers"], before["max_threads"], before["backlog"]) == (2, 4, 0)
    assert before["pool_capacity"] == 4  # idle: every thread free (or not yet spawned)
    checkins = {key: at for key, at in before.items() if key.startswith("checkin:")}
    assert sorted(checkins) == sorted(f"checkin:{pid}" for pid in srv.children())
    assert all(time.time() - 5 <= at <= time.time() + 1 for at in checkins.values())
    for _ in range(4):
        get(srv.url + "/")
    deadline = time.monotonic() + 20  # counted at the next check-ins (the readiness probe's too)
    while (now := srv.status_counters()) is None or now["requests_count"] < 4:
        assert time.monotonic() < deadline, now
        time.sleep(0.2)
    assert all(now[key] >= at for key, at in checkins.items())
    srv.stop()
    assert srv.status_counters() is None


def test_control_app_stats_name_every_worker(tmp_path: Path) -> None:
    if puma_missing():
        pytest.skip(str(puma_missing()))
    # a directory whose socket path is longer than a Unix socket address may be: read all the same
    workdir = tmp_path / ("d" * 60) / "puma"
    with PumaServer(workdir, RACK_APP, workers=2) as srv:
        assert len(os.fsencode(srv.control_socket)) > 108
        deadline = time.monotonic() + 20  # a worker reports itself at its first check-in
        while not all(w.booted and w.max_threads == 1 and w.backlog == 0 for w in srv.stats().worker_status):
            assert time.monotonic() < deadline, srv.stats()
            time.sleep(0.1)
        stats = srv.stats()
        assert (stats.workers, stats.booted_workers, stats.old_workers, stats.phase) == (2, 2, 0, 0)
        assert sorted(w.pid for w in stats.worker_status) == srv.children()
        assert sorted(w.index for w in stats.worker_status) == [0, 1]
        for _ in range(6):
            get(srv.url + "/")
        deadline = time.monotonic() + 20  # each worker reports at its check-in (every second here)
        while sum(w.requests_count for w in puma_stats(srv.control_socket).worker_status) < 6:
            assert time.monotonic() < deadline, puma_stats(srv.control_socket)
            time.sleep(0.5)
    assert processes_mentioning(str(workdir)) == []
    with pytest.raises(PounderError, match="cannot read the control app's /stats"):
        puma_stats(srv.control_socket)


REFORK_AFTER = 30
"""fork_worker's requests of worker 0 before its refork: a few seconds of single requests."""


def test_fork_worker_forks_the_workers_from_worker_0_and_reforks_them(puma_server: MakePuma) -> None:
    """fork_worker N: the master forks worker 0 only, worker 0 forks the others (their parent pid,
    as /proc and Puma's /stats say); once worker 0 has served N requests (seen at a check-in) the
    others are replaced by fresh forks of it (the cluster's phase goes up), and the server answers
    throughout but for a connection a stopping worker had accepted (Puma's own restart tests retry
    those: puma/puma#3557). children() lists every worker, as the snapshots pounder takes count them."""
    srv = puma_server(workers=3, fork_worker=REFORK_AFTER)
    assert "fork_worker 30" in srv.config_file.read_text().splitlines()
    workers = srv.children()
    direct = [pid for pid in workers if psutil.Process(pid).ppid() == srv.pid]
    assert len(workers) == 3 and len(direct) == 1
    zero = direct[0]
    assert sorted(psutil.Process(pid).ppid() for pid in workers if pid != zero) == [zero, zero]
    deadline = time.monotonic() + 20  # each worker reports itself at its first check-in
    stats = srv.stats()
    while sorted(w.pid for w in stats.worker_status) != workers or stats.phase != 0:
        assert time.monotonic() < deadline, stats
        time.sleep(0.2)
        stats = srv.stats()
    assert [w.pid for w in stats.worker_status if w.index == 0] == [zero]
    first = set(workers) - {zero}
    deadline, dropped = time.monotonic() + 20, 0
    while (stats := srv.stats()).phase < 1 or len(stats.worker_status) != 3 or not all(
            w.booted and w.phase == stats.phase for w in stats.worker_status):
        assert time.monotonic() < deadline, stats
        try:
            get(srv.url + "/")  # worker 0 takes its share
        except (ConnectionError, http.client.HTTPException):
            dropped += 1  # a worker stopped for the refork may close a connection it had accepted
    assert dropped <= 2, f"{dropped} requests dropped during one refork"
    reforked = srv.children()
    assert zero in reforked and len(reforked) == 3 and not first & set(reforked)
    assert all(psutil.Process(pid).ppid() == zero for pid in reforked if pid != zero)
    assert sorted(w.pid for w in stats.worker_status) == reforked
    assert int(get(srv.url + "/pid")) in reforked  # answers after the refork
    srv.stop()
    assert srv.children() == []


def test_stats_of_a_worker_being_forked_by_worker_0() -> None:
    """With fork_worker the master learns a reforked worker's pid when it reports: until then
    /stats has ``"pid": null`` for it (Puma 5.6), read as 0."""
    stats = PumaStats.from_dict({"workers": 2, "phase": 1, "booted_workers": 1, "old_workers": 0, "worker_status": [
        {"index": 0, "pid": 10, "phase": 1, "booted": True, "last_checkin": "2026-11-29T05:00:00Z",
         "last_status": {"backlog": 0, "running": 1, "pool_capacity": 1, "max_threads": 1, "requests_count": 31}},
        {"index": 1, "pid": None, "phase": 1, "booted": False, "last_checkin": "2026-11-29T05:00:01Z",
         "last_status": {}}]})
    assert [(w.index, w.pid, w.booted) for w in stats.worker_status] == [(0, 10, True), (1, 0, False)]
