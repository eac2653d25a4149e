"""The fleet and the pod (pounder.tune._fleet, pure): the servers a peak needs with one to spare,
from the confirmation's measured throughput, and a container's resources from the confirmation's
cgroup peak plus the growth allowed until a child is replaced, never above the budget."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pounder._units import MIB
from pounder.tune._fleet import Growth, cpu_quantity, fleet_size, memory_quantity, plan_fleet, pod_resources
from pounder.tune._options import make_options
from support.schemas import validate

DATA = Path(__file__).resolve().parents[1] / "data"

NO_GROWTH = Growth(leak=False, per_request=0.0, requests=0, children=4)


def _confirmation(rps: float, *, rate: float | None = 2000.0, complete: int = 3000, failed: int = 0,
                  met: bool = False, peak: int | None = None) -> dict[str, Any]:
    checks = [{"name": "failures", "ok": True, "measured": 0, "limit": 0, "text": "0 failed"}]
    if rate is not None:
        checks.append({"name": "rate", "ok": met, "measured": complete, "limit": 0,
                       "text": f"{complete:,} of the 10,000 requests scheduled answered"})
    return {"children": 4, "connections": 64, "rate": rate, "rps": rps, "complete": complete, "failed": failed,
            "checks": checks, "cgroup_peak": None if peak is None else {"peak": peak, "source": "memory.peak",
                                                                         "version": 2}}


def test_servers_for_a_peak_one_server_cannot_carry_are_ceil_of_the_ratio_plus_one() -> None:
    size = fleet_size(2000.0, "--peak-rate", _confirmation(612.4))
    assert size.needed == math.ceil(2000 / 612.4) == 4 and size.servers == 5
    assert size.confirmed_rps == 612.4 and not size.carried_peak
    assert size.text.startswith("ceil(2,000 req/s / 612 req/s) + 1 = 5 servers, one to spare, for 2,000 req/s from "
                                "--peak-rate: ")
    assert "answered 612 req/s" in size.text


def test_an_exact_multiple_needs_no_extra_server() -> None:
    size = fleet_size(1200.0, "--peak-rate", _confirmation(600.0, rate=1200.0))
    assert (size.needed, size.servers) == (2, 3)


def test_the_printed_rate_never_hides_what_decides_the_ceiling() -> None:
    # 1,000 / 499.6 = 2.0016: three servers; 1,000 / 500 would say two
    size = fleet_size(1000.0, "--peak-rate", _confirmation(499.6, rate=1000.0))
    assert size.needed == 3
    assert size.text.startswith("ceil(1,000 req/s / 499.6 req/s) + 1 = 4 servers")


def test_a_server_that_carried_the_peak_is_one_server_and_one_to_spare() -> None:
    # open loop at the peak: the answered rate is a little under the offered one (the last answers'
    # latency counts in the elapsed time), not a reason for a second server
    size = fleet_size(200.0, "the access log's busiest second", _confirmation(199.4, rate=200.0, met=True))
    assert (size.needed, size.servers, size.confirmed_rps, size.carried_peak) == (1, 2, 200.0, True)
    assert size.text.startswith("ceil(200 req/s / 200 req/s) + 1 = 2 servers")
    assert "answered the whole peak in the confirmation (3,000 of 3,000 requests scheduled)" in size.text


@pytest.mark.parametrize(("confirmation", "why"), [
    (None, "the confirmation did not run (--no-confirm)"),
    (_confirmation(0.0, complete=0, failed=10), "answered no request"),
    (_confirmation(300.0, complete=900, failed=100), "100 of the confirmation's 1,000 requests failed"),
    (_confirmation(300.0, rate=None), "not at the rate"),
])
def test_no_fleet_figure_says_why(confirmation: dict[str, Any] | None, why: str) -> None:
    size = fleet_size(2000.0, "--peak-rate", confirmation)
    assert size.servers is None and size.needed is None and size.confirmed_rps is None
    assert size.text.startswith("no fleet figure: ") and why in size.text, size.text


def test_kubernetes_quantities() -> None:
    assert [cpu_quantity(c) for c in (1.0, 1.5, 0.25, 2.0, 0.1)] == ["1", "1500m", "250m", "2", "100m"]
    assert memory_quantity(612 * MIB) == "612Mi" and memory_quantity(612 * MIB + 1) == str(612 * MIB + 1)


def _parsed(block: str) -> dict[str, Any]:
    parsed = yaml.safe_load(block)
    assert isinstance(parsed, dict) and set(parsed) == {"resources"}
    return parsed["resources"]  # type: ignore[no-any-return]


def test_the_memory_limit_is_the_peak_rounded_up_to_mib_without_a_leak() -> None:
    peak = 300 * MIB + 12345
    pod = pod_resources(1.5, "the CPU quota", 512 * MIB, {"peak": peak, "source": "memory.peak"}, NO_GROWTH)
    resources = _parsed(pod.yaml)
    assert resources == {"requests": {"cpu": "1500m", "memory": "301Mi"}, "limits": {"cpu": "1500m", "memory": "301Mi"}}
    assert pod.memory_limit == pod.memory_request == 301 * MIB and pod.growth == 0
    assert peak <= pod.memory_limit <= 512 * MIB
    assert pod.docker == "docker run --cpus 1.5 --memory 301m"
    assert any("no leak measured" in note for note in pod.notes)


def test_the_memory_starts_from_the_larger_of_the_cgroup_peak_and_the_sum_of_pss() -> None:
    # a cgroup that has the interpreter's file pages charged elsewhere reads less than the sum of PSS
    pod = pod_resources(1.0, "1 CPU", 256 * MIB, {"peak": 32 * MIB, "source": "memory.max_usage_in_bytes"},
                        NO_GROWTH, footprint=38 * MIB + 5)
    assert pod.memory_request == pod.memory_limit == 39 * MIB and pod.footprint == 38 * MIB + 5
    assert "the larger of the most the server's memory cgroup was charged during the confirmation, 32.0 MiB" in \
        pod.notes[-1] and "sum of PSS), 38.0 MiB" in pod.notes[-1]
    higher = pod_resources(1.0, "1 CPU", 256 * MIB, {"peak": 40 * MIB, "source": "memory.peak"}, NO_GROWTH,
                           footprint=38 * MIB)
    assert higher.memory_limit == 40 * MIB


def test_a_leak_adds_its_growth_until_the_children_are_replaced() -> None:
    # 4 children x 16 KiB per request x 1,000 requests = 62.5 MiB on top of the peak
    growth = Growth(leak=True, per_request=16384.0, requests=1000, children=4)
    pod = pod_resources(1.0, "the CPU quota", 1024 * MIB, {"peak": 200 * MIB, "source": "memory.peak"}, growth)
    assert pod.growth == 4 * 16384 * 1000
    assert pod.memory_request == 200 * MIB
    assert pod.memory_limit == math.ceil((200 * MIB + 4 * 16384 * 1000) / MIB) * MIB == 263 * MIB
    resources = _parsed(pod.yaml)
    assert resources["limits"] == {"cpu": "1", "memory": "263Mi"} and resources["requests"]["memory"] == "200Mi"
    assert "16,384 bytes per request x (4 x 1,000 requests (MaxRequestsPerChild)) = 62.5 MiB" in pod.notes[-1]


def test_the_growth_already_in_the_peak_is_not_added_again() -> None:
    # the confirmation served 1,000 of the 4 x 1,000 requests before the peak was read: their
    # 16 KiB each are in the 200 MiB, so 3,000 requests' growth remain (46.9 MiB)
    growth = Growth(leak=True, per_request=16384.0, requests=1000, children=4, served=1000)
    pod = pod_resources(1.0, "the CPU quota", 1024 * MIB, {"peak": 200 * MIB, "source": "memory.peak"}, growth)
    assert pod.growth == 16384 * 3000
    assert pod.memory_limit == math.ceil((200 * MIB + 16384 * 3000) / MIB) * MIB
    assert "x (4 x 1,000 requests (MaxRequestsPerChild) - 1,000 served in the confirmation, grown already)" \
        in pod.notes[-1]
    # children already replaced: nothing left to add beyond the peak
    done = Growth(leak=True, per_request=16384.0, requests=1000, children=4, served=9000)
    assert pod_resources(1.0, "1 CPU", 1024 * MIB, {"peak": 200 * MIB, "source": "memory.peak"}, done).growth == 0


def test_no_limit_above_the_budget() -> None:
    growth = Growth(leak=True, per_request=102400.0, requests=5000, children=4)  # 1.9 GiB of growth
    pod = pod_resources(2.0, "2 CPUs", 1024 * MIB, {"peak": 300 * MIB, "source": "memory.peak"}, growth)
    assert pod.memory_limit is None and pod.memory_request == 300 * MIB
    resources = _parsed(pod.yaml)
    assert "memory" not in resources["limits"] and resources["requests"]["memory"] == "300Mi"
    assert "--memory" not in pod.docker
    assert pod.notes[-1].startswith("memory request 300Mi; no memory limit within the budget: ")
    assert pod.notes[-1].endswith("2253.1 MiB in all, more than the RAM budget of 1024.0 MiB")
    # a peak above the budget is not requested either
    over = pod_resources(2.0, "2 CPUs", 256 * MIB, {"peak": 300 * MIB, "source": "memory.peak"}, NO_GROWTH)
    assert over.memory_request is None and over.memory_limit is None
    assert "memory" not in _parsed(over.yaml)["requests"]


def test_a_leak_never_replaced_has_no_limit() -> None:
    growth = Growth(leak=True, per_request=102400.0, requests=0, children=4, who="--max-requests")
    pod = pod_resources(1.0, "1 CPU", 1024 * MIB, {"peak": 100 * MIB, "source": "memory.peak"}, growth)
    assert pod.memory_limit is None and "never replaced (set --max-requests)" in pod.notes[-1]


def test_no_cgroup_peak_no_memory_figure() -> None:
    pod = pod_resources(1.0, "1 CPU", 1024 * MIB, {"peak": None, "source": "no memory cgroup: not root"}, NO_GROWTH)
    assert pod.memory_limit is None and pod.memory_request is None
    assert "not root" in pod.notes[-1]
    assert _parsed(pod.yaml) == {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}
    unconfirmed = pod_resources(1.0, "1 CPU", 1024 * MIB, None, NO_GROWTH, confirmed=False)
    assert unconfirmed.memory_limit is None and "--no-confirm" in unconfirmed.notes[-1]


def _measure() -> dict[str, Any]:
    return {"growth_first": 0.0, "growth_second": 0.0, "requests_second": 1000, "end": {}, "warm": {}}


def test_plan_fleet_needs_a_rate_for_the_fleet_and_a_pod_for_the_resources() -> None:
    from pounder.tune._memory import MemoryBound
    memory = MemoryBound(ram=512 * MIB, ram_source="given", shared=0, child_uss=MIB, child_rss=MIB, max_clients=8,
                         max_clients_no_sharing=8, parent_uss=0)
    confirmation = _confirmation(150.0, rate=600.0, peak=100 * MIB)
    bare = plan_fleet(make_options(), confirmation, _measure(), memory, 4, 0, 0, 2, "--max-requests")
    assert bare.size is None and bare.pod is None
    fleet = plan_fleet(make_options(peak_rate="600/s", ram="512M"), confirmation, _measure(), memory, 4, 0, 0, 2,
                       "--max-requests")
    assert fleet.size is not None and fleet.size.servers == 5
    assert fleet.pod is not None and fleet.pod.cpu == "2" and fleet.pod.memory_limit == 100 * MIB
    assert fleet.pod.cpus_source == "no --cpus: the 2 CPUs the server ran on"
    assert fleet.to_dict()["size"]["servers"] == 5 and fleet.to_dict()["pod"]["memory_limit"] == 100 * MIB


def _recorded_result_with(fleet: dict[str, Any], peak: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((DATA / "tune-demo" / "recommendation.json").read_text())
    result["fleet"] = fleet
    result["confirmation"]["cgroup_peak"] = peak
    return result


def test_the_fleet_and_the_cgroup_peak_follow_the_schemas() -> None:
    from pounder.tune._memory import MemoryBound
    memory = MemoryBound(ram=512 * MIB, ram_source="given", shared=0, child_uss=MIB, child_rss=MIB, max_clients=8,
                         max_clients_no_sharing=8, parent_uss=0)
    peak = {"peak": 100 * MIB, "source": "memory.max_usage_in_bytes (cgroup v1), reset at the load's start",
            "version": 1}
    confirmation = {**_confirmation(150.0, rate=600.0), "cgroup_peak": peak}
    for options in (make_options(ram="512M"), make_options(peak_rate="600/s"),
                    make_options(peak_rate="600/s", ram="512M")):
        fleet = plan_fleet(options, confirmation, _measure(), memory, 4, 0, 0, 2, "--max-requests").to_dict()
        validate(_recorded_result_with(fleet, peak), "tune-result")
    none = plan_fleet(make_options(peak_rate="600/s", ram="512M"), None, _measure(), memory, 4, 0, 0, 2, "x")
    validate(_recorded_result_with(none.to_dict(), {"peak": None, "source": "no cgroup", "version": None}),
             "tune-result")
    point: dict[str, Any] = json.loads((DATA / "tune-demo" / "points" / "confirm.json").read_text())
    point["summary"]["cgroup_peak"] = peak
    validate(point, "tune-point")
    for broken in ({**fleet, "size": {**fleet["size"], "servers": 1}}, {**fleet, "extra": 1},
                   {**fleet, "pod": {**fleet["pod"], "cpu": 2}}):
        with pytest.raises(jsonschema.ValidationError):
            validate(_recorded_result_with(broken, peak), "tune-result")
    point["summary"]["cgroup_peak"] = {"peak": -1, "source": "", "version": 1}
    with pytest.raises(jsonschema.ValidationError):
        validate(point, "tune-point")


def test_with_a_cpu_quota_the_pod_asks_for_the_quota_measured_with() -> None:
    from pounder.tune._memory import MemoryBound
    memory = MemoryBound(ram=512 * MIB, ram_source="given", shared=0, child_uss=MIB, child_rss=MIB, max_clients=8,
                         max_clients_no_sharing=8, parent_uss=0)
    confirmation = _confirmation(150.0, rate=600.0, peak=100 * MIB)
    fleet = plan_fleet(make_options(cpus="1.5"), confirmation, _measure(), memory, 4, 0, 0, 2, "--max-requests")
    assert fleet.size is None and fleet.pod is not None  # a pod with --cpus alone, its memory within the budget
    assert fleet.pod.cpu == "1500m" and fleet.pod.cpus == 1.5
    assert fleet.pod.cpus_source == "the CPU quota the server was measured with (--cpus 1.5)"
    assert _parsed(fleet.pod.yaml)["limits"] == {"cpu": "1500m", "memory": "100Mi"}
    assert fleet.pod.docker == "docker run --cpus 1.5 --memory 100m"
