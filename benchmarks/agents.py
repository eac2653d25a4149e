"""What sending the load from Ray agents costs, next to a run from this process.

A gunicorn (4 sync workers, the bundled test app) serves ``/`` while the same closed-loop load
(``-n`` requests over 4 connections) is sent two ways, interleaved, ``--repeat`` rounds of each:

* ``local``: :func:`pounder.run_bench` in this process;
* ``ray``: :func:`pounder.run_bench_ray` with 2 agents on a 2-node Ray cluster that this script
  starts on loopback (``ray.cluster_utils.Cluster``), as a user would call it: connect, place and
  greet the agents, synchronise the clocks, run, merge, stop the agents.

For each run: the start-up (wall time of the call minus the measured phase and its drain) and the
CPU per completed request of everything on the machine but the server (the machine's busy time
from /proc/stat, less the server's processes' own clocks): the engine, the driver, the agents and
Ray's daemons. The table shows medians and ranges; the ratio is of the medians.

This is a benchmark, not a test: it prints a table and asserts nothing. On the 2-core development
machine (2026-11-23, 5 rounds of 20,000 requests, about 4 s each): local 0.00 s start-up and
119 us per request (108-137); ray 1.86 s start-up (1.66-2.64) and 246 us per request (210-282),
2.06x. The extra is mostly per run (two agent processes that start and import Ray and pounder, the
clock rounds, the merge), so it shrinks per request as runs get longer. This benchmark found the
driver polling its agents without pause (11.7 s of driver CPU in a 20 s run, the server down to
a fifth of its rate); the driver now polls once per 0.25 s.

    python benchmarks/agents.py [--repeat 5] [--requests 20000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import psutil

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # the cluster stays on loopback
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pounder  # noqa: E402
from pounder.servers import GunicornServer, gunicorn_missing  # noqa: E402

APPS = Path(__file__).resolve().parents[1] / "tests" / "apps"
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "dashboard_host": "127.0.0.1"}


def _busy_s() -> float:
    """CPU time the whole machine spent busy (all CPUs), seconds."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _server_s(pid: int) -> float:
    root = psutil.Process(pid)
    return sum(sum(p.cpu_times()[:2]) for p in [root, *root.children(recursive=True)])


def _round(way: str, url: str, requests: int, address: str, server_pid: int) -> tuple[float, float]:
    """(start-up s, CPU µs per request of everything but the server) for one run."""
    spec = pounder.BenchSpec.from_options(url, requests=requests, connections=4)
    busy, server, began = _busy_s(), _server_s(server_pid), time.monotonic()
    if way == "local":
        result = pounder.run_bench(spec)
    else:
        result = pounder.run_bench_ray(spec, pounder.Cluster(address, agents=2))
    wall = time.monotonic() - began
    others = (_busy_s() - busy) - (_server_s(server_pid) - server)
    return wall - result.elapsed_s, others / max(result.requests.complete, 1) * 1e6


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
        for _ in range(args.repeat):
            for way in runs:
                runs[way].append(_round(way, url, args.requests, nodes.address, server.pid))
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
