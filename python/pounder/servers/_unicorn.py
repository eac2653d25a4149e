"""Unicorn (Ruby, Rack), run from a generated configuration file, stopped with SIGQUIT.

Verified on Unicorn 6.0.0: the master forks every worker itself and owns the listening socket;
QUIT is its graceful shutdown (each worker finishes its request, the master reaps them, at most
``timeout`` seconds, then KILL); TERM and INT are its quick shutdown.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pounder._errors import UsageError, public
from pounder.servers._base import HOST, ManagedServer
from pounder.servers._program import program_missing, program_path
from pounder.servers._puma import ruby_string as _ruby

BACKLOG = 1024
"""The listen backlog of the generated ``listen`` (Unicorn's own default, written out)."""
TIMEOUT_S = 60
"""Unicorn's own default ``timeout``: a worker silent this long is killed by the master."""


@public
@dataclass(frozen=True)
class UnicornSettings:
    """What can be tuned or chosen in a Unicorn instance (its own configuration names in comments)."""

    workers: int = 2                    # worker_processes
    preload_app: bool = False           # preload_app true (load the app in the master before forking)
    backlog: int = BACKLOG              # listen "HOST:PORT", backlog: N
    timeout_s: int = TIMEOUT_S          # timeout
    extra_args: tuple[str, ...] = ()    # appended to the command line before the rackup file

    def validate(self) -> None:
        if self.workers < 1:
            raise UsageError(f"unicorn: worker_processes must be at least 1, not {self.workers}")
        if self.backlog < 1:
            raise UsageError(f"unicorn: backlog must be at least 1, not {self.backlog}")
        if self.timeout_s < 3:
            raise UsageError(f"unicorn: timeout must be at least 3 s, not {self.timeout_s}")


@public
def render_unicorn_config(settings: UnicornSettings, *, port: int | None, host: str = HOST,
                          pidfile: str | None = None, stderr_path: str | None = None,
                          stdout_path: str | None = None) -> str:
    """The Unicorn configuration file of an instance (a pure function): ``listen`` on
    ``host``:``port`` with the backlog (none for ``port`` None: the user's own),
    ``worker_processes``, ``preload_app``, ``timeout``; ``pid``, ``stderr_path`` and
    ``stdout_path`` when given."""
    settings.validate()
    lines = [
        *([] if port is None else [f"listen {_ruby(f'{host}:{port}')}, backlog: {settings.backlog}"]),
        f"worker_processes {settings.workers}",
        f"preload_app {'true' if settings.preload_app else 'false'}",
        f"timeout {settings.timeout_s}",
    ]
    for name, value in (("pid", pidfile), ("stderr_path", stderr_path), ("stdout_path", stdout_path)):
        if value is not None:
            lines.append(f"{name} {_ruby(value)}")
    return "\n".join(lines) + "\n"


@public
def unicorn_command(settings: UnicornSettings, *, config: Path, rackup: Path, binary: str = "unicorn") -> list[str]:
    """The command line of a Unicorn instance reading the configuration file ``config``, in the
    production environment (``-E production``: no development middleware; a pure function)."""
    settings.validate()
    return [binary, "-E", "production", "-c", str(config), *settings.extra_args, str(rackup)]


@public
def unicorn_missing() -> str | None:
    """Why Unicorn cannot run here, or None if it can."""
    return program_missing("unicorn", "unicorn")


@public
class UnicornServer(ManagedServer):
    """Unicorn serving the Rack application ``rackup`` (a config.ru), from a configuration file
    written to ``workdir/unicorn.conf.rb``; ``env`` is added to our environment."""

    kind = "unicorn"
    stop_signal = signal.SIGQUIT
    """Unicorn's graceful shutdown: the master stops and reaps its workers, then exits."""

    def __init__(self, workdir: str | os.PathLike[str] | None, rackup: str | os.PathLike[str], *, workers: int = 2,
                 preload_app: bool = False, timeout_s: int = TIMEOUT_S, env: Mapping[str, str] | None = None,
                 extra_args: Sequence[str] = (), binary: str | None = None, ready_path: str = "/",
                 stop_timeout_s: float = 10.0, die_with_parent: bool = True,
                 cpus: Collection[int] | None = None, host: str = HOST) -> None:
        super().__init__(workdir, ready_path=ready_path, stop_timeout_s=stop_timeout_s,
                         die_with_parent=die_with_parent, cpus=cpus, host=host, env=env)
        self.rackup = Path(rackup).resolve()
        self.binary = program_path(binary, "unicorn")
        self.settings = UnicornSettings(workers=workers, preload_app=preload_app, timeout_s=timeout_s,
                                        extra_args=tuple(extra_args))
        self.settings.validate()

    @property
    def config_file(self) -> Path:
        return self.workdir / "unicorn.conf.rb"

    @property
    def access_log(self) -> Path:
        """Where the workers' stdout goes (Unicorn itself writes nothing there)."""
        return self.workdir / "logs" / "access.log"

    def _log_files(self) -> list[Path]:
        return [self.error_log, self.console_log, self.access_log]

    def _expected_children(self) -> int:
        return self.settings.workers

    def _prepare(self, port: int) -> list[str]:
        self.config_file.write_text(render_unicorn_config(
            self.settings, port=port, host=self.host, pidfile=str(self.pidfile), stderr_path=str(self.error_log),
            stdout_path=str(self.access_log)))
        return unicorn_command(self.settings, config=self.config_file, rackup=self.rackup, binary=self.binary)
