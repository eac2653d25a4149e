"""Experiment files: a small TOML format describing a server, its variants and the loads to
compare them under.

::

    title = "Custom handler against ModPerl::Registry"
    description = "What the experiment shows, one paragraph."
    fail_if = ["slower>5%"]     # optional: gates on every load's comparison (pounder compare --fail-if)

    [server]
    adapter = "apache"          # apache | gunicorn | starman | command | url
    conf = "apps/handlers.conf" # apache: relative to this file
    workers = 4                 # children of every variant (MaxClients)
    max_requests = 0            # MaxRequestsPerChild of every variant (0 = unlimited)
    # start_servers = 5, min_spare = 5, max_spare = 10: children started on demand (apache,
    # php-fpm's pm = dynamic, uwsgi's cheaper); none given: every child started and kept
    # preload, env, threads (Puma), fork_worker (Puma's fork_worker N): for the servers that take
    # them (pounder.pool.SERVER_OPTIONS), here or in a [[variant]]

    [[load]]                    # one or more: every variant runs under each
    connections = 10
    duration = "3s"             # or requests = 2000; rate = 200 for open loop
    keepalive = false
    io = "auto"                 # optional: the engine's I/O path, auto | uring | epoll (pounder bench --io)

    [[variant]]
    label = "handler"
    path = "/perl/hello"

    [[variant]]
    label = "registry"
    path = "/registry/hello.pl"
    config = "PerlSetVar Example 1"   # apache: lines added to the conf for this variant only

Variants with the same server settings share one server; each different setting gets its own
server, all running side by side on their own ports while the trials are interleaved.

Every path in the file (a server's target file: conf, psgi, rackup, a uWSGI ini as ``app``;
``root``; each ``pythonpath`` directory) is relative to the file's own directory
(:meth:`Reader.resolve`), wherever pounder runs.

Every mistake is reported as ``FILE:LINE: KEY: what is wrong`` (one line): the line is the key's
own line, or the line of its table when the key is missing; also what a server's adapter refuses
(:func:`server_adapter`: a module it cannot find, an ini it cannot use), whose hints name the
file's keys (``pythonpath = "DIR"``), not command-line flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pounder._errors import UsageError, check_path, public
from pounder._files import SMALL_LIMIT, check_input_file, parse_toml
from pounder._given import from_file
from pounder._units import plain
from pounder.compare import MAX_TRIALS, MAX_VARIANTS, MIN_TRIALS, check_label, parse_compare_gates
from pounder.experiment._reader import ExperimentError, Reader
from pounder.experiment._server_options import SPARE_KEYS, fork_worker_option, refuse, spare_settings, threads_option
from pounder.experiment._tls import TlsSpec, in_file_words, read_tls
from pounder.load import BenchSpec, LoadOptions
from pounder.pool import ADAPTERS as POOL_ADAPTERS
from pounder.pool import KINDS, TARGET_FIELDS, Adapter, AdapterOptions, build_adapter
from pounder.traffic import NotLoopbackError, parse_url, resolve

ADAPTERS = (*KINDS, "url")
RECORD = ("rps", "latency", "cpu", "memory", "syscalls", "profile")
DEFAULT_RECORD = ("rps", "latency", "cpu", "memory")
_LOAD_KEYS = ("connections", "requests", "duration", "rate")
_CHECK_HOST = "http://127.0.0.1"


@public
@dataclass(frozen=True)
class ServerSpec:
    """``[server]``: the adapter and what it needs (paths already resolved against the file)."""

    adapter: str
    conf: Path | None = None
    app: str | None = None
    pythonpath: str | None = None
    psgi: Path | None = None
    command: str | None = None
    rackup: Path | None = None
    root: Path | None = None
    threads: str | None = None
    """Puma's threads ("N" or "MIN,MAX"; None: 1,1)."""
    fork_worker: int | None = None
    """Puma's ``fork_worker N`` (None: off)."""
    preload: bool | None = None
    """None: the server's own default (uWSGI preloads, gunicorn does not)."""
    workers: int = 4
    max_requests: int = 0
    env: Mapping[str, str] = field(default_factory=dict)
    start_servers: int | None = None
    """StartServers (pm.start_servers, cheaper-initial) of every variant; None: all children at start."""
    min_spare: int | None = None
    max_spare: int | None = None


@public
@dataclass(frozen=True)
class LoadSpec:
    """One ``[[load]]``: the bench options every variant runs with."""

    connections: int = 10
    requests: int | None = None
    duration: str | None = None
    rate: float | None = None
    keepalive: bool = False
    trials: int = 5
    io: Literal["auto", "uring", "epoll"] = "auto"

    @property
    def label(self) -> str:
        parts = [f"NC {self.connections}"]
        if self.rate is not None:
            parts.append(f"rate {plain(self.rate)}/s")
        if self.requests is not None:
            parts.append(f"NR {self.requests}")
        if self.duration is not None:
            parts.append(self.duration)
        return ", ".join(parts)

    def options(self) -> LoadOptions:
        """The load options a trial under this load runs with (checked when used)."""
        return LoadOptions(connections=self.connections, requests=self.requests, duration=self.duration,
                           rate=self.rate, keepalive=self.keepalive, io=self.io)


@public
@dataclass(frozen=True)
class VariantSpec:
    """One ``[[variant]]``: its label, what it requests, and its own server settings."""

    label: str
    path: str | None = None
    url: str | None = None
    config: str = ""
    workers: int | None = None
    max_requests: int | None = None
    preload: bool | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    threads: str | None = None
    """Puma's threads ("MIN,MAX"; None: the server's)."""
    fork_worker: int | None = None
    """Puma's ``fork_worker N`` (None: the server's)."""
    start_servers: int | None = None
    """This variant's spare settings (servers that start children on demand); None: the server's."""
    min_spare: int | None = None
    max_spare: int | None = None

    def server_key(self) -> tuple[Any, ...]:
        """Variants with equal keys share one server."""
        return (self.config, self.workers, self.max_requests, self.preload, tuple(sorted(self.env.items())),
                self.threads, self.start_servers, self.min_spare, self.max_spare, self.fork_worker)


@public
@dataclass(frozen=True)
class Experiment:
    path: Path
    title: str
    description: str
    server: ServerSpec
    variants: tuple[VariantSpec, ...]
    baseline: str
    """The label of the variant the others are compared against (the file's ``baseline``, else the first's)."""
    loads: tuple[LoadSpec, ...]
    record: tuple[str, ...]
    fail_if: tuple[str, ...] = ()
    """The file's ``fail_if`` gates (``pounder compare --fail-if`` expressions), checked when read."""
    tls: TlsSpec = field(default_factory=TlsSpec)
    """``[tls]``: how the https:// variant URLs are trusted (:mod:`pounder.experiment._tls`)."""
    reader: Reader | None = field(default=None, compare=False, repr=False)
    """How the file was read (None: built in code): what its servers' adapters refuse is named with
    the file, the line and the key (:func:`server_adapter`)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path), "title": self.title, "description": self.description,
            "server": {k: (str(v) if isinstance(v, Path) else (dict(v) if isinstance(v, Mapping) else v))
                       for k, v in self.server.__dict__.items()},
            "loads": [dict(load.__dict__) for load in self.loads],
            "variants": [{**v.__dict__, "env": dict(v.env)} for v in self.variants],
            "baseline": self.baseline, "record": list(self.record), "fail_if": list(self.fail_if),
            "tls": self.tls.to_dict(),
        }


def _check_url(r: Reader, key: str, url: str) -> None:
    """An experiment loads this machine only (it has no --allow-remote): checked with the file's
    line, before a results directory exists or anything is sent."""
    try:
        parsed = parse_url(url)
        resolve(parsed.host, parsed.port, allow_remote=False)
    except NotLoopbackError as error:
        raise r.fail(key, f"{error.address} is not a loopback address (127.0.0.0/8 or ::1): experiments load "
                          "this machine only") from None
    except UsageError as error:
        raise r.fail(key, str(error)) from None


def _check_load(r: Reader, key: str, load: LoadSpec) -> None:
    """The load as ``pounder bench`` checks it (:meth:`pounder.LoadOptions.load_model`): each key
    alone first (the mistake on its own line), then together (e.g. requests at a rate lasting
    more than 24 h)."""
    names = {name: name for name in _LOAD_KEYS}
    for name in _LOAD_KEYS:
        value = getattr(load, name)
        if value is None:
            continue
        try:
            LoadOptions.of(**{name: value}).load_model(names)
        except UsageError as error:
            raise r.fail(f"{key}.{name}", str(error)) from None
    try:
        load.options().load_model(names)
    except UsageError as error:
        raise r.fail(key, str(error)) from None


_SERVER_KEYS = {"pythonpath", "preload", "env", "root", "threads", "fork_worker"}
"""The server options an experiment file's [server] may give (of those some servers take)."""


@public
def load_experiment(path: str | Path) -> Experiment:
    """Read and check an experiment file; :class:`ExperimentError` (a UsageError) names the
    file, line and key of the first mistake."""
    path = Path(check_path(path, "load_experiment: path"))
    r, data = _parsed(path)
    r.table(data, "", {"title", "description", "server", "load", "variant", "baseline", "record", "fail_if", "tls"})
    title = r.get(data, "", "title", str, required=True)
    description = r.get(data, "", "description", str, default="")
    server = _server(r, data)
    loads = _loads(r, data)
    variants = _variants(r, data, server.adapter)
    baseline = r.get(data, "", "baseline", str, default=variants[0].label)
    if baseline not in {v.label for v in variants}:
        raise r.fail("baseline", f"no variant is labelled {baseline!r}")
    record = r.get(data, "", "record", list, default=list(DEFAULT_RECORD))
    for item in record:
        if item not in RECORD:
            raise r.fail("record", f"unknown item {item!r} (one of: {', '.join(RECORD)})")
        if item == "syscalls" and server.adapter == "url":
            raise r.fail("record", "syscalls are traced on the servers pounder starts, not with adapter 'url'")
        if item == "profile" and server.adapter == "url":
            raise r.fail("record", "profiles are taken on the servers pounder starts, not with adapter 'url' (its "
                                   "variants name no server: profile one with pounder profile --server-pidfile)")
    return Experiment(path=path.resolve(), title=title, description=description, server=server, loads=tuple(loads),
                      variants=tuple(variants), baseline=baseline, record=tuple(record), fail_if=_fail_if(r, data),
                      tls=_tls(r, data, variants), reader=r)


def _tls(r: Reader, data: dict[str, Any], variants: list[VariantSpec]) -> TlsSpec:
    """The [tls] table, its files read and checked as pounder bench checks its flags (the loads
    are checked on their own)."""
    https = [v.url for v in variants if v.url is not None and v.url.lower().startswith("https://")]
    tls = read_tls(r, data, bool(https))
    if https and tls != TlsSpec():
        try:
            BenchSpec.from_options(https[0], options=tls.with_load(LoadOptions(requests=1)))
        except UsageError as error:
            raise r.fail("tls", in_file_words(str(error))) from None
    return tls


_FILE_KEYS = {"pythonpath": "pythonpath", "root": "root", "env": "env", "threads": "threads", "preload": "preload",
              "fork_worker": "fork_worker"}
"""How a hint names the server options an experiment gives: by their [server] key (pounder._given)."""


@public
def server_adapter(exp: Experiment, variant: VariantSpec) -> Adapter:
    """The adapter of the server ``variant`` runs on (the [server] settings, the variant's own over
    them), its inputs checked; what it refuses (a missing module, an ini uWSGI cannot use, a
    missing program) is named with the file, the line and the key (the [server] key a hint names,
    else the server's target), its hints naming the file's keys, not command-line flags."""
    server = exp.server
    target = TARGET_FIELDS[server.adapter]
    try:
        with from_file(_FILE_KEYS) as source:
            options = AdapterOptions(
                pythonpath=server.pythonpath, preload=server.preload if variant.preload is None else variant.preload,
                env={**server.env, **variant.env}, extra_conf=variant.config, root=server.root,
                threads=server.threads if variant.threads is None else variant.threads,
                fork_worker=server.fork_worker if variant.fork_worker is None else variant.fork_worker)
            return build_adapter(server.adapter, getattr(server, target), options)
    except UsageError as error:
        if exp.reader is None:
            raise
        named = [f"server.{name}" for name in source.named if f"server.{name}" in exp.reader.lines.keys]
        raise exp.reader.located(named[-1] if named else f"server.{target}", error) from None


def _fail_if(r: Reader, data: dict[str, Any]) -> tuple[str, ...]:
    """``fail_if = ["slower>5%", "p99>300ms"]``: the gates of every load's comparison, each checked."""
    gates = r.get(data, "", "fail_if", list, default=[])
    for gate in gates:
        if not isinstance(gate, str):
            raise r.fail("fail_if", f"expected a list of strings such as \"slower>5%\", got {gate!r}")
        try:
            parse_compare_gates(gate, "gate")
        except UsageError as error:
            raise r.fail("fail_if", str(error)) from None
    return tuple(gates)


def _parsed(path: Path) -> tuple[Reader, dict[str, Any]]:
    """The file's reader and its TOML, or the first error with its line."""
    check_input_file(path, "experiment file", SMALL_LIMIT)
    try:
        text = path.read_text()
    except OSError as error:
        raise ExperimentError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ExperimentError(f"{path}: not UTF-8 text") from None
    data = parse_toml(text, path, "an experiment file", ExperimentError)
    return Reader(path, text), data


def _server(r: Reader, data: dict[str, Any]) -> ServerSpec:
    """The [server] table; paths relative to the experiment file's directory (:meth:`Reader.resolve`)."""
    server_data = r.get(data, "", "server", dict, required=True)
    adapter = r.get(server_data, "server", "adapter", str, required=True)
    if adapter not in ADAPTERS:
        raise r.fail("server.adapter", f"unknown adapter {adapter!r} (one of: {', '.join(ADAPTERS)})")
    if adapter not in TARGET_FIELDS:  # "url": the variants' own servers, which pounder does not start
        extra = sorted(set(server_data) - {"adapter"})
        if extra:
            raise r.fail(f"server.{extra[0]}", f"with adapter {adapter!r} pounder starts no server: {extra[0]} "
                                               "would change nothing (give the variants' URLs only)")
    else:  # a server pounder starts: the options its adapter declares
        for name in sorted(set(server_data) & _SERVER_KEYS):
            refuse(r, "server", adapter, name)
    r.table(server_data, "server", {"adapter", "workers", "max_requests", *_SERVER_KEYS, *SPARE_KEYS,
                                    *([TARGET_FIELDS[adapter]] if adapter in TARGET_FIELDS else [])})

    pythonpath = r.get(server_data, "server", "pythonpath", str)
    if pythonpath is not None:  # comma-separated directories, each relative to the file
        pythonpath = ",".join(str(r.resolve("server.pythonpath", entry, "dir")) for entry in pythonpath.split(",")
                              if entry)
    root = r.path_of(server_data, "server", "root", "dir")
    threads = threads_option(r, server_data, "server")
    spares = spare_settings(r, server_data, "server", adapter)
    what: dict[str, Any] = {}
    target = TARGET_FIELDS.get(adapter)  # none for "url"
    if target is not None:
        value = r.get(server_data, "server", target, str, required=True)
        # a file is read where the experiment is, as every path in it (a uWSGI ini too: app = "x.ini")
        what[target] = (r.resolve(f"server.{target}", value, "file") if POOL_ADAPTERS[adapter].target_is_file(value)
                        else value)
        if target == "app":  # text for the adapter: a module:callable, or the ini's absolute path
            what[target] = str(what[target])
    return ServerSpec(
        adapter=adapter,
        **what,
        pythonpath=pythonpath or None,
        root=root,
        threads=threads,
        fork_worker=fork_worker_option(r, server_data, "server"),
        preload=r.get(server_data, "server", "preload", bool),
        workers=r.count(server_data, "server", "workers", 1, 1024, default=4) or 4,
        max_requests=r.count(server_data, "server", "max_requests", 0, 10**9, default=0) or 0,
        env=r.env(server_data, "server"),
        start_servers=spares.start_servers, min_spare=spares.min_spare, max_spare=spares.max_spare,
    )


def _loads(r: Reader, data: dict[str, Any]) -> list[LoadSpec]:
    """The [[load]] tables (at least one)."""
    loads: list[LoadSpec] = []
    for key, item in r.tables(data, "load", {"connections", "requests", "duration", "rate", "keepalive", "trials",
                                             "io"}):
        load = LoadSpec(
            connections=r.count(item, key, "connections", 1, 10000, default=10) or 10,
            requests=r.count(item, key, "requests", 1, 10**8),
            duration=r.get(item, key, "duration", str),
            rate=r.get(item, key, "rate", (int, float)),
            keepalive=r.get(item, key, "keepalive", bool, default=False),
            trials=r.count(item, key, "trials", MIN_TRIALS, MAX_TRIALS, default=5) or 5,
            io=r.get(item, key, "io", str, default="auto"),
        )
        if load.io not in ("auto", "uring", "epoll"):
            raise r.fail(f"{key}.io", f"expected auto, uring or epoll, got {load.io!r}")
        if load.requests is None and load.duration is None:
            raise r.fail(key, "give 'requests' or 'duration' (every load is bounded)")
        _check_load(r, key, load)
        loads.append(load)
    if not loads:
        raise r.fail("load", "at least one [[load]] is needed")
    return loads


def _variants(r: Reader, data: dict[str, Any], adapter: str) -> list[VariantSpec]:
    """The [[variant]] tables (two at least), each checked against the server's ``adapter``."""
    variants: list[VariantSpec] = []
    allowed = {"label", "path", "url", "config", "workers", "max_requests", "preload", "env", "threads",
               "fork_worker", *SPARE_KEYS}
    for key, item in r.tables(data, "variant", allowed):
        spares = spare_settings(r, item, key, adapter)
        variant = VariantSpec(
            label=r.get(item, key, "label", str, required=True),
            path=r.get(item, key, "path", str),
            url=r.get(item, key, "url", str),
            config=r.get(item, key, "config", str, default=""),
            workers=r.count(item, key, "workers", 1, 1024),
            max_requests=r.count(item, key, "max_requests", 0, 10**9),
            preload=r.get(item, key, "preload", bool),
            env=r.env(item, key),
            threads=threads_option(r, item, key),
            fork_worker=fork_worker_option(r, item, key),
            start_servers=spares.start_servers, min_spare=spares.min_spare, max_spare=spares.max_spare,
        )
        _check_variant(r, key, variant, adapter)
        if any(v.label == variant.label for v in variants):
            raise r.fail(f"{key}.label", f"the label {variant.label!r} is used twice")
        variants.append(variant)
    if len(variants) < 2:
        raise r.fail("variant", "at least two [[variant]] tables are needed to compare")
    if len(variants) > MAX_VARIANTS:
        raise r.fail("variant", f"at most {MAX_VARIANTS} [[variant]] tables can be compared, got {len(variants)}")
    return variants


def _check_variant(r: Reader, key: str, variant: VariantSpec, adapter: str) -> None:
    try:
        check_label(variant.label)
    except UsageError as error:
        raise r.fail(f"{key}.label", str(error)) from None
    if adapter == "url":
        if variant.url is None or variant.path is not None:
            raise r.fail(key, "with adapter 'url' every variant gives 'url' (and no 'path')")
        _check_url(r, f"{key}.url", variant.url)
        if variant.server_key() != VariantSpec(label="").server_key():
            raise r.fail(key, "with adapter 'url' a variant cannot change server settings")
    elif variant.path is None or variant.url is not None:
        raise r.fail(key, "give 'path' (what to request from the server pounder starts), not 'url'")
    elif not variant.path.startswith("/"):
        raise r.fail(f"{key}.path", f"must start with /, got {variant.path!r}")
    else:
        _check_url(r, f"{key}.path", _CHECK_HOST + variant.path)
    if variant.config and adapter != "apache":
        raise r.fail(f"{key}.config", "config lines are for the apache adapter")
    if adapter in TARGET_FIELDS:  # the options its adapter declares (see _server)
        for name, given in (("preload", variant.preload is not None), ("env", bool(variant.env)),
                            ("threads", variant.threads is not None), ("fork_worker", variant.fork_worker is not None)):
            if given:
                refuse(r, key, adapter, name)
