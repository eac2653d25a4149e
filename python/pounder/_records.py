"""The one typed reader of decoded JSON documents (results, reports, stored points): values are
checked as they are read, and a malformation is a one-line error that names the key. Each kind of
document has its own error class, handed to :class:`Reader`.

A dataclass is read with :meth:`Reader.record`: every field by its annotated type (``int``,
``float``, ``str``, ``bool``, each optionally ``| None``), or by a converter given for it."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from pounder._errors import PounderError

Convert = Callable[[object, str], Any]


def decode_json(text: str | bytes) -> Any:
    """The value of a JSON document read from a file; a malformed one raises
    :class:`json.JSONDecodeError` (a ValueError), a document nested too deeply for the decoder
    (``[[[[…``) too, instead of a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise json.JSONDecodeError("nested too deeply to be a pounder document", doc[:64], 0) from None


def join(key: str, name: str) -> str:
    """``key.name``, or ``name`` at the top of a document (``key`` empty)."""
    return f"{key}.{name}" if key else name


class Reader:
    """Type checks that raise ``error`` naming the offending key."""

    def __init__(self, error: type[PounderError]) -> None:
        self.error = error
        self._scalars: dict[str, Convert] = {
            "int": self.as_int, "float": self.as_float, "str": self.as_str, "bool": self.as_bool,
        }  # fmt: skip

    def as_dict(self, value: object, key: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(f"'{key}' must be an object, got {type(value).__name__}")
        return value

    def as_list(self, value: object, key: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.error(f"'{key}' must be a list, got {type(value).__name__}")
        return value

    def as_str(self, value: object, key: str) -> str:
        if not isinstance(value, str):
            raise self.error(f"'{key}' must be a string, got {value!r}")
        return value

    def as_bool(self, value: object, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(f"'{key}' must be true or false, got {value!r}")
        return value

    def as_float(self, value: object, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(f"'{key}' must be a number, got {value!r}")
        return float(value)

    def as_int(self, value: object, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise self.error(f"'{key}' must be a whole number, got {value!r}")
        return int(value)

    def get(self, data: Mapping[str, Any], key: str) -> Any:
        if key not in data:
            raise self.error(f"missing '{key}'")
        return data[key]

    @staticmethod
    def nullable(convert: Convert) -> Convert:
        """``convert`` that lets ``null`` through."""
        return lambda value, key: None if value is None else convert(value, key)

    def list_of(self, convert: Convert) -> Callable[[object, str], tuple[Any, ...]]:
        return lambda value, key: tuple(convert(item, f"{key}[{i}]") for i, item in enumerate(self.as_list(value, key)))

    def choice(self, *allowed: str) -> Callable[[object, str], str]:
        def convert(value: object, key: str) -> str:
            if value not in allowed:
                raise self.error(f"'{key}' must be one of {', '.join(allowed)}; got {value!r}")
            return str(value)

        return convert

    def by_type(self, kind: str) -> Convert:
        """The converter for a field annotated ``kind`` (``"int"``, ``"float | None"``, ...)."""
        base, _, rest = kind.partition(" | ")
        convert = self._scalars.get(base)
        if convert is None or rest not in ("", "None"):
            raise self.error(f"unsupported field type {kind}")  # pragma: no cover
        return self.nullable(convert) if rest else convert

    def record(self, cls: type[Any], value: object, key: str, *, strict: bool = False,
               **converters: Convert) -> Any:
        """Dataclass ``cls`` from a JSON object: each field read by its converter in ``converters``
        or by its type. A field read by its type is required; one with a converter is too when
        ``strict``, else a missing one reads as ``null`` (the converter decides what that means)."""
        data = self.as_dict(value, key)
        values = {}
        for field in fields(cls):
            where = join(key, field.name)
            if field.name not in data and (strict or field.name not in converters):
                raise self.error(f"missing '{where}'")
            convert = converters.get(field.name) or self.by_type(str(field.type))
            values[field.name] = convert(data.get(field.name), where)
        return cls(**values)

    def table(self, cls: type[Any], columns: Sequence[str], value: object, key: str) -> tuple[Any, ...]:
        """Rows of ``cls`` from ``{"columns": [...], "rows": [[...], ...]}`` with exactly ``columns``."""
        data = self.as_dict(value, key)
        if self.as_list(data.get("columns"), f"{key}.columns") != list(columns):
            raise self.error(f"'{key}.columns' must be {list(columns)}")
        rows = []
        for index, row in enumerate(self.as_list(data.get("rows"), f"{key}.rows")):
            items = self.as_list(row, f"{key}.rows[{index}]")
            if len(items) != len(columns):
                raise self.error(f"'{key}.rows[{index}]' must have {len(columns)} values")
            rows.append(self.record(cls, dict(zip(columns, items, strict=True)), f"{key}.rows[{index}]"))
        return tuple(rows)
