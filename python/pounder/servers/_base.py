"""A real server in its own directory and process group, on a free port of 127.0.0.1 (or of the
address given as ``host``: :func:`listen_address`).

:class:`ManagedServer` does the process handling shared by every server; a subclass only says how
to write its configuration and command line (``_prepare``) and which logs to show when it fails.

Start: the server runs in the foreground (no daemonizing) as our child, in a new session, so its
process group id is its pid and every worker it forks is in that group. ``start`` waits until the
server process itself holds a listening socket on the port *and* answers an HTTP request there.

Stop: a graceful signal (``_graceful_stop``), a wait, then SIGKILL to the whole process group and
to every process of the tree seen so far (also those that left the group, recognised by pid and
start time, so a reused pid is never hit). The parent is not reaped before the group is killed:
while it is an unreaped zombie its pid - the group id - cannot be reused. Orphans of a parent that
died earlier are still in the group and are killed the same way.

If this Python process dies without calling ``stop``: the server's parent gets SIGTERM from the
kernel (``PR_SET_PDEATHSIG``, on by default; note that the kernel sends it when the *thread* that
started the server exits, so start servers from a long-lived thread), servers still running at
interpreter exit are stopped by an ``atexit`` hook, and the guard (:mod:`pounder.servers._guard`)
stops every group still held when this process is gone, SIGKILL included (a server started through
a shell, whose real parent the parent-death signal does not reach).

CPUs (``cpus``): the parent starts with its CPU affinity set (every worker inherits it), set on *our
calling thread* around the ``fork`` (:func:`pounder._units.pinned_thread`): not in a ``preexec_fn``
(Python code between fork and exec is unsafe when other threads run) nor through ``taskset``.

Memory cgroup (``cgroup=True``, :mod:`pounder.servers._cgroup`): the parent is in a memory cgroup of
its own from exec on, so every worker it forks is charged there: a shell moves itself in and execs
the server, keeping its pid (:meth:`MemoryCgroup.command`; no Python code between fork and exec, and
Python 3.11's ``subprocess``/``posix_spawn`` cannot start a child in a cgroup). ``stop`` kills
whatever is still in it with the rest and removes it; so does a failed start.

Pod (``pod``, :mod:`pounder.servers._pod`): with a :class:`~pounder.servers.Pod` set, the server also
runs in a cpu cgroup with the pod's CPU quota (``cpu_cgroup``) and its memory cgroup enforces the
pod's memory limit, if it has one; a pod that cannot be made fails the start (:class:`ServerStartError`).
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from types import TracebackType
from typing import ClassVar, NoReturn, TypeVar

from pounder._errors import check_flag
from pounder._units import pinned_thread
from pounder.servers._cgroup import MemoryCgroup, enter_command, make_cgroup
from pounder.servers._failure import ServerStartError, _PortTaken, die_with_parent_hook
from pounder.servers._guard import guard_group, release_group
from pounder.servers._listen import owns_listener
from pounder.servers._logs import EXCERPT_LINES, log_excerpt
from pounder.servers._net import HOST as HOST
from pounder.servers._net import _bindable, _HttpProbe, free_port, listen_address
from pounder.servers._pod import CpuCgroup, Pod, make_cpu_cgroup
from pounder.servers._proc import ProcStat, all_stats, children_of, descendants_of, group_members, still_running

_POLL_S = 0.02
_KILL_WAIT_S = 5.0
_CRASH_LOOP_CHILDREN = 20
_FAILED_START_GRACE_S = 2.0
_ADDRESS_IN_USE = re.compile(r"Address already in use|Connection in use|could not bind", re.IGNORECASE)


_RUNNING: set[ManagedServer] = set()
_S = TypeVar("_S", bound="ManagedServer")


@atexit.register
def _stop_running_servers() -> None:
    for server in list(_RUNNING):
        server.stop()


class ManagedServer(abc.ABC):
    """A pre-forking server run as a child of this process; a context manager that starts it on
    entry (unless already started) and always stops it on exit.

    ``cpus``: run the server and every process it forks on these CPU numbers only (see the
    module docstring); None leaves the affinity alone.

    ``host``: the IPv4 address it listens on (default 127.0.0.1; see :func:`listen_address`).

    ``cgroup``: start it in a memory cgroup of its own (``cgroup``, or why none in
    ``cgroup_note``; see the module docstring).

    ``env``: variables added to our environment for the server (:meth:`_environment`).

    ``workdir`` holds everything the server writes (configuration, ``run/`` with the pid file,
    ``logs/``); ``None`` makes a private temporary directory (mode 0755), removed by ``stop``
    (so call ``stop`` also on a server that was never started, or use ``with``).
    """

    kind: ClassVar[str] = "server"
    """Short name used in messages and temporary directory names."""
    stop_signal: ClassVar[signal.Signals] = signal.SIGTERM
    """The parent's graceful stop signal: sent by ``stop`` and by the kernel when we die."""

    def __init__(self, workdir: str | os.PathLike[str] | None = None, *, ready_path: str = "/",
                 stop_timeout_s: float = 10.0, die_with_parent: bool = True,
                 cpus: Collection[int] | None = None, host: str = HOST, cgroup: bool = False,
                 env: Mapping[str, str] | None = None) -> None:
        self.host = listen_address(host, allow_remote=True)
        """The address the server listens on."""
        self.env: Mapping[str, str] = dict(env or {})
        """Variables added to our environment for the server (none for a server that takes none)."""
        self._owns_workdir = workdir is None
        if workdir is None:
            workdir = tempfile.mkdtemp(prefix=f"pounder-{self.kind}-")
            os.chmod(workdir, 0o755)
        self._workdir = Path(workdir).resolve()
        self._ready_path = ready_path
        self._stop_timeout_s = stop_timeout_s
        self._die_with_parent = die_with_parent
        self.cpus: tuple[int, ...] | None = None if cpus is None else tuple(sorted(set(cpus)))
        """The CPUs the server and its workers run on (None: wherever this process may run),
        applied by the next ``start``."""
        self._port: int | None = None
        self._pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._known: dict[int, ProcStat] = {}
        self._log_offsets: dict[Path, int] = {}
        self.use_cgroup = check_flag(cgroup, f"{self.kind}: cgroup")
        """Start the server in a memory cgroup of its own (applied by the next ``start``)."""
        self.cgroup: MemoryCgroup | None = None
        """The running server's memory cgroup (None when stopped, not asked for, or none could be made)."""
        self.cgroup_note = ""
        """Why the latest start asked for a cgroup and got none, in one sentence ("" otherwise)."""
        self.pod: Pod | None = None
        """The pod the next ``start`` emulates (a CPU quota and a memory limit; with ``use_cgroup``)."""
        self.cpu_cgroup: CpuCgroup | None = None
        """The running server's cpu cgroup, with the pod's quota (None without a pod)."""

    # -- what a subclass provides -------------------------------------------------------------

    @abc.abstractmethod
    def _prepare(self, port: int) -> list[str]:
        """Write the configuration for ``port`` into the workdir; return the command line."""

    def _environment(self) -> Mapping[str, str]:
        """The server's environment: ours, with :attr:`env` added."""
        return {**os.environ, **self.env}

    def _log_files(self) -> list[Path]:
        """Logs worth showing when the server fails, most useful first."""
        return [self.error_log, self.console_log]

    def _expected_children(self) -> int:
        """How many workers the parent starts with (``start`` waits for them)."""
        return 0

    def _check_startable(self) -> None:
        """Raise :class:`ServerStartError` if the server cannot start here (checked first)."""
        return None

    def _graceful_stop(self, pid: int) -> None:
        """Ask the parent ``pid`` to stop its workers and exit (default: ``stop_signal``)."""
        os.kill(pid, self.stop_signal)

    def _http_port(self) -> int:
        """The port that answers HTTP (``url``, the readiness probe): ``port`` unless a front answers."""
        return self.port

    @property
    def front_pid(self) -> int | None:
        """The root process of a front passing the load on (php-fpm's nginx; CPU counted apart), or None."""
        return None

    def status_counters(self) -> dict[str, int] | None:
        """The server's own counters on its status page, read now (php-fpm's "accepted conn", "max
        children reached", "max listen queue", "slow requests"); None without one or unreadable."""
        return None

    # -- properties ---------------------------------------------------------------------------

    @property
    def workdir(self) -> Path:
        return self._workdir

    def _started(self, value: int | None) -> int:
        if value is None:
            raise RuntimeError(f"{self.kind} has not been started")
        return value

    @property
    def port(self) -> int:
        """The port of the latest start (it stays set after ``stop``)."""
        return self._started(self._port)

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` (no trailing slash), where HTTP is answered (``_http_port``)."""
        return f"http://{self.host}:{self._http_port()}"

    @property
    def pid(self) -> int:
        """The parent (master) process of the latest start (it stays set after ``stop``)."""
        return self._started(self._pid)

    @property
    def pidfile(self) -> Path:
        return self._workdir / "run" / f"{self.kind}.pid"

    @property
    def error_log(self) -> Path:
        """The server's own error log."""
        return self._workdir / "logs" / "error.log"

    @property
    def console_log(self) -> Path:
        """The parent's stdout and stderr (start-up errors written before the error log opens)."""
        return self._workdir / "logs" / "console.log"

    @property
    def running(self) -> bool:
        """True while the parent process runs."""
        return self._proc is not None and not self._parent_exited()

    @property
    def nested_workers(self) -> bool:
        """Some workers are children of a worker, not of the parent (Puma's ``fork_worker``: worker
        0 forks the others): :meth:`children` lists them too, and pounder's snapshots count them
        as workers (:meth:`pounder.procs.PoolSnapshot.with_nested_workers`)."""
        return False

    def children(self) -> list[int]:
        """Pids of the workers, ascending: the parent's live child processes, and their own
        children when :attr:`nested_workers`."""
        if not self.running:
            return []
        every = all_stats()
        stats = children_of(self.pid, every)
        if self.nested_workers:
            stats = sorted([*stats, *(s for child in stats for s in children_of(child.pid, every))],
                           key=lambda s: s.pid)
        self._known.update((s.pid, s) for s in stats)
        return [s.pid for s in stats]

    def wait_for_children(self, count: int, timeout_s: float = 10.0) -> list[int]:
        """Wait until the parent has at least ``count`` children (at most ``timeout_s``); returns
        the children then (fewer than ``count`` on timeout)."""
        deadline = time.monotonic() + timeout_s
        while True:
            pids = self.children()
            if len(pids) >= count or time.monotonic() >= deadline or not self.running:
                return pids
            time.sleep(_POLL_S)

    def read_pidfile(self) -> int | None:
        """The pid the server wrote to its pid file, if any."""
        try:
            return int(self.pidfile.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def log_tail(self, lines: int = EXCERPT_LINES) -> str:
        """What the logs say since the latest start, in ``lines`` lines at most with their headers:
        errors first, then the last lines (:func:`pounder.servers._logs.log_excerpt`)."""
        logs = [(path, self._log_offsets.get(path, 0)) for path in self._log_files()]
        return log_excerpt(logs, lines, self._user_words) or f"(the {self.kind} wrote nothing to its logs)"

    def _user_words(self, line: str) -> str:
        """A log line as the user should read it (Apache: the generated httpd.conf's lines as the user's file's)."""
        return line

    @property
    def log_files(self) -> list[Path]:
        """The logs it writes (to keep when it failed)."""
        return [path for path in self._log_files() if path.exists()]

    # -- start / stop -------------------------------------------------------------------------

    def start(self: _S, timeout_s: float = 30.0) -> _S:
        """Start on a free port and wait until it answers HTTP and its initial workers run (all
        ``timeout_s`` at most); returns self. Raises
        :class:`ServerStartError` (with the end of the server's logs) if it exits or does not
        answer within ``timeout_s``; nothing is left running then."""
        if self.running:
            raise RuntimeError(f"{self.kind} is already running (pid {self._pid})")
        self.stop()  # reap and clean up after a parent that exited by itself
        self._check_startable()
        deadline = time.monotonic() + timeout_s
        for attempt in (1, 2):
            try:
                self._launch(free_port(self.host), deadline, timeout_s)
                return self
            except _PortTaken as taken:
                if attempt == 2:
                    raise ServerStartError(f"{self.kind}: port {self._port} was taken before the server could "
                                           f"bind it, twice", taken.log_tail) from None
            except BaseException:  # Ctrl-C, a bad setting...: nothing may be left running
                self.stop(_FAILED_START_GRACE_S)
                raise
        raise AssertionError("unreachable")

    def _launch(self, port: int, deadline: float, timeout_s: float) -> None:
        (self._workdir / "logs").mkdir(parents=True, exist_ok=True)
        (self._workdir / "run").mkdir(parents=True, exist_ok=True)
        self.pidfile.unlink(missing_ok=True)
        self._port = port
        argv = self._prepare(port)
        if self.use_cgroup:
            argv = self._in_cgroup(argv)
        self._log_offsets = {p: (p.stat().st_size if p.exists() else 0) for p in self._log_files()}
        with open(self.console_log, "ab") as console, pinned_thread(self.cpus):
            try:
                self._proc = subprocess.Popen(
                    argv, cwd=self._workdir, env=dict(self._environment()), stdin=subprocess.DEVNULL,
                    stdout=console, stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=die_with_parent_hook(self.stop_signal) if self._die_with_parent else None)
            except OSError as error:
                raise ServerStartError(f"{self.kind}: cannot run {argv[0]}: {error.strerror or error}") from None
        if self._die_with_parent:  # its own session: the group is everything it forks
            guard_group(self._proc.pid)
        self._pid = self._proc.pid
        self._known = {}
        _RUNNING.add(self)
        listening = False
        probe: _HttpProbe | None = None
        seen: set[int] = set()
        expected = self._expected_children()
        try:
            while True:
                if self._parent_exited():
                    code = self._exit_status()
                    tail = self.log_tail()
                    self.stop(_FAILED_START_GRACE_S)
                    reason = f"{self.kind} exited with status {code} while starting on {self.url}"
                    if _ADDRESS_IN_USE.search(tail):
                        if not _bindable(self.host, port):
                            raise _PortTaken(tail)
                        reason += (f": an address it binds was in use, not port {port} (pounder chose it and it "
                                   "is free): does it listen on a fixed port too?")
                    raise ServerStartError(reason, tail)
                seen.update(s.pid for s in all_stats() if s.ppid == self._pid)  # exited ones too
                if len(seen) >= max(_CRASH_LOOP_CHILDREN, 5 * expected):
                    self._fail(f"{self.kind}: its workers keep exiting while starting on {self.url} "
                               f"({len(seen)} started so far)")
                listening = listening or owns_listener(self._pid, port, self.host)
                if listening:
                    probe = probe or _HttpProbe(self.host, self._http_port(), self._ready_path)
                    answered = probe.poll()
                    if answered:
                        started = self.wait_for_children(expected, deadline - time.monotonic())
                        if len(started) < expected:
                            self._fail(f"{self.kind}: only {len(started)} of its {expected} workers were running "
                                       f"after {timeout_s:g} s")
                        return
                    if answered is False:
                        probe = None
                if time.monotonic() >= deadline:
                    self._fail(f"{self.kind} did not {'answer HTTP' if listening else 'listen'} on {self.url} "
                               f"within {timeout_s:g} s")
                time.sleep(_POLL_S)
        finally:
            if probe is not None:
                probe.close()

    def _fail(self, reason: str) -> NoReturn:
        tail = self.log_tail()
        self.stop(_FAILED_START_GRACE_S)
        raise ServerStartError(reason, tail)

    def _parent_exited(self) -> bool:
        """Has the parent exited? Does not reap it (see the module docstring)."""
        assert self._proc is not None
        if self._proc.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None and info.si_pid != 0

    def _exit_status(self) -> str:
        assert self._proc is not None
        try:
            info = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return str(self._proc.returncode)
        if info is None:
            return "?"
        if info.si_code == os.CLD_EXITED:
            return str(info.si_status)
        return f"signal {info.si_status}"

    def _remember_tree(self) -> None:
        if self._pid is None:
            return
        stats = all_stats()
        for s in descendants_of(self._pid, stats) + group_members(self._pid, stats):
            self._known.setdefault(s.pid, s)

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the server and every process it started: the graceful signal, up to ``timeout_s``
        (default: the constructor's ``stop_timeout_s``) for the parent to exit, then SIGKILL to
        whatever is left. Idempotent; never raises for a server that already died."""
        proc = self._proc
        if proc is None:
            self._drop_cgroup()
            self._remove_own_workdir()
            return
        grace = self._stop_timeout_s if timeout_s is None else timeout_s
        try:
            self._remember_tree()
            if not self._parent_exited():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    self._graceful_stop(proc.pid)
                end = time.monotonic() + grace
                while not self._parent_exited() and time.monotonic() < end:
                    time.sleep(_POLL_S)
            self._remember_tree()
            # The parent is an unreaped zombie (or still running): its pid is the group id, safe to signal.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            for stat in self._known.values():
                if still_running(stat):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(stat.pid, signal.SIGKILL)
            for pid in self.cgroup.pids() if self.cgroup is not None else []:  # all the server's
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(_KILL_WAIT_S)
            end = time.monotonic() + _KILL_WAIT_S
            while any(still_running(s) for s in self._known.values()) and time.monotonic() < end:
                time.sleep(_POLL_S)
        finally:
            release_group(proc.pid)
            self._drop_cgroup()
            self._proc = None
            _RUNNING.discard(self)
            self._remove_own_workdir()

    def _in_cgroup(self, argv: list[str]) -> list[str]:
        """``argv`` started inside a new memory cgroup (see the module docstring), or as it is with
        ``cgroup_note`` saying why none could be made; and in the pod's cpu cgroup with the pod's
        memory limit enforced when a pod is set (ServerStartError when either cannot be)."""
        self.cgroup, self.cgroup_note = make_cgroup()
        files = [] if self.cgroup is None else [self.cgroup.procs_file]
        if self.pod is not None:
            if self.pod.memory is not None:
                try:
                    if self.cgroup is None:
                        raise OSError(self.cgroup_note)
                    self.cgroup.set_limit(self.pod.memory)
                except OSError as error:
                    raise ServerStartError(f"{self.kind}: cannot enforce the pod's memory limit: "
                                           f"{error.strerror or error}") from None
            self.cpu_cgroup, why = make_cpu_cgroup(self.pod.cpus, self.cgroup)
            if self.cpu_cgroup is None:
                raise ServerStartError(f"{self.kind}: {why}")
            files += [f for f in self.cpu_cgroup.procs_files if f not in files]
        try:
            return enter_command(argv, self._environment(), files) if files else argv
        except FileNotFoundError as error:
            raise ServerStartError(f"{self.kind}: cannot run {argv[0]}: {error.strerror}") from None

    def _drop_cgroup(self) -> None:
        """Remove the cgroup once its processes are gone (``stop``)."""
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self.cpu_cgroup is not None:
            self.cpu_cgroup.remove()
            self.cpu_cgroup = None

    def _remove_own_workdir(self) -> None:
        if self._owns_workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self: _S) -> _S:
        if not self.running:
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running on {self.url} pid {self._pid}" if self.running else "stopped"
        return f"<{type(self).__name__} {state} in {self._workdir}>"
