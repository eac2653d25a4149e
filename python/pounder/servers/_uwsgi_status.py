"""uWSGI's own view of each load: its stats server's counters (:meth:`UwsgiServer.status_counters`)
read right before and right after it, per trial, per point and in words (:data:`UWSGI_STATUS`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder._units import children_text
from pounder.servers._status import Counters, StatusReader, at_children


class UwsgiStatus(StatusReader):
    """uWSGI's stats server (``requests``, ``listen queue errors``, ``workers``, ``busy workers``)."""

    keys = ("requests",)
    who = "uwsgi"
    max_clients = "processes"

    def counted(self, before: Counters, after: Counters) -> dict[str, int | None]:
        """``requests`` its workers served meanwhile (the load's: reading the stats is no request);
        ``listen_queue_errors``: its once-a-second checks that found its listen queue full
        meanwhile; ``workers`` running and ``busy_workers`` serving a request right after the load."""
        out: dict[str, int | None] = {}
        for name, key in (("requests", "requests"), ("listen queue errors", "listen_queue_errors")):
            if name in before and name in after:
                out[key] = int(after[name]) - int(before[name])
        out.update({key: int(after[name]) for name, key in (("workers", "workers"), ("busy workers", "busy_workers"))
                    if name in after})
        return out

    def summary(self, read: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """``requests`` and ``listen_queue_errors`` summed, ``listen_queue_full`` the trials with
        such errors, ``workers`` the fewest running at a load's end."""
        return {
            "requests": sum(int(s.get("requests") or 0) for s in read),
            "listen_queue_errors": sum(int(s.get("listen_queue_errors") or 0) for s in read),
            "listen_queue_full": sum(1 for s in read if s.get("listen_queue_errors")),
            "workers": min((int(s["workers"]) for s in read if s.get("workers") is not None), default=None),
        }

    def note(self, points: Sequence[Mapping[str, Any]], who: str | None = None, max_clients: str | None = None) -> str:
        """The checks that found its listen queue full, and loads that ended with fewer workers
        running than ``max_clients`` says."""
        max_clients = max_clients or self.max_clients
        read = [(int(p["children"]), p["server_status"]) for p in points
                if p.get("server_status") and "requests" in p["server_status"]]
        clauses = []
        full = [(n, f"{s['listen_queue_full']} of {s['trials']} trials ({s['listen_queue_errors']:,} checks)")
                for n, s in read if s.get("listen_queue_full")]
        if full:
            clauses.append("its once-a-second checks found its listen queue full (listen, 100 by default) in "
                           f"{at_children(full)}: connections beyond it were not taken at once (Linux drops them and "
                           "the client retries a second later), so latency there includes that wait")
        short = [f"{s['workers']} of {children_text(n)}" for n, s in read if s.get("workers") is not None
                 and int(s["workers"]) < n]
        if short:
            clauses.append(f"fewer workers ran at a load's end than {max_clients}: {', '.join(short)}")
        return "uWSGI's stats server, read before and after each load: " + "; ".join(clauses) if clauses else ""


UWSGI_STATUS = UwsgiStatus()
"""uWSGI's status reader."""
