"""An Apache configuration as a distribution lays it out (Debian/Ubuntu: ``apache2.conf``,
``envvars``, ``mods-enabled/``, ``sites-enabled/``...), read into one flat list of lines.

What Apache does when it reads its configuration, and pounder does here without running
anything of the user's:

- ``Include`` and ``IncludeOptional`` are followed where they stand: a relative path against the
  ServerRoot (the ``ServerRoot`` read so far, or the configuration file's directory: Debian's
  apache2.conf has none and apache2ctl starts Apache with ``-d /etc/apache2``); wildcards in any
  component, matches in alphabetical order, a directory as all its files (and its
  subdirectories'); a wildcard ``Include`` that matches nothing, or a missing file, is an error as
  in Apache, ``IncludeOptional`` skips it. An ``Include`` inside an ``<IfModule>`` whose module is
  not loaded at that point, or an ``<IfDefine>`` whose name is not defined there (``Define``, and
  pounder's ``-D FOREGROUND``), is not followed (Apache reads those blocks at once, as pounder
  does); for that test the private copy runs prefork: ``mpm_prefork_module`` is loaded, the other
  MPMs not.
- ``${NAME}`` is replaced in every directive line, as Apache does when it reads it: by the value of
  a ``Define NAME VALUE`` read before, else by Debian's ``envvars`` next to the file (what
  apache2ctl exports: read here, never executed; see :func:`read_envvars`), else by this process's
  environment; an undefined one stays as it is (Apache warns and does the same).
- Every size is bounded: include depth, files, bytes and lines (:data:`LIMITS`); a file that
  includes itself (directly or through others) is refused with the chain.

Errors are :class:`~pounder.UsageError` naming the file and line: ``apache: FILE:LINE: ...``.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pounder._errors import UsageError

MAX_DEPTH = 16
"""Includes within includes (Apache's own limit is 128; Debian's layout needs 2)."""
MAX_FILES = 2000
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_TOTAL_BYTES = 32 * 1024 * 1024
MAX_LINES = 500_000
MAX_ENVVARS_BYTES = 256 * 1024
LIMITS = {"depth": MAX_DEPTH, "files": MAX_FILES, "bytes per file": MAX_FILE_BYTES, "bytes": MAX_TOTAL_BYTES,
          "lines": MAX_LINES}

BUILTIN_MODULES = frozenset({"core", "so", "watchdog", "http", "http_core", "log_config", "logio", "version",
                             "unixd"})
"""Modules compiled into Debian's apache2 (``apache2 -l``), by the stem of their ``mod_X.c``/``X_module``."""
PRIVATE_MODULES = frozenset({"mpm_prefork", "authz_core", "mime", "dir", "status"})
"""Modules pounder's own part of the private copy loads."""
OTHER_MPMS = frozenset({"mpm_event", "mpm_worker"})

_VAR = re.compile(r"\$\{([^}]*)\}")
_SHELL_VAR = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")
_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_]\w*)=(.*)$")
_INCLUDES = frozenset({"include", "includeoptional"})


@dataclass(frozen=True)
class ConfLine:
    """One physical line of the flattened configuration, ``${NAME}`` replaced, and where it was
    read (``file``, ``number`` from 1). An ``Include`` line is kept as a comment."""

    text: str
    file: Path
    number: int
    active: bool = True
    """False inside an ``<IfModule>`` whose module is not loaded there (Apache skips it)."""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.number}"


@dataclass(frozen=True)
class Layout:
    """A configuration file with everything it includes: ``lines`` in the order Apache reads
    them, the ServerRoot relative paths resolve against, the files read, and the variables of
    ``envvars`` (None: there is none)."""

    conf: Path
    server_root: Path
    lines: tuple[ConfLine, ...]
    files: tuple[Path, ...]
    envvars: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(f"{line.text}\n" for line in self.lines)

    @property
    def debian(self) -> bool:
        """Laid out as Debian's package does (envvars and mods-available next to the file)."""
        return self.envvars is not None and (self.conf.parent / "mods-available").is_dir()


def _read_bounded(path: Path, limit: int, what: str) -> str:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the read, a device never end
            raise UsageError(f"apache: {what} {path} is not a regular file: not read")
        with open(path, "rb") as file:
            data = file.read(limit + 1)
    except OSError as error:
        raise UsageError(f"apache: cannot read {what} {path}: {error.strerror or error}") from None
    if len(data) > limit:
        raise UsageError(f"apache: {what} {path} is larger than {limit // 1024:,} KiB: not read")
    return data.decode("utf-8", errors="surrogateescape")


def envvars_suffix(confdir: str) -> str:
    """Debian's ``SUFFIX`` of a configuration directory: ``-NAME`` for ``/etc/apache2-NAME``
    (a second instance), else "" (what envvars computes from ``APACHE_CONFDIR``)."""
    rest = confdir.removeprefix("/etc/apache2-")
    return f"-{rest}" if rest != confdir else ""


def _shell_value(raw: str, known: Mapping[str, str]) -> str | None:
    """The value of a shell assignment's right-hand side (quotes, ``$NAME``, ``${NAME}``), or None
    when it would need running something (``$(...)``, backquotes, other ``${...}`` forms)."""
    if "`" in raw or "$(" in raw:
        return None
    out: list[str] = []
    i = 0
    quote = ""
    while i < len(raw):
        char = raw[i]
        if quote == "'":
            if char == "'":
                quote = ""
            else:
                out.append(char)
        elif char == "'" and not quote:
            quote = "'"
        elif char == '"':
            quote = "" if quote else '"'
        elif char == "\\" and i + 1 < len(raw):
            i += 1
            out.append(raw[i])
        elif char == "$":
            match = _SHELL_VAR.match(raw, i)
            if match is None:
                if raw.startswith("${", i):
                    return None
                out.append(char)
            else:
                name = match.group(1) or match.group(2)
                out.append(known.get(name, os.environ.get(name, "")))
                i = match.end()
                continue
        elif not quote and (char.isspace() or char in ";#&|"):
            break
        else:
            out.append(char)
        i += 1
    return "".join(out)


def read_envvars(path: Path, confdir: str) -> dict[str, str]:
    """The variables Debian's ``envvars`` sets (``export NAME=value`` and ``NAME=value`` lines,
    values with ``$NAME`` of those before), read as text, never run: ``APACHE_CONFDIR`` is
    ``confdir`` and ``SUFFIX`` is computed from it as envvars does (:func:`envvars_suffix`);
    assignments inside ``if``/``case`` blocks and lines that would run something are skipped."""
    known = {"APACHE_CONFDIR": confdir, "SUFFIX": envvars_suffix(confdir)}
    depth = 0
    for line in _read_bounded(path, MAX_ENVVARS_BYTES, "the envvars file").splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] in ("if", "case", "while", "for", "until"):
            depth += 1
        elif words[0] in ("fi", "esac", "done"):
            depth = max(0, depth - 1)
        elif depth == 0:
            match = _ASSIGN.match(line.strip())
            if match is not None:
                value = _shell_value(match.group(2), known)
                if value is not None:
                    known[match.group(1)] = value
    return known


def substitute(text: str, defines: Mapping[str, str], env: Mapping[str, str]) -> str:
    """``text`` with each ``${NAME}`` replaced as Apache does: a Define's value, else the
    environment's (``env``), else left as it is."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in defines:
            return defines[name]
        return env.get(name, match.group(0))

    return _VAR.sub(value, text) if "${" in text else text


def conf_words(text: str) -> list[str]:
    """A directive line's words as Apache splits them (double or single quotes group, a
    backslash escapes a quote in them)."""
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        if text[i] in "\"'":
            quote = text[i]
            i += 1
            word: list[str] = []
            while i < n and text[i] != quote:
                if text[i] == "\\" and i + 1 < n and text[i + 1] == quote:
                    i += 1
                word.append(text[i])
                i += 1
            words.append("".join(word))
            i += 1
        else:
            start = i
            while i < n and not text[i].isspace():
                i += 1
            words.append(text[start:i])
    return words


def module_stem(name: str) -> str:
    """``ssl_module``, ``mod_ssl.c``, ``mod_ssl.so`` -> ``ssl``."""
    name = Path(name).name
    name = name.removesuffix("_module").removesuffix(".c").removesuffix(".so")
    return name.removeprefix("mod_")


@dataclass
class _Reader:
    env: Mapping[str, str]
    server_root: Path
    defines: dict[str, str] = field(default_factory=dict)
    defined: set[str] = field(default_factory=lambda: {"FOREGROUND"})  # pounder starts it with -D FOREGROUND
    loaded: set[str] = field(default_factory=lambda: set(BUILTIN_MODULES | PRIVATE_MODULES))
    lines: list[ConfLine] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    total: int = 0  # bytes read
    count: int = 0  # lines read
    skipping: int = 0  # depth inside an <IfModule> whose module is not loaded
    conditions: list[bool] = field(default_factory=list)

    def read(self, path: Path, chain: tuple[Path, ...], origin: ConfLine | None) -> None:
        real = path.resolve()
        where = f"{origin.where}: " if origin is not None else ""
        if real in chain:
            cycle = " -> ".join(str(p) for p in (*chain[chain.index(real):], real))
            raise UsageError(f"apache: {where}{origin.text.strip() if origin else ''} includes a file that is "
                             f"already being read (a cycle: {cycle})")
        if len(chain) >= MAX_DEPTH:
            raise UsageError(f"apache: {where}includes nested deeper than {MAX_DEPTH} levels: not followed")
        if len(self.files) >= MAX_FILES:
            raise UsageError(f"apache: {where}more than {MAX_FILES} configuration files: not read")
        text = _read_bounded(path, MAX_FILE_BYTES, "the configuration file")
        self.total += len(text)
        if self.total > MAX_TOTAL_BYTES:
            raise UsageError(f"apache: {where}the configuration and its includes are larger than "
                             f"{MAX_TOTAL_BYTES // (1024 * 1024)} MiB: not read")
        self.files.append(path)
        physical = text.splitlines()
        self.count += len(physical)
        if self.count > MAX_LINES:
            raise UsageError(f"apache: {where}the configuration and its includes have more than {MAX_LINES:,} "
                             "lines: not read")
        for start, group in _logical(physical):
            self._directive(path, start, group, (*chain, real))

    def _directive(self, path: Path, start: int, group: list[str], chain: tuple[Path, ...]) -> None:
        joined = " ".join(line.strip().removesuffix("\\").strip() for line in group)
        if joined.startswith("#") or not joined:
            self.lines += [ConfLine(line, path, start + k, not self.skipping) for k, line in enumerate(group)]
            return
        resolved = [substitute(line, self.defines, self.env) for line in group]
        words = conf_words(substitute(joined, self.defines, self.env))
        name = words[0].lower()
        active = not self.skipping
        here = ConfLine(resolved[0], path, start)
        self._track(name, words, here)
        if name in _INCLUDES:
            followed = active
            note = "# pounder followed: " if followed else "# pounder: not followed (inside a false <If...>): "
            self.lines += [ConfLine(note + line.strip(), path, start + k, active) for k, line in enumerate(resolved)]
            if followed:
                for target in self._matches(words, here):
                    self.read(target, chain, here)
            return
        self.lines += [ConfLine(line, path, start + k, active and not self.skipping)
                       for k, line in enumerate(resolved)]

    def _track(self, name: str, words: list[str], here: ConfLine) -> None:
        """What Apache acts on while reading: Define/UnDefine, ServerRoot, LoadModule and
        ``<IfModule>`` (for which Includes it follows)."""
        if self.skipping:
            if name in ("<ifmodule", "<ifdefine"):
                self.skipping += 1
            elif name in ("</ifmodule>", "</ifdefine>"):
                self.skipping -= 1
            return
        if name == "define" and len(words) >= 2:
            self.defined.add(words[1])
            if len(words) >= 3:
                self.defines[words[1]] = words[2]
        elif name == "undefine" and len(words) >= 2:
            self.defined.discard(words[1])
            self.defines.pop(words[1], None)
        elif name == "<ifdefine" and len(words) >= 2:
            test = words[1].rstrip(">")
            if (test.lstrip("!") in self.defined) == test.startswith("!"):
                self.skipping = 1
        elif name == "serverroot" and len(words) >= 2:
            root = Path(words[1])
            if not root.is_dir():
                raise UsageError(f"apache: {here.where}: ServerRoot {words[1]} is not a directory")
            self.server_root = root
        elif name == "loadmodule" and len(words) >= 2:
            stem = module_stem(words[1])
            if stem not in OTHER_MPMS:
                self.loaded.add(stem)
        elif name == "<ifmodule" and len(words) >= 2:
            test = words[1].rstrip(">")
            negated = test.startswith("!")
            if (module_stem(test.lstrip("!")) in self.loaded) == negated:
                self.skipping = 1

    def _matches(self, words: list[str], here: ConfLine) -> Iterator[Path]:
        if len(words) < 2:
            raise UsageError(f"apache: {here.where}: {words[0]} needs a file name")
        optional = words[0].lower() == "includeoptional"
        pattern = words[1] if os.path.isabs(words[1]) else str(self.server_root / words[1])
        if glob.has_magic(pattern):
            found = sorted(glob.glob(pattern))
            if not found and not optional:
                raise UsageError(f"apache: {here.where}: {words[0]} {words[1]}: no matches for the wildcard "
                                 f"(Apache refuses it too; IncludeOptional allows none)")
        elif os.path.exists(pattern):
            found = [pattern]
        elif optional:
            found = []
        else:
            raise UsageError(f"apache: {here.where}: {words[0]} {words[1]}: no such file or directory")
        for match in found:
            yield from _files_of(Path(match), here)


def _files_of(path: Path, here: ConfLine, depth: int = 0) -> Iterator[Path]:
    """A file, or a directory's files (and its subdirectories', at most :data:`MAX_DEPTH` deep,
    at most :data:`MAX_FILES` entries each), in alphabetical order; ``here`` the Include line."""
    if not path.is_dir():
        yield path
        return
    if depth >= MAX_DEPTH:
        raise UsageError(f"apache: {here.where}: directories nested deeper than {MAX_DEPTH} levels under {path}: "
                         "not read")
    try:
        entries = os.listdir(path)
    except OSError as error:
        raise UsageError(f"apache: {here.where}: cannot read the directory {path}: {error.strerror or error}") \
            from None
    if len(entries) > MAX_FILES:
        raise UsageError(f"apache: {here.where}: the directory {path} has more than {MAX_FILES} entries: not read")
    for entry in sorted(entries):
        yield from _files_of(path / entry, here, depth + 1)


def _logical(physical: list[str]) -> Iterator[tuple[int, list[str]]]:
    """(first line number, physical lines) of each directive: a line ending with a backslash
    continues on the next."""
    group: list[str] = []
    start = 1
    for number, line in enumerate(physical, 1):
        if not group:
            start = number
        group.append(line)
        if not line.rstrip().endswith("\\"):
            yield start, group
            group = []
    if group:
        yield start, group


def read_layout(conf: Path, *, overrides: Mapping[str, str] | None = None) -> Layout:
    """``conf`` with every file it includes, ``${NAME}`` replaced (``overrides`` first, then
    envvars', then the environment's), as :class:`Layout`. :class:`~pounder.UsageError` with the
    file and line for what Apache would refuse or pounder does not read."""
    conf = Path(conf)
    envvars = conf.parent / "envvars"
    env: dict[str, str] = dict(os.environ)
    read_vars: dict[str, str] = {}
    if envvars.is_file():
        read_vars = read_envvars(envvars, str(conf.parent))
        env.update(read_vars)
    env.update(overrides or {})
    reader = _Reader(env=env, server_root=conf.parent)
    reader.read(conf, (), None)
    return Layout(conf=conf, server_root=reader.server_root, lines=tuple(reader.lines), files=tuple(reader.files),
                  envvars=envvars if envvars.is_file() else None, env=read_vars)
