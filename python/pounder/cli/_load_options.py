"""The load options of the commands that load a server (``bench``, ``compare``, ``syscalls``,
``profile``, ``run``, ``tune``), declared once: each flag with its one help text on its field of the
library's :class:`~pounder.LoadOptions` (and, for the options a command reads itself, of
:class:`SharedOptions`). A command takes the ones it offers (:class:`~pounder.cli._bridge.Use`), in
the panel it shows them in, and may add the sentence that states its own default where that
default differs (or, rarely, replace the text); :func:`takes_load_options` gives them to the
command as the library's one :class:`~pounder.LoadOptions` (``given(ctx, LoadOptions)``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import typer

from pounder._errors import UsageError
from pounder._flags import flag
from pounder._units import available_cpus, count_in_range, parse_pid
from pounder.agents import make_sender
from pounder.cli._bridge import Command, Use, takes, typer_option
from pounder.cli._common import print_warning
from pounder.load import LoadOptions, Progress, ProgressCallback, Sender
from pounder.procs import SERVER_OPTIONS, ServerTarget, find_server

LOCAL_URL = typer.Argument(metavar="URL", help="http:// or https:// URL to request (on this machine).",
                           show_default=False)
"""The URL of a command that works on a server of this machine (syscalls, profile)."""


def _which_server(panel: str) -> tuple[Use, Use, Use]:
    """``--server-pid``, ``--server-pidfile`` and ``--server-name`` of a command that works on the
    processes of a server of this machine (syscalls, profile), read with ``given(ctx,
    SharedOptions).server()``."""
    return (_use("server_pid", panel),
            _use("server_pidfile", panel, help=("A file holding the parent's pid (Apache's PidFile, gunicorn --pid, "
                                                "Starman --pid, php-fpm's pid).")),
            _use("server_name", panel, help=("Part of the process name or command line; the top-most matching "
                                             "process is the parent.")))  # fmt: skip


@dataclass(frozen=True)
class SharedOptions:
    """The options several commands share that are not load options: which server (its pid file, its
    name), an access log's mix."""

    server_pid: int | str | None = field(default=None, metadata=flag("--server-pid", metavar="PID", help=(
        "The server's parent process.")))
    """As typed (parsed by :meth:`server`), or a number where the command reads it as one
    (:func:`sampled_server`)."""
    server_pidfile: str | None = field(default=None, metadata=flag("--server-pidfile", metavar="FILE", help=(
        "Like --server-pid, with the pid read from the server's pid file.")))
    server_name: str | None = field(default=None, metadata=flag("--server-name", metavar="TEXT", help=(
        "Like --server-pid, with the parent found by process name or command line.")))
    access_log: str | None = field(default=None, metadata=flag("--access-log", metavar="FILE", help=(
        "Replay the traffic of this Apache/nginx access log (common or combined format, gzip or not) or HAR file "
        "(a browser's export): each distinct request (method, path and query) weighted by its count, in random "
        "order; the URL is then the server's base, http://HOST:PORT or https://HOST:PORT. The log's busiest second "
        "and minute and its mix are reported. A HAR's mix takes GET and HEAD only, without its recorded headers "
        "(--replay sends bodies and headers), and only the requests to its most frequent origin. Each request's "
        "method comes from the file: -m, -b and -T are refused.")))
    exclude_static: bool = field(default=False, metadata=flag("--exclude-static", help=(
        "With --access-log or --replay: leave out static files (.css, .js, images, fonts, media).")))
    log_methods: str | None = field(default=None, metadata=flag("--log-methods", metavar="LIST", help=(
        "With --access-log or --replay: the methods replayed, default GET,HEAD (a POST replayed without the body "
        "it had is not the request the server saw; --replay sends a HAR's bodies and headers, --access-log "
        "FILE.har takes GET and HEAD only).")))

    def server(self) -> dict[str, Any]:
        """The server named, as the library's ``server_pid``, ``server_pidfile`` and ``server_name``
        take it (a pid as typed checked here, naming --server-pid)."""
        pid = parse_pid(self.server_pid, "--server-pid") if isinstance(self.server_pid, str) else self.server_pid
        return {"server_pid": pid, "server_pidfile": self.server_pidfile, "server_name": self.server_name}

    def target(self) -> ServerTarget | None:
        """The server the ``--server-*`` options name, found (:func:`~pounder.procs.find_server`);
        None when none is given."""
        server = self.server()
        if all(value is None for value in server.values()):
            return None
        return find_server(pid=server["server_pid"], pidfile=self.server_pidfile, name=self.server_name,
                           options=SERVER_OPTIONS)  # fmt: skip


_FIELD = {"header": "headers", "cookie": "cookies"}  # the field of a repeatable option, as a flag names it


def _use(name: str, panel: str, default: str = "", help: str | None = None, **value: Any) -> Use:  # noqa: A002
    name = _FIELD.get(name, name)
    return Use(LoadOptions if name in LoadOptions.__dataclass_fields__ else SharedOptions, name, panel, default, help,
               **value)  # fmt: skip


def load_option(name: str, panel: str, default: str = "", *, help: str | None = None) -> Any:  # noqa: A002
    """The option ``name`` (a field of :class:`~pounder.LoadOptions` or :class:`SharedOptions`) shown
    in ``panel``: its help text, then ``default`` (the command's own default, a sentence), or
    ``help`` instead of both."""
    return typer_option(_use(name, panel, default, help).flag())


AGENTS_PANEL = "Agents (load from many machines)"


@dataclass(frozen=True)
class AgentFlags:
    """``--ray``, ``--agents`` and ``--agents-per-node``: the Ray cluster that sends the load, taken
    by ``bench``, ``compare`` and ``run`` (``takes(AgentFlags, before=...)``, ``given(ctx,
    AgentFlags).sender()``); ``tune``'s :class:`TuneFlags` declares its own like them."""

    ray: str | None = field(default=None, metadata=flag(
        "--ray", metavar="local|auto|HOST:PORT", panel=AGENTS_PANEL, help=(
        "Send the load from agents on a Ray cluster: 'local' (one on this machine, on loopback), 'auto' (the "
        "cluster in RAY_ADDRESS or the one this machine started) or the head's HOST:PORT. Every agent runs its "
        "share of the same load from one start time; the results are merged exactly. The nodes need only Ray: "
        "pounder sends its own files with the agents (a node whose Python has another pounder version is "
        "refused).")))
    agents: int | None = field(default=None, metadata=flag("--agents", metavar="N", kind=int, panel=AGENTS_PANEL,
                                                           help=(
        "With --ray: how many agents; default one per node (times --agents-per-node).")))
    agents_per_node: int | None = field(default=None, metadata=flag(
        "--agents-per-node", metavar="K", kind=int, panel=AGENTS_PANEL, help=(
        "With --ray: agents allowed on one node, default 1 (all with --ray local).")))

    def sender(self) -> Sender:
        """What sends the load (:func:`pounder.agents.make_sender`)."""
        return make_sender(self.ray, self.agents, self.agents_per_node)


def load_parameter(name: str, panel: str, default: str = "", *, help: str | None = None,  # noqa: A002
                   **value: Any) -> Use:  # fmt: skip
    """The load option ``name`` offered by a command, shown in ``panel`` (see :func:`load_option`);
    ``value=``: its default when the command's differs from the library's, as text."""
    return _use(name, panel, default, help, **value)


def sampled_server(panel: str, pid_help: str) -> list[Use]:
    """``--server-pid`` (a number: ``pid_help``), ``--server-pidfile`` and ``--server-name`` of a
    command that samples the server while it loads it (bench, compare), shown in ``panel``; read
    with ``given(ctx, SharedOptions)``."""
    return [_use("server_pid", panel, help=pid_help, kind=int), _use("server_pidfile", panel),
            _use("server_name", panel)]  # fmt: skip


def size_parameters(panel: str, *, requests: str = "", duration: str = "", rate: str = "") -> list[Use]:
    """``-c``, ``-n``, ``-d``, ``-t`` and ``--rate`` (how much load, and paced or not), in this order,
    shown in ``panel``, each with the command's own sentence on its default."""
    return [load_parameter("connections", panel), load_parameter("requests", panel, requests),
            load_parameter("duration", panel, duration), load_parameter("threads", panel),
            load_parameter("rate", panel, rate)]  # fmt: skip


def tls_parameters(panel: str = "HTTPS") -> list[Use]:
    """``--insecure``, ``--cacert``, ``--cert``, ``--key`` and ``--no-tls-resume``, shown in ``panel``."""
    return [*(_use(name, panel) for name in ("insecure", "cacert", "cert", "key")),
            _use("tls_resume", panel, value=True)]


def expect_status_parameter(panel: str) -> Use:
    """``--expect-status STATUSES``, shown in ``panel``."""
    return load_parameter("expect_status", panel)


def io_parameter(panel: str) -> Use:
    """``--io auto|uring|epoll`` (default auto), shown in ``panel``."""
    return load_parameter("io", panel, value="auto")


def measured_load(panel: str, http: str | None = None, *, sizes: dict[str, str], paced: tuple[str, ...] = (),
                  request: tuple[str, ...] = (), scenario: str = "") -> list[Use]:
    """The load options of a command that loads a server and measures it (bench, compare), in the
    order its --help shows them: :func:`size_parameters` (``sizes``: its sentences on their
    defaults), the ``paced`` ones, ``--io``, then in ``http`` (default ``panel``) ``--keepalive``
    (default on), the ``request`` ones, ``--timeout`` and ``--allow-remote``; ``--scenario`` (with
    the ``scenario`` sentence), ``--expect-status`` (in ``http``) and the HTTPS options."""
    http = http or panel
    return [*size_parameters(panel, **sizes), *(load_parameter(name, panel) for name in paced), io_parameter(panel),
            load_parameter("keepalive", http, "Default: on.", value=True),
            *(load_parameter(name, http) for name in (*request, "timeout", "allow_remote")),
            load_parameter("scenario", panel, scenario), expect_status_parameter(http), *tls_parameters()]


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


def takes_load_options(*declared_uses: Use, before: str | None = None) -> Callable[[Command], Command]:
    """A command that offers the ``declared_uses`` load options (shown before its parameter
    ``before``; None: after its own) and reads them as one :class:`~pounder.LoadOptions` with
    ``given(ctx, LoadOptions)``; those it does not offer keep the library's defaults."""
    return takes(*declared_uses, before=before)


def takes_local_load(which: str, panel: str, *declared_uses: Use, before: str) -> Callable[[Command], Command]:
    """A command that loads a server of this machine and works on its processes (syscalls,
    profile): ``--server-*`` shown in ``which`` (``given(ctx, SharedOptions).server()``), then the
    ``declared_uses`` load options, ``--expect-status`` and the HTTPS options, shown in ``panel``,
    all before its parameter ``before``."""
    return takes_load_options(*_which_server(which), *declared_uses, expect_status_parameter(panel),
                              *tls_parameters(panel), before=before)  # fmt: skip
