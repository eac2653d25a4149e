"""Reading an experiment file's TOML key by key: where each key is written (:class:`Lines`) and
the typed getters that name the file, the line and the key in every mistake (:class:`Reader`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pounder._errors import UsageError

_KEY_LINE = re.compile(r"^\s*(?P<key>[A-Za-z0-9_-]+|\"[^\"]*\")\s*=")
_TABLE_LINE = re.compile(r"^\s*(?P<open>\[\[?)\s*(?P<name>[A-Za-z0-9_.-]+)\s*\]\]?")


class ExperimentError(UsageError):
    """A bad experiment file: ``str(error)`` is ``FILE:LINE: KEY: reason``."""


class Lines:
    """Where each key of a TOML text is written: ``"variant[1].label"`` → line number."""

    def __init__(self, text: str) -> None:
        self.keys: dict[str, int] = {}
        table = ""
        counts: dict[str, int] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.split("#", 1)[0] if '"' not in line else line
            header = _TABLE_LINE.match(stripped)
            if header:
                name = header["name"]
                if header["open"] == "[[":
                    index = counts.get(name, 0)
                    counts[name] = index + 1
                    table = f"{name}[{index}]"
                    self.keys.setdefault(name, number)
                else:
                    table = name
                self.keys.setdefault(table, number)
                continue
            key = _KEY_LINE.match(stripped)
            if key:
                name = key["key"].strip('"')
                self.keys.setdefault(f"{table}.{name}" if table else name, number)

    def line(self, key: str) -> int:
        """The key's line, else its table's, else 1."""
        while key:
            if key in self.keys:
                return self.keys[key]
            key = key.rsplit(".", 1)[0] if "." in key else ""
        return 1


class Reader:
    """Reads an experiment file's parsed TOML, each mistake an :class:`ExperimentError` naming the
    file, the key's line and the key."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = Lines(text)
        self.base = path.resolve().parent
        """Where the file's paths are relative to: its own directory."""

    def fail(self, key: str, reason: str) -> ExperimentError:
        return ExperimentError(f"{self.path}:{self.lines.line(key)}: {key}: {reason}")

    def table(self, data: Mapping[str, Any], key: str, allowed: set[str]) -> None:
        for name in data:
            if name not in allowed:
                raise self.fail(f"{key}.{name}" if key else name,
                                f"unknown key (expected one of: {', '.join(sorted(allowed))})")

    def get(self, data: Mapping[str, Any], table: str, name: str, kind: type | tuple[type, ...], *,
            required: bool = False, default: Any = None) -> Any:
        key = f"{table}.{name}" if table else name
        if name not in data:
            if required:
                raise self.fail(table or name, f"missing key '{name}'")
            return default
        value = data[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            names = " or ".join({int: "a whole number", float: "a number", str: "a string", bool: "true or false",
                                 dict: "a table", list: "a list"}.get(k, k.__name__) for k in kinds)
            raise self.fail(key, f"expected {names}, got {value!r}")
        return value

    def tables(self, data: Mapping[str, Any], name: str, allowed: set[str]) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """Each ``[[name]]`` table as (its key, e.g. ``load[0]``, the table), its keys checked
        against ``allowed`` as it comes (so the first mistake in file order is reported)."""
        for index, item in enumerate(self.get(data, "", name, list, required=True)):
            key = f"{name}[{index}]"
            if not isinstance(item, dict):
                raise self.fail(key, f"expected a table ([[{name}]])")
            self.table(item, key, allowed)
            yield key, item

    def count(self, data: Mapping[str, Any], table: str, name: str, low: int, high: int,
              default: int | None = None) -> int | None:
        value = self.get(data, table, name, int, default=default)
        if value is not None and not low <= value <= high:
            raise self.fail(f"{table}.{name}", f"must be between {low} and {high}, got {value}")
        return value  # type: ignore[no-any-return]

    def env(self, data: Mapping[str, Any], table: str) -> dict[str, str]:
        env = self.get(data, table, "env", dict, default={})
        for name, value in env.items():
            if not isinstance(value, str):
                raise self.fail(f"{table}.env.{name}", f"expected a string, got {value!r}")
        return dict(env)

    def path_of(self, data: Mapping[str, Any], table: str, name: str, kind: Literal["file", "dir"], *,
             required: bool = False) -> Path | None:
        """The key ``name`` of ``table`` naming a file or directory (``kind``), relative to the
        experiment file's directory (every path of an experiment is read so, :meth:`resolve`);
        None when not given."""
        value = self.get(data, table, name, str, required=required)
        return None if value is None else self.resolve(f"{table}.{name}" if table else name, value, kind)

    def resolve(self, key: str, value: str, kind: Literal["file", "dir"]) -> Path:
        """``value`` (written at ``key``) as a path relative to the experiment file's directory (an
        absolute one as it is), which must be a ``kind``: a regular file or a directory."""
        what = "file" if kind == "file" else "directory"
        try:
            resolved = (self.base / value).resolve()
            found = resolved.is_file() if kind == "file" else resolved.is_dir()
        except (OSError, ValueError) as error:  # too long, a NUL byte, a loop
            raise self.fail(key, f"cannot use {value!r} as a {what}: {getattr(error, 'strerror', None) or error}") \
                from None
        if not found:
            raise self.fail(key, f"no such {what} {value} (paths are relative to the experiment file, {self.base})")
        return resolved

    def located(self, key: str, error: UsageError) -> ExperimentError:
        """``error`` (raised by what the file's values were given to: a server's adapter) as a
        mistake at ``key``, with the file and the line."""
        return self.fail(key, str(error))
