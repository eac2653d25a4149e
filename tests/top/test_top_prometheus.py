"""``pounder top --prometheus``: the live view served as a Prometheus scrape endpoint, against a real
Apache prefork + mod_perl with its status page. The scraped figures (parsed by prometheus_client's own
parser) are checked against what the test reads itself: the children per psutil, their memory per
/proc/PID/smaps_rollup, their CPU time per /proc/PID/stat and the CPU each burned by its own word,
their age per their start time, the requests each served per Apache's own
status table; a real Prometheus (Debian's) scrapes it and its query returns the children; bad input
is refused in one line before anything is served."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from pounder.servers import free_port
from support.burner import cpu_seconds
from support.cliutil import assert_usage_error, run_cli, start_pounder
from support.leftovers import processes_mentioning
from support.prometheus import Prometheus, prometheus_binary
from support.srvutil import smaps_bytes

parser = pytest.importorskip("prometheus_client.parser")

MIB = 1 << 20
APACHE_STATES = {"status", "idle", "starting", "reading", "writing", "keepalive", "dns", "closing", "logging",
                 "finishing", "cleanup"}
SENT = 40
BURNS = (150, 150, 150, 150)
"""Requests to /cpu?ms=N: the child answering burns N ms of its CPU time (it says which child it is)."""


def _children(parent: int) -> set[int]:
    alive = set()
    for child in psutil.Process(parent).children():
        with contextlib.suppress(psutil.NoSuchProcess):
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.add(child.pid)
    return alive


def _apache_requests(url: str) -> dict[int, int]:
    """pid → requests served by that child, read here from Apache's own status table (Acc is
    this connection / this child / this slot)."""
    with urllib.request.urlopen(f"{url}/server-status", timeout=10) as reply:
        page = reply.read().decode()
    rows = re.findall(r"<tr><td><b>\d+-\d+</b></td><td>(\d+)</td><td>\d+/(\d+)/\d+</td>", page)
    return {int(pid): int(child) for pid, child in rows}


Samples = dict[str, list[tuple[dict[str, str], float]]]


def _scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain")
        text = reply.read().decode()
    samples: Samples = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def _by_pid(samples: Samples, name: str) -> dict[int, float]:
    return {int(labels["pid"]): value for labels, value in samples.get(name, [])}


@contextlib.contextmanager
def _top_serving(srv: Any, port: int) -> Iterator[subprocess.Popen[str]]:
    """``pounder top --prometheus 127.0.0.1:PORT`` on ``srv`` (printing view after view to nowhere:
    no terminal), stopped with Ctrl-C's signal at the end (exit 130, its port closed)."""
    top = start_pounder("top", "--pidfile", srv.pidfile, "--status", f"{srv.url}/server-status", "--interval",
                        "1s", "--prometheus", f"127.0.0.1:{port}", stdout=subprocess.DEVNULL)
    try:
        yield top
    finally:
        top.send_signal(signal.SIGINT)
        try:
            code = top.wait(timeout=15)
        except subprocess.TimeoutExpired:
            top.kill()
            top.wait()
            raise
    stderr = top.stderr.read() if top.stderr else ""
    assert code == 130, stderr
    assert stderr.splitlines()[0] == f"pounder: serving the views for Prometheus at http://127.0.0.1:{port}/metrics"
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def _first_view(top: subprocess.Popen[str], port: int, children: int) -> Samples:
    """The endpoint's figures once a view of every child is served."""
    deadline = time.monotonic() + 20
    while True:
        assert top.poll() is None, top.stderr.read() if top.stderr else ""
        try:
            samples = _scrape(port)
        except (ConnectionRefusedError, urllib.error.URLError):
            samples = {}
        if len(samples.get("pounder_top_child_cpu_ratio", [])) == children:
            return samples
        assert time.monotonic() < deadline, samples
        time.sleep(0.2)


def _loaded_apache(apache_server: Any, burns: tuple[int, ...] = ()) -> tuple[Any, dict[int, float]]:
    """Apache after SENT requests (``burns`` of them burning CPU); the CPU seconds each child burned, as it said."""
    srv = apache_server(start_servers=2, min_spare=1, max_spare=3, keepalive=False)
    burned: dict[int, float] = {}
    for ms in burns:
        with urllib.request.urlopen(f"{srv.url}/cpu?ms={ms}", timeout=10) as reply:
            pid = int(reply.read().split()[1])
        burned[pid] = burned.get(pid, 0.0) + ms / 1000
    for _ in range(SENT - len(burns)):
        with urllib.request.urlopen(f"{srv.url}/hello", timeout=10) as reply:
            reply.read()
    return srv, burned


def test_scraped_figures_are_the_childrens_own(apache_server) -> None:
    srv, burned = _loaded_apache(apache_server, BURNS)
    children = _children(srv.pid)
    port = free_port()
    with socket.socket() as taken:  # a port in use: refused in one line, nothing served
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = f"127.0.0.1:{taken.getsockname()[1]}"
        assert_usage_error(*run_cli("top", "--pidfile", srv.pidfile, "--prometheus", busy), f"--prometheus {busy}",
                           "cannot listen there")
    with _top_serving(srv, port) as top:
        samples = _first_view(top, port, len(children))
        stat_cpu = {pid: cpu_seconds(pid) for pid in children}  # ticks: not top's CPU clock
        apache = _apache_requests(srv.url)
        now = time.time()
        starts = {pid: psutil.Process(pid).create_time() for pid in children}
        rollups = {pid: smaps_bytes(pid) for pid in (srv.pid, *children)}
        assert _children(srv.pid) == children

    states = samples["pounder_top_child_state"]
    assert {int(labels["pid"]) for labels, _ in states} == children
    for labels, value in states:
        assert value == 1 and labels["server"] == "apache2" and labels["source"] == "status", labels
        assert labels["state"] in APACHE_STATES, labels
    [(info, _)] = samples["pounder_top_server_info"]
    assert info == {"server": "apache2", "pid": str(srv.pid), "states_from": "apache"}

    # requests: Apache counts a request when it starts, this test's status read included, and top read
    # the page once per view since: each child's count here is top's plus at most those reads
    requests = _by_pid(samples, "pounder_top_child_requests_total")
    assert set(requests) == children
    for pid in children:
        assert 0 <= apache[pid] - requests[pid] <= 3, (apache, requests)
    assert SENT <= sum(requests.values()) <= SENT + 10, requests

    for name, fields in (("uss", ("Private_Clean", "Private_Dirty")), ("pss", ("Pss",)),
                         ("shared", ("Shared_Clean", "Shared_Dirty"))):
        scraped = _by_pid(samples, f"pounder_top_child_{name}_bytes")
        assert set(scraped) == children, name
        for pid in children:
            mine = sum(rollups[pid][field] for field in fields)
            assert abs(scraped[pid] - mine) <= MIB, (name, pid, scraped[pid], mine)
    [(_, taken_at)] = samples["pounder_top_view_timestamp_seconds"]
    assert now - 5 < taken_at <= now
    for pid, age in _by_pid(samples, "pounder_top_child_age_seconds").items():
        assert abs(age - (taken_at - starts[pid])) <= 0.2, (pid, age, taken_at, starts[pid])
    cpu_s = _by_pid(samples, "pounder_top_child_cpu_seconds_total")
    assert set(cpu_s) == children
    for pid in children:  # ticks of 10 ms round down; the children idle since top's read
        assert abs(cpu_s[pid] - stat_cpu[pid]) <= 0.05, (pid, cpu_s[pid], stat_cpu[pid])
        assert cpu_s[pid] >= burned.get(pid, 0.0), (pid, cpu_s[pid], burned)
    for pid, ratio in _by_pid(samples, "pounder_top_child_cpu_ratio").items():
        assert 0 <= ratio <= psutil.cpu_count(), (pid, ratio)  # idle children: the figure is checked in tests/top

    pool = {name: values[0][1] for name, values in samples.items() if not name.startswith("pounder_top_child_")}
    assert pool["pounder_top_children"] == len(children)
    assert abs(pool["pounder_top_footprint_bytes"] - sum(r["Pss"] for r in rollups.values())) <= 2 * MIB
    uss = sum(rollups[pid]["Private_Clean"] + rollups[pid]["Private_Dirty"] for pid in children)
    assert abs(pool["pounder_top_children_uss_bytes"] - uss) <= 2 * MIB
    assert pool["pounder_top_accept_queue_connections"] == 0
    assert 0 <= pool["pounder_top_requests_per_second"] <= 5  # no load now: the status reads only
    srv.stop()
    assert processes_mentioning(str(srv.workdir)) == []


def _query(prometheus: Prometheus, query: str) -> list[dict[str, Any]]:
    answer = prometheus.query(query, time.time())
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


@pytest.mark.skipif(prometheus_binary() is None, reason="Prometheus (Debian's prometheus) is not installed")
def test_prometheus_scrapes_the_children(apache_server, tmp_path: Path) -> None:
    srv, _ = _loaded_apache(apache_server)
    children = _children(srv.pid)
    port = free_port()
    prometheus = Prometheus(tmp_path / "prometheus", scrape=f"127.0.0.1:{port}")
    with _top_serving(srv, port) as top:
        try:
            prometheus.start()
            _first_view(top, port, len(children))
            deadline = time.monotonic() + 20
            while not (found := _query(prometheus, "pounder_top_child_pss_bytes")):
                assert time.monotonic() < deadline, "Prometheus stored no pounder_top_child_pss_bytes"
                time.sleep(0.3)
            served = _query(prometheus, "sum(pounder_top_child_requests_total)")
        finally:
            prometheus.stop()
    assert {int(series["metric"]["pid"]) for series in found} == children
    assert {series["metric"]["job"] for series in found} == {"pounder_top"}
    assert SENT <= float(served[0]["value"][1]) <= SENT + 20
    srv.stop()
    assert processes_mentioning(str(srv.workdir)) == []


def test_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for address in ("192.0.2.1:9464", "0.0.0.0:9464", "[::]:9464"):
        assert_usage_error(*run_cli("top", "--pid", "1", "--prometheus", address), "not a loopback address",
                           "--allow-remote")
    for address in ("9464", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:x", "example.org:9464", "::1:9464"):
        assert_usage_error(*run_cli("top", "--pid", "1", "--prometheus", address), f"--prometheus {address!r}")
    assert_usage_error(*run_cli("top", "--pid", "1", "--prometheus", ":9464", "--once"), "not with --once")
    assert_usage_error(*run_cli("top", "--pid", "1", "--allow-remote"), "give --prometheus")
    from pounder.top import check_scrape_address

    assert check_scrape_address("0.0.0.0:9464", allow_remote=True) == ("0.0.0.0", 9464)
    assert check_scrape_address("[::1]:9464") == ("::1", 9464)
    assert check_scrape_address(":9464") == ("127.0.0.1", 9464)
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # not installed: its import fails
    assert_usage_error(*run_cli("top", "--pid", "1", "--prometheus", "127.0.0.1:9464"),
                       "needs the prometheus_client package", "pip install 'pounder[metrics]'")


def test_the_library_endpoint_serves_the_last_view_until_closed() -> None:
    """TopExporter without a server: nothing before the first view, the view given after, the port
    closed by close(); figures top does not know are left out."""
    from pounder.top import ChildRow, TopExporter, TopTotals, TopView

    row = ChildRow(pid=4242, state="accept", state_from="proc", detail="accept4", busy=None, requests=None,
                   cpu_percent=None, uss=3 * MIB, shared=5 * MIB, pss=4 * MIB, age_s=12.5, new=False, cpu_s=1.5)
    totals = TopTotals(children=1, by_state={"accept": 1}, footprint=9 * MIB, children_uss=3 * MIB,
                       median_child_shared=5 * MIB, parent_rss=7 * MIB, requests_per_s=None, accept_queue=None)
    view = TopView(1_700_000_000.25, 4241, "srv", "pid 4241", None, None, (row,), (), totals)
    port = free_port()
    with TopExporter(f"localhost:{port}") as exporter:
        assert exporter.url == f"http://127.0.0.1:{port}/metrics"
        assert _scrape(port) == {}
        exporter.publish(view)
        samples = _scrape(port)
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    assert samples == {
        "pounder_top_child_state": [({"server": "srv", "pid": "4242", "state": "accept", "source": "proc"}, 1)],
        "pounder_top_child_cpu_seconds_total": [({"server": "srv", "pid": "4242"}, 1.5)],
        "pounder_top_child_uss_bytes": [({"server": "srv", "pid": "4242"}, 3 * MIB)],
        "pounder_top_child_shared_bytes": [({"server": "srv", "pid": "4242"}, 5 * MIB)],
        "pounder_top_child_pss_bytes": [({"server": "srv", "pid": "4242"}, 4 * MIB)],
        "pounder_top_child_age_seconds": [({"server": "srv", "pid": "4242"}, 12.5)],
        "pounder_top_children": [({"server": "srv"}, 1)],
        "pounder_top_footprint_bytes": [({"server": "srv"}, 9 * MIB)],
        "pounder_top_children_uss_bytes": [({"server": "srv"}, 3 * MIB)],
        "pounder_top_parent_rss_bytes": [({"server": "srv"}, 7 * MIB)],
        "pounder_top_view_timestamp_seconds": [({"server": "srv"}, 1_700_000_000.25)],
        "pounder_top_server_info": [({"server": "srv", "pid": "4241", "states_from": "proc"}, 1)],
    }


def test_a_view_keeps_the_cpu_clock_and_older_views_still_read() -> None:
    """``cpu_s`` (what the counter serves) goes through --json and back; a view written before it was
    kept lacks it, still follows the schema and reads as None (no counter served)."""
    from pounder.top import ChildRow, TopTotals, TopView, top_from_dict, view_families
    from support.schemas import validate

    row = ChildRow(pid=4242, state="accept", state_from="proc", detail="accept4", busy=None, requests=None,
                   cpu_percent=1.5, uss=MIB, shared=MIB, pss=MIB, age_s=2.0, new=False, cpu_s=0.123456)
    totals = TopTotals(children=1, by_state={"accept": 1}, footprint=MIB, children_uss=MIB,
                       median_child_shared=MIB, parent_rss=MIB, requests_per_s=None, accept_queue=0)
    doc = TopView(1_700_000_000.0, 4241, "srv", "pid 4241", None, 1.0, (row,), (), totals).to_dict()
    validate(doc, "top")
    assert top_from_dict(doc).children[0].cpu_s == 0.123456
    del doc["children"][0]["cpu_s"]
    validate(doc, "top")
    older = top_from_dict(doc)
    assert older.children[0].cpu_s is None
    names = {family.name for family in view_families(older) if family.samples}
    assert "pounder_top_child_cpu_ratio" in names and "pounder_top_child_cpu_seconds" not in names
