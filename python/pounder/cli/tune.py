"""``pounder tune``: start the real server, sweep its five parameters, recommend a configuration.

The command maps flags to an adapter (:func:`pounder.pool.make_adapter`) and
:func:`pounder.tune.make_options`, then runs :func:`pounder.tune.tune` (or ``resume``); the steps
and the rules live in ``pounder.tune``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from pounder._errors import UsageError
from pounder._files import check_distinct
from pounder._units import parse_count
from pounder.agents import make_sender
from pounder.cli._common import (
    check_report_path,
    measured_run,
    option,
    print_error,
    print_warning,
    ram_option,
    report_option,
    write_html_report,
)
from pounder.cli._load_options import AGENTS, AGENTS_PER_NODE, RAY, load_option
from pounder.cli._progress import live_status
from pounder.load import Progress, Sender
from pounder.pool import (
    ADAPTERS,
    KINDS,
    SERVER_OPTIONS,
    Adapter,
    ResultsDir,
    demo_adapter,
    make_adapter,
    refused_option,
)
from pounder.tune import TuneResult, make_options, open_run, render_tune, resume, tune

_SERVER = "Server"
_RUN = "Run"
_GOALS = "Goals"
_TRAFFIC = "Traffic"

TUNE_HELP = "\n\n".join([
    "Start a pre-forking server on a free loopback port, measure it, and recommend its five parameters "
    "(MaxClients, MaxRequestsPerChild, StartServers, MinSpareServers, MaxSpareServers) in its own syntax.",
    "SERVER TARGET is one of: " + ", ".join(f"{kind} {cls.target_form}" for kind, cls in ADAPTERS.items()) + ". "
    "Apache's configuration and php-fpm's pool file are yours: pounder runs a copy with what it sets replaced "
    "(Listen, PidFile, the five directives and their kin; listen and pm.*), php-fpm behind an nginx front it starts "
    "too (--root DOCROOT); gunicorn runs sync workers, Puma threads 1,1 (--threads for more); command runs any "
    "server, with {port}, {workers} and {max_requests} in the command.",
    "Steps: child sizes after warm-up and after K requests each; the memory bound (RAM - shared) / child USS; "
    "a sweep of the number of children; a MaxRequestsPerChild sweep; a step from idle to full load for the spare "
    "servers (" + ", ".join(cls.who for cls in ADAPTERS.values() if cls.on_demand) + "). Every point is written "
    "to the results directory as it is measured: after Ctrl-C, "
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


def _server_option(name: str) -> Any:
    """The command line's form of a server option, as its adapters declare it (pounder.pool)."""
    declared = SERVER_OPTIONS[name]
    return option(declared.flag, panel=_SERVER, metavar=declared.metavar, help=declared.help)


PYTHONPATH = _server_option("pythonpath")
PRELOAD = typer.Option("--preload/--no-preload", rich_help_panel=_SERVER, show_default=False,
                       help=SERVER_OPTIONS["preload"].help)
ENV = _server_option("env")
ROOT = _server_option("root")
THREADS = _server_option("threads")
STOP_SIGNAL = _server_option("stop_signal")
PATH = option("--path", panel=_RUN, metavar="PATH", help="What each request asks for (default /).")
RESULTS = option("--results", panel=_RUN, metavar="DIR", help=(
    "Where to write the results (default ./pounder-tune-DATE-TIME); must not exist or be empty."))
RESUME = option("--resume", panel=_RUN, metavar="DIR", help="Continue the interrupted run in DIR.")
DEMO = option("--demo", panel=_RUN, help=(
    "Tune the bundled demo app (gunicorn, 64 MB preloaded, ~4 ms of CPU and a 16 KB leak per request) with a "
    "512M budget, in quick mode with 2 s points and MaxRequestsPerChild 0,1000,100 (under 3 minutes)."))
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
RAM = ram_option(_GOALS, "RAM budget for the server", "MemAvailable + the server's footprint, less a safety margin")
CPUS = option("--cpus", panel=_GOALS, metavar="N", help=(
    "The pod, emulated: run the server in a cgroup with a quota of N CPUs (0.5, 1.5, 4; at most the CPUs it may run "
    "on), its --ram enforced there as a memory limit, and size the pool for N cores; or cgroup / cgroup:PATH: the "
    "CPU quota of the cgroup pounder runs in or of the one named. Needs a writable cpu cgroup (root, or one "
    "delegated). Default: the CPUs the server runs on."))
CLIENTS = option("--clients", panel=_GOALS, metavar="N", help=(
    "Expected concurrent clients: the sweep runs at this concurrency, and the pool is the smallest that serves "
    "them as well as the best measured (a child for each when every connection holds one: --no-proxy with "
    "--keepalive or --throttle)."))
P99 = option("--p99", panel=_GOALS, metavar="TIME", help=(
    "Latency target for the 99th percentile (300ms): the pool is the smallest as fast as the best whose p99 "
    "meets it at the offered load, and the confirmation run checks it."))
PEAK_RATE = option("--peak-rate", panel=_GOALS, metavar="RATE", help=(
    "The peak arrival rate the pool must answer (200/s): children = rate x the time a child is held per request "
    "(Little's law), with headroom, capped by memory. Default with --access-log: the log's busiest second."))
TRIALS = option("--trials", panel=_RUN, metavar="N", help=(
    "Interleaved trials per sweep point (default 3, at least 3): medians with 95% intervals; a point wider than "
    "+-10% is measured once more."))
URLS = option("--urls", panel=_TRAFFIC, metavar="FILE", help=(
    "What to ask for: a bench URL file (one URL per line, optional weight and GET/HEAD); each URL's path and "
    "query are asked of the server pounder starts."))
ACCESS_LOG = option("--access-log", panel=_TRAFFIC, metavar="FILE", help=(
    "Replay the GET and HEAD requests of an Apache/nginx access log (combined or common; gzip too) in their "
    "measured proportions; its busiest second is the target rate unless --clients or --peak-rate is given."))
EXCLUDE_STATIC = option("--exclude-static", panel=_TRAFFIC, help=(
    "With --access-log: leave out static files (images, CSS, JS, fonts), served elsewhere in production."))
KEEPALIVE = typer.Option("--keepalive/--no-keepalive", rich_help_panel=_TRAFFIC, show_default=False, help=(
    "Requests on kept-alive connections, as production clients send them (default off: a new connection per "
    "request, so MaxRequestsPerChild counts requests in every server)."))
THROTTLE = option("--throttle", panel=_TRAFFIC, metavar="BANDWIDTH", help=(
    "Slow clients (with --no-proxy): each connection reads at most this fast (56kbit, 1mbps), as bench --throttle; "
    "a child stays busy for the whole transfer, and the pool is sized for it."))
NO_PROXY = option("--no-proxy", panel=_TRAFFIC, help=(
    "No buffering proxy in front of the server: a slow or kept-alive client holds its child for the whole "
    "transfer or connection, and the pool is sized for it (needs --throttle or --keepalive)."))
SERVER_CPUS = option("--server-cpus", panel=_RUN, metavar="LIST", help=(
    "CPUs for the server under test (0-2,5). Default: with 4 or more CPUs, most for the server and the rest for "
    "the load generator; with fewer they share them, and the load generator's CPU is reported next to the "
    "server's."))
LOAD_CPUS = option("--load-cpus", panel=_RUN, metavar="LIST", help="CPUs for pounder's load generator (3).")
NO_CONFIRM = option("--no-confirm", panel=_RUN, help=(
    "Skip the confirmation run (the recommended configuration started, warmed and held at the target load)."))
PROFILE = option("--profile", panel=_RUN, help=(
    "After the confirmation, profile the recommended configuration at its load (py-spy, Devel::NYTProf or perf, "
    "as pounder profile; 2 rounds with --quick, else 5): profile.json and flame.svg in the results directory, the "
    "top functions and the profiler's cost in the text."))
REPORT = report_option(_RUN, "results")
LISTEN = option("--listen", panel=_SERVER, metavar="ADDRESS", help=(
    "The IPv4 address of this machine the server listens on (default 127.0.0.1): the one Ray agents on other "
    "machines reach it at. One outside 127.0.0.0/8 needs --allow-remote."))
ALLOW_REMOTE = load_option("allow_remote", _SERVER, help=(
    "Allow --listen on an address outside 127.0.0.0/8: the server under test is then reachable from the network."))
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
             env: dict[str, str], stop_signal: str | None, root: str | None, threads: str | None = None) -> Adapter:
    if server is None or target is None:
        raise UsageError("give SERVER TARGET (e.g. 'gunicorn app:app' or 'apache httpd.conf'), --demo or --resume DIR")
    if server not in KINDS:
        raise UsageError(f"unknown server {server!r}: use one of {', '.join(KINDS)}")
    given = {"stop_signal": stop_signal is not None, "pythonpath": pythonpath is not None,
             "preload": preload is not None, "env": bool(env), "root": root is not None,
             "threads": threads is not None}
    for name in (name for name, is_given in given.items() if is_given):
        refused = refused_option(server, name)
        if refused:
            raise UsageError(refused)
    stop = stop_signal or str(SERVER_OPTIONS["stop_signal"].default)
    return make_adapter(server, target, pythonpath=pythonpath, preload=preload, env=env, stop_signal=stop, root=root,
                        threads=threads, check=False)  # checked in _plan, after the options


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
    root: Annotated[str | None, ROOT] = None,
    threads: Annotated[str | None, THREADS] = None,
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
    cpus: Annotated[str | None, CPUS] = None,
    clients: Annotated[str | None, CLIENTS] = None,
    p99: Annotated[str | None, P99] = None,
    peak_rate: Annotated[str | None, PEAK_RATE] = None,
    trials: Annotated[str | None, TRIALS] = None,
    urls: Annotated[str | None, URLS] = None,
    access_log: Annotated[str | None, ACCESS_LOG] = None,
    exclude_static: Annotated[bool, EXCLUDE_STATIC] = False,
    keepalive: Annotated[bool | None, KEEPALIVE] = None,
    throttle: Annotated[str | None, THROTTLE] = None,
    no_proxy: Annotated[bool, NO_PROXY] = False,
    server_cpus: Annotated[str | None, SERVER_CPUS] = None,
    load_cpus: Annotated[str | None, LOAD_CPUS] = None,
    no_confirm: Annotated[bool, NO_CONFIRM] = False,
    profile: Annotated[bool, PROFILE] = False,
    report: Annotated[str | None, REPORT] = None,
    listen: Annotated[str | None, LISTEN] = None,
    allow_remote: Annotated[bool, ALLOW_REMOTE] = False,
    ray: Annotated[str | None, RAY] = None,
    agents: Annotated[int | None, AGENTS] = None,
    agents_per_node: Annotated[int | None, AGENTS_PER_NODE] = None,
) -> int:
    where, go, inputs = _plan(server, target, pythonpath=pythonpath, preload=preload, env=env, stop_signal=stop_signal,
                      root=root, threads=threads, path=path, results=results, resume_dir=resume_dir, demo=demo,
                      quick=quick,
                      point_duration=point_duration, requests_per_child=requests_per_child,
                      measure_children=measure_children, max_children=max_children, mrpc=mrpc, ram=ram,
                      clients=clients, p99=p99,
                      traffic=Traffic(peak_rate=peak_rate, trials=trials, urls=urls, access_log=access_log,
                                      exclude_static=exclude_static, keepalive=keepalive, throttle=throttle,
                                      no_proxy=no_proxy, server_cpus=server_cpus, load_cpus=load_cpus,
                                      no_confirm=no_confirm, listen=listen, allow_remote=allow_remote,
                                      profile=profile, cpus=cpus),
                      sender=make_sender(ray, agents, agents_per_node))
    check_report_path(report)
    outputs = [("--report", report)] if resume_dir is not None else [("--results", where), ("--report", report)]
    check_distinct(outputs, inputs)
    cluster_flags = (("--ray", ray), ("--agents", agents), ("--agents-per-node", agents_per_node))
    again = "".join(f" {flag} {value}" for flag, value in cluster_flags if value is not None)
    next_step = f"what was measured is in {where}; continue with: pounder tune --resume {where}{again}"

    def keep() -> None:
        if report is not None and Path(where, "tune.json").is_file():
            write_html_report([where], report)

    with _display(sys.stderr.isatty()) as (log, status, progress), measured_run(next_step, keep):
        result = go(log, status, progress)
    sys.stdout.write(render_tune(result))
    keep()
    if result.confirmation is not None and not result.confirmation["ok"]:
        # a peak one server cannot carry is what the fleet is for: its servers carry it (see Fleet)
        fleet = result.fleet.size if result.fleet is not None else None
        carried = fleet is not None and fleet.servers is not None
        failed = [check["text"] for check in result.confirmation["checks"]
                  if not check["ok"] and not (carried and check["name"] == "rate")]
        if failed:
            print_error(f"the recommended configuration did not pass its confirmation run: {'; '.join(failed)}")
            return 1
    return 0


@dataclass(frozen=True)
class Traffic:
    """The traffic, target and run flags of ``pounder tune`` (passed on to ``make_options``)."""

    peak_rate: str | None = None
    trials: str | None = None
    urls: str | None = None
    access_log: str | None = None
    exclude_static: bool = False
    keepalive: bool | None = None
    throttle: str | None = None
    no_proxy: bool = False
    server_cpus: str | None = None
    load_cpus: str | None = None
    no_confirm: bool = False
    listen: str | None = None
    allow_remote: bool = False
    profile: bool = False
    cpus: str | None = None

    def given(self) -> list[object]:
        """The values a user gave (None or False when not): --resume takes none of them."""
        return [self.peak_rate, self.trials, self.urls, self.access_log, self.exclude_static or None,
                self.keepalive, self.throttle, self.no_proxy or None, self.server_cpus, self.load_cpus,
                self.no_confirm or None, self.listen, self.allow_remote or None, self.profile or None, self.cpus]


Go = Callable[[Callable[[str], None], Callable[[str], None], Callable[[Progress], None] | None], TuneResult]


def _plan(server: str | None, target: str | None, *, pythonpath: str | None, preload: bool | None,
          env: list[str] | None, stop_signal: str | None, path: str, results: str | None, resume_dir: str | None,
          demo: bool, quick: bool, point_duration: str | None, requests_per_child: str | None,
          measure_children: str | None, max_children: str | None, mrpc: str | None, ram: str | None,
          clients: str | None, p99: str | None,
          traffic: Traffic | None = None, sender: Sender | None = None,
          root: str | None = None, threads: str | None = None) -> tuple[str, Go, list[tuple[str, str]]]:
    """Check every input (UsageError before anything starts); return the results directory, the
    function that runs and the user's files the server reads (no output may overwrite them).
    ``sender``: what sends the measured loads (also when resuming)."""
    traffic = traffic or Traffic()
    if resume_dir is not None:
        given = [server, target, pythonpath, preload, env, stop_signal, root, threads, results, point_duration,
                 requests_per_child, measure_children, max_children, mrpc, ram, clients, p99, *traffic.given()]
        if demo or quick or path != "/" or any(v is not None and v != [] for v in given):
            raise UsageError("--resume DIR takes no other option (but --ray, --agents, --agents-per-node): the run "
                             "goes on with the settings stored in DIR")
        folder = resume_dir
        store, stored = open_run(folder)[:2]  # a bad directory is bad input, found before anything starts
        store.check_free()  # and one another pounder writes

        def go_on(log: Callable[[str], None], status: Callable[[str], None],
                  progress: Callable[[Progress], None] | None) -> TuneResult:
            log(f"resuming the run in {folder}")
            return resume(folder, log=log, progress=progress, status=status, sender=sender)

        return folder, go_on, stored.input_files()
    if demo:
        if server is not None or target is not None:
            raise UsageError("--demo takes no SERVER TARGET")
        if pythonpath is not None or preload is not None or env or stop_signal is not None or root is not None \
                or threads is not None:
            raise UsageError("--demo takes no server option (--pythonpath, --preload, --env, --stop-signal, --root, "
                             "--threads)")
        adapter: Adapter = demo_adapter()
        ram = ram or "512M"
        # short enough for a first look (under 3 minutes on 2 cores), every decision still from trials
        quick = True
        point_duration = point_duration or "2s"
        mrpc = mrpc or "0,1000,100"
    else:
        adapter = _adapter(server, target, pythonpath=pythonpath, preload=preload, env=_env(env),
                           stop_signal=stop_signal, root=root, threads=threads)
    options = make_options(path=path, ram=ram, clients=_int(clients, "--clients"), p99=p99, quick=quick,
                           point_duration=point_duration,
                           requests_per_child=_int(requests_per_child, "--requests-per-child"),
                           measure_children=_int(measure_children, "--measure-children"),
                           max_children=_int(max_children, "--max-children"), mrpc=mrpc,
                           trials=_int(traffic.trials, "--trials"), urls=traffic.urls, access_log=traffic.access_log,
                           exclude_static=traffic.exclude_static, keepalive=bool(traffic.keepalive),
                           throttle=traffic.throttle, proxy=not traffic.no_proxy, peak_rate=traffic.peak_rate,
                           server_cpus=traffic.server_cpus, load_cpus=traffic.load_cpus,
                           confirm=not traffic.no_confirm, listen=traffic.listen,
                           allow_remote=traffic.allow_remote, profile=traffic.profile, cpus=traffic.cpus)
    where = f"pounder-tune-{datetime.now():%Y%m%d-%H%M%S}" if results is None else results
    ResultsDir.check_new(where)
    adapter.check()  # the program, the application, the paths it names: before anything starts
    for warning in adapter.warnings():  # what the server would ignore without a word (it runs all the same)
        print_warning(warning)

    def go(log: Callable[[str], None], status: Callable[[str], None],
           progress: Callable[[Progress], None] | None) -> TuneResult:
        log(f"tuning {adapter.describe()}; results in {where}")
        return tune(adapter, options, results=where, log=log, progress=progress, status=status, sender=sender)

    inputs = adapter.input_files() + [(flag, value) for flag, value in (("--urls", traffic.urls),
                                                                         ("--access-log", traffic.access_log))
                                      if value is not None]
    return where, go, inputs
