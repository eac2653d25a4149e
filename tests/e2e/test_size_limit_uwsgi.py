"""uWSGI's reload-on-rss made from the measured worker sizes, live.

A WSGI app that keeps 100 KB per request (tests/apps/wsgi_app.py ``/leak``) with 20 MB of data
built in the master (shared by the workers) runs on 2 workers; a warmed worker is measured as
``pounder tune`` measures it (pounder's snapshot: its USS and what it shares) and
:meth:`UwsgiAdapter.size_limit` prints ``reload-on-rss`` for a private limit of the warmed USS +
24 MiB. The same pool started again with that line and loaded (count-limited requests, loopback):
every worker must be replaced when its USS, read by this test from /proc/PID/smaps_rollup while
the load runs, reaches the limit (±10 %), and none may grow beyond it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from pounder.pool import ChildLimit, PoolParams, UwsgiAdapter, child_sizes
from pounder.procs import snapshot
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.srvutil import warm_every_child
from support.uss_watch import UssWatch

MIB = 1024 * 1024
APPS = Path(__file__).resolve().parents[1] / "apps"
LEAK = 102400
WORKERS = 2
ROOM = 24 * MIB
TOLERANCE = 0.10
RATE = 600  # requests a second: a worker grows ~30 MB/s, 0.3 MB between two of this test's readings


def test_workers_are_replaced_at_the_printed_rss(tmp_path: Path) -> None:
    from pounder.servers import uwsgi_missing
    if uwsgi_missing():
        pytest.skip(str(uwsgi_missing()))
    env = {"APP_DATA_MB": "20"}
    measured = UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS), env=env)
    with measured.server(PoolParams(WORKERS), tmp_path / "measured").start(60) as server:
        warm_every_child(server, "/leak")
        sizes = child_sizes(snapshot(server.pid))
    start, shared = sizes["max_uss"], sizes["median_shared"]
    assert shared >= 20 * MIB  # the data built in the master is shared by every worker
    limit = ChildLimit(children=WORKERS, start=start, limit=start + ROOM, shared=shared, requests=0, growth=LEAK)
    printed = measured.size_limit(limit)
    mb = int(re.findall(r"reload-on-rss = (\d+)", printed)[0])
    assert mb == (start + ROOM + shared) // MIB

    applied = UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS), env=env, extra_args=("--reload-on-rss", str(mb)))
    requests = int(3 * WORKERS * ROOM // LEAK)  # room for each worker to be replaced twice and more
    with applied.server(PoolParams(WORKERS), tmp_path / "applied").start(60) as server:
        watch = UssWatch(server.pid)
        watch.start()
        try:
            done = run_pounder("bench", server.url + "/leak", "--rate", RATE, "--no-keepalive", "-n", requests,
                               "--warmup", "0", timeout=240)
            time.sleep(0.2)
        finally:
            watch.done.set()
            watch.join()
        alive = set(server.children())
    assert done.returncode == 0, done.stderr[-2000:]
    assert processes_mentioning(str(tmp_path)) == []
    replaced = {pid: uss for pid, uss in watch.at_largest_rss.items() if pid not in alive}
    print(f"\nwarmed worker USS {start / MIB:.1f} MiB, shared {shared / MIB:.1f} MiB; reload-on-rss = {mb}; "
          f"private limit {limit.limit / MIB:.1f} MiB; replaced at USS (MiB): "
          f"{sorted(round(uss / MIB, 1) for uss in replaced.values())}; largest USS while exiting: "
          f"{sorted(round(uss / MIB, 1) for pid, uss in watch.largest.items() if pid not in alive)}")
    assert len(replaced) > WORKERS, (watch.largest, alive)
    for pid, uss in replaced.items():
        assert abs(uss - limit.limit) <= TOLERANCE * limit.limit, (pid, uss / MIB, limit.limit / MIB)
    assert max(watch.at_largest_rss.values()) <= (1 + TOLERANCE) * limit.limit
