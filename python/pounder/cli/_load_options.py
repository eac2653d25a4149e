"""The load options of the commands that load a server (``bench``, ``compare``, ``syscalls``),
declared once: each flag with its one help text. A command takes the ones it offers, in the panel
it shows them in, and may add the sentence that states its own default where that default differs
(or, rarely, replace the text). :func:`takes_load_options` gives them to the command as the library's one
:class:`~pounder.LoadOptions`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Annotated, Any

import typer

from pounder._errors import UsageError
from pounder._units import available_cpus, count_in_range
from pounder.cli._common import option, print_warning
from pounder.load import LoadOptions, Progress, ProgressCallback

LOCAL_URL = typer.Argument(metavar="URL", help="http:// or https:// URL to request (on this machine).",
                           show_default=False)
"""The URL of a command that works on a server of this machine (syscalls, profile)."""


def which_server(panel: str) -> tuple[Any, Any, Any]:
    """``--server-pid``, ``--server-pidfile`` and ``--server-name`` of a command that works on the
    processes of a server of this machine (syscalls, profile)."""
    return (option("--server-pid", panel=panel, metavar="PID", help="The server's parent process."),
            load_option("server_pidfile", panel, help=("A file holding the parent's pid (Apache's PidFile, gunicorn "
                                                       "--pid, Starman --pid, php-fpm's pid).")),
            load_option("server_name", panel, help=("Part of the process name or command line; the top-most matching "
                                                    "process is the parent.")))  # fmt: skip


# name: (flags, metavar, help)
# fmt: off
_DECLARED: dict[str, tuple[tuple[str, ...], str | None, str]] = {
    "connections": (("-c", "--connections"), "N",
                    "Closed loop: concurrent connections, default 10. Open loop: the cap on requests in flight, "
                    "default 1000."),
    "requests": (("-n", "--requests"), "N", "Stop after N measured requests (10k, 1M)."),
    "duration": (("-d", "--duration"), "TIME",
                 "Measure for this long: 30s, 2m, 1h, 500ms (a bare number is seconds). With -n too, the first "
                 "limit reached ends the run."),
    "threads": (("-t", "--threads"), "N",
                "Engine threads; default: the CPUs available. Silently lowered to the number of connections."),
    "rate": (("--rate",), "RATE",
             "Open loop at a global rate in req/s: 500, a ramp over the run 50..500, or a ramp 50..500/60s (then "
             "held at 500 if -d is longer); latency is measured from each request's intended send time."),
    "stages": (("--stages",), "STAGES",
               "Open loop in stages: 30s@100,60s@400,30s@100 (constant) or 60s@100..400 (ramp). Excludes --rate, "
               "-n, -d."),
    "max_in_flight": (("--max-in-flight",), "N",
                      "Open loop only: the cap on requests in flight (same as -c in open loop), default 1000. A "
                      "request whose time comes while the cap is reached is counted as unsent."),
    "keepalive": (("--keepalive/--no-keepalive",), None,
                  "Keep connections open between requests (--keepalive) or open a new one for every request "
                  "(--no-keepalive, sends Connection: close)."),
    "calls_per_conn": (("--calls-per-conn",), "N", "Close each connection after N responses (0 = never, the default)."),
    "throttle": (("--throttle",), "BANDWIDTH",
                 "Read responses slowly, per connection: 33.6kbps, 1Mbps, 56kbit (bits, k = 1000), 4KB/s (bytes), "
                 "1MiB/s (k = 1024); a bare number is bytes/s."),
    "method": (("-m", "--method"), "METHOD", "HTTP method; default GET, or POST when there is a body."),
    "body": (("-b", "--body"), "TEXT|@FILE", "Request body: the text itself, or @FILE for a file's bytes."),
    "content_type": (("-T", "--content-type"), "TYPE", "Content-Type header."),
    "header": (("-H", "--header"), "'NAME: VALUE'",
               "Add a header, or replace one pounder sends by default (Host, User-Agent, Accept). Repeatable. "
               "Content-Length, Transfer-Encoding and Connection are pounder's own (from -b and --no-keepalive) and "
               "refused; -H Content-Type, Authorization or Cookie replaces what -T, -A or --cookie sets."),
    "cookie": (("--cookie",), "NAME=VALUE", "Send a cookie. Repeatable."),
    "auth": (("-A", "--auth"), "USER:PASS", "Basic authentication."),
    "timeout": (("--timeout",), "TIME", "Per-request timeout, connect included (like ab). Default 30s."),
    "allow_remote": (("--allow-remote",), None, "Allow targets that are not loopback addresses (127.0.0.0/8, ::1)."),
    "insecure": (("--insecure",), None,
                 "https://: accept any server certificate (a self-signed one); the handshake is still made in "
                 "full, and what the engine (rustls) cannot use is still refused: an RSA key under 2048 bits."),
    "cacert": (("--cacert",), "FILE", "https://: trust the CA certificates of this PEM file instead of the "
               "system's; a self-signed server certificate given here is trusted as it is. Before the load, "
               "pounder makes one TLS handshake (no request) to each https:// address to check its certificate, "
               "and closes it cleanly (close_notify): a connection that asked nothing, which servers do not log as "
               "a request (nginx logs a 400 line only when the port speaks plain HTTP)."),
    "cert": (("--cert",), "FILE", "https://: send this PEM client certificate (with --key)."),
    "key": (("--key",), "FILE", "https://: the client certificate's PEM private key (not encrypted)."),
    "tls_resume": (("--tls-resume/--no-tls-resume",), None,
                   "https://: resume TLS sessions on new connections (default), or make every handshake a full "
                   "one (--no-tls-resume), which is what a server pays for new visitors."),
    "io": (("--io",), "auto|uring|epoll",
           "The engine's I/O path: auto (the default: io_uring when this kernel allows it, else epoll; HTTPS, "
           "--scenario, --throttle and the load of pounder syscalls run on epoll), uring (io_uring, or an error "
           "saying why not, before anything is sent) or epoll. The report and the JSON say which was taken and why."),
    "expect_status": (("--expect-status",), "STATUSES",
                      "The answers expected when they are not 2xx or 3xx: 404, 400-499, 4xx, or a comma list "
                      "(404,410). A run with no answer of a success status (2xx or 3xx, or these) got nowhere: it "
                      "says so in one line and exits 1, after writing its results."),
    "server_pidfile": (("--server-pidfile",), "FILE",
                       "Like --server-pid, with the pid read from the server's pid file."),
    "server_name": (("--server-name",), "TEXT",
                    "Like --server-pid, with the parent found by process name or command line."),
    "access_log": (("--access-log",), "FILE",
                   "Replay the traffic of this Apache/nginx access log (common or combined format, gzip or not) or HAR "
                   "file (a browser's export): "
                   "each distinct request (method, path and query) weighted by its count, in random order; the URL "
                   "is then the server's base, http://HOST:PORT or https://HOST:PORT. The log's busiest second and "
                   "minute and its mix are reported. A HAR's mix takes GET and HEAD only, without its recorded "
                   "headers (--replay sends bodies and headers), and only the requests to its most frequent "
                   "origin. Each request's method comes from the file: -m, -b and -T are refused."),
    "exclude_static": (("--exclude-static",), None,
                       "With --access-log or --replay: leave out static files (.css, .js, images, fonts, media)."),
    "log_methods": (("--log-methods",), "LIST",
                    "With --access-log or --replay: the methods replayed, default GET,HEAD (a POST replayed "
                    "without the body it had is not the request the server saw; --replay sends a HAR's bodies and "
                    "headers, --access-log FILE.har takes GET and HEAD only)."),
    "replay": (("--replay",), "FILE",
               "Send the requests of this access log (common or combined, gzip or not) or HAR file at their "
               "recorded times, scaled by --speed: open loop, latency from each request's time, -c the cap on "
               "requests in flight. Sub-second times are used when the log has them ([10/Oct/2000:13:55:36.123 "
               "+0000], a HAR's startedDateTime); a log of whole seconds has each second's requests spread evenly "
               "over it (the report says so). A HAR's requests keep their headers and bodies; only those to its "
               "most frequent origin are sent (the others are counted as skipped). The URL is the server's base, "
               "http://HOST:PORT or https://HOST:PORT. -n or -d cut it short. Excludes --rate, --stages, --warmup, "
               "--order, -f, --access-log, --scenario, -m, -b, -T."),
    "speed": (("--speed",), "FACTOR",
              "With --replay: how much faster than recorded, e.g. 10x, 0.5x or 2; default 1x."),
    "scenario": (("--scenario",), "FILE",
                 "Virtual users with sessions, from a TOML scenario file (docs/scenarios.md): each connection is "
                 "a user that runs the \\[\\[login]] steps once (capturing CSRF tokens, cookies in its own jar), then "
                 "the \\[\\[loop]] steps round and round; every step is a request (-n counts them) with its own "
                 "percentiles. The URL is then the server's base, http://HOST:PORT or https://HOST:PORT. In open "
                 "loop think times are not slept."),
    "ray": (("--ray",), "local|auto|HOST:PORT",
            "Send the load from agents on a Ray cluster: 'local' (one on this machine, on loopback), 'auto' (the "
            "cluster in RAY_ADDRESS or the one this machine started) or the head's HOST:PORT. Every agent runs "
            "its share of the same load from one start time; the results are merged exactly. pounder must be "
            "installed on every node (pip install 'pounder\\[ray]')."),
    "agents": (("--agents",), "N", "With --ray: how many agents; default one per node (times --agents-per-node)."),
    "agents_per_node": (("--agents-per-node",), "K",
                        "With --ray: agents allowed on one node, default 1 (all with --ray local)."),
}
# fmt: on

_REPEATABLE = frozenset({"header", "cookie"})
_FIELDS = frozenset(field.name for field in fields(LoadOptions))
_UNSET: Any = object()

Command = Callable[..., None]


def load_option(name: str, panel: str, default: str = "", *, help: str | None = None) -> Any:  # noqa: A002
    """The option ``name`` (a key of the declarations above) shown in ``panel``: its help text, then
    ``default`` (the command's own default, a sentence), or ``help`` instead of both."""
    flags, metavar, text = _DECLARED[name]
    return option(*flags, panel=panel, metavar=metavar, help=help or " ".join(filter(None, (text, default))))


_AGENTS = "Agents (load from many machines)"
RAY = load_option("ray", _AGENTS)
AGENTS = load_option("agents", _AGENTS)
AGENTS_PER_NODE = load_option("agents_per_node", _AGENTS)


def load_parameter(name: str, panel: str, default: str = "", *, help: str | None = None,  # noqa: A002
                   value: Any = _UNSET) -> inspect.Parameter:  # fmt: skip
    """:func:`load_option` as the command parameter typer reads (``value``: its default when the
    command's differs from the library's, as text)."""
    flags, metavar, _ = _DECLARED[name]
    kind: Any = bool if metavar is None else list[str] | None if name in _REPEATABLE else str | None
    empty = False if metavar is None else None
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=empty if value is _UNSET else value,
                             annotation=Annotated[kind, load_option(name, panel, default, help=help)])  # fmt: skip


def tls_parameters(panel: str = "HTTPS") -> list[inspect.Parameter]:
    """``--insecure``, ``--cacert``, ``--cert``, ``--key`` and ``--no-tls-resume``, shown in ``panel``."""
    return [load_parameter(name, panel, value=True if name == "tls_resume" else _UNSET)
            for name in ("insecure", "cacert", "cert", "key", "tls_resume")]


def expect_status_parameter(panel: str) -> inspect.Parameter:
    """``--expect-status STATUSES``, shown in ``panel``."""
    return load_parameter("expect_status", panel)


def io_parameter(panel: str) -> inspect.Parameter:
    """``--io auto|uring|epoll`` (default auto), shown in ``panel``."""
    return load_parameter("io", panel, value="auto")


def load_options(values: Mapping[str, Any]) -> LoadOptions:
    """The :class:`~pounder.LoadOptions` of a command's load parameters: those it offers, with
    ``header`` and ``cookie`` read as ``headers`` and ``cookies``; those it does not offer keep the
    library's defaults."""
    given = {name: value for name, value in values.items() if name in _FIELDS}
    if "header" in values:
        given["headers"] = values["header"] or ()
    if "cookie" in values:
        given["cookies"] = values["cookie"] or ()
    return LoadOptions(**given)


def threads_warning(load: LoadOptions, on_progress: ProgressCallback | None) -> ProgressCallback | None:
    """ab's -t is a time limit, pounder's the engine threads: ``-t 30`` far above the CPUs (more
    than twice as many) is most likely meant as 30 s. The progress callback to give the library
    instead of ``on_progress``: it says so on stderr once, at the first progress of the run (so
    only once every input was found good: a bad one is the one error line); the run goes on as
    given."""
    try:
        count = None if load.threads is None else count_in_range(load.threads, "-t/--threads", 1, 1 << 30)
    except UsageError:
        count = None  # the library's one error line says it
    cpus = available_cpus()
    if count is None or count <= 2 * cpus:
        return on_progress
    warned: list[bool] = []

    def warn_then(progress: Progress) -> None:
        if not warned:
            warned.append(True)
            print_warning(f"-t {count} is threads (the CPUs here: {cpus}); for a time limit use -d {count}s")
        if on_progress is not None:
            on_progress(progress)

    return warn_then


def takes_load_options(*declared: inspect.Parameter) -> Callable[[Command], Command]:
    """A command whose keyword-only parameter ``load: LoadOptions`` stands for the ``declared``
    load parameters: typer shows those options in its place, the command gets their values as one
    :class:`~pounder.LoadOptions`."""
    names = [parameter.name for parameter in declared]

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)

        @functools.wraps(command)
        def run(**values: Any) -> None:
            command(load=load_options({name: values.pop(name) for name in names}), **values)

        parameters = [item for parameter in signature.parameters.values()
                      for item in ([one.replace(kind=parameter.kind) for one in declared] if parameter.name == "load"
                                   else [parameter])]  # fmt: skip
        run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        return run

    return decorate
