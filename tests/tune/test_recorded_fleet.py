"""The fleet and the pod decided again from real runs (tests/data, recorded by tests/data/record.py;
no server started): the servers a peak needs from the confirmation's measured throughput, and the
container's resources from its cgroup peak (pounder.tune._fleet)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from support.recorded import decided_again
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

MIB = 1024 * 1024


def _decided(name: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    data, text = decided_again(name, tmp_path)
    validate_results_dir(tmp_path / name)
    check_consistent(text, data)
    return data, text


def test_a_peak_beyond_one_server_needs_ceil_of_the_ratio_plus_one(tmp_path: Path) -> None:
    """tune-fleet: 150 req/s offered to a server of 2 workers of an app that waits 30 ms per request
    (at most 67 req/s): it cannot carry the peak, and the fleet is ceil(150 / what it answered) + 1."""
    data, text = _decided("tune-fleet", tmp_path)
    confirmation, size = data["confirmation"], data["fleet"]["size"]
    assert not next(c for c in confirmation["checks"] if c["name"] == "rate")["ok"]
    rps = float(confirmation["rps"])
    assert rps <= int(confirmation["children"]) / 0.030 * 1.02
    assert size["confirmed_rps"] == rps and not size["carried_peak"]
    assert size["servers"] == math.ceil(150 / rps) + 1 == size["needed"] + 1
    assert f"\nFleet\n  ceil(150 req/s / {rps:,.0f} req/s) + 1 = {size['servers']} servers, one to spare" in text
    # the pod (--ram 256M, no --cpus): memory from the cgroup's peak or the sum of PSS, never above the budget
    pod = data["fleet"]["pod"]
    peak = confirmation["cgroup_peak"]
    assert peak["peak"] is not None and pod["peak"] == peak["peak"] and pod["footprint"] == confirmation["footprint"]
    resources = yaml.safe_load(pod["yaml"])["resources"]
    limit = int(resources["limits"]["memory"].removesuffix("Mi")) * MIB
    assert max(peak["peak"], confirmation["footprint"]) <= limit <= data["memory"]["ram"] == 256 * MIB
    assert resources["limits"]["cpu"] == str(data["cores"])
    assert pod["yaml"] in text.replace("\n  ", "\n") and pod["docker"] in text


def test_a_server_that_carried_the_peak_is_one_and_one_to_spare(tmp_path: Path) -> None:
    """tune-accesslog: the access log's busiest second (200 requests) answered by one server in the
    confirmation; recorded before the cgroup peak was read: no memory figure, said so."""
    data, text = _decided("tune-accesslog", tmp_path)
    size, pod = data["fleet"]["size"], data["fleet"]["pod"]
    assert size["carried_peak"] and (size["needed"], size["servers"], size["confirmed_rps"]) == (1, 2, 200.0)
    assert size["text"].startswith("ceil(200 req/s / 200 req/s) + 1 = 2 servers, one to spare, for 200 req/s from "
                                   "the access log's busiest second")
    assert pod["memory_limit"] is None and "memory" not in yaml.safe_load(pod["yaml"])["resources"]["limits"]
    assert "no memory figure: the confirmation read no peak of the server's memory cgroup" in pod["notes"][-1]
    assert "\nContainer resources (Kubernetes)\n" in text


def test_a_run_without_a_target_rate_or_a_pod_has_neither(tmp_path: Path) -> None:
    data, text = _decided("tune-cpu", tmp_path)  # no target, no --ram
    assert data["fleet"] == {"size": None, "pod": None}
    assert "\nFleet\n" not in text and "Container resources" not in text
