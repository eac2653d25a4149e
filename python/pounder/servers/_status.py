"""A server's own view of each load (php-fpm's status page, uWSGI's stats server, Puma's
``/stats``): :class:`StatusReader`, which each server with one declares beside its process handling
(``_phpfpm_status``, ``_uwsgi_status``, ``_puma_status``) and its adapter names
(``Adapter.status_reader``).

The read is the server's :meth:`~pounder.servers.ManagedServer.status_counters`, right before and
right after a load; the reader says what they show of the load (:meth:`StatusReader.change`, stored
per trial as ``server_status``), of a point's trials (:meth:`StatusReader.summary`) and, in one
sentence under the tables, of a run's points (:meth:`StatusReader.note`). Pure functions, shared by
tune's text and the report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pounder._errors import public
from pounder._units import children_text

Counters = Mapping[str, int]
"""A server's counters as its ``status_counters`` reads them."""


@public
class StatusReader:
    """What a server's own counters say of a load; this base: a server without any (nothing to say)."""

    keys: ClassVar[tuple[str, ...]] = ()
    """The keys of a trial's ``server_status`` that only this server's :meth:`change` gives."""
    who: ClassVar[str] = ""
    """How :meth:`note` names the server by default."""
    max_clients: ClassVar[str] = "MaxClients"
    """How :meth:`note` names its MaxClients by default."""

    def __init__(self) -> None:
        """A reader holds nothing: one for each server (its module's constant)."""

    def owns(self, status: Mapping[str, Any]) -> bool:
        """Whether a trial's ``server_status`` is this server's (:attr:`keys`)."""
        return any(key in status for key in self.keys)

    def change(self, before: Counters | None, after: Counters | None) -> dict[str, int | None] | None:
        """What the counters read right ``before`` and right ``after`` a load say of it (None when
        either read failed)."""
        if before is None or after is None:
            return None
        return self.counted(before, after)

    def counted(self, before: Counters, after: Counters) -> dict[str, int | None]:
        """:meth:`change` of two reads that answered."""
        return {}

    def summary(self, read: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """A point's figures from its trials' ``server_status`` (those that were read)."""
        return {}

    def note(self, points: Sequence[Mapping[str, Any]], who: str | None = None, max_clients: str | None = None) -> str:
        """What the server said of the loads of ``points`` (aggregated points with ``children``,
        ``queued`` and ``server_status``) where it adds to the tables, in one sentence ("" when
        nothing); ``who`` names the server, ``max_clients`` its MaxClients (default: its own)."""
        return ""


NO_STATUS = StatusReader()
"""The reader of a server without a status of its own."""


def at_children(entries: Sequence[tuple[int, str]]) -> str:
    """"3 of 3 trials of 1 child (up to 3), ..." for (children, text) pairs."""
    return ", ".join(f"{text} of {children_text(n)}" for n, text in entries)
