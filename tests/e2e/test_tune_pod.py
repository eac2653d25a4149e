"""The pod, emulated, through ``pounder tune`` itself (issue 38): the demo app (gunicorn, ~4 ms of
CPU per request) tuned with ``--cpus 1 --ram 512M``, kept short (1 s points, at most 2 children,
MaxRequestsPerChild unlimited only), with its confirmation.

Independently of pounder, this test reads the CPU usage of the cgroups pounder makes for the
server (``pounder-PID-N`` under this process's own cgroup: v1 ``cpuacct.usage``, v2 ``cpu.stat``
``usage_usec``) every 5 ms while the run measures. For every stored load (each trial of the
sweeps, the confirmation): the server's CPU over the load's window, from the test's own readings,
equals the ``pod_cores`` pounder stored (0.03 cores: the test's readings are 5 ms apart) and is at
most the quota as CFS enforces it: 1 CPU x (1.02 + 0.1 s / the window), since a cgroup may use a
whole period's quota (100 ms) in the part of a period a window holds (measured: 1.04 cores over a
1.05 s load that began after an idle gap); so at most 1.04 over the 5 s confirmation, at most 1.12
over a 1 s trial. The throttled share is stored and the text prints the pod line; the
recommendation's reasons say it is sized for 1 CPU. The container's resources the run prints
(the fleet's live path): the confirmation read the server's memory cgroup peak, within 2x of the
pool's sum of PSS, and the block asks for the quota. The decisions of the pod
and the fleet: on the recorded runs tune-pod and tune-fleet (tests/tune/test_recorded_pod.py,
tests/tune/test_recorded_fleet.py). Skipped (with the reason) when no cpu cgroup can be made here.
"""

from __future__ import annotations

import bisect
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pounder.servers import gunicorn_missing, pod_unavailable
from support.cliutil import start_pounder, with_pythonpath
from support.schemas import validate_results_dir

ROOT = Path(__file__).resolve().parents[2]
RUN_LIMIT_S = 150


def _why_skip() -> str:
    if os.geteuid() != 0:
        return "not root: pounder makes no cpu cgroup"
    return gunicorn_missing() or pod_unavailable()


WHY = _why_skip()
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY)


def _usage_dirs() -> list[tuple[Path, str]]:
    """Where this process's cgroups are, for each hierarchy that counts CPU usage: (directory, file)."""
    mounts: dict[str, Path] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        head, _, tail = line.partition(" - ")
        fstype, _, options = tail.split()[:3]
        point = Path(head.split()[4])
        if fstype == "cgroup2":
            mounts.setdefault("", point)
        elif fstype == "cgroup" and "cpuacct" in options.split(","):
            mounts.setdefault("cpuacct", point)
    found = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller, name in (("cpuacct", "cpuacct.usage"), ("", "cpu.stat")):
            if controller in (controllers.split(",") if controllers else [""]) and controller in mounts:
                found.append((mounts[controller] / path.lstrip("/"), name))
    return found


class _Watch(threading.Thread):
    """Every 5 ms, the CPU usage (ns) of each cgroup ``pounder-OWNER-N`` with a usage file, with
    ``time.monotonic()`` right after the read."""

    def __init__(self, owner: int) -> None:
        super().__init__(daemon=True)
        self.owner = owner
        self.series: dict[Path, list[tuple[float, int]]] = {}
        self.done = threading.Event()

    def _read(self, path: Path, name: str) -> int | None:
        try:
            text = (path / name).read_text()
        except OSError:
            return None
        if name == "cpuacct.usage":
            return int(text)
        stat = dict(line.split() for line in text.splitlines())
        return int(stat["usage_usec"]) * 1000 if "usage_usec" in stat else None

    def run(self) -> None:
        places = _usage_dirs()
        while not self.done.is_set():
            for parent, name in places:
                for path in parent.glob(f"pounder-{self.owner}-*"):
                    value = self._read(path, name)
                    if value is not None:
                        self.series.setdefault(path, []).append((time.monotonic(), value))
            time.sleep(0.005)

    def cpu_s(self, start: float, end: float) -> float | None:
        """The CPU seconds of the one cgroup whose readings span [start, end], interpolated."""
        for series in self.series.values():
            if series and series[0][0] <= start and series[-1][0] >= end:
                return (_at(series, end) - _at(series, start)) / 1e9
        return None


def _at(series: list[tuple[float, int]], moment: float) -> float:
    """The usage at ``moment``, interpolated between the readings around it."""
    i = bisect.bisect_left([t for t, _ in series], moment)
    (t0, v0), (t1, v1) = series[max(i - 1, 0)], series[min(i, len(series) - 1)]
    return float(v0) if t1 == t0 else v0 + (v1 - v0) * (moment - t0) / (t1 - t0)


def test_the_demo_in_a_one_cpu_pod(tmp_path: Path) -> None:
    results = tmp_path / "run"
    proc = start_pounder("tune", "--demo", "--cpus", "1", "--ram", "512M", "--quick",
                         "--point-duration", "1s", "--max-children", "2", "--mrpc", "0",
                         "--results", results,
                         cwd=tmp_path, env=with_pythonpath())
    watch = _Watch(proc.pid)
    watch.start()
    try:
        out, err = proc.communicate(timeout=RUN_LIMIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        watch.done.set()
        watch.join()
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    validate_results_dir(results)
    loads = []
    for path in sorted((results / "points").glob("*.json")):
        point: dict[str, Any] = json.loads(path.read_text())
        if point["step"] != "sizes":
            loads.append((path.stem, point["summary"]))
    assert any(key.startswith("children-") for key, _ in loads) and any(key == "confirm" for key, _ in loads)
    for key, summary in loads:
        assert summary["pod_quota"] == 1.0 and summary["pod_cgroup"].endswith(" 100000/100000"), key
        start, end = summary["pod_window"]
        ours = watch.cpu_s(start, end)
        assert ours is not None, f"{key}: the test read no cgroup over the load's window"
        cores = ours / (end - start)
        assert cores <= 1.02 + 0.1 / (end - start), (key, cores, end - start)
        assert abs(cores - summary["pod_cores"]) <= 0.03, (key, cores, summary["pod_cores"])
        assert 0 <= summary["throttled_share"] <= 1 and summary["throttled_s"] >= 0, key
        assert summary["oom_kills"] == 0, key
    busiest = max(summary["pod_cores"] for _, summary in loads)
    assert busiest > 0.8, busiest  # the demo's CPU-bound load does reach the quota
    recommendation = json.loads((results / "recommendation.json").read_text())
    assert recommendation["cores"] == 1.0
    assert any(line.startswith("sized for the pod's 1 CPU (--cpus") for line in recommendation["advice"]), \
        recommendation["advice"]
    header = out.split("\n\n", 1)[0]
    assert "pod: quota of 1 CPU (cgroup v" in header and "memory limit 512 MiB; throttled in " in header, header
    assert "--cpus 1" in header
    # the container's resources: the confirmation's cgroup peak and sum of PSS, the quota as the CPU
    confirmation = recommendation["confirmation"]
    peak, footprint = confirmation["cgroup_peak"]["peak"], int(confirmation["footprint"])
    assert peak is not None and 0.5 <= peak / footprint <= 2.0, (confirmation["cgroup_peak"], footprint)
    pod = recommendation["fleet"]["pod"]
    assert pod["peak"] == peak and pod["cpu"] == "1" and pod["budget"] == 512 * 1024 * 1024, pod
    block = out.split("\nContainer resources (Kubernetes)\n", 1)[1]
    assert 'cpu: "1"' in block and f"docker run --cpus 1 --memory {pod['memory_limit'] // (1024 * 1024)}m" in block
