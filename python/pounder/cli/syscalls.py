"""``pounder syscalls``: a server's system calls per request, by name, and the failing ones with
their errno and path, from strace attached to its children while a bounded load runs.

The command maps flags to :func:`pounder.syscalls.trace_syscalls`; the rules and the text live
in ``pounder.syscalls``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated

import typer

from pounder import _interrupt
from pounder._files import check_distinct, check_output_path, write_outputs
from pounder.cli._bridge import given
from pounder.cli._common import interrupted, json_option, option, whole_number
from pounder.cli._load_options import LOCAL_URL, SharedOptions, io_parameter, load_parameter, takes_local_load
from pounder.cli._progress import live_progress
from pounder.load import LoadOptions
from pounder.syscalls import (
    DEFAULT_CONNECTIONS,
    DEFAULT_DURATION_S,
    DEFAULT_REQUESTS,
    DEFAULT_WARMUP,
    SyscallReport,
    render_syscalls,
    trace_syscalls,
)

_WHICH = "Which server"
_LOAD = "Load"
_OUT = "Output"
_MAX_TOP = 100_000

SYSCALLS_HELP = "\n\n".join(
    [
        "Count a server's system calls per request, by name, and list the failing ones with their errno and path "
        "(e.g. ENOENT from stat/open looking for .htaccess or for the path components of a virtual URI).",
        "pounder sends the warm-up requests (not traced), attaches strace -f to the server's parent and every "
        "child, runs -n requests (keep-alive off: each request is a connection of its own), waits until the "
        "children are idle, detaches strace and divides each count by the requests completed. The parent's own "
        "calls are not counted (children it starts during the run are, with a note); calls still blocked when "
        "strace detaches (an idle child in accept) are not counted.",
        "The server named must be the one behind the URL: one of its processes must listen on the URL's address "
        "and port (checked before anything is sent), and its children must accept pounder's connections. Only "
        "pounder may talk to the server meanwhile: more connections accepted than pounder opened, or a "
        "failed request, is an error. strace slows the server a lot; the counts, not the times, are the result.",
        "Needs strace (apt-get install strace) and permission to trace the server's processes (root or the "
        "server's user). The URL must be on this machine.",
        "Exit status: 0 done, 1 could not trace or count (also when the load got nowhere: no request succeeded, "
        "or no answer was 2xx or 3xx or of --expect-status), 2 bad input or something to fix first, 130 "
        "interrupted.",
    ]
)

Text = str | None


# fmt: off
URL_ARG = LOCAL_URL
WARMUP = option("--warmup", panel=_LOAD, metavar="N", help=(
    f"Requests sent before strace attaches, not traced (default {DEFAULT_WARMUP}; 0 for none)."))
JSON = json_option(_OUT, "pounder/syscalls/1", "tables")
TOP = option("--top", panel=_OUT, metavar="N", help="Show only the N most frequent calls and failures.")
LOG = option("--log", panel=_OUT, metavar="PATH", help="Keep strace's raw log in this file.")
# fmt: on


def _json_text(report: SyscallReport) -> str:
    # Paths that are not UTF-8 keep their bytes as \udcXX escapes (ensure_ascii), never an error.
    return json.dumps(report.to_dict(), indent=2) + "\n"


@takes_local_load(
    _WHICH, _LOAD,
    load_parameter("requests", _LOAD, value=str(DEFAULT_REQUESTS), help=(
        f"Requests to trace (default {DEFAULT_REQUESTS:,}; at most 100k: strace writes a few kB per request).")),
    load_parameter("connections", _LOAD, value=str(DEFAULT_CONNECTIONS), help=(
        f"Concurrent connections (default {DEFAULT_CONNECTIONS}). Keep it at or below the server's idle children, "
        "so that none is started during the trace.")),
    io_parameter(_LOAD),
    load_parameter("keepalive", _LOAD, "Default: off (each request is a connection of its own)."),
    load_parameter("duration", _LOAD, value=f"{DEFAULT_DURATION_S:g}s", help=(
        f"Stop the traced load after this long even if -n is not reached (default {DEFAULT_DURATION_S:g}s).")),
    load_parameter("timeout", _LOAD),
    before="warmup",
)  # fmt: skip
def syscalls_command(
    ctx: typer.Context,
    url: Annotated[str, URL_ARG],
    *,
    warmup: Annotated[str, WARMUP] = str(DEFAULT_WARMUP),
    json_path: Annotated[Text, JSON] = None,
    top: Annotated[Text, TOP] = None,
    log: Annotated[Text, LOG] = None,
) -> None:
    """Count a server's system calls per request (help: SYSCALLS_HELP)."""
    load, which = given(ctx, LoadOptions), given(ctx, SharedOptions)
    json_out = check_output_path(json_path, "--json", "JSON")
    check_distinct([("--json", json_out), ("--log", log)],
                   [("--server-pidfile", which.server_pidfile), *load.input_files()])  # fmt: skip
    rows = None if top is None else whole_number(top, "--top", _MAX_TOP)
    server = which.server()
    try:
        with live_progress(enabled=sys.stderr.isatty()) as on_progress:
            report = trace_syscalls(
                url, **server, warmup=warmup,
                log_path=log, on_progress=on_progress, options=load,
            )  # fmt: skip
    except KeyboardInterrupt:  # strace is stopped and detached by now
        kept = f"; strace's own log is in {log}" if log is not None and os.path.isfile(log) else ""
        raise interrupted("strace was stopped; a trace cut short is not divided among requests, so nothing was "
                          f"counted{kept}") from None
    with _interrupt.deferred():  # a signal now waits until the outputs are whole
        write_outputs([(json_out, "--json", lambda: _json_text(report))],
                      None if json_out == "-" else lambda: render_syscalls(report, top=rows))
