"""The parts of the page for a ``pounder top --json`` view (``pounder/top/1``) and a ``pounder
syscalls --json`` result (``pounder/syscalls/1``): the tables their commands print, as tables of
the page, read through their typed readers (:func:`pounder.top.top_from_dict`,
:func:`pounder.syscalls.syscalls_from_dict`)."""

from __future__ import annotations

from datetime import datetime, timezone

from pounder._units import age_text, children_text, count_text, mib
from pounder.report._html import Section, bullets, paragraph, table
from pounder.syscalls import SyscallReport
from pounder.top import TopView

_DASH = "-"


def top_sections(view: TopView, source: str) -> list[Section]:
    """The children of a ``pounder top`` view: a row per child (the exited ones last) and the pool's totals."""
    totals = view.totals
    section = Section(f"Children: {view.name} (pid {view.root_pid}, found by {view.found_by})")
    states = f"states from {view.status}'s status page" if view.status else "states from /proc"
    cpu = (f"CPU % over the {view.interval_s:.2f} s since the view before" if view.interval_s is not None
           else "no CPU % (the first view has no view before)")
    taken_at = datetime.fromtimestamp(view.taken_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    section.add(paragraph(f"{source}: the view taken at {taken_at}; {states}; {cpu}. Sizes in MiB (1 MiB = "
                          "1,048,576 bytes) from /proc/PID/smaps_rollup."))
    by_state = ", ".join(f"{count} {state}" for state, count in totals.by_state.items())
    facts = [f"{children_text(totals.children)}" + (f" ({by_state})" if by_state else ""),
             f"Footprint (sum of PSS, parent included): {mib(totals.footprint)} MiB; the children's USS: "
             f"{mib(totals.children_uss)} MiB; parent RSS: {mib(totals.parent_rss)} MiB",
             "Requests per second: " + (_DASH + " (no status page, or the first view)" if totals.requests_per_s is None
                                        else f"{totals.requests_per_s:,.1f}"),
             "Accept queue: " + (_DASH + " (not readable)" if totals.accept_queue is None
                                 else count_text(totals.accept_queue, "connection", "connections") + " waiting")]
    section.add(bullets(facts))
    rows = [[child.pid, f"{child.state} ({child.detail})" if child.detail and child.state != "running" else child.state,
             _DASH if child.requests is None else f"{child.requests:,}",
             _DASH if child.cpu_percent is None else f"{child.cpu_percent:.1f}", mib(child.uss), mib(child.shared),
             mib(child.pss), age_text(child.age_s), "new" if child.new else ""]
            for child in sorted(view.children, key=lambda c: c.pid)]  # fmt: skip
    rows += [[e.pid, "exited", _DASH if e.requests is None else f"{e.requests:,}", "", "", "", "", age_text(e.age_s),
              f"gone {count_text(e.views_ago, 'view', 'views')} ago"] for e in view.exited]
    if rows:
        section.add(table(["pid", "state", "requests", "CPU %", "USS MiB", "shared MiB", "PSS MiB", "age", ""], rows))
    else:
        section.add(paragraph("No child process: the server had none when the view was taken."))
    if view.notes:
        section.add(bullets([f"note: {note}" for note in view.notes]))
    return [section]


def _number(value: float) -> str:
    """A per-request figure as ``pounder syscalls`` prints it (three decimals below 0.1)."""
    return f"{value:,.3f}" if 0 < value < 0.1 else f"{value:,.2f}"


def syscalls_sections(report: SyscallReport, source: str) -> list[Section]:
    """System calls per request by name, then the failing ones with their errno and path."""
    section = Section(f"System calls: {report.server_name} (pid {report.server_pid}, found by {report.found_by})")
    warmup = (f", after {count_text(report.warmup_requests, 'warm-up request', 'warm-up requests')} (not traced)"
              if report.warmup_requests else ", no warm-up")
    section.add(bullets([
        f"{source}: pounder {report.tool_version}, started {report.started_at}",
        f"Load: {count_text(report.requests, 'request', 'requests')} {report.method} {report.url} in "
        f"{report.elapsed_s:.2f} s, {count_text(report.connections, 'connection', 'connections')}, keep-alive "
        f"{'on' if report.keepalive else 'off'}{warmup}",
        f"Traced: {children_text(len(report.attached))} with strace {report.strace_version}; the parent with -f, "
        f"its own {count_text(report.parent_calls, 'call', 'calls')} not counted",
        f"Calls: {report.total_calls:,} in all, {_number(report.total_per_request)} per request; "
        f"{report.connections_accepted:,} connections accepted, {report.connections_opened:,} opened by pounder",
    ]))  # fmt: skip
    rows = [[entry.name, _number(entry.per_request), f"{entry.calls:,}", f"{entry.errors:,}"] for entry in report.calls]
    rows.append(["total", _number(report.total_per_request), f"{report.total_calls:,}",
                 f"{sum(entry.errors for entry in report.calls):,}"])
    section.add(table(["syscall", "per request", "calls", "failed"], rows))
    failing = Section("Failing calls per request (errno, and the path for calls that take one)")
    if report.failures:
        failing.add(table(["syscall", "errno", "path", "per request", "calls"], [
            [f.name, f.errno, "-" if f.path is None else f.path or '""', _number(f.per_request), f"{f.calls:,}"]
            for f in report.failures]))  # fmt: skip
    else:
        failing.add(paragraph("No call failed."))
    if report.messages:
        failing.add(bullets([f"Note: {message}" for message in report.messages]))
    return [section, failing]
