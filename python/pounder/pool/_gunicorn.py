"""gunicorn (sync workers) as a pool under test."""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pounder._errors import (
    UsageError,
    check_flag,
    check_str_mapping,
    check_strings,
    check_text,
    public,
)
from pounder.pool._adapter import Adapter, AdapterOptions, PoolParams, _option_value, checked_pythonpath, server_names
from pounder.servers import (
    HOST,
    GunicornServer,
    ManagedServer,
    gunicorn_app_file,
    gunicorn_app_missing,
    gunicorn_missing,
    gunicorn_worker_class,
)


@public
class GunicornAdapter(Adapter):
    """gunicorn with sync workers serving ``app`` ("module:callable"); gthread workers for a
    start with :attr:`PoolParams.threads` above 1."""

    kind = "gunicorn"
    who = "gunicorn"
    target_form = "MODULE:APP"
    target_field = "app"
    options = frozenset({"pythonpath", "preload", "env"})
    threaded = True
    runtime_lock = "Python's GIL"
    preload_toggle = True
    language = "python"
    preload_remedy = "start gunicorn with --preload (or preload_app = True)"
    respawn = ("gunicorn's arbiter replaces an exited worker in its loop: a fork plus loading the application "
               "(unless --preload) and the new worker's warm-up")
    names: ClassVar[Mapping[str, str]] = server_names(
        max_clients="--workers", max_requests="--max-requests", preload="--preload", threads="--threads")

    @classmethod
    def from_options(cls, target: str | os.PathLike[str] | None, options: AdapterOptions) -> GunicornAdapter:
        return cls(str(cls.given_target(target)), pythonpath=options.pythonpath, env=options.env,
                   extra_args=options.extra_args, **options.preloading)

    def __init__(self, app: str, *, pythonpath: str | None = None, preload: bool = False,
                 env: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = ()) -> None:
        if ":" not in check_text(app, "gunicorn: app"):
            raise UsageError(f"gunicorn: the app must be given as module:callable, not {app!r}")
        self.app = app
        self.pythonpath = checked_pythonpath(pythonpath, "gunicorn")
        self.preload = check_flag(preload, "gunicorn: preload")
        self.env = check_str_mapping(env, "gunicorn: env")
        self.extra_args = check_strings(extra_args, "gunicorn: extra_args")

    def _server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
                keepalive: bool = False, host: str = HOST) -> ManagedServer:
        return GunicornServer(workdir, self.app, pythonpath=self.pythonpath, workers=params.max_clients,
                              max_requests=params.max_requests, preload=self.with_preload(params),
                              threads=params.threads, env=self.env,
                              extra_args=self.extra_args, cpus=cpus, host=host)

    def _render(self, params: PoolParams, *, keepalive: bool = False) -> str:
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
        threads = params.threads
        if threads is not None:
            worker_class = gunicorn_worker_class(threads)
            flags += [f"--worker-class {worker_class}"] * (worker_class != "sync") + [f"--threads {threads}"]
            lines += [f'worker_class = "{worker_class}"'] * (worker_class != "sync") + [f"threads = {threads}"]
            if worker_class == "gthread":  # as measured: a worker accepts only what its threads serve
                flags.append(f"--worker-connections {threads}")
                lines.append(f"worker_connections = {threads}  # gunicorn's 1000 lets one worker take the clients "
                             "while the others idle")
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
