"""Exceptions raised by pounder."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast


class PounderError(Exception):
    """Base class of every error pounder raises on purpose.

    The message is always one line meant for a human: the CLI prints it as
    ``pounder: error: <message>``.
    """


class UsageError(PounderError, ValueError):
    """Bad input: an option, URL, file or value the user gave cannot be used.

    The CLI exits with status 2 on it (like other usage errors).
    """


QUOTE_LIMIT = 100
"""The most characters of a user's text (a name, a path, a value read from a file) that a message
or a name pounder makes from it holds."""


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """User text as a message (or a name made from it) quotes it: whole up to ``limit``
    characters; longer, its start and its end around ``…(N characters)…``, so that a 200 KB path
    is not a 200 KB error line. The one helper for this: every reader that quotes what it read
    goes through it (or :func:`quoted`)."""
    if len(text) <= limit:
        return text
    middle = f"…({len(text):,} characters)…"
    keep = max(2, limit - len(middle))
    return text[:keep - keep // 3] + middle + text[len(text) - keep // 3:]


def quoted(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``repr`` of :func:`clip`: quoted, control characters escaped (one line), at most about
    ``limit`` characters."""
    return repr(clip(text, limit))


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


# ---------------------------------------------------------------------------------------------
# Calls that do not fit a public callable's signature: "bench: takes 1 positional argument (url),
# got 2", "make_options: unexpected argument 'bogus'", raised as UsageError, not Python's TypeError.

Public = TypeVar("Public", bound=Callable[..., Any])
PUBLIC_MARK = "__pounder_public__"
"""The attribute :func:`public` sets (True) on what it checks: the function, the class."""


def public(obj: Public) -> Public:
    """Mark a public function or class of a package face: a call that does not fit its signature
    (too many positional arguments, an unknown or missing one) raises :class:`UsageError` naming
    the function and the problem. For a class it is its constructor (``__init__``).

    The call goes through unchanged; only when it raises ``TypeError`` are the arguments bound to
    the signature, so a TypeError from inside the function stays what it was. The signature and
    docstring stay visible (:func:`functools.wraps`)."""
    if isinstance(obj, type):
        cls: type = obj
        # its own __init__ or the one it inherits (then checked under this class's name)
        init = next(vars(k)["__init__"] for k in cls.__mro__ if "__init__" in vars(k))
        init = getattr(init, "__wrapped__", init) if getattr(init, PUBLIC_MARK, False) else init
        if inspect.isfunction(init):
            setattr(cls, "__init__", _checked(init, cls.__name__, skip_first=True))  # noqa: B010
        setattr(cls, PUBLIC_MARK, True)
        return obj
    return cast(Public, _checked(obj, obj.__name__, skip_first=False))


def _checked(function: Callable[..., Any], name: str, *, skip_first: bool) -> Callable[..., Any]:
    signature = inspect.signature(function)

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except TypeError:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as error:
                given = args[1:] if skip_first else args
                raise UsageError(f"{name}: {_misfit(signature, given, kwargs, skip_first) or error}") from None
            raise

    setattr(call, PUBLIC_MARK, True)
    return call


def _misfit(signature: inspect.Signature, args: Sequence[Any], kwargs: Mapping[str, Any], skip_first: bool) -> str:
    """Why ``args`` and ``kwargs`` do not fit ``signature`` (without its first parameter, ``self``,
    when ``skip_first``), in words; "" when no rule below says it."""
    kind = inspect.Parameter
    params = list(signature.parameters.values())[1 if skip_first else 0:]
    positional = [p for p in params if p.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD)]
    if len(args) > len(positional) and not any(p.kind is kind.VAR_POSITIONAL for p in params):
        if not positional:
            return f"takes no positional arguments, got {len(args)}"
        names = ", ".join(p.name for p in positional)
        plural = "" if len(positional) == 1 else "s"
        return f"takes {len(positional)} positional argument{plural} ({names}), got {len(args)}"
    by_name = {p.name: p for p in params if p.kind not in (kind.VAR_POSITIONAL, kind.VAR_KEYWORD)}
    for key in kwargs:
        param = by_name.get(key)
        if param is None and not any(p.kind is kind.VAR_KEYWORD for p in params):
            return f"unexpected argument {key!r}"
        if param is not None and param.kind is kind.POSITIONAL_ONLY:
            return f"argument {key!r} must be given by position"
        if param is not None and param in positional[:len(args)]:
            return f"got two values for argument {key!r}"
    given = {p.name for p in positional[:len(args)]} | set(kwargs)
    missing = [p.name for p in params if p.default is p.empty and p.name not in given
               and p.kind not in (kind.VAR_POSITIONAL, kind.VAR_KEYWORD)]
    if missing:
        return f"missing argument{'' if len(missing) == 1 else 's'} " + ", ".join(repr(m) for m in missing)
    return ""
