"""The adapter interface: :class:`PoolParams` (the five classic knobs plus preloading) and
:class:`Adapter`, which one module per server implements (``_gunicorn``, ``_starman``,
``_apache``, ``_command``); :mod:`pounder.pool._adapters` builds them."""

from __future__ import annotations

import abc
import copy
import os
import shlex
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar

from pounder._errors import (
    UsageError,
    check_path,
    public,
)
from pounder.servers import (
    HOST,
    NO_STATUS,
    ManagedServer,
    StatusReader,
)


@public
@dataclass(frozen=True)
class ServerOption:
    """An option some servers take, declared once: ``name`` is its keyword (``make_adapter``,
    ``to_dict``, an experiment file's ``[server]`` and ``[[variant]]`` key), ``flag`` and
    ``metavar`` the command line's, ``help`` what it does, ``default`` its value when not given;
    each adapter says which it takes (:attr:`Adapter.options`), and the CLI and experiment files
    refuse it for the others."""

    name: str
    flag: str
    metavar: str
    help: str
    default: str | bool | None = None


SERVER_OPTIONS: Mapping[str, ServerOption] = {option.name: option for option in (
    ServerOption("pythonpath", "--pythonpath", "DIR", "gunicorn: where to import the app from."),
    ServerOption("preload", "--preload", "", (
        "Load the app in the parent before forking (gunicorn --preload, Starman --preload-app, uWSGI without "
        "lazy-apps, Puma preload_app!, Unicorn preload_app true); default: the server's own (on for uWSGI, off for "
        "the others). The other setting is measured too, for comparison, unless --quick."), False),
    ServerOption("env", "--env", "NAME=VALUE", "Set in the server's environment (repeatable)."),
    ServerOption("root", "--root", "DIR", (
        "php-fpm: the document root of the PHP scripts (the front's root: a request for /x.php runs DIR/x.php)."),
        None),
    ServerOption("threads", "--threads", "N|MIN,MAX", (
        "Puma: the threads of each worker (threads MIN, MAX; N is N,N). Default 1,1: one request per worker, as the "
        "other pre-fork servers; tune without it compares workers x threads itself, and keeps them when given."),
        None),
    ServerOption("fork_worker", "--fork-worker", "N", (
        "Puma: fork_worker N: worker 0 forks the other workers (instead of the master), and once it has served N "
        "requests they are reforked from it, sharing what it built while serving (Puma's refork; 0: never "
        "refork). Default: off."), None),
    ServerOption("stop_signal", "--stop-signal", "SIG",
                 "command: the signal that stops the server gracefully (default TERM).", "TERM"),
)}
"""The options only some servers take, by name."""


MAX_THREADS = 1024
"""The most threads per child pounder starts (Puma's ``threads``, gunicorn's and uWSGI's ``--threads``)."""


CLASSIC_NAMES: Mapping[str, str] = {
    "max_clients": "MaxClients", "max_requests": "MaxRequestsPerChild", "start_servers": "StartServers",
    "min_spare": "MinSpareServers", "max_spare": "MaxSpareServers", "preload": "preload", "threads": "threads"}
"""The five parameters (and preloading, and a worker's threads) in the classic Apache 1.3 / mod_perl guide
names (threads in none: a server's own, where it has them)."""


def server_names(**names: str) -> Mapping[str, str]:
    """A server's own names (an adapter's :attr:`Adapter.names`) for the parameters of
    :data:`CLASSIC_NAMES` it has, in their order; "-" for those it has not."""
    unknown = sorted(set(names) - set(CLASSIC_NAMES))
    if unknown:
        raise TypeError(f"server_names: no parameter {unknown[0]!r}")
    return {key: names.get(key, "-") for key in CLASSIC_NAMES}


@public
def own_name(names: Mapping[str, str], key: str) -> str:
    """Parameter ``key`` in a server's own ``names`` (an adapter's, or as stored with a run); the
    classic name where the server has none ("-")."""
    name = names.get(key, "-")
    return CLASSIC_NAMES[key] if name == "-" else name


def _names(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def option_refused(adapter: type[Adapter], name: str, adapters: Collection[type[Adapter]],
                   called: str | None = None) -> str | None:
    """Why ``adapter`` does not take the server option ``name`` (one line naming the servers that
    take it, and what to do instead; the option called ``called``, default its flag), None when it
    takes it."""
    if name in adapter.options:
        return None
    takers = _names([other.who for other in adapters if name in other.options])
    instead = adapter.instead.get(name)
    return f"{called or SERVER_OPTIONS[name].flag} is for {takers} only" + (f" ({instead})" if instead else "")


def _stored(read: Callable[[Any], Any]) -> dict[str, Callable[[Any], Any]]:
    """A field's metadata: how :meth:`AdapterOptions.from_dict` reads its stored value (None when absent)."""
    return {"stored": read}


@public
@dataclass(frozen=True)
class AdapterOptions:
    """What an adapter is built from besides its target (:meth:`Adapter.from_options`): the
    :data:`SERVER_OPTIONS`, the arguments added to the server's command line (``extra_args``), an
    experiment variant's configuration lines (``extra_conf``) and Apache's handlers given from
    Python; each adapter reads the ones it takes and ignores the others. ``preload`` and
    ``threads`` None: the server's own default; ``fork_worker`` None: off. Each field is
    declared once, here: its keyword (``make_adapter``), its key in an adapter's ``to_dict`` and
    how a stored one reads back (its ``stored`` metadata; as stored without)."""

    pythonpath: str | None = None
    preload: bool | None = field(default=None, metadata=_stored(bool))
    root: str | os.PathLike[str] | None = None
    env: Mapping[str, str] | None = field(
        default=None, metadata=_stored(lambda env: {str(k): str(v) for k, v in (env or {}).items()}))
    extra_args: tuple[str, ...] = field(default=(), metadata=_stored(lambda args: tuple(args or ())))
    threads: Any = None
    fork_worker: int | None = field(default=None, metadata=_stored(lambda n: None if n is None else int(n)))
    stop_signal: str = field(default="TERM", metadata=_stored(lambda name: str(name or "TERM")))
    extra_conf: str = field(default="", metadata=_stored(lambda text: str(text or "")))
    perl_handlers: Mapping[str, str] | None = field(default=None, metadata=_stored(lambda handlers: handlers or {}))
    startup_pl: str | os.PathLike[str] | None = None
    perl_lib: str | os.PathLike[str] | None = None

    @property
    def preloading(self) -> dict[str, bool]:
        """``preload`` as a keyword only when given: None is each server's own default."""
        return {} if self.preload is None else {"preload": self.preload}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AdapterOptions:
        """The options of an adapter's ``to_dict`` (a stored run's: preloading as it ran)."""
        return cls(**{option.name: option.metadata.get("stored", _as_stored)(data.get(option.name))
                      for option in fields(cls)})


def _as_stored(value: Any) -> Any:
    return value


ADAPTER_OPTION_NAMES: frozenset[str] = frozenset(option.name for option in fields(AdapterOptions))
"""The keywords of :class:`AdapterOptions` (``make_adapter``'s besides ``check``)."""


@public
@dataclass(frozen=True)
class ChildLimit:
    """How far a child of the recommended pool may grow, from the measured sizes and the budget:
    a warmed child's private size ``start`` (USS, bytes), the private size ``limit`` each of the
    ``children`` may reach within the RAM budget, the memory it shares with the parent
    (``shared``, bytes per child), the requests it serves before it reaches ``limit`` at the
    measured growth (``requests``; 0 when no leak was measured), and the parent's RSS
    (``parent``, bytes). ``growth``: the private bytes a child gains per request served (0 when no
    leak was measured). ``vm_size`` and ``statm_shared``: the warmed child whose USS is ``start``
    as ``/proc/PID/statm`` shows it (VmSize, resident file-backed pages; bytes, 0 when not
    measured), for the servers whose limits read statm (Apache2::SizeLimit)."""

    children: int
    start: int
    limit: int
    shared: int
    requests: int
    parent: int = 0
    growth: float = 0.0
    vm_size: int = 0
    statm_shared: int = 0

    @property
    def rss(self) -> int:
        """The RSS a child reaches at ``limit``: its private memory and what it shares."""
        return self.limit + self.shared

    def with_statm(self, statm: Mapping[str, Any] | None) -> ChildLimit:
        """With ``vm_size`` and ``statm_shared`` from a sizes measurement's ``statm`` (see
        :func:`~pounder.pool.child_statm`; None: not measured): the VmSize of a child at ``start``,
        its own VmSize moved by the difference of the USS (a child's VmSize and USS grow alike)."""
        if not statm:
            return self
        return replace(self, vm_size=int(statm["vm_size"]) + self.start - int(statm["uss"]),
                       statm_shared=int(statm["statm_shared"]))


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
    * ``threads``: the threads of each child, for the servers that have them
      (:attr:`Adapter.threaded`: Puma, gunicorn, uWSGI); None: the adapter's own setting. Stored
      only when given.
    """

    max_clients: int
    max_requests: int = 0
    start_servers: int | None = None
    min_spare: int | None = None
    max_spare: int | None = None
    preload: bool | None = None
    threads: int | None = None

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
            **({} if self.threads is None else {"threads": self.threads}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PoolParams:
        threads = data.get("threads")
        return cls(**{key: data.get(key) for key in ("start_servers", "min_spare", "max_spare", "preload")},
                   max_clients=int(data["max_clients"]), max_requests=int(data["max_requests"]),
                   threads=None if threads is None else int(threads))


class Adapter(abc.ABC):
    """What ``pounder tune`` needs from a server."""

    kind: ClassVar[str]
    on_demand: ClassVar[bool] = False
    """The server spawns children as the load grows (StartServers / Min/MaxSpareServers apply)."""
    preload_toggle: ClassVar[bool] = False
    """The adapter can start the server with and without preloading, to compare."""
    threaded: ClassVar[bool] = False
    """The server runs threads in each child (Puma, gunicorn's gthread workers, uWSGI): it takes
    :attr:`PoolParams.threads` (:meth:`threads_of`); the others refuse more than one."""
    runtime_lock: ClassVar[str] = ""
    """What lets one thread of a child run the application's code at a time, in the words of its
    runtime ("Ruby's GVL", "Python's GIL"): the reason threads do not use more cores."""
    max_requests_counts: ClassVar[str] = "requests"
    """What the server's MaxRequestsPerChild counts: "requests" or "connections"."""
    request_limit: ClassVar[bool] = True
    """The server can replace a child after a number of requests (Puma and Unicorn cannot: their
    ``server()`` refuses ``max_requests`` > 0, tune skips that sweep and names a worker killer)."""
    names: ClassVar[Mapping[str, str]]
    """The server's own names for max_clients, max_requests, start_servers, min_spare,
    max_spare, preload ("-" where it has none)."""
    options: ClassVar[frozenset[str]] = frozenset()
    """The :data:`SERVER_OPTIONS` it takes (by name): the CLI and experiment files refuse the others."""
    instead: ClassVar[Mapping[str, str]] = {}
    """For an option it does not take, what its users do instead (said when it is given)."""
    who: ClassVar[str] = ""
    """How messages name it ("gunicorn", "the command server")."""
    target_form: ClassVar[str] = "TARGET"
    """What ``pounder tune SERVER TARGET`` takes for it ("HTTPD.CONF", "MODULE:APP")."""
    target_field: ClassVar[str]
    """What its results (``to_dict``) and experiment files call its target ("conf", "app", "rackup")."""
    target_file: ClassVar[bool] = False
    """Its TARGET is a file (:meth:`target_is_file`)."""

    @classmethod
    @abc.abstractmethod
    def from_options(cls, target: str | os.PathLike[str] | None, options: AdapterOptions) -> Adapter:
        """The adapter of ``target`` with the ``options`` it takes (not checked: :meth:`check`)."""

    @classmethod
    def given_target(cls, target: str | os.PathLike[str] | None) -> str | os.PathLike[str]:
        """``target`` when one is given, of a type a path can be; :class:`~pounder.UsageError` otherwise."""
        if target is None:
            raise UsageError(f"{cls.kind}: no {cls.target_field} given")
        check_path(target, f"{cls.kind}: {cls.target_field}")
        return target

    @classmethod
    def stored_target(cls, data: Mapping[str, Any]) -> str | None:
        """The target of its ``to_dict`` ``data`` (KeyError when there is none)."""
        return str(data[cls.target_field])

    @classmethod
    def target_is_file(cls, target: str) -> bool:
        """Does ``target`` name a file, which is read where it was given (an experiment file's
        directory), rather than text (a module, a command)?"""
        return cls.target_file
    language: ClassVar[str] = "other"
    """The language of its applications ("perl", "python", "php", "ruby"): the advice's words."""
    preload_remedy: ClassVar[str] = ""
    """How its users load the application in the parent ("" when pounder cannot tell them)."""
    respawn: ClassVar[str] = "each respawn is a fork and the new child's warm-up"
    """What replacing a child costs on this server, by its own mechanism."""

    preload: bool = False
    """Whether the user's configuration preloads (the default for :class:`PoolParams`)."""
    status_reader: ClassVar[StatusReader] = NO_STATUS
    """What the server's own counters (``status_counters``) say of a load, per point and in words."""
    nytprof: ClassVar[bool] = False
    """Its servers can load Devel::NYTProf for ``pounder profile`` (see :meth:`profiling`)."""
    profile_dir: Path | None = None
    """Where its servers' NYTProf writes (None: not loaded)."""

    def profiling(self, directory: Path) -> Adapter:
        """This adapter, whose servers load Devel::NYTProf and pounder's window profiling into
        ``directory`` (a copy; for ``pounder tune --profile``); itself when its servers need nothing
        for their profiler (py-spy and perf attach from outside)."""
        if not self.nytprof:
            return self
        clone = copy.copy(self)
        clone.profile_dir = Path(directory)
        return clone

    def server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
               keepalive: bool = False, host: str = HOST) -> ManagedServer:
        """A server (not started) with these settings, writing its files under ``workdir``, run on
        ``cpus`` (None: anywhere; see :class:`~pounder.servers.ManagedServer`), listening on
        ``host`` (see :func:`~pounder.servers.listen_address`), keeping connections
        alive between requests when ``keepalive`` and the server can (Apache's KeepAlive,
        Starman's default; gunicorn's sync workers and a command's server decide for themselves).
        ``params`` are checked first (:meth:`threads_of`); the server's own part is :meth:`_server`."""
        self.threads_of(params)
        return self._server(params, workdir, cpus=cpus, keepalive=keepalive, host=host)

    def render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        """``params`` as a snippet of the server's own configuration or command line (``keepalive``:
        measured with connections kept alive), checked first as for :meth:`server`; the server's
        own part is :meth:`_render`."""
        self.threads_of(params)
        return self._render(params, keepalive=keepalive)

    @abc.abstractmethod
    def _server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None,
                keepalive: bool, host: str) -> ManagedServer:
        """:meth:`server` for ``params`` already checked."""

    @abc.abstractmethod
    def _render(self, params: PoolParams, *, keepalive: bool) -> str:
        """:meth:`render` for ``params`` already checked."""

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

    def warnings(self) -> list[str]:
        """What the server would ignore without a word in the user's files (uWSGI's unknown ini
        options), one line each: said as a warning before it starts, it still runs as it would."""
        return []

    def size_limit(self, limit: ChildLimit) -> str:
        """How its users replace a child before it outgrows ``limit``, beside the request limit
        (the only way for a server without one, :attr:`request_limit` False), in their own syntax
        with its arithmetic ("": the request limit pounder recommends is the server's own way)."""
        return ""

    def spares(self, params: PoolParams) -> tuple[int, int, int]:
        """(StartServers, MinSpareServers, MaxSpareServers) of ``params`` as the server runs them:
        what tune measures, stores and prints (Apache's rule, :meth:`PoolParams.fixed`, unless
        the server has its own: php-fpm caps them by the children)."""
        return params.fixed()

    @property
    def threads_fixed(self) -> bool:
        """Whether the user gave the threads of each child (Puma's ``--threads``): tune keeps them
        instead of comparing workers x threads."""
        return False

    def threads_of(self, params: PoolParams) -> int | None:
        """The threads of each child ``params`` asks for (None: the adapter's own setting), checked:
        :class:`~pounder.UsageError` in one line unless from 1 to :data:`MAX_THREADS`, and for a
        server without threads (:attr:`threaded` False) unless 1. :meth:`server` and :meth:`render`
        ask it before the server's own part, which reads ``params.threads`` as checked."""
        threads = params.threads
        if threads is None:
            return None
        if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= MAX_THREADS:
            raise UsageError(f"{self.who}: threads must be from 1 to {MAX_THREADS}, not {threads!r}")
        if threads > 1 and not self.threaded:
            from pounder.pool._adapters import REGISTRY  # noqa: PLC0415 (it imports this module)

            takers = _names([adapter.who for adapter in REGISTRY if adapter.threaded])
            raise UsageError(f"threads {threads} is for {takers} only, not {self.who}")
        return threads

    def with_preload(self, params: PoolParams) -> bool:
        return self.preload if params.preload is None else params.preload

    preload_off: ClassVar[tuple[str, ...]] = ()
    """The lines of :meth:`render` that set preloading off (Puma's ``preload_app! false``)."""
    comment: ClassVar[str] = "#"
    """How its configuration starts a comment line."""

    def render_advised(self, params: PoolParams, *, keepalive: bool = False, preload_advised: bool = False) -> str:
        """:meth:`render`, agreeing with the advice printed beside it: when the advice tells a pool
        measured without preloading to preload (``preload_advised``), the setting stays as measured
        and a comment says so and points at the advice, above the line that sets it off (at the end
        when no line does): the configuration never says one thing and the advice another."""
        text = self.render(params, keepalive=keepalive)
        if not preload_advised or self.with_preload(params):
            return text
        how = self.preload_remedy or "load the application in the parent before it forks"
        again = " (pounder tune --preload)" if self.preload_toggle else ""
        note = [f"{self.comment} measured without preloading, as set here; the advice recommends it ({how}):",
                f"{self.comment} measure again with it{again} before you change it here"]
        lines = text.split("\n")
        at = next((index for index, line in enumerate(lines) if line.strip() in self.preload_off), len(lines))
        return "\n".join([*lines[:at], *note, *lines[at:]])


def _env_prefix(env: Mapping[str, str]) -> str:
    """``env NAME=VALUE ... `` in front of a command line (nothing without variables)."""
    return "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " if env else ""


def checked_pythonpath(pythonpath: str | os.PathLike[str] | None, who: str) -> str | None:
    """The directories a Python server imports its app from (``--pythonpath``, comma-separated;
    None: none given), each made absolute: the server runs elsewhere, a resumed run may start
    elsewhere, and the printed command line or configuration must work wherever it is pasted.
    ``who`` names the server in the :class:`~pounder.UsageError` of a value that is no path."""
    pythonpath = check_path(pythonpath, f"{who}: pythonpath", optional=True)
    return (",".join(str(Path(p).resolve()) for p in os.fspath(pythonpath).split(",") if p)
            if pythonpath else None)


def _option_value(args: tuple[str, ...], name: str) -> str | None:
    """The value of ``name`` (``--name VALUE`` or ``--name=VALUE``) in a command line's words."""
    found = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith(name + "="):
            found = arg[len(name) + 1:]
    return found
