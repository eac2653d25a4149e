"""A stored ``pounder syscalls --json`` result (``pounder/syscalls/1``) read back into a
:class:`~pounder.syscalls.SyscallReport`, every value checked as it is read
(:class:`pounder._records.Reader`): one line naming the key when the document is not one
``pounder syscalls`` writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pounder._errors import PounderError, public
from pounder._records import Reader
from pounder.syscalls._report import SYSCALLS_SCHEMA, FailedCall, SyscallCount, SyscallReport
from pounder.syscalls._trace import MAX_REQUESTS

MAX_ROWS = 100_000
"""The most entries a list of a result read back may hold (system calls by name, failures, pids):
Linux has a few hundred system calls, and each entry is a row of the page."""


class MalformedSyscallsError(PounderError):
    """A document is not a ``pounder/syscalls/1`` result (the message names the key)."""


_READ = Reader(MalformedSyscallsError)


def _rows(value: object, key: str) -> list[Any]:
    return _READ.capped_list(value, key, MAX_ROWS, "entries", "a result")


def _pids(data: Mapping[str, Any], name: str) -> tuple[int, ...]:
    return tuple(_READ.as_int(pid, f"trace.{name}[{i}]") for i, pid in enumerate(_rows(_READ.get(data, name),
                                                                                       f"trace.{name}")))


@public
def syscalls_from_dict(data: Mapping[str, Any]) -> SyscallReport:
    """Read a decoded ``pounder/syscalls/1`` document (what :meth:`SyscallReport.to_dict` writes);
    :class:`MalformedSyscallsError` names the key. Its requests are 1 to the most ``pounder
    syscalls`` traces (every figure is per request)."""
    doc = _READ.as_dict(data, "the top level")
    if doc.get("schema") != SYSCALLS_SCHEMA:
        raise MalformedSyscallsError(f"'schema' is {doc.get('schema')!r}, expected {SYSCALLS_SCHEMA!r}")
    target = _READ.as_dict(_READ.get(doc, "target"), "target")
    load = _READ.as_dict(_READ.get(doc, "load"), "load")
    trace = _READ.as_dict(_READ.get(doc, "trace"), "trace")
    total = _READ.as_dict(_READ.get(doc, "total"), "total")

    def text(part: Mapping[str, Any], where: str, name: str) -> str:
        return _READ.as_str(_READ.get(part, name), f"{where}{name}")

    def count(part: Mapping[str, Any], where: str, name: str) -> int:
        return _READ.as_int(_READ.get(part, name), f"{where}{name}")

    requests = count(load, "load.", "requests")
    if not 1 <= requests <= MAX_REQUESTS:
        raise MalformedSyscallsError(f"'load.requests' must be from 1 to {MAX_REQUESTS:,} (pounder syscalls traces "
                                     f"that many), got {requests:,}")
    calls = tuple(_READ.record(SyscallCount, row, f"calls[{i}]", strict=True)
                  for i, row in enumerate(_rows(_READ.get(doc, "calls"), "calls")))
    failures = tuple(_READ.record(FailedCall, row, f"failures[{i}]", path=_READ.nullable(_READ.as_str), strict=True)
                     for i, row in enumerate(_rows(_READ.get(doc, "failures"), "failures")))
    return SyscallReport(
        tool_version=text(doc, "", "tool_version"), started_at=text(doc, "", "started_at"),
        server_pid=count(target, "target.", "pid"), server_name=text(target, "target.", "name"),
        found_by=text(target, "target.", "found_by"), url=text(load, "load.", "url"),
        method=text(load, "load.", "method"), requests=requests, non_2xx=count(load, "load.", "non_2xx"),
        connections=count(load, "load.", "connections"),
        keepalive=_READ.as_bool(_READ.get(load, "keepalive"), "load.keepalive"),
        warmup_requests=count(load, "load.", "warmup_requests"),
        elapsed_s=_READ.as_float(_READ.get(load, "elapsed_s"), "load.elapsed_s"),
        connections_opened=count(load, "load.", "connections_opened"),
        connections_accepted=count(trace, "trace.", "connections_accepted"),
        strace_version=text(trace, "trace.", "strace_version"), attached=_pids(trace, "attached"),
        processes=_pids(trace, "processes"), started=_pids(trace, "started"), exited=_pids(trace, "exited"),
        total_calls=count(total, "total.", "calls"), calls=calls, failures=failures,
        parent_calls=count(trace, "trace.", "parent_calls"),
        unfinished_calls=count(trace, "trace.", "unfinished_calls"),
        signals=count(trace, "trace.", "signals"), unparsed_lines=count(trace, "trace.", "unparsed_lines"),
        messages=_READ.list_of(_READ.as_str)(doc.get("messages", []), "messages"),
    )  # fmt: skip
