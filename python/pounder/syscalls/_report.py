"""The result of ``pounder syscalls`` (:class:`SyscallReport`), its JSON form (schema
``pounder/syscalls/1``, python/pounder/schemas/syscalls.schema.json) and its text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pounder._errors import check_instance, public
from pounder._units import children_text
from pounder.syscalls._parse import TraceCounts

SYSCALLS_SCHEMA = "pounder/syscalls/1"


@public
@dataclass(frozen=True)
class SyscallCount:
    """One system call by name: ``calls`` counted during the traced requests, how many of them
    failed (``errors``), and ``per_request`` = calls / requests."""

    name: str
    calls: int
    errors: int
    per_request: float


@public
@dataclass(frozen=True)
class FailedCall:
    """Failing calls of one kind: system call ``name``, ``errno`` (``"ENOENT"``), the ``path``
    it was given (None for calls without a path), how many and how many per request."""

    name: str
    errno: str
    path: str | None
    calls: int
    per_request: float


@public
@dataclass(frozen=True)
class SyscallReport:
    """System calls per request of a server's processes while pounder's bounded load ran.

    The trace covers the server's processes from the moment strace had attached to all of them
    until the load ended and they were idle again; ``requests`` is the number of requests
    completed in that window (the warm-up ran before strace attached and is not in it), and the
    only traffic (checked: the traced processes accepted no more connections than pounder
    opened). ``calls`` are sorted by count (most first), then name; ``failures`` likewise.

    ``attached``: the children strace attached to; the parent was attached too, with ``-f``, so
    that children started during the run are traced (``started``), but its own calls are not
    counted (``parent_calls``). ``unfinished_calls``: calls still blocked when strace detached
    (an idle child waiting in accept) or cut short by a process's exit, not counted.
    """

    tool_version: str
    started_at: str
    server_pid: int
    server_name: str
    found_by: str
    url: str
    method: str
    requests: int
    non_2xx: int
    connections: int
    keepalive: bool
    warmup_requests: int
    elapsed_s: float
    connections_opened: int
    connections_accepted: int
    strace_version: str
    attached: tuple[int, ...]
    processes: tuple[int, ...]
    started: tuple[int, ...]
    exited: tuple[int, ...]
    total_calls: int
    calls: tuple[SyscallCount, ...]
    failures: tuple[FailedCall, ...]
    parent_calls: int
    unfinished_calls: int
    signals: int
    unparsed_lines: int
    messages: tuple[str, ...] = ()

    @property
    def total_per_request(self) -> float:
        return self.total_calls / self.requests

    def per_request(self, name: str) -> float:
        """Calls of ``name`` per request (0.0 when it was not called)."""
        return next((entry.per_request for entry in self.calls if entry.name == name), 0.0)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (schema ``pounder/syscalls/1``, documented in docs/reference/results.md)."""
        return {
            "schema": SYSCALLS_SCHEMA,
            "tool_version": self.tool_version,
            "started_at": self.started_at,
            "target": {"pid": self.server_pid, "name": self.server_name, "found_by": self.found_by},
            "load": {
                "url": self.url,
                "method": self.method,
                "requests": self.requests,
                "non_2xx": self.non_2xx,
                "connections": self.connections,
                "keepalive": self.keepalive,
                "warmup_requests": self.warmup_requests,
                "elapsed_s": self.elapsed_s,
                "connections_opened": self.connections_opened,
            },
            "trace": {
                "strace_version": self.strace_version,
                "attached": list(self.attached),
                "parent_followed": True,
                "processes": list(self.processes),
                "started": list(self.started),
                "exited": list(self.exited),
                "connections_accepted": self.connections_accepted,
                "parent_calls": self.parent_calls,
                "unfinished_calls": self.unfinished_calls,
                "signals": self.signals,
                "unparsed_lines": self.unparsed_lines,
            },
            "total": {"calls": self.total_calls, "per_request": self.total_per_request},
            "calls": [
                {"name": c.name, "calls": c.calls, "errors": c.errors, "per_request": c.per_request} for c in self.calls
            ],
            "failures": [
                {"name": f.name, "errno": f.errno, "path": f.path, "calls": f.calls, "per_request": f.per_request}
                for f in self.failures
            ],
            "messages": list(self.messages),
        }


@public
def count_tables(counts: TraceCounts, requests: int) -> tuple[tuple[SyscallCount, ...], tuple[FailedCall, ...]]:
    """The by-name and failure tables of ``counts`` for ``requests`` requests (sorted: most
    calls first, then by name, errno and path)."""
    if requests <= 0:
        raise ValueError("requests must be positive")
    calls = tuple(
        SyscallCount(name, number, counts.errors[name], number / requests)
        for name, number in sorted(counts.calls.items(), key=lambda item: (-item[1], item[0]))
    )
    failures = tuple(
        FailedCall(name, errno, path, number, number / requests)
        for (name, errno, path), number in sorted(
            counts.failures.items(), key=lambda item: (-item[1], item[0][0], item[0][1], item[0][2] or "")
        )
    )
    return calls, failures


def _number(value: float) -> str:
    """A per-request figure: two decimals (three below 0.1, so a rare call does not show as 0.00)."""
    return f"{value:,.3f}" if 0 < value < 0.1 else f"{value:,.2f}"


def _pids(pids: Sequence[int], limit: int = 8) -> str:
    shown = ", ".join(str(pid) for pid in pids[:limit])
    return shown + (f", ... ({len(pids)} in all)" if len(pids) > limit else "")


def _path(path: str | None) -> str:
    if path is None:
        return "-"
    shown = path.encode("utf-8", "backslashreplace").decode("utf-8")  # surrogate escapes as \xNN
    return shown if shown else '""'


@public
def render_syscalls(report: SyscallReport, top: int | None = None) -> str:
    """The text of ``pounder syscalls``: what was traced, the calls per request by name, then the
    failing calls with their errno and path. ``top`` limits both tables to that many rows."""
    check_instance(report, SyscallReport, "render_syscalls: report")
    keepalive = "on" if report.keepalive else "off"
    warmup = (
        f", after {report.warmup_requests:,} warm-up requests (not traced)"
        if report.warmup_requests
        else ", no warm-up"
    )
    lines = [
        f"pounder {report.tool_version} syscalls: {report.server_name} (pid {report.server_pid}, found by "
        f"{report.found_by})",
        f"Load:      {report.requests:,} requests {report.method} {report.url} in {report.elapsed_s:.2f} s, "
        f"{report.connections} connections, keep-alive {keepalive}{warmup}",
        f"Traced:    {children_text(len(report.attached))} (pids {_pids(report.attached)}) with strace "
        f"{report.strace_version}; the parent with -f (children it starts are traced too), its own "
        f"{report.parent_calls:,} calls not counted",
        f"Calls:     {report.total_calls:,} in all, {_number(report.total_per_request)} per request; "
        f"{report.connections_accepted:,} connections accepted, {report.connections_opened:,} opened by pounder",
        "",
        "System calls per request",
        f"{'per request':>13} {'calls':>12} {'failed':>10}  syscall",
    ]
    shown = report.calls if top is None else report.calls[:top]
    for entry in shown:
        lines.append(f"{_number(entry.per_request):>13} {entry.calls:>12,} {entry.errors:>10,}  {entry.name}")
    if len(shown) < len(report.calls):
        lines.append(f"{'':>13} ... {len(report.calls) - len(shown)} more system calls (all of them in --json)")
    failed_total = sum(entry.errors for entry in report.calls)
    lines.append(
        f"{_number(report.total_per_request):>13} {report.total_calls:>12,} {failed_total:>10,}  total"
    )
    lines += ["", "Failing calls per request (errno, and the path for calls that take one)"]
    if not report.failures:
        lines.append("  none")
    else:
        lines.append(f"{'per request':>13} {'calls':>12}  {'errno':<12} {'syscall':<12} path")
        failures = report.failures if top is None else report.failures[:top]
        for failure in failures:
            lines.append(
                f"{_number(failure.per_request):>13} {failure.calls:>12,}  {failure.errno:<12} {failure.name:<12} "
                f"{_path(failure.path)}"
            )
        if len(failures) < len(report.failures):
            lines.append(f"{'':>13} ... {len(report.failures) - len(failures)} more (all of them in --json)")
    if report.messages:
        lines.append("")
        lines += [f"Note: {message}" for message in report.messages]
    return "\n".join(lines) + "\n"
