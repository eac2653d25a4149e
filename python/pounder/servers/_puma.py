"""Puma in cluster mode (Ruby, Rack), run from a generated configuration file, stopped with
SIGTERM; its control app's ``/stats`` read through a Unix socket (:func:`puma_stats`).

Verified on Puma 5.6.5: the master forks every worker itself (they are its direct children; it
owns the listening socket), and on SIGTERM it closes the listener, sends TERM to its workers and
waits for (reaps) them before it exits (``Cluster#stop_workers``). Its control app is a thread of
the master, not a process.

A worker's figures in ``/stats`` (backlog, pool capacity, requests count) are what it last reported
at its check-in, every ``worker_check_interval`` seconds (5 by default): pounder's own instances
check in every second (:data:`CHECK_INTERVAL_S`: a line written to a pipe once a second, nothing
else changes), and :meth:`PumaServer.status_counters` says when they checked in.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pounder._errors import PounderError, UsageError, public
from pounder.servers._base import HOST, ManagedServer
from pounder.servers._program import program_missing, program_path

BACKLOG = 1024
"""The listen backlog of the generated ``bind`` (Puma's own default on Linux, written out)."""
CHECK_INTERVAL_S = 1
"""``worker_check_interval`` of the Puma instances pounder measures: each worker reports its
figures to the master every second (Puma's default: 5)."""
_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes with its NUL
_STATS_MAX_BYTES = 1 << 20


@public
@dataclass(frozen=True)
class PumaSettings:
    """What can be tuned or chosen in a Puma cluster (its own configuration names in comments)."""

    workers: int = 2                    # workers
    threads: tuple[int, int] = (1, 1)   # threads MIN, MAX (1, 1: one request per worker, as a pre-fork server)
    preload_app: bool = False           # preload_app! (load the app in the master before forking)
    fork_worker: int | None = None      # fork_worker N (workers forked from worker 0, reforked after N requests)
    backlog: int = BACKLOG              # bind "tcp://HOST:PORT?backlog=N"
    extra_args: tuple[str, ...] = ()    # appended to the command line before the rackup file

    def validate(self) -> None:
        if self.workers < 1:
            raise UsageError(f"puma: workers must be at least 1, not {self.workers}")
        low, high = self.threads
        if low < 0 or high < 1 or low > high:
            raise UsageError(f"puma: threads must be MIN,MAX with 0 <= MIN <= MAX and MAX >= 1, not {low},{high}")
        if self.backlog < 1:
            raise UsageError(f"puma: backlog must be at least 1, not {self.backlog}")
        check_fork_worker(self.fork_worker)


FORK_WORKER_MAX = 10**9
"""The most requests ``fork_worker N`` may wait for before its refork."""


@public
def check_fork_worker(value: Any) -> int | None:
    """Puma's ``fork_worker N`` (None: off): N a whole number from 0 (never refork) to
    :data:`FORK_WORKER_MAX`, else :class:`~pounder.UsageError` in one line."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= FORK_WORKER_MAX:
        raise UsageError(f"puma: fork_worker must be a number of requests from 0 (never refork) to "
                         f"{FORK_WORKER_MAX:,}, not {value!r}")
    return value


def ruby_string(text: str) -> str:
    """``text`` as a Ruby string literal (JSON's escapes are Ruby's for these characters)."""
    return json.dumps(text, ensure_ascii=False).replace("#", "\\#")


@public
def render_puma_config(settings: PumaSettings, *, port: int | None, host: str = HOST, pidfile: str | None = None,
                       control_socket: str | None = None, check_interval_s: int | None = None) -> str:
    """The Puma configuration file of a cluster (a pure function): ``bind`` to ``host``:``port``
    with the backlog (no ``bind`` for ``port`` None: the user's own), ``workers``, ``threads``,
    ``preload_app!`` written out either way (Puma 5.6's default follows WEB_CONCURRENCY, not
    ``workers``), ``fork_worker N`` when set, the production environment; ``pidfile`` and
    ``control_socket`` (the control app on that Unix socket, without a token: ``/stats``) and
    ``worker_check_interval`` when given."""
    settings.validate()
    low, high = settings.threads
    lines = [
        *([] if port is None else [f"bind {ruby_string(f'tcp://{host}:{port}?backlog={settings.backlog}')}"]),
        f"workers {settings.workers}",
        f"threads {low}, {high}",
        f"preload_app! {'true' if settings.preload_app else 'false'}",
        *([] if settings.fork_worker is None else [f"fork_worker {settings.fork_worker}"]),
        'environment "production"',
    ]
    if pidfile is not None:
        lines.append(f"pidfile {ruby_string(pidfile)}")
    if control_socket is not None:
        lines.append(f"activate_control_app {ruby_string('unix://' + control_socket)}, {{ no_token: true }}")
    if check_interval_s is not None:
        lines.append(f"worker_check_interval {int(check_interval_s)}")
    if settings.workers == 1:
        lines.append("silence_single_worker_warning")
    return "\n".join(lines) + "\n"


@public
def puma_command(settings: PumaSettings, *, config: Path, rackup: Path, binary: str = "puma") -> list[str]:
    """The command line of a Puma instance reading the configuration file ``config`` (a pure function)."""
    settings.validate()
    return [binary, "-C", str(config), *settings.extra_args, str(rackup)]


@public
def puma_missing() -> str | None:
    """Why Puma cannot run here, or None if it can."""
    return program_missing("puma", "puma")


@public
@dataclass(frozen=True)
class PumaWorkerStats:
    """One worker in the control app's ``/stats`` (``last_status``: what the worker last reported
    at its check-in, every few seconds). ``pid`` 0: not known yet (with ``fork_worker``, worker 0
    forks it and the master learns its pid when it reports)."""

    index: int
    pid: int
    phase: int
    booted: bool
    last_checkin: str
    backlog: int            # requests accepted and waiting for a thread
    running: int            # threads spawned
    pool_capacity: int      # requests it could take now
    max_threads: int
    requests_count: int     # requests served since it started

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PumaWorkerStats:
        status = data.get("last_status") or {}
        return cls(index=int(data["index"]), pid=int(data["pid"] or 0), phase=int(data.get("phase", 0)),
                   booted=bool(data.get("booted")), last_checkin=str(data.get("last_checkin", "")),
                   backlog=int(status.get("backlog", 0)), running=int(status.get("running", 0)),
                   pool_capacity=int(status.get("pool_capacity", 0)),
                   max_threads=int(status.get("max_threads", 0)),
                   requests_count=int(status.get("requests_count", 0)))


@public
@dataclass(frozen=True)
class PumaStats:
    """The control app's ``/stats`` of a cluster."""

    workers: int
    booted_workers: int
    old_workers: int
    phase: int
    worker_status: tuple[PumaWorkerStats, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PumaStats:
        if "worker_status" not in data:
            raise PounderError("puma: the control app's /stats has no worker_status: not a cluster")
        return cls(workers=int(data["workers"]), booted_workers=int(data.get("booted_workers", 0)),
                   old_workers=int(data.get("old_workers", 0)), phase=int(data.get("phase", 0)),
                   worker_status=tuple(PumaWorkerStats.from_dict(w) for w in data["worker_status"]))


def _epoch(checkin: str) -> int:
    """Puma's ``last_checkin`` ("2026-11-26T10:25:50Z", UTC) in whole seconds since the epoch (0
    when it is not such a time)."""
    try:
        return int(datetime.strptime(checkin, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())
    except ValueError:
        return 0


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout_s: float) -> None:
        super().__init__("localhost", timeout=timeout_s)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


@contextlib.contextmanager
def _short_path(path: Path) -> Iterator[str]:
    """``path`` as a Unix socket address: itself when short enough, else through a descriptor of
    its directory (``/proc/self/fd/N/name``), as a socket path holds at most 108 bytes."""
    if len(os.fsencode(path)) <= _SOCKET_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


@public
def puma_stats(control_socket: str | os.PathLike[str], timeout_s: float = 2.0) -> PumaStats:
    """The ``/stats`` of the Puma control app on the Unix socket ``control_socket`` (activated
    with ``no_token: true``); :class:`~pounder.PounderError` if it cannot be read."""
    path = Path(control_socket)
    try:
        with _short_path(path) as address:
            conn = _UnixHTTPConnection(address, timeout_s)
            try:
                conn.request("GET", "/stats")
                response = conn.getresponse()
                body = response.read(_STATS_MAX_BYTES)
            finally:
                conn.close()
    except (OSError, http.client.HTTPException) as error:
        raise PounderError(f"puma: cannot read the control app's /stats on {path}: {error}") from None
    if response.status != 200:
        raise PounderError(f"puma: the control app's /stats answered {response.status} {response.reason}")
    try:
        return PumaStats.from_dict(json.loads(body))
    except (ValueError, KeyError, TypeError) as error:
        raise PounderError(f"puma: the control app's /stats is not what Puma 5 writes ({error})") from None


@public
class PumaServer(ManagedServer):
    """Puma in cluster mode serving the Rack application ``rackup`` (a config.ru), from a
    configuration file written to ``workdir/puma.rb``; ``env`` is added to our environment.

    ``fork_worker`` N (None: off): Puma's ``fork_worker N``: the master forks worker 0, which
    loads the application and forks the other workers (children of worker 0, not of the master),
    and once worker 0 has served N requests (0: never) the others are replaced by fresh forks of
    it (Puma's refork). :meth:`children` lists them all, and pounder's snapshots count them as
    workers (:attr:`nested_workers`)."""

    kind = "puma"
    stop_signal = signal.SIGTERM
    """Puma's graceful stop in cluster mode: the master stops and reaps its workers, then exits."""

    def __init__(self, workdir: str | os.PathLike[str] | None, rackup: str | os.PathLike[str], *, workers: int = 2,
                 threads: tuple[int, int] = (1, 1), preload_app: bool = False, fork_worker: int | None = None,
                 env: Mapping[str, str] | None = None, extra_args: Sequence[str] = (), binary: str | None = None,
                 ready_path: str = "/", stop_timeout_s: float = 10.0, die_with_parent: bool = True,
                 cpus: Collection[int] | None = None, host: str = HOST) -> None:
        super().__init__(workdir, ready_path=ready_path, stop_timeout_s=stop_timeout_s,
                         die_with_parent=die_with_parent, cpus=cpus, host=host, env=env)
        self.rackup = Path(rackup).resolve()
        self.binary = program_path(binary, "puma")
        self.settings = PumaSettings(workers=workers, threads=(int(threads[0]), int(threads[1])),
                                     preload_app=preload_app, fork_worker=fork_worker, extra_args=tuple(extra_args))
        self.settings.validate()

    @property
    def nested_workers(self) -> bool:
        """With ``fork_worker`` worker 0 forks the other workers."""
        return self.settings.fork_worker is not None

    @property
    def config_file(self) -> Path:
        return self.workdir / "puma.rb"

    @property
    def control_socket(self) -> Path:
        """The control app's Unix socket (``/stats``: :meth:`stats`)."""
        return self.workdir / "run" / "puma-control.sock"

    def stats(self, timeout_s: float = 2.0) -> PumaStats:
        """The control app's ``/stats`` now (:func:`puma_stats`)."""
        return puma_stats(self.control_socket, timeout_s)

    def status_counters(self) -> dict[str, int] | None:
        """Puma's own figures in the control app's ``/stats``, read now (None when it does not
        answer): ``booted_workers`` (the master's own count, exact now); summed over the workers as
        each last reported them at its check-in (every :data:`CHECK_INTERVAL_S` s): ``backlog``
        (requests a worker accepted that wait for a thread), ``pool_capacity`` (requests it could
        take: idle threads and threads not yet spawned), ``max_threads``, ``requests_count``
        (requests it began since it started, the one in progress included); ``checkin:PID``: when
        the worker PID last checked in (whole seconds since the epoch, as Puma writes it; a worker
        checks in at most once a second, so a later second is a later check-in)."""
        try:
            stats = self.stats()
        except PounderError:
            return None
        workers = stats.worker_status
        return {"booted_workers": stats.booted_workers, "backlog": sum(w.backlog for w in workers),
                "pool_capacity": sum(w.pool_capacity for w in workers),
                "max_threads": sum(w.max_threads for w in workers),
                "requests_count": sum(w.requests_count for w in workers),
                **{f"checkin:{w.pid}": _epoch(w.last_checkin) for w in workers if w.pid}}

    def _log_files(self) -> list[Path]:
        return [self.console_log]

    def _expected_children(self) -> int:
        return self.settings.workers

    def _prepare(self, port: int) -> list[str]:
        self.control_socket.unlink(missing_ok=True)
        # relative to the workdir Puma runs in: an absolute socket path may be too long
        self.config_file.write_text(render_puma_config(
            self.settings, port=port, host=self.host, pidfile=str(self.pidfile),
            control_socket=str(self.control_socket.relative_to(self.workdir)), check_interval_s=CHECK_INTERVAL_S))
        return puma_command(self.settings, config=self.config_file, rackup=self.rackup, binary=self.binary)
