"""What sending the load from Ray agents costs, next to a run from this process.

A gunicorn (4 sync workers, the bundled test app) serves ``/`` while the same closed-loop load
(``-n`` requests over 4 connections) is sent two ways, interleaved, ``--repeat`` rounds of each:

* ``local``: :func:`pounder.run_bench` in this process;
* ``ray``: :func:`pounder.run_bench_ray` with 2 agents on a 2-node Ray cluster that this script
  starts on loopback (``ray.cluster_utils.Cluster``), as a user would call it: connect, place and
  greet the agents, synchronise the clocks, run, merge, stop the agents.

For each run: the start-up (wall time of the call minus the measured phase and its drain) and the
CPU per completed request of every process this script started but the server: this process (the
driver, and a local run's engine), the Ray cluster's daemons and workers, the agents (each
process's clock read every 0.2 s and its last reading kept once it ended). Not the rest of the
machine: another user's processes would count otherwise (the machine's busy time from /proc/stat,
counted until 2026-11-29, gave a local run 326 µs per request one day and 99 the next). Ray's
idle daemons count in both ways. The table shows medians and ranges; the ratio is of the medians.

This is a benchmark, not a test: it prints a table and asserts nothing. On the 2-core development
machine (2026-11-29, 5 rounds, other users' tests beside it): 20,000 requests (about 4 s) local 94.0
us per request, ray 160.0 (1.70x, 1.69 s start-up); 100,000 requests local 90.3, ray 101.6 (1.13x).
The extra is mostly per run (two agent processes that start and import Ray, 0.45 s of CPU each,
the driver following them, the merge), so it shrinks per request as runs get longer;
docs/reference/ray.md (Cost) says what it is made of. This benchmark found the driver polling its
agents without pause (11.7 s of driver CPU in a 20 s run, the server down to a fifth of its rate;
it polls once per 0.25 s now), the agents importing the driver's modules (0.2 s of CPU each per
run) and two agents on one machine each running its CPU count of engine threads.

    python benchmarks/agents.py [--repeat 5] [--requests 20000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # the cluster stays on loopback
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pounder  # noqa: E402
from pounder.servers import GunicornServer, gunicorn_missing  # noqa: E402

APPS = Path(__file__).resolve().parents[1] / "tests" / "apps"
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "dashboard_host": "127.0.0.1"}


class _Tree:
    """The CPU time (user and system) of this process and every process started under it but the
    server's: the driver (and a local run's engine), the Ray cluster's daemons and workers, the
    agents. Each process's clock is read every :data:`EVERY_S` and its last reading kept, also
    once it ended (an agent Ray stopped is not reaped into its parent's children times): a process
    loses at most its last interval's CPU, and one living less than it is missed."""

    EVERY_S = 0.2

    def __init__(self, server_pid: int) -> None:
        self.server_pid, self.lock = server_pid, threading.Lock()
        self.seen: dict[tuple[int, float], float] = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _read(self) -> None:
        server = {self.server_pid, *(c.pid for c in psutil.Process(self.server_pid).children(recursive=True))}
        root = psutil.Process()
        readings: dict[tuple[int, float], float] = {}
        for process in [root, *root.children(recursive=True)]:
            if process.pid in server:
                continue
            try:
                times = process.cpu_times()
                readings[(process.pid, process.create_time())] = times.user + times.system
            except psutil.Error:  # ended meanwhile: its last reading stands
                continue
        with self.lock:
            self.seen.update(readings)

    def _watch(self) -> None:
        while not self.stopped.wait(self.EVERY_S):
            self._read()

    def cpu_s(self) -> float:
        """The total so far, read now."""
        self._read()
        with self.lock:
            return sum(self.seen.values())


def _round(way: str, url: str, requests: int, address: str, tree: _Tree) -> tuple[float, float]:
    """(start-up s, CPU µs per request of everything but the server) for one run."""
    spec = pounder.BenchSpec.from_options(url, requests=requests, connections=4)
    others, began = tree.cpu_s(), time.monotonic()
    if way == "local":
        result = pounder.run_bench(spec)
    else:
        result = pounder.run_bench_ray(spec, pounder.Cluster(address, agents=2))
    wall = time.monotonic() - began
    cpu_s = tree.cpu_s() - others
    return wall - result.elapsed_s, cpu_s / max(result.requests.complete, 1) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="rounds of each, interleaved (default 5)")
    ap.add_argument("--requests", type=int, default=20_000, help="requests per run (default 20000)")
    args = ap.parse_args()
    if gunicorn_missing():
        print(f"skipped: {gunicorn_missing()}", file=sys.stderr)
        return 1
    try:
        from ray.cluster_utils import Cluster
    except ImportError:
        print("skipped: Ray is not installed (pip install 'pounder[ray]')", file=sys.stderr)
        return 1
    nodes = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    server = GunicornServer(None, "wsgi_app:app", pythonpath=str(APPS), workers=4)
    try:
        nodes.add_node(**NODE)
        nodes.wait_for_nodes()
        server.start()
        url = server.url + "/"
        pounder.bench(url, requests=2000, connections=4)  # warm every worker
        runs: dict[str, list[tuple[float, float]]] = {"local": [], "ray": []}
        tree = _Tree(server.pid)
        tree.thread.start()
        for _ in range(args.repeat):
            for way in runs:
                runs[way].append(_round(way, url, args.requests, nodes.address, tree))
        tree.stopped.set()
        tree.thread.join()
    finally:
        server.stop()
        nodes.shutdown()
    print(f"{'load from':<10} {'start-up s':>24} {'CPU us per request (all but the server)':>42}")
    medians = {}
    for way, values in runs.items():
        startup, cpu = sorted(v[0] for v in values), sorted(v[1] for v in values)
        medians[way] = statistics.median(cpu)
        print(f"{way:<10} {statistics.median(startup):>10.2f} ({startup[0]:.2f}-{startup[-1]:.2f}){'':>4} "
              f"{medians[way]:>20.1f} ({cpu[0]:.1f}-{cpu[-1]:.1f})")
    print(f"ray / local CPU per request: {medians['ray'] / medians['local']:.2f}x "
          f"(medians of {args.repeat} interleaved rounds of {args.requests:,} requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
