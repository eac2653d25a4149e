"""A Ray cluster of three nodes on loopback for the ``--ray`` end-to-end tests
(``ray.cluster_utils.Cluster``, every node ``node_ip_address="127.0.0.1"``, one CPU each), and
the processes of Ray and of pounder's agents, on the whole machine or of this test process only.

    with three_nodes() as address:      # "127.0.0.1:PORT"; every node stopped on leaving
        ...

The nodes (GCS, raylets, their agents and workers: pounder's agents among them) are descendants
of the process that starts them, and stay so while their raylet lives: ``within=os.getpid()``
tells this test process's cluster from another one on the machine (another pytest worker's).
Import this module before Ray: it keeps a cluster on 127.0.0.1 on loopback (Ray would otherwise
dial the machine's outward address, ray-project/ray#59110) and sends no usage statistics.
"""

from __future__ import annotations

import csv
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "dashboard_host": "127.0.0.1"}
RAY_NAMES = ("raylet", "gcs_server", "ray::", "plasma_store", "dashboard", "runtime_env", "log_monitor", "monitor.py")


def tsv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a ``--stream`` TSV file, by column name."""
    with path.open(newline="") as file:
        return list(csv.DictReader(file, delimiter="\t"))


@contextmanager
def three_nodes() -> Iterator[str]:
    """Three Ray nodes of one CPU each on 127.0.0.1; its address. Shut down on leaving, also on failure."""
    from ray.cluster_utils import Cluster as RayCluster

    nodes = RayCluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    try:
        for _ in range(2):
            nodes.add_node(**NODE)
        nodes.wait_for_nodes()
        yield nodes.address
    finally:
        nodes.shutdown()


def _descendants(pid: int | None) -> set[int] | None:
    if pid is None:
        return None
    try:
        return {child.pid for child in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()


def ray_processes(within: int | None = None) -> list[psutil.Process]:
    """Ray's processes (but this one): on the whole machine, or only descendants of ``within``."""
    mine = _descendants(within)
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        text = proc.info["name"] + " " + " ".join(proc.info["cmdline"] or [])
        if any(name in text for name in RAY_NAMES) and proc.pid != os.getpid() and (mine is None or proc.pid in mine):
            found.append(proc)
    return found


def agents(within: int | None = None) -> list[psutil.Process]:
    """pounder's agents (``ray::Agent``): on the whole machine, or only descendants of ``within``."""
    mine = _descendants(within)
    return [proc for proc in psutil.process_iter(["name", "cmdline"])
            if "ray::Agent" in (proc.info["name"] or "") + " ".join(proc.info["cmdline"] or [])
            and (mine is None or proc.pid in mine)]  # fmt: skip


def agents_gone(timeout_s: float = 10.0, within: int | None = None) -> bool:
    """Whether every agent process (of :func:`agents`) has exited (Ray reaps a killed actor's
    process within moments)."""
    deadline = time.monotonic() + timeout_s
    while agents(within) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not agents(within)
