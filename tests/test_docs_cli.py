"""docs/reference/cli.md is every command's ``--help`` as the commands print it now: an option or a
help text changed without the page regenerated fails here. Regenerate with
``python3 tests/tools/cli_reference.py``. The page is compared character for character when the
help is drawn by the typer, click and rich it was generated with, and word for word otherwise (another
version draws other boxes and wraps elsewhere, with the same words)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.cliutil import doc_tool

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> Any:
    return doc_tool("cli_reference")


def test_the_cli_reference_is_the_help() -> None:
    tool = _tool()
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    now = tool.reference()
    fix = "run python3 tests/tools/cli_reference.py"
    assert tool.words(page) == tool.words(now), f"docs/reference/cli.md differs from the help: {fix}"
    if f"with {tool.renderer()} -->" in page:
        assert page == now, f"docs/reference/cli.md differs from the help: {fix}"


def test_every_command_has_its_section() -> None:
    tool = _tool()
    names = tool.commands()
    assert {"bench", "mem", "tune", "compare", "run", "syscalls", "profile", "top", "report",
            "completion"} <= set(names)
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    for name in names:
        assert f"## pounder {name}\n" in page
