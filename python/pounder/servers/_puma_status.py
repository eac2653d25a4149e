"""Puma's own view of each load: its control app's ``/stats`` (:meth:`PumaServer.status_counters`)
read right before and right after it, per trial, per point and in words, where it adds to the tables
(:data:`PUMA_STATUS`).

A worker's busy threads and backlog are what it reported at its last check-in (once a second in
the instances pounder measures) before the read after the load; a trial has them only when every
worker checked in during the load. pounder's accept-queue share cannot see a request a worker has
accepted and holds for a thread (the backlog); with threads 1, 1 a busy worker accepts nothing, so
its threads add nothing to the queued column but when there are more of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder._units import children_text
from pounder.servers._status import Counters, StatusReader

CHECKIN = "each worker's last check-in (once a second) during the load"


class PumaStatus(StatusReader):
    """Puma's ``/stats`` (booted workers; each worker's threads, pool capacity, backlog and check-in)."""

    keys = ("booted_workers",)
    who = "puma"
    max_clients = "workers"

    def counted(self, before: Counters, after: Counters) -> dict[str, int | None]:
        """``booted_workers`` right after the load (the master's count); ``threads``: its workers'
        threads; ``busy_threads`` and ``backlog``: summed as the workers reported them at their last
        check-in before the read after the load, when every worker checked in after the read before
        it (its ``checkin:PID`` later than before, or a worker started meanwhile: a check-in during
        the load, once a second), else None. Its ``requests_count`` is not a figure of the load: a
        worker's count is as of its check-in, and the warm-up's last requests may come after the one
        before."""
        if "pool_capacity" not in before or "pool_capacity" not in after:
            return {}
        checkins = [key for key in after if key.startswith("checkin:")]
        fresh = bool(checkins) and all(int(after[key]) > int(before.get(key, 0)) for key in checkins)
        threads = int(after["max_threads"])
        return {"booted_workers": int(after["booted_workers"]), "threads": threads,
                "busy_threads": max(0, threads - int(after["pool_capacity"])) if fresh else None,
                "backlog": int(after["backlog"]) if fresh else None}

    def summary(self, read: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """``booted_workers`` the fewest after a load; ``threads`` its workers' threads;
        ``busy_seen``: trials with every worker's check-in during the load, of which ``all_busy``
        found every thread busy; ``busy_low`` / ``busy_high`` the fewest and most busy threads there
        (None without one); ``backlog`` the trials with requests waiting in a worker for a thread,
        up to ``max_backlog``."""
        puma = [s for s in read if "booted_workers" in s]
        if not puma:
            return {}
        busy = [(int(s["busy_threads"]), int(s["threads"])) for s in puma if s.get("busy_threads") is not None]
        backlogs = [int(s["backlog"]) for s in puma if s.get("backlog") is not None]
        return {
            "booted_workers": min(int(s["booted_workers"]) for s in puma),
            "threads": max(int(s["threads"]) for s in puma),
            "busy_seen": len(busy), "all_busy": sum(1 for n, of in busy if n >= of),
            "busy_low": min((n for n, _ in busy), default=None), "busy_high": max((n for n, _ in busy), default=None),
            "backlog": sum(1 for b in backlogs if b), "max_backlog": max(backlogs, default=None),
        }

    def note(self, points: Sequence[Mapping[str, Any]], who: str | None = None, max_clients: str | None = None) -> str:
        """How many of their threads were busy at the check-ins when a worker has more than one;
        requests held in a worker's backlog (which the queued column cannot count); fewer workers
        booted after a load than ``max_clients``."""
        max_clients = max_clients or self.max_clients
        read = [(int(p["children"]), p["server_status"]) for p in points
                if p.get("server_status") and "booted_workers" in p["server_status"]]
        clauses = []
        threaded = [(n, s) for n, s in read if n and int(s["threads"]) > n]
        seen = [(n, s) for n, s in threaded if s["busy_seen"]]
        if seen:
            clauses.append(f"busy threads at {CHECKIN}: " + ", ".join(
                f"{_span(s['busy_low'], s['busy_high'])} of {s['threads']} at {children_text(n)}"
                + (f" (all busy in {s['all_busy']} of {s['busy_seen']} trials)" if s["all_busy"] else "")
                for n, s in seen))
        elif threaded:
            clauses.append("no load was long enough for every worker to check in during it (its busy threads unknown)")
        held = [(n, s) for n, s in read if s["backlog"]]
        if held:
            clauses.append("requests waited inside a worker for a thread (its backlog, not in the queued column) in "
                           + ", ".join(f"{s['backlog']} of {s['busy_seen']} trials of {children_text(n)} (up to "
                                       f"{s['max_backlog']})" for n, s in held))
        short = [f"{s['booted_workers']} of {children_text(n)}" for n, s in read if int(s["booted_workers"]) < n]
        if short:
            clauses.append(f"fewer workers booted after a load than {max_clients}: {', '.join(short)} (a worker died "
                           "or was replaced during it)")
        return "Puma's /stats, read before and after each load: " + "; ".join(clauses) if clauses else ""


def _span(low: int, high: int) -> str:
    return f"{low}" if low == high else f"{low}-{high}"


PUMA_STATUS = PumaStatus()
"""Puma's status reader."""
