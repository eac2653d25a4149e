"""A server's own view of each load (php-fpm's status page, uWSGI's stats server, read right before and right after it:
:func:`pounder.pool.status_change`), per point and in words (pure functions, shared by tune's text
and the report)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder._puma_status import puma_note, puma_point
from pounder._units import children_text

MISSED = 0.5
"""pounder's accept-queue share from which a listen queue php-fpm's checks never saw is said (below it
a once-a-second check may well miss it)."""
QUEUE_SAMPLE = "pounder's accept-queue share (queued) is sampled every 5 ms, php-fpm's listen queue once a second"


def aggregate_status(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A point's ``server_status`` from its trials' (None when no trial read one): ``trials`` read;
    ``listen_queue``: in how many the server's listen queue held connections during the load, of
    ``listen_queue_seen`` where it could show (its largest: ``max_listen_queue``);
    ``max_children_reached``: in how many that counter rose, of ``max_children_seen`` where it could
    show; ``accepted`` and ``slow_requests`` summed (php-fpm's). uWSGI's: ``requests`` and
    ``listen_queue_errors`` summed, ``listen_queue_full`` the trials with such errors, ``workers``
    the fewest running at a load's end."""
    read = [t["server_status"] for t in trials if t.get("server_status")]
    if not read:
        return None
    point: dict[str, Any] = {"trials": len(read), **puma_point(read)}  # Puma's: pounder._puma_status
    if any(key in s for s in read for key in FPM_KEYS):
        point.update(_fpm(read))
    if any("requests" in s for s in read):  # uWSGI's stats server
        point["requests"] = sum(int(s.get("requests") or 0) for s in read)
        point["listen_queue_errors"] = sum(int(s.get("listen_queue_errors") or 0) for s in read)
        point["listen_queue_full"] = sum(1 for s in read if s.get("listen_queue_errors"))
        point["workers"] = min((int(s["workers"]) for s in read if s.get("workers") is not None), default=None)
    return point


FPM_KEYS = ("accepted", "slow_requests", "max_children_reached", "max_listen_queue")
"""A trial's php-fpm status keys (:func:`pounder.pool.status_change`)."""


def _fpm(read: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    queues = [s.get("max_listen_queue") for s in read]
    reached = [s.get("max_children_reached") for s in read]
    return {
        "listen_queue": sum(1 for q in queues if q), "listen_queue_seen": sum(1 for q in queues if q is not None),
        "max_listen_queue": max((int(q) for q in queues if q is not None), default=None),
        "max_children_reached": sum(1 for r in reached if r),
        "max_children_seen": sum(1 for r in reached if r is not None),
        "accepted": sum(int(s.get("accepted") or 0) for s in read),
        "slow_requests": sum(int(s.get("slow_requests") or 0) for s in read),
    }


def _at(entries: Sequence[tuple[int, str]]) -> str:
    """"3 of 3 trials of 1 child (up to 3), ..." for (children, text) pairs."""
    return ", ".join(f"{text} of {children_text(n)}" for n, text in entries)


def status_note(points: Sequence[Mapping[str, Any]], who: str = "php-fpm",
                max_clients: str = "pm.max_children") -> str:
    """What the server's status page said of the loads of ``points`` (aggregated points with
    ``children``, ``queued`` and ``server_status``), in one sentence that agrees with the queued
    column ("" when no point has it): where its listen queue held connections (requests waited for
    a free child: ``max_clients`` below the clients), where it saw none though pounder's watch
    did in at least :data:`MISSED` of its samples, and what "max children reached" could show."""
    if any("booted_workers" in (p.get("server_status") or {}) for p in points):  # Puma's /stats
        return puma_note(points, max_clients)
    read = [(int(p["children"]), p["server_status"], p.get("queued")) for p in points if p.get("server_status")]
    uwsgi = _uwsgi_note([(n, s) for n, s, _ in read if "requests" in s], max_clients)
    read = [(n, s, queued) for n, s, queued in read if "accepted" in s]
    if not read:
        return uwsgi
    clauses = []
    waited = [(n, f"{s['listen_queue']} of {s['trials']} trials (up to {s['max_listen_queue']})")
              for n, s, queued in read if s["listen_queue"] and (queued is None or queued > 0)]
    if waited:
        clauses.append(f"its listen queue held connections in {_at(waited)}: requests waited for a free child, "
                       f"{max_clients} smaller than the clients there, as the queued column says")
    after = [n for n, s, queued in read if s["listen_queue"] and queued is not None and queued <= 0]
    if after:
        clauses.append(f"at {', '.join(children_text(n) for n in after)} it saw a listen queue that pounder's watch "
                       "did not during the load (left as the load stopped)")
    missed = [n for n, s, queued in read if not s["listen_queue"] and queued is not None and queued >= MISSED]
    if missed:
        clauses.append(f"at {', '.join(children_text(n) for n in missed)} its checks saw no listen queue where "
                       "pounder's watch found connections waiting (the queued column)")
    if not waited and not after and not missed:
        clauses.append("its listen queue held no connection during any load")
    rose = [(n, f"{s['max_children_reached']} of {s['max_children_seen']} trials")
            for n, s, _ in read if s["max_children_reached"]]
    if rose:
        clauses.append(f"'max children reached' rose (no child idle at one of its checks) in {_at(rose)}")
    hidden = sum(s["trials"] - s["max_children_seen"] for _, s, _ in read)
    if hidden:
        total = sum(s["trials"] for _, s, _ in read)
        clauses.append(f"'max children reached' had been counted before the load (while warming) in {hidden} of "
                       f"{total} trials, which cannot show it again ({who} counts it once until it starts a child, "
                       "and a pool kept full starts none)")
    slow = sum(int(s["slow_requests"]) for _, s, _ in read)
    if slow:
        clauses.append(f"{slow:,} slow requests (over request_slowlog_timeout)")
    return f"{who}'s status page, read before and after each load: " + "; ".join(clauses) + f" ({QUEUE_SAMPLE})"


def _uwsgi_note(read: Sequence[tuple[int, Mapping[str, Any]]], max_clients: str) -> str:
    """What uWSGI's stats server said of the loads, where it adds to the tables ("" otherwise):
    the checks that found its listen queue full, and loads that ended with fewer workers running
    than ``max_clients`` says."""
    clauses = []
    full = [(n, f"{s['listen_queue_full']} of {s['trials']} trials ({s['listen_queue_errors']:,} checks)")
            for n, s in read if s.get("listen_queue_full")]
    if full:
        clauses.append(f"its once-a-second checks found its listen queue full (listen, 100 by default) in {_at(full)}: "
                       "connections beyond it were not taken at once (Linux drops them and the client retries a "
                       "second later), so latency there includes that wait")
    short = [f"{s['workers']} of {children_text(n)}" for n, s in read if s.get("workers") is not None
             and int(s["workers"]) < n]
    if short:
        clauses.append(f"fewer workers ran at a load's end than {max_clients}: {', '.join(short)}")
    return "uWSGI's stats server, read before and after each load: " + "; ".join(clauses) if clauses else ""
