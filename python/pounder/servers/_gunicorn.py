"""gunicorn with sync workers (gthread with threads), run by this interpreter (``sys.executable -m gunicorn``)."""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pounder._errors import UsageError, public
from pounder._given import given
from pounder.servers._base import HOST, ManagedServer
from pounder.servers._pymodule import find_module_spec


@public
def gunicorn_worker_class(threads: int | None) -> str:
    """gunicorn's ``--worker-class`` for ``threads`` per worker: ``gthread`` above 1, else ``sync``
    (gunicorn itself turns sync workers given ``--threads`` above 1 into gthread ones: written out)."""
    return "gthread" if (threads or 1) > 1 else "sync"


@public
@dataclass(frozen=True)
class GunicornSettings:
    """What can be tuned or chosen in a gunicorn instance (its own option names in comments)."""

    workers: int = 2                    # --workers
    max_requests: int = 0               # --max-requests (0: unlimited)
    max_requests_jitter: int = 0        # --max-requests-jitter
    preload: bool = False               # --preload (import the app in the arbiter before forking)
    timeout_s: int = 30                 # --timeout (a worker silent this long is killed)
    graceful_timeout_s: int = 5         # --graceful-timeout (on stop)
    threads: int | None = None          # --threads (above 1: gthread workers; None: not given, sync workers)
    extra_args: tuple[str, ...] = ()    # appended before the app

    @property
    def worker_class(self) -> str:
        return gunicorn_worker_class(self.threads)

    @property
    def worker_connections(self) -> int | None:
        """gthread workers: ``--worker-connections`` as many as the threads. A gthread worker accepts
        connections until it holds ``worker_connections`` of them (gunicorn's default 1000), whatever
        its threads: one worker takes the clients while the others idle, and they wait for its
        threads (measured: 8 workers x 2 threads, 16 clients waiting 40 ms each, 95 req/s at 1000
        against 383 at 2). None for sync workers."""
        return self.threads if self.worker_class == "gthread" else None

    def validate(self) -> None:
        if self.workers < 1:
            raise UsageError(f"gunicorn: workers must be at least 1, not {self.workers}")
        for name in ("max_requests", "max_requests_jitter", "timeout_s", "graceful_timeout_s"):
            if getattr(self, name) < 0:
                raise UsageError(f"gunicorn: {name} must not be negative, not {getattr(self, name)}")
        if self.threads is not None and self.threads < 1:
            raise UsageError(f"gunicorn: threads must be at least 1, not {self.threads}")


@public
def gunicorn_command(settings: GunicornSettings, *, app: str, port: int, pidfile: Path, error_log: Path,
                     pythonpath: str | None = None, python: str = sys.executable,
                     no_control_socket: bool = False, host: str = HOST) -> list[str]:
    """The command line of a gunicorn instance on ``host``:``port`` (a pure function).
    ``no_control_socket``: pass ``--no-control-socket`` (gunicorn versions that have a control
    socket put it in ~/.gunicorn by default, shared by every instance of the user)."""
    settings.validate()
    if ":" not in app:
        raise UsageError(f"gunicorn: the app must be given as module:callable, not {app!r}")
    argv = [python, "-m", "gunicorn", "--bind", f"{host}:{port}", "--workers", str(settings.workers),
            "--worker-class", settings.worker_class, "--pid", str(pidfile), "--error-logfile", str(error_log),
            "--log-level", "info", "--timeout", str(settings.timeout_s),
            "--graceful-timeout", str(settings.graceful_timeout_s), "--max-requests", str(settings.max_requests)]
    if settings.threads is not None:
        argv += ["--threads", str(settings.threads)]
    if settings.worker_connections is not None:
        argv += ["--worker-connections", str(settings.worker_connections)]
    if settings.max_requests_jitter:
        argv += ["--max-requests-jitter", str(settings.max_requests_jitter)]
    if settings.preload:
        argv.append("--preload")
    if pythonpath:
        argv += ["--pythonpath", pythonpath]
    if no_control_socket:
        argv.append("--no-control-socket")
    return argv + list(settings.extra_args) + [app]


@functools.lru_cache(maxsize=1)
def _has_control_socket() -> bool:
    """Does the installed gunicorn know ``--no-control-socket``?"""
    try:
        config = importlib.import_module("gunicorn.config")
    except ImportError:
        return False
    return any(getattr(s, "name", "") == "control_socket_disable" for s in getattr(config, "KNOWN_SETTINGS", []))


@public
def gunicorn_missing() -> str | None:
    """Why gunicorn cannot run here (with this interpreter), or None if it can."""
    if importlib.util.find_spec("gunicorn") is None:
        return f"gunicorn is not installed for {sys.executable} (pip install gunicorn)"
    return None


def _find_app_module(app: str, pythonpath: str | None, env: Mapping[str, str] | None,
                     chdir: str | None) -> tuple[str | None, importlib.machinery.ModuleSpec | None]:
    """(why gunicorn could not find the module of ``app``, the module's spec): see
    :func:`gunicorn_app_missing`; (None, None) when we cannot tell."""
    dirs = []
    for option, value in (("--pythonpath", pythonpath), ("--chdir", chdir)):
        for entry in filter(None, (value or "").split(",") if option == "--pythonpath" else [value]):
            if not Path(entry).is_dir():
                return f"{given(option.lstrip('-'), option, entry)} is not a directory", None
            dirs.append(str(Path(entry).resolve()))
    if chdir is not None and not Path(chdir).is_absolute():
        return None, None  # relative to the server's own directory: cannot tell from here
    environ = {**os.environ, **(env or {})}
    dirs += [d for d in environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(d)]
    here = Path.cwd()
    dirs += [d for d in sys.path if d and os.path.isabs(d) and Path(d) != here]
    module = app.partition(":")[0]
    found = find_module_spec(module, dirs)
    if found is not None:
        return None, found
    where = f"in {given('pythonpath', '--pythonpath', pythonpath)}, " if pythonpath else ""
    hint = "" if pythonpath else (" (gunicorn runs in a directory of its own: give "
                                  f"{given('pythonpath', '--pythonpath', 'DIR')} for a module there)")
    return f"cannot find the module {module!r} of {app} {where}on PYTHONPATH or in site-packages{hint}", None


@public
def gunicorn_app_missing(app: str, *, pythonpath: str | None = None, env: Mapping[str, str] | None = None,
                         chdir: str | None = None) -> str | None:
    """Why gunicorn (run by :class:`GunicornServer`, in a directory of its own) could not find the
    module of ``app`` ("module:callable"), or None if it can or we cannot tell. Each directory of
    ``pythonpath`` (comma-separated, as gunicorn's ``--pythonpath``) and ``chdir`` must exist; the
    module is looked for, without importing anything, on them, the environment's absolute
    ``PYTHONPATH`` entries and this interpreter's path (less the current directory, which
    gunicorn does not see)."""
    return _find_app_module(app, pythonpath, env, chdir)[0]


@public
def gunicorn_app_file(app: str, *, pythonpath: str | None = None, env: Mapping[str, str] | None = None,
                      chdir: str | None = None) -> str | None:
    """The file gunicorn would load the module of ``app`` from (found as by
    :func:`gunicorn_app_missing`), or None when it is not found or not a file."""
    spec = _find_app_module(app, pythonpath, env, chdir)[1]
    return spec.origin if spec is not None and spec.has_location and spec.origin else None


@public
class GunicornServer(ManagedServer):
    """gunicorn serving the WSGI ``app`` ("module:callable") with sync workers (gthread workers
    with ``threads`` above 1: :attr:`GunicornSettings.worker_class`). ``pythonpath``:
    where to import it from; ``env``: added to our environment."""

    kind = "gunicorn"

    def __init__(self, workdir: str | os.PathLike[str] | None, app: str, *, pythonpath: str | None = None,
                 workers: int = 2, max_requests: int = 0, preload: bool = False, threads: int | None = None,
                 env: Mapping[str, str] | None = None, extra_args: Sequence[str] = (),
                 python: str = sys.executable, ready_path: str = "/", stop_timeout_s: float = 10.0,
                 die_with_parent: bool = True,
                 cpus: Collection[int] | None = None, host: str = HOST) -> None:
        super().__init__(workdir, ready_path=ready_path, stop_timeout_s=stop_timeout_s,
                         die_with_parent=die_with_parent, cpus=cpus, host=host, env=env)
        self.app = app
        # absolute: gunicorn runs in the workdir
        self.pythonpath = ",".join(str(Path(p).resolve()) for p in pythonpath.split(",")) if pythonpath else None
        self.python = python
        self.settings = GunicornSettings(workers=workers, max_requests=max_requests, preload=preload, threads=threads,
                                         extra_args=tuple(extra_args))
        self.settings.validate()

    def _environment(self) -> Mapping[str, str]:
        return {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}

    def _expected_children(self) -> int:
        return self.settings.workers

    def _prepare(self, port: int) -> list[str]:
        return gunicorn_command(self.settings, app=self.app, port=port, pidfile=self.pidfile,
                                error_log=self.error_log, pythonpath=self.pythonpath, python=self.python,
                                no_control_socket=_has_control_socket(), host=self.host)
