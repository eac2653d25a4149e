"""The runner against a real gunicorn (tests/apps/wsgi_app.py): the workload it sends, the CPUs
the server and the load generator run on, warming until the children's memory stands still, and
the time a fresh child needs; and the pure parts (Workload, split_cpus, check_cpus)."""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from pounder import UsageError
from pounder.load import Progress
from pounder.pool import (
    ApacheAdapter,
    GunicornAdapter,
    PoolParams,
    Runner,
    StarmanAdapter,
    Workload,
    check_cpus,
    split_cpus,
)
from pounder.servers import apache_missing, gunicorn_missing, starman_missing
from support.leftovers import processes_mentioning

APPS = Path(__file__).resolve().parents[1] / "apps"
MIB = 1024 * 1024
CPUS = sorted(os.sched_getaffinity(0))
needs_gunicorn = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
needs_two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs to pin apart")


def _runner(tmp_path: Path, workload: Workload | str = "/", **cpus: tuple[int, ...] | None) -> Runner:
    return Runner(GunicornAdapter("wsgi_app:app", pythonpath=str(APPS)), tmp_path / "servers", workload, 0, 10.0,
                  **cpus)


def _cpus_allowed(status_path: Path) -> str | None:
    try:
        for line in status_path.read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None  # the task ended meanwhile
    return None


def _children_uss(runner: Runner, server: object) -> int:
    return sum(child.private for child in runner.snapshot(server).children)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# pure


def test_workload_describes_itself_in_one_line() -> None:
    assert Workload().describe() == "GET /, keep-alive off, no slow clients"
    mix = Workload(targets=((5, "GET", "/"), (7, "HEAD", "/a?b=1")), keepalive=True, throttle="56kbit",
                   source="/var/log/access.log")
    assert mix.describe() == "mix of 12 requests (2 distinct) from access.log, keep-alive on, slow clients 56kbit"
    assert Workload(targets=[[1, "GET", "/x"]]).targets == ((1, "GET", "/x"),)  # type: ignore[list-item]


@pytest.mark.parametrize(("fields", "message"), [
    ({"path": "x"}, "must start with '/'"),
    ({"targets": ((0, "GET", "/"),)}, "weight must be a whole number >= 1"),
    ({"targets": ((1, "POST", "/"),)}, "method must be GET or HEAD"),
    ({"targets": ((1, "GET"),)}, "must be \\(weight, method, path\\)"),
    ({"keepalive": "yes"}, "keepalive"),
    ({"throttle": "fast"}, "invalid workload: throttle"),
])
def test_a_bad_workload_is_a_usage_error(fields: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        Workload(**fields)  # type: ignore[arg-type]


def test_split_cpus_gives_the_server_most_and_the_load_generator_a_quarter() -> None:
    assert split_cpus([0, 1]) == (None, None, "only 2 CPUs: server and load generator share them; the load "
                                               "generator's CPU is reported next to the server's")
    assert split_cpus([0])[2].startswith("only 1 CPU:")
    assert split_cpus([3, 2, 1, 0]) == ((0, 1, 2), (3,), "4 CPUs: the server runs on 0-2, the load generator on 3")
    assert split_cpus(range(7))[:2] == ((0, 1, 2, 3, 4, 5), (6,))
    assert split_cpus(range(8))[:2] == ((0, 1, 2, 3, 4, 5), (6, 7))
    server, load, _ = split_cpus(range(64))
    assert server is not None and load is not None and len(load) == 16 and not set(server) & set(load)


def test_runner_refuses_bad_cpus_before_starting() -> None:
    check_cpus(None, None)
    check_cpus((CPUS[0],), None)
    with pytest.raises(UsageError, match="would share CPU"):
        check_cpus((CPUS[0],), (CPUS[0],))
    with pytest.raises(UsageError, match="list is empty"):
        check_cpus((), None)
    with pytest.raises(UsageError, match="not available here"):
        check_cpus(None, (max(CPUS) + 1,))
    with pytest.raises(UsageError, match="would share CPU"):
        Runner(GunicornAdapter("wsgi_app:app", pythonpath=str(APPS)), Path("/nonexistent"), "/", 0, 10.0,
               server_cpus=(CPUS[0],), load_cpus=(CPUS[0],))


# ---------------------------------------------------------------------------------------------
# real gunicorn


@needs_gunicorn
def test_a_mix_is_replayed_from_a_url_file_with_keepalive_and_throttle(tmp_path: Path) -> None:
    workload = Workload(targets=((3, "GET", "/"), (1, "GET", "/pid")), keepalive=True, throttle="1MB/s")
    runner = _runner(tmp_path, workload)
    with runner.started(PoolParams(2)) as server:
        spec = runner.spec(server, 2, requests=40)
        assert spec.order == "random" and spec.http.keepalive and spec.http.throttle_bps == 1_000_000
        assert (server.workdir / "workload.urls").read_text() == f"3 GET {server.url}/\n1 GET {server.url}/pid\n"
        assert [t.weight for t in spec.targets] == [3, 1]
        result = runner.bench(server, 2, requests=40, sample=False)
        assert result.requests.complete == 40 and result.requests.failed == 0
        assert runner.ready_s is not None and runner.ready_s > 0
    plain = _runner(tmp_path / "plain")
    assert plain.path == "/" and plain.workload == Workload()
    plain.path = "/pid"  # as the experiment runner switches variants
    assert plain.workload.path == "/pid"
    assert not processes_mentioning(str(tmp_path))


@needs_gunicorn
def test_the_server_and_every_worker_run_on_the_server_cpus(tmp_path: Path) -> None:
    before = os.sched_getaffinity(0)
    runner = _runner(tmp_path, server_cpus=(CPUS[0],))
    with runner.started(PoolParams(3)) as server:
        assert os.sched_getaffinity(0) == before  # our own thread is put back
        children = server.wait_for_children(3)
        assert len(children) == 3
        for pid in (server.pid, *children):
            assert _cpus_allowed(Path(f"/proc/{pid}/status")) == str(CPUS[0])
    assert not processes_mentioning(str(tmp_path))


@needs_gunicorn
@needs_two_cpus
def test_the_engine_threads_run_on_the_load_cpus(tmp_path: Path) -> None:
    seen: dict[str, str | None] = {}

    def look(progress: Progress) -> None:
        for task in Path("/proc/self/task").iterdir():
            try:
                name = (task / "comm").read_text().strip()
            except OSError:
                continue
            allowed = _cpus_allowed(task / "status") if name.startswith("pounder-") else None
            if allowed is not None:  # None: the thread ended between the two reads (the run's last moments)
                seen[name] = allowed

    before = os.sched_getaffinity(0)
    runner = Runner(GunicornAdapter("wsgi_app:app", pythonpath=str(APPS)), tmp_path / "servers", "/", 0, 10.0,
                    look, server_cpus=(CPUS[0],), load_cpus=(CPUS[1],))
    with runner.started(PoolParams(2)) as server:
        result = runner.bench(server, 2, duration=1.0)  # with the sampler's thread
        assert result.requests.complete > 0
    assert os.sched_getaffinity(0) == before
    # comm holds 15 characters: the engine's supervisor, collector and worker thread
    assert {"pounder-supervi", "pounder-collect", "pounder-0"} <= set(seen)
    assert set(seen.values()) == {str(CPUS[1])}, seen
    assert not processes_mentioning(str(tmp_path))


@needs_gunicorn
def test_warm_goes_on_until_the_childrens_memory_stands_still(tmp_path: Path) -> None:
    """/lazy grows each worker by 4 MiB over its first 20 requests: warm must see all of it."""
    runner = _runner(tmp_path, Workload(path="/lazy"))
    with runner.started(PoolParams(2)) as server:
        server.wait_for_children(2)
        cold = _children_uss(runner, server)
        warmed = runner.warm(server)
        assert warmed.settled, warmed
        assert warmed.warmed == warmed.children == 2
        assert warmed.rounds >= 3 and warmed.rps is not None and warmed.rps > 0
        assert warmed.uss is not None and warmed.uss >= cold + 2 * 3.5 * MIB
        assert warmed.describe().startswith("warm: 2/2 children served, USS settled at ")
        after_warm = _children_uss(runner, server)
        runner.bench(server, 2, requests=200, sample=False)
        assert _children_uss(runner, server) < after_warm * 1.01
    assert not processes_mentioning(str(tmp_path))


@needs_gunicorn
def test_one_warming_round_is_one_quick_round(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    with runner.started(PoolParams(2)) as server:
        server.wait_for_children(2)
        warmed = runner.warm(server, rounds=1)
        assert (warmed.rounds, warmed.requests, warmed.settled) == (1, 4, False)
    assert not processes_mentioning(str(tmp_path))


@needs_gunicorn
def test_child_start_time_on_gunicorn(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    with runner.started(PoolParams(2)) as server:
        before = server.wait_for_children(2)
        seconds = runner.child_start_s(server, timeout_s=10.0)
        assert seconds is not None and 0 < seconds < 10.0
        after = server.children()
        assert len(after) == 2 and after != before  # one child replaced, by a fresh one that served
    assert not processes_mentioning(str(tmp_path))


@needs_gunicorn
def test_the_accept_queue_says_when_every_child_was_busy(tmp_path: Path) -> None:
    """2 workers that each wait 20 ms per request: 6 clients keep both busy and connections waiting
    (the share near 1, and children / throughput is the app's own time per request); 1 client
    leaves a worker idle (nothing ever waits, and 2 / throughput is twice the app's time)."""
    held_dir = tmp_path / "held"
    held_dir.mkdir()
    adapter = GunicornAdapter("wsgi_app:app", pythonpath=str(APPS), env={"APP_HELD_DIR": str(held_dir)})
    runner = Runner(adapter, tmp_path / "servers", "/sleep?ms=20", 0, 10.0)
    shares, app_ms, busy_ms = [], [], []
    with runner.started(PoolParams(2)) as server:
        for clients in (6, 1):
            for log in held_dir.iterdir():
                log.unlink()
            queue = runner.queue_watch(server)
            result = runner.bench(server, clients, duration=1.5, sample=False, queue=queue)
            assert result.requests.failed == 0 and queue.samples >= 100
            shares.append(queue.share)
            held = [float(line.split()[1]) for log in held_dir.iterdir() for line in log.read_text().splitlines()]
            assert len(held) >= result.requests.complete - 2  # every request timed by the app (but the last)
            app_ms.append(sum(held) / len(held))
            busy_ms.append(2 / result.derived.requests_per_s * 1000)
    busy, idle = shares
    assert busy is not None and busy >= 0.9, shares
    # 1 client: a new connection waits only for an idle worker to wake and accept it, which on a
    # loaded 2-core machine is a few per cent of the time (5.4 % seen in CI); never near busy's
    assert idle is not None and idle <= 0.25, shares
    # every child busy: children / throughput is the time a request holds a child (the app's own
    # timing, plus the worker's parsing and the connection's set-up around it)
    assert app_ms[0] <= busy_ms[0] <= app_ms[0] * 1.15, (busy_ms, app_ms)
    # a child idle half the time: children / throughput is about twice that, an upper bound only
    assert busy_ms[1] >= app_ms[1] * 1.6, (busy_ms, app_ms)
    assert not processes_mentioning(str(tmp_path))


def test_an_io_bound_pool_serves_children_over_the_wait(tmp_path: Path) -> None:
    """16 workers that each wait 30 ms per request, 32 clients: the pool serves about 16 / 30 ms,
    whatever the cores; the recorded I/O-bound run's decisions rest on this
    (tests/tune/test_recorded.py, tune-io)."""
    runner = _runner(tmp_path, "/sleep?ms=30")
    with runner.started(PoolParams(16)) as server:
        runner.warm(server, rounds=1)
        result = runner.bench(server, 32, duration=1.5)
    assert result.requests.failed == 0
    assert 0.6 * 16 / 0.030 <= result.derived.requests_per_s <= 16 / 0.030 * 1.05, result.derived.requests_per_s
    assert not processes_mentioning(str(tmp_path))


def _keepalive_adapter(kind: str) -> ApacheAdapter | StarmanAdapter:
    missing = starman_missing() if kind == "starman" else apache_missing(perl=True)
    if missing is not None:
        pytest.skip(missing)
    if kind == "starman":
        return StarmanAdapter(APPS / "app.psgi")
    return ApacheAdapter(perl_handlers={"/": "PounderTest::Hello"}, perl_lib=APPS / "perl" / "lib",
                         startup_pl=APPS / "perl" / "startup.pl")


@pytest.mark.parametrize("kind", ["starman", "apache"])
def test_keepalive_is_kept_by_the_server_too(kind: str, public_dir: Path) -> None:
    """--keepalive: the server keeps the connections open as well (it was started with keep-alive
    off whatever the workload said): 3 clients send 300 requests over their 3 connections; without
    it, every request is a connection of its own."""
    adapter = _keepalive_adapter(kind)
    opened = {}
    for keepalive in (True, False):
        runner = Runner(adapter, public_dir / f"servers-{keepalive}", Workload(keepalive=keepalive), 0, 10.0)
        with runner.started(PoolParams(3)) as server:
            result = runner.bench(server, 3, requests=300, sample=False)
        assert result.requests.complete == 300 and result.requests.failed == 0, kind
        opened[keepalive] = result.connections_opened
    # Apache closes a connection after MaxKeepAliveRequests (100) requests: a client that sent more
    # opened another
    assert 3 <= opened[True] <= 3 + 300 // 100 and opened[False] == 300, (kind, opened)
    assert "measured with KeepAlive On" in ApacheAdapter(perl_handlers={"/": "X"}).render(PoolParams(4), keepalive=True)


def _held_by_strace(log: Path) -> list[float]:
    """Seconds from each accept4() that returned a connection to the close() of that descriptor,
    in an ``strace -f -ttt`` log of the workers: how long each request held its worker."""
    began: dict[tuple[str, str], float] = {}
    held = []
    for line in log.read_text().splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        pid, stamp, call = parts
        accepted = re.match(r"(?:accept4\(|<\.\.\. accept4 resumed>).*=\s+(\d+)$", call)
        closed = re.match(r"close\((\d+)", call)
        if accepted:  # when accept4 returned (an interrupted line resumes with the result)
            began[(pid, accepted[1])] = float(stamp)
        elif closed:
            start = began.pop((pid, closed[1]), None)
            if start is not None:
                held.append(float(stamp) - start)
    return held


@needs_gunicorn
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_slow_clients_hold_their_worker_until_they_have_read_the_answer(tmp_path: Path) -> None:
    """8 MiB answers read at 32 MB/s by 4 clients from 2 workers: gunicorn writes what the kernel
    buffers take, then waits for the client to finish reading (shutdown, then poll for its close),
    so the app's own timing sees only part of the hold. strace times each accept-to-close in the
    workers: with a connection always waiting (queued near 1), children / throughput is that time."""
    held_dir = tmp_path / "held"
    held_dir.mkdir()
    adapter = GunicornAdapter("wsgi_app:app", pythonpath=str(APPS), env={"APP_HELD_DIR": str(held_dir)})
    runner = Runner(adapter, tmp_path / "servers", Workload(path="/big?kb=8192", throttle="32MB/s"), 0, 30.0)
    log = tmp_path / "strace.log"
    with runner.started(PoolParams(2)) as server:
        runner.warm(server, rounds=1)
        workers = server.children()
        tracer = subprocess.Popen(["strace", "-f", "-ttt", "-e", "trace=accept4,close", "-o", str(log),
                                   *(arg for pid in workers for arg in ("-p", str(pid)))],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)  # attached
            queue = runner.queue_watch(server)
            result = runner.bench(server, 4, duration=2.0, sample=False, queue=queue)
        finally:
            tracer.terminate()
            tracer.wait(timeout=10)
    assert result.requests.failed == 0 and result.requests.complete >= 10
    held = _held_by_strace(log)
    assert len(held) >= 10, held
    app = [float(line.split()[1]) / 1000 for f in held_dir.iterdir() for line in f.read_text().splitlines()]
    busy = 2 / result.derived.requests_per_s
    traced = statistics.mean(held)
    assert queue.share is not None and queue.share >= 0.9, queue.share
    assert abs(busy - traced) <= 0.1 * traced, (busy, traced)
    assert statistics.mean(app) < 0.9 * traced, (app, traced)  # the app alone sees less
    assert not processes_mentioning(str(tmp_path))
