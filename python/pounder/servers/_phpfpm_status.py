"""php-fpm's own view of each load: its status page's counters (:data:`~pounder.servers._phpfpm.COUNTERS`,
:meth:`PhpFpmServer.status_counters`) read right before and right after it, per trial, per point and
in words (:data:`PHP_FPM_STATUS`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder._units import children_text
from pounder.servers._status import Counters, StatusReader, at_children

MISSED = 0.5
"""pounder's accept-queue share from which a listen queue php-fpm's checks never saw is said (below it
a once-a-second check may well miss it)."""
QUEUE_SAMPLE = "pounder's accept-queue share (queued) is sampled every 5 ms, php-fpm's listen queue once a second"


class PhpFpmStatus(StatusReader):
    """php-fpm's status page (``accepted conn``, ``slow requests``, ``max children reached``, ``max listen queue``)."""

    keys = ("accepted", "slow_requests", "max_children_reached", "max_listen_queue")
    who = "php-fpm"
    max_clients = "pm.max_children"

    def counted(self, before: Counters, after: Counters) -> dict[str, int | None]:
        """* ``accepted``: connections accepted meanwhile ("accepted conn"; the read after, which
          counts itself, left out: the load's requests and those it left queued);
        * ``slow_requests``: requests over ``request_slowlog_timeout`` ("slow requests");
        * ``max_children_reached``: how often it rose; None when it did not rise and had been
          counted before (php-fpm counts it once until it next starts a child: a pool kept full, as
          pounder measures it, counts it at most once, mostly while warming, and then cannot show
          the load's);
        * ``max_listen_queue``: the largest listen queue seen at its once-a-second checks during the
          load (it is the largest since its start: None when the load's did not exceed the one
          before, 0 when none was ever seen)."""

        def both(name: str) -> tuple[int, int] | None:
            return (int(before[name]), int(after[name])) if name in before and name in after else None

        out: dict[str, int | None] = {}
        if (accepted := both("accepted conn")) is not None:
            out["accepted"] = max(0, accepted[1] - accepted[0] - 1)
        if (slow := both("slow requests")) is not None:
            out["slow_requests"] = slow[1] - slow[0]
        if (reached := both("max children reached")) is not None:
            rose = reached[1] - reached[0]
            out["max_children_reached"] = rose if rose > 0 or reached[0] == 0 else None
        if (queued := both("max listen queue")) is not None:
            out["max_listen_queue"] = queued[1] if queued[1] > queued[0] else 0 if queued[1] == 0 else None
        return out

    def summary(self, read: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """``listen_queue``: in how many trials the listen queue held connections during the load,
        of ``listen_queue_seen`` where it could show (its largest: ``max_listen_queue``);
        ``max_children_reached``: in how many that counter rose, of ``max_children_seen`` where it
        could show; ``accepted`` and ``slow_requests`` summed."""
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

    def note(self, points: Sequence[Mapping[str, Any]], who: str | None = None, max_clients: str | None = None) -> str:
        """In one sentence that agrees with the queued column: where its listen queue held
        connections (requests waited for a free child: ``max_clients`` below the clients), where it
        saw none though pounder's watch did in at least :data:`MISSED` of its samples, and what
        "max children reached" could show."""
        who, max_clients = who or self.who, max_clients or self.max_clients
        read = [(int(p["children"]), p["server_status"], p.get("queued")) for p in points
                if p.get("server_status") and "accepted" in p["server_status"]]
        if not read:
            return ""
        clauses = _queue_clauses(read, max_clients)
        rose = [(n, f"{s['max_children_reached']} of {s['max_children_seen']} trials")
                for n, s, _ in read if s["max_children_reached"]]
        if rose:
            clauses.append(f"'max children reached' rose (no child idle at one of its checks) in {at_children(rose)}")
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


def _queue_clauses(read: Sequence[tuple[int, Mapping[str, Any], Any]], max_clients: str) -> list[str]:
    """What its listen queue said, beside pounder's queued column."""
    clauses = []
    waited = [(n, f"{s['listen_queue']} of {s['trials']} trials (up to {s['max_listen_queue']})")
              for n, s, queued in read if s["listen_queue"] and (queued is None or queued > 0)]
    if waited:
        clauses.append(f"its listen queue held connections in {at_children(waited)}: requests waited for a free "
                       f"child, {max_clients} smaller than the clients there, as the queued column says")
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
    return clauses


PHP_FPM_STATUS = PhpFpmStatus()
"""php-fpm's status reader."""
