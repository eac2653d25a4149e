"""The life point against a real gunicorn --preload (tests/apps/wsgi_app.py with APP_OBJECTS): the
children's private memory grows by the pages the app itself counts it has copied, their shared
memory falls by as much, and the same app reading nothing stays stable. Short: about 1,000
requests per child (a few seconds of load)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pounder.pool import GunicornAdapter, PoolParams, Runner
from pounder.servers import gunicorn_missing
from pounder.tune._life import life_curve, life_targets, may_decide
from pounder.tune._life_step import measure_life

APPS = Path(__file__).resolve().parents[1] / "apps"
MIB = 1024 * 1024
PAGE = 4096

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def _life(tmp_path: Path, objects: int) -> tuple[dict[str, Any], dict[str, Any], Path]:
    touched = tmp_path / "touched"
    touched.mkdir(parents=True)
    adapter = GunicornAdapter("wsgi_app:app", pythonpath=str(APPS), preload=True,
                              env={"APP_OBJECTS": str(objects), "APP_TOUCHED_DIR": str(touched)})
    runner = Runner(adapter, tmp_path / "servers", "/touch", 0, 10.0)
    summary, detail = measure_life(runner, adapter, PoolParams(2), life_targets(100, 1000))
    return summary, detail, touched


def _private(snapshot: dict[str, Any]) -> dict[int, int]:
    return {int(p["pid"]): int(p["private"]) for p in snapshot["processes"] if p["role"] == "child"}


def test_the_pages_a_child_copies_are_its_growth_and_its_fall(tmp_path: Path) -> None:
    summary, detail, touched = _life(tmp_path / "objects", 200_000)
    assert summary["failed"] == 0 and summary["stopped"] is None
    assert [round(s["requests"]) for s in summary["snapshots"]] == [0, 10, 20, 50, 100, 200, 500, 1000]
    assert summary["requests"] == 2 * 1000 == sum(
        b["requests"]["complete"] + b["warmup"]["complete"] for b in detail["bench"])
    first, last = _private(detail["snapshots"][0]), _private(detail["snapshots"][-1])
    assert set(first) == set(last), "a child was replaced"
    for pid in last:
        copied = int((touched / str(pid)).read_text()) * PAGE  # what the app counted it read, page by page
        grown = last[pid] - first[pid]
        # every page it read was copied; the rest is the worker's own start (its first request) and heap
        assert 0.95 * copied <= grown <= copied + 4 * MIB, (pid, grown, copied)
        assert copied >= 8 * MIB
    life = life_curve(summary)
    assert life is not None and may_decide(life) and life.fall > 0.2
    assert life.shared.fit == "log" and life.private.fit == "log"
    loaded = life.loaded
    private_gain = loaded[-1].private - loaded[0].private
    shared_loss = loaded[0].shared - loaded[-1].shared
    assert abs(private_gain - shared_loss) <= 0.1 * shared_loss  # pages moved from shared to private


def test_a_child_that_reads_nothing_it_inherited_is_stable(tmp_path: Path) -> None:
    summary, _, _ = _life(tmp_path / "nothing", 0)
    life = life_curve(summary)
    assert life is not None and life.shared.stable and not may_decide(life), life.summary
