"""The pod, emulated (issue 38), decided again from a real run's recorded points: tests/data/tune-pod,
the demo (gunicorn, ~4 ms of CPU per request) tuned with ``--cpus 1 --ram 512M`` on this project's
2-core machine (tests/data/record.py). No server is started. The figures themselves were checked
against the cgroup's own counters live (tests/e2e/test_tune_pod.py, tests/servers/test_pod.py);
here: the decisions count the quota as the server's cores and say so, and the text and the page
print the pod as the run stored it."""

from __future__ import annotations

import re
from pathlib import Path

from pounder.report import render_report
from support.recorded import decided_again, recorded_copy
from support.schemas import validate_results_dir
from support.tune_check import check_consistent


def test_the_pod_run_is_sized_for_its_quota_and_says_so(tmp_path: Path) -> None:
    data, text = decided_again("tune-pod", tmp_path)
    validate_results_dir(tmp_path / "tune-pod")
    check_consistent(text, data)
    assert data["cores"] == 1.0
    sized = [line for line in data["advice"] if line.startswith("sized for the pod's 1 CPU (--cpus")]
    assert len(sized) == 1, data["advice"]
    for point in data["sweep"]:
        assert point["pod_quota"] == 1.0
        for trial in point["trials"]:
            start, end = trial["pod_window"]
            assert trial["pod_cores"] <= 1.02 + 0.1 / (end - start), trial
            assert abs(trial["pod_cpu_s"] / (end - start) - trial["pod_cores"]) < 1e-9
            assert trial["oom_kills"] == 0
    # the pod line: the quota, how the cgroup set it, the limit, each count's throttled share as stored
    header = text.split("\n\n", 1)[0].replace("\n  ", " ")
    match = re.search(r"pod: quota of 1 CPU \(cgroup v[12] (cfs|cpu\.max) 100000/100000; --cpus 1\), memory limit "
                      r"512 MiB; throttled in (.*)", header)
    assert match, header
    shares = [f"{round(p['throttled_share'] * 100)}% at {p['children']} child{'' if p['children'] == 1 else 'ren'}"
              for p in data["sweep"]]
    assert match.group(2).replace(" of the CFS periods", "") == ", ".join(shares)
    # the confirmation ran in the pod too, and checked the OOM killer
    confirmation = data["confirmation"]
    assert confirmation["pod_quota"] == 1.0
    assert any(check["name"] == "oom" and check["ok"] for check in confirmation["checks"])


def test_two_pods_are_compared_on_the_page(tmp_path: Path) -> None:
    """tune-pod (1 CPU) next to tune-demo (no pod, the machine's 2 CPUs): each run's pod and what
    changed, with the confirmations' figures as stored."""
    pod, demo = recorded_copy("tune-pod", tmp_path), recorded_copy("tune-demo", tmp_path)
    page = render_report([pod, demo])
    text = re.sub(r"<[^>]+>", " ", page)
    assert "Pods compared" in text
    assert "pod: quota of 1 CPU (cgroup v" in text  # the pod run's own line
    assert "1 CPU, 512 MiB → no pod (2 CPUs): --workers " in text
    alone = re.sub(r"<[^>]+>", " ", render_report([pod]))
    assert "Pods compared" not in alone and "pod: quota of 1 CPU" in alone
