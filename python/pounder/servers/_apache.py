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
directives pounder sets itself (``_apache_conf``: Listen, PidFile, the MPM and its
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
from pathlib import Path

from pounder._errors import UsageError, public
from pounder.servers._apache_conf import (
    USER_PART_MARK,
    ApacheSettings,
    apache_paths,
    render_apache_conf,
    strip_owned_directives,
)
from pounder.servers._apache_layout import ConfLine, Layout, read_layout
from pounder.servers._apache_private import PrivateCopy, default_user, private_copy, private_env
from pounder.servers._base import HOST, ManagedServer
from pounder.servers._failure import ServerStartError

MODULE_DIRS = ("/usr/lib/apache2/modules", "/usr/lib64/httpd/modules", "/usr/lib/httpd/modules")
BINARIES = ("apache2", "httpd")
DEFAULT_USER = "www-data"



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
