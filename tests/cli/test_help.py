"""What ``pounder X --help`` and the usage errors show: flags without a ``<bool>`` placeholder,
usage lines as ``pounder tune [OPTIONS] [SERVER] [TARGET]``, every positional argument described;
the ``-t`` warning."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import typer

from pounder._units import available_cpus
from pounder.cli import app
from support import cliutil
from support.cliutil import assert_usage_error

COMMANDS = ["bench", "compare", "mem", "tune", "run", "syscalls", "report"]
USAGE = {
    "bench": "pounder bench [OPTIONS] [URL]",
    "compare": "pounder compare [OPTIONS] URL...",
    "mem": "pounder mem [OPTIONS]",
    "tune": "pounder tune [OPTIONS] [SERVER] [TARGET]",
    "run": "pounder run [OPTIONS] EXPERIMENT.toml",
    "syscalls": "pounder syscalls [OPTIONS] URL",
    "report": "pounder report [OPTIONS] RESULT...",
}
PLACEHOLDER = re.compile(r"<(bool|str|int|list\[[a-z]+\])>")


def _command(name: str) -> Any:
    group: Any = typer.main.get_command(app)
    return group.commands[name]


def _help(*args: str) -> str:
    code, out, err = cliutil.run_cli(*args, "--help")
    assert code == 0 and err == "", err
    return out


def _flat(text: str) -> str:
    """The help text without rich's box drawing, on one line."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


@pytest.mark.parametrize("name", COMMANDS)
def test_help_shows_no_type_placeholders_and_a_plain_usage_line(name: str) -> None:
    out = _help(name)
    assert not PLACEHOLDER.search(out), PLACEHOLDER.search(out)
    usage = next(line.strip() for line in out.splitlines() if "Usage:" in line)
    assert usage == f"Usage: {USAGE[name]}"
    assert "[[" not in usage and "{" not in usage
    flat = _flat(out)
    assert "--help Show this message and exit." in flat
    if name in ("bench", "report", "compare", "tune"):  # a flag of the command's own: no placeholder either
        flag = {"bench": "--quiet -q", "report": "--open", "compare": "--no-warmup", "tune": "--quick"}[name]
        assert re.search(re.escape(flag) + r" [A-Z]", flat), flat


def test_the_group_help_shows_flags_plainly() -> None:
    flat = _flat(_help())
    assert "--version Print the version and exit." in flat
    assert not PLACEHOLDER.search(flat)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_positional_argument_is_described(name: str) -> None:
    flat = _flat(_help(name))
    arguments = [param for param in _command(name).params if param.param_type_name == "argument"]
    for param in arguments:
        assert param.help, param.name
        assert f"{param.metavar} {param.help}"[:60] in flat, (param.metavar, flat)
    assert bool(arguments) == (name != "mem")


@pytest.mark.parametrize(("args", "fragment"), [
    (["compare"], "Missing argument 'URL...'"),
    (["syscalls"], "Missing argument 'URL'"),
    (["run"], "Missing argument 'EXPERIMENT.toml'"),
    (["report"], "Missing argument 'RESULT...'"),
    (["tune", "gunicorn", "app:app", "extra"], "Got unexpected extra argument"),
    (["bench", "--quiet=yes", "http://127.0.0.1:9/"], "Option '--quiet' does not take a value"),
])  # fmt: skip
def test_usage_errors_name_arguments_plainly(args: list[str], fragment: str) -> None:
    line = assert_usage_error(*cliutil.run_cli(*args), fragment)
    assert "[[" not in line and "{" not in line and not PLACEHOLDER.search(line)


def _many_threads() -> int:
    return max(30, 2 * available_cpus() + 1)


def test_many_threads_warn_that_t_is_not_a_time_limit(testserver: Any) -> None:
    srv = testserver()
    threads = _many_threads()
    code, out, err = cliutil.run_cli("bench", f"{srv.url}/", "-n", "20", "-c", "2", "-t", str(threads),
                                     "--json", "-")  # fmt: skip
    assert code == 0, err
    assert err.splitlines() == [f"pounder: warning: -t {threads} is threads (the CPUs here: {available_cpus()}); "
                                f"for a time limit use -d {threads}s"]  # fmt: skip
    result = json.loads(out)
    assert result["requests"]["complete"] == 20  # it still ran, as given (threads lowered to the connections)
    assert srv.count() == 20


@pytest.mark.parametrize("threads", ["2", str(2 * available_cpus())])
def test_few_threads_do_not_warn(testserver: Any, threads: str) -> None:
    srv = testserver()
    code, _, err = cliutil.run_cli("bench", f"{srv.url}/", "-n", "20", "-c", "2", "-t", threads, "-q")
    assert code == 0 and err == "", err


def test_compare_warns_about_threads_too() -> None:
    # a usage error found later (one URL) comes after the warning; nothing is sent
    code, out, err = cliutil.run_cli("compare", "http://127.0.0.1:9/", "-t", str(_many_threads()))
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert [line.split(":")[1] for line in lines] == [" warning", " error"], err
