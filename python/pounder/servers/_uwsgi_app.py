"""Where uWSGI would import a WSGI app from: its python3 plugin embeds the system Python, not
pounder's, so a module is looked for (nothing imported) on ``pythonpath``, the environment's
``PYTHONPATH`` and the system Python's own path (:func:`uwsgi_app_missing`, :func:`uwsgi_app_file`)."""

from __future__ import annotations

import contextlib
import functools
import importlib.machinery
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from pounder._errors import public
from pounder._given import given
from pounder.servers._pymodule import find_module_spec

SYSTEM_PYTHON = "/usr/bin/python3"


@functools.lru_cache(maxsize=4)
def system_python_path(python: str = SYSTEM_PYTHON) -> tuple[str, ...]:
    """``sys.path`` of the system Python that uWSGI's python3 plugin embeds (its absolute entries);
    empty when it cannot be asked. Only the interpreter's start-up runs, none of the user's code."""
    with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError):
        done = subprocess.run([python, "-c", "import json, sys; print(json.dumps(sys.path))"],
                              capture_output=True, timeout=10, check=True, env={"PATH": os.defpath},
                              stdin=subprocess.DEVNULL)
        return tuple(p for p in json.loads(done.stdout) if isinstance(p, str) and os.path.isabs(p))
    return ()


def _find_module(app: str, pythonpath: str | None,
                 env: Mapping[str, str] | None) -> tuple[str | None, importlib.machinery.ModuleSpec | None]:
    """(why uWSGI could not find the module of ``app``, its spec): see :func:`uwsgi_app_missing`."""
    dirs = []
    for entry in filter(None, (pythonpath or "").split(",")):
        if not Path(entry).is_dir():
            return f"{given('pythonpath', '--pythonpath', entry)} is not a directory", None
        dirs.append(str(Path(entry).resolve()))
    environ = {**os.environ, **(env or {})}
    dirs += [d for d in environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(d)]
    system = system_python_path()
    if not system:
        return None, None  # cannot tell
    dirs += system
    module = app.partition(":")[0]
    found = find_module_spec(module, dirs)
    if found is not None:
        return None, found
    where = f"in {given('pythonpath', '--pythonpath', pythonpath)}, " if pythonpath else ""
    return (f"cannot find the module {module!r} of {app} {where}on PYTHONPATH or in the path of {SYSTEM_PYTHON} "
            f"(uWSGI's python3 plugin runs the system Python, not pounder's)"), None


@public
def uwsgi_app_missing(app: str, *, pythonpath: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """Why uWSGI (its python3 plugin: the system Python) could not find the module of ``app``
    ("module:callable"), or None if it can or we cannot tell. Each directory of ``pythonpath``
    (comma-separated) must exist; the module is looked for, without importing anything, on them,
    the environment's absolute ``PYTHONPATH`` entries and the system Python's path."""
    return _find_module(app, pythonpath, env)[0]


@public
def uwsgi_app_file(app: str, *, pythonpath: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The file uWSGI would load the module of ``app`` from (found as by
    :func:`uwsgi_app_missing`), or None when it is not found or not a file."""
    spec = _find_module(app, pythonpath, env)[1]
    return spec.origin if spec is not None and spec.has_location and spec.origin else None
