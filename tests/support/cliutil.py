"""Running ``pounder`` through typer's CliRunner, and what a usage error must look like: exit
status 2, one line ``pounder: error: ...`` on stderr, no traceback, nothing on stdout."""

from __future__ import annotations

from typer.testing import CliRunner

from pounder.cli import app


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
