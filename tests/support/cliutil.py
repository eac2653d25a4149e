"""Running ``pounder``: in this process through typer's CliRunner (``run_cli``), or as a real
``python -m pounder`` child process (``run_pounder`` to its end, ``start_pounder`` left running,
``pounder_argv`` for a command that wraps it); and what a usage error must look like: exit status 2,
one line ``pounder: error: ...`` on stderr, no traceback, nothing on stdout."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from pounder.cli import app

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
TOOLS_DIR = Path(__file__).resolve().parents[1] / "tools"
"""This checkout's python/ (where ``import pounder`` must come from in a child process)."""


def runner() -> CliRunner:
    """A runner that keeps stderr apart from stdout (click < 8.2 needs mix_stderr=False for that)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg,unused-ignore]
    except TypeError:  # click >= 8.2: always separate
        return CliRunner()


def run_cli(*args: str) -> tuple[int, str, str]:
    """``pounder ARGS...``: (exit status, stdout, stderr)."""
    result = runner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def pounder_argv(*args: object, python: object = None) -> list[str]:
    """The argv of ``python -m pounder ARGS...`` (each argument made a str), ``python`` this
    interpreter unless given: for a command that wraps it (prlimit, unshare, ``interrupted``)."""
    return [str(sys.executable if python is None else python), "-m", "pounder", *map(str, args)]


def pounder_command(*args: object) -> str:
    """``python -m pounder ARGS...`` as one shell command line (for ``sh -c`` and tmux), the arguments
    joined as given, unquoted (a line that goes inside quotes of its own: no argument may hold a space
    or a quote)."""
    return " ".join(pounder_argv(*args))


def with_pythonpath(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (this process's environment unless given) with this checkout's python/ first on
    PYTHONPATH (a PYTHONPATH it holds already kept after it)."""
    env = os.environ if env is None else env
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))}


def run_pounder(*args: object, timeout: float, python: object = None, prefix: Sequence[str] = (),
                stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE,
                **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``[PREFIX...] python -m pounder ARGS...`` run to its end within ``timeout`` seconds, stdout and
    stderr captured as text (unless redirected), the exit status left to the caller. Other keywords
    (``env``, ``cwd``, ``stdin``, ``input``) go to subprocess.run as given: left out, the child
    inherits this process's environment, directory and stdin."""
    return subprocess.run([*prefix, *pounder_argv(*args, python=python)], stdout=stdout, stderr=stderr,
                          text=True, timeout=timeout, check=False, **kwargs)


def start_pounder(*args: object, stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE,
                  text: bool = True, **kwargs: Any) -> subprocess.Popen[Any]:
    """``python -m pounder ARGS...`` started and left running, for a test that signals it, kills it or
    watches it mid-run: the caller waits for it (or kills it) in every case. Other keywords (``env``,
    ``cwd``, ``stdin``, ``start_new_session``, ...) go to subprocess.Popen as given."""
    return subprocess.Popen(pounder_argv(*args), stdout=stdout, stderr=stderr, text=text, **kwargs)


def assert_usage_error(code: int, stdout: str, stderr: str, *fragments: str) -> str:
    """Exit 2 with one ``pounder: error:`` line holding every fragment; that line."""
    assert code == 2, (code, stdout, stderr)
    assert "Traceback" not in stderr + stdout
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("pounder: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def doc_tool(name: str) -> Any:
    """A generator of tests/tools (``cli_reference``, ``man_page``: scripts, no package) imported."""
    if str(TOOLS_DIR) not in sys.path:
        sys.path.insert(0, str(TOOLS_DIR))
    return importlib.import_module(name)
