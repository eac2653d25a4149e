"""The one typed reader of decoded JSON documents (results, reports, stored points): values are
checked as they are read, and a malformation is a one-line error that names the key. Each kind of
document has its own error class, handed to :class:`Reader`.

A dataclass is read with :meth:`Reader.record`: every field by its annotated type (``int``,
``float``, ``str``, ``bool``, each optionally ``| None``), or by a converter given for it.

Every whole number a pounder document holds is a count (requests, responses, errors, bytes,
connections, children, trials, samples), a size, a pid, a second or a time in microseconds, and
every other number a duration, a time or an amount of CPU: 0 or more, as the schemas say
(``"minimum": 0``). :meth:`Reader.as_int` (and so every ``int`` field) refuses a negative one or
a fraction, :meth:`Reader.as_float` (every ``float`` field) a negative one, naming the key; the
few fields that are differences (:data:`SIGNED`) may be negative. No number is larger than
:data:`MAX_NUMBER` (the engine counts in 64-bit integers): a larger one (``10**400``, ``1e308``
seconds) is refused as it is read, naming the key and the bound, before any arithmetic or any
list sized by it. ``NaN`` and ``Infinity``, which JSON does not have and pounder never writes,
are refused by :func:`decode_json`. A document read as plain JSON (a comparison, a tuning run's
files) has its numbers checked against its schema and that bound with :func:`number_problem`."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, fields
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, TypeGuard, cast

from pounder._errors import PounderError, clip

Convert = Callable[[object, str], Any]

SIGNED = frozenset({"private_growth_bytes", "private_growth_total", "offset_ms"})
"""The fields that are differences and may be negative (a child's private memory can shrink, an
agent's clock be behind); every other number field of a record is 0 or more."""
MAX_NUMBER = 2**63 - 1
"""The largest number (count, size, time, duration) a pounder document holds: its counters are
64-bit. A duration of more than this many seconds, or a count of more, is no measurement; and a
larger integer (``10**400``) overflows the ratios and the MiB formatting."""
SCHEMAS = Path(__file__).resolve().parent / "schemas"
_MISSING = object()


def decode_json(text: str | bytes) -> Any:
    """The value of a JSON document read from a file; a malformed one raises
    :class:`json.JSONDecodeError` (a ValueError), a document nested too deeply for the decoder
    (``[[[[…``) too, instead of a RecursionError; one holding ``NaN`` or ``Infinity``
    :class:`ConstantError` (a ValueError)."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise json.JSONDecodeError("nested too deeply to be a pounder document", doc[:64], 0) from None
    except (json.JSONDecodeError, ConstantError):
        raise
    except ValueError as error:  # an integer of more than 4300 digits
        raise json.JSONDecodeError(str(error), "", 0) from None


class ConstantError(ValueError):
    """A document holds ``NaN`` or ``Infinity`` (its message says which and why it is refused)."""


def _no_constant(name: str) -> Any:
    """``NaN``, ``Infinity``: Python's JSON reads them, JSON has no such number and pounder never
    writes one (a figure that is not there is ``null``)."""
    raise ConstantError(f"it holds {name}, which is no number: JSON has none and pounder writes a missing "
                        "figure as null")


def shown(value: object) -> str:
    """``value`` as a message shows it: a number of more than 16 digits by its size, not its
    digits (``10**400``, ``1e308``: "a number of 401 digits")."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**16:
        return f"a number of {len(str(abs(value)))} digits"
    if isinstance(value, float) and math.isfinite(value) and abs(value) >= 1e16:
        return f"a number of {len(str(int(abs(value))))} digits"
    return clip(repr(value), 80)


def too_large(key: str, value: object) -> str:
    """The message for a number of ``key`` beyond :data:`MAX_NUMBER`."""
    return f"'{key}' is larger than any pounder result holds (at most 2**63 - 1), got {shown(value)}"


def join(key: str, name: str) -> str:
    """``key.name``, or ``name`` at the top of a document (``key`` empty)."""
    return f"{key}.{name}" if key else name


class Record:
    """A frozen dataclass whose stored form is its fields, as :func:`dataclasses.asdict` gives them
    (nested records as dicts): the ``to_dict`` of every such result record, declared once."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(cast(Any, self))


class Reader:
    """Type checks that raise ``error`` naming the offending key."""

    def __init__(self, error: type[PounderError]) -> None:
        self.error = error
        self._scalars: dict[str, Convert] = {
            "int": self.as_int, "float": self.as_float, "str": self.as_str, "bool": self.as_bool,
        }  # fmt: skip
        self._plans: dict[type[Any], tuple[tuple[str, str, bool], ...]] = {}

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
            raise self.error(f"'{key}' must be a string, got {shown(value)}")
        return value

    def as_bool(self, value: object, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(f"'{key}' must be true or false, got {shown(value)}")
        return value

    def as_float(self, value: object, key: str) -> float:
        """A duration, a time, an amount: a finite number, 0 or more (up to :data:`MAX_NUMBER`)."""
        return float(self._figure(value, key, _number(value) and value >= 0, "a number >= 0"))

    def as_signed_float(self, value: object, key: str) -> float:
        """A difference (:data:`SIGNED`): a finite number, negative or not."""
        return float(self._figure(value, key, _number(value), "a number"))

    def as_int(self, value: object, key: str) -> int:
        """A count (or a size, a pid, a time in µs): a whole number, 0 or more (up to :data:`MAX_NUMBER`)."""
        return int(self._figure(value, key, _whole(value) and value >= 0, "a whole number >= 0"))

    def as_signed_int(self, value: object, key: str) -> int:
        """A difference (:data:`SIGNED`): a whole number, negative or not."""
        return int(self._figure(value, key, _whole(value), "a whole number"))

    def _figure(self, value: Any, key: str, right: bool, what: str) -> int | float:
        """``value`` when it is ``right`` (``what`` it must be) and its size is at most
        :data:`MAX_NUMBER`, else the error naming ``key``."""
        if not right:
            raise self.error(f"'{key}' must be {what}, got {shown(value)}")
        if abs(value) > MAX_NUMBER:
            raise self.error(too_large(key, value))
        return value  # type: ignore[no-any-return]

    def capped_list(self, value: object, key: str, most: int, entries: str, holder: str) -> list[Any]:
        """A list of at most ``most`` ``entries`` (``"children"``), the most ``holder`` (``"a
        view"``) holds: each is a row of the page."""
        rows = self.as_list(value, key)
        if len(rows) > most:
            raise self.error(f"'{key}' lists {len(rows):,} {entries}, more than the {most:,} {holder} holds")
        return rows

    def utc_time(self, value: object, key: str, *, shown_chars: int | None = None) -> float:
        """A UTC time as pounder writes it (``2026-11-28T13:40:00Z``), in seconds since the epoch;
        the error shows the text's first ``shown_chars`` characters (None: all of it)."""
        text = self.as_str(value, key)
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise self.error(f"'{key}' is not a UTC time: {text[:shown_chars]!r}") from None

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
                raise self.error(f"'{key}' must be one of {', '.join(allowed)}; got {shown(value)}")
            return str(value)

        return convert

    def by_type(self, kind: str, name: str = "") -> Convert:
        """The converter for a field annotated ``kind`` (``"int"``, ``"float | None"``, ...) and
        named ``name`` (a number in :data:`SIGNED` may be negative)."""
        base, _, rest = kind.partition(" | ")
        signed = {"int": self.as_signed_int, "float": self.as_signed_float}.get(base) if name in SIGNED else None
        convert = signed or self._scalars.get(base)
        if convert is None or rest not in ("", "None"):
            raise self.error(f"unsupported field type {kind}")  # pragma: no cover
        return self.nullable(convert) if rest else convert

    def _plan(self, cls: type[Any]) -> tuple[tuple[str, str, bool], ...]:
        """(name, base type, nullable) of each field of ``cls``, worked out once per class."""
        plan = self._plans.get(cls)
        if plan is None:
            plan = tuple((f.name, str(f.type).partition(" | ")[0], " | " in str(f.type)) for f in fields(cls))
            self._plans[cls] = plan
        return plan

    def record(self, cls: type[Any], value: object, key: str, *, strict: bool = False,
               **converters: Convert) -> Any:
        """Dataclass ``cls`` from a JSON object: each field read by its converter in ``converters``
        or by its type. A field read by its type is required; one with a converter is too when
        ``strict``, else a missing one reads as ``null`` (the converter decides what that means).

        A value that is plainly right for its type (a count that is an ``int`` >= 0, a string, ...)
        is taken as it is; only the others go through their converter, which names the key: a
        series of a million seconds is read in seconds, not minutes."""
        data = self.as_dict(value, key)
        values = {}
        for name, base, nullable in self._plan(cls):
            item = data.get(name, _MISSING)
            if name not in converters and _plainly(item, base, name):
                values[name] = item
                continue
            if item is None and nullable and name not in converters:
                values[name] = None
                continue
            where = join(key, name)
            if item is _MISSING and (strict or name not in converters):
                raise self.error(f"missing '{where}'")
            convert = converters.get(name) or self.by_type(f"{base} | None" if nullable else base, name)
            values[name] = convert(None if item is _MISSING else item, where)
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


def _whole(value: object) -> TypeGuard[int | float]:
    """An ``int`` (not a bool), or a ``float`` with nothing after the point (``5.0``)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _number(value: object) -> TypeGuard[int | float]:
    """An ``int`` (not a bool) or a finite ``float``."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _plainly(value: object, base: str, name: str) -> bool:
    """``value`` needs no conversion nor message as a field of type ``base`` named ``name``."""
    if type(value) is int:
        return base == "int" and (0 <= value <= MAX_NUMBER or (name in SIGNED and abs(value) <= MAX_NUMBER))
    if type(value) is float:
        return base == "float" and (0 <= value <= MAX_NUMBER or (name in SIGNED and abs(value) <= MAX_NUMBER))
    return (base == "str" and type(value) is str) or (base == "bool" and type(value) is bool)


# ---------------------------------------------------------------------------------------------
# The numbers of a document read as plain JSON, checked against its schema


@cache
def _validator(schema: str) -> Any:
    """A jsonschema validator for ``schema`` (``"compare"``...) resolving ``$ref`` to the others."""
    import jsonschema
    from referencing import Registry, Resource

    documents = {path.name: json.loads(path.read_text(encoding="utf-8")) for path in SCHEMAS.glob("*.schema.json")}
    registry: Registry[Any] = Registry().with_resources(
        (contents["$id"], Resource.from_contents(contents)) for contents in documents.values())
    contents = documents[f"{schema}.schema.json"]
    return jsonschema.validators.validator_for(contents)(contents, registry=registry)


def _number_errors(error: Any) -> Iterator[Any]:
    """The errors under ``error`` (a ``oneOf`` holds one per branch) about a number's bounds."""
    if error.context:
        for sub in error.context:
            yield from _number_errors(sub)
    elif _number(error.instance) and (error.validator == "minimum" or (error.validator == "type" and (
            "integer" in error.validator_value and "number" not in error.validator_value))):
        yield error


def number_problem(document: object, schema: str) -> str | None:
    """The first number of ``document`` that breaks its schema's bounds (``schema``:
    ``"compare"``, ``"tune-point"``, ...): below the ``"minimum"`` the schema gives it, or not
    whole where the schema says ``"integer"`` (a count), as one line naming its key
    (``'trials[2].complete' must be a whole number >= 0, got -5``); None when every number is
    right. The schema's other rules are the readers' to check (older documents lack members).
    A number larger than :data:`MAX_NUMBER` is a problem in any document, whatever its schema."""
    huge = _first_huge(document)
    if huge is not None:
        return huge
    try:  # the same document again (a recorded run read by a resume, then by its page): its answer kept
        text = json.dumps(document)
    except (TypeError, ValueError):
        text = None
    if text is None or json.loads(text) != document:  # not JSON's own values (keys, tuples, NaN): as it is
        return _schema_problem(document, schema)
    seen = (schema, hashlib.blake2b(text.encode()).digest())  # the text's digest: no copy of it kept
    if seen not in _PROBLEMS:
        if len(_PROBLEMS) >= _PROBLEMS_KEPT:
            _PROBLEMS.clear()
        _PROBLEMS[seen] = _schema_problem(document, schema)
    return _PROBLEMS[seen]


_PROBLEMS: dict[tuple[str, bytes], str | None] = {}
""":func:`number_problem`'s answers by schema and document as JSON text (validating a tune point
against its schema takes tens of ms), the text kept as its digest."""
_PROBLEMS_KEPT = 4096


def _schema_problem(document: object, schema: str) -> str | None:
    """:func:`number_problem` past the huge numbers: the first bound of the schema broken."""
    for error in _validator(schema).iter_errors(document):
        for found in _number_errors(error):
            key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in found.absolute_path)
            key = key.removeprefix(".")
            kinds = found.schema.get("type")
            whole = "whole " if kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds) else ""
            bound = f" >= {found.schema['minimum']}" if "minimum" in found.schema else ""
            return f"'{key}' must be a {whole}number{bound}, got {shown(found.instance)}"
    return None


def _first_huge(document: object) -> str | None:
    """The message for the first number of ``document`` larger than :data:`MAX_NUMBER`, walked
    without recursion (a document is as deep as the decoder let it be)."""
    stack: list[tuple[str, object]] = [("", document)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((join(key, str(name)), item) for name, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{key}[{index}]", item) for index, item in reversed(list(enumerate(value))))
        elif _number(value) and abs(value) > MAX_NUMBER:
            return too_large(key, value)
    return None
