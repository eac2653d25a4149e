"""Which program a server runs and whether it is installed: one rule and one sentence for the
servers that need only their program on PATH (Starman, Puma, Unicorn)."""

from __future__ import annotations

import shutil


def program_missing(program: str, packages: str) -> str | None:
    """Why ``program`` cannot run here (it is not on PATH: the Debian ``packages`` that install
    it), or None if it can."""
    if shutil.which(program) is None:
        return f"{program} is not installed (Debian: apt-get install {packages})"
    return None


def program_path(binary: str | None, program: str) -> str:
    """What a server runs: ``binary`` when one is given, else ``program`` as found on PATH, else
    ``program`` as it is (:func:`program_missing` says why it cannot run)."""
    return binary or shutil.which(program) or program
