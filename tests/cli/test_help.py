"""What ``pounder X --help`` and the usage errors show: flags without a ``<bool>`` placeholder,
usage lines as ``pounder tune [OPTIONS] [SERVER] [TARGET]``, every positional argument described;
one spelling of each option across commands (the old ones still work); the ``-t`` warning."""

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

COMMANDS = ["bench", "compare", "mem", "tune", "run", "syscalls", "report", "completion"]
USAGE = {
    "bench": "pounder bench [OPTIONS] [URL]",
    "compare": "pounder compare [OPTIONS] URL...",
    "mem": "pounder mem [OPTIONS]",
    "tune": "pounder tune [OPTIONS] [SERVER] [TARGET]",
    "run": "pounder run [OPTIONS] EXPERIMENT.toml",
    "syscalls": "pounder syscalls [OPTIONS] URL",
    "report": "pounder report [OPTIONS] RESULT...",
    "completion": "pounder completion [OPTIONS] SHELL",
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


def test_compare_warns_about_threads_too(testserver: Any) -> None:
    srv = testserver()
    threads = _many_threads()
    code, _out, err = cliutil.run_cli("compare", f"{srv.url}/a", f"{srv.url}/b", "-n", "20", "-c", "2", "-t",
                                      str(threads), "--trials", "3", "-q")
    assert code == 0, err
    assert err.splitlines() == [f"pounder: warning: -t {threads} is threads (the CPUs here: {available_cpus()}); "
                                f"for a time limit use -d {threads}s"]  # fmt: skip


def test_bad_input_with_many_threads_is_the_one_error_line() -> None:
    """The warning comes once every input was found good: with a bad one, the error is the only line."""
    many = str(_many_threads())
    assert_usage_error(*cliutil.run_cli("compare", "http://127.0.0.1:9/", "-t", many), "at least 2 URLs")
    assert_usage_error(*cliutil.run_cli("bench", "http://127.0.0.1:9/", "-t", "100000"), "-t/--threads")


@pytest.mark.parametrize(("flag", "closes"), [("--no-keepalive", True), ("--keepalive", False), (None, False)])
def test_bench_keepalive_pair(testserver: Any, flag: str | None, closes: bool) -> None:
    srv = testserver()
    args = ["bench", f"{srv.url}/", "-n", "20", "-c", "2", "-q", *([flag] if flag else [])]
    code, _, err = cliutil.run_cli(*args)
    assert code == 0 and err == "", err
    stats = srv.stats()
    assert stats["requests"] == 20
    assert stats["connections"] == 20 if closes else stats["connections"] <= 2


@pytest.mark.parametrize("command", ["compare", "syscalls"])
@pytest.mark.parametrize("flag", ["--keepalive", "--no-keepalive"])
def test_compare_and_syscalls_take_both_keepalive_flags(command: str, flag: str) -> None:
    """The flag is read: the one error is the later one, about something else (nothing is sent)."""
    later = {"compare": "at least 2 URLs", "syscalls": "name the server to trace"}[command]
    assert_usage_error(*cliutil.run_cli(command, flag, "http://127.0.0.1:9/"), later)


@pytest.mark.parametrize("command", ["bench", "compare", "syscalls"])
def test_keepalive_is_one_pair_in_every_help(command: str) -> None:
    assert "--keepalive --no-keepalive Keep connections open between requests" in _flat(_help(command))


def test_mem_help_names_the_server_options() -> None:
    flat = _flat(_help("mem"))
    for flag in ("--server-pid", "--server-pidfile", "--server-name"):
        assert f"{flag} " in flat
    for old in ("--pid ", "--pidfile ", "--name "):
        assert old not in flat  # hidden aliases


@pytest.mark.parametrize("spelling", ["new", "old"])
def test_mem_finds_a_real_gunicorn_by_either_spelling(gunicorn_server: Any, spelling: str) -> None:
    srv = gunicorn_server(workers=2, preload=True)
    for flag, value in (("pid", str(srv.pid)), ("pidfile", str(srv.pidfile)), ("name", str(srv.pidfile.parent))):
        option = f"--server-{flag}" if spelling == "new" else f"--{flag}"
        code, out, err = cliutil.run_cli("mem", option, value, "--json", "-")
        assert code == 0 and err == "", (option, err)
        found = json.loads(out)
        assert found["target"]["pid"] == srv.pid, (option, found["target"])
        assert len(found["processes"]) == 3  # the parent and its 2 workers


@pytest.mark.parametrize(("args", "fragment"), [
    (["--server-pid", "1", "--pid", "1"], "give exactly one of --server-pid, --server-pidfile and --server-name "
                                          "(got --server-pid and --pid)"),
    (["--pid", "0"], "invalid --pid '0'"),
    (["--server-pid", "0"], "invalid --server-pid '0'"),
    (["--name", "pounder-no-such-process-4711"], "no process matches --name"),
    (["--server-name", "pounder-no-such-process-4711"], "no process matches --server-name"),
])  # fmt: skip
def test_mem_errors_name_the_flag_given(args: list[str], fragment: str) -> None:
    assert_usage_error(*cliutil.run_cli("mem", *args), fragment)
