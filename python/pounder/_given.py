"""How a message names an option the user gave: by its command-line flag (``--pythonpath DIR``), or,
when the value came from a file (an experiment's ``[server]``), by the file's key
(``pythonpath = "DIR"``): a hint never names a flag to someone who wrote a file.

The reader of a file says where its values came from for the time it builds and checks what they
describe (:func:`from_file`); whoever words a hint asks :func:`given` (or :func:`option_name`), and
the reader learns which of its keys a message named (:attr:`FileKeys.named`), to point at that key's
line."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class FileKeys:
    """The keys of a file that hold the options (option name -> key), and those a message named."""

    keys: Mapping[str, str]
    named: list[str] = field(default_factory=list)


_FILE: ContextVar[FileKeys | None] = ContextVar("pounder_given_file", default=None)


@contextlib.contextmanager
def from_file(keys: Mapping[str, str]) -> Iterator[FileKeys]:
    """While inside: the options in ``keys`` (option name -> the file's key) came from a file."""
    source = FileKeys(dict(keys))
    token = _FILE.set(source)
    try:
        yield source
    finally:
        _FILE.reset(token)


def option_name(name: str, flag: str) -> str:
    """The option ``name`` as a message names it: its file key where it came from a file, else ``flag``."""
    source = _FILE.get()
    if source is None or name not in source.keys:
        return flag
    source.named.append(name)
    return source.keys[name]


def given(name: str, flag: str, value: str) -> str:
    """The option ``name`` given ``value`` as its user wrote it: ``--pythonpath DIR`` on the command
    line, ``pythonpath = "DIR"`` in a file."""
    source = _FILE.get()
    if source is None or name not in source.keys:
        return f"{flag} {value}"
    return f'{option_name(name, flag)} = "{value}"'
