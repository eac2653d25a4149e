"""Options declared once, as oha declares them on one ``Opts`` struct: each option's flags, metavar
and help text on its dataclass field (:func:`flag`, in the field's metadata), whichever layer the
record belongs to (the library's :class:`~pounder.LoadOptions`, a command's own record); the
command line makes its options of them (``pounder.cli._bridge``); and where a command's option goes
(:func:`feeds`: the keyword of the library call it is given to, and how it is converted on the way)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FLAG = "pounder.flag"
"""The key of an option's :class:`Flag` in a dataclass field's metadata."""

FEED = "pounder.feed"
"""The key of an option's :class:`Feed` in a dataclass field's metadata."""


@dataclass(frozen=True)
class Flag:
    """An option as the command line shows it: its ``names`` (``("-c", "--connections")``, or
    ``("--keepalive/--no-keepalive",)`` for a switch), its ``metavar`` (None: a switch, no value),
    its ``help`` text; ``panel``: where a command's own record shows it; ``kind``: the type of its
    value (``str``, ``int``); ``repeatable``: given more than once (a list of values)."""

    names: tuple[str, ...]
    metavar: str | None
    help: str
    panel: str | None = None
    kind: type = str
    repeatable: bool = False


def flag(*names: str, metavar: str | None = None, help: str, panel: str | None = None,  # noqa: A002
         kind: type = str, repeatable: bool = False) -> dict[str, Flag]:  # fmt: skip
    """A field's metadata declaring its option (``field(default=None, metadata=flag(...))``)."""
    return {FLAG: Flag(names, metavar, help, panel, kind, repeatable)}


def declared(record: type, name: str) -> Flag:
    """The :class:`Flag` of field ``name`` of the dataclass ``record``."""
    for field in dataclasses.fields(record):
        if field.name == name and FLAG in field.metadata:
            declared_flag: Flag = field.metadata[FLAG]
            return declared_flag
    raise KeyError(f"{record.__name__}.{name} declares no option")


def like(record: type, name: str, *, panel: str, help: str | None = None) -> dict[str, Flag]:  # noqa: A002
    """The metadata of a field that is another record's option (its flags and metavar), shown in
    ``panel`` with the command's own ``help`` text."""
    base = declared(record, name)
    return {FLAG: dataclasses.replace(base, panel=panel, help=help or base.help)}


@dataclass(frozen=True)
class Feed:
    """Where a command's option goes: the keyword ``keyword`` of the call ``into`` (a function or a
    class), its value converted by ``convert`` (given the value and the option's first flag, for
    its error messages; None: as it is)."""

    into: Callable[..., Any]
    keyword: str
    convert: Callable[[Any, str], Any] | None = None


def feeds(into: Callable[..., Any], keyword: str, convert: Callable[[Any, str], Any] | None = None) -> dict[str, Feed]:
    """A field's metadata saying which keyword of ``into`` its value is given as (joined to its
    flag's: ``metadata=flag(...) | feeds(make_options, "clients", count)``)."""
    return {FEED: Feed(into, keyword, convert)}


def fed(record: Any, into: Callable[..., Any]) -> dict[str, Any]:
    """The keywords the fields of the dataclass instance ``record`` give ``into``, each converted as
    its field declares, in the order of ``into``'s parameters: a conversion that fails raises
    the error the call written out keyword by keyword would have raised first."""
    given: dict[str, tuple[dataclasses.Field[Any], Feed]] = {}
    for item in dataclasses.fields(record):
        feed = item.metadata.get(FEED)
        if feed is not None and feed.into is into:
            given[feed.keyword] = (item, feed)
    order = list(inspect.signature(into).parameters)
    unknown = sorted(set(given) - set(order))
    if unknown:
        raise TypeError(f"{type(record).__name__} feeds {', '.join(unknown)}: not parameters of {into.__name__}")
    values: dict[str, Any] = {}
    for keyword in (name for name in order if name in given):
        item, feed = given[keyword]
        value = getattr(record, item.name)
        values[keyword] = value if feed.convert is None else feed.convert(value, item.metadata[FLAG].names[0])
    return values
