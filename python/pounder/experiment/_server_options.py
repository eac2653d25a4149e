"""The server options of an experiment file's [server] and [[variant]] tables that only some
servers take, read and checked against the server (spare settings, Puma's threads and
fork_worker, the options a server refuses)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pounder._errors import UsageError
from pounder.experiment._reader import Reader
from pounder.pool import ADAPTERS as POOL_ADAPTERS
from pounder.pool import puma_threads, refused_option
from pounder.servers import FORK_WORKER_MAX

SPARE_KEYS = ("start_servers", "min_spare", "max_spare")


@dataclass(frozen=True)
class Spares:
    """The spare settings of servers that start children on demand (StartServers, MinSpareServers,
    MaxSpareServers in each server's own names)."""

    start_servers: int | None
    min_spare: int | None
    max_spare: int | None


def spare_settings(r: Reader, data: Mapping[str, Any], table: str, adapter: str) -> Spares:
    """``start_servers``, ``min_spare``, ``max_spare`` of ``table`` (1 to 1024 each, None when not
    given), refused for a server that does not start children on demand."""
    spares = {name: r.count(data, table, name, 1, 1024) for name in SPARE_KEYS}
    given = [name for name in SPARE_KEYS if spares[name] is not None]
    cls = POOL_ADAPTERS.get(adapter)
    if given and (cls is None or not cls.on_demand):
        on_demand = ", ".join(kind for kind, c in POOL_ADAPTERS.items() if c.on_demand)
        raise r.fail(f"{table}.{given[0]}", f"{adapter} starts every child at once: spare settings are for the "
                                            f"servers that start them on demand ({on_demand})")
    low, high = spares["min_spare"], spares["max_spare"]
    if low is not None and high is not None and low > high:
        raise r.fail(f"{table}.max_spare", f"must be at least min_spare ({low}), got {high}")
    return Spares(spares["start_servers"], low, high)


def refuse(r: Reader, table: str, adapter: str, name: str) -> None:
    """The server option ``name`` given in ``table``, refused when ``adapter`` does not take it."""
    refused = refused_option(adapter, name, called=name)
    if refused:
        raise r.fail(f"{table}.{name}", refused)


def threads_option(r: Reader, data: Mapping[str, Any], table: str) -> str | None:
    """Puma's ``threads`` of ``table`` as "MIN,MAX" (N or "MIN,MAX" in the file), None when not given."""
    threads = r.get(data, table, "threads", (str, int))
    if threads is None:
        return None
    try:
        return "{},{}".format(*puma_threads(threads))
    except UsageError as error:
        raise r.fail(f"{table}.threads", str(error)) from None


def fork_worker_option(r: Reader, data: Mapping[str, Any], table: str) -> int | None:
    """Puma's ``fork_worker`` of ``table``: the requests worker 0 serves before the refork (0:
    never), None when not given."""
    return r.count(data, table, "fork_worker", 0, FORK_WORKER_MAX)
