"""Puma's /stats around a load, on hand-built counters (the live reads: tests/servers/test_puma.py):
what pounder stores per trial (PUMA_STATUS.change), per point, and says under the tables."""

from __future__ import annotations

from typing import Any

from pounder.pool import status_summary
from pounder.servers import PUMA_STATUS


def counters(checkins: dict[int, int], *, booted: int | None = None, capacity: int = 0, threads: int = 1,
             backlog: int = 0, requests: int = 0) -> dict[str, int]:
    """PumaServer.status_counters as it reads them: sums over the workers, each worker's check-in."""
    return {"booted_workers": len(checkins) if booted is None else booted, "backlog": backlog,
            "pool_capacity": capacity, "max_threads": threads * len(checkins), "requests_count": requests,
            **{f"checkin:{pid}": at for pid, at in checkins.items()}}


def test_busy_threads_and_backlog_only_when_every_worker_checked_in_during_the_load() -> None:
    before = counters({10: 100, 11: 100}, threads=4, capacity=8, requests=50)
    after = counters({10: 102, 11: 101}, threads=4, capacity=3, backlog=2, requests=90)
    assert PUMA_STATUS.change(before, after) == {"booted_workers": 2, "threads": 8, "busy_threads": 5, "backlog": 2}
    # worker 11 last checked in before the load: its figures are not the load's
    stale = counters({10: 102, 11: 100}, threads=4, capacity=3, backlog=2)
    assert PUMA_STATUS.change(before, stale) == {"booted_workers": 2, "threads": 8, "busy_threads": None,
                                                 "backlog": None}
    # a worker started during the load (replacing 11) reports from it
    replaced = counters({10: 102, 12: 101}, booted=1, threads=4, capacity=4)
    assert PUMA_STATUS.change(before, replaced) == {"booted_workers": 1, "threads": 8, "busy_threads": 4, "backlog": 0}
    assert PUMA_STATUS.change(before, None) is None and PUMA_STATUS.change(None, after) is None


def test_requests_count_is_not_stored_as_the_loads() -> None:
    """A worker's requests_count is as of its check-in: the difference is not the load's count."""
    change = PUMA_STATUS.change(counters({1: 5}, requests=7), counters({1: 9}, requests=30))
    assert change is not None and "requests" not in change and "requests_count" not in change


def trials(*statuses: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [{"server_status": status} for status in statuses]


def test_a_point_counts_the_trials_with_a_check_in_and_the_busy_ones() -> None:
    point = status_summary(trials(
        {"booted_workers": 2, "threads": 8, "busy_threads": 8, "backlog": 0},
        {"booted_workers": 2, "threads": 8, "busy_threads": 5, "backlog": 3},
        {"booted_workers": 1, "threads": 8, "busy_threads": None, "backlog": None},
        None))
    assert point == {"trials": 3, "booted_workers": 1, "threads": 8, "busy_seen": 2, "all_busy": 1, "busy_low": 5,
                     "busy_high": 8, "backlog": 1, "max_backlog": 3}
    assert status_summary(trials(None)) is None


def point(children: int, **status: Any) -> dict[str, Any]:
    base = {"trials": 3, "booted_workers": children, "threads": children, "busy_seen": 3, "all_busy": 3,
            "busy_low": children, "busy_high": children, "backlog": 0, "max_backlog": 0}
    return {"children": children, "queued": 0.9, "server_status": {**base, **status}}


def test_threads_1_adds_nothing_to_the_tables() -> None:
    """With threads 1, 1 a busy worker is what the queued column says: nothing is said."""
    assert PUMA_STATUS.note([point(1), point(2)], "puma", "workers") == ""


def test_the_note_says_busy_threads_backlog_and_missing_workers() -> None:
    note = PUMA_STATUS.note([point(1, threads=4, busy_low=2, busy_high=4, all_busy=1),
                        point(2, threads=8, busy_seen=0, busy_low=None, busy_high=None, all_busy=0),
                        point(3, threads=12, busy_low=12, busy_high=12, backlog=2, max_backlog=5, booted_workers=2)],
                       "puma", "workers")
    assert note == (
        "Puma's /stats, read before and after each load: busy threads at each worker's last check-in (once a "
        "second) during the load: 2-4 of 4 at 1 child (all busy in 1 of 3 trials), 12 of 12 at 3 children (all "
        "busy in 3 of 3 trials); requests waited inside a worker for a thread (its backlog, not in the queued "
        "column) in 2 of 3 trials of 3 children (up to 5); fewer workers booted after a load than workers: 2 of "
        "3 children (a worker died or was replaced during it)")
    unseen = PUMA_STATUS.note([point(2, threads=8, busy_seen=0, busy_low=None, busy_high=None, all_busy=0)])
    assert unseen.endswith("no load was long enough for every worker to check in during it (its busy threads "
                           "unknown)")
