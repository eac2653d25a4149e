"""Options declared once, as oha declares them on one ``Opts`` struct: each option's flags, metavar
and help text on its dataclass field (:func:`flag`, in the field's metadata), whichever layer the
record belongs to (the library's :class:`~pounder.LoadOptions`, a command's own record); the
command line makes its options of them (``pounder.cli._bridge``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

FLAG = "pounder.flag"
"""The key of an option's :class:`Flag` in a dataclass field's metadata."""


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
