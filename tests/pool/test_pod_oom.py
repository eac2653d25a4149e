"""A child OOM-killed at the pod's memory limit (issue 38) is named, not a crash: gunicorn in a pod of
1 CPU and 160 MiB, one of its workers asked to build 200 MiB (tests/apps/wsgi_app.py ``/age``):
the kernel kills that worker, gunicorn replaces it, and the figures of the load (pounder.pool's
pod_figures, as every trial's summary takes them) count the kill as the memory cgroup's own
``memory.oom_control`` (v2 ``memory.events``) does, with the sentence a failed trial shows; the
trial does not count in its point. Skipped when no cpu cgroup can be made here."""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from pounder.pool._pod import pod_before, pod_figures
from pounder.servers import Pod, pod_unavailable
from pounder.tune._points import counts

WHY = "not root: pounder makes no cpu cgroup" if os.geteuid() != 0 else pod_unavailable()
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY)
MIB = 1024 * 1024


def _kills(path: Path, version: int) -> int:
    """The cgroup's own count of OOM kills, read here."""
    name = "memory.events" if version == 2 else "memory.oom_control"
    return next(int(line.split()[1]) for line in (path / name).read_text().splitlines() if line.startswith("oom_kill "))


def test_a_child_killed_at_the_limit_is_counted_and_named(gunicorn_server) -> None:
    srv = gunicorn_server(workers=2, start=False)
    srv.use_cgroup = True
    srv.pod = Pod(1.0, 160 * MIB)
    srv.start()
    assert srv.cgroup is not None
    workers = set(srv.children())
    before = pod_before(srv)
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        with urllib.request.urlopen(srv.url + "/age?after_s=0&mib=200", timeout=30) as answer:
            answer.read()
    figures = pod_figures(srv, before)
    assert _kills(srv.cgroup.path, srv.cgroup.version) == figures["oom_kills"] == 1
    assert figures["oom_note"] == "1 child process killed by the OOM killer at the limit of 160 MiB"
    assert srv.running  # the parent lives on and replaces its worker
    deadline = time.monotonic() + 10.0  # the killed one may still be listed until the parent reaps it
    while set(srv.children()) == workers and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(srv.wait_for_children(2, 10.0)) == 2 and set(srv.children()) != workers
    trial = {"complete": 1000, "failed": 0, "oom_kills": figures["oom_kills"]}
    assert not counts(trial) and counts({**trial, "oom_kills": 0})
