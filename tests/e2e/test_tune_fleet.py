"""``pounder tune`` for a fleet (issue 38): with ``--peak-rate`` above what one server of the
recommended shape serves, the servers the peak needs with one to spare, and with ``--cpus 1
--ram 256M`` (the pod) the container's resources. On the project's I/O-bound test app
(gunicorn, ``/sleep?ms=30``: a sync worker serves at most 1 / 30 ms = 33 req/s, so 2 workers at
most 67 req/s whatever the machine), loopback only, one short run.

What is checked against what: the confirmed rate against the app's known capacity; the servers
printed against ceil(peak / the confirmation's rps) + 1 computed here from the printed figures and
from recommendation.json; the Kubernetes block (parsed as YAML, from the text as printed) against
the confirmation's cgroup peak and its sum of PSS (smaps_rollup, read by the snapshot: a
measurement independent of the cgroup's) and the budget.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pounder.servers import gunicorn_missing
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"
LIMIT_S = 400
PEAK = 150.0
WAIT_S = 0.030
CHILDREN = 2
MIB = 1024 * 1024
BUDGET = 256 * MIB

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def _quantity(text: str) -> int:
    match = re.fullmatch(r"(\d+)(Mi)?", text)
    assert match, text
    return int(match.group(1)) * (MIB if match.group(2) else 1)


def _printed_block(stdout: str) -> dict[str, Any]:
    """The Kubernetes block as printed under "Container resources (Kubernetes)", parsed as YAML."""
    lines = stdout.split("\nContainer resources (Kubernetes)\n", 1)[1].splitlines()
    block = []
    for line in lines:
        if not line.strip():
            break
        block.append(line[2:])
    parsed = yaml.safe_load("\n".join(block))
    assert isinstance(parsed, dict) and set(parsed) == {"resources"}, block
    return parsed["resources"]  # type: ignore[no-any-return]


def test_a_peak_beyond_one_server_gets_its_fleet_and_the_container_its_resources(tmp_path: Path) -> None:
    results = tmp_path / "fleet"
    done = run_pounder("tune", "gunicorn", "wsgi_app:app", "--pythonpath",
                           str(APPS_DIR), "--path", f"/sleep?ms={WAIT_S * 1000:.0f}", "--quick", "--point-duration",
                           "1s", "--mrpc", "0", "--max-children", str(CHILDREN), "--measure-children", str(CHILDREN),
                           "--peak-rate", f"{PEAK:.0f}/s", "--ram", "256M", "--cpus", "1", "--results", str(results),
                       timeout=LIMIT_S)
    assert not processes_mentioning(str(results))
    # one server cannot carry the peak (its rate check is not met): the fleet carries it, not an error
    assert done.returncode == 0, done.stdout + done.stderr
    validate_results_dir(results)
    data: dict[str, Any] = json.loads((results / "recommendation.json").read_text())
    check_consistent(done.stdout, data)
    confirmation, size, pod = data["confirmation"], data["fleet"]["size"], data["fleet"]["pod"]
    rate_check = next(c for c in confirmation["checks"] if c["name"] == "rate")
    assert not rate_check["ok"] and not size["carried_peak"]

    # the confirmed rate is what the confirmation answered, within what the app can serve
    rps = float(confirmation["rps"])
    children = int(confirmation["children"])
    assert children <= CHILDREN
    assert 0.6 * children / WAIT_S <= rps <= children / WAIT_S * 1.02, (rps, children)
    assert size["confirmed_rps"] == rps and size["peak_rate"] == PEAK
    assert size["servers"] == math.ceil(PEAK / rps) + 1 and size["needed"] == size["servers"] - 1

    # the arithmetic as printed, recomputed from its own figures
    fleet = done.stdout.split("\nFleet\n", 1)[1]
    match = re.match(r"\s+ceil\(([\d,.]+) req/s / ([\d,.]+) req/s\) \+ 1 = (\d+) servers", fleet)
    assert match, fleet[:300]
    peak, confirmed, servers = (float(match.group(1).replace(",", "")), float(match.group(2).replace(",", "")),
                                int(match.group(3)))
    assert peak == PEAK and abs(confirmed - rps) <= 0.5 and servers == size["servers"]
    assert servers == math.ceil(peak / confirmed) + 1

    # the container: the block parses, and its memory lies between what was measured and the budget
    assert pod is not None and pod["budget"] == BUDGET
    resources = _printed_block(done.stdout)
    assert resources == yaml.safe_load(pod["yaml"])["resources"]
    limit = _quantity(resources["limits"]["memory"])
    request = _quantity(resources["requests"]["memory"])
    peak_read = confirmation["cgroup_peak"]
    assert peak_read["peak"] is not None, peak_read
    footprint = int(confirmation["footprint"])  # sum of PSS (smaps_rollup) after the load
    assert 0.5 <= peak_read["peak"] / footprint <= 2.0, (peak_read, footprint)
    assert max(peak_read["peak"], footprint) <= request <= limit <= BUDGET
    assert limit - max(peak_read["peak"], footprint) < MIB  # no leak: no growth, rounded up to MiB only
    assert resources["limits"]["cpu"] == resources["requests"]["cpu"] == pod["cpu"] == "1"  # the quota measured with
    assert pod["cpus_source"] == "the CPU quota the server was measured with (--cpus 1)"
    assert f"docker run --cpus {pod['cpu']} --memory {limit // MIB}m" in done.stdout
