"""Agents on nodes that have only Ray: a cluster on loopback whose head runs in this test's Python
and whose other nodes are started by a Python with Ray and nothing of pounder
(:func:`support.raycluster.ray_only_python`). pounder sends its own files with its agents; what is
checked comes from outside: the server's own count, the nodes' Python (it cannot import pounder),
the engine each agent process has loaded (its memory map), the one line of a refusal and a server
that received nothing. None of it is timed: these share the machine (tests/e2e/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from support.raycluster import agents, agents_gone, head_node, ray_only_env, ray_only_python, worker_node

pytest.importorskip("ray")

from pounder import BenchResult, __version__  # noqa: E402
from pounder.agents._boot import build_id  # noqa: E402
from support.cliutil import PYTHON_DIR, run_pounder, start_pounder, with_pythonpath  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")  # Ray's own deprecation warnings


@pytest.fixture(scope="module")
def ray_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of the nodes: Ray, and nothing of pounder."""
    return ray_only_python(tmp_path_factory.mktemp("ray-only") / "env")


@pytest.fixture
def cluster(ray_only: Path) -> Iterator[Any]:
    """A head in this Python and two nodes started by :func:`ray_only`'s, one CPU each."""
    with head_node() as head, worker_node(ray_only, head), worker_node(ray_only, head):
        yield head


def _engines_loaded(seen: dict[int, set[str]]) -> None:
    """Each agent process of this test's cluster and the engine files it has mapped (``/proc/PID/maps``)."""
    for proc in agents(within=os.getpid()):
        try:
            maps = Path(f"/proc/{proc.pid}/maps").read_text()
        except OSError:  # it exited meanwhile
            continue
        seen.setdefault(proc.pid, set()).update(line.split(maxsplit=5)[5] for line in maps.splitlines()
                                                if line.endswith(".so") and "/_engine" in line)  # fmt: skip


def test_nodes_with_only_ray_run_the_pounder_it_sends(cluster: Any, ray_only: Path, testserver: Any,
                                                      tmp_path: Path) -> None:  # fmt: skip
    """``pounder bench --ray ADDRESS --agents 3 -n 30000``: the three agents (two of them on nodes
    whose Python has no pounder) each run the engine sent with them, and the server counts the
    30,000 requests the merged result says."""
    missing = subprocess.run([str(ray_only), "-c", "import ray, pounder"], env=ray_only_env(), capture_output=True,
                             text=True, check=False)  # fmt: skip
    assert missing.returncode == 1 and "No module named 'pounder'" in missing.stderr
    srv = testserver(mode="ok")
    out = tmp_path / "result.json"
    proc = start_pounder("bench", srv.url + "/", "--ray", cluster.address, "--agents", "3", "-n", "30000",
                         "--json", out, env=with_pythonpath(), stdin=subprocess.DEVNULL)  # fmt: skip
    seen: dict[int, set[str]] = {}
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        _engines_loaded(seen)
        time.sleep(0.2)
    stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    assert proc.returncode == 0, stderr
    assert srv.stats()["requests"] == 30_000
    result = BenchResult.from_json(out.read_text())
    assert result.requests.complete == 30_000 and result.requests.failed == 0
    assert result.agents is not None and not result.agents.partial and result.agents.nodes == 3
    assert sorted(a.complete for a in result.agents.members) == [10_000] * 3
    # every agent, the head's too, ran the files sent (the build of this checkout's pounder), each
    # node's unpacked in its own cache
    sent = f"pounder-{build_id(PYTHON_DIR / 'pounder')}"
    engines = {pid: paths for pid, paths in seen.items() if paths}
    assert {a.pid for a in result.agents.members} <= set(engines), (engines, result.agents.members)
    loaded = [engine for agent in result.agents.members for engine in engines[agent.pid]]
    assert len(loaded) == len(set(loaded)) == 3, loaded
    assert all(Path(engine).parts[-3:-1] == (sent, "pounder") for engine in loaded), loaded
    assert agents_gone(within=os.getpid())


def test_a_node_with_another_pounder_is_refused(testserver: Any, tmp_path: Path) -> None:
    """A node whose Python has a pounder of another version (and the head, in this Python):
    ``--agents 2`` (one on each node) stops before any load is sent, in one line naming both
    versions; every process of the node is gone after it."""
    other = tmp_path / "pounder"
    shutil.copytree(PYTHON_DIR / "pounder", other, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    (other / "_version.py").write_text('__version__ = "0.0.1-other"\n')
    python = ray_only_python(tmp_path / "env", packages=(other,))
    srv = testserver(mode="ok")
    with head_node() as head, worker_node(python, head) as node:
        tree = psutil.Process(node.pid).children(recursive=True)
        proc = run_pounder("bench", srv.url + "/", "--ray", head.address, "--agents", "2", "-n", "100",
                           timeout=120, env=with_pythonpath(), stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("pounder: error: agent ") and "its Python has pounder 0.0.1-other" in line, line
    assert f"this is pounder {__version__}" in line, line
    assert srv.stats()["requests"] == 0
    assert tree and not [each for each in tree if each.is_running()]
    assert agents_gone(within=os.getpid())
