"""ServerSampler on real trees: server CPU against what the children measured themselves
(``time.process_time()`` through a pipe), children that exit or are spawned during the window,
private-memory growth, mod_status, and the report's JSON form."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jsonschema
import pytest

from pounder import ServerLoadReport, ServerSampler, UsageError, find_server
from pounder.procs import per_request, snapshot
from support.proctree import TreeFactory

MIB = 1 << 20
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "python/pounder/schemas/server-load.schema.json").read_text()
)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def check_json(report: ServerLoadReport) -> None:
    data = json.loads(json.dumps(report.to_dict()))
    jsonschema.validate(data, SCHEMA)
    assert ServerLoadReport.from_dict(data) == report


def test_server_cpu_counts_live_exited_and_spawned_children(trees: TreeFactory) -> None:
    tree = trees.start()
    alive, leaving = tree.spawn(2)
    # CPU used before the window must not be counted (the parent's cutime will include the part
    # of ``leaving`` before the window once it is reaped: it has to be subtracted).
    tree.burn(alive, 0.2)
    tree.burn(leaving, 0.6)  # counted, the total would be ~60 % too high

    parent_before = tree.parent_cpu()
    sampler = ServerSampler(find_server(pid=tree.pid), interval_s=0.05)
    sampler.start()
    measured = tree.burn(alive, 0.2)
    exited = tree.burn(leaving, 0.2, exit_after=True)  # the parent reaps it: its CPU moves to cutime
    _, spawned_stay = tree.spawn_burn(0.2, stay=True)
    _, spawned_exit = tree.spawn_burn(0.3, stay=False)
    time.sleep(0.1)
    report = sampler.stop()
    parent_cpu = tree.parent_cpu() - parent_before

    expected = parent_cpu + measured + exited + spawned_stay + spawned_exit
    print(f"server CPU {report.server_cpu_s:.3f} s (reaped {report.server_cpu_reaped_s:.3f}), expected {expected:.3f}"
          f" (parent {parent_cpu:.3f}); sampler {report.sampler_cpu_s:.3f} s over {report.samples} samples")
    assert report.server_cpu_s == pytest.approx(expected, rel=0.30), (report.server_cpu_s, expected)
    assert report.server_cpu_reaped_s == pytest.approx(exited + spawned_exit, rel=0.30)
    assert report.children_seen == 4
    assert report.children_spawned == 2
    assert report.children_exited == 2
    assert report.samples >= 5
    assert report.duration_s >= 0.9
    assert report.sampler_cpu_s > 0  # measured and reported; what it costs is a target for benchmarks/, not a test
    assert report.messages == ()
    by_pid = {child.pid: child for child in report.children}
    assert by_pid[alive].cpu_s == pytest.approx(measured, abs=0.06)
    assert not by_pid[alive].spawned and not by_pid[alive].exited
    assert by_pid[leaving].exited
    check_json(report)


def test_cpu_below_one_clock_tick_is_measured(trees: TreeFactory) -> None:
    # /proc/PID/stat counts CPU in 10 ms ticks: 3 ms would read as 0 or 10 ms. The sampler reads
    # the process CPU clock (ns) for live processes.
    tree = trees.start()
    (child,) = tree.spawn(1)
    sampler = ServerSampler(find_server(pid=tree.pid), interval_s=10)
    sampler.start()
    measured = tree.burn(child, 0.003)
    report = sampler.stop()
    by_pid = {c.pid: c for c in report.children}
    assert by_pid[child].cpu_s == pytest.approx(measured, abs=0.002), (by_pid[child].cpu_s, measured)


def test_private_growth_of_a_leaking_child(trees: TreeFactory) -> None:
    tree = trees.start(mb=8)
    kids = tree.spawn(3)
    sampler = ServerSampler(tree.pid, interval_s=0.1)  # a pid is enough
    sampler.start()
    tree.grow(kids[1], 30)
    time.sleep(0.15)
    report = sampler.stop()

    assert report.private_growth_total == pytest.approx(30 * MIB, rel=0.25)
    growth = report.private_growth_bytes
    assert growth[kids[1]] == pytest.approx(30 * MIB, rel=0.25)
    assert abs(growth[kids[0]]) < 2 * MIB and abs(growth[kids[2]]) < 2 * MIB
    assert report.max_child_uss is not None and report.max_child_uss >= 30 * MIB
    assert report.min_child_shared is not None and report.min_child_shared >= 6 * MIB
    assert report.children_spawned == 0 and report.children_exited == 0

    series = [point for point in report.series if point.pid == kids[1]]
    assert len(series) == report.samples
    assert series[-1].uss - series[0].uss == growth[kids[1]]
    assert [p.t for p in series] == sorted(p.t for p in series)
    assert {point.pid for point in report.series} == {tree.pid, *kids}

    per = per_request(report, 1000)
    assert per.private_growth_bytes_per_request == pytest.approx(report.private_growth_total / 1000)
    assert per.server_cpu_us_per_request == pytest.approx(report.server_cpu_s * 1e6 / 1000)
    assert per_request(report, 0).server_cpu_us_per_request is None
    with pytest.raises(UsageError):
        per_request(report, -1)
    check_json(report)


def test_children_spawned_during_the_window_have_their_memory(trees: TreeFactory) -> None:
    tree = trees.start(mb=20)
    tree.spawn(1)
    with ServerSampler(tree.pid, interval_s=0.05) as sampler:
        time.sleep(0.1)
        late = tree.spawn(2)
        time.sleep(0.15)
    report = sampler.stop()  # the same report again
    assert report.children_seen == 3 and report.children_spawned == 2
    summaries = {child.pid: child for child in report.children}
    for pid in late:
        assert summaries[pid].spawned and summaries[pid].first_t > 0
        assert summaries[pid].min_shared is not None and summaries[pid].min_shared >= 15 * MIB
    assert report.private_growth_total is not None  # the first child was there at both ends


class _Status(BaseHTTPRequestHandler):
    replies: list[tuple[int, str]] = []

    def do_GET(self) -> None:  # noqa: N802
        code, body = self.replies[0] if len(self.replies) == 1 else self.replies.pop(0)
        payload = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def status_server() -> Iterator[tuple[str, type[_Status]]]:
    handler = type("Handler", (_Status,), {"replies": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/server-status", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


AUTO = "Total Accesses: {n}\nTotal kBytes: 12\nBusyWorkers: {busy}\nIdleWorkers: 7\nScoreboard: __W_\n"


def test_mod_status_is_read_at_every_sample(trees: TreeFactory, status_server: tuple[str, type[_Status]]) -> None:
    url, handler = status_server
    handler.replies = [(200, AUTO.format(n=n, busy=n % 3 + 1)) for n in range(1000)]
    tree = trees.start()
    sampler = ServerSampler(tree.pid, interval_s=0.05, status_url=url)
    sampler.start()
    time.sleep(0.2)
    report = sampler.stop()
    assert report.status_url == url + "?auto"
    assert len(report.status) == report.samples
    assert [point.total_accesses for point in report.status] == list(range(report.samples))
    assert all(point.idle_workers == 7 and point.busy_workers in (1, 2, 3) for point in report.status)
    assert report.status_failures == 0 and report.messages == ()
    check_json(report)


def test_unreadable_status_is_one_message(trees: TreeFactory, status_server: tuple[str, type[_Status]]) -> None:
    url, handler = status_server
    handler.replies = [(404, "not found")]
    tree = trees.start()
    sampler = ServerSampler(tree.pid, interval_s=0.05, status_url=url)
    sampler.start()
    time.sleep(0.15)
    report = sampler.stop()
    assert report.status == ()
    assert report.status_failures == report.samples >= 3
    assert report.messages == (f"server-status: HTTP 404 Not Found from {url}?auto",)

    handler.replies = [(200, "<html>It works!</html>")]
    report = ServerLoadReport.from_dict(report.to_dict())
    with ServerSampler(tree.pid, interval_s=0.05, status_url=url) as sampler:
        time.sleep(0.1)
    assert sampler.stop().messages == (
        "server-status: no BusyWorkers or IdleWorkers in the reply (not a mod_status ?auto page)",
    )


def test_a_server_that_exits_ends_the_sampling_quietly(trees: TreeFactory) -> None:
    tree = trees.start()
    tree.spawn(1)
    sampler = ServerSampler(tree.pid, interval_s=0.05)
    sampler.start()
    time.sleep(0.1)
    tree.stop()
    time.sleep(0.1)
    report = sampler.stop()
    assert report.samples >= 2
    assert report.messages == (f"the server process {tree.pid} has exited during the run: what the server used "
                               f"after the last sample ({report.duration_s:.1f} s) is unknown, so there are no "
                               "per-request figures",)  # fmt: skip
    # the parent and its child were killed: both gone, the child counted as exited
    assert report.root_exited and report.children_exited == 1 and report.children[0].exited
    assert per_request(report, 100).server_cpu_us_per_request is None
    check_json(report)


def test_version_1_reports_are_read(trees: TreeFactory) -> None:
    tree = trees.start()
    tree.spawn(1)
    with ServerSampler(tree.pid, interval_s=0.05) as sampler:
        time.sleep(0.1)
    document = sampler.stop().to_dict()
    assert document["schema"] == "pounder/server-load/2" and document["root_exited"] is False
    old = {key: value for key, value in document.items() if key != "root_exited"}
    old["schema"] = "pounder/server-load/1"
    jsonschema.validate(old, SCHEMA)
    assert ServerLoadReport.from_dict(old) == sampler.stop()


def test_bad_arguments() -> None:
    with pytest.raises(UsageError, match="interval_s"):
        ServerSampler(1, interval_s=0)
    with pytest.raises(UsageError, match="invalid status URL"):
        ServerSampler(os.getpid(), status_url="ftp://x/")
    with pytest.raises(UsageError, match="no process with pid"):
        ServerSampler(dead_pid())


def test_snapshot_of_a_pid_is_the_same_as_of_its_target(trees: TreeFactory) -> None:
    tree = trees.start()
    tree.spawn(2)
    by_pid = [proc.pid for proc in snapshot(tree.pid).processes]
    assert by_pid == [proc.pid for proc in snapshot(find_server(pid=tree.pid)).processes]
