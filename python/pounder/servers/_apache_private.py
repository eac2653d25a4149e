"""The private copy of a user's Apache configuration (a flattened :class:`Layout`): the user's
modules, sites and handlers kept, what a private instance must own taken over (a pure function).

- Debian's run-time places (``${APACHE_RUN_DIR}``, ``${APACHE_LOCK_DIR}``, ``${APACHE_LOG_DIR}``,
  ``${APACHE_PID_FILE}``) are the workdir's (:func:`private_env`, substituted when the layout is read).
- Every ``Listen`` gives way to pounder's one (``127.0.0.1:PORT``, plain HTTP); a ``<VirtualHost>``
  on a port the user's configuration served plain HTTP on (``*:80``...) is moved to that port
  (``*:PORT``), one on another port (``*:443``) cannot receive pounder's requests and is left out
  with a note (its certificates are then not needed).
- ``CustomLog``/``TransferLog`` write into the workdir's ``logs`` (a piped logger too: its program
  is not run); ``ErrorLog``, ``PidFile``, ``Mutex``, ``ScoreBoardFile``, the MPM and its
  directives, ``User``/``Group`` are set by pounder (``OWNED_DIRECTIVES``, stripped later).
- A ``LoadModule`` of a file that does not exist, or a certificate file of a site that is kept
  but cannot be read, is refused in one line with its file and line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pounder._errors import UsageError
from pounder.servers._apache_layout import OTHER_MPMS, ConfLine, Layout, conf_words, module_stem

_CERTIFICATES = frozenset({"sslcertificatefile", "sslcertificatekeyfile", "sslcertificatechainfile",
                           "sslcacertificatefile"})
_LOGS = frozenset({"customlog", "transferlog"})
_OWN_LOG_NAMES = frozenset({"error.log", "access.log"})


@dataclass(frozen=True)
class PrivateCopy:
    """The rewritten lines (each still naming where it was read), what was left out or changed
    that a user should know (one line each, with its file and line), the ``User``/``Group`` the
    configuration names and the other MPM it loads (``mpm_event``...; None: prefork or none)."""

    lines: tuple[ConfLine, ...]
    notes: tuple[str, ...]
    user: str | None = None
    group: str | None = None
    other_mpm: str | None = None

    @property
    def text(self) -> str:
        return "".join(f"{line.text}\n" for line in self.lines)


def private_env(workdir: Path) -> dict[str, str]:
    """Debian's envvars that name where a server writes, for a private instance in ``workdir``."""
    return {"APACHE_RUN_DIR": str(workdir / "run"), "APACHE_LOCK_DIR": str(workdir / "run" / "lock"),
            "APACHE_LOG_DIR": str(workdir / "logs"), "APACHE_PID_FILE": str(workdir / "run" / "apache.pid")}


def _groups(lines: tuple[ConfLine, ...]) -> Iterator[list[ConfLine]]:
    group: list[ConfLine] = []
    for line in lines:
        group.append(line)
        if not line.text.rstrip().endswith("\\"):
            yield group
            group = []
    if group:
        yield group


def _words(group: list[ConfLine]) -> list[str]:
    joined = " ".join(line.text.strip().removesuffix("\\").strip() for line in group)
    return [] if joined.startswith("#") else conf_words(joined)


def _port(spec: str) -> str:
    """The port of a Listen or VirtualHost address (``*:80``, ``[::1]:80``, ``80``; "*": any)."""
    spec = spec.rstrip(">")
    if spec.startswith("["):
        _host, _sep, rest = spec.partition("]")
        return rest.removeprefix(":") or "*"
    if ":" in spec:
        return spec.rsplit(":", 1)[1]
    return spec if spec.isdigit() else "*"


def served_ports(layout: Layout) -> tuple[set[str], list[str]]:
    """The ports the configuration serves plain HTTP on (its active ``Listen`` lines that are not
    HTTPS: no ``https`` protocol, not port 443; 80 when it has no Listen) and a note per Listen
    pounder's copy does not open."""
    plain: set[str] = set()
    other: list[str] = []
    for group in _groups(layout.lines):
        words = _words(group)
        if len(words) >= 2 and words[0].lower() == "listen" and group[0].active:
            port = _port(words[1])
            https = words[2].lower() == "https" if len(words) > 2 else port == "443"
            if https:
                other.append(f"{' '.join(words)} ({group[0].where}): HTTPS, not served privately")
            else:
                plain.add(port)
    return plain or {"80"}, other


def _vhost(words: list[str], served: set[str], port: int) -> tuple[list[str], list[str]]:
    """A <VirtualHost>'s addresses as the private copy has them, and those it cannot serve."""
    kept: list[str] = []
    lost: list[str] = []
    for spec in words[1:]:
        spec = spec.rstrip(">")
        if not spec:
            continue
        spec_port = _port(spec)
        if spec_port == "*":
            new = spec
        elif spec_port in served:
            new = f"*:{port}"
        else:
            lost.append(spec)
            continue
        if new not in kept:
            kept.append(new)
    return kept, lost


def _log_line(group: list[ConfLine], words: list[str], logs: Path, count: int) -> str:
    target = words[1]
    name = f"piped-{count}.log" if target.startswith("|") else (Path(target).name or f"custom-{count}.log")
    if name in _OWN_LOG_NAMES or target.startswith("syslog:"):
        name = f"custom-{name}"
    rest = " ".join(f'"{word}"' if any(c.isspace() for c in word) else word for word in words[2:])
    indent = group[0].text[: len(group[0].text) - len(group[0].text.lstrip())]
    return f'{indent}{words[0]} "{logs / name}" {rest}'.rstrip()


def private_copy(layout: Layout, *, port: int, logs: Path) -> PrivateCopy:
    """``layout``'s lines for a private instance on ``127.0.0.1:port`` logging into ``logs``
    (see the module's description); the directives pounder owns are stripped later
    (``strip_owned_directives``)."""
    served, notes = served_ports(layout)
    out: list[ConfLine] = []
    user = group_name = other_mpm = None
    dropping: ConfLine | None = None
    logs_seen = 0
    sites: list[ConfLine] = []
    for group in _groups(layout.lines):
        words = _words(group)
        name = words[0].lower() if words else ""
        first = group[0]
        if dropping is not None:
            out += [ConfLine(f"# left out by pounder: {line.text.strip()}", line.file, line.number) for line in group]
            if name == "</virtualhost>":
                dropping = None
            continue
        if not first.active or not words:
            out += group
            continue
        if name == "<virtualhost":
            kept, lost = _vhost(words, served, port)
            if not kept:
                notes.append(f"<VirtualHost {' '.join(lost)}> ({first.where}) left out: it does not serve "
                             f"pounder's plain HTTP requests (only a site on port {' or '.join(sorted(served))} does)")
                dropping = first
                out += [ConfLine(f"# left out by pounder: {line.text.strip()}", line.file, line.number)
                        for line in group]
                continue
            sites.append(first)
            indent = first.text[: len(first.text) - len(first.text.lstrip())]
            out.append(ConfLine(f"{indent}<VirtualHost {' '.join(kept)}>", first.file, first.number))
            out += [ConfLine("#", line.file, line.number) for line in group[1:]]
            continue
        if name in _LOGS and len(words) >= 2:
            logs_seen += 1
            out.append(ConfLine(_log_line(group, words, logs, logs_seen), first.file, first.number))
            out += [ConfLine("#", line.file, line.number) for line in group[1:]]
            continue
        if name == "loadmodule" and len(words) >= 3:
            stem = module_stem(words[1])
            if stem in OTHER_MPMS:
                other_mpm = stem
            elif not stem.startswith("mpm_"):
                _check_file(words[2], layout.server_root, first, "the private copy cannot load it")
        elif name in _CERTIFICATES and len(words) >= 2:
            _check_file(words[1], layout.server_root, first, "the site needs it to start")
        elif name == "user" and len(words) >= 2:
            user = words[1]
        elif name == "group" and len(words) >= 2:
            group_name = words[1]
        out += group
    if len(sites) > 1:
        notes.append(f"{len(sites)} sites on port {' or '.join(sorted(served))}: pounder's requests (Host 127.0.0.1) "
                     f"are served by the first, {sites[0].where}, as Apache serves a Host no ServerName names")
    return PrivateCopy(lines=tuple(out), notes=tuple(notes), user=user, group=group_name, other_mpm=other_mpm)


def _check_file(value: str, root: Path, line: ConfLine, why: str) -> None:
    path = Path(value) if os.path.isabs(value) else root / value
    if not os.access(path, os.R_OK):
        what = "no such file" if not path.exists() else "not readable"
        raise UsageError(f"apache: {line.where}: {' '.join(conf_words(line.text.strip())[:2])}: {what} "
                         f"({path}; {why})")


def default_user(copy: PrivateCopy) -> tuple[str | None, str | None]:
    """The ``User``/``Group`` the configuration names, when they are names (not an undefined
    ``${VAR}``) — the children's user and group where pounder runs as root."""
    user = copy.user if copy.user and not re.search(r"[${}]", copy.user) else None
    group = copy.group if user and copy.group and not re.search(r"[${}]", copy.group) else None
    return user, group
