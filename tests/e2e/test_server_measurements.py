"""What pounder reports about real pre-forking servers: memory shared with the parent
(`pounder mem`), and server CPU and private growth per request (`bench --server-*`), each
checked against the configured sizes or an independent measurement."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import psutil
import pytest

import pounder
from pounder.report import render_report as render_html
from support.cliutil import run_pounder
from support.schemas import validate
from support.srvutil import warm_every_child

MB = 1024 * 1024
LEAK_BYTES = 102400  # what the /leak handlers keep per request


def mem_json(pidfile: str) -> dict[str, Any]:
    """`pounder mem --pidfile F --json -`, run as a user would."""
    proc = run_pounder("mem", "--pidfile", pidfile, "--json", "-", timeout=60)
    assert proc.returncode == 0, proc.stderr
    document: dict[str, Any] = json.loads(proc.stdout)
    validate(document, "mem")
    return document


def children(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in document["processes"] if p["role"] == "child"]


def own_cpu_s(pids: list[int]) -> float:
    """User + system CPU of these processes, read by psutil (the second method)."""
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


# -- memory shared with the parent ----------------------------------------------------------


@pytest.mark.parametrize("preload", [True, False])
def test_apache_mod_perl_preload_is_shared_by_every_child(apache_server: Any, preload: bool) -> None:
    # startup_preload.pl allocates and writes ~40 MB in the parent; without it every child builds
    # the same data on its first /data request.
    srv = apache_server(preload=preload, start_servers=3, min_spare=1, max_spare=3, max_request_workers=3)
    warm_every_child(srv, "/data")
    document = mem_json(str(srv.pidfile))
    kids = children(document)
    assert len(kids) == 3
    for child in kids:
        if preload:
            assert child["shared"] >= 35 * MB, child
            assert child["private"] < 10 * MB, child
        else:
            assert child["private"] >= 35 * MB, child
    totals = document["totals"]
    # The footprint counts the shared data once, not once per child.
    if preload:
        assert totals["footprint"] < 2 * document["processes"][0]["rss"]


@pytest.mark.parametrize("preload", [True, False])
def test_gunicorn_preload_is_shared(gunicorn_server: Any, preload: bool) -> None:
    srv = gunicorn_server(workers=3, preload=preload, env={"APP_DATA_MB": "40"})
    warm_every_child(srv, "/data")
    snap = pounder.snapshot(pounder.find_server(pidfile=srv.pidfile))
    assert len(snap.children) == 3
    for child in snap.children:
        if preload:
            assert child.shared >= 30 * MB, child
        else:
            assert child.private >= 30 * MB, child


# -- growth per request ------------------------------------------------------------------------


def bench_with_server(srv: Any, path: str, requests: int, **options: Any) -> pounder.BenchResult:
    return pounder.bench(
        srv.url + path,
        connections=2,
        threads=1,
        requests=requests,
        server_pidfile=str(srv.pidfile),
        sample_interval="200ms",
        **options,
    )


def test_gunicorn_leak_per_request_is_measured(gunicorn_server: Any) -> None:
    srv = gunicorn_server(workers=2)
    result = bench_with_server(srv, "/leak", 400)
    assert result.requests.complete == 400
    growth = result.derived.server_private_growth_bytes_per_request
    assert growth is not None
    assert growth == pytest.approx(LEAK_BYTES, rel=0.25)


def test_apache_mod_perl_leak_per_request_is_measured(apache_server: Any) -> None:
    # Two children that live through the run (no recycling), each keeping 100 KB per request.
    srv = apache_server(start_servers=2, min_spare=1, max_spare=2, max_request_workers=2)
    result = bench_with_server(srv, "/leak", 400)
    assert result.requests.complete == 400
    growth = result.derived.server_private_growth_bytes_per_request
    assert growth is not None
    assert growth == pytest.approx(LEAK_BYTES, rel=0.25)


def test_no_leak_reports_near_zero_growth(gunicorn_server: Any) -> None:
    srv = gunicorn_server(workers=2)
    warm_every_child(srv, "/data")
    result = bench_with_server(srv, "/", 400)
    growth = result.derived.server_private_growth_bytes_per_request
    assert growth is not None
    assert abs(growth) < 0.05 * LEAK_BYTES


# -- CPU per request ---------------------------------------------------------------------------


@pytest.mark.alone  # CPU against CPU (tests/e2e/conftest.py)
def test_gunicorn_cpu_per_request_against_a_second_method(gunicorn_server: Any) -> None:
    srv = gunicorn_server(workers=2)
    warm_every_child(srv, "/data")
    pids = [srv.pid, *srv.children()]
    before = own_cpu_s(pids)
    heavy = bench_with_server(srv, "/cpu?ms=20", 60)
    after = own_cpu_s(pids)
    assert sorted(srv.children()) == sorted(pids[1:])  # no worker was replaced meanwhile
    light = bench_with_server(srv, "/", 60)

    assert heavy.server is not None and light.server is not None
    heavy_us = heavy.derived.server_cpu_us_per_request
    light_us = light.derived.server_cpu_us_per_request
    assert heavy_us is not None and light_us is not None
    assert heavy_us > light_us
    # The handler burns 20 ms of its own CPU per request, so that is a floor.
    assert heavy_us >= 0.95 * 20_000
    # psutil's reading of the same processes before and after, over the same requests.
    second_us = (after - before) * 1e6 / 60
    assert heavy_us == pytest.approx(second_us, rel=0.30)


@pytest.mark.alone  # CPU per request (tests/e2e/conftest.py)
def test_apache_cpu_counts_children_that_exit_during_the_run(apache_server: Any) -> None:
    # Each child exits after 10 connections; without keep-alive every request is a connection,
    # so children are replaced throughout the run and their CPU must still be counted (through
    # the parent's cutime/cstime when Apache reaps them).
    srv = apache_server(
        start_servers=2, min_spare=1, max_spare=2, max_request_workers=2, max_connections_per_child=10
    )
    result = bench_with_server(srv, "/cpu?ms=20", 60, keepalive=False)
    assert result.requests.complete == 60
    server = result.server
    assert server is not None
    assert server.children_exited >= 3 and server.children_spawned >= 3
    per_request = result.derived.server_cpu_us_per_request
    assert per_request is not None
    # At least the 20 ms each request burns, and not much more (Apache's own work is small).
    assert 0.95 * 20_000 <= per_request <= 1.30 * 20_000 + 5_000


def test_server_section_is_in_the_json_and_the_report(gunicorn_server: Any, tmp_path: Any) -> None:
    srv = gunicorn_server(workers=2)
    out = tmp_path / "r.json"
    proc = run_pounder("bench", srv.url + "/", "-n", "50", "-c", "2", "--server-pidfile", srv.pidfile, "--json", out,
                       timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Server (pid " in proc.stdout and "us per request" in proc.stdout
    document = json.loads(out.read_text())
    validate(document, "bench-result")
    assert document["server"]["server_pid"] == srv.pid
    assert document["derived"]["server_cpu_us_per_request"] > 0
    again = pounder.load_result(out)
    assert again.server == pounder.BenchResult.from_json(out.read_text()).server


def test_bad_server_options_send_nothing(testserver: Any, tmp_path: Any) -> None:
    srv = testserver()
    garbage = tmp_path / "garbage.pid"
    garbage.write_text("not a pid\n")
    for options in ({"server_pid": 999_999_999}, {"server_pidfile": str(garbage)}, {"server_status": srv.url}):
        with pytest.raises(pounder.UsageError):
            pounder.bench(srv.url + "/", requests=5, **options)
    assert srv.count(settle_s=0.3) == 0


@pytest.mark.alone  # status samples in a 1.5 s run (tests/e2e/conftest.py)
def test_apache_server_status_is_read_during_the_bench(apache_server: Any) -> None:
    # Spare children, so the status request does not queue behind the 3 keep-alive connections.
    srv = apache_server(start_servers=5, min_spare=3, max_spare=6, max_request_workers=6)
    result = pounder.bench(
        srv.url + "/cpu?ms=5",
        connections=3,
        threads=1,
        duration="1.5s",
        server_pidfile=str(srv.pidfile),
        server_status=srv.url + "/server-status",
        sample_interval="250ms",
    )
    server = result.server
    assert server is not None and server.messages == ()
    assert len(server.status) >= 4
    busy = [point.busy_workers for point in server.status if point.busy_workers is not None]
    # 3 connections keep 3 children busy (the status request itself takes a fourth).
    assert max(busy) >= 3
    accesses = [point.total_accesses for point in server.status if point.total_accesses is not None]
    assert accesses[-1] - accesses[0] >= 0.8 * result.requests.complete


# -- processes killed during the run (issue 14, item 7) -------------------------------------


def cpu_with_reaped_s(pids: list[int]) -> float:
    """User + system CPU of these processes plus that of the children they reaped (psutil)."""
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system + times.children_user + times.children_system
    return total


def kill_after(count: int, pids: list[int], killed: list[int]) -> Any:
    """An ``on_progress`` callback that SIGKILLs ``pids`` once ``count`` requests completed."""

    def on_progress(progress: pounder.Progress) -> None:
        if not killed and progress.complete >= count:
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    return on_progress


@pytest.mark.alone  # CPU per request (tests/e2e/conftest.py)
def test_gunicorn_workers_killed_mid_run_count_as_exited_and_cpu_is_per_completed_request(
    gunicorn_server: Any,
) -> None:
    srv = gunicorn_server(workers=2)
    workers = srv.children()
    before = cpu_with_reaped_s([srv.pid, *workers])
    killed: list[int] = []
    result = bench_with_server(srv, "/cpu?ms=2", 400, keepalive=False, timeout=10,
                               on_progress=kill_after(100, workers, killed))  # fmt: skip
    after = cpu_with_reaped_s([srv.pid, *srv.children()])  # the arbiter reaped the killed ones
    server = result.server
    assert server is not None and sorted(killed) == sorted(workers)
    assert server.children_exited >= len(killed)
    assert {child.pid for child in server.children if child.exited} >= set(killed)
    assert server.children_spawned >= 1 and not server.root_exited
    completed = result.requests.complete + result.warmup.complete
    assert completed >= 100
    per_request = result.derived.server_cpu_us_per_request
    assert per_request == pytest.approx(server.server_cpu_s * 1e6 / completed)
    # the sampled CPU against psutil's reading of the same processes before and after
    assert server.server_cpu_s == pytest.approx(after - before, rel=0.15, abs=0.05)


@pytest.mark.alone  # a kill between CPU samples (tests/e2e/conftest.py)
def test_gunicorn_killed_whole_mid_run_counts_exited_and_gives_no_per_request_cpu(
    gunicorn_server: Any,
) -> None:
    srv = gunicorn_server(workers=2)
    workers = srv.children()
    killed: list[int] = []
    result = bench_with_server(srv, "/cpu?ms=2", 300, keepalive=False, timeout=5,
                               on_progress=kill_after(100, [srv.pid, *workers], killed))  # fmt: skip
    server = result.server
    assert server is not None and len(killed) == 3
    assert server.root_exited
    assert (server.children_seen, server.children_exited) == (2, 2)
    assert result.requests.complete >= 100 and result.requests.failed > 0
    # its CPU after the last sample went with it: no per-request figure, and the report says why
    assert result.derived.server_cpu_us_per_request is None
    assert result.derived.server_private_growth_bytes_per_request is None
    text = pounder.render_report(result)
    assert "none per request (the server exited during the run)" in text
    assert "2 seen, 0 spawned, 2 exited" in text
    assert f"the server process {srv.pid} has exited during the run" in text
    again = pounder.BenchResult.from_json(result.to_json())
    assert again.server == server and again.derived == result.derived
    validate(json.loads(result.to_json()), "bench-result")
    page = render_html([result])
    assert "server CPU per completed request</td><td>- (the server exited during the run)" in page


def test_a_server_that_does_not_serve_the_url_gets_no_per_request_figure(gunicorn_server: Any,
                                                                          testserver: Any) -> None:
    """--server-pid naming another server (here: the test server, while the load goes to
    gunicorn): its totals are shown as measured, but nothing is divided by requests it never saw;
    the report says why. The right server gets its figure."""
    server = gunicorn_server(workers=2)
    other = testserver(mode="ok")
    wrong = pounder.bench(server.url + "/", requests=200, connections=2, server_pid=other.proc.pid)
    assert wrong.requests.complete == 200
    assert wrong.server is not None and wrong.server.serves_url is False
    assert wrong.derived.server_cpu_us_per_request is None
    assert wrong.derived.server_private_growth_bytes_per_request is None
    text = pounder.render_report(wrong)
    assert f"process {other.proc.pid} does not listen where the requests went" in text
    validate(json.loads(wrong.to_json()), "bench-result")
    assert other.count() == 0  # it served none of them

    right = pounder.bench(server.url + "/", requests=200, connections=2, server_pid=server.pid)
    assert right.server is not None and right.server.serves_url is True
    assert right.derived.server_cpu_us_per_request is not None and right.derived.server_cpu_us_per_request > 0
