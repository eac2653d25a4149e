#!/usr/bin/env python3
"""docs/man/pounder.1: the pounder(1) man page, one page with every command, made of what ``--help``
shows: each command's usage line, help text and parameters (arguments, then options by panel, as
``--help`` orders them), taken from the commands themselves in the order of ``pounder --help``
(tests/tools/cli_reference.py lists them, as it does for docs/reference/cli.md).

    python3 tests/tools/man_page.py           # write docs/man/pounder.1 (make man)
    python3 tests/tools/man_page.py --check   # exit 1 when the file differs from the help

tests/test_docs_man.py fails when the page drifts from the help: regenerate it with the first
command after changing an option or a help text. Read it with ``man -l docs/man/pounder.1``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from pounder._version import __version__
from pounder.cli import app

if str(Path(__file__).parent) not in sys.path:  # tests/tools is no package: cli_reference.py is beside this file
    sys.path.insert(0, str(Path(__file__).parent))
import cli_reference as reference  # noqa: E402

REPO: Path = reference.REPO
PAGE = REPO / "docs" / "man" / "pounder.1"
ARGUMENTS, OPTIONS = "Arguments", "Options"  # typer's default panels, shown first


def roff(text: str) -> str:
    """``text`` as one line of roff text: backslashes and hyphens escaped (``\\-`` is an ASCII
    hyphen-minus in a terminal, so a copied option works), other than ASCII by its code point (an
    em dash ``\\[u2014]``: read alike with or without preconv), a leading control character made text."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = "".join(char if char.isascii() else f"\\[u{ord(char):04X}]" for char in text)
    return "\\&" + text if text.startswith((".", "'")) else text


def paragraphs(help_text: str | None) -> list[str]:
    """A help text's paragraphs (blank-line separated), each on one line, as --help joins them."""
    return [" ".join(part.split()) for part in (help_text or "").split("\n\n") if part.strip()]


def _panels(command: Any, ctx: Any) -> list[tuple[str, list[Any]]]:
    """The command's shown parameters by panel, in --help's order: the arguments, the options
    without a panel of their own, then each other panel as its first option comes."""
    arguments: dict[str, list[Any]] = {ARGUMENTS: []}
    options: dict[str, list[Any]] = {OPTIONS: []}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        is_argument = param.param_type_name == "argument"
        panels = arguments if is_argument else options
        panels.setdefault(getattr(param, "rich_help_panel", None) or (ARGUMENTS if is_argument else OPTIONS),
                          []).append(param)  # fmt: skip
    return [(name, params) for name, params in (*arguments.items(), *options.items()) if params]


def _value(param: Any, ctx: Any) -> str | None:
    """What an option's value is shown as in --help (FILE, N, auto|uring|epoll); None for a flag."""
    shown = getattr(param, "display_type_rich", None)
    if shown is not None:
        value: str | None = shown(ctx=ctx)
        return value
    return None if param.is_flag or param.count else param.metavar  # pragma: no cover (an older typer)


def _term(param: Any, ctx: Any) -> str:
    """The tag of a parameter's entry: ``-f, --url-file FILE`` in bold and italics."""
    if param.param_type_name == "argument":
        return f"\\fI{roff(param.metavar or param.name.upper())}\\fR"
    names = sorted(param.opts, key=lambda name: name.startswith("--")) + list(param.secondary_opts)
    term = ", ".join(f"\\fB{roff(name)}\\fR" for name in names)
    value = _value(param, ctx)
    return f"{term} \\fI{roff(value)}\\fR" if value else term


def _entries(command: Any, ctx: Any, headings: bool = True) -> list[str]:
    """Each shown parameter as a tagged paragraph, under its panel's heading (``headings``)."""
    lines = []
    for panel, params in _panels(command, ctx):
        lines += [f'.SS "{panel}"'] if headings else []
        for param in params:
            lines += [".TP", _term(param, ctx), *(_joined(paragraphs(getattr(param, "help", None))))]
    return lines


def _joined(parts: list[str]) -> list[str]:
    """An entry's paragraphs: the first after its tag, each further one indented as it is."""
    lines: list[str] = []
    for index, part in enumerate(parts):
        lines += ([".IP"] if index else []) + [roff(part)]
    return lines


def _synopsis(path: str, pieces: list[str]) -> list[str]:
    return [f"\\fB{roff(path)}\\fR {roff(' '.join(pieces))}", ".br"]


def page() -> str:
    """The whole page."""
    group: Any = typer.main.get_command(app)
    root = group.context_class(group, info_name="pounder")
    names = reference.commands()
    subs = []
    for name in names:
        command = group.get_command(root, name)
        subs.append((name, command, command.context_class(command, info_name=name, parent=root)))
    summary = paragraphs(group.help)[0].rstrip(".")
    lines = [
        f'.\\" generated by tests/tools/man_page.py from the commands\' --help with {reference.renderer()}',
        '.\\" do not edit: change the help texts, then run python3 tests/tools/man_page.py (make man)',
        f'.TH POUNDER 1 "" "pounder {__version__}" "pounder manual"',
        ".nh",  # no word broken at a line's end: an option is read, and copied, whole
        ".ad l",
        ".SH NAME",
        f"pounder \\- {roff(summary[0].lower() + summary[1:])}",
        ".SH SYNOPSIS",
        *_synopsis("pounder", group.collect_usage_pieces(root)),
        *(line for name, command, ctx in subs for line in _synopsis(f"pounder {name}",
                                                                    command.collect_usage_pieces(ctx))),
        ".SH DESCRIPTION",
    ]
    for part in paragraphs(group.help):
        lines += [".PP", roff(part)]
    lines += [".PP", roff("Each command has its section below, the same as pounder COMMAND --help prints.")]
    lines += [".SH OPTIONS", *_entries(group, root, headings=False), ".SH COMMANDS"]
    for name, command, _ in subs:
        lines += [".TP", f"\\fB{roff(name)}\\fR", roff(paragraphs(command.help)[0])]
    for name, command, ctx in subs:
        lines += [f'.SH "POUNDER {name.upper()}"', *_synopsis(f"pounder {name}", command.collect_usage_pieces(ctx))]
        for part in paragraphs(command.help):
            lines += [".PP", roff(part)]
        lines += _entries(command, ctx)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    return reference.write_or_check(PAGE, page(), argv, "man_page.py", __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
