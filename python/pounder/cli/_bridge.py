"""The one bridge from options declared on dataclass fields (:mod:`pounder._flags`: flags, metavar,
help text and, for a command's own record, its panel and default) to typer's options.

A command names the fields it offers (:func:`takes`: whole records, or single fields as
:class:`Use`, in the panel it shows them in, with the sentence that states its own default); the
options are added to its click command where it says (no signature is rewritten: typer builds
the command from the function as written, :class:`DeclaredOptions` adds the declared params), and
the function reads their values back as one record each with :func:`given`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import typer
import typer.main
from typer.core import TyperCommand
from typer.models import ParamMeta

from pounder._flags import FLAG, Flag, declared, flag

_UNSET: Any = object()
_ATTRIBUTE = "__pounder_options__"
_META = "pounder.options"

Record = TypeVar("Record")


@dataclass(frozen=True)
class Use:
    """Field ``name`` of ``record`` offered by a command, shown in ``panel``: its help text then
    ``more`` (the command's own default, a sentence), or ``help`` instead of both; ``value``: the
    command's default when the option is not given (else None, or False for a switch); ``kind``:
    the type typer reads its value as, when the command's differs from the field's."""

    record: type
    name: str
    panel: str
    more: str = ""
    help: str | None = None
    value: Any = _UNSET
    kind: type | None = None

    def flag(self) -> Flag:
        base = declared(self.record, self.name)
        return dataclasses.replace(base, panel=self.panel, kind=self.kind or base.kind,
                                   help=self.help or " ".join(filter(None, (base.help, self.more))))  # fmt: skip

    def default(self) -> Any:
        if self.value is not _UNSET:
            return self.value
        return False if declared(self.record, self.name).metavar is None else None


def fields_of(record: type, *names: str) -> list[Use]:
    """Every option field of a command's own ``record`` in its order (or those ``names``, in theirs),
    each in its own panel and with the field's default."""
    fields = {field.name: field for field in dataclasses.fields(record) if FLAG in field.metadata}
    return [Use(record, field.name, field.metadata[FLAG].panel or "Options",
                value=None if field.metadata[FLAG].repeatable else field.default)
            for field in (map(fields.__getitem__, names) if names else fields.values())]  # fmt: skip


def flag_of(info: Any, panel: str | None = None, *, repeatable: bool = False) -> dict[str, Flag]:
    """A field's metadata declaring the option a helper several commands use makes as typer's option
    (``--ram``, ``--report``, ``--json``): its flags, metavar and help, shown in ``panel`` (None: the
    one it was made for)."""
    names = tuple(name for name in (info.default, *info.param_decls) if isinstance(name, str))
    return flag(*names, metavar=info.metavar, help=info.help, panel=panel or info.rich_help_panel,
                repeatable=repeatable)  # fmt: skip


_TAG = re.compile(r"(?<!\\)\[(?=[a-zA-Z#/@])")


def as_written(text: str) -> str:
    """Help as written: brackets are text, never rich markup (``pounder[metrics]``, ``[tls]``,
    ``[[login]]``): each ``[`` that rich would read as a tag's escaped, once (a help made of another
    option's, already escaped, stays as it is)."""
    return _TAG.sub(r"\\[", text)


def _help(declared_flag: Flag) -> str:
    return as_written(declared_flag.help)


def typer_option(declared_flag: Flag) -> Any:
    """The flag as typer's option (no default shown: defaults are stated in the help text)."""
    return typer.Option(*declared_flag.names, metavar=declared_flag.metavar, rich_help_panel=declared_flag.panel,
                        help=_help(declared_flag), show_default=False)  # fmt: skip


def _kind(declared_flag: Flag, default: Any) -> Any:
    if declared_flag.metavar is None:
        return bool if default is not None else bool | None
    if declared_flag.repeatable:
        return list[str] | None
    return declared_flag.kind | None


def _click_param(use: Use) -> Any:
    """``use`` as the click parameter typer would make of ``name: Annotated[kind, Option(...)] = default``."""
    declared_flag, default = use.flag(), use.default()
    info = typer.Option(default, *declared_flag.names, metavar=declared_flag.metavar,
                        rich_help_panel=declared_flag.panel, help=_help(declared_flag), show_default=False)  # fmt: skip
    meta = ParamMeta(name=use.name, default=info, annotation=_kind(declared_flag, default))
    make = getattr(typer.main, "_get_param", None)
    if make is not None:
        return make(meta)
    return typer.main.get_click_param(meta)[0]  # type: ignore[attr-defined,no-any-return,unused-ignore]


@dataclass(frozen=True)
class _Declared:
    groups: tuple[tuple[tuple[Use, ...], str | None], ...]
    """Each :func:`takes`' options and the parameter they are shown before, in the order applied."""
    build: Mapping[type, Callable[[dict[str, Any]], Any]]

    @property
    def uses(self) -> tuple[Use, ...]:
        return tuple(use for uses, _ in self.groups for use in uses)


Command = Callable[..., Any]


def takes(*uses: Use | type, before: str | None = None,
          build: Mapping[type, Callable[[dict[str, Any]], Any]] | None = None) -> Callable[[Command], Command]:
    """A command that offers the options declared by ``uses`` (a :class:`Use`, or a record: all
    its fields, :func:`fields_of`), shown before its parameter ``before`` (None: after its own);
    it reads them with :func:`given`. ``build``: how a record is made of its options' values
    (default: the record's constructor, repeated options as tuples). Stacked, each shows its own
    options before its own ``before`` (the decorator nearest the function first)."""
    listed = tuple(use for item in uses for use in ([item] if isinstance(item, Use) else fields_of(item)))

    def declare(command: Command) -> Command:
        earlier: _Declared = getattr(command, _ATTRIBUTE, _Declared((), {}))
        setattr(command, _ATTRIBUTE, _Declared((*earlier.groups, (listed, before)), {**earlier.build, **(build or {})}))
        return command

    return declare


def given(ctx: typer.Context, record: type[Record]) -> Record:
    """The ``record`` a command's options make (see :func:`takes`)."""
    made: Record = ctx.meta[_META][record]
    return made


def _make(record: type, values: dict[str, Any]) -> Any:
    repeated = {name for name in values if declared(record, name).repeatable}
    return record(**{name: tuple(value or ()) if name in repeated else value for name, value in values.items()})


class DeclaredOptions(TyperCommand):
    """A command whose function was declared with :func:`takes`: the declared options among its
    parameters, their values given to it as records (:func:`given`), not as arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._declared: _Declared | None = getattr(getattr(self.callback, "__wrapped__", None), _ATTRIBUTE, None)
        if self._declared is None:
            return
        for uses, before in self._declared.groups:
            names = [param.name for param in self.params]
            at = names.index(before) if before is not None else len(self.params)
            self.params[at:at] = [_click_param(use) for use in uses]

    def invoke(self, ctx: Any) -> Any:
        if self._declared is not None:
            records: dict[type, dict[str, Any]] = {}
            for use in self._declared.uses:
                records.setdefault(use.record, {})[use.name] = ctx.params.pop(use.name)
            ctx.meta[_META] = {record: self._declared.build.get(record, lambda v, r=record: _make(r, v))(values)
                               for record, values in records.items()}  # fmt: skip
        return super().invoke(ctx)

