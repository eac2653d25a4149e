"""The httpd.conf of a private Apache instance: pounder's part (its own Listen, pid file, run
directory, logs, the prefork MPM's sizes) followed by the user's own configuration without the
directives pounder sets itself (:func:`strip_owned_directives`). Pure text, no process: the server
that runs it is :class:`pounder.servers._apache.ApacheServer`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pounder._errors import UsageError, public
from pounder.servers._base import HOST
from pounder.servers._nytprof import apache_nytprof_lines

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
