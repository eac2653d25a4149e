"""Bad input to ``pounder syscalls`` and what the user must fix first: exit status 2, one line
``pounder: error: ...`` on stderr (saying what to do), no traceback, nothing on stdout, and no
request sent. Through typer's CliRunner and through a real ``python -m pounder``."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import cliutil
from support.cliutil import assert_usage_error, run_pounder, with_pythonpath
from support.proctree import TreeFactory


def run_cli(*args: str) -> tuple[int, str, str]:
    return cliutil.run_cli("syscalls", *args)


@pytest.fixture
def listening_socket() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        sock.setblocking(False)
        yield sock


@pytest.fixture
def listener(listening_socket: socket.socket) -> Iterator[str]:
    """A loopback URL whose socket listens but is never accepted: a request sent would show as a
    pending connection (checked at teardown)."""
    sock = listening_socket
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/news/perl/mod_perl/summary"
    try:
        sock.accept()
    except BlockingIOError:
        return
    raise AssertionError("a connection was made: pounder sent traffic despite the error")


@pytest.fixture
def trees() -> Iterator[TreeFactory]:
    factory = TreeFactory()
    try:
        yield factory
    finally:
        factory.stop_all()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def fake_strace(directory: Path, attach_error: str) -> Path:
    """An executable ``strace`` that reports a version and fails to attach with ``attach_error``."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "strace"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-V" ]; then echo "strace -- version 6.1"; exit 0; fi\n'
        f'echo "strace: attach: ptrace(PTRACE_SEIZE, 1234): {attach_error}" >&2\n'
        "exit 1\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return directory


def test_no_server_named(listener: str) -> None:
    line = assert_usage_error(*run_cli(listener), "exactly one of --server-pid, --server-pidfile and --server-name")
    assert "(got" not in line


def test_two_servers_named(listener: str) -> None:
    assert_usage_error(*run_cli(listener, "--server-pid", "1", "--server-name", "apache2"),
                       "(got --server-pid and --server-name)")  # fmt: skip


def test_a_pid_that_does_not_exist(listener: str) -> None:
    pid = dead_pid()
    assert_usage_error(*run_cli(listener, "--server-pid", str(pid)), f"no process with pid {pid}")


def test_a_pidfile_that_does_not_exist(listener: str, tmp_path: Path) -> None:
    missing = tmp_path / "apache.pid"
    assert_usage_error(*run_cli(listener, "--server-pidfile", str(missing)), f"pidfile {missing} does not exist")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--server-pid", "abc"], ["invalid --server-pid 'abc'"]),
        (["--server-pid", "0"], ["invalid --server-pid '0'"]),
        (["-n", "0"], ["-n/--requests must be between 1 and 100,000, got 0"]),
        (["-n", "200k"], ["-n/--requests must be between 1 and 100,000, got 200,000"]),
        (["-n", "lots"], ["invalid -n/--requests 'lots'"]),
        (["-c", "0"], ["-c/--connections must be between 1"]),
        (["--warmup", "-1"], ["invalid --warmup '-1'"]),
        (["--top", "0"], ["invalid --top '0'"]),
        (["-d", "soon"], ["invalid -d/--duration 'soon'"]),
    ],
)
def test_bad_options(listener: str, args: list[str], fragments: list[str]) -> None:
    assert_usage_error(*run_cli(listener, "--server-pid", str(os.getpid()), *args), *fragments)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [("http://10.1.2.3/", "10.1.2.3 is not a loopback address (127.0.0.0/8 or ::1): strace traces a server on this "
      "machine only"), ("ftp://127.0.0.1/", "expected http://"), ("nope", "http://")],
)
def test_bad_urls(url: str, fragment: str) -> None:
    line = assert_usage_error(*run_cli(url, "--server-pid", str(os.getpid())), fragment)
    assert "--allow-remote" not in line  # syscalls has no such option


@pytest.fixture
def server_pid(trees: TreeFactory, listening_socket: socket.socket) -> int:
    """A process with one child that holds the listener's socket: what pounder syscalls needs to
    get as far as running strace."""
    tree = trees.start(pass_fds=(listening_socket.fileno(),))
    tree.spawn(1)
    return tree.pid


def test_strace_missing(listener: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server_pid: int) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert_usage_error(*run_cli(listener, "--server-pid", str(server_pid)),
                       "strace is not installed", "apt-get install strace")  # fmt: skip


def test_strace_missing_through_python_m_pounder(listener: str, tmp_path: Path, server_pid: int) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = with_pythonpath({**os.environ, "PATH": str(empty)})
    proc = run_pounder("syscalls", listener, "--server-pid", server_pid, stdin=subprocess.DEVNULL, timeout=60, env=env)
    assert_usage_error(proc.returncode, proc.stdout, proc.stderr, "strace is not installed", "apt-get install strace")


def test_ptrace_not_permitted(listener: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              server_pid: int) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(fake_strace(tmp_path / "bin", "Operation not permitted")))
    code, out, err = run_cli(listener, "--server-pid", str(server_pid), "--warmup", "0")
    line = assert_usage_error(code, out, err, "ptrace: Operation not permitted",
                              "run pounder as root or as the server's user")  # fmt: skip
    assert "SYS_PTRACE" in line


def test_a_server_without_children(listener: str) -> None:
    # checked before the warm-up: nothing is sent (the listener fixture checks it)
    # a server (it listens) without children
    lone = subprocess.Popen([sys.executable, "-c", "import socket, time; s = socket.socket(); "
                             "s.bind(('127.0.0.1', 0)); s.listen(); print(1, flush=True); time.sleep(60)"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)  # fmt: skip
    assert lone.stdout is not None and lone.stdout.readline()
    try:
        assert_usage_error(*run_cli(listener, "--server-pid", str(lone.pid)),
                           f"the server process {lone.pid}", "has no children to trace")  # fmt: skip
    finally:
        lone.kill()
        lone.wait()
