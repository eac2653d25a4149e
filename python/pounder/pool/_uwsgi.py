"""uWSGI (master + workers, the python3 plugin; a fixed pool or the cheaper subsystem) as a pool under test."""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Mapping
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
from pounder._units import MIB, children_text, mib_unit
from pounder.pool._adapter import Adapter, AdapterOptions, ChildLimit, PoolParams, checked_pythonpath, server_names
from pounder.servers import (
    CHEAPER_ALGO,
    CHEAPER_OVERLOAD,
    HOST,
    UWSGI_STATUS,
    ManagedServer,
    UwsgiServer,
    ini_lazy_apps,
    read_uwsgi_ini,
    uwsgi_app_file,
    uwsgi_app_missing,
    uwsgi_missing,
    uwsgi_target_is_ini,
    uwsgi_unknown_options,
)

EXAMPLE_SOCKET = "127.0.0.1:8000"
"""The address the printed ini listens on (the user's own goes there)."""


def uwsgi_cheaper(params: PoolParams) -> tuple[int, int, int] | None:
    """(cheaper-initial, cheaper, cheaper-step) uWSGI runs ``params`` with (a pure function; the
    same for its own result, so what tune stores and prints is what runs); None for a fixed pool
    (no spare settings; settings that start every child and never stop an idle one, StartServers and
    MaxSpareServers at least the children: uWSGI's own default, no cheaper, is that pool, while its
    cheaper would stop workers down to cheaper, below processes; cheaper-step 0 as
    :meth:`UwsgiAdapter.spares` says of a fixed pool; one process, as uWSGI takes cheaper below
    processes only):

    * ``cheaper`` = MinSpareServers: the fewest workers kept (at least 1, below processes);
    * ``cheaper-initial`` = StartServers: the workers started (from cheaper to processes);
    * ``cheaper-step`` = MaxSpareServers, capped by the workers left to start (processes -
      cheaper): uWSGI bounds no idle workers (its spare algorithm stops one whenever two are idle),
      and what MaxSpareServers asks of a burst - its children ready at once - is in uWSGI how many
      workers it starts at once when every one is busy."""
    fixed = (params.start_servers, params.min_spare, params.max_spare) == (None, None, None) or params.max_spare == 0
    if fixed or params.max_clients < 2:
        return None
    start, low, high = params.fixed()
    if start >= params.max_clients and high >= params.max_clients:
        return None  # every child started and none ever stopped for idling: a fixed pool (uWSGI's default)
    cheaper = max(1, min(low, params.max_clients - 1))
    return max(cheaper, min(start, params.max_clients)), cheaper, max(1, min(high, params.max_clients - cheaper))


@public
class UwsgiAdapter(Adapter):
    """uWSGI serving ``target``: a WSGI app as "module:callable" (``pythonpath``: where to import
    it from, comma-separated) or the user's ini file (its sockets, pool sizes and other options
    pounder owns replaced). ``preload``: load the app in the master before forking (uWSGI's own
    default) or in each worker (``lazy-apps``); None: the ini's own ``lazy-apps``, else preload.
    A fixed pool is ``processes`` workers, all started; with spare settings, the cheaper subsystem
    (:func:`uwsgi_cheaper`, its ``spare`` algorithm checking once a second, ``cheaper-overload`` 1)."""

    kind = "uwsgi"
    who = "uwsgi"
    target_form = "MODULE:APP or UWSGI.INI"
    target_field = "app"
    status_reader = UWSGI_STATUS

    @classmethod
    def target_is_file(cls, target: str) -> bool:
        """An ini file: a name ending in ``.ini`` or a path (``module:callable`` is neither)."""
        return target.lower().endswith(".ini") or os.sep in target
    options = frozenset({"pythonpath", "preload", "env"})
    threaded = True
    runtime_lock = "Python's GIL"
    preload_toggle = True
    language = "python"
    preload_remedy = "drop lazy-apps (uWSGI then loads the application once in the master, before forking)"
    on_demand = True
    preload_off = ("lazy-apps = true",)
    respawn = ("uWSGI's master replaces a worker that reached max-requests at once: a fork (plus loading the "
               "application, with lazy-apps) and the new worker's warm-up; more respawns than processes within a "
               "second make the master sleep 2 s (its fork-bomb protection, forkbomb-delay), the pool a worker short")
    names: ClassVar[Mapping[str, str]] = server_names(
        max_clients="processes", max_requests="max-requests", start_servers="cheaper-initial", min_spare="cheaper",
        max_spare="cheaper-step", preload="lazy-apps = false", threads="threads")

    @classmethod
    def from_options(cls, target: str | os.PathLike[str] | None, options: AdapterOptions) -> UwsgiAdapter:
        return cls(cls.given_target(target), pythonpath=options.pythonpath, env=options.env,
                   extra_args=options.extra_args, **options.preloading)

    def __init__(self, target: str | os.PathLike[str], *, pythonpath: str | None = None, preload: bool | None = None,
                 env: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = ()) -> None:
        check_path(target, "uwsgi: target")
        self.ini = Path(target).resolve() if uwsgi_target_is_ini(target) else None
        if self.ini is None:
            self.app = check_text(os.fspath(target), "uwsgi: app")
            if ":" not in self.app:
                raise UsageError(f"uwsgi: give the app as module:callable or an .ini file, not {self.app!r}")
        else:
            self.app = str(self.ini)
            if not self.ini.is_file():
                raise UsageError(f"uwsgi: no such ini file {target}")
        self.pythonpath = checked_pythonpath(pythonpath, "uwsgi")
        self.env = check_str_mapping(env, "uwsgi: env")
        self.extra_args = check_strings(extra_args, "uwsgi: extra_args")
        # read now: a bad file is bad input, found before anything starts
        lazy = ini_lazy_apps(read_uwsgi_ini(self.ini)) if self.ini is not None else False
        self.preload = (not lazy) if preload is None else check_flag(preload, "uwsgi: preload")

    def _server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
                keepalive: bool = False, host: str = HOST) -> ManagedServer:
        initial, cheaper, step = uwsgi_cheaper(params) or (None, 0, 1)
        return UwsgiServer(workdir, self.app, pythonpath=self.pythonpath, processes=params.max_clients,
                           max_requests=params.max_requests, lazy_apps=not self.with_preload(params),
                           cheaper=cheaper, cheaper_initial=initial, cheaper_step=step,
                           threads=params.threads, env=self.env,
                           extra_args=self.extra_args, cpus=cpus, host=host)

    def spares(self, params: PoolParams) -> tuple[int, int, int]:
        """(cheaper-initial, cheaper, cheaper-step) as uWSGI runs ``params``; without cheaper (a
        fixed pool, or one process) every worker started and kept, none started on demand: (processes,
        processes, 0)."""
        return uwsgi_cheaper(params) or (params.max_clients, params.max_clients, 0)

    def _render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        preload = self.with_preload(params)
        pool = ["master = true", f"processes = {params.max_clients}", f"max-requests = {params.max_requests}"]
        pool.append("lazy-apps = false" if preload else "lazy-apps = true")
        threads = params.threads
        if threads is not None:
            pool += [f"threads = {threads}", "enable-threads = true"]
        cheaper = uwsgi_cheaper(params)
        if cheaper is not None:
            initial, fewest, step = cheaper
            pool += [f"cheaper-algo = {CHEAPER_ALGO}", f"cheaper = {fewest}", f"cheaper-initial = {initial}",
                     f"cheaper-step = {step}", f"cheaper-overload = {CHEAPER_OVERLOAD}",
                     "# uWSGI checks once a second: after more than cheaper-overload checks with every worker busy it",
                     "# starts cheaper-step workers; a check with two idle stops the oldest, down to cheaper"]
        elif params.max_clients < 2 and (params.start_servers, params.min_spare, params.max_spare) != (None,) * 3:
            pool.append("# one worker: no cheaper (uWSGI takes cheaper below processes only)")
        elif (params.start_servers, params.min_spare, params.max_spare) != (None,) * 3:
            pool.append("# no cheaper (uWSGI's default): every worker started and kept, as the spare servers measured")
        if params.max_requests:
            pool += ["# uWSGI keeps a worker at least 60 s whatever max-requests says, unless:",
                     "min-worker-lifetime = 0"]
        else:
            pool.append("# max-requests = 0: a worker is never replaced")
        if self.ini is not None:
            return "\n".join([f"# in the [uwsgi] section of {self.ini} (replacing these options there):",
                              "[uwsgi]", *pool, f"# run with: uwsgi --ini {shlex.quote(str(self.ini))}"])
        lines = ["# uwsgi.ini", "[uwsgi]", "# Debian's uwsgi-core runs Python as a plugin (uwsgi-plugin-python3)",
                 "plugin = python3", "# your address: pounder measured uWSGI speaking HTTP itself (no router)",
                 f"http-socket = {EXAMPLE_SOCKET}", f"module = {self.app}"]
        lines += [f"pythonpath = {entry}" for entry in (self.pythonpath or "").split(",") if entry]
        lines += [f"env = {name}={value}" for name, value in self.env.items()]
        lines += pool + ["need-app = true", "die-on-term = true"]
        lines.append("# run with: uwsgi --ini uwsgi.ini")
        flags = ["--plugin python3", "--master", f"--http-socket {EXAMPLE_SOCKET}", f"--processes {params.max_clients}",
                 f"--max-requests {params.max_requests}"] + ([] if preload else ["--lazy-apps"])
        flags += [] if threads is None else [f"--threads {threads}", "--enable-threads"]
        if cheaper is not None:
            flags += [f"--cheaper-algo {CHEAPER_ALGO}", f"--cheaper {cheaper[1]}", f"--cheaper-initial {cheaper[0]}",
                      f"--cheaper-step {cheaper[2]}", f"--cheaper-overload {CHEAPER_OVERLOAD}"]
        flags += [f"--pythonpath {shlex.quote(entry)}" for entry in (self.pythonpath or "").split(",") if entry]
        flags += [f"--env {shlex.quote(f'{name}={value}')}" for name, value in self.env.items()]
        flags += ["--need-app", "--die-on-term", f"--module {shlex.quote(self.app)}"]
        flags += [shlex.quote(word) for word in self.extra_args]
        return "\n".join([*lines, "", "# or on the command line", f"uwsgi {' '.join(flags)}"])

    def size_limit(self, limit: ChildLimit) -> str:
        """``reload-on-rss`` (MB = MiB): after every request a worker reads its RSS
        (``/proc/self/statm``'s resident pages: private and shared alike) and is replaced above
        it; so the value is the RSS a worker has at ``limit``: its private memory and what it
        shares (``ChildLimit.rss``). "" when a worker has no room to grow."""
        if limit.limit <= limit.start:
            return ""
        mb = limit.rss // MIB
        leak = (f"; at the measured {limit.growth / 1024:,.1f} KB per request a worker gets there after about "
                f"{int((limit.limit - limit.start) // limit.growth):,} requests" if limit.growth > 0 else
                "; no leak was measured: it guards against growth a short run cannot see")
        return "\n".join([
            f"uWSGI replaces a worker by its memory with reload-on-rss, checked after every request, beside "
            f"max-requests (whichever comes first). It reads the RSS, shared pages included: the "
            f"{mib_unit(limit.limit)} private each of {children_text(limit.children)} may reach in the budget + "
            f"{mib_unit(limit.shared)} shared = {mb:,} MB{leak}:", f"  reload-on-rss = {mb}"])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "app": self.app, "pythonpath": self.pythonpath, "preload": self.preload,
                "env": self.env, "extra_args": list(self.extra_args)}

    def describe(self) -> str:
        what = f"with {self.ini}" if self.ini is not None else f"serving {self.app}"
        return f"uWSGI {what}{'' if self.preload else ' with lazy-apps'}"

    def check(self) -> None:
        missing = uwsgi_missing()
        if missing is None and self.ini is not None:
            if not self.ini.is_file():
                missing = f"no such ini file {self.ini}"
            else:
                read_uwsgi_ini(self.ini)
        elif missing is None:
            missing = uwsgi_app_missing(self.app, pythonpath=self.pythonpath, env=self.env)
        if missing is not None:
            raise UsageError(f"uwsgi: {missing}")

    def warnings(self) -> list[str]:
        """Each option of the user's ini that uWSGI does not know (:func:`~pounder.servers.uwsgi_unknown_options`)."""
        return [] if self.ini is None else uwsgi_unknown_options(self.ini, read_uwsgi_ini(self.ini))

    def input_files(self) -> list[tuple[str, str]]:
        if self.ini is not None:
            return [("ini file", str(self.ini))]
        found = uwsgi_app_file(self.app, pythonpath=self.pythonpath, env=self.env)
        return [] if found is None else [(f"app module {self.app}", found)]
