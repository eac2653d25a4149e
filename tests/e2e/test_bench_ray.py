"""Load from many machines: ``bench --ray`` on a real Ray cluster of three nodes, all on loopback
(:mod:`support.raycluster`), against the counting test server: what is timed over agents (their
start together, their clocks, a rate, a latency, a loss at a moment, their CPU), a tuning run
from agents (its load is CPU-bound and tune measures a trial again on a busy machine: 14 s alone,
72 s beside the shared tests), and ``--ray local``, which looks at every Ray process on the
machine; these run alone on the machine. What
each test checks comes from outside the merge: the server's own count, the agents' own
per-request TSV files, a run without Ray at the same rate, the processes left. The ``--ray``
tests that check only what was sent, counted, written or refused share the machine:
test_bench_ray_outputs.py."""

from __future__ import annotations

import ipaddress
import json
import math
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from support.raycluster import agents as _agents
from support.raycluster import agents_gone as _agents_gone
from support.raycluster import ray_processes as _ray_processes
from support.raycluster import three_nodes, tsv_rows

pytest.importorskip("ray")

from pounder import BenchResult, IoInfo, _live, bench  # noqa: E402
from pounder.__main__ import main as pounder_main  # noqa: E402
from pounder.agents import Cluster, agent_pool, run_bench_ray  # noqa: E402
from pounder.load import BenchSpec, run_bench, server_sampler  # noqa: E402
from support.cliutil import run_pounder, with_pythonpath  # noqa: E402
from support.hdr import decode_hdr, hdr_log_intervals  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")  # Ray's own deprecation warnings




@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """Three Ray nodes of one CPU each on 127.0.0.1; its address. Shut down after the module."""
    with three_nodes() as address:
        yield address


def test_no_ray_process_listens_off_loopback(cluster: str) -> None:
    """ShadowRay (CVE-2023-48022): Ray's APIs have no authentication; the test cluster listens
    on loopback only."""
    assert _ray_processes()
    assert _outward_listeners() == []


def test_counts_are_exact_over_three_agents(cluster: str, testserver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found with --ray auto (RAY_ADDRESS), whose address the result records, without --agents (one
    agent per node): the counts are the server's own, split evenly over the three agents."""
    srv = testserver(mode="ok")
    monkeypatch.setenv("RAY_ADDRESS", cluster)
    result = bench(srv.url + "/", connections=6, requests=3_000, ray="auto")
    agents = result.agents
    assert agents is not None and not agents.partial
    assert agents.address == cluster and len(agents.members) == 3
    assert srv.stats()["requests"] == 3_000
    assert result.requests.complete == 3_000 and result.requests.failed == 0
    assert [a.complete for a in agents.members] == [1_000, 1_000, 1_000]
    assert [a.connections for a in agents.members] == [2, 2, 2]
    # no -t: the three agents share this machine's CPUs (three Ray nodes on one machine), at least one
    # thread each, at most its connections
    assert [a.threads for a in agents.members] == [max(1, min(2, len(os.sched_getaffinity(0)) // 3))] * 3
    assert agents.nodes == 3 and len({a.node_id for a in agents.members}) == 3  # one per node
    assert agents.start_skew_ms is not None and agents.start_skew_ms < 50
    assert all(abs(a.offset_ms) < 50 and a.clock_error_ms < 50 for a in agents.members)  # one machine, one clock
    assert result.latency.corrected.count == 3_000
    assert sum(sample.complete for sample in result.series) == 3_000
    # the agents' I/O path, the same on each (one machine): io_uring, as auto takes it here
    assert result.io is not None and result.io.path == "uring" and result.io.reason.startswith("auto: the kernel")
    # written and read back as any result is
    back = BenchResult.from_json(result.to_json())
    assert back.agents == agents and back.io == result.io


class _Told:
    """A listener of pounder._live (what --metrics-out streams) that keeps what it is told."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, dict[str, Any]]] = []
        self.batches = 0
        self.in_flights: list[int] = []

    def seconds(self, target: str, start_unix: float, entries: list[dict[str, Any]]) -> None:
        self.entries += [(target, entry) for entry in entries]
        self.batches += 1

    def children(self, sample: object) -> None:
        pass

    def in_flight(self, target: str, at_unix: float, requests: int) -> None:
        self.in_flights.append(requests)


def test_the_agents_seconds_are_told_as_they_finish_added_up(cluster: str, testserver: Any) -> None:
    """What --metrics-out streams of a --ray run: each second once every agent has finished it, their
    entries added up (histograms merged): the same seconds as the merged result's series."""
    srv = testserver(mode="ok", delay_ms=5)
    listener = _Told()
    with _live.listening(listener):
        result = bench(srv.url + "/", connections=6, duration="3s", ray=cluster, agents=3)
    entries = [entry for _, entry in listener.entries]
    assert listener.batches > 1  # told while it ran, not all at the end
    assert sum(entry["complete"] for entry in entries) == result.requests.complete == srv.stats()["requests"]
    assert [entry["second"] for entry in entries] == [sample.second for sample in result.series]
    for entry, sample in zip(entries, result.series, strict=True):
        assert (entry["complete"], entry["failed"], entry["p50_us"], entry["p99_us"], entry["max_us"]) == (
            sample.complete, sample.failed, sample.p50_us, sample.p99_us, sample.max_us)
        assert entry["errors"] == sample.errors  # the agents' failures of the second by category
    assert {target for target, _ in listener.entries} == {srv.url + "/"}
    # the agents' requests in flight added up: at most the 6 connections, all of them most of the time
    assert listener.in_flights and max(listener.in_flights) <= 6, listener.in_flights


def test_merged_histogram_is_the_agents_requests(cluster: str, testserver: Any, tmp_path: Path) -> None:
    """The merged histogram is the sum of the histograms in the agents' own ``--hdr-log`` files,
    bucket by bucket (decoded apart from the engine); its percentiles are those of every request
    the agents timed (their own TSV files); a 20 ms server reads as 20 ms."""
    srv = testserver(mode="ok", delay_ms=20)
    tsv, hdr = tmp_path / "requests.tsv", tmp_path / "requests.hdr"
    result = bench(srv.url + "/", connections=6, requests=450, ray=cluster, agents=3, tsv_path=str(tsv),
                   hdr_log_path=str(hdr), io="epoll")
    assert result.io == IoInfo(path="epoll", reason="asked for")  # the spec's io travels to every agent
    rebuilt: Counter[tuple[int, int]] = Counter()
    for index in range(3):
        for *_, interval in hdr_log_intervals(tmp_path / f"requests.agent-{index}.hdr"):
            rebuilt.update(interval.buckets)
    assert dict(rebuilt) == decode_hdr(result.histogram).buckets
    assert rebuilt.total() == 450
    rows = [row for index in range(3) for row in tsv_rows(tmp_path / f"requests.agent-{index}.tsv")]
    assert len(rows) == 450 == result.requests.complete == srv.stats()["requests"]
    latencies = sorted(int(row["latency_us"]) for row in rows)
    for percent in ("50", "90", "99"):
        exact = latencies[math.ceil(len(latencies) * float(percent) / 100) - 1]  # the value at that rank
        merged = result.latency.corrected.percentiles[percent]
        assert abs(merged - exact) <= exact / 1000 + 1, (percent, merged, exact)  # 3 significant digits
    assert abs(result.latency.corrected.percentiles["50"] / 1000 - 20) <= 2
    assert result.latency.corrected.max_us >= latencies[-1]
    # each agent's own line: its percentiles are those of its own TSV, and when it began (moved
    # into pounder's clock) is when its first request left, relative to the first agent's
    assert result.agents is not None
    firsts = {}
    for agent in result.agents.members:
        own = tsv_rows(tmp_path / f"requests.agent-{agent.index}.tsv")
        assert agent.complete == len(own) == 150
        mine = sorted(int(row["latency_us"]) for row in own)
        for percent, value in (("50", agent.p50_us), ("90", agent.p90_us), ("99", agent.p99_us)):
            exact = mine[math.ceil(len(mine) * float(percent) / 100) - 1]
            assert value is not None and abs(value - exact) <= exact / 1000 + 1, (agent.index, percent, value, exact)
        firsts[agent.index] = min(int(row["start_unix_us"]) for row in own) - agent.offset_ms * 1000
    for agent in result.agents.members:
        sent = (firsts[agent.index] - min(firsts.values())) / 1000
        assert agent.began_ms is not None and abs(agent.began_ms - sent) <= 5, (agent.index, agent.began_ms, sent)


def test_open_loop_sends_the_one_schedule(cluster: str, testserver: Any, tmp_path: Path) -> None:
    """--rate 600 -d 2s over three agents: the 1,200 arrivals of one schedule, each sent or counted
    unsent, every 1/600 s (no bursts of three); the merged corrected p90 is that of the agents' own
    rows, and holds the server's freezes (250 ms of every second: the p90 lies inside the 300 frozen
    arrivals, the 120 slowest of them, 150 ms and more from when they were meant to go). Against a
    run from this machine it was compared before: the Python test server's own slowness on a busy
    machine (465 against 172 ms) failed that, not the agents."""
    srv = testserver(mode="freeze", delay_ms=2, freeze_ms=250, freeze_every_ms=1000)
    tsv = tmp_path / "open.tsv"
    result = bench(srv.url + "/", rate="600", duration="2s", ray=cluster, agents=3, tsv_path=str(tsv))
    assert result.requests.complete + result.requests.failed + result.requests.unsent == 1200, result.requests
    rows = [row for index in range(3) for row in tsv_rows(tmp_path / f"open.agent-{index}.tsv")]
    assert len(rows) == result.requests.complete + result.requests.failed
    offsets = sorted(int(row["intended_offset_us"]) for row in rows)
    gaps = [b - a for a, b in zip(offsets, offsets[1:], strict=False)]
    assert min(gaps) >= 1500, min(gaps)  # 1,667 us apart, never together
    # a longer gap is an arrival still waiting for a connection when the run ended (counted unsent)
    missing = sum(round(gap / 1667) - 1 for gap in gaps if gap > 1800)
    assert missing <= result.requests.unsent, (missing, result.requests)
    latencies = sorted(int(row["latency_us"]) for row in rows if row["status"] == "200")
    assert len(latencies) == result.requests.complete
    exact = latencies[math.ceil(0.9 * len(latencies)) - 1]  # the rows' own p90 (nearest rank), us
    p90 = result.latency.corrected.percentiles["90"]
    assert abs(p90 - exact) <= 0.01 * exact, (p90, exact)  # the merged histograms: 3 significant digits
    assert p90 >= 150_000, p90  # the freezes, counted from when each request was meant to go


def test_a_lost_agent_leaves_a_partial_result(cluster: str, testserver: Any) -> None:
    """An agent killed 2.3 s into a 3 s run: the others finish, the result is partial, and the
    lost agent keeps what it measured in the whole seconds it reported (counts and percentiles),
    apart from the totals: the server saw those requests too, plus at most the tail of its last
    unfinished second."""
    srv = testserver(mode="ok", delay_ms=5)
    killed: list[int] = []

    earlier = {proc.pid for proc in _agents()}  # agents of earlier tests still exiting are not this run's

    def kill_one(progress: Any) -> None:
        if progress.elapsed_s > 2.3 and not killed:
            victim = next(proc for proc in _agents() if proc.pid not in earlier)
            killed.append(victim.pid)
            victim.kill()

    spec = BenchSpec.from_options(srv.url + "/", connections=6, duration="3s")
    result = run_bench_ray(spec, Cluster(cluster, agents=3), on_progress=kill_one)
    agents = result.agents
    assert killed and agents is not None and agents.partial
    lost = [a for a in agents.members if a.lost is not None]
    assert [a.pid for a in lost] == killed
    finished = [a for a in agents.members if a.lost is None]
    assert len(finished) == 2 and all(a.elapsed_s >= 2.9 for a in finished)
    assert result.requests.complete == sum(a.complete for a in finished)  # the lost share is not in it
    kept = lost[0]
    assert kept.kept_seconds is not None and 2 <= kept.kept_seconds <= 3
    assert kept.complete > 0 and kept.p50_us is not None and kept.p99_us is not None
    assert 5000 <= kept.p50_us <= kept.p99_us <= kept.max_us  # type: ignore[operator]  # a 5 ms server
    tail = srv.stats()["requests"] - result.requests.complete - kept.complete  # sent after its last whole second
    assert 0 <= tail <= 1.5 * kept.complete / kept.kept_seconds, (tail, kept.complete, kept.kept_seconds)
    assert f"failed in the {kept.kept_seconds} seconds it reported" in "\n".join(agents.warnings())
    assert all(a.kept_seconds is None for a in finished)
    assert _agents_gone()


def test_one_pool_runs_one_bench_after_another(cluster: str, testserver: Any) -> None:
    """The agents of a compare or a tune are placed once and given run after run; the server on
    this machine is sampled meanwhile."""
    srv = testserver(mode="ok")
    with agent_pool(Cluster(cluster)) as pool:
        assert pool.count == 3  # one per node by default
        processes = {proc.pid: proc for proc in _agents()}
        before = {pid: sum(proc.cpu_times()[:2]) for pid, proc in processes.items()}
        first = run_bench(BenchSpec.from_options(srv.url + "/", connections=3, requests=3000, warmup="0.5s"),
                          sender=pool, sampler=server_sampler(pid=srv.proc.pid, interval=0.1))  # fmt: skip
        used = {pid: sum(proc.cpu_times()[:2]) - before[pid] for pid, proc in processes.items()}
        calls: list[float] = []
        second = run_bench(BenchSpec.from_options(srv.url + "/", rate="300", duration="2s"), sender=pool,
                           on_progress=lambda progress: calls.append(progress.elapsed_s))  # fmt: skip
        agents = {agent.pid for agent in _agents()}
    assert first.requests.complete == 3000 and first.warmup.complete > 0  # -n counts after the warm-up
    assert first.server is not None and first.server.samples >= 2 and first.server.serves_url is True
    assert second.requests.complete + second.requests.unsent == 600
    assert 4 <= len(calls) <= 30  # the agents are polled about every 0.25 s, not as fast as they answer
    assert srv.stats()["requests"] == 3600 + first.warmup.complete
    assert first.agents is not None and second.agents is not None
    assert {a.pid for a in first.agents.members} == {a.pid for a in second.agents.members} == agents
    # an agent's engine CPU is part of its process's, as the kernel counts it (its Ray worker
    # threads use some more)
    for agent in first.agents.members:
        assert 0 < agent.client_cpu_s <= used[agent.pid] + 0.02, (agent.client_cpu_s, used[agent.pid])
    assert _agents_gone()


def test_tune_sends_every_measured_load_from_the_agents(cluster: str, tmp_path: Path) -> None:
    """``tune --ray --listen``: the server listens on the address given, every measured load is
    sent by the agents (as many as it has connections, at most 3) to that address, and each
    merged count is the agents' sum; the size measurement's loads are exactly the requests asked.
    The smallest tuning run that has both: one child at most (measured for its size from one
    connection, one agent), 4 clients (the sweep runs at 4 connections, from 3 agents; the pools
    are compared on its own point, not measured again), points of 500 ms (the shortest), no
    MaxRequestsPerChild values, no confirmation."""
    results = tmp_path / "tune"
    proc = run_pounder("tune", "--demo", "--ray", cluster, "--listen", "127.0.0.2", "--point-duration", "500ms",
                       "--mrpc", "0", "--max-children", "1", "--clients", "4", "--measure-children", "2",
                       "--requests-per-child", "20", "--no-confirm", "--results", str(results), timeout=300,
                       env=with_pythonpath(), stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert ("CPUs: measured loads sent by 3 Ray agents on this machine, sharing its CPUs with the server; the "
            "server is not pinned") in proc.stdout
    manifest = json.loads((results / "tune.json").read_text())
    assert manifest["load"] == {"ray": cluster, "agents": 3, "per_node": 1}
    assert manifest["options"]["listen"] == "127.0.0.2"
    benches = []
    for path in sorted((results / "points").glob("*.json")):
        bench_data = json.loads(path.read_text())["bench"]
        benches += [(path.name, b) for b in (bench_data if isinstance(bench_data, list) else [bench_data])]
    assert len(benches) >= 2 + 3  # sizes (2 halves), 1 sweep point of 3 trials
    for name, bench_data in benches:
        agents = bench_data["agents"]
        connections = bench_data["options"]["load"]["connections"]
        assert agents is not None and not any(a["lost"] for a in agents["members"]), name
        assert len(agents["members"]) == min(3, connections), name
        assert {target["url"].split("/")[2].split(":")[0] for target in bench_data["options"]["targets"]} == {
            "127.0.0.2"}, name  # fmt: skip
        assert bench_data["requests"]["complete"] == sum(a["complete"] for a in agents["members"]) > 0, name
        assert os.getpid() not in {a["pid"] for a in agents["members"]}
    # both sides of "at most 3": the sizes' one connection from one agent, the sweep's 4 from 3
    assert {(b["options"]["load"]["connections"], len(b["agents"]["members"])) for _, b in benches} == {(1, 1), (4, 3)}
    sizes = [b for name, b in benches if name == "sizes.json"]
    assert [b["requests"]["complete"] for b in sizes] == [10, 10]  # 10 requests for the one child, twice
    assert _agents_gone()


def _outward_listeners() -> list[Any]:
    """LISTEN sockets of Ray's processes on anything but loopback."""
    pids = {proc.pid for proc in _ray_processes()}
    found = []
    for conn in psutil.net_connections("inet"):
        if conn.status != "LISTEN" or conn.pid not in pids:
            continue
        address = ipaddress.ip_address(conn.laddr.ip)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if not address.is_loopback:
            found.append(conn)
    return found


def test_a_local_cluster_runs_listens_on_loopback_only_stops_and_another_cluster_works_after_it(
        cluster: str, testserver: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """``pounder bench --ray local`` (the command's entry point, run in this process) starts a
    one-machine cluster on loopback for the run and stops it. It is the one Ray head pounder
    starts: nothing of it may listen elsewhere (looked at once the server is sent requests). After
    it, in this process, agents on another cluster live: Ray turns its token authentication on for
    a local cluster and leaves it on after shutdown, and the other cluster's GCS (without tokens)
    then killed every actor it placed at once. Kept last, after the in-process local runs."""
    before = {proc.pid for proc in _ray_processes()}
    local = testserver(mode="ok", delay_ms=2)  # 2,000 requests on 4 connections: a second to look
    out = tmp_path / "local.json"
    seen: list[list[Any]] = []
    done = threading.Event()

    def look() -> None:
        while not done.wait(0.05):
            if local.stats(settle_s=0)["requests"] > 0:
                seen.append(_outward_listeners())
                return

    looking = threading.Thread(target=look, daemon=True)
    looking.start()
    monkeypatch.setattr(sys, "argv", ["pounder", "bench", local.url + "/", "-n", "2000", "-c", "4", "--ray",
                                      "local", "--agents", "2", "--json", str(out)])  # fmt: skip
    code: object = 0
    try:
        pounder_main()
    except SystemExit as ended:
        code = ended.code or 0
    finally:
        done.set()
        looking.join()
    stdout, stderr = capfd.readouterr()
    assert code == 0, stderr
    assert "Agents (2 on 1 node of Ray cluster local" in stdout
    document = json.loads(out.read_text())
    assert document["schema"] == "pounder/bench-result/3"
    assert document["requests"]["complete"] == 2000 == local.stats()["requests"]
    result = BenchResult.from_json(out.read_text())
    assert result.agents is not None and result.agents.address == "local" and result.agents.nodes == 1
    assert seen == [[]]
    deadline = time.monotonic() + 10  # the local cluster's processes exit within moments
    while {proc.pid for proc in _ray_processes()} - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert {proc.pid for proc in _ray_processes()} <= before
    srv = testserver(mode="ok")
    result = bench(srv.url + "/", connections=3, requests=300, ray=cluster, agents=3)
    assert result.agents is not None and not result.agents.partial and result.agents.nodes == 3
    assert result.requests.complete == 300
    assert srv.stats()["requests"] == 300
    assert os.environ.get("RAY_AUTH_MODE") is None  # as it was before the local cluster


