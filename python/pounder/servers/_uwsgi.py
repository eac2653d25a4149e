"""uWSGI 2.0 with its master, serving a Python WSGI application through the ``python3`` plugin
(Debian's ``uwsgi-core`` + ``uwsgi-plugin-python3``: the plugin embeds the *system* Python, not the
interpreter running pounder, so the application must be importable there).

The master speaks HTTP itself on the chosen port (``--http-socket HOST:PORT``, no router process):
it owns the listening socket and the workers are its direct children. ``--processes`` workers,
``--max-requests`` (0: unlimited; with ``--min-worker-lifetime 0``, as uWSGI would otherwise
keep a worker at least 60 s whatever its requests), the application loaded in the master before forking (uWSGI's
own default, "preload") or in every worker after it (``--lazy-apps``), ``--need-app`` (an import
that fails ends uWSGI instead of serving 500s), no per-request log, a pid file, the stats server
on a unix socket (:func:`uwsgi_stats`) and a master FIFO, all in the workdir. Its log goes to its
stderr, the console log.

Stop: uWSGI 2.0 takes SIGTERM as a *reload* (unless ``--die-on-term``, given here so that a
SIGTERM from elsewhere - the guard, the user - ends it too). The graceful stop is ``q`` written to
the master FIFO: the workers finish their requests, are reaped, and the master exits; SIGINT (its
immediate shutdown, which also reaps the workers) when the FIFO cannot be written, and as the
parent-death signal.

The user's own ini file (``UwsgiServer(target="app.ini")``) is copied into the workdir without the
options pounder owns (:func:`strip_owned_options`: sockets of every kind, processes, max-requests,
master, pid files, daemonize, logto, stats, lazy-apps, cheaper...); its magic variables naming the
file (``%d``, ``%p``...) still name the original, and uWSGI starts in its directory (``--chdir``
before the ini, so the ini's own ``chdir`` wins), as ``uwsgi --ini app.ini`` run there would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pounder._errors import PounderError, UsageError, public
from pounder._files import SMALL_LIMIT, read_input
from pounder.servers._base import HOST, ManagedServer
from pounder.servers._proc import children_of

BINARY = "/usr/bin/uwsgi"
PLUGIN = "python3"
PLUGIN_DIRS = ("/usr/lib/uwsgi/plugins", "/usr/lib64/uwsgi", "/usr/lib/uwsgi")
INI_SECTION = "uwsgi"
INI_LIMIT = SMALL_LIMIT
"""The largest ini file read."""
OWNED_OPTIONS = frozenset({
    # sockets and routers (every listener is pounder's: one --http-socket on its port)
    "socket", "http", "https", "http2", "http-to", "https2", "zerg", "zerg-server", "fastrouter", "rawrouter",
    "sslrouter", "udp",
    # the pool
    "master", "processes", "workers", "max-requests", "max-requests-delta", "min-worker-lifetime", "lazy-apps", "lazy",
    # files, logs, control
    "pidfile", "pidfile2", "safe-pidfile", "safe-pidfile2", "daemonize", "daemonize2", "logto", "logto2", "logger",
    "stats", "stats-server", "stats-http", "master-fifo", "die-on-term", "need-app", "disable-logging",
    # includes: pounder takes one self-contained file (refused, see strip_owned_options)
})
"""Options (exact names: uWSGI reads no other spelling in an ini) a private instance sets itself,
besides every ``*-socket`` listener (``_is_socket``) and every ``cheaper*`` option."""
_KEPT_SOCKET_OPTIONS = frozenset({"chmod-socket", "chown-socket", "abstract-socket"})
_INCLUDES = frozenset({"ini", "include", "inherit", "xml", "yaml", "yml", "json", "js", "sqlite3", "ldap", "config"})
_FALSE = frozenset({"false", "0", "no", "off"})
"""Values uWSGI reads as off for a flag (case-insensitive; anything else, "" too, is on)."""
_UWSGI_SOCKET_MAX = 102
"""The longest unix socket path uWSGI binds (bytes): it refuses a longer one ("invalid socket name")
and exits, below the kernel's 107 (measured with uWSGI 2.0.21: 102 binds, 103 is refused)."""
_STATS_LIMIT = 16 << 20
_REAP_TICK_S = 1.1
"""uWSGI's master checks for exited workers once a second."""
_MAGIC = re.compile(r"%(.)")
CHEAPER_ALGO = "spare"
"""uWSGI's default cheaper algorithm, named: at its checks (once a second here) it counts one with
every worker busy (one with a worker idle takes one back); past ``cheaper-overload`` of them it
starts ``cheaper-step`` cheaped workers; every ``cheaper-overload``-th check with two or more
workers idle stops the oldest, down to ``cheaper`` (one idle worker is its steady state)."""
CHEAPER_OVERLOAD = 1
"""pounder's ``cheaper-overload`` (uWSGI's default: 3): the fewest it takes (0 would divide by
zero), so that a burst gets workers after two busy checks rather than four and an idle pool
shrinks by one worker a check."""


@public
@dataclass(frozen=True)
class UwsgiSettings:
    """What can be tuned or chosen in a uWSGI instance (its own option names in comments)."""

    processes: int = 2                  # processes
    max_requests: int = 0               # max-requests (0: unlimited)
    lazy_apps: bool = False             # lazy-apps (load the app in each worker; default: in the master)
    cheaper: int = 0                    # cheaper (the fewest workers kept; 0: no cheaper, every worker started)
    cheaper_initial: int | None = None  # cheaper-initial (workers started; None: cheaper)
    cheaper_step: int = 1               # cheaper-step (workers started at once when every one is busy)
    cheaper_overload: int = CHEAPER_OVERLOAD  # cheaper-overload (checks, see CHEAPER_OVERLOAD)
    threads: int | None = None          # threads, with enable-threads (None: not given, the ini's own or 1)
    extra_args: tuple[str, ...] = ()    # appended last

    def validate(self) -> None:
        if self.processes < 1:
            raise UsageError(f"uwsgi: processes must be at least 1, not {self.processes}")
        if self.max_requests < 0:
            raise UsageError(f"uwsgi: max_requests must not be negative, not {self.max_requests}")
        if self.threads is not None and self.threads < 1:
            raise UsageError(f"uwsgi: threads must be at least 1, not {self.threads}")
        if not self.cheaper:
            return
        if not 1 <= self.cheaper < self.processes:
            raise UsageError(f"uwsgi: cheaper must be at least 1 and below processes ({self.processes}), "
                             f"not {self.cheaper}")
        if not self.cheaper <= self.initial <= self.processes:
            raise UsageError(f"uwsgi: cheaper-initial must be from cheaper ({self.cheaper}) to processes "
                             f"({self.processes}), not {self.initial}")
        if self.cheaper_step < 1 or self.cheaper_overload < 1:
            raise UsageError(f"uwsgi: cheaper-step and cheaper-overload must be at least 1, not "
                             f"{self.cheaper_step} and {self.cheaper_overload}")

    @property
    def initial(self) -> int:
        """The workers uWSGI starts: ``cheaper_initial`` (``cheaper`` when not given) with cheaper,
        else every one of ``processes``."""
        if not self.cheaper:
            return self.processes
        return self.cheaper if self.cheaper_initial is None else self.cheaper_initial


@public
def uwsgi_target_is_ini(target: str | os.PathLike[str]) -> bool:
    """Is a uWSGI target an ini file (a path ending in ``.ini`` or naming a directory), rather than
    a ``MODULE:CALLABLE``?"""
    text = os.fspath(target)
    return text.lower().endswith(".ini") or os.sep in text or ":" not in text and os.path.exists(text)


@public
def uwsgi_command(settings: UwsgiSettings, *, port: int, pidfile: Path, stats: Path, master_fifo: Path,
                  app: str | None = None, ini: Path | None = None, ini_dir: Path | None = None,
                  pythonpath: Sequence[str] = (), binary: str = BINARY, plugin: str | None = PLUGIN,
                  host: str = HOST) -> list[str]:
    """The command line of a uWSGI instance on ``host``:``port`` (a pure function): the WSGI ``app``
    ("module:callable") or the ``ini`` file pounder wrote (started in ``ini_dir``, the user's
    file's directory), with ``pythonpath`` entries; ``plugin``: the request plugin to load (None
    for a uWSGI with Python built in)."""
    settings.validate()
    if (app is None) == (ini is None):
        raise UsageError("uwsgi: give either the app (module:callable) or an ini file")
    if app is not None and ":" not in app:
        raise UsageError(f"uwsgi: the app must be given as module:callable, not {app!r}")
    argv = [binary] + (["--plugin", plugin] if plugin else [])
    if ini is not None:
        # --chdir first: the ini's own chdir, read after it, wins
        argv += (["--chdir", str(ini_dir)] if ini_dir is not None else []) + ["--ini", str(ini)]
    argv += ["--master", "--http-socket", f"{host}:{port}", "--processes", str(settings.processes),
             "--max-requests", str(settings.max_requests), "--min-worker-lifetime", "0", "--need-app",
             "--disable-logging", "--die-on-term", "--pidfile", str(pidfile), "--stats", str(stats),
             "--master-fifo", str(master_fifo)]
    if settings.lazy_apps:
        argv.append("--lazy-apps")
    if settings.threads is not None:
        argv += ["--threads", str(settings.threads), "--enable-threads"]
    if settings.cheaper:
        argv += ["--cheaper-algo", CHEAPER_ALGO, "--cheaper", str(settings.cheaper), "--cheaper-initial",
                 str(settings.initial), "--cheaper-step", str(settings.cheaper_step), "--cheaper-overload",
                 str(settings.cheaper_overload)]
    for entry in pythonpath:
        argv += ["--pythonpath", entry]
    if app is not None:
        argv += ["--module", app]
    return argv + list(settings.extra_args)


def find_uwsgi() -> str | None:
    """The uWSGI binary: Debian's /usr/bin/uwsgi, else one on PATH."""
    return BINARY if os.access(BINARY, os.X_OK) else shutil.which("uwsgi")


def find_plugin(name: str = PLUGIN) -> Path | None:
    """The file of uWSGI's ``name`` plugin (``python3_plugin.so``), or None."""
    return next((Path(d) / f"{name}_plugin.so" for d in PLUGIN_DIRS if (Path(d) / f"{name}_plugin.so").is_file()),
                None)


@public
def uwsgi_missing() -> str | None:
    """Why uWSGI with its Python 3 plugin cannot run here, or None if it can."""
    if find_uwsgi() is None:
        return "uwsgi is not installed (Debian: apt-get install uwsgi-core uwsgi-plugin-python3)"
    if find_plugin() is None:
        return (f"uWSGI's python3 plugin is not installed (no {PLUGIN}_plugin.so in {', '.join(PLUGIN_DIRS)}; "
                "Debian: apt-get install uwsgi-plugin-python3)")
    return None


def _ini_key(line: str) -> str | None:
    """The option a line of an ini sets (None: a comment, a section, blank, no ``=``)."""
    text = line.strip()
    if not text or text[0] in "#;[" or "=" not in text:
        return None
    return text.partition("=")[0].strip()


def _sections(ini_text: str) -> list[tuple[str | None, str]]:
    """Each line of an ini (with its line end) and the section it is in (None before the first)."""
    section: str | None = None
    lines = []
    for line in ini_text.splitlines(keepends=True):
        text = line.strip()
        if text.startswith("[") and "]" in text:
            section = text[1:text.index("]")].strip()
        lines.append((section, line))
    return lines


def _is_owned(key: str) -> bool:
    is_socket = key.endswith("-socket") and key not in _KEPT_SOCKET_OPTIONS
    return key in OWNED_OPTIONS or is_socket or key.startswith("cheaper")


@public
def strip_owned_options(ini_text: str, *, source: str = "the ini file") -> tuple[str, list[str]]:
    """Remove from a uWSGI ini the options a private pounder instance sets itself (a pure
    function): in its ``[uwsgi]`` section (the one uWSGI reads), :data:`OWNED_OPTIONS`, every
    ``*-socket`` listener and every ``cheaper*`` option, each line replaced by a comment (every
    other line keeps its number). Returns the text and the removed lines, stripped. An include
    (``ini``, ``include``, ``inherit``, ``json``...) or a file without a ``[uwsgi]`` section raises
    :class:`~pounder.UsageError` naming ``source``."""
    kept: list[str] = []
    removed: list[str] = []
    found = False
    for section, line in _sections(ini_text):
        found = found or section == INI_SECTION
        key = _ini_key(line) if section == INI_SECTION else None
        if key in _INCLUDES:
            raise UsageError(f"uwsgi: {source} uses {line.strip()}: give pounder one self-contained file "
                             "(included configuration is not followed)")
        if key is not None and _is_owned(key):
            removed.append(line.strip())
            kept.append(f"# set by pounder: {key}\n")
        else:
            kept.append(line)
    if not found:
        raise UsageError(f"uwsgi: {source} has no [{INI_SECTION}] section (the one uWSGI reads)")
    return "".join(kept), removed


@public
def ini_lazy_apps(ini_text: str) -> bool:
    """Does a uWSGI ini load the application in each worker (``lazy-apps`` or ``lazy`` on, the
    last one given wins)? uWSGI's default is off: loaded once in the master (preload)."""
    lazy = False
    for section, line in _sections(ini_text):
        if section == INI_SECTION and _ini_key(line) in ("lazy-apps", "lazy"):
            lazy = line.partition("=")[2].strip().lower() not in _FALSE
    return lazy


def _with_magic_of(text: str, original: Path) -> str:
    """The ini's magic variables that name its file (``%d``, ``%p``, ``%c``, ``%o``...) replaced by
    the original file's values: the copy lives elsewhere but the same name (``%s``, ``%n``, ``%e``
    stay right)."""
    values = {"d": f"{original.parent}/", "p": str(original), "P": str(original), "o": str(original),
              "O": str(original), "c": original.parent.name}

    def magic(match: re.Match[str]) -> str:
        return values.get(match.group(1), match.group(0))

    return _MAGIC.sub(magic, text)


@public
def read_uwsgi_ini(path: Path) -> str:
    """The user's uWSGI ini file: a regular file of at most :data:`INI_LIMIT` bytes, checked with
    :func:`strip_owned_options`; :class:`~pounder.UsageError` (one line) if it cannot be used."""
    data = read_input(path, "uwsgi: the ini file", limit=INI_LIMIT, missing="uwsgi: no such ini file {path}",
                      directory="uwsgi: the ini file {path} is a directory")
    if len(data) > INI_LIMIT:
        raise UsageError(f"uwsgi: the ini file {path} is larger than {INI_LIMIT} bytes")
    text = data.decode("utf-8", errors="surrogateescape")
    strip_owned_options(text, source=str(path))
    return text


@public
def uwsgi_stats(path: str | os.PathLike[str], timeout_s: float = 5.0) -> dict[str, Any]:
    """What uWSGI's stats server on the unix socket ``path`` says (its JSON as a dict): per worker
    (``workers``: ``pid``, ``status`` "idle" / "busy" / "cheap"..., ``requests``, ``respawn_count``
    ...), the listen queue (``listen_queue``, ``listen_queue_errors``; ``sockets``' ``queue`` and
    ``max_queue``). Raises :class:`~pounder.PounderError` (one line) if it cannot be read."""
    chunks: list[bytes] = []
    size = 0
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout_s)
            sock.connect(os.fspath(path))
            while chunk := sock.recv(65536):
                size += len(chunk)
                if size > _STATS_LIMIT:
                    raise PounderError(f"uWSGI's stats on {os.fspath(path)} exceed {_STATS_LIMIT} bytes")
                chunks.append(chunk)
    except OSError as error:
        raise PounderError(f"cannot read uWSGI's stats on {os.fspath(path)}: {error.strerror or error}") from None
    try:
        stats = json.loads(b"".join(chunks))
    except ValueError as error:
        raise PounderError(f"uWSGI's stats on {os.fspath(path)} are not JSON ({error})") from None
    if not isinstance(stats, dict) or not isinstance(stats.get("workers"), list):
        raise PounderError(f"uWSGI's stats on {os.fspath(path)} have no workers")
    return stats


@public
class UwsgiServer(ManagedServer):
    """uWSGI with its master serving ``target``: a WSGI app as "module:callable" (``pythonpath``:
    where to import it from, comma-separated) or the user's ini file (see the module docstring).
    ``lazy_apps``: load the app in each worker instead of once in the master. ``threads``: the
    threads of each worker (``--threads`` with ``--enable-threads``; None: not given). ``env``:
    added to our environment."""

    kind = "uwsgi"
    stop_signal = signal.SIGINT
    """uWSGI's immediate shutdown (workers killed and reaped, then the master exits), also without
    ``--die-on-term``; ``stop`` first asks for the graceful one through the master FIFO."""

    def __init__(self, workdir: str | os.PathLike[str] | None, target: str | os.PathLike[str], *,
                 pythonpath: str | None = None, processes: int = 2, max_requests: int = 0, lazy_apps: bool = False,
                 cheaper: int = 0, cheaper_initial: int | None = None, cheaper_step: int = 1,
                 cheaper_overload: int = CHEAPER_OVERLOAD, threads: int | None = None,
                 env: Mapping[str, str] | None = None,
                 extra_args: Sequence[str] = (), binary: str | None = None,
                 ready_path: str = "/", stop_timeout_s: float = 10.0, die_with_parent: bool = True,
                 cpus: Collection[int] | None = None, host: str = HOST) -> None:
        self.ini = Path(target).resolve() if uwsgi_target_is_ini(target) else None
        self.app = None if self.ini is not None else os.fspath(target)
        if self.ini is not None:
            read_uwsgi_ini(self.ini)  # refuse an unusable file before making a workdir
        elif ":" not in str(self.app):
            raise UsageError(f"uwsgi: the app must be given as module:callable or an .ini file, not {target!r}")
        self.settings = UwsgiSettings(processes=processes, max_requests=max_requests, lazy_apps=lazy_apps,
                                      cheaper=cheaper, cheaper_initial=cheaper_initial, cheaper_step=cheaper_step,
                                      cheaper_overload=cheaper_overload, threads=threads, extra_args=tuple(extra_args))
        self.settings.validate()
        super().__init__(workdir, ready_path=ready_path, stop_timeout_s=stop_timeout_s,
                         die_with_parent=die_with_parent, cpus=cpus, host=host, env=env)
        # absolute: uWSGI runs in the workdir (or the ini's directory)
        self.pythonpath = tuple(str(Path(p).resolve()) for p in (pythonpath or "").split(",") if p)
        self.binary = binary or find_uwsgi() or BINARY
        self._short_dir: str | None = None

    @property
    def stats_path(self) -> Path:
        """The stats server's unix socket: ``run/stats.sock``, or in a short private directory
        (made at start, removed at stop) when that path is longer than uWSGI binds."""
        if self._short_dir is not None:
            return Path(self._short_dir) / "stats.sock"
        return self.workdir / "run" / "stats.sock"

    def _short_stats_dir(self) -> None:
        """Move :attr:`stats_path` to a short private directory if uWSGI would refuse it where it is."""
        if self._short_dir is None and len(os.fsencode(str(self.stats_path))) > _UWSGI_SOCKET_MAX:
            self._short_dir = tempfile.mkdtemp(prefix="pounder-uwsgi-")

    @property
    def master_fifo(self) -> Path:
        return self.workdir / "run" / "master.fifo"

    @property
    def ini_path(self) -> Path | None:
        """The copy of the user's ini that uWSGI reads (None for a module:callable)."""
        return None if self.ini is None else self.workdir / self.ini.name

    def stats(self) -> dict[str, Any]:
        """:func:`uwsgi_stats` of this instance."""
        return uwsgi_stats(self.stats_path)

    def start(self, timeout_s: float = 30.0) -> UwsgiServer:
        """Start as every server does, then wait (within ``timeout_s``) for the stats server,
        which the master binds after forking its workers: the workers may answer before it."""
        began = time.monotonic()
        super().start(timeout_s)
        deadline = began + timeout_s
        while True:
            try:
                self.stats()
                return self
            except PounderError as error:
                if time.monotonic() >= deadline or not self.running:
                    self._fail(f"uwsgi: its stats server did not answer within {timeout_s:g} s ({error})")
                time.sleep(0.02)

    def status_counters(self) -> dict[str, int] | None:
        """uWSGI's own counters on its stats server, read now (None when it does not answer):
        ``requests``: its workers' requests summed (a worker's count is kept when it is replaced
        or cheaped; reading the stats is no request); ``listen queue errors``: its stats server's
        ``listen_queue_errors`` (uWSGI 2.0.21 never counts it: its master logs "listen queue of
        socket ... full" and the counter stays 0, measured with ``--listen 2`` and a queue of 3);
        ``workers``: workers running (not cheaped); ``busy workers``: of them, serving a request."""
        try:
            stats = self.stats()
        except PounderError:
            return None
        running = [w for w in stats["workers"] if int(w.get("pid") or 0) > 0 and w.get("status") != "cheap"]
        return {"requests": sum(int(w.get("requests") or 0) for w in stats["workers"]),
                "listen queue errors": int(stats.get("listen_queue_errors") or 0), "workers": len(running),
                "busy workers": sum(1 for w in running if w.get("status") == "busy")}

    def _log_files(self) -> list[Path]:
        return [self.console_log]

    def _expected_children(self) -> int:
        return self.settings.initial

    def _prepare(self, port: int) -> list[str]:
        ini = self.ini_path
        if self.ini is not None and ini is not None:
            text, _removed = strip_owned_options(read_uwsgi_ini(self.ini), source=str(self.ini))
            ini.write_text(_with_magic_of(text, self.ini), encoding="utf-8", errors="surrogateescape")
        self._short_stats_dir()
        self.stats_path.unlink(missing_ok=True)
        self.master_fifo.unlink(missing_ok=True)
        return uwsgi_command(self.settings, port=port, pidfile=self.pidfile, stats=self.stats_path,
                             master_fifo=self.master_fifo, app=self.app, ini=ini,
                             ini_dir=None if self.ini is None else self.ini.parent, pythonpath=self.pythonpath,
                             binary=self.binary, plugin=PLUGIN if find_plugin() is not None else None,
                             host=self.host)

    def _graceful_stop(self, pid: int) -> None:
        """``q`` on the master FIFO (graceful shutdown); SIGINT when no master reads it yet. The
        master notices its workers' exits once a second: once they have all exited, a newline on
        the FIFO (no command) wakes it to reap them and exit at once."""
        if not self._write_fifo(b"q"):
            os.kill(pid, signal.SIGINT)
            return
        end = time.monotonic() + _REAP_TICK_S
        while children_of(pid) and time.monotonic() < end:
            time.sleep(0.01)
        self._write_fifo(b"\n")

    def _write_fifo(self, command: bytes) -> bool:
        """Write ``command`` to the master FIFO; False when no master reads it."""
        try:
            fd = os.open(self.master_fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            os.write(fd, command)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def stop(self, timeout_s: float | None = None) -> None:
        try:
            super().stop(timeout_s)
        finally:
            if self._short_dir is not None:
                shutil.rmtree(self._short_dir, ignore_errors=True)
                self._short_dir = None
