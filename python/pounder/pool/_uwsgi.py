"""uWSGI (master + a fixed pool of workers, the python3 plugin) as a pool under test."""

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
from pounder.pool._adapter import Adapter, ChildLimit, PoolParams
from pounder.servers import (
    HOST,
    ManagedServer,
    UwsgiServer,
    ini_lazy_apps,
    read_uwsgi_ini,
    uwsgi_app_file,
    uwsgi_app_missing,
    uwsgi_missing,
    uwsgi_target_is_ini,
)

EXAMPLE_SOCKET = "127.0.0.1:8000"
"""The address the printed ini listens on (the user's own goes there)."""


@public
class UwsgiAdapter(Adapter):
    """uWSGI serving ``target``: a WSGI app as "module:callable" (``pythonpath``: where to import
    it from, comma-separated) or the user's ini file (its sockets, pool sizes and other options
    pounder owns replaced). ``preload``: load the app in the master before forking (uWSGI's own
    default) or in each worker (``lazy-apps``); None: the ini's own ``lazy-apps``, else preload.
    A fixed pool of ``processes`` workers (the cheaper subsystem is not used)."""

    kind = "uwsgi"
    who = "uwsgi"
    target_form = "MODULE:APP or UWSGI.INI"
    options = frozenset({"pythonpath", "preload", "env"})
    preload_toggle = True
    language = "python"
    preload_remedy = "drop lazy-apps (uWSGI then loads the application once in the master, before forking)"
    respawn = ("uWSGI's master replaces a worker that reached max-requests at once: a fork (plus loading the "
               "application, with lazy-apps) and the new worker's warm-up; more respawns than processes within a "
               "second make the master sleep 2 s (its fork-bomb protection, forkbomb-delay), the pool a worker short")
    names: ClassVar[Mapping[str, str]] = {
        "max_clients": "processes", "max_requests": "max-requests", "start_servers": "-",
        "min_spare": "-", "max_spare": "-", "preload": "lazy-apps = false"}

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
        pythonpath = check_path(pythonpath, "uwsgi: pythonpath", optional=True)
        # absolute: the server runs elsewhere, and the printed configuration must work wherever it is pasted
        self.pythonpath = (",".join(str(Path(p).resolve()) for p in os.fspath(pythonpath).split(",") if p)
                           if pythonpath else None)
        self.env = check_str_mapping(env, "uwsgi: env")
        self.extra_args = check_strings(extra_args, "uwsgi: extra_args")
        # read now: a bad file is bad input, found before anything starts
        lazy = ini_lazy_apps(read_uwsgi_ini(self.ini)) if self.ini is not None else False
        self.preload = (not lazy) if preload is None else check_flag(preload, "uwsgi: preload")

    def server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
               keepalive: bool = False, host: str = HOST) -> ManagedServer:
        return UwsgiServer(workdir, self.app, pythonpath=self.pythonpath, processes=params.max_clients,
                           max_requests=params.max_requests, lazy_apps=not self.with_preload(params), env=self.env,
                           extra_args=self.extra_args, cpus=cpus, host=host)

    def render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        preload = self.with_preload(params)
        pool = ["master = true", f"processes = {params.max_clients}", f"max-requests = {params.max_requests}"]
        pool.append("lazy-apps = false" if preload else "lazy-apps = true")
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

    def input_files(self) -> list[tuple[str, str]]:
        if self.ini is not None:
            return [("ini file", str(self.ini))]
        found = uwsgi_app_file(self.app, pythonpath=self.pythonpath, env=self.env)
        return [] if found is None else [(f"app module {self.app}", found)]
