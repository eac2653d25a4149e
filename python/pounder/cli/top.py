"""``pounder top``: a live view of a pre-forking server's children, refreshed every interval; ``q``
or Ctrl-C quits. ``--once`` shows one view (``--json -``: as JSON, for scripts); ``--prometheus``
serves the views as a Prometheus scrape endpoint while top runs.

The command maps flags to :class:`pounder.top.Top`; the rules and the text live in ``pounder.top``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

import psutil
import typer

from pounder._errors import PounderError, UsageError
from pounder._files import STDOUT, check_distinct, check_output_path, write_output, write_outputs
from pounder._flags import flag, like
from pounder.cli._bridge import given, takes
from pounder.cli._common import duration_between, interrupted, json_option, option
from pounder.cli._load_options import SharedOptions
from pounder.cli._which import named_server
from pounder.load import LoadOptions
from pounder.procs import MEM_OPTIONS, SERVER_OPTIONS
from pounder.top import Top, TopExporter, TopView, check_scrape_address, check_status_url, compact_line, render_top

if TYPE_CHECKING:
    from rich.text import Text as RichText

_WHICH = "Which server"
_VIEW = "View"
_EXPORT = "Prometheus"

TOP_HELP = "\n\n".join(
    [
        "Show what every child of a pre-forking server is doing now, refreshed every --interval: its pid, state, "
        "requests served (when the server's status page tells it), CPU % since the refresh before, USS, shared "
        "and PSS (from /proc/PID/smaps_rollup) and age; the pool's footprint (sum of PSS), requests per second "
        "and the connections waiting in its accept queue. Children that appeared are marked new, those that "
        "exited are listed as exited, for 3 refreshes. q or Ctrl-C quits.",
        "How the state is known: with --status, the server's own word (Apache mod_status's table with "
        "ExtendedStatus On: idle, reading, writing, keepalive...; php-fpm's status page, asked with ?full&json; "
        "uWSGI's stats server, unix:PATH or --stats-http's URL; Puma's control app /stats); requests per second "
        "come from its total of requests. Without it, from /proc: running (on a CPU or ready to run), accept "
        "(blocked in accept, or in poll/select/epoll_wait on the server's listening socket, or on the accept "
        "mutex: waiting for a new connection; /proc/PID/syscall, read as root or the server's user), else "
        "sleeping with the kernel function it waits in (wchan); requests per second are then unknown (—).",
        "CPU % is the child's CPU time (all threads, the kernel's per-process clock) over the wall time since the "
        "refresh before: 100 is one CPU. The accept queue is the kernel's count of connections that arrived and "
        "no child has accepted yet (sock_diag), summed over the server's TCP listening sockets.",
        "With --prometheus ADDRESS, the figures of each view (per child: state, requests, CPU, USS, shared, PSS, "
        "age; the pool's totals) are also served at http://ADDRESS/metrics for Prometheus to scrape, until top "
        "ends (the metrics: --prometheus below).",
        "Exit status: 0 done (q), 1 could not read (the server exited), 2 bad input, 130 Ctrl-C.",
    ]
)

Text = str | None

# fmt: off
PID = option("--pid", panel=_WHICH, metavar="PID", help="The server's parent process.")
PIDFILE = option("--pidfile", panel=_WHICH, metavar="FILE", help=(
    "A file holding the parent's pid (Apache's PidFile, gunicorn --pid, Starman --pid)."))
NAME = option("--name", panel=_WHICH, metavar="TEXT", help=(
    "Part of the process name or command line; the top-most matching process is the parent."))
HIDDEN_PID, HIDDEN_PIDFILE, HIDDEN_NAME = (typer.Option(flag, hidden=True) for flag in SERVER_OPTIONS)
STATUS = option("--status", panel=_WHICH, metavar="URL", help=(
    "The server's status page on this machine: http://127.0.0.1:PORT/server-status (Apache, ExtendedStatus On), "
    "php-fpm's pm.status_path, Puma's control app /stats, uWSGI's --stats-http URL, or unix:PATH (uWSGI's "
    "stats socket, Puma's control socket)."))
INTERVAL = option("--interval", panel=_VIEW, metavar="TIME", help="Time between refreshes (default 1s; 100ms to 1h).")
ONCE = option("--once", panel=_VIEW, help=(
    "Show one view and exit (CPU % and requests per second over one --interval)."))
JSON = json_option(_VIEW, "pounder/top/1", "table", "Without --once, the file is rewritten at every refresh.")


@dataclass(frozen=True)
class TopFlags:
    """The options of ``pounder top`` declared on fields (``given(ctx, TopFlags)``)."""

    prometheus: str | None = field(default=None, metadata=flag("--prometheus", metavar="ADDRESS", panel=_EXPORT,
                                                               help=(
        "Serve each view's figures at http://ADDRESS/metrics for Prometheus to scrape while top runs (live or "
        "printing view after view; not with --once): HOST:PORT, [::1]:PORT, or :PORT for 127.0.0.1. Metrics "
        "pounder_top_child_state{state,source}, pounder_top_child_requests_total, "
        "pounder_top_child_cpu_seconds_total, pounder_top_child_cpu_ratio, "
        "pounder_top_child_uss_bytes, _shared_bytes, _pss_bytes, _age_seconds (labels server, pid) and the "
        "pool's pounder_top_children, _footprint_bytes, _children_uss_bytes, _parent_rss_bytes, "
        "_requests_per_second, _accept_queue_connections, _view_timestamp_seconds (label server); a figure top "
        "does not know is left out. Needs prometheus_client (pip install 'pounder[metrics]').")))
    allow_remote: bool = field(default=False, metadata=like(LoadOptions, "allow_remote", panel=_EXPORT, help=(
        "Allow a --prometheus address that is not a loopback address (127.0.0.0/8, ::1): the figures are then "
        "served to the network.")))
# fmt: on


def _styled(view: TopView, height: int) -> RichText:
    from rich.text import Text as RichTextClass

    rows = max(1, height - 5 - len(view.exited) - len(view.notes))
    styled = RichTextClass()
    for index, line in enumerate(render_top(view, max_rows=rows).splitlines(keepends=True)):
        style = "bold" if index in (0, 1, 3) else ""
        if line.rstrip().endswith(" new"):
            style = "green"
        elif line.rstrip().endswith(" exited"):
            style = "red"
        styled.append(line, style=style)
    styled.append("q or Ctrl-C quits\n", style="dim")
    return styled


@contextlib.contextmanager
def _keys() -> Iterator[int | None]:
    """stdin in cbreak mode (keys read one by one, Ctrl-C still a signal) while the view runs, put
    back after; None when stdin is no terminal."""
    if not sys.stdin.isatty():
        yield None
        return
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    try:
        yield fd
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _wait(fd: int | None, seconds: float) -> bool:
    """Wait ``seconds``; True when q was typed meanwhile."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if fd is None:
            time.sleep(left)
            return False
        ready, _, _ = select.select([fd], [], [], left)
        if ready and os.read(fd, 32).lower().startswith(b"q"):
            return True
    return False


Publish = Callable[[TopView], None]


def _live(top: Top, interval: float, json_out: str | None, publish: Publish) -> None:
    """Refresh in place until q (on a terminal), else print one view after the other."""
    from rich.console import Console
    from rich.live import Live

    if not sys.stdout.isatty():
        while True:
            view = _view(top, json_out, publish)
            write_output(STDOUT, render_top(view) + "\n")
            if getattr(sys.stdout, "reader_gone", False):  # a closed pipe (pounder top | head): done, as q
                return
            time.sleep(interval)
    console = Console(highlight=False)
    with _keys() as fd, Live(console=console, auto_refresh=False, vertical_overflow="crop") as live:
        while True:
            live.update(_styled(_view(top, json_out, publish), console.height - 1), refresh=True)
            if _wait(fd, interval):
                return


def _view(top: Top, json_out: str | None, publish: Publish) -> TopView:
    view = top.view()
    publish(view)
    if json_out is not None:
        write_output(json_out, json.dumps(view.to_dict(), indent=2) + "\n", "--json")
    return view


@takes(TopFlags)
def top_command(
    ctx: typer.Context,
    pid: Annotated[Text, PID] = None,
    pidfile: Annotated[Text, PIDFILE] = None,
    name: Annotated[Text, NAME] = None,
    status: Annotated[Text, STATUS] = None,
    interval: Annotated[str, INTERVAL] = "1s",
    once: Annotated[bool, ONCE] = False,
    json_path: Annotated[Text, JSON] = None,
    server_pid: Annotated[Text, HIDDEN_PID] = None,
    server_pidfile: Annotated[Text, HIDDEN_PIDFILE] = None,
    server_name: Annotated[Text, HIDDEN_NAME] = None,
) -> None:
    """Show a server's children live (help: TOP_HELP)."""
    flags = given(ctx, TopFlags)
    if flags.prometheus is not None:
        if once:
            raise UsageError("--prometheus serves the views while top runs: not with --once")
        check_scrape_address(flags.prometheus, allow_remote=flags.allow_remote)
    elif flags.allow_remote:
        raise UsageError("--allow-remote is for a --prometheus address that is not loopback: give --prometheus")
    seconds = duration_between(interval, "--interval", 0.1, 3600, "100ms and 1h")
    json_out = check_output_path(json_path, "--json", "JSON")
    if json_out == STDOUT and not once:
        raise UsageError("--json - needs --once (give a file to have it rewritten at every refresh)")
    check_distinct([("--json", json_out)], [("--pidfile", pidfile), ("--server-pidfile", server_pidfile)])
    status_url = None if status is None else check_status_url(status)
    which = (pid, pidfile, name, server_pid, server_pidfile, server_name)
    target = named_server(dict(zip((*MEM_OPTIONS, *SERVER_OPTIONS), which, strict=True)))
    if not target.children:
        parent = _parent(target.pid)
        raise UsageError(f"process {target.pid} ({target.name}) has no children: name the parent of a pre-forking "
                         "server" + (f" (this one's parent is {parent})" if parent else ""))  # fmt: skip
    try:
        with _exporter(flags) as exporter, Top(target, status_url) as top:
            if once:
                time.sleep(seconds)
                view = top.view()
                write_outputs([(json_out, "--json", lambda: json.dumps(view.to_dict(), indent=2) + "\n")],
                              None if json_out == STDOUT else lambda: render_top(view))
                return
            _live(top, seconds, json_out, (lambda view: None) if exporter is None else exporter.publish)
    except KeyboardInterrupt:
        raise interrupted("nothing to keep: the view was only shown" if json_out is None
                          else f"the last view is in {json_out}") from None


def _exporter(flags: TopFlags) -> contextlib.AbstractContextManager[TopExporter | None]:
    """The scrape endpoint of --prometheus (its address said on stderr), or none."""
    if flags.prometheus is None:
        return contextlib.nullcontext()
    exporter = TopExporter(flags.prometheus, allow_remote=flags.allow_remote)
    sys.stderr.write(f"pounder: serving the views for Prometheus at {exporter.url}\n")
    sys.stderr.flush()
    return exporter


def _parent(pid: int) -> int | None:
    """The parent of ``pid`` when it is not init (a worker's master), else None."""
    try:
        ppid = psutil.Process(pid).ppid()
    except psutil.Error:
        return None
    return ppid if ppid > 1 else None


@contextlib.contextmanager
def server_line(which: SharedOptions) -> Iterator[Callable[[], str | None] | None]:
    """For ``bench --server-*`` on a terminal: a callable giving the server's children in one line
    (:func:`pounder.top.compact_line`; None once the server cannot be read), or None without a server."""
    target = which.target()
    if target is None:
        yield None
        return
    with Top(target) as top:

        def line() -> str | None:
            try:
                return compact_line(top.view())
            except PounderError:
                return None

        yield line
