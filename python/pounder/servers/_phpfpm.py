"""php-fpm (the PHP FastCGI process manager) behind an nginx front, both in one private directory.

php-fpm speaks FastCGI, not HTTP: :class:`PhpFpmServer` runs the pool (``php-fpm -F -y
WORKDIR/php-fpm.conf``, in the foreground, our child) listening for FastCGI on ``HOST:PORT``
(``port``: the pool's own listener, so the readiness check and the accept-queue watch see php-fpm's
listen queue), and an nginx (:class:`NginxFront`, under ``WORKDIR/front/``) that answers HTTP on a
port of its own (``url``) and passes ``*.php`` and the status page to the pool with
``fastcgi_pass``. The front is a server of its own: its own process group, guarded like every
server's, started before the pool and always stopped with it. ``pid`` and ``children()`` are
php-fpm's master and workers only: the front is never in the pool's figures.

The generated php-fpm.conf is pounder's ``[global]`` section (pid file and error log in the
workdir, ``daemonize = no``) and then a private copy of the user's pool file (one ``[name]``
section) line for line, with the settings pounder owns (:data:`OWNED_SETTINGS`: ``listen``,
``pm``, the pool sizes, ``pm.max_requests``...) turned into comments and set again at its end
(:func:`render_fpm_conf`, a pure function). The user's ``pm.status_path`` is kept (pounder sets
:data:`STATUS_PATH` when there is none); :func:`fpm_status` reads that page.

Root: php-fpm refuses to run its workers as root, so a pool without ``user`` gets ``user =
www-data``; nginx's workers run as that user too. As another user both ignore ``user``.
"""

from __future__ import annotations

import glob
import grp
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
import urllib.request
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pounder._errors import UsageError, public
from pounder.servers._apache import _unreachable_for
from pounder.servers._base import HOST, ManagedServer
from pounder.servers._failure import ServerStartError
from pounder.servers._nginx import NginxFront, check_status_path, find_nginx
from pounder.servers._phpfpm_pool import _SECTION, PoolFile, _key, parse_pool_conf, read_pool_conf

DEFAULT_USER = "www-data"
STATUS_PATH = "/pounder-fpm-status"
"""The status page pounder adds when the user's pool has no ``pm.status_path``."""
OWNED_SETTINGS = frozenset((
    "listen", "listen.allowed_clients", "pm", "pm.max_children", "pm.start_servers", "pm.min_spare_servers",
    "pm.max_spare_servers", "pm.max_requests", "pm.status_listen", "catch_workers_output", "access.log"))
"""Pool settings a private instance sets itself (removed from the user's file; ``access.log``
is left unset: no access log)."""
USER_PART_MARK = "; From"
"""Begins the comment line after which the user's pool file is copied, line for line."""
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FPM_NAMES = ("php-fpm", "php-fpm8.4", "php-fpm8.3", "php-fpm8.2", "php-fpm8.1", "php-fpm8.0", "php-fpm7.4")
_SBIN = "/usr/sbin:/usr/local/sbin:/sbin"
COUNTERS = ("accepted conn", "max children reached", "max listen queue", "slow requests")
"""The status page's counters :meth:`PhpFpmServer.status_counters` returns. php-fpm counts "max
children reached" only with ``pm = dynamic`` or ``ondemand``, once until it next starts a child (a pool
kept full counts it at most once in its life); "max listen queue" is the largest listen queue seen at
its once-a-second checks since it started."""
_STATUS_FIELDS = ("accepted conn", "listen queue", "max listen queue", "listen queue len", "idle processes",
                  "active processes", "total processes", "max active processes", "max children reached",
                  "slow requests")

# -- php-fpm.conf -----------------------------------------------------------------------------------

@public
@dataclass(frozen=True)
class FpmSettings:
    """What pounder sets in a pool (php-fpm's own names in the comments). ``pm = static`` when
    ``start_servers``, ``min_spare`` and ``max_spare`` are all None, ``dynamic`` otherwise.
    ``env``: ``env[NAME] = "VALUE"`` lines. ``user``: the workers' user when the pool file has none
    (needed as root; None writes nothing)."""

    max_children: int = 2               # pm.max_children
    start_servers: int | None = None    # pm.start_servers
    min_spare: int | None = None        # pm.min_spare_servers
    max_spare: int | None = None        # pm.max_spare_servers
    max_requests: int = 0               # pm.max_requests (0: unlimited)
    env: Mapping[str, str] = field(default_factory=dict)
    user: str | None = None

    @property
    def pm(self) -> str:
        return "static" if (self.start_servers, self.min_spare, self.max_spare) == (None, None, None) else "dynamic"

    def validate(self) -> None:
        """Raise :class:`~pounder.UsageError` for values php-fpm would refuse."""
        if self.max_children < 1:
            raise UsageError(f"php-fpm: pm.max_children must be at least 1, not {self.max_children}")
        if self.max_requests < 0:
            raise UsageError(f"php-fpm: pm.max_requests must not be negative, not {self.max_requests}")
        if self.pm == "dynamic":
            if None in (self.start_servers, self.min_spare, self.max_spare):
                raise UsageError("php-fpm: pm = dynamic needs pm.start_servers, pm.min_spare_servers and "
                                 "pm.max_spare_servers")
            start, low, high = self.start_servers or 0, self.min_spare or 0, self.max_spare or 0
            if not 1 <= low <= high <= self.max_children:
                raise UsageError(f"php-fpm: needs 1 <= pm.min_spare_servers ({low}) <= pm.max_spare_servers ({high}) "
                                 f"<= pm.max_children ({self.max_children})")
            if not low <= start <= high:
                raise UsageError(f"php-fpm: pm.start_servers ({start}) must be between pm.min_spare_servers ({low}) "
                                 f"and pm.max_spare_servers ({high})")
        for name, value in self.env.items():
            if not _ENV_NAME.match(name):
                raise UsageError(f"php-fpm: bad environment variable name {name!r}")
            if any(c in value for c in '"\n$\\'):
                raise UsageError(f"php-fpm: the value of {name} cannot be written in a pool file "
                                 "(it holds a quote, a backslash, a $ or a newline)")

    def lines(self) -> list[str]:
        """The pool settings, in php-fpm's syntax."""
        out = [f"pm = {self.pm}", f"pm.max_children = {self.max_children}"]
        if self.pm == "dynamic":
            out += [f"pm.start_servers = {self.start_servers}", f"pm.min_spare_servers = {self.min_spare}",
                    f"pm.max_spare_servers = {self.max_spare}"]
        return out + [f"pm.max_requests = {self.max_requests}"]


def _fpm_path(path: Path) -> str:
    text = str(path)
    if any(c in text for c in '"\n$'):
        raise UsageError(f"php-fpm: unusable path {text!r} (contains a quote, a $ or a newline)")
    return f'"{text}"'


@public
def render_fpm_conf(settings: FpmSettings, *, workdir: Path, port: int, host: str = HOST, user_conf: str,
                    user_conf_name: str = "the pool file") -> str:
    """The complete php-fpm.conf of a private pool in ``workdir`` listening for FastCGI on
    ``host``:``port`` (a pure function): pounder's ``[global]``, then the user's pool file
    (``user_conf``) line for line with the :data:`OWNED_SETTINGS` commented out, then pounder's
    settings: ``listen``, ``settings.lines()``, ``catch_workers_output = yes``, the status path
    when the pool has none, ``user`` when needed, ``env[...]``."""
    settings.validate()
    pool = parse_pool_conf(user_conf, source=user_conf_name)
    kept = []
    for line in user_conf.splitlines():
        key = None if _SECTION.match(line) else _key(line)
        kept.append(f"; set by pounder: {key}" if key in OWNED_SETTINGS else line)
    name = " ".join(user_conf_name.split())
    out = [
        "; A private php-fpm pool written by pounder.",
        "[global]",
        f"pid = {_fpm_path(workdir / 'run' / 'php-fpm.pid')}",
        f"error_log = {_fpm_path(workdir / 'logs' / 'error.log')}",
        "log_level = notice",
        "daemonize = no",
        f"{USER_PART_MARK} {name} (the settings pounder owns are set at its end):",
        *kept,
        "",
        "; set by pounder:",
        f"listen = {host}:{port}",
        *settings.lines(),
        "catch_workers_output = yes",
    ]
    if pool.status_path is None:
        out.append(f"pm.status_path = {STATUS_PATH}")
    if pool.user is None and settings.user is not None:
        out.append(f"user = {settings.user}")
    out += [f'env[{key}] = "{value}"' for key, value in settings.env.items()]
    return "\n".join(out) + "\n"


def user_conf_first_line(generated: str) -> int | None:
    """The line of a generated php-fpm.conf that holds the user's first line (1-based)."""
    return next((i + 2 for i, text in enumerate(generated.split("\n")) if text.startswith(USER_PART_MARK)), None)


# -- finding the programs ---------------------------------------------------------------------------

@public
def find_php_fpm() -> str | None:
    """The php-fpm binary (``php-fpm`` or the newest ``php-fpmX.Y``), on PATH or in /usr/sbin."""
    path = os.environ.get("PATH", "") + ":" + _SBIN
    for name in _FPM_NAMES:
        found = shutil.which(name, path=path)
        if found:
            return found
    versions = sorted(glob.glob("/usr/sbin/php-fpm[0-9]*"), reverse=True)
    return versions[0] if versions else None


@public
def phpfpm_missing() -> str | None:
    """Why php-fpm and its nginx front cannot run here, or None if they can."""
    if find_php_fpm() is None:
        return "php-fpm is not installed (Debian: apt-get install php-fpm)"
    if find_nginx() is None:
        return "nginx is not installed (pounder's front for php-fpm; Debian: apt-get install nginx-light)"
    return None


def _root_user(pool: PoolFile) -> tuple[str, str] | None:
    """(user, group) of the workers when this process is root: the pool's ``user`` (or
    ``www-data``) and its primary group; None when not root or the user is unknown."""
    if os.geteuid() != 0:
        return None
    name = pool.user or DEFAULT_USER
    try:
        entry = pwd.getpwnam(name)
        return name, grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        return None


@public
def check_pool_conf(conf: str | os.PathLike[str], binary: str | None = None) -> None:
    """Let php-fpm test the user's pool file as pounder would run it (``php-fpm -t`` on a private
    copy in a temporary directory; nothing is started): a :class:`~pounder.UsageError` with
    php-fpm's own words, its line numbers the user's file's, when it refuses it."""
    text = read_pool_conf(conf)
    pool = parse_pool_conf(text, source=str(conf))
    check_status_path(pool.status_path or STATUS_PATH)
    user = _root_user(pool)
    binary = binary or find_php_fpm() or "php-fpm"
    with tempfile.TemporaryDirectory(prefix="pounder-fpm-check-") as temp:
        workdir = Path(temp)
        (workdir / "logs").mkdir()
        (workdir / "run").mkdir()
        settings = FpmSettings(max_children=1, user=None if user is None else user[0])
        generated = render_fpm_conf(settings, workdir=workdir, port=9, user_conf=text, user_conf_name=str(conf))
        conf_path = workdir / "php-fpm.conf"
        conf_path.write_text(generated, encoding="utf-8", errors="surrogateescape")
        try:
            done = subprocess.run([binary, "-t", "-y", str(conf_path)], stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise UsageError(f"php-fpm: cannot test {conf} with {binary}: {error}") from None
        if done.returncode == 0:
            return
        said = (done.stdout + done.stderr).decode("utf-8", "replace").splitlines()
        errors = [line for line in said if re.search(r"ERROR|ALERT|syntax|PHP", line)
                  and "initialization failed" not in line and "failed to load configuration" not in line
                  and "failed to post process" not in line]
        first = (errors or said or [f"php-fpm -t exited with status {done.returncode}"])[0]
        words = user_words(first, conf_path, Path(conf), user_conf_first_line(generated) or 0, len(text.splitlines()))
        words = re.sub(r"^\[[^]]*\] ", "", words).strip()  # php-fpm's time stamp
        if re.search(r" in Unknown on line \d+$", words):  # php-fpm parses line by line: its number is no help
            line = _syntax_error_line(Path(conf))
            where = f" on line {line} of {conf}" if line is not None else ""
            words = re.sub(r" in Unknown on line \d+$", where, words)
        raise UsageError(f"php-fpm refuses {conf}: {words}")


_FIND_SYNTAX_ERROR = ('$n = 0; foreach (file($argv[1]) as $line) { $n++; '
                      'if (@parse_ini_string($line) === false) { echo $n; exit; } }')


def _syntax_error_line(conf: Path) -> int | None:
    """The first line of ``conf`` PHP's INI parser refuses on its own (as php-fpm reads it), by
    the PHP command line; None without one or without ``php``."""
    php = shutil.which("php")
    if php is None:
        return None
    try:
        done = subprocess.run([php, "-n", "-r", _FIND_SYNTAX_ERROR, str(conf)], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = done.stdout.decode("ascii", "replace").strip()
    return int(found) if found.isdigit() else None


def user_words(line: str, generated: Path, user: Path, first: int, count: int) -> str:
    """A php-fpm message naming a line of the ``generated`` php-fpm.conf (``[FILE:N]`` or ``FILE
    on line N``) named as the user's file's line when it came from it (the user's ``count``
    lines begin at line ``first``)."""
    def own(number: int) -> tuple[str, int] | None:
        return (str(user), number - first + 1) if first <= number < first + count else None

    def bracket(match: re.Match[str]) -> str:
        mapped = own(int(match.group(1)))
        return f"[{mapped[0]}:{mapped[1]}]" if mapped else f"[the php-fpm.conf pounder wrote, line {match.group(1)}]"

    def online(match: re.Match[str]) -> str:
        mapped = own(int(match.group(1)))
        if mapped is None:
            return f"the php-fpm.conf pounder wrote on line {match.group(1)}"
        return f"{mapped[0]} on line {mapped[1]}"

    path = re.escape(str(generated))
    line = re.sub(rf"\[{path}:(\d+)\]", bracket, line)
    return re.sub(rf"{path} on line (\d+)", online, line)


# -- the status page --------------------------------------------------------------------------------

@public
def fpm_status(url: str, timeout_s: float = 5.0) -> dict[str, Any]:
    """php-fpm's status page at ``url`` (its ``pm.status_path`` through the front) read as JSON
    (``?json``): ``accepted conn``, ``listen queue``, ``max listen queue``, ``listen queue len``,
    ``idle processes``, ``active processes``, ``total processes``, ``max active processes``,
    ``max children reached``, ``slow requests`` (ints), ``pool``, ``process manager``... as
    php-fpm names them. Note: the read is a request too: it counts in ``accepted conn`` (this
    read included) and keeps one worker active while it is served."""
    with urllib.request.urlopen(url + "?json", timeout=timeout_s) as response:
        data: dict[str, Any] = json.loads(response.read().decode("utf-8", "replace"))
    for name in _STATUS_FIELDS:
        if name in data:
            data[name] = int(data[name])
    return data


# -- the servers -------------------------------------------------------------------------------------

@public
class PhpFpmServer(ManagedServer):
    """A private php-fpm pool from the user's pool file ``conf`` (read again at every start) with
    the settings pounder owns replaced (see :func:`render_fpm_conf`), behind an nginx front serving
    ``root`` (the PHP scripts' document root). A fixed pool (``pm = static``, ``max_children``
    workers) unless ``start_servers``, ``min_spare`` and ``max_spare`` are given (``pm =
    dynamic``). ``env``: set in the workers' environment (``env[NAME]``) and the master's.
    ``status_url``: the status page (:func:`fpm_status`, :meth:`status`). As root the workers run
    as the pool's ``user`` (default ``www-data``), who must reach ``root``."""

    kind = "php-fpm"

    def __init__(self, workdir: str | os.PathLike[str] | None, conf: str | os.PathLike[str], *,
                 root: str | os.PathLike[str], max_children: int = 2, start_servers: int | None = None,
                 min_spare: int | None = None, max_spare: int | None = None, max_requests: int = 0,
                 env: Mapping[str, str] | None = None, keepalive: bool = False, binary: str | None = None,
                 nginx: str | None = None, ready_path: str = "/", stop_timeout_s: float = 10.0,
                 die_with_parent: bool = True, cpus: Collection[int] | None = None, host: str = HOST) -> None:
        self.conf = Path(conf).resolve()
        pool = parse_pool_conf(read_pool_conf(self.conf), source=str(self.conf))  # bad input before a workdir
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise UsageError(f"php-fpm: the document root {root} is not a directory")
        user = _root_user(pool)
        if os.geteuid() == 0 and user is None:
            raise UsageError(f"php-fpm: no such user {pool.user or DEFAULT_USER!r} to run the workers as")
        self.settings = FpmSettings(max_children=max_children, start_servers=start_servers, min_spare=min_spare,
                                    max_spare=max_spare, max_requests=max_requests, env=dict(env or {}),
                                    user=None if user is None else user[0])
        self.settings.validate()
        self.status_path = check_status_path(pool.status_path or STATUS_PATH)
        super().__init__(workdir, ready_path=ready_path, stop_timeout_s=stop_timeout_s,
                         die_with_parent=die_with_parent, cpus=cpus, host=host)
        self.binary = binary or find_php_fpm() or "php-fpm"
        self.front = NginxFront(self.workdir / "front", root=self.root, status_path=self.status_path,
                                keepalive=keepalive, user=user, binary=nginx, stop_timeout_s=stop_timeout_s,
                                die_with_parent=die_with_parent, cpus=cpus, host=host)
        """The nginx front (its own process group; never among the pool's processes)."""
        self._user = user
        self._start_timeout_s = 30.0

    @property
    def conf_path(self) -> Path:
        return self.workdir / "php-fpm.conf"

    @property
    def status_url(self) -> str:
        return self.url + self.status_path

    def status(self) -> dict[str, Any]:
        """The pool's status page (:func:`fpm_status`)."""
        return fpm_status(self.status_url)

    def status_counters(self) -> dict[str, int] | None:
        """php-fpm's own counters on its status page, read now (:data:`COUNTERS`; None when the
        page does not answer within 5 s, e.g. behind a long listen queue). The read is a request
        too: it counts in ``accepted conn`` (see :func:`fpm_status`)."""
        try:
            status = self.status()
        except (OSError, ValueError):  # URLError, a timeout, no JSON
            return None
        return {name: int(status[name]) for name in COUNTERS if name in status}

    @property
    def front_pid(self) -> int | None:
        return self.front.pid if self.front.running else None

    def _http_port(self) -> int:
        return self.front.port if self.front._port is not None else self.port

    def _environment(self) -> Mapping[str, str]:
        return {**os.environ, **self.settings.env}

    def _expected_children(self) -> int:
        if self.settings.pm == "static":
            return self.settings.max_children
        return self.settings.start_servers or 0

    def _log_files(self) -> list[Path]:
        return [self.error_log, self.console_log, self.front.error_log, self.front.console_log]

    def _user_words(self, line: str) -> str:
        try:
            generated = self.conf_path.read_text(encoding="utf-8", errors="surrogateescape")
            count = len(self.conf.read_text(encoding="utf-8", errors="surrogateescape").splitlines())
        except OSError:
            return line
        return user_words(line, self.conf_path, self.conf, user_conf_first_line(generated) or 0, count)

    def _check_startable(self) -> None:
        if self._user is None:
            return
        blocked = _unreachable_for(self._user[0], self.root)
        if blocked is not None:
            raise ServerStartError(
                f"php-fpm: its workers run as {self._user[0]}, who cannot enter {blocked} "
                f"(mode {stat.S_IMODE(blocked.stat().st_mode):04o}) on the way to the document root {self.root}; "
                "put the scripts where that user can reach them")

    def start(self, timeout_s: float = 30.0) -> PhpFpmServer:
        """Start the front, then the pool (see :meth:`ManagedServer.start`); both are stopped if
        either fails."""
        self._start_timeout_s = timeout_s
        try:
            return super().start(timeout_s)
        except BaseException:
            self.stop(2.0)
            raise

    def _prepare(self, port: int) -> list[str]:
        self.conf_path.write_text(
            render_fpm_conf(self.settings, workdir=self.workdir, port=port, host=self.host,
                            user_conf=read_pool_conf(self.conf), user_conf_name=str(self.conf)),
            encoding="utf-8", errors="surrogateescape")
        self.front.stop()  # a second attempt (the port was taken) starts it again for the new port
        self.front.fastcgi = (self.host, port)
        self.front.start(self._start_timeout_s)
        return [self.binary, "-F", "-y", str(self.conf_path)]

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the front, then the pool (see :meth:`ManagedServer.stop`); the front also when the
        pool failed or was never started."""
        try:
            front = getattr(self, "front", None)
            if front is not None:
                front.stop(timeout_s)
        finally:
            super().stop(timeout_s)
