"""``pounder bench``: load a server and report what happened.

The command only maps flags to :meth:`pounder.BenchSpec.from_options`, runs the bench with
:func:`pounder.run_bench` and writes the outputs; all rules live in the library.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Annotated

import typer

from pounder._errors import PounderError, UsageError
from pounder._files import check_output_path, write_output
from pounder.cli._common import EXIT_INTERRUPTED, check_report_path, option, report_option, write_html_report
from pounder.cli._load_options import load_option, load_options
from pounder.cli._progress import live_progress
from pounder.load import BenchResult, BenchSpec, render_csv, render_report, run_bench, server_sampler

_LOAD = "Load"
_HTTP = "Requests"
_OUT = "Output"
_SERVER = "Server sampling"

BENCH_HELP = "\n\n".join(
    [
        "Load an HTTP server and report throughput, latency and errors.",
        "Closed loop by default: -c connections each send their next request as soon as the previous one is "
        "answered. Open loop with --rate or --stages: requests are sent on a schedule and latency is measured from "
        "the intended send time, so a slow server cannot hide its queueing.",
        "The target must be on this machine (127.0.0.0/8 or ::1) unless --allow-remote.",
        "Exit status: 0 done, 1 could not run, 2 bad input, 130 interrupted (the partial result is still reported).",
    ]
)

Text = str | None


# fmt: off
URL_ARG = typer.Argument(metavar="URL", help="http:// URL to load (omit with -f).", show_default=False)
URL_FILE = option("-f", "--url-file", panel=_LOAD, metavar="FILE", help=(
    "File of URLs, one per line, optionally preceded by a weight ('3 http://...'); blank lines and # comments are "
    "skipped."))
ORDER = option("--order", panel=_LOAD, metavar="sequential|random", help=(
    "How targets are picked: in turn (default), or at random weighted by their weight (weights only matter for "
    "random)."))
CONNECTIONS = load_option("connections", _LOAD)
REQUESTS = load_option("requests", _LOAD, "Without -n, -d or --stages the run lasts 10 s.")
DURATION = load_option("duration", _LOAD, "Default 10s.")
THREADS = load_option("threads", _LOAD)
RATE = load_option("rate", _LOAD, "Length: -d, else -n divided by the rate, else 10s.")
STAGES = load_option("stages", _LOAD)
MAX_IN_FLIGHT = load_option("max_in_flight", _LOAD)
WARMUP = option("--warmup", panel=_LOAD, metavar="TIME|N", help=(
    "Run this long (5s) or this many requests (100) first, without measuring them."))
NO_KEEPALIVE = load_option("no_keepalive", _HTTP)
CALLS_PER_CONN = load_option("calls_per_conn", _HTTP)
THROTTLE = load_option("throttle", _HTTP)
UNIX_SOCKET = option("--unix-socket", panel=_HTTP, metavar="PATH", help=(
    "Connect to this Unix socket; the URL then only gives the Host header and the path."))
METHOD = load_option("method", _HTTP)
BODY = load_option("body", _HTTP)
CONTENT_TYPE = load_option("content_type", _HTTP)
HEADER = load_option("header", _HTTP)
COOKIE = load_option("cookie", _HTTP)
AUTH = load_option("auth", _HTTP)
TIMEOUT = load_option("timeout", _HTTP)
ALLOW_REMOTE = load_option("allow_remote", _HTTP)
JSON = option("--json", panel=_OUT, metavar="PATH", help=(
    "Write the result as JSON (schema pounder/bench-result/1); '-' for stdout, which replaces the report."))
REPORT = report_option(_OUT, "result")
CSV = option("--csv", panel=_OUT, metavar="PATH", help=(
    "Write the latency percentiles as CSV (percent,latency_ms), like ab -e; '-' for stdout."))
TSV = option("--tsv", panel=_OUT, metavar="PATH", help="Stream every request's timings to this TSV file.")
HDR_LOG = option("--hdr-log", panel=_OUT, metavar="PATH", help=(
    "Write an HdrHistogram interval log (1 s intervals, corrected latency, microseconds)."))
SERVER_PID = option("--server-pid", panel=_SERVER, metavar="PID", help=(
    "Sample this server's processes (the parent and all its children) while the load runs: server CPU per "
    "request, children spawned, memory per child and its growth."))
SERVER_PIDFILE = load_option("server_pidfile", _SERVER)
SERVER_NAME = load_option("server_name", _SERVER)
SERVER_STATUS = option("--server-status", panel=_SERVER, metavar="URL", help=(
    "Also read Apache's mod_status page (?auto) at each sample: busy and idle children."))
SAMPLE_INTERVAL = option("--sample-interval", panel=_SERVER, metavar="TIME", help=(
    "How often the server is sampled; default 1s."))
QUIET = option("-q", "--quiet", panel=_OUT, help="No progress and no report (files are still written).")
# fmt: on


def _outputs(json_path: str | None, csv_path: str | None) -> tuple[str | None, str | None]:
    json_out = check_output_path(json_path, "--json")
    csv_out = check_output_path(csv_path, "--csv")
    if json_out == "-" and csv_out == "-":
        raise UsageError("--json and --csv cannot both write to stdout ('-')")
    return json_out, csv_out


def _emit(result: BenchResult, json_out: str | None, csv_out: str | None, quiet: bool) -> None:
    """Write the files first (so a broken pipe cannot lose them), then the report; a file that
    cannot be written after all is reported once the report is out, so the numbers still show."""
    outputs = ((json_out, "--json", result.to_json), (csv_out, "--csv", partial(render_csv, result)))
    failures: list[PounderError] = []
    for path, what, render in outputs:
        if path is not None:
            try:
                write_output(path, render(), what)
            except PounderError as error:
                failures.append(error)
    if not quiet and "-" not in (json_out, csv_out):
        write_output("-", render_report(result))
    if failures:
        raise failures[0]


def bench_command(
    url: Annotated[Text, URL_ARG] = None,
    url_file: Annotated[Text, URL_FILE] = None,
    order: Annotated[str, ORDER] = "sequential",
    connections: Annotated[Text, CONNECTIONS] = None,
    requests: Annotated[Text, REQUESTS] = None,
    duration: Annotated[Text, DURATION] = None,
    threads: Annotated[Text, THREADS] = None,
    rate: Annotated[Text, RATE] = None,
    stages: Annotated[Text, STAGES] = None,
    max_in_flight: Annotated[Text, MAX_IN_FLIGHT] = None,
    warmup: Annotated[Text, WARMUP] = None,
    no_keepalive: Annotated[bool, NO_KEEPALIVE] = False,
    calls_per_conn: Annotated[Text, CALLS_PER_CONN] = None,
    throttle: Annotated[Text, THROTTLE] = None,
    unix_socket: Annotated[Text, UNIX_SOCKET] = None,
    method: Annotated[Text, METHOD] = None,
    body: Annotated[Text, BODY] = None,
    content_type: Annotated[Text, CONTENT_TYPE] = None,
    header: Annotated[list[str] | None, HEADER] = None,
    cookie: Annotated[list[str] | None, COOKIE] = None,
    auth: Annotated[Text, AUTH] = None,
    timeout: Annotated[Text, TIMEOUT] = None,
    allow_remote: Annotated[bool, ALLOW_REMOTE] = False,
    json_path: Annotated[Text, JSON] = None,
    csv_path: Annotated[Text, CSV] = None,
    tsv_path: Annotated[Text, TSV] = None,
    hdr_log: Annotated[Text, HDR_LOG] = None,
    server_pid: Annotated[int | None, SERVER_PID] = None,
    server_pidfile: Annotated[Text, SERVER_PIDFILE] = None,
    server_name: Annotated[Text, SERVER_NAME] = None,
    server_status: Annotated[Text, SERVER_STATUS] = None,
    sample_interval: Annotated[Text, SAMPLE_INTERVAL] = None,
    quiet: Annotated[bool, QUIET] = False,
    report: Annotated[Text, REPORT] = None,
) -> None:
    """Load an HTTP server and report throughput, latency and errors (help: BENCH_HELP)."""
    load = load_options(locals())
    json_out, csv_out = _outputs(json_path, csv_path)
    check_report_path(report)
    spec = BenchSpec.from_options(
        url, url_file=url_file, order=order, warmup=warmup, unix_socket=unix_socket, tsv_path=tsv_path,
        hdr_log_path=hdr_log, options=load,
    )  # fmt: skip
    sampler = server_sampler(
        pid=server_pid, pidfile=server_pidfile, name=server_name, status_url=server_status,
        interval=sample_interval, allow_remote=allow_remote,
    )  # fmt: skip
    with live_progress(enabled=not quiet and sys.stderr.isatty()) as on_progress:
        result = run_bench(spec, on_progress, sampler)
    _emit(result, json_out, csv_out, quiet)
    if report is not None:
        write_html_report([result], report)
    if result.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
