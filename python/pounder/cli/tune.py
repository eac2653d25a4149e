"""``pounder tune``: start the real server, sweep its five parameters, recommend a configuration.

The command maps flags to an adapter (:func:`pounder.pool.make_adapter`) and
:func:`pounder.tune.make_options`, then runs :func:`pounder.tune.tune` (or ``resume``); the steps
and the rules live in ``pounder.tune``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from pounder._errors import UsageError
from pounder._files import check_distinct
from pounder._units import parse_count
from pounder.cli._common import check_report_path, measured_run, option, report_option, write_html_report
from pounder.cli._progress import live_status
from pounder.load import Progress
from pounder.pool import KINDS, Adapter, ResultsDir, demo_adapter, make_adapter
from pounder.tune import TuneResult, make_options, open_run, render_tune, resume, tune

_SERVER = "Server"
_RUN = "Run"
_GOALS = "Goals"

TUNE_HELP = "\n\n".join([
    "Start a pre-forking server on a free loopback port, measure it, and recommend its five parameters "
    "(MaxClients, MaxRequestsPerChild, StartServers, MinSpareServers, MaxSpareServers) in its own syntax.",
    "SERVER TARGET is one of: apache HTTPD.CONF (your configuration; pounder replaces Listen, PidFile, the five "
    "directives and their kin), gunicorn MODULE:APP (sync workers), starman APP.PSGI, or command 'CMD' (any "
    "server, with {port}, {workers} and {max_requests} in the command).",
    "Steps: child sizes after warm-up and after K requests each; the memory bound (RAM - shared) / child USS; "
    "a sweep of the number of children; a MaxRequestsPerChild sweep; a step from idle to full load for the spare "
    "servers (Apache). Every point is written to the results directory as it is measured: after Ctrl-C, "
    "'pounder tune --resume DIR' continues.",
    "Exit status: 0 done, 1 the server or a measurement failed, 2 bad input, 130 interrupted.",
])


# fmt: off
SERVER_ARG = typer.Argument(metavar="SERVER", show_default=False, help=(
    f"The server to start: {', '.join(KINDS)} (omit with --demo or --resume)."))
TARGET_ARG = typer.Argument(metavar="TARGET", show_default=False, help=(
    "What it runs: HTTPD.CONF, MODULE:APP, APP.PSGI or 'CMD' (see above)."))
PYTHONPATH = option("--pythonpath", panel=_SERVER, metavar="DIR", help="gunicorn: where to import the app from.")
PRELOAD = typer.Option("--preload/--no-preload", rich_help_panel=_SERVER, show_default=False, help=(
    "gunicorn --preload / Starman --preload-app: load the app in the parent before forking (default off, as "
    "in the servers). The other setting is measured too, for comparison, unless --quick."))
ENV = option("--env", panel=_SERVER, metavar="NAME=VALUE", help="Set in the server's environment (repeatable).")
STOP_SIGNAL = option("--stop-signal", panel=_SERVER, metavar="SIG", help=(
    "command: the signal that stops the server gracefully (default TERM)."))
PATH = option("--path", panel=_RUN, metavar="PATH", help="What each request asks for (default /).")
RESULTS = option("--results", panel=_RUN, metavar="DIR", help=(
    "Where to write the results (default ./pounder-tune-DATE-TIME); must not exist or be empty."))
RESUME = option("--resume", panel=_RUN, metavar="DIR", help="Continue the interrupted run in DIR.")
DEMO = option("--demo", panel=_RUN, help=(
    "Tune the bundled demo app (gunicorn, 64 MB preloaded, ~4 ms of CPU and a 16 KB leak per request) with a "
    "512M budget."))
QUICK = option("--quick", panel=_RUN, help="Shorter steps (3 s per point, fewer MaxRequestsPerChild values).")
POINT = option("--point-duration", panel=_RUN, metavar="TIME", help="How long each sweep point runs (default 6s).")
K = option("--requests-per-child", panel=_RUN, metavar="N", help=(
    "Requests each child serves in the size measurement (default 200; 100 with --quick)."))
MEASURE_CHILDREN = option("--measure-children", panel=_RUN, metavar="N", help=(
    "Children started for the size measurement (default 4)."))
MAX_CHILDREN = option("--max-children", panel=_RUN, metavar="N", help=(
    "The most children the sweep tries, whatever the memory allows (default 32 per CPU)."))
MRPC = option("--mrpc", panel=_RUN, metavar="LIST", help=(
    "MaxRequestsPerChild values to sweep, 0 = unlimited (default 0,10000,1000,100,10)."))
RAM = option("--ram", panel=_GOALS, metavar="SIZE", help=(
    "RAM budget for the server: 512M, 4G (powers of 1024). Default: MemAvailable + the server's footprint, "
    "less a safety margin."))
CLIENTS = option("--clients", panel=_GOALS, metavar="N", help=(
    "Expected concurrent clients: the sweep runs at this concurrency, and the recommendation keeps a child "
    "for each when memory allows."))
P99 = option("--p99", panel=_GOALS, metavar="TIME", help="Latency target for the 99th percentile (300ms).")
REPORT = report_option(_RUN, "results")
# fmt: on


def _env(items: list[str] | None) -> dict[str, str]:
    env = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name or not name.replace("_", "a").isalnum():
            raise UsageError(f"invalid --env {item!r}: expected NAME=VALUE")
        env[name] = value
    return env


def _adapter(server: str | None, target: str | None, *, pythonpath: str | None, preload: bool | None,
             env: dict[str, str], stop_signal: str | None) -> Adapter:
    if server is None or target is None:
        raise UsageError("give SERVER TARGET (e.g. 'gunicorn app:app' or 'apache httpd.conf'), --demo or --resume DIR")
    if server not in KINDS:
        raise UsageError(f"unknown server {server!r}: use one of {', '.join(KINDS)}")
    if stop_signal is not None and server != "command":
        raise UsageError("--stop-signal is for the command server only")
    if pythonpath is not None and server != "gunicorn":
        raise UsageError("--pythonpath is for gunicorn only")
    if preload is not None and server not in ("gunicorn", "starman"):
        raise UsageError("--preload is for gunicorn and starman (Apache preloads with PerlRequire in its conf)")
    if env and server == "apache":
        raise UsageError("--env is not supported for apache (use SetEnv / PerlSetEnv in the conf)")
    return make_adapter(server, target, pythonpath=pythonpath, preload=bool(preload), env=env,
                        stop_signal=stop_signal or "TERM", check=False)  # checked in _plan, after the options


def _int(text: str | None, what: str) -> int | None:
    return None if text is None else parse_count(text, what)


@contextmanager
def _display(enabled: bool) -> Iterator[tuple[Callable[[str], None], Callable[[str], None],
                                              Callable[[Progress], None] | None]]:
    """(log, status, progress): live on a terminal; plain lines on stderr otherwise."""
    if not enabled:
        def plain(line: str) -> None:
            sys.stderr.write(f"pounder: {line}\n")
            sys.stderr.flush()

        yield plain, (lambda label: None), None
        return
    with live_status() as (log, status, progress):
        yield log, status, progress


def tune_command(
    server: Annotated[str | None, SERVER_ARG] = None,
    target: Annotated[str | None, TARGET_ARG] = None,
    pythonpath: Annotated[str | None, PYTHONPATH] = None,
    preload: Annotated[bool | None, PRELOAD] = None,
    env: Annotated[list[str] | None, ENV] = None,
    stop_signal: Annotated[str | None, STOP_SIGNAL] = None,
    path: Annotated[str, PATH] = "/",
    results: Annotated[str | None, RESULTS] = None,
    resume_dir: Annotated[str | None, RESUME] = None,
    demo: Annotated[bool, DEMO] = False,
    quick: Annotated[bool, QUICK] = False,
    point_duration: Annotated[str | None, POINT] = None,
    requests_per_child: Annotated[str | None, K] = None,
    measure_children: Annotated[str | None, MEASURE_CHILDREN] = None,
    max_children: Annotated[str | None, MAX_CHILDREN] = None,
    mrpc: Annotated[str | None, MRPC] = None,
    ram: Annotated[str | None, RAM] = None,
    clients: Annotated[str | None, CLIENTS] = None,
    p99: Annotated[str | None, P99] = None,
    report: Annotated[str | None, REPORT] = None,
) -> int:
    where, go, inputs = _plan(server, target, pythonpath=pythonpath, preload=preload, env=env, stop_signal=stop_signal,
                      path=path, results=results, resume_dir=resume_dir, demo=demo, quick=quick,
                      point_duration=point_duration, requests_per_child=requests_per_child,
                      measure_children=measure_children, max_children=max_children, mrpc=mrpc, ram=ram,
                      clients=clients, p99=p99)
    check_report_path(report)
    outputs = [("--report", report)] if resume_dir is not None else [("--results", where), ("--report", report)]
    check_distinct(outputs, inputs)
    next_step = f"what was measured is in {where}; continue with: pounder tune --resume {where}"

    def keep() -> None:
        if report is not None and Path(where, "tune.json").is_file():
            write_html_report([where], report)

    with _display(sys.stderr.isatty()) as (log, status, progress), measured_run(next_step, keep):
        result = go(log, status, progress)
    sys.stdout.write(render_tune(result))
    keep()
    return 0


Go = Callable[[Callable[[str], None], Callable[[str], None], Callable[[Progress], None] | None], TuneResult]


def _plan(server: str | None, target: str | None, *, pythonpath: str | None, preload: bool | None,
          env: list[str] | None, stop_signal: str | None, path: str, results: str | None, resume_dir: str | None,
          demo: bool, quick: bool, point_duration: str | None, requests_per_child: str | None,
          measure_children: str | None, max_children: str | None, mrpc: str | None, ram: str | None,
          clients: str | None, p99: str | None) -> tuple[str, Go, list[tuple[str, str]]]:
    """Check every input (UsageError before anything starts); return the results directory, the
    function that runs and the user's files the server reads (no output may overwrite them)."""
    if resume_dir is not None:
        given = [server, target, pythonpath, preload, env, stop_signal, results, point_duration, requests_per_child,
                 measure_children, max_children, mrpc, ram, clients, p99]
        if demo or quick or path != "/" or any(v is not None and v != [] for v in given):
            raise UsageError("--resume DIR takes no other option: the run goes on with the settings stored in DIR")
        folder = resume_dir
        stored = open_run(folder)[1]  # a bad directory is bad input, found before anything starts

        def go_on(log: Callable[[str], None], status: Callable[[str], None],
                  progress: Callable[[Progress], None] | None) -> TuneResult:
            log(f"resuming the run in {folder}")
            return resume(folder, log=log, progress=progress, status=status)

        return folder, go_on, stored.input_files()
    if demo:
        if server is not None or target is not None:
            raise UsageError("--demo takes no SERVER TARGET")
        if pythonpath is not None or preload is not None or env or stop_signal is not None:
            raise UsageError("--demo takes no server option (--pythonpath, --preload, --env, --stop-signal)")
        adapter: Adapter = demo_adapter()
        ram = ram or "512M"
    else:
        adapter = _adapter(server, target, pythonpath=pythonpath, preload=preload, env=_env(env),
                           stop_signal=stop_signal)
    options = make_options(path=path, ram=ram, clients=_int(clients, "--clients"), p99=p99, quick=quick,
                           point_duration=point_duration,
                           requests_per_child=_int(requests_per_child, "--requests-per-child"),
                           measure_children=_int(measure_children, "--measure-children"),
                           max_children=_int(max_children, "--max-children"), mrpc=mrpc)
    where = f"pounder-tune-{datetime.now():%Y%m%d-%H%M%S}" if results is None else results
    ResultsDir.check_new(where)
    adapter.check()  # the program, the application, the paths it names: before anything starts

    def go(log: Callable[[str], None], status: Callable[[str], None],
           progress: Callable[[Progress], None] | None) -> TuneResult:
        log(f"tuning {adapter.describe()}; results in {where}")
        return tune(adapter, options, results=where, log=log, progress=progress, status=status)

    return where, go, adapter.input_files()
