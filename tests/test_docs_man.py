"""docs/man/pounder.1 is the man page tests/tools/man_page.py makes from every command's ``--help``
now: an option or a help text changed without the page made again (``make man``) fails here. The page
is compared whole when the typer and click it was made with build the commands, and without its
first line (the comment naming them) otherwise. With man-db here, it renders without a warning."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.cliutil import doc_tool

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "man" / "pounder.1"
FIX = "run make man (python3 tests/tools/man_page.py)"


def _tool() -> Any:
    return doc_tool("man_page")


def test_the_man_page_is_the_help() -> None:
    tool = _tool()
    page = PAGE.read_text(encoding="utf-8")
    now = tool.page()
    if f"with {tool.reference.renderer()}\n" in page.splitlines(keepends=True)[0]:
        assert page == now, f"docs/man/pounder.1 differs from the help: {FIX}"
    else:
        assert page.split("\n", 1)[1] == now.split("\n", 1)[1], f"docs/man/pounder.1 differs from the help: {FIX}"


def test_every_command_has_its_section_and_synopsis() -> None:
    tool = _tool()
    page = PAGE.read_text(encoding="utf-8")
    names = tool.reference.commands()
    assert {"bench", "mem", "tune", "compare", "run", "syscalls", "profile", "top", "report",
            "completion"} <= set(names)
    for name in names:
        assert f'\n.SH "POUNDER {name.upper()}"\n' in page
        assert f"\n\\fBpounder {name}\\fR " in page


@pytest.mark.parametrize(("text", "line"), [
    ("pre-forking", "pre\\-forking"),
    ("a \\ b", "a \\e b"),
    (".htaccess first", "\\&.htaccess first"),
    ("'quoted' first", "\\&'quoted' first"),
    ("it's — here", "it's \\[u2014] here"),
])  # fmt: skip
def test_roff_escapes_what_roff_would_read(text: str, line: str) -> None:
    assert _tool().roff(text) == line


@pytest.mark.skipif(shutil.which("man") is None, reason="man (man-db) is not installed")
def test_the_page_renders_without_warnings() -> None:
    env = {**os.environ, "MANWIDTH": "100", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "MAN_KEEP_FORMATTING": ""}
    done = subprocess.run(["man", "--warnings", "-l", str(PAGE)], env=env, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert lines[0].split() == ["POUNDER(1)", "pounder", "manual", "POUNDER(1)"]
    assert "pounder bench [OPTIONS] [URL]" in lines
    assert "POUNDER TUNE" in lines
    assert "-f, --url-file FILE" in lines  # options as typed: ASCII hyphens, nothing broken at a line's end
    assert "--keepalive, --no-keepalive" in lines
    assert "fish: pounder completion fish > ~/.config/fish/completions/pounder.fish" in lines
