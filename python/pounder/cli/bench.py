"""``pounder bench``: load a server and report what happened.

The command only maps flags to :func:`pounder.bench` and writes the outputs; all rules live in the
library.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Any

import typer

from pounder import _interrupt
from pounder._errors import PounderError, UsageError
from pounder._files import check_distinct, check_output_path, write_output
from pounder._flags import flag
from pounder.agents import agent_file
from pounder.cli._bridge import fields_of, flag_of, given, takes
from pounder.cli._common import (
    BENCH_GATES,
    Measured,
    check_junit_path,
    check_report_path,
    gates_exit,
    interrupted,
    json_option,
    kept_outputs,
    measured_outputs,
    write_html_report,
)
from pounder.cli._load_options import (
    AgentFlags,
    SharedOptions,
    load_parameter,
    measured_load,
    sampled_server,
    threads_warning,
)
from pounder.cli._metrics_out import metrics_option, metrics_out
from pounder.cli._progress import live_progress
from pounder.cli.top import server_line
from pounder.load import LoadOptions, OutputWriteError, bench
from pounder.results import BenchResult, load_failure, render_csv, render_report
from pounder.traffic import AccessLog, read_access_log

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
        "Exit status: 0 done, 1 could not run, the run got nowhere (no request succeeded, no answer was 2xx or "
        "3xx or of --expect-status, or with --scenario no loop step succeeded) or an agent was lost (the result is "
        "still reported and written), "
        "2 bad input, 3 a --fail-if gate failed, 130 interrupted by Ctrl-C or SIGHUP, 143 by SIGTERM (the partial "
        "result is still reported, its gates too).",
    ]
)

Text = str | None

URL_ARG = typer.Argument(metavar="URL", help=(
    "http:// or https:// URL to load (omit with -f); with --access-log or --scenario the server's base, "
    "http://HOST:PORT or https://HOST:PORT."),
    show_default=False)  # fmt: skip


# fmt: off
@dataclass(frozen=True)
class BenchFlags:
    """The options of ``pounder bench`` that are its own (the load's are :class:`~pounder.LoadOptions`',
    the server's and the access log's :class:`~pounder.cli._load_options.SharedOptions`'), each in
    the panel --help shows it in; read with ``given(ctx, BenchFlags)``."""

    url_file: str | None = field(default=None, metadata=flag("-f", "--url-file", metavar="FILE", panel=_LOAD, help=(
        "File of URLs, one per line, optionally preceded by a weight and a method ('3 http://...', 'HEAD "
        "http://...', '3 POST http://...'; a GET or HEAD line sends no body); blank lines and # comments are "
        "skipped.")))
    order: str | None = field(default=None, metadata=flag("--order", metavar="sequential|random", panel=_LOAD, help=(
        "How targets are picked: in turn (default), or at random weighted by their weight (weights only matter for "
        "random; --access-log is always random).")))
    warmup: str | None = field(default=None, metadata=flag("--warmup", metavar="TIME|N", panel=_LOAD, help=(
        "Run this long (5s) or this many requests (100) first, without measuring them.")))
    unix_socket: str | None = field(default=None, metadata=flag("--unix-socket", metavar="PATH", panel=_HTTP, help=(
        "Connect to this Unix socket; the URL then only gives the Host header and the path.")))
    json_path: str | None = field(default=None, metadata=flag_of(json_option(_OUT, "pounder/bench-result/3",
                                                                             "report")))
    csv_path: str | None = field(default=None, metadata=flag("--csv", metavar="PATH", panel=_OUT, help=(
        "Write the latency percentiles as CSV (percent,latency_ms), like ab -e; '-' for stdout.")))
    tsv_path: str | None = field(default=None, metadata=flag("--tsv", metavar="PATH", panel=_OUT, help=(
        "Stream every request's timings to this TSV file (with --ray, each agent writes PATH with .agent-N before "
        "the suffix, on its own machine).")))
    hdr_log: str | None = field(default=None, metadata=flag("--hdr-log", metavar="PATH", panel=_OUT, help=(
        "Write an HdrHistogram interval log (1 s intervals, corrected latency, microseconds; with --ray, one per "
        "agent like --tsv).")))
    baseline: str | None = field(default=None, metadata=flag("--baseline", metavar="FILE", panel=_OUT, help=(
        "Compare this run with a saved one (its --json) of the same spec: another target, load model or request "
        "is refused before anything is sent. Requests/s and p99 against it, medians over each run's full seconds "
        "with a 95 % bootstrap interval over the seconds; gates slower>N% and p99-slower>N% (see --fail-if). "
        "Weaker evidence than pounder compare's interleaved trials: the report says how much (a measured "
        "false-alarm rate).")))
    server_status: str | None = field(default=None, metadata=flag("--server-status", metavar="URL", panel=_SERVER,
                                                                  help=(
        "Also read Apache's mod_status page (?auto) at each sample: busy and idle children.")))
    sample_interval: str | None = field(default=None, metadata=flag(
        "--sample-interval", metavar="TIME", panel=_SERVER, help="How often the server is sampled; default 1s."))
# fmt: on


def _outputs(json_path: str | None, csv_path: str | None) -> tuple[str | None, str | None]:
    json_out = check_output_path(json_path, "--json", "JSON")
    csv_out = check_output_path(csv_path, "--csv", "CSV")
    if json_out == "-" and csv_out == "-":
        raise UsageError("--json and --csv cannot both write to stdout ('-')")
    return json_out, csv_out


def _emit(result: BenchResult, json_out: str | None, csv_out: str | None, quiet: bool,
          log: AccessLog | None = None, junit: str | None = None) -> None:
    """Write the files first (so a broken pipe cannot lose them), then the report; a file that
    cannot be written after all is reported once the report is out, so the numbers still show."""
    outputs = ((json_out, "--json", result.to_json), (csv_out, "--csv", partial(render_csv, result)),
               (junit, "--junit", result.to_junit))
    failures: list[PounderError] = []
    for path, what, render in outputs:
        if path is not None:
            try:
                write_output(path, render(), what)
            except PounderError as error:
                failures.append(error)
    if not quiet and "-" not in (json_out, csv_out):
        summary = "".join(f"{line}\n" for line in log.describe()) + "\n" if log is not None else ""
        write_output("-", summary + render_report(result))
    if failures:
        raise failures[0]


@takes(
    *fields_of(BenchFlags, "url_file"),
    *(load_parameter(name, _LOAD) for name in ("access_log", "exclude_static", "log_methods")),
    *fields_of(BenchFlags, "order"),
    *measured_load(_LOAD, _HTTP, sizes={"requests": "Without -n, -d or --stages the run lasts 10 s.",
                                        "duration": "Default 10s.",
                                        "rate": "Length: -d, else -n divided by the rate, else 10s."},
                   paced=("stages", "max_in_flight", "replay", "speed"),
                   request=("calls_per_conn", "throttle", "method", "body", "content_type", "header", "cookie",
                            "auth")),
    *fields_of(BenchFlags, "warmup", "unix_socket", "json_path", "csv_path", "tsv_path", "hdr_log", "baseline"),
    *sampled_server(_SERVER, (
        "Sample this server's processes (the parent and all its children) while the load runs: server CPU per "
        "completed request, children spawned and exited, memory per child and its growth.")),
    *fields_of(BenchFlags, "server_status", "sample_interval"),
    AgentFlags,
    *measured_outputs(_OUT, "result", BENCH_GATES, "Evaluated on the final result (merged, with --ray). With "
                      "--baseline also slower>N% (requests/s in closed loop, p99 in open loop, as in pounder compare) "
                      "and p99-slower>N%: they fail only when the WHOLE 95 % interval of new/baseline is more than "
                      "N % slower."),
    metrics_option(_OUT),
)  # fmt: skip
def bench_command(ctx: typer.Context, url: Annotated[Text, URL_ARG] = None) -> None:
    """Load an HTTP server and report throughput, latency and errors (help: BENCH_HELP)."""
    own, out = given(ctx, BenchFlags), given(ctx, Measured)
    load, shared = given(ctx, LoadOptions), given(ctx, SharedOptions)
    access_log, exclude_static, log_methods = shared.access_log, shared.exclude_static, shared.log_methods
    json_out, csv_out = _outputs(own.json_path, own.csv_path)
    check_report_path(out.report)
    check_junit_path(out.junit)
    check_distinct([("--json", json_out), ("--csv", csv_out), ("--tsv", own.tsv_path), ("--hdr-log", own.hdr_log),
                    ("--report", out.report), ("--junit", out.junit)],
                   [("-f/--url-file", own.url_file), ("--access-log", access_log),
                    ("--server-pidfile", shared.server_pidfile), ("--baseline", own.baseline), *load.input_files()])
    log = None
    if access_log is not None:  # read here, so that the report can say what it held
        log = read_access_log(access_log, methods=log_methods or ("GET", "HEAD"), exclude_static=exclude_static)
    from_log: dict[str, Any] = (  # without a log the library says what the log options need
        {"access_log": log} if log is not None else {"exclude_static": exclude_static, "log_methods": log_methods})
    with metrics_out(ctx, "bench", allow_remote=load.allow_remote):
        _bench(ctx, url, own, out, load, shared, log, from_log, json_out, csv_out)


def _bench(ctx: typer.Context, url: str | None, own: BenchFlags, out: Measured, load: LoadOptions,
           shared: SharedOptions, log: AccessLog | None, from_log: dict[str, Any], json_out: str | None,
           csv_out: str | None) -> None:  # fmt: skip
    """The run and its outputs (inside ``--metrics-out``'s block)."""
    unwritten: OutputWriteError | None = None
    live = not out.quiet and sys.stderr.isatty()
    with (server_line(shared) if live else nullcontext()) as line, \
            live_progress(enabled=live, server_line=line) as on_progress:
        try:
            result = bench(
                url, url_file=own.url_file, **from_log, order=own.order, warmup=own.warmup,
                unix_socket=own.unix_socket, tsv_path=own.tsv_path, hdr_log_path=own.hdr_log, options=load,
                **shared.server(), server_status=own.server_status, sample_interval=own.sample_interval,
                sender=given(ctx, AgentFlags).sender(),
                on_progress=threads_warning(load, on_progress), gates=out.gates(), baseline=own.baseline,
            )  # fmt: skip
        except OutputWriteError as error:  # the figures are whole: shown, then the one line
            result, unwritten = error.result, error
    with _interrupt.deferred():  # a signal now waits until every output is whole
        _emit(result, json_out, csv_out, out.quiet, log, out.junit)
        if out.report is not None:
            write_html_report([result], out.report)
    if unwritten is not None:
        raise PounderError(str(unwritten))
    if result.interrupted:
        logs = [own.tsv_path, own.hdr_log]
        if result.agents is not None:  # each agent's own, on its machine
            logs = [None if path is None else f"{agent_file(path, 'N')} (on each agent's machine)" for path in logs]
        raise interrupted(kept_outputs([json_out, csv_out, *logs, out.report, out.junit], out.quiet))
    partial = None if result.agents is None else result.agents.partial_line()
    if partial is not None:
        raise PounderError(partial)
    nowhere = load_failure(result)  # the outputs are written; the run still got nowhere
    if nowhere is not None:
        raise PounderError(nowhere)
    gates_exit(None if result.gates is None else result.gates.failure_line())
