"""Exceptions raised by pounder."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any


class PounderError(Exception):
    """Base class of every error pounder raises on purpose.

    The message is always one line meant for a human: the CLI prints it as
    ``pounder: error: <message>``.
    """


class UsageError(PounderError, ValueError):
    """Bad input: an option, URL, file or value the user gave cannot be used.

    The CLI exits with status 2 on it (like other usage errors).
    """


# ---------------------------------------------------------------------------------------------
# Argument checks of the library's public functions: one sentence naming the argument,
# "bench: url must be a string, not int", raised as UsageError before anything starts.


def type_name(value: object) -> str:
    """``None``, ``int``, ``str``, ... : how a message names what was given."""
    return "None" if value is None else type(value).__name__


def wrong_type(what: str, expected: str, value: object) -> UsageError:
    """The one message for an argument of the wrong type: ``WHAT must be EXPECTED, not TYPE``."""
    return UsageError(f"{what} must be {expected}, not {type_name(value)}")


def check_type(value: Any, kinds: type | tuple[type, ...], what: str, expected: str, *, optional: bool = False) -> Any:
    """``value`` if it is one of ``kinds`` (a bool is no number; None when ``optional``), else
    :func:`wrong_type`."""
    if optional and value is None:
        return value
    number_kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(value, bool) and bool not in number_kinds:
        raise wrong_type(what, expected, value)
    if not isinstance(value, kinds):
        raise wrong_type(what, expected, value)
    return value


def check_text(value: Any, what: str, *, optional: bool = False) -> Any:
    """A ``str`` (or None when ``optional``)."""
    return check_type(value, str, what, "a string" + (" or None" if optional else ""), optional=optional)


def check_flag(value: Any, what: str) -> bool:
    """``True`` or ``False``, nothing that merely looks true (``"no"`` is a non-empty string)."""
    return bool(check_type(value, bool, what, "True or False"))


def check_path(value: Any, what: str, *, optional: bool = False) -> Any:
    """A path: a ``str`` or an ``os.PathLike`` (or None when ``optional``); not an empty string."""
    check_type(value, (str, os.PathLike), what, "a path (str or os.PathLike)" + (" or None" if optional else ""),
               optional=optional)
    if isinstance(value, str) and not value.strip():
        raise UsageError(f"{what} must not be an empty path")
    return value


def check_callable(value: Any, what: str) -> Any:
    """A callable or None."""
    if value is not None and not callable(value):
        raise wrong_type(what, "a callable or None", value)
    return value


def check_strings(value: Any, what: str, *, single: bool = False, expected: str | None = None) -> tuple[str, ...]:
    """A list or tuple of strings; with ``single``, one string stands for a list of one.
    ``expected`` words what may be given (default: "a list of strings")."""
    if single and isinstance(value, str):
        return (value,)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise wrong_type(what, expected or "a list of strings" + (" or one string" if single else ""), value)
    for item in value:
        if not isinstance(item, str):
            raise UsageError(f"{what} must hold strings only, not {type_name(item)}")
    return tuple(value)


def check_str_mapping(value: Any, what: str, *, optional: bool = True) -> dict[str, str]:
    """A mapping of strings to strings (None when ``optional``: empty)."""
    if value is None and optional:
        return {}
    if not isinstance(value, Mapping):
        raise wrong_type(what, "a mapping of strings to strings", value)
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise UsageError(f"{what} must map strings to strings, not {type_name(key)} to {type_name(item)}")
    return dict(value)


def check_instance(value: Any, kind: type, what: str, *, optional: bool = False) -> Any:
    """An instance of ``kind`` (a pounder class: the message names it)."""
    return check_type(value, kind, what, f"a {kind.__name__}" + (" or None" if optional else ""), optional=optional)
