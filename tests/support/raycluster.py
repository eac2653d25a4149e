"""A Ray cluster of three nodes on loopback for the ``--ray`` end-to-end tests
(``ray.cluster_utils.Cluster``, every node ``node_ip_address="127.0.0.1"``, one CPU each), and
the processes of Ray and of pounder's agents, on the whole machine or of this test process only.

    with three_nodes() as address:      # "127.0.0.1:PORT"; every node stopped on leaving
        ...
    python = ray_only_python(tmp / "env")  # a Python with Ray and nothing of pounder
    with head_node() as nodes, worker_node(python, nodes) as node:  # a node started by that Python
        ...

The nodes (GCS, raylets, their agents and workers: pounder's agents among them) are descendants
of the process that starts them, and stay so while their raylet lives: ``within=os.getpid()``
tells this test process's cluster from another one on the machine (another pytest worker's).
Import this module before Ray: it keeps a cluster on 127.0.0.1 on loopback (Ray would otherwise
dial the machine's outward address, ray-project/ray#59110) and sends no usage statistics.
"""

from __future__ import annotations

import csv
import importlib.metadata
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


@contextmanager
def head_node() -> Iterator[Any]:
    """One Ray node of one CPU on 127.0.0.1 (``ray.cluster_utils.Cluster``: its ``address``), in this
    process's Python; more join it with :func:`worker_node`. Shut down on leaving."""
    from ray.cluster_utils import Cluster as RayCluster

    nodes = RayCluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    try:
        yield nodes
    finally:
        nodes.shutdown()


def _ray_distributions() -> list[importlib.metadata.Distribution]:
    """Ray's distribution and those it needs (its requirements without extras, and theirs)."""
    from packaging.requirements import Requirement  # Ray's own dependency

    found: dict[str, importlib.metadata.Distribution] = {}
    wanted = ["ray"]
    while wanted:
        name = wanted.pop()
        if name.lower().replace("_", "-") in found:
            continue
        found[name.lower().replace("_", "-")] = distribution = importlib.metadata.distribution(name)
        for line in distribution.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                wanted.append(requirement.name)
    return list(found.values())


def ray_only_python(directory: Path, packages: tuple[Path, ...] = ()) -> Path:
    """A Python environment at ``directory`` (``python -m venv``, without pip) that has Ray and what
    Ray needs, and nothing else (no pounder, none of pounder's own dependencies), plus the package
    directories ``packages`` (copied); its ``python``. Ray and its packages are this Python's,
    linked: the same versions on every node, as a cluster needs, in 0.2 s (``pip install ray``
    would fetch Ray from the package index on every run: pip's cache here holds no Ray)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(directory), "platbase": str(directory)}))
    for distribution in _ray_distributions():
        for top in {file.parts[0] for file in distribution.files or [] if file.parts[0] not in ("..", "__pycache__")}:
            source = Path(str(distribution.locate_file(top)))
            if source.exists() and not (purelib / top).exists():
                (purelib / top).symlink_to(source)
    for package in packages:
        shutil.copytree(package, purelib / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    return directory / "bin" / "python"


def ray_only_env(cache: Path | None = None) -> dict[str, str]:
    """This environment without what would let a node's Python import pounder (PYTHONPATH), Ray kept
    on loopback as in this process; with ``cache``, the node's own cache directory (XDG_CACHE_HOME:
    where its agents unpack the pounder sent to them, as on a machine of its own)."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
            **({} if cache is None else {"XDG_CACHE_HOME": str(cache)})}  # fmt: skip


_NODE_SCRIPT = """
import sys
import ray._private.node, ray._private.parameter
params = ray._private.parameter.RayParams(
    num_cpus=1, num_gpus=0, object_store_memory=80 << 20, min_worker_port=0, max_worker_port=0,
    node_ip_address="127.0.0.1", dashboard_host="127.0.0.1", gcs_address=sys.argv[1], redis_address=sys.argv[1],
    include_log_monitor=False, node_manager_port=0)
params.dashboard_agent_listen_port = None
node = ray._private.node.Node(params, head=False, shutdown_at_exit=True, spawn_reaper=True)
sys.stdin.read()
node.kill_all_processes(check_alive=False, allow_graceful=True)
"""
"""A node joining the cluster at ``argv[1]`` as ``ray.cluster_utils`` adds one, until its stdin
closes. Not ``ray start --address``: it refuses to start a node with Ray kept on loopback (the
variable above), and without it, it replaces 127.0.0.1 with the machine's outward address."""


@contextmanager
def worker_node(python: Path, head: Any, timeout_s: float = 60.0) -> Iterator[subprocess.Popen[bytes]]:
    """One more node of one CPU on 127.0.0.1 in the cluster of ``head`` (:func:`head_node`), started
    by ``python`` (:data:`_NODE_SCRIPT`, its processes in a group of their own) with a directory and a
    cache of its own; there once the cluster counts it. Every process of it stopped on leaving."""
    before = len(head.global_state._live_node_ids())
    cache = Path(tempfile.mkdtemp(prefix="node-cache-", dir=python.parent.parent))
    proc = subprocess.Popen([str(python), "-c", _NODE_SCRIPT, head.address], cwd=python.parent, env=ray_only_env(cache),
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + timeout_s
        while len(head.global_state._live_node_ids()) <= before:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the node started by {python} did not join the cluster (status {proc.poll()})")
            time.sleep(0.1)
        yield proc
    finally:
        _stop_tree(proc)


def _stop_tree(proc: subprocess.Popen[bytes]) -> None:
    """Close the node's stdin (it stops its processes), then SIGKILL to whatever of them is left: its
    process group and every descendant (a Ray worker leads a group of its own)."""
    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.Error:
        tree = []
    try:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # the group is gone
        pass
    for each in tree:
        try:
            each.kill()
        except psutil.Error:
            pass
    proc.wait()
    psutil.wait_procs(tree, timeout=5)


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
