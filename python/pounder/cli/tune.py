"""``pounder tune``: start the real server, sweep its five parameters, recommend a configuration.

The command maps flags to an adapter (:func:`pounder.pool.build_adapter`) and
:func:`pounder.tune.make_options`, then runs :func:`pounder.tune.tune` (or ``resume``); the steps
and the rules live in ``pounder.tune``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from pounder import _interrupt
from pounder._errors import UsageError
from pounder._files import check_distinct
from pounder._junit import stopped_suite
from pounder.agents import make_sender
from pounder.cli._bridge import given, takes
from pounder.cli._common import (
    check_junit_path,
    check_report_path,
    measured_run,
    print_error,
    print_warning,
    write_html_report,
    write_junit_file,
)
from pounder.cli._metrics_out import metrics_option, metrics_out
from pounder.cli._progress import live_status
from pounder.cli._tune_options import RUN, TuneFlags
from pounder.load import Progress, Sender
from pounder.pool import (
    ADAPTERS,
    KINDS,
    SERVER_OPTIONS,
    Adapter,
    AdapterOptions,
    ResultsDir,
    build_adapter,
    demo_adapter,
    refused_option,
)
from pounder.tune import TuneResult, make_options, open_run, render_tune, resume, tune

_SERVER_OPTIONS = ("stop_signal", "pythonpath", "preload", "env", "root", "threads")
"""The server options (:meth:`TuneFlags.server_values`), in the order a server's refusals of them are checked."""

TUNE_HELP = "\n\n".join([
    "Start a pre-forking server on a free loopback port, measure it, and recommend its five parameters "
    "(MaxClients, MaxRequestsPerChild, StartServers, MinSpareServers, MaxSpareServers) in its own syntax.",
    "SERVER TARGET is one of: " + ", ".join(f"{kind} {cls.target_form}" for kind, cls in ADAPTERS.items()) + ". "
    "Apache's configuration and php-fpm's pool file are yours: pounder runs a copy with what it sets replaced "
    "(Listen, PidFile, the five directives and their kin; listen and pm.*), php-fpm behind an nginx front it starts "
    "too (--root DOCROOT); gunicorn runs sync workers (gthread ones with threads), Puma threads 1,1 unless "
    "--threads; command runs any server, with {port}, {workers} and {max_requests} in the command.",
    "Steps: child sizes after warm-up and after K requests each; the memory bound (RAM - shared) / child USS; "
    "a sweep of the number of children; workers x threads at the offered load (" + ", ".join(
        cls.who for cls in ADAPTERS.values() if cls.threaded) + "); a MaxRequestsPerChild sweep; a step from idle "
    "to full load for the spare servers (" + ", ".join(cls.who for cls in ADAPTERS.values() if cls.on_demand)
    + "). Every point is written to the results directory as it is measured: after Ctrl-C, "
    "'pounder tune --resume DIR' continues.",
    "Before it is printed, the recommendation is started, warmed and held at the target load (confirmation): the "
    "pool's footprint against the RAM budget, p99 against --p99, failures.",
    "With --ray, the measured loads are sent by agents on a Ray cluster; agents on other machines leave the "
    "server every CPU here and reach it at --listen ADDRESS (with --allow-remote).",
    "Exit status: 0 done, 1 the server or a measurement failed (also when its warm-up got nowhere: no request "
    "succeeded, or no answer was 2xx or 3xx) or the confirmation was not met, 2 bad input, "
    "130 interrupted (143 by SIGTERM).",
])


# fmt: off
SERVER_ARG = typer.Argument(metavar="SERVER", show_default=False, help=(
    f"The server to start: {', '.join(KINDS)} (omit with --demo or --resume)."))
TARGET_ARG = typer.Argument(metavar="TARGET", show_default=False, help=(
    "What it runs: " + ", ".join(dict.fromkeys(cls.target_form for cls in ADAPTERS.values())) + " (see above)."))
# fmt: on


def _adapter(server: str | None, target: str | None, values: dict[str, Any]) -> Adapter:
    """The adapter of SERVER TARGET with the server options given (:meth:`TuneFlags.server_values`)."""
    if server is None or target is None:
        raise UsageError("give SERVER TARGET (e.g. 'gunicorn app:app' or 'apache httpd.conf'), --demo or --resume DIR")
    if server not in KINDS:
        raise UsageError(f"unknown server {server!r}: use one of {', '.join(KINDS)}")
    for name in (name for name in _SERVER_OPTIONS if values[name] not in (None, {})):
        refused = refused_option(server, name)
        if refused:
            raise UsageError(refused)
    stop = values["stop_signal"] or str(SERVER_OPTIONS["stop_signal"].default)
    options = AdapterOptions(**{**values, "stop_signal": stop})
    return build_adapter(server, target, options, check=False)  # checked in _plan, after the options


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


@takes(TuneFlags, metrics_option(RUN))
def tune_command(ctx: typer.Context, server: Annotated[str | None, SERVER_ARG] = None,
                 target: Annotated[str | None, TARGET_ARG] = None) -> int:
    flags = given(ctx, TuneFlags)
    ray, agents, agents_per_node, report, junit = flags.ray, flags.agents, flags.agents_per_node, flags.report, \
        flags.junit
    sender = make_sender(ray, agents, agents_per_node)
    where, go, inputs = _plan(server, target, flags, sender=sender)
    check_report_path(report)
    check_junit_path(junit)
    outputs = [("--report", report), ("--junit", junit)]
    if flags.resume_dir is None:
        outputs.insert(0, ("--results", where))
    check_distinct(outputs, inputs)
    cluster_flags = (("--ray", ray), ("--agents", agents), ("--agents-per-node", agents_per_node))
    again = "".join(f" {flag} {value}" for flag, value in cluster_flags if value is not None)
    next_step = f"what was measured is in {where}; continue with: pounder tune --resume {where}{again}"

    def keep() -> None:
        if report is not None and Path(where, "tune.json").is_file():
            write_html_report([where], report)

    def stopped() -> None:  # what was measured: the JUnit file says the run was stopped, and where it is
        try:
            write_junit_file(lambda: stopped_suite("pounder tune", "pounder.tune", (
                f"interrupted by {_interrupt.cause()} before the recommendation; {next_step}")).render(), junit)
        finally:
            keep()

    def broke(message: str) -> None:  # exit 1: the JUnit file says why
        write_junit_file(lambda: stopped_suite("pounder tune", "pounder.tune", message, failed=True).render(), junit)

    with metrics_out(ctx, "tune", allow_remote=flags.allow_remote), \
            _display(sys.stderr.isatty()) as (log, status, progress), measured_run(next_step, stopped, broke):
        result = go(log, status, progress)
    try:
        write_junit_file(result.to_junit, junit)
    finally:  # a file that cannot be written after all is said once the recommendation is out
        sys.stdout.write(render_tune(result))
        keep()
    failed = result.unmet_checks()  # a peak one server cannot carry is what the fleet is for
    if failed:
        print_error(f"the recommended configuration did not pass its confirmation run: {'; '.join(failed)}")
        return 1
    return 0


Go = Callable[[Callable[[str], None], Callable[[str], None], Callable[[Progress], None] | None], TuneResult]


def _plan(server: str | None, target: str | None, flags: TuneFlags,
          sender: Sender | None = None) -> tuple[str, Go, list[tuple[str, str]]]:
    """Check every input (UsageError before anything starts); return the results directory, the
    function that runs and the user's files the server reads (no output may overwrite them).
    ``sender``: what sends the measured loads (also when resuming)."""
    if flags.resume_dir is not None:
        if server is not None or target is not None or flags.given_with_resume():
            raise UsageError("--resume DIR takes no other option (but --ray, --agents, --agents-per-node): the run "
                             "goes on with the settings stored in DIR")
        folder = flags.resume_dir
        store, stored = open_run(folder)[:2]  # a bad directory is bad input, found before anything starts
        store.check_free()  # and one another pounder writes

        def go_on(log: Callable[[str], None], status: Callable[[str], None],
                  progress: Callable[[Progress], None] | None) -> TuneResult:
            log(f"resuming the run in {folder}")
            return resume(folder, log=log, progress=progress, status=status, sender=sender)

        return folder, go_on, stored.input_files()
    if flags.demo:
        if server is not None or target is not None:
            raise UsageError("--demo takes no SERVER TARGET")
        if any(getattr(flags, name) not in (None, ()) for name in _SERVER_OPTIONS):
            raise UsageError("--demo takes no server option (--pythonpath, --preload, --env, --stop-signal, --root, "
                             "--threads)")
        adapter: Adapter = demo_adapter()
        # short enough for a first look (under 3 minutes on 2 cores), every decision still from trials; its
        # sync workers only (the demo's requests use the CPU: threads are compared on a run of your app)
        flags = replace(flags, ram=flags.ram or "512M", quick=True, point_duration=flags.point_duration or "2s",
                        mrpc=flags.mrpc or "0,1000,100", no_thread_sweep=True)
    else:
        adapter = _adapter(server, target, flags.server_values())
    options = make_options(**flags.tune_values())
    where = f"pounder-tune-{datetime.now():%Y%m%d-%H%M%S}" if flags.results is None else flags.results
    ResultsDir.check_new(where)
    adapter.check()  # the program, the application, the paths it names: before anything starts
    for warning in adapter.warnings():  # what the server would ignore without a word (it runs all the same)
        print_warning(warning)

    def go(log: Callable[[str], None], status: Callable[[str], None],
           progress: Callable[[Progress], None] | None) -> TuneResult:
        log(f"tuning {adapter.describe()}; results in {where}")
        return tune(adapter, options, results=where, log=log, progress=progress, status=status, sender=sender)

    inputs = adapter.input_files() + [(flag, value) for flag, value in (("--urls", flags.urls),
                                                                         ("--access-log", flags.access_log))
                                      if value is not None]
    return where, go, inputs
