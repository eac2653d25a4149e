"""The user's php-fpm pool file, as pounder reads it: one ``[name]`` section and its settings
(:class:`PoolFile`, :func:`parse_pool_conf`, :func:`read_pool_conf`: pure, checked before anything runs)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pounder._errors import UsageError, public
from pounder._files import SMALL_LIMIT, read_input

_SECTION = re.compile(r"^\s*\[([^\]]*)\]\s*(?:;.*)?$")
_KEY = re.compile(r"^\s*([^=;\s][^=]*?)\s*=")


@public
@dataclass(frozen=True)
class PoolFile:
    """What pounder reads in a pool file: the pool's ``name``, the 1-based line of its ``[name]``
    header, and its settings (lower-case keys, the last value of each, unquoted)."""

    name: str
    header_line: int
    settings: Mapping[str, str] = field(default_factory=dict)

    @property
    def status_path(self) -> str | None:
        return self.settings.get("pm.status_path")

    @property
    def user(self) -> str | None:
        return self.settings.get("user")


def _key(line: str) -> str | None:
    match = _KEY.match(line)
    return match.group(1).strip().lower() if match else None


def _unquoted(value: str) -> str:
    value = value.split(";", 1)[0].strip() if not value.strip().startswith('"') else value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


@public
def parse_pool_conf(text: str, *, source: str = "the pool file") -> PoolFile:
    """The pool of a php-fpm pool file (a pure function): exactly one ``[name]`` section, nothing
    but comments before it, no ``[global]`` (pounder writes its own) and no ``include``; raises a
    one-line :class:`~pounder.UsageError` naming ``source`` otherwise. php-fpm checks the rest."""
    name: str | None = None
    header = 0
    settings: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith(";"):
            continue
        section = _SECTION.match(line)
        if section:
            found = section.group(1).strip()
            if found.lower() == "global":
                raise UsageError(f"php-fpm: {source} has a [global] section (line {number}): give pounder the pool "
                                 "file alone (e.g. pool.d/www.conf); it writes [global] itself")
            if name is not None:
                raise UsageError(f"php-fpm: {source} holds more than one pool ([{name}] and [{found}] on line "
                                 f"{number}): give pounder a file with the one pool to tune")
            name, header = found, number
            continue
        key = _key(line)
        if key == "include":
            raise UsageError(f"php-fpm: {source} uses include (line {number}): give pounder one self-contained "
                             "pool file")
        if name is None:
            raise UsageError(f"php-fpm: {source} has a setting before its [pool] section (line {number}: "
                             f"{stripped[:60]})")
        if key is not None:
            settings[key] = _unquoted(line.split("=", 1)[1])
    if name is None:
        raise UsageError(f"php-fpm: {source} has no [pool] section (e.g. [www])")
    return PoolFile(name=name, header_line=header, settings=settings)


@public
def read_pool_conf(path: str | os.PathLike[str]) -> str:
    """The user's pool file: a regular file of at most 1 MiB, checked with
    :func:`parse_pool_conf`; :class:`~pounder.UsageError` (one line) otherwise. Its bytes are kept
    as they are (surrogate escapes)."""
    raw = read_input(path, "php-fpm: the pool file", limit=SMALL_LIMIT)
    if len(raw) > SMALL_LIMIT:
        raise UsageError(f"php-fpm: the pool file {path} is larger than 1 MiB")
    text = raw.decode("utf-8", errors="surrogateescape")
    parse_pool_conf(text, source=str(path))
    return text
