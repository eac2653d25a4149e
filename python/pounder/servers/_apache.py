"""Apache 2.4 with the prefork MPM (and mod_perl 2 when Perl is used), from a complete private
httpd.conf: own pid file, run directory and logs in the workdir, ``Listen HOST:PORT`` (127.0.0.1 by
default); nothing is written under the user's configuration directory (/etc/apache2 included).

The server runs as ``apache2 -f CONF -k start -D FOREGROUND``: the parent stays our child process
instead of daemonizing (so it is in our hands, see :mod:`pounder.servers._base`). It is stopped
with ``apache2 -f CONF -k stop`` (SIGTERM to the pid in the pid file; mod_perl does not run
startup.pl in that process), or SIGTERM directly if that fails; then the base class's checks.

The user's own configuration file (``ApacheServer(conf=...)``: their mod_perl set-up, handlers,
``<Location>`` blocks... or Debian's whole apache2.conf) is read with everything it includes and
Debian's envvars (``_apache_layout``), made private (``_apache_private``: sites moved to pounder's
port, logs into the workdir) and added to that httpd.conf after pounder's part, minus the
directives pounder sets itself (``strip_owned_directives``: Listen, PidFile, the MPM and its
sizes...). Its relative paths resolve against its ServerRoot (default: its own directory).
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import urllib.request
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pounder._errors import UsageError, public
from pounder.servers._apache_layout import ConfLine, Layout, read_layout
from pounder.servers._apache_private import PrivateCopy, default_user, private_copy, private_env
from pounder.servers._base import HOST, ManagedServer, ServerStartError
from pounder.servers._nytprof import apache_nytprof_lines

MODULE_DIRS = ("/usr/lib/apache2/modules", "/usr/lib64/httpd/modules", "/usr/lib/httpd/modules")
BINARIES = ("apache2", "httpd")
DEFAULT_USER = "www-data"
_PERL_PACKAGE = re.compile(r"^[A-Za-z_]\w*(?:::\w+)*$")
_LOCATION = re.compile(r"^/[^\s\"<>]*$")
OWNED_DIRECTIVES = frozenset(name.lower() for name in (
    "Listen", "PidFile", "ErrorLog", "ServerRoot", "DefaultRuntimeDir", "User", "Group", "ServerName",
    "StartServers", "MinSpareServers", "MaxSpareServers", "MaxRequestWorkers", "MaxClients", "ServerLimit",
    "MaxConnectionsPerChild", "MaxRequestsPerChild", "KeepAlive", "MaxKeepAliveRequests", "KeepAliveTimeout",
    "Timeout", "Mutex", "ScoreBoardFile", "LockFile",
    # the threaded MPMs' own (Debian's mods-enabled/mpm_event.conf): unknown to prefork, a syntax error
    "ThreadsPerChild", "ThreadLimit", "MinSpareThreads", "MaxSpareThreads", "ThreadStackSize",
    "AsyncRequestWorkerFactor"))
"""Directives (lower case) that a private instance sets itself: removed from the user's file."""
_INCLUDES = frozenset({"include", "includeoptional"})
USER_PART_MARK = "# From"
"""Begins the comment line after which the user's own configuration is copied, line for line."""


@public
@dataclass(frozen=True)
class ApacheSettings:
    """What can be tuned or chosen in a private Apache prefork instance (Apache's own names in
    the comments). ``user``/``group``: the children's ``User``/``Group`` (needed when started as
    root; ``None`` writes no directive)."""

    start_servers: int = 2              # StartServers
    min_spare: int = 1                  # MinSpareServers
    max_spare: int = 4                  # MaxSpareServers
    max_request_workers: int = 8        # MaxRequestWorkers (and ServerLimit)
    max_connections_per_child: int = 0  # MaxConnectionsPerChild (0: unlimited)
    keepalive: bool = True              # KeepAlive
    max_keepalive_requests: int = 100   # MaxKeepAliveRequests (0: unlimited)
    keepalive_timeout_s: int = 5        # KeepAliveTimeout
    server_status: bool = True          # /server-status with ExtendedStatus On
    perl_handlers: Mapping[str, str] = field(default_factory=dict)  # <Location> -> PerlResponseHandler
    extra_conf: str = ""                # appended verbatim
    user: str | None = None
    group: str | None = None
    profile_dir: Path | None = None     # Devel::NYTProf + pounder's window, profiling into it (pounder profile)

    def validate(self) -> None:
        """Raise :class:`~pounder.UsageError` for values Apache would refuse or silently change."""
        for name in ("start_servers", "min_spare", "max_spare", "max_request_workers"):
            if getattr(self, name) < 1:
                raise UsageError(f"apache: {name} must be at least 1, not {getattr(self, name)}")
        for name in ("max_connections_per_child", "max_keepalive_requests", "keepalive_timeout_s"):
            if getattr(self, name) < 0:
                raise UsageError(f"apache: {name} must not be negative, not {getattr(self, name)}")
        if self.start_servers > self.max_request_workers:
            raise UsageError(f"apache: start_servers ({self.start_servers}) must not be more than "
                             f"max_request_workers ({self.max_request_workers})")
        if self.max_spare <= self.min_spare:
            raise UsageError(f"apache: max_spare ({self.max_spare}) must be more than min_spare ({self.min_spare}); "
                             "Apache would raise it to min_spare + 1")
        for location, package in self.perl_handlers.items():
            if not _LOCATION.match(location):
                raise UsageError(f"apache: bad location {location!r} (a path starting with /, no spaces or quotes)")
            if not _PERL_PACKAGE.match(package):
                raise UsageError(f"apache: bad Perl package name {package!r}")


def _quoted(path: Path) -> str:
    text = str(path)
    if '"' in text or "\n" in text:
        raise UsageError(f"apache: unusable path {text!r} (contains a quote or newline)")
    return f'"{text}"'


def _logical_lines(text: str) -> list[list[str]]:
    """``text``'s physical lines (with their line ends) grouped into directives: a line whose
    last non-blank character is a backslash continues on the next line (as Apache reads it)."""
    groups: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines(keepends=True):
        current.append(line)
        if not line.rstrip().endswith("\\"):
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


@public
def strip_owned_directives(conf_text: str, *, source: str = "the configuration",
                           keep_lines: bool = False) -> tuple[str, list[str]]:
    """Remove from an Apache configuration the directives a private pounder instance sets itself
    (a pure function): ``OWNED_DIRECTIVES`` (Listen, PidFile, ErrorLog, ServerRoot, User, the
    prefork sizes, KeepAlive...; case-insensitive, wherever they are, also inside containers, but
    a site's own ``ServerName`` inside its ``<VirtualHost>``) and ``LoadModule mpm_*`` (a second
    MPM is fatal). Returns the remaining text (everything else
    unchanged: comments, other LoadModule lines, Perl* directives, containers...) and the removed
    directives, stripped (a continued one on one line). ``Include``/``IncludeOptional`` raise
    :class:`~pounder.UsageError` (``source`` names the file in the message): pounder takes one
    self-contained file. A ``LoadModule`` of a module pounder loads too is harmless: Apache 2.4
    warns "module X is already loaded, skipping" (AH01574) and goes on. ``keep_lines``: each
    removed line becomes a comment, so every other line keeps its number (Apache's messages
    name lines)."""
    kept: list[str] = []
    removed: list[str] = []
    sites = 0  # inside a <VirtualHost>
    for group in _logical_lines(conf_text):
        words = " ".join(line.strip().removesuffix("\\").strip() for line in group).split()
        directive = words[0].lower() if words else ""
        sites += (directive == "<virtualhost") - (directive == "</virtualhost>")
        if directive == "servername" and sites > 0:
            directive = ""
        if directive in _INCLUDES:
            raise UsageError(f"apache: {source} uses {' '.join(words)}: give pounder one self-contained file "
                             "(Include and IncludeOptional are not followed)")
        if directive in OWNED_DIRECTIVES or (
                directive == "loadmodule" and len(words) > 1 and words[1].lower().startswith("mpm_")):
            removed.append(" ".join(words))
            if keep_lines:
                kept += [f"# set by pounder: {words[0]}\n"] + ["#\n"] * (len(group) - 1)
        else:
            kept.extend(group)
    return "".join(kept), removed


def apache_paths(workdir: Path) -> dict[str, Path]:
    """Where a private instance in ``workdir`` keeps its files."""
    return {"conf": workdir / "httpd.conf", "pidfile": workdir / "run" / "apache.pid", "logs": workdir / "logs",
            "error_log": workdir / "logs" / "error.log", "lock": workdir / "run" / "lock",
            "docroot": workdir / "htdocs",
            "perl_lib": workdir / "lib", "startup_pl": workdir / "startup.pl", "run": workdir / "run"}


@public
def render_apache_conf(settings: ApacheSettings, *, workdir: Path, port: int, modules_dir: Path, host: str = HOST,
                       startup_pl: bool = False, server_root: Path | None = None, user_conf: str = "",
                       user_conf_name: str = "the configuration") -> str:
    """The complete httpd.conf of a private prefork instance in ``workdir`` on ``host``:``port``
    (a pure function). mod_perl is loaded when there are Perl handlers or a startup.pl (which is
    expected at ``workdir/startup.pl``); ``workdir/lib`` is on Perl's @INC.

    ``user_conf``: the text of the user's own configuration file (``user_conf_name``, for error
    messages), added after pounder's part and before ``settings.extra_conf`` without the
    directives pounder sets (see :func:`strip_owned_directives`). ``server_root``: the
    ``ServerRoot``, against which Apache resolves relative paths (default: ``workdir``); every
    path pounder writes itself is absolute."""
    settings.validate()
    user_text, _removed = strip_owned_directives(user_conf, source=user_conf_name, keep_lines=True)
    paths = apache_paths(workdir)
    perl = startup_pl or bool(settings.perl_handlers) or settings.profile_dir is not None
    if perl and any(c.isspace() for c in str(paths["perl_lib"])):
        raise UsageError(f"apache: the Perl library path {paths['perl_lib']} must not contain spaces (PerlSwitches)")
    modules = ["mpm_prefork", "authz_core", "mime", "dir"]
    modules += ["status"] * settings.server_status + ["perl"] * perl
    out = [
        "# A private Apache prefork instance written by pounder.",
        f"ServerRoot {_quoted(workdir if server_root is None else server_root)}",
        f"DefaultRuntimeDir {_quoted(paths['run'])}",
        f"PidFile {_quoted(paths['pidfile'])}",
        f"ErrorLog {_quoted(paths['error_log'])}",
        "LogLevel warn",
        f"Listen {host}:{port}",
        "ServerName localhost",
    ]
    if settings.user is not None:
        out.append(f"User {settings.user}")
    if settings.group is not None:
        out.append(f"Group {settings.group}")
    out.append("")
    out += [f"LoadModule {name}_module {_quoted(modules_dir / f'mod_{name}.so')}" for name in modules]
    out += [
        "",
        "TypesConfig /etc/mime.types",
        f"DocumentRoot {_quoted(paths['docroot'])}",
        "DirectoryIndex index.html",
        "<Directory />",
        "    AllowOverride None",
        "    Require all denied",
        "</Directory>",
        f"<Directory {_quoted(paths['docroot'])}>",
        "    Require all granted",
        "</Directory>",
        "",
        f"StartServers {settings.start_servers}",
        f"MinSpareServers {settings.min_spare}",
        f"MaxSpareServers {settings.max_spare}",
        f"ServerLimit {settings.max_request_workers}",
        f"MaxRequestWorkers {settings.max_request_workers}",
        f"MaxConnectionsPerChild {settings.max_connections_per_child}",
        f"KeepAlive {'On' if settings.keepalive else 'Off'}",
        f"MaxKeepAliveRequests {settings.max_keepalive_requests}",
        f"KeepAliveTimeout {settings.keepalive_timeout_s}",
        "Timeout 60",
    ]
    if perl:
        out += ["", f"PerlSwitches -I{paths['perl_lib']}"]
        if settings.profile_dir is not None:  # before the application's code: compiled later, it is profiled
            out += apache_nytprof_lines(settings.profile_dir)
        if startup_pl:
            out.append(f"PerlRequire {_quoted(paths['startup_pl'])}")
        for location, package in settings.perl_handlers.items():
            out += [f"<Location {location}>", "    SetHandler modperl", f"    PerlResponseHandler {package}",
                    "</Location>"]
    if settings.server_status:
        out += ["", "ExtendedStatus On", "<Location /server-status>", "    SetHandler server-status",
                "    Require all granted", "</Location>"]
    if user_text.strip():
        name = " ".join(user_conf_name.split())  # one comment line
        out += ["", f"{USER_PART_MARK} {name} (without the directives set above by pounder):",
                user_text.rstrip("\n")]
    if settings.extra_conf:
        out += ["", settings.extra_conf.rstrip("\n")]
    return "\n".join(out) + "\n"


@public
def apache_command(conf: Path, binary: str = "/usr/sbin/apache2") -> list[str]:
    """The command line that runs the instance of ``conf`` in the foreground."""
    return [binary, "-f", str(conf), "-k", "start", "-D", "FOREGROUND"]


@public
def find_apache() -> tuple[str, Path] | None:
    """``(binary, modules_dir)`` of an installed Apache with the prefork MPM, or None."""
    binary = next((b for b in (shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
                               for name in BINARIES) if b), None)
    modules = next((Path(d) for d in MODULE_DIRS if (Path(d) / "mod_mpm_prefork.so").exists()), None)
    return (binary, modules) if binary and modules else None


@public
def apache_missing(perl: bool = True) -> str | None:
    """Why a private Apache (with mod_perl if ``perl``) cannot run here, or None if it can."""
    found = find_apache()
    if found is None:
        return "Apache with the prefork MPM is not installed (Debian: apt-get install apache2)"
    if perl and not (found[1] / "mod_perl.so").exists():
        return f"mod_perl is not installed (no mod_perl.so in {found[1]}; Debian: libapache2-mod-perl2)"
    return None


def _unreachable_for(user: str, path: Path) -> Path | None:
    """The first directory on the way to ``path`` that ``user`` cannot enter (mode bits only)."""
    entry = pwd.getpwnam(user)
    gids = {entry.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}
    existing = path
    while not existing.exists():
        existing = existing.parent
    for directory in [*reversed(existing.parents), existing]:
        st = directory.stat()
        if entry.pw_uid == 0 or st.st_uid == entry.pw_uid:
            ok = bool(st.st_mode & stat.S_IXUSR)
        elif st.st_gid in gids:
            ok = bool(st.st_mode & stat.S_IXGRP)
        else:
            ok = bool(st.st_mode & stat.S_IXOTH)
        if not ok:
            return directory
    return None


@public
def read_user_conf(path: Path) -> str:
    """The user's configuration file with everything it includes (Debian's layout: see
    ``_apache_layout``), checked as its private copy would be (a module that cannot be loaded, a
    certificate that cannot be read: :class:`~pounder.UsageError` with its file and line; also
    when it cannot be read). Apache reads bytes: a Latin-1 comment is fine, and is written back
    unchanged (surrogate escapes)."""
    return user_layout(path)[0].text


def user_layout(path: Path, workdir: Path | None = None, port: int = 0) -> tuple[Layout, PrivateCopy]:
    """``path`` read with its includes (run-time places in ``workdir``, or in a stand-in that
    nothing writes to) and its private copy for ``port``."""
    where = workdir if workdir is not None else Path("/nonexistent/pounder-workdir")
    layout = read_layout(path, overrides=private_env(where))
    copy = private_copy(layout, port=port, logs=apache_paths(where)["logs"])
    strip_owned_directives(copy.text, source=str(path))
    return layout, copy


@public
def apache_notes(path: Path) -> tuple[str, ...]:
    """What the private copy of ``path`` leaves out or does not open, one line each with its file
    and line; and the MPM it replaces."""
    _layout, copy = user_layout(path)
    mpm = (f"{copy.other_mpm} replaced by mpm_prefork, whose children pounder sizes",) if copy.other_mpm else ()
    return (*mpm, *copy.notes)


@public
def debian_layout(path: Path) -> tuple[bool, str | None]:
    """Whether ``path`` is laid out as Debian's apache2 package does (envvars, mods-available),
    and the other MPM it loads (``mpm_event``...; None: prefork)."""
    layout, copy = user_layout(path)
    return layout.debian, copy.other_mpm


@public
class ApacheServer(ManagedServer):
    """A private Apache prefork (+ mod_perl) instance.

    ``startup_pl``: Perl source written to ``workdir/startup.pl`` and loaded in the parent with
    ``PerlRequire``. ``perl_handlers``: ``{"/hello": "PounderTest::Hello"}``. ``perl_lib``: a
    directory copied to ``workdir/lib`` (on @INC). ``user``: the children's user when started as
    root (default www-data; its primary group is the Group); the workdir must be reachable by it.

    ``conf``: the user's own configuration file with what it includes (Debian's apache2.conf
    too), added to the private httpd.conf after pounder's part as its private copy, without the
    directives pounder sets (see :func:`strip_owned_directives`; it may load mod_perl itself with
    ``LoadModule perl_module``); it is read again at every start. ``server_root``: the
    ServerRoot, against which Apache and mod_perl resolve the relative paths of ``conf``
    (``PerlRequire startup.pl``; default: its ``ServerRoot`` line or its directory, or the workdir
    without ``conf``). Both directories must be reachable by ``user`` too; without ``user`` the
    children run as the ``User`` the configuration names (Debian's ``${APACHE_RUN_USER}``) when
    that user exists, else www-data.

    ``profile_dir``: load Devel::NYTProf (``start=no``) and pounder's window module
    (``Pounder::ProfileWindow``) before the application, profiling into that directory (made, and
    given to ``user``) while ``pounder.profile``'s NYTProf profiler opens a window.
    """

    kind = "apache"

    def __init__(self, workdir: str | os.PathLike[str] | None = None, *, startup_pl: str | None = None,
                 perl_handlers: Mapping[str, str] | None = None, perl_lib: str | os.PathLike[str] | None = None,
                 extra_conf: str = "", start_servers: int = 2, min_spare: int = 1, max_spare: int = 4,
                 max_request_workers: int = 8, max_connections_per_child: int = 0, keepalive: bool = True,
                 server_status: bool = True, user: str | None = None, binary: str | None = None,
                 modules_dir: str | os.PathLike[str] | None = None, conf: str | os.PathLike[str] | None = None,
                 server_root: str | os.PathLike[str] | None = None, ready_path: str = "/",
                 stop_timeout_s: float = 10.0, die_with_parent: bool = True,
                 cpus: Collection[int] | None = None, host: str = HOST,
                 profile_dir: str | os.PathLike[str] | None = None) -> None:
        self.conf = Path(conf).resolve() if conf is not None else None
        # refuse an unreadable or unusable file before making a workdir
        layout = user_layout(self.conf) if self.conf is not None else None
        self._origins: tuple[ConfLine, ...] = ()
        super().__init__(workdir, ready_path=ready_path, stop_timeout_s=stop_timeout_s,
                         die_with_parent=die_with_parent, cpus=cpus, host=host)
        group: str | None = None
        if os.geteuid() == 0:
            user, group = _children_user(user, layout[1] if layout is not None else None)
        else:
            user = None
        self.settings = ApacheSettings(
            start_servers=start_servers, min_spare=min_spare, max_spare=max_spare,
            max_request_workers=max_request_workers, max_connections_per_child=max_connections_per_child,
            keepalive=keepalive, server_status=server_status, perl_handlers=dict(perl_handlers or {}),
            extra_conf=extra_conf, user=user, group=group,
            profile_dir=None if profile_dir is None else Path(profile_dir).resolve())
        self.settings.validate()
        self.startup_pl = startup_pl
        self.perl_lib = Path(perl_lib) if perl_lib is not None else None
        found = find_apache()
        self._binary = binary or (found[0] if found else "/usr/sbin/apache2")
        self._modules_dir = Path(modules_dir).resolve() if modules_dir is not None else (
            found[1] if found else Path(MODULE_DIRS[0]))
        if server_root is not None:
            self.server_root = Path(server_root).resolve()
        else:
            self.server_root = layout[0].server_root if layout is not None else self.workdir

    @property
    def conf_path(self) -> Path:
        return apache_paths(self.workdir)["conf"]

    def _check_startable(self) -> None:
        user = self.settings.user
        if user is None:
            return
        places = [("the workdir", self.workdir, "use a workdir that user can reach (e.g. under /tmp)")]
        if self.conf is not None:
            places.append(("the configuration's directory", self.conf.parent,
                           "put the configuration (and what it uses) where that user can reach it"))
        if self.server_root not in [place[1] for place in places]:
            places.append(("the ServerRoot", self.server_root, "use a server_root that user can reach"))
        for what, path, advice in places:
            blocked = _unreachable_for(user, path)
            if blocked is not None:
                raise ServerStartError(
                    f"apache: its children run as {user}, who cannot enter {blocked} "
                    f"(mode {stat.S_IMODE(blocked.stat().st_mode):04o}) on the way to {what} {path}; {advice}")

    def _expected_children(self) -> int:
        return self.settings.start_servers

    def _prepare(self, port: int) -> list[str]:
        paths = apache_paths(self.workdir)
        for name in ("docroot", "run", "lock", "logs"):
            paths[name].mkdir(parents=True, exist_ok=True)
        user_text = ""
        if self.conf is not None:  # read again: the user may have changed it since
            copy = user_layout(self.conf, self.workdir, port)[1]
            self._origins, user_text = copy.lines, copy.text
        (paths["docroot"] / "index.html").write_text("pounder apache\n")
        if self.perl_lib is not None:
            shutil.copytree(self.perl_lib, paths["perl_lib"], dirs_exist_ok=True)
        else:
            paths["perl_lib"].mkdir(exist_ok=True)
        if self.startup_pl is not None:
            paths["startup_pl"].write_text(self.startup_pl)
        paths["conf"].write_text(render_apache_conf(self.settings, workdir=self.workdir, port=port, host=self.host,
                                                    modules_dir=self._modules_dir,
                                                    startup_pl=self.startup_pl is not None,
                                                    server_root=self.server_root, user_conf=user_text,
                                                    user_conf_name=str(self.conf or "the configuration")),
                                 encoding="utf-8", errors="surrogateescape")  # the user's bytes, as they were
        if self.settings.profile_dir is not None:
            self.settings.profile_dir.mkdir(parents=True, exist_ok=True)
        if self.settings.user is not None:
            _make_readable(self.workdir)
            if self.settings.profile_dir is not None:  # the children write their profiles there
                entry = pwd.getpwnam(self.settings.user)
                os.chown(self.settings.profile_dir, entry.pw_uid, entry.pw_gid)
        return apache_command(paths["conf"], self._binary)

    def _user_words(self, line: str) -> str:
        """Apache names lines of the generated httpd.conf ("Syntax error on line 57 of
        .../httpd.conf"), deleted with the server's directory: a line copied from the user's own
        files is named as the line of the file it was read from."""
        conf = str(self.conf_path)
        if self.conf is None or conf not in line:
            return line
        try:
            generated = self.conf_path.read_text(encoding="utf-8", errors="surrogateescape").split("\n")
        except OSError:
            return line
        first = next((i + 2 for i, text in enumerate(generated) if text.startswith(USER_PART_MARK)), None)
        if first is None:
            return line
        origins = self._origins

        def own(match: re.Match[str]) -> str:
            number = int(match.group(1))
            if first <= number < first + len(origins):
                origin = origins[number - first]
                return f"line {origin.number} of {origin.file}"
            return f"line {number} of the httpd.conf pounder wrote"

        return re.sub(rf"line (\d+) of {re.escape(conf)}", own, line)

    def _graceful_stop(self, pid: int) -> None:
        if self.read_pidfile() != pid:  # not written yet: -k stop would find nothing to stop
            os.kill(pid, signal.SIGTERM)
            return
        try:
            done = subprocess.run([self._binary, "-f", str(self.conf_path), "-k", "stop"], stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=10, check=False)
            if done.returncode == 0:
                return
        except (OSError, subprocess.TimeoutExpired):
            pass
        os.kill(pid, signal.SIGTERM)

    def status(self) -> dict[str, str]:
        """``/server-status?auto`` as a dict (``BusyWorkers``, ``IdleWorkers``, ``Scoreboard``...)."""
        with urllib.request.urlopen(f"{self.url}/server-status?auto", timeout=5) as response:
            text: str = response.read().decode("utf-8", "replace")
        return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def _children_user(user: str | None, copy: PrivateCopy | None) -> tuple[str, str]:
    """The children's User and Group when started as root: ``user`` (its primary group), else the
    configuration's own ``User``/``Group`` when they exist here, else www-data."""
    named, named_group = default_user(copy) if copy is not None and user is None else (None, None)
    if named is not None:
        try:
            pwd.getpwnam(named)
            user = named
            if named_group is not None:
                grp.getgrnam(named_group)
                return user, named_group
        except KeyError:
            pass
    user = user or DEFAULT_USER
    try:
        return user, grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name
    except KeyError:
        raise UsageError(f"apache: no such user {user!r} to run the children as") from None


def _make_readable(root: Path) -> None:
    """Let every user read ``root``'s files and enter its directories (a+rX)."""
    for directory, _dirs, files in os.walk(root):
        os.chmod(directory, stat.S_IMODE(os.stat(directory).st_mode) | 0o555)
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | 0o444)
