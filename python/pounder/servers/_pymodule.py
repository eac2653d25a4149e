"""Finding a Python module the way an interpreter would, without importing anything: where
gunicorn and uWSGI would load an application's module from."""

from __future__ import annotations

import importlib.machinery


def find_module_spec(module: str, dirs: list[str]) -> importlib.machinery.ModuleSpec | None:
    """The spec of the dotted ``module`` found on ``dirs`` (its packages' own paths for the parts
    after the first), None when it is not there or a part is not an identifier."""
    locations: list[str] | None = dirs
    found = None
    for depth, part in enumerate(module.split(".")):
        if locations is None or not part.isidentifier():
            return None
        found = importlib.machinery.PathFinder.find_spec(".".join(module.split(".")[:depth + 1]), locations)
        if found is None:
            return None
        locations = list(found.submodule_search_locations or []) or None
    return found
