"""Server adapters: one small class per server behind one interface.

An adapter knows how to make a :class:`~pounder.servers.ManagedServer` for a set of pool
parameters (:class:`PoolParams`, the five classic knobs plus preloading), and how to write the
final recommendation in the server's own syntax. Starting, warming, measuring and stopping are the
same for every server and live in :mod:`pounder.pool._runner`.

:func:`make_adapter` is the one place an adapter is built from a server kind and its target
(``pounder tune SERVER TARGET``, an experiment file's ``[server]``, a stored ``to_dict``).
Adapters are plain data (``to_dict`` / :func:`adapter_from_dict`), so a results directory can
rebuild the adapter it was run with (``pounder tune --resume``).
"""

from __future__ import annotations

import abc
import os
import re
import shlex
import signal
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pounder._errors import (
    UsageError,
    check_flag,
    check_path,
    check_str_mapping,
    check_strings,
    check_text,
    public,
)
from pounder.servers import (
    HOST,
    ApacheServer,
    GunicornServer,
    ManagedServer,
    StarmanServer,
    apache_missing,
    command_missing,
    gunicorn_app_file,
    gunicorn_app_missing,
    gunicorn_missing,
    read_user_conf,
    starman_missing,
)

DEMO_APP = "pounder.demo.app:app"
DEMO_ENV = {"DEMO_PRELOAD_MB": "64", "DEMO_CPU_MS": "4", "DEMO_LEAK_KB": "16"}


@public
@dataclass(frozen=True)
class PoolParams:
    """The pool settings of one server start, in the classic (Apache 1.3 / mod_perl guide) names.

    * ``max_clients``: the most children (MaxRequestWorkers, gunicorn/Starman ``--workers``).
    * ``max_requests``: requests (Apache: connections) a child serves before it is replaced;
      0 means unlimited.
    * ``start_servers``, ``min_spare``, ``max_spare``: only for servers that spawn children with
      the load (Apache); None means "keep exactly ``max_clients`` children" (a fixed pool).
    * ``preload``: load the application in the parent before forking (None: the adapter's own).
    """

    max_clients: int
    max_requests: int = 0
    start_servers: int | None = None
    min_spare: int | None = None
    max_spare: int | None = None
    preload: bool | None = None

    def fixed(self) -> tuple[int, int, int]:
        """(StartServers, MinSpareServers, MaxSpareServers), with a fixed pool for None."""
        start = self.start_servers if self.start_servers is not None else self.max_clients
        low = self.min_spare if self.min_spare is not None else self.max_clients
        high = self.max_spare if self.max_spare is not None else max(self.max_clients, low) + 1
        return start, low, max(high, low + 1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_clients": self.max_clients,
            "max_requests": self.max_requests,
            "start_servers": self.start_servers,
            "min_spare": self.min_spare,
            "max_spare": self.max_spare,
            "preload": self.preload,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PoolParams:
        return cls(**{key: data.get(key) for key in ("start_servers", "min_spare", "max_spare", "preload")},
                   max_clients=int(data["max_clients"]), max_requests=int(data["max_requests"]))


class Adapter(abc.ABC):
    """What ``pounder tune`` needs from a server."""

    kind: ClassVar[str]
    on_demand: ClassVar[bool] = False
    """The server spawns children as the load grows (StartServers / Min/MaxSpareServers apply)."""
    preload_toggle: ClassVar[bool] = False
    """The adapter can start the server with and without preloading, to compare."""
    max_requests_counts: ClassVar[str] = "requests"
    """What the server's MaxRequestsPerChild counts: "requests" or "connections"."""
    names: ClassVar[Mapping[str, str]]
    """The server's own names for max_clients, max_requests, start_servers, min_spare,
    max_spare, preload ("-" where it has none)."""

    preload: bool = False
    """Whether the user's configuration preloads (the default for :class:`PoolParams`)."""

    @abc.abstractmethod
    def server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
               keepalive: bool = False, host: str = HOST) -> ManagedServer:
        """A server (not started) with these settings, writing its files under ``workdir``, run on
        ``cpus`` (None: anywhere; see :class:`~pounder.servers.ManagedServer`), listening on
        ``host`` (see :func:`~pounder.servers.listen_address`), keeping connections
        alive between requests when ``keepalive`` and the server can (Apache's KeepAlive,
        Starman's default; gunicorn's sync workers and a command's server decide for themselves)."""

    @abc.abstractmethod
    def render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        """``params`` as a snippet of the server's own configuration or command line (``keepalive``:
        measured with connections kept alive)."""

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """Everything needed to rebuild this adapter (JSON-ready, with a "kind")."""

    def describe(self) -> str:
        """One line naming the server and the application."""
        return self.kind

    def check(self) -> None:
        """:class:`~pounder.UsageError` if a file, directory or program this adapter names is
        missing (the server binary, the application, a path option): found before anything
        starts. Nothing of the user's code is run."""
        return None

    def input_files(self) -> list[tuple[str, str]]:
        """The user's files the server reads, as ``(what, path)``: no output may overwrite them."""
        return []

    def with_preload(self, params: PoolParams) -> bool:
        return self.preload if params.preload is None else params.preload


def _env(data: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (data.get("env") or {}).items()}


def _env_prefix(env: Mapping[str, str]) -> str:
    """``env NAME=VALUE ... `` in front of a command line (nothing without variables)."""
    return "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " if env else ""


def _option_value(args: tuple[str, ...], name: str) -> str | None:
    """The value of ``name`` (``--name VALUE`` or ``--name=VALUE``) in a command line's words."""
    found = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith(name + "="):
            found = arg[len(name) + 1:]
    return found


@public
class GunicornAdapter(Adapter):
    """gunicorn with sync workers serving ``app`` ("module:callable")."""

    kind = "gunicorn"
    preload_toggle = True
    names: ClassVar[Mapping[str, str]] = {
        "max_clients": "--workers", "max_requests": "--max-requests", "start_servers": "-",
        "min_spare": "-", "max_spare": "-", "preload": "--preload"}

    def __init__(self, app: str, *, pythonpath: str | None = None, preload: bool = False,
                 env: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = ()) -> None:
        if ":" not in check_text(app, "gunicorn: app"):
            raise UsageError(f"gunicorn: the app must be given as module:callable, not {app!r}")
        self.app = app
        pythonpath = check_path(pythonpath, "gunicorn: pythonpath", optional=True)
        # absolute: the server runs elsewhere, a resumed run may start elsewhere, and the
        # recommended command line must work wherever it is pasted
        self.pythonpath = (",".join(str(Path(p).resolve()) for p in os.fspath(pythonpath).split(",") if p)
                           if pythonpath else None)
        self.preload = check_flag(preload, "gunicorn: preload")
        self.env = check_str_mapping(env, "gunicorn: env")
        self.extra_args = check_strings(extra_args, "gunicorn: extra_args")

    def server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
               keepalive: bool = False, host: str = HOST) -> ManagedServer:
        return GunicornServer(workdir, self.app, pythonpath=self.pythonpath, workers=params.max_clients,
                              max_requests=params.max_requests, preload=self.with_preload(params), env=self.env,
                              extra_args=self.extra_args, cpus=cpus, host=host)

    def render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        # gunicorn replaces a worker after max_requests + randint(0, jitter) requests: keep the sum
        # within the recommended limit (for a leak, the most a child may serve)
        jitter = params.max_requests // 10
        limit = params.max_requests - jitter
        flags = [f"--workers {params.max_clients}", f"--max-requests {limit}"]
        lines = ["# gunicorn.conf.py", f"workers = {params.max_clients}", f"max_requests = {limit}"]
        if jitter:
            flags.append(f"--max-requests-jitter {jitter}")
            lines.append(f"max_requests_jitter = {jitter}  # restarts spread over {limit}..{params.max_requests}")
        if self.with_preload(params):
            flags.append("--preload")
            lines.append("preload_app = True")
        # everything else the server needs to start as it was measured
        if self.pythonpath:
            flags.append(f"--pythonpath {shlex.quote(self.pythonpath)}")
            lines.append(f"pythonpath = {self.pythonpath!r}")
        if self.env:
            pairs = [f"{k}={v}" for k, v in self.env.items()]
            flags += [f"--env {shlex.quote(pair)}" for pair in pairs]
            lines.append(f"raw_env = {pairs!r}")
        tail = " ".join(shlex.quote(word) for word in (*self.extra_args, self.app))
        lines.append(f"# run with: gunicorn -c gunicorn.conf.py {tail}")
        return "\n".join([*lines, "", "# or on the command line", f"gunicorn {' '.join(flags)} {tail}"])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "app": self.app, "pythonpath": self.pythonpath, "preload": self.preload,
                "env": self.env, "extra_args": list(self.extra_args)}

    def describe(self) -> str:
        return f"gunicorn (sync workers) serving {self.app}{' with --preload' if self.preload else ''}"

    def check(self) -> None:
        missing = gunicorn_missing()
        if missing is None:
            missing = gunicorn_app_missing(self.app, pythonpath=self.pythonpath, env=self.env,
                                           chdir=_option_value(self.extra_args, "--chdir"))
        if missing is not None:
            raise UsageError(f"gunicorn: {missing}")

    def input_files(self) -> list[tuple[str, str]]:
        found = gunicorn_app_file(self.app, pythonpath=self.pythonpath, env=self.env,
                                  chdir=_option_value(self.extra_args, "--chdir"))
        return [] if found is None else [(f"app module {self.app}", found)]


@public
class StarmanAdapter(Adapter):
    """Starman serving the PSGI file ``psgi``."""

    kind = "starman"
    preload_toggle = True
    max_requests_counts = "connections"
    names: ClassVar[Mapping[str, str]] = {
        "max_clients": "--workers", "max_requests": "--max-requests", "start_servers": "-",
        "min_spare": "-", "max_spare": "-", "preload": "--preload-app"}

    def __init__(self, psgi: str | os.PathLike[str], *, preload: bool = False,
                 env: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = ()) -> None:
        self.psgi = Path(check_path(psgi, "starman: psgi")).resolve()
        if not self.psgi.is_file():
            raise UsageError(f"starman: no such PSGI file {psgi}")
        self.preload = check_flag(preload, "starman: preload")
        self.env = check_str_mapping(env, "starman: env")
        self.extra_args = check_strings(extra_args, "starman: extra_args")

    def server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
               keepalive: bool = False, host: str = HOST) -> ManagedServer:
        return StarmanServer(workdir, self.psgi, workers=params.max_clients, max_requests=params.max_requests,
                             preload_app=self.with_preload(params), keepalive=keepalive, env=self.env,
                             extra_args=self.extra_args, cpus=cpus, host=host)

    def render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        limit = params.max_requests or 1_000_000_000
        note = "  # Starman reads 0 as its default, 1000" if not params.max_requests else ""
        flags = f"--workers {params.max_clients} --max-requests {limit}"
        if self.with_preload(params):
            flags += " --preload-app"
        tail = " ".join(shlex.quote(word) for word in (*self.extra_args, str(self.psgi)))
        return f"{_env_prefix(self.env)}starman {flags} {tail}{note}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "psgi": str(self.psgi), "preload": self.preload, "env": self.env,
                "extra_args": list(self.extra_args)}

    def describe(self) -> str:
        return f"Starman serving {self.psgi}{' with --preload-app' if self.preload else ''}"

    def check(self) -> None:
        if not self.psgi.is_file():
            raise UsageError(f"starman: no such PSGI file {self.psgi}")
        missing = starman_missing()
        if missing is not None:
            raise UsageError(f"starman: {missing}")

    def input_files(self) -> list[tuple[str, str]]:
        return [("PSGI file", str(self.psgi))]


@public
class ApacheAdapter(Adapter):
    """Apache httpd prefork (+ mod_perl): the user's configuration file ``conf`` with the
    directives pounder owns replaced, or (from Python) handlers given directly."""

    kind = "apache"
    on_demand = True
    max_requests_counts = "connections"
    names: ClassVar[Mapping[str, str]] = {
        "max_clients": "MaxRequestWorkers", "max_requests": "MaxConnectionsPerChild",
        "start_servers": "StartServers", "min_spare": "MinSpareServers", "max_spare": "MaxSpareServers",
        "preload": "PerlRequire startup.pl"}

    def __init__(self, conf: str | os.PathLike[str] | None = None, *, perl_handlers: Mapping[str, str] | None = None,
                 startup_pl: str | os.PathLike[str] | None = None, perl_lib: str | os.PathLike[str] | None = None,
                 extra_conf: str = "") -> None:
        for name, value in (("conf", conf), ("startup_pl", startup_pl), ("perl_lib", perl_lib)):
            check_path(value, f"apache: {name}", optional=True)
        self.conf = Path(conf).resolve() if conf is not None else None
        if self.conf is not None and not self.conf.is_file():
            raise UsageError(f"apache: no such configuration file {conf}")
        self.perl_handlers = check_str_mapping(perl_handlers, "apache: perl_handlers")
        self.startup_pl = Path(startup_pl).resolve() if startup_pl is not None else None
        self.perl_lib = Path(perl_lib).resolve() if perl_lib is not None else None
        self.extra_conf = check_text(extra_conf, "apache: extra_conf")
        # checked now: a bad file is bad input, before anything starts
        conf_text = read_user_conf(self.conf) if self.conf is not None else ""
        self.preload = self.startup_pl is not None or _preloads(conf_text)

    def server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
               keepalive: bool = False, host: str = HOST) -> ManagedServer:
        start, low, high = params.fixed()
        extra: dict[str, Any] = {}
        if self.conf is not None:
            extra["conf"] = self.conf
        return ApacheServer(
            workdir, perl_handlers=self.perl_handlers,
            startup_pl=self.startup_pl.read_text() if self.startup_pl is not None else None,
            perl_lib=self.perl_lib, extra_conf=self.extra_conf, start_servers=min(start, params.max_clients),
            min_spare=low, max_spare=high, max_request_workers=params.max_clients,
            max_connections_per_child=params.max_requests, keepalive=keepalive, cpus=cpus, host=host, **extra)

    def render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        start, low, high = params.fixed()
        rows = [("StartServers", start), ("MinSpareServers", low), ("MaxSpareServers", high),
                ("ServerLimit", params.max_clients), ("MaxRequestWorkers", params.max_clients),
                ("MaxConnectionsPerChild", params.max_requests)]
        body = [f"    {name:<23}{value:>6}" for name, value in rows]
        return "\n".join([
            "<IfModule mpm_prefork_module>", *body, "</IfModule>",
            "# MaxConnectionsPerChild counts connections: with KeepAlive On one connection carries up to",
            f"# MaxKeepAliveRequests requests (pounder measured with KeepAlive {'On' if keepalive else 'Off'}).",
        ])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "conf": None if self.conf is None else str(self.conf),
                "perl_handlers": self.perl_handlers,
                "startup_pl": None if self.startup_pl is None else str(self.startup_pl),
                "perl_lib": None if self.perl_lib is None else str(self.perl_lib), "extra_conf": self.extra_conf}

    def describe(self) -> str:
        what = f"with {self.conf}" if self.conf is not None else f"with handlers {self.perl_handlers}"
        return f"Apache prefork + mod_perl {what}"

    def check(self) -> None:
        if self.conf is not None and not self.conf.is_file():
            raise UsageError(f"apache: no such configuration file {self.conf}")
        if self.startup_pl is not None and not self.startup_pl.is_file():
            raise UsageError(f"apache: no such startup file {self.startup_pl}")
        if self.perl_lib is not None and not self.perl_lib.is_dir():
            raise UsageError(f"apache: the Perl library {self.perl_lib} is not a directory")
        missing = apache_missing(perl=bool(self.perl_handlers or self.startup_pl is not None))
        if missing is not None:
            raise UsageError(f"apache: {missing}")

    def input_files(self) -> list[tuple[str, str]]:
        return [(what, str(path)) for what, path in (("configuration file", self.conf),
                                                     ("startup file", self.startup_pl)) if path is not None]


def _preloads(conf_text: str) -> bool:
    """Does an Apache configuration load Perl code in the parent (PerlRequire / PerlModule /
    PerlPostConfigRequire)?"""
    return bool(re.search(r"^\s*Perl(Require|Module|PostConfigRequire)\s", conf_text, re.IGNORECASE | re.MULTILINE))


@public
class CommandAdapter(Adapter):
    """Any pre-forking server started by a command with ``{port}``, ``{workers}`` and
    ``{max_requests}`` placeholders (see :class:`~pounder.servers.CommandServer`)."""

    kind = "command"
    names: ClassVar[Mapping[str, str]] = {
        "max_clients": "{workers}", "max_requests": "{max_requests}", "start_servers": "-",
        "min_spare": "-", "max_spare": "-", "preload": "-"}

    def __init__(self, command: str, *, env: Mapping[str, str] | None = None, stop_signal: str = "TERM") -> None:
        from pounder.servers import render_command

        check_text(command, "command: command")
        check_text(stop_signal, "command: stop_signal")
        render_command(command, port=1, workers=1, max_requests=0, host=HOST, workdir="/", pidfile="/p",
                       error_log="/e")  # checks the placeholders now: a bad template is a usage error
        try:
            self.stop_signal = signal.Signals[f"SIG{stop_signal.upper().removeprefix('SIG')}"]
        except KeyError:
            raise UsageError(f"command: unknown stop signal {stop_signal!r} (e.g. TERM, QUIT, INT)") from None
        self.command = command
        self.env = check_str_mapping(env, "command: env")

    def server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
               keepalive: bool = False, host: str = HOST) -> ManagedServer:
        from pounder.servers import CommandServer

        return CommandServer(workdir, self.command, workers=params.max_clients, max_requests=params.max_requests,
                             env=self.env, stop_signal=self.stop_signal, cpus=cpus, host=host)

    def render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        values = {"workers": params.max_clients, "max_requests": params.max_requests}

        def fill(match: re.Match[str]) -> str:
            return format(values[match[1]], match[2] or "")

        return _env_prefix(self.env) + re.sub(r"(?<!\{)\{(workers|max_requests)(?::([^{}]*))?\}", fill, self.command)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "command": self.command, "env": self.env, "stop_signal": self.stop_signal.name}

    def describe(self) -> str:
        return f"command: {self.command}"

    def check(self) -> None:
        missing = command_missing(self.command, self.env)
        if missing is not None:
            raise UsageError(f"command: {missing}")


ADAPTERS: Mapping[str, type[Adapter]] = {
    "apache": ApacheAdapter, "gunicorn": GunicornAdapter, "starman": StarmanAdapter, "command": CommandAdapter}
"""Every adapter class by its kind."""
KINDS = tuple(ADAPTERS)
TARGET_FIELDS: Mapping[str, str] = {"apache": "conf", "gunicorn": "app", "starman": "psgi", "command": "command"}
"""What each kind runs, by the name its results and experiment files give it."""


@public
def make_adapter(kind: str, target: str | os.PathLike[str] | None, *, pythonpath: str | None = None,
                 preload: bool = False, env: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = (),
                 stop_signal: str = "TERM", extra_conf: str = "", perl_handlers: Mapping[str, str] | None = None,
                 startup_pl: str | os.PathLike[str] | None = None,
                 perl_lib: str | os.PathLike[str] | None = None, check: bool = True) -> Adapter:
    """The adapter of server ``kind`` (one of :data:`KINDS`) for ``target``: the apache
    configuration file (None: handlers given directly), the gunicorn ``module:callable``, the
    Starman PSGI file, or the command. Options a kind does not use are ignored (Apache takes its
    environment and preloading from its configuration). ``check``: :meth:`Adapter.check` that
    what it names is there (False: only describe a stored run)."""
    adapter = _build_adapter(kind, target, pythonpath=pythonpath, preload=preload, env=env, extra_args=extra_args,
                             stop_signal=stop_signal, extra_conf=extra_conf, perl_handlers=perl_handlers,
                             startup_pl=startup_pl, perl_lib=perl_lib)
    if check:
        adapter.check()
    return adapter


def _build_adapter(kind: str, target: str | os.PathLike[str] | None, *, pythonpath: str | None, preload: bool,
                   env: Mapping[str, str] | None, extra_args: tuple[str, ...], stop_signal: str, extra_conf: str,
                   perl_handlers: Mapping[str, str] | None, startup_pl: str | os.PathLike[str] | None,
                   perl_lib: str | os.PathLike[str] | None) -> Adapter:
    if not isinstance(kind, str) or kind not in ADAPTERS:
        raise UsageError(f"unknown server kind {kind!r}: use one of {', '.join(KINDS)}")
    if kind == "apache":
        return ApacheAdapter(target, perl_handlers=perl_handlers, startup_pl=startup_pl, perl_lib=perl_lib,
                             extra_conf=extra_conf)
    if target is None:
        raise UsageError(f"{kind}: no {TARGET_FIELDS[kind]} given")
    check_path(target, f"{kind}: {TARGET_FIELDS[kind]}")
    if kind == "gunicorn":
        return GunicornAdapter(str(target), pythonpath=pythonpath, preload=preload, env=env, extra_args=extra_args)
    if kind == "starman":
        return StarmanAdapter(target, preload=preload, env=env, extra_args=extra_args)
    return CommandAdapter(str(target), env=env, stop_signal=stop_signal)


@public
def adapter_from_dict(data: Mapping[str, Any], *, check: bool = False) -> Adapter:
    """Rebuild an adapter from its ``to_dict``; :class:`~pounder.UsageError` if it cannot be
    (``check``: or if what it names is no longer there, see :meth:`Adapter.check`)."""
    if not isinstance(data, Mapping):
        raise UsageError(f"adapter_from_dict needs a mapping (an adapter's to_dict()), not {type(data).__name__}")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in TARGET_FIELDS:
        raise UsageError(f"the results directory names an unknown server kind {kind!r}")
    try:
        target = data.get("conf") if kind == "apache" else str(data[TARGET_FIELDS[kind]])
        return make_adapter(kind, target, pythonpath=data.get("pythonpath"), preload=bool(data.get("preload")),
                            env=_env(data), extra_args=tuple(data.get("extra_args") or ()),
                            stop_signal=str(data.get("stop_signal") or "TERM"),
                            extra_conf=str(data.get("extra_conf") or ""),
                            perl_handlers=data.get("perl_handlers") or {}, startup_pl=data.get("startup_pl"),
                            perl_lib=data.get("perl_lib"), check=check)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise UsageError(f"the results directory describes its {kind} server badly ({error})") from None


@public
def demo_adapter() -> GunicornAdapter:
    """The bundled demo: a WSGI app on gunicorn with 64 MB of preloaded data, ~4 ms of CPU per
    request and a 16 KB leak per request."""
    return GunicornAdapter(DEMO_APP, preload=True, env=DEMO_ENV)


__all__ = [
    "ADAPTERS",
    "KINDS",
    "Adapter",
    "ApacheAdapter",
    "CommandAdapter",
    "GunicornAdapter",
    "PoolParams",
    "StarmanAdapter",
    "adapter_from_dict",
    "demo_adapter",
    "make_adapter",
]
