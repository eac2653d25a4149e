"""The load options of bench, compare and syscalls are declared once (cli/_load_options.py): the
same flag has the same help text in every command that offers it, save the sentence that states
a command's own default."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from pounder.cli import app


def _options(command: str) -> dict[str, str]:
    group: Any = typer.main.get_command(app)  # click's Group, or typer's vendored copy of it
    found = group.commands[command]
    return {name: param.help or "" for param in found.params if param.param_type_name == "option"
            for name in param.opts}  # fmt: skip


@pytest.mark.parametrize("flag", ["-c", "-t", "--rate", "--keepalive", "--timeout", "--allow-remote", "--io"])
def test_bench_and_compare_share_the_help(flag: str) -> None:
    bench, compare = _options("bench")[flag], _options("compare")[flag]
    shared = bench.split(" Length:")[0]
    assert compare.startswith(shared), (bench, compare)


@pytest.mark.parametrize("flag", ["--timeout", "--keepalive", "--io"])
def test_syscalls_shares_the_help(flag: str) -> None:
    """(syscalls' -d has a text of its own: -n always applies there, so -d is only a cap.)"""
    bench, syscalls = _options("bench")[flag], _options("syscalls")[flag]
    assert syscalls.split(" Default")[0] == bench.split(" Default")[0], (bench, syscalls)


@pytest.mark.parametrize("command", ["bench", "compare", "syscalls", "profile"])
def test_io_is_offered_wherever_the_load_options_are(command: str) -> None:
    assert _options(command)["--io"] == _options("bench")["--io"]
