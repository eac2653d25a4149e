"""Starman (Perl PSGI, Net::Server::PreFork), stopped with SIGQUIT (its graceful shutdown)."""

from __future__ import annotations

import os
import signal
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pounder._errors import UsageError, public
from pounder.servers._base import HOST, ManagedServer
from pounder.servers._nytprof import nytprof_env, starman_nytprof_args
from pounder.servers._program import program_missing, program_path

UNLIMITED_REQUESTS = 1_000_000_000
"""Passed as --max-requests for "unlimited": Starman takes 0 as its default, 1000."""


@public
@dataclass(frozen=True)
class StarmanSettings:
    """What can be tuned or chosen in a Starman instance (its own option names in comments).
    Note that Starman's ``--max-requests`` counts connections, like Apache's MaxConnectionsPerChild."""

    workers: int = 2                    # --workers
    max_requests: int = 0               # --max-requests (0: unlimited here; Starman's default is 1000)
    preload_app: bool = False           # --preload-app (load the app in the master before forking)
    keepalive: bool = True              # --disable-keepalive when False
    extra_args: tuple[str, ...] = ()    # appended before the .psgi
    profile_dir: Path | None = None     # Devel::NYTProf + pounder's window, profiling into it (pounder profile)

    def validate(self) -> None:
        if self.workers < 1:
            raise UsageError(f"starman: workers must be at least 1, not {self.workers}")
        if self.max_requests < 0:
            raise UsageError(f"starman: max_requests must not be negative, not {self.max_requests}")


@public
def starman_command(settings: StarmanSettings, *, psgi: Path, port: int, pidfile: Path, error_log: Path,
                    binary: str = "starman", host: str = HOST) -> list[str]:
    """The command line of a Starman instance on ``host``:``port`` (a pure function)."""
    settings.validate()
    argv = [binary, "--listen", f"{host}:{port}", "--workers", str(settings.workers), "--pid", str(pidfile),
            "--error-log", str(error_log), "--max-requests", str(settings.max_requests or UNLIMITED_REQUESTS)]
    if settings.preload_app:
        argv.append("--preload-app")
    if not settings.keepalive:
        argv.append("--disable-keepalive")
    if settings.profile_dir is not None:  # with NYTPROF (starman_env) in its environment
        argv += starman_nytprof_args()
    return argv + list(settings.extra_args) + [str(psgi)]


@public
def starman_env(settings: StarmanSettings) -> dict[str, str]:
    """What a Starman instance needs in its environment besides the user's (a pure function)."""
    return {} if settings.profile_dir is None else {"NYTPROF": nytprof_env(settings.profile_dir)}


@public
def starman_missing() -> str | None:
    """Why Starman cannot run here, or None if it can."""
    return program_missing("starman", "starman libplack-perl")


@public
class StarmanServer(ManagedServer):
    """Starman serving the PSGI app in the file ``psgi``; ``env`` is added to our environment.
    ``profile_dir``: load Devel::NYTProf (``start=no``) and pounder's window module in the master,
    profiling into that directory (made) while ``pounder.profile``'s NYTProf profiler opens a window."""

    kind = "starman"
    stop_signal = signal.SIGQUIT
    """Starman's graceful shutdown, which waits for (reaps) its workers; on TERM the master exits
    right after signalling them, and they are left to init as zombies."""

    def __init__(self, workdir: str | os.PathLike[str] | None, psgi: str | os.PathLike[str], *, workers: int = 2,
                 max_requests: int = 0, preload_app: bool = False, keepalive: bool = True,
                 env: Mapping[str, str] | None = None, extra_args: Sequence[str] = (), binary: str | None = None,
                 ready_path: str = "/", stop_timeout_s: float = 10.0, die_with_parent: bool = True,
                 cpus: Collection[int] | None = None, host: str = HOST,
                 profile_dir: str | os.PathLike[str] | None = None) -> None:
        super().__init__(workdir, ready_path=ready_path, stop_timeout_s=stop_timeout_s,
                         die_with_parent=die_with_parent, cpus=cpus, host=host, env=env)
        self.psgi = Path(psgi).resolve()
        self.binary = program_path(binary, "starman")
        self.settings = StarmanSettings(workers=workers, max_requests=max_requests, preload_app=preload_app,
                                        keepalive=keepalive, extra_args=tuple(extra_args),
                                        profile_dir=None if profile_dir is None else Path(profile_dir).resolve())
        self.settings.validate()

    def _environment(self) -> Mapping[str, str]:
        return {**os.environ, **self.env, **starman_env(self.settings)}

    def _expected_children(self) -> int:
        return self.settings.workers

    def _prepare(self, port: int) -> list[str]:
        if self.settings.profile_dir is not None:
            self.settings.profile_dir.mkdir(parents=True, exist_ok=True)
        return starman_command(self.settings, psgi=self.psgi, port=port, pidfile=self.pidfile,
                               error_log=self.error_log, binary=self.binary, host=self.host)
