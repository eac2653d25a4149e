"""The options of ``pounder tune``, declared once (:class:`TuneFlags`): each field as the command line
shows it (its flag, panel, help and default), given to the command as one record; those it shares
with other commands (``--keepalive``, ``--throttle``, ``--allow-remote``, ``--access-log``,
``--exclude-static``, the Ray cluster) take their flags from :class:`~pounder.LoadOptions`,
:class:`~pounder.cli._load_options.SharedOptions` and :class:`~pounder.cli._load_options.AgentFlags`,
with tune's own text where they mean the pool's traffic."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pounder._errors import UsageError
from pounder._flags import Feed, Flag, fed, feeds, flag, like
from pounder._units import parse_count
from pounder.cli._bridge import flag_of
from pounder.cli._common import Measured, junit_option, ram_option, report_option
from pounder.cli._load_options import AGENTS_PANEL as AGENTS
from pounder.cli._load_options import AgentFlags, SharedOptions
from pounder.load import LoadOptions
from pounder.pool import SERVER_OPTIONS, AdapterOptions
from pounder.tune import make_options

SERVER = "Server"
RUN = "Run"
GOALS = "Goals"
TRAFFIC = "Traffic"

_AFTER_RESUME = frozenset({"resume_dir", "report", "junit", "ray", "agents", "agents_per_node"})
"""What --resume DIR takes besides it (the rest is stored in DIR)."""


def _count(text: str | None, name: str) -> int | None:
    """A count as typed (``1k``), None when not given."""
    return None if text is None else parse_count(text, name)


def _negated(given: bool, name: str) -> bool:
    """``--no-X`` given: X off."""
    return not given


def _switch(given: bool | None, name: str) -> bool:
    """A switch not given is off."""
    return bool(given)


def _env(items: Sequence[str], name: str) -> dict[str, str]:
    """``NAME=VALUE`` items as a mapping."""
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not key.replace("_", "a").isalnum():
            raise UsageError(f"invalid {name} {item!r}: expected NAME=VALUE")
        env[key] = value
    return env


def _to(keyword: str, convert: Callable[[Any, str], Any] | None = None) -> dict[str, Feed]:
    """The keyword of :func:`pounder.tune.make_options` an option is given as, and its conversion."""
    return feeds(make_options, keyword, convert)


def _server(name: str, names: str | None = None, *, repeatable: bool = False,
            convert: Callable[[Any, str], Any] | None = None) -> dict[str, Flag | Feed]:
    """A server option's flag as its adapters declare it (:data:`pounder.pool.SERVER_OPTIONS`),
    given to :class:`~pounder.pool.AdapterOptions` as ``name``."""
    declared = SERVER_OPTIONS[name]
    return feeds(AdapterOptions, name, convert) | flag(
        names or declared.flag, metavar=declared.metavar or None, help=declared.help, panel=SERVER,
        repeatable=repeatable)


# fmt: off
@dataclass(frozen=True)
class TuneFlags:
    """The options of ``pounder tune`` as typed (text, as the library's ``make_options`` reads it);
    the server options under the names the adapters take them by (``pythonpath``, ``preload``,
    ``env``, ``stop_signal``, ``root``, ``threads``)."""

    pythonpath: str | None = field(default=None, metadata=_server("pythonpath"))
    preload: bool | None = field(default=None, metadata=_server("preload", "--preload/--no-preload"))
    env: tuple[str, ...] = field(default=(), metadata=_server("env", repeatable=True, convert=_env))
    stop_signal: str | None = field(default=None, metadata=_server("stop_signal"))
    root: str | None = field(default=None, metadata=_server("root"))
    threads: str | None = field(default=None, metadata=_server("threads"))
    path: str = field(default="/", metadata=flag("--path", metavar="PATH", panel=RUN, help=(
        "What each request asks for (default /).")) | _to("path"))
    results: str | None = field(default=None, metadata=flag("--results", metavar="DIR", panel=RUN, help=(
        "Where to write the results (default ./pounder-tune-DATE-TIME); must not exist or be empty.")))
    resume_dir: str | None = field(default=None, metadata=flag("--resume", metavar="DIR", panel=RUN, help=(
        "Continue the interrupted run in DIR.")))
    demo: bool = field(default=False, metadata=flag("--demo", panel=RUN, help=(
        "Tune the bundled demo app (gunicorn, 64 MB preloaded, ~4 ms of CPU and a 16 KB leak per request) with a "
        "512M budget, in quick mode with 2 s points and MaxRequestsPerChild 0,1000,100 (under 3 minutes).")))
    quick: bool = field(default=False, metadata=flag("--quick", panel=RUN, help=(
        "Shorter steps (3 s per point, fewer MaxRequestsPerChild values).")) | _to("quick"))
    point_duration: str | None = field(default=None, metadata=flag("--point-duration", metavar="TIME", panel=RUN, help=(
        "How long each sweep point runs (default 6s).")) | _to("point_duration"))
    requests_per_child: str | None = field(default=None, metadata=flag(
        "--requests-per-child", metavar="N", panel=RUN, help=(
            "Requests each child serves in the size measurement (default 200; 100 with "
            "--quick).")) | _to("requests_per_child", _count))
    life: str | None = field(default=None, metadata=flag("--life", metavar="N", panel=RUN, help=(
        "After the size measurement, follow its children to N requests each, snapshotting their shared and "
        "private memory on a log scale (default 10 x --requests-per-child; off with --quick; 0: off): the "
        "unsharing fitted, and MaxRequestsPerChild chosen from it when sharing falls by more than a "
        "tenth.")) | _to("life", _count))
    measure_children: str | None = field(default=None, metadata=flag(
        "--measure-children", metavar="N", panel=RUN, help=(
            "Children started for the size measurement (default 4).")) | _to("measure_children", _count))
    max_children: str | None = field(default=None, metadata=flag("--max-children", metavar="N", panel=RUN, help=(
        "The most children the sweep tries, whatever the memory allows (default 32 per "
        "CPU).")) | _to("max_children", _count))
    mrpc: str | None = field(default=None, metadata=flag("--mrpc", metavar="LIST", panel=RUN, help=(
        "MaxRequestsPerChild values to sweep, 0 = unlimited (default 0,10000,1000,100,10).")) | _to("mrpc"))
    ram: str | None = field(default=None, metadata=flag_of(ram_option(
        GOALS, "RAM budget for the server",
        "MemAvailable + the server's footprint, less a safety margin")) | _to("ram"))
    cpus: str | None = field(default=None, metadata=flag("--cpus", metavar="N", panel=GOALS, help=(
        "The pod, emulated: run the server in a cgroup with a quota of N CPUs (0.5, 1.5, 4; at most the CPUs it "
        "may run on), its --ram enforced there as a memory limit, and size the pool for N cores; or cgroup / "
        "cgroup:PATH: the CPU quota of the cgroup pounder runs in or of the one named. Needs a writable cpu cgroup "
        "(root, or one delegated). Default: the CPUs the server runs on.")) | _to("cpus"))
    clients: str | None = field(default=None, metadata=flag("--clients", metavar="N", panel=GOALS, help=(
        "Expected concurrent clients: the sweep runs at this concurrency, and the pool is the smallest that serves "
        "them as well as the best measured (a child for each when every connection holds one: --no-proxy with "
        "--keepalive or --throttle).")) | _to("clients", _count))
    p99: str | None = field(default=None, metadata=flag("--p99", metavar="TIME", panel=GOALS, help=(
        "Latency target for the 99th percentile (300ms): the pool is the smallest as fast as the best whose p99 "
        "meets it at the offered load, and the confirmation run checks it.")) | _to("p99"))
    peak_rate: str | None = field(default=None, metadata=flag("--peak-rate", metavar="RATE", panel=GOALS, help=(
        "The peak arrival rate the pool must answer (200/s): children = rate x the time a child is held per "
        "request (Little's law), with headroom, capped by memory. Default with --access-log: the log's busiest "
        "second.")) | _to("peak_rate"))
    trials: str | None = field(default=None, metadata=flag("--trials", metavar="N", panel=RUN, help=(
        "Interleaved trials per sweep point (default 3, at least 3): medians with 95% intervals; a point wider "
        "than +-10% is measured once more.")) | _to("trials", _count))
    urls: str | None = field(default=None, metadata=flag("--urls", metavar="FILE", panel=TRAFFIC, help=(
        "What to ask for: a bench URL file (one URL per line, optional weight and GET/HEAD); each URL's path and "
        "query are asked of the server pounder starts.")) | _to("urls"))
    access_log: str | None = field(default=None, metadata=like(SharedOptions, "access_log", panel=TRAFFIC, help=(
        "Replay the GET and HEAD requests of an Apache/nginx access log (combined or common; gzip too) in their "
        "measured proportions; its busiest second is the target rate unless --clients or --peak-rate is "
        "given.")) | _to("access_log"))
    exclude_static: bool = field(default=False, metadata=like(SharedOptions, "exclude_static", panel=TRAFFIC, help=(
        "With --access-log: leave out static files (images, CSS, JS, fonts), served elsewhere in "
        "production.")) | _to("exclude_static"))
    keepalive: bool | None = field(default=None, metadata=like(LoadOptions, "keepalive", panel=TRAFFIC, help=(
        "Requests on kept-alive connections, as production clients send them (default off: a new connection per "
        "request, so MaxRequestsPerChild counts requests in every server).")) | _to("keepalive", _switch))
    throttle: str | None = field(default=None, metadata=like(LoadOptions, "throttle", panel=TRAFFIC, help=(
        "Slow clients (with --no-proxy): each connection reads at most this fast (56kbit, 1mbps), as bench "
        "--throttle; a child stays busy for the whole transfer, and the pool is sized for it.")) | _to("throttle"))
    no_proxy: bool = field(default=False, metadata=flag("--no-proxy", panel=TRAFFIC, help=(
        "No buffering proxy in front of the server: a slow or kept-alive client holds its child for the whole "
        "transfer or connection, and the pool is sized for it (needs --throttle or "
        "--keepalive).")) | _to("proxy", _negated))
    server_cpus: str | None = field(default=None, metadata=flag("--server-cpus", metavar="LIST", panel=RUN, help=(
        "CPUs for the server under test (0-2,5). Default: with 4 or more CPUs, most for the server and the rest "
        "for the load generator; with fewer they share them, and the load generator's CPU is reported next to the "
        "server's.")) | _to("server_cpus"))
    load_cpus: str | None = field(default=None, metadata=flag("--load-cpus", metavar="LIST", panel=RUN, help=(
        "CPUs for pounder's load generator (3).")) | _to("load_cpus"))
    no_confirm: bool = field(default=False, metadata=flag("--no-confirm", panel=RUN, help=(
        "Skip the confirmation run (the recommended configuration started, warmed and held at the target "
        "load).")) | _to("confirm", _negated))
    no_thread_sweep: bool = field(default=False, metadata=flag("--no-thread-sweep", panel=RUN, help=(
        "Puma, gunicorn, uWSGI: one thread per worker, as the other pre-fork servers (or Puma's --threads), "
        "instead of comparing workers x threads at the offered load (default: the pool chosen with one thread per "
        "worker against fewer workers with 2, 4, 8, ... threads, and the smallest footprint as fast "
        "chosen).")) | _to("sweep_threads", _negated))
    profile: bool = field(default=False, metadata=flag("--profile", panel=RUN, help=(
        "After the confirmation, profile the recommended configuration at its load (py-spy, Devel::NYTProf or "
        "perf, as pounder profile; 2 rounds with --quick, else 5): profile.json and flame.svg in the results "
        "directory, the top functions and the profiler's cost in the text.")) | _to("profile"))
    report: str | None = field(default=None, metadata=flag_of(report_option(RUN, "results")))
    junit: str | None = field(default=None, metadata=like(Measured, "junit", panel=RUN, help=junit_option(RUN, (
        "one per check of the confirmation run (memory, failures, throughput, p99, rate: not met is a failure; a "
        "rate the fleet carries is skipped; none with --no-confirm)")).help))
    listen: str | None = field(default=None, metadata=flag("--listen", metavar="ADDRESS", panel=SERVER, help=(
        "The IPv4 address of this machine the server listens on (default 127.0.0.1): the one Ray agents on other "
        "machines reach it at. One outside 127.0.0.0/8 needs --allow-remote.")) | _to("listen"))
    allow_remote: bool = field(default=False, metadata=like(LoadOptions, "allow_remote", panel=SERVER, help=(
        "Allow --listen on an address outside 127.0.0.0/8: the server under test is then reachable from the "
        "network.")) | _to("allow_remote"))
    ray: str | None = field(default=None, metadata=like(AgentFlags, "ray", panel=AGENTS))
    agents: int | None = field(default=None, metadata=like(AgentFlags, "agents", panel=AGENTS))
    agents_per_node: int | None = field(default=None, metadata=like(
        AgentFlags, "agents_per_node", panel=AGENTS))
    # fmt: on

    def tune_values(self) -> dict[str, Any]:
        """The keywords of :func:`pounder.tune.make_options` these options give, converted (a count's
        UsageError first in make_options' order of parameters)."""
        return fed(self, make_options)

    def server_values(self) -> dict[str, Any]:
        """The keywords of :class:`pounder.pool.AdapterOptions` these options give, converted."""
        return fed(self, AdapterOptions)

    def given_with_resume(self) -> bool:
        """Whether an option --resume does not take was given (it goes on with the stored ones)."""
        return any(getattr(self, item.name) != item.default for item in dataclasses.fields(self)
                   if item.name not in _AFTER_RESUME)
