"""The fleet and the pod decided again from real runs (tests/data, recorded by tests/data/record.py;
no server started): the servers a peak needs from the confirmation's measured throughput, and the
container's resources from its cgroup peak (pounder.tune._fleet).

What is checked against what (as the live run of tests/e2e checked it before it moved here): the
confirmed rate against the app's known capacity (a sync worker waiting 30 ms serves at most 33
req/s); the servers printed against ceil(peak / the confirmation's rps) + 1 recomputed from the
printed figures and from recommendation.json; the Kubernetes block, parsed as YAML from the text as
printed, against the confirmation's cgroup peak and its sum of PSS (smaps_rollup: a measurement
independent of the cgroup's) and the budget. The live path (the cgroup peak read during a real
confirmation, the block printed): tests/e2e/test_tune_pod.py."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from support.recorded import decided_again
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

MIB = 1024 * 1024
WAIT_S = 0.030  # tune-fleet's app: /sleep?ms=30
PEAK = 150.0  # tune-fleet's --peak-rate


def _quantity(text: str) -> int:
    match = re.fullmatch(r"(\d+)(Mi)?", text)
    assert match, text
    return int(match.group(1)) * (MIB if match.group(2) else 1)


def _printed_block(text: str) -> dict[str, Any]:
    """The Kubernetes block as printed under "Container resources (Kubernetes)", parsed as YAML."""
    block = []
    for line in text.split("\nContainer resources (Kubernetes)\n", 1)[1].splitlines():
        if not line.strip():
            break
        block.append(line[2:])
    parsed = yaml.safe_load("\n".join(block))
    assert isinstance(parsed, dict) and set(parsed) == {"resources"}, block
    return parsed["resources"]  # type: ignore[no-any-return]


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
    # one server cannot carry the peak (its rate check is not met): the fleet carries it, not an error
    assert not next(c for c in confirmation["checks"] if c["name"] == "rate")["ok"]
    # the confirmed rate is what the confirmation answered, within what the app can serve
    rps, children = float(confirmation["rps"]), int(confirmation["children"])
    assert children <= 2  # --max-children 2
    assert 0.6 * children / WAIT_S <= rps <= children / WAIT_S * 1.02, (rps, children)
    assert size["confirmed_rps"] == rps and size["peak_rate"] == PEAK and not size["carried_peak"]
    assert size["servers"] == math.ceil(PEAK / rps) + 1 == size["needed"] + 1
    assert f"\nFleet\n  ceil(150 req/s / {rps:,.0f} req/s) + 1 = {size['servers']} servers, one to spare" in text
    # the arithmetic as printed, recomputed from its own figures
    match = re.match(r"\s+ceil\(([\d,.]+) req/s / ([\d,.]+) req/s\) \+ 1 = (\d+) servers",
                     text.split("\nFleet\n", 1)[1])
    assert match, text
    peak, confirmed, servers = (float(match.group(1).replace(",", "")), float(match.group(2).replace(",", "")),
                                int(match.group(3)))
    assert peak == PEAK and abs(confirmed - rps) <= 0.5 and servers == size["servers"]
    assert servers == math.ceil(peak / confirmed) + 1
    # the pod (--ram 256M, no --cpus): the block parses, and its memory lies between what was
    # measured (the cgroup's peak, the sum of PSS: within 2x of each other) and the budget
    pod = data["fleet"]["pod"]
    peak_read = confirmation["cgroup_peak"]
    assert peak_read["peak"] is not None and pod["peak"] == peak_read["peak"], peak_read
    footprint = int(confirmation["footprint"])  # sum of PSS (smaps_rollup) after the load
    assert pod["footprint"] == footprint and 0.5 <= peak_read["peak"] / footprint <= 2.0, (peak_read, footprint)
    resources = _printed_block(text)
    assert resources == yaml.safe_load(pod["yaml"])["resources"]
    limit, request = _quantity(resources["limits"]["memory"]), _quantity(resources["requests"]["memory"])
    assert max(peak_read["peak"], footprint) <= request <= limit <= data["memory"]["ram"] == pod["budget"] == 256 * MIB
    assert limit - max(peak_read["peak"], footprint) < MIB  # no leak: no growth, rounded up to MiB only
    assert resources["limits"]["cpu"] == resources["requests"]["cpu"] == pod["cpu"] == str(data["cores"])
    assert pod["docker"] in text and f"docker run --cpus {pod['cpu']} --memory {limit // MIB}m" in text


def test_a_pods_container_has_the_cpu_quota_it_was_measured_with(tmp_path: Path) -> None:
    """tune-pod (--cpus 1 --ram 512M): the container's CPU is the quota the server was measured
    with, and so is docker's --cpus; its memory within the measured figures and the budget."""
    data, text = _decided("tune-pod", tmp_path)
    pod, confirmation = data["fleet"]["pod"], data["confirmation"]
    resources = _printed_block(text)
    assert resources["limits"]["cpu"] == resources["requests"]["cpu"] == pod["cpu"] == "1"
    assert pod["cpus_source"] == "the CPU quota the server was measured with (--cpus 1)"
    limit = _quantity(resources["limits"]["memory"])
    peak = confirmation["cgroup_peak"]["peak"]
    assert peak is not None and 0.5 <= peak / int(confirmation["footprint"]) <= 2.0, (peak, confirmation["footprint"])
    assert max(peak, int(confirmation["footprint"])) <= _quantity(resources["requests"]["memory"]) <= limit
    assert limit <= pod["budget"] == 512 * MIB
    assert f"docker run --cpus 1 --memory {limit // MIB}m" in text

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
