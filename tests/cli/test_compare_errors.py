"""Bad input to ``pounder compare``: exit status 2, one line ``pounder: error: ...`` on stderr, no
traceback, nothing on stdout, and nothing sent. Through typer's CliRunner and a real process."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import cliutil
from support.cliutil import run_pounder, with_pythonpath

A = "http://127.0.0.1:8080/a"
B = "http://127.0.0.1:8080/b"


def run_cli(*args: str) -> tuple[int, str, str]:
    return cliutil.run_cli("compare", *args)


def assert_error(code: int, stdout: str, stderr: str, fragment: str, expected_code: int = 2) -> None:
    assert code == expected_code, (code, stdout, stderr)
    assert "Traceback" not in stderr + stdout
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("pounder: error: ")
    assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([], "Missing argument 'URL...'"),
        ([A], "compare needs at least 2 URLs, got 1"),
        ([A, B, "--insecure"], "--insecure applies to https:// targets"),
        ([A, "not-a-url"], "expected http://HOST[:PORT]/PATH"),
        ([A, "http://10.1.2.3/"], "not a loopback address"),
        (["--label", "x", A, B], "give one --label per URL: 2 URLs, 1 labels"),
        (["--label", "x", "--label", "x", A, B], "label 'x' is given twice"),
        (["--label", "x", "--label", " ", A, B], "invalid label ' '"),
        (["--baseline", "/c", A, B], "--baseline '/c' is not one of the labels: /a, /b"),
        (["--trials", "2", A, B], "--trials must be a whole number between 3 and 100, got 2"),
        (["--trials", "1000", A, B], "between 3 and 100"),
        (["--trials", "five", A, B], "invalid --trials 'five'"),
        (["--min-effect", "lots", A, B], "invalid --min-effect 'lots'"),
        (["--min-effect", "100", A, B], "--min-effect must be at least 0 and less than 100"),
        (["--min-effect", "-1%", A, B], "--min-effect must be at least 0"),
        (["-c", "0", A, B], "-c/--connections must be between 1 and 100,000, got 0"),
        (["-n", "0", A, B], "-n/--requests must be between 1"),
        (["-d", "soon", A, B], "invalid -d/--duration 'soon'"),
        (["--rate", "0", A, B], "--rate must be more than 0"),
        (["--timeout", "0", A, B], "--timeout must be more than 0"),
        (["--chart", "out.gif", A, B], "--chart: out.gif must end in .png or .svg"),
        (["--chart", "/no/such/dir/out.png", A, B], "--chart: directory /no/such/dir does not exist"),
        (["--chart", "-", A, B], "must end in .png or .svg"),
        (["--json", "/no/such/dir/out.json", A, B], "--json: directory /no/such/dir does not exist"),
        (["--server-pid", "0", A, B], "must be a positive process id"),
        (["--server-pid", "1", "--server-name", "x", A, B], "give exactly one of"),
        (["--bogus", A, B], "No such option: --bogus"),
    ],
)
def test_bad_input(args: list[str], fragment: str) -> None:
    assert_error(*run_cli(*args), fragment)


def test_server_pid_that_does_not_exist() -> None:
    with open("/proc/sys/kernel/pid_max") as file:
        unused = int(file.read()) + 1  # above the largest pid the kernel hands out
    assert_error(*run_cli("--server-pid", str(unused), A, B), f"no process with pid {unused}")


def test_missing_matplotlib_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, stdout, stderr = run_cli("--chart", str(tmp_path / "c.png"), A, B)
    assert_error(code, stdout, stderr, "--chart needs matplotlib, which is not installed", expected_code=2)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback TCP socket listening (nobody accepts): any connection would be queued on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        sock.setblocking(False)
        yield sock


def assert_no_connection(sock: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        sock.accept()


@pytest.mark.parametrize(
    "extra",
    [["--baseline", "nope"], ["--chart", "x.jpeg"], ["--trials", "2"], ["-c", "0"]],
)
def test_nothing_is_sent_on_bad_input(listener: socket.socket, extra: list[str]) -> None:
    port = listener.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    code, stdout, stderr = run_cli(*extra, url, url + "other")
    assert code == 2, (stdout, stderr)
    assert_no_connection(listener)


# ---------------------------------------------------------------------------------------------
# A real process


def run_process(*args: str) -> subprocess.CompletedProcess[str]:
    return run_pounder("compare", *args, env=with_pythonpath(), timeout=60)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([A], "compare needs at least 2 URLs"),
        (["--trials", "0", A, B], "--trials must be a whole number between 3 and 100"),
        ([A, "http://10.1.2.3:8080/"], "not a loopback address (127.0.0.0/8 or ::1); pass --allow-remote"),
    ],
)
def test_bad_input_in_a_real_process(args: list[str], fragment: str) -> None:
    process = run_process(*args)
    assert_error(process.returncode, process.stdout, process.stderr, fragment)
