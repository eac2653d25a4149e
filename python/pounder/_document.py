"""Reading typed values out of decoded JSON documents (results, reports), with one-line errors
that name the key. Each kind of document has its own error class."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pounder._errors import PounderError


class Readers(NamedTuple):
    """Type checks that raise ``error`` naming the offending key."""

    as_dict: Callable[[object, str], Mapping[str, Any]]
    as_list: Callable[[object, str], list[Any]]
    as_str: Callable[[object, str], str]


def readers(error: type[PounderError]) -> Readers:
    """The readers for a document whose malformations raise ``error``."""

    def as_dict(value: object, key: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise error(f"'{key}' must be an object, got {type(value).__name__}")
        return value

    def as_list(value: object, key: str) -> list[Any]:
        if not isinstance(value, list):
            raise error(f"'{key}' must be a list, got {type(value).__name__}")
        return value

    def as_str(value: object, key: str) -> str:
        if not isinstance(value, str):
            raise error(f"'{key}' must be a string, got {value!r}")
        return value

    return Readers(as_dict, as_list, as_str)
