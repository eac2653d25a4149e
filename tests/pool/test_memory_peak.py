"""The most a server's memory cgroup was charged over a window (pounder.pool.Runner.memory_peak,
issue 38: a container's memory from the confirmation's peak), on the real kernel with a real
gunicorn: a worker grows by a known 48 MiB inside the window (``bytearray(b"a" * N)``: for a moment
the 48 MiB ``bytes`` and its 48 MiB copy both live, 96 MiB, then 48 MiB stay) and is then replaced
by a fresh one, so the charge falls back while the peak must keep the moment's 96 MiB, which no
reading of the charge before or after sees. The charge before and after is read here from the
cgroup's own file, independently of the reading under test."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from pounder.pool import Runner
from support.srvutil import MB, cgroup_probe

PROBE, WHY = cgroup_probe()
pytestmark = pytest.mark.skipif(PROBE is None, reason=WHY)
GROWN_MIB = 48


def _charged(server) -> int:  # type: ignore[no-untyped-def]
    name = "memory.current" if server.cgroup.version == 2 else "memory.usage_in_bytes"
    return int((server.cgroup.path / name).read_text())


def _get(url: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            answer.read()
    except (urllib.error.URLError, ConnectionError):  # the worker that exits answers nothing
        pass


def test_the_peak_keeps_what_a_replaced_worker_was_charged(gunicorn_server) -> None:  # type: ignore[no-untyped-def]
    srv = gunicorn_server(workers=1, start=False)
    srv.use_cgroup = True
    srv.start(timeout_s=60)
    assert srv.cgroup is not None, srv.cgroup_note
    base = f"http://127.0.0.1:{srv.port}"
    _get(f"{base}/pid")
    before = _charged(srv)
    with Runner.memory_peak(srv) as peak:
        _get(f"{base}/age?after_s=0&mib={GROWN_MIB}")  # the worker keeps 48 MiB more
        grown = _charged(srv)
        _get(f"{base}/exit?after=0&code=1")  # and exits: the arbiter starts a fresh one
        end = time.monotonic() + 20
        while time.monotonic() < end and _charged(srv) > grown - GROWN_MIB * MB // 2:
            time.sleep(0.1)
    after = _charged(srv)
    reading = peak.reading()
    assert reading["version"] == srv.cgroup.version and reading["peak"] is not None, reading
    assert grown >= before + GROWN_MIB * MB * 0.9, (before, grown)
    assert after <= grown - GROWN_MIB * MB // 2, (grown, after)  # the charge fell back
    assert reading["peak"] >= grown and reading["peak"] >= before + 2 * GROWN_MIB * MB * 0.9, (reading, before, grown)
    assert reading["peak"] <= before + 2 * GROWN_MIB * MB + 16 * MB, (reading, before)
    if srv.cgroup.version == 1:
        assert reading["source"] == "memory.max_usage_in_bytes (cgroup v1), reset at the load's start"


def test_no_cgroup_no_peak(gunicorn_server) -> None:  # type: ignore[no-untyped-def]
    srv = gunicorn_server(workers=1)
    with Runner.memory_peak(srv) as peak:
        pass
    assert peak.reading() == {"peak": None, "source": "the server ran in no memory cgroup of its own",
                              "version": None}
