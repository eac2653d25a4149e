"""Exit codes and error printing shared by the CLI's modules."""

from __future__ import annotations

import sys
from typing import Any

import typer

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def print_error(message: str) -> None:
    """Print ``pounder: error: <message>`` on one line to stderr."""
    line = " ".join(message.split())
    sys.stderr.write(f"pounder: error: {line}\n")
    sys.stderr.flush()


def option(*names: str, panel: str, metavar: str | None = None, help: str) -> Any:  # noqa: A002
    """A value option without a shown default (defaults are stated in the help text)."""
    return typer.Option(*names, metavar=metavar, rich_help_panel=panel, help=help, show_default=False)
