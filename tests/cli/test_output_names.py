"""One rule for the names of outputs, and one for when a write fails (issue 39, items 12 and 14).

* A name may end in its format's suffix, in none, or in one that names no file format; a suffix of
  another format (an SVG named out.png, a page named x.txt, JSON named x.svg) is bad input: one
  line, exit 2, before anything runs. Every output option of every command follows it.
* An output that cannot be written is found before the run when it can be (a read-only directory,
  a missing one): bad input, exit 2, nothing sent. One that fails after the run measured (a full
  disk, /dev/full): exit 1, one line naming the option, the figures still printed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pounder import UsageError
from pounder._files import check_output_name
from support import cliutil
from support.cliutil import assert_usage_error, run_pounder

URL = "http://127.0.0.1:9/"
A, B = "http://127.0.0.1:9/a", "http://127.0.0.1:9/b"
ME = str(os.getpid())


@pytest.mark.parametrize(("args", "option"), [
    (["bench", URL, "--json", "{d}/x.png"], "--json"),
    (["bench", URL, "--csv", "{d}/x.json"], "--csv"),
    (["bench", URL, "--tsv", "{d}/x.svg"], "--tsv"),
    (["bench", URL, "--hdr-log", "{d}/x.html"], "--hdr-log"),
    (["bench", URL, "--report", "{d}/x.json"], "--report"),
    (["bench", URL, "--junit", "{d}/x.json"], "--junit"),
    (["bench", URL, "--json", "{d}/x.xml"], "--json"),
    (["compare", A, B, "--json", "{d}/x.csv"], "--json"),
    (["compare", A, B, "--chart", "{d}/x.gif"], "--chart"),
    (["compare", A, B, "--report", "{d}/x.png"], "--report"),
    (["compare", A, B, "--junit", "{d}/x.html"], "--junit"),
    (["tune", "--demo", "--junit", "{d}/x.txt"], "--junit"),
    (["syscalls", URL, "--server-pid", ME, "--json", "{d}/x.txt"], "--json"),
    (["syscalls", URL, "--server-pid", ME, "--log", "{d}/x.json"], "--log"),
    (["mem", "--server-pid", ME, "--json", "{d}/x.html"], "--json"),
    (["top", "--pid", ME, "--once", "--json", "{d}/x.tsv"], "--json"),
    (["profile", URL, "--server-pid", ME, "--json", "{d}/x.svg"], "--json"),
    (["profile", URL, "--server-pid", ME, "--flamegraph", "{d}/out.png"], "--flamegraph"),
    (["report", "{d}/in.json", "-o", "{d}/x.txt"], "--output"),
])  # fmt: skip
def test_an_output_named_as_another_format_is_refused_first(tmp_path: Path, args: list[str], option: str) -> None:
    filled = [arg.replace("{d}", str(tmp_path)) for arg in args]
    line = assert_usage_error(*cliutil.run_cli(*filled), option)
    assert "not ." in line and "give a name ending in" in line or "must end in" in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["out", "out.json", "OUT.JSON", "run.1", "r.out", "x.pid", "-", "/dev/stdout"])
def test_a_name_that_says_no_other_format_is_taken(name: str) -> None:
    check_output_name(name, "--json", "JSON")


def test_the_rule_names_the_format_and_the_suffixes() -> None:
    with pytest.raises(UsageError, match=r"^--flamegraph f\.png: the file is SVG, not \.png: give a name ending in "
                                         r"\.svg$"):  # fmt: skip
        check_output_name("f.png", "--flamegraph", "SVG")


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory no one may write into, root included (a read-only tmpfs; mode 0555 otherwise)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_a_read_only_directory_is_bad_input_before_anything_is_sent(testserver: Any, read_only_dir: Path) -> None:
    srv = testserver()
    for option in ("--json", "--csv", "--tsv", "--hdr-log"):
        line = assert_usage_error(*cliutil.run_cli("bench", srv.url + "/", "-n", "5", option,
                                                   str(read_only_dir / "out")), option)  # fmt: skip
        assert "cannot write" in line, line
    assert srv.connections() == 0


def _pounder(*args: str) -> subprocess.CompletedProcess[str]:
    return run_pounder(*args, timeout=120, stdin=subprocess.DEVNULL)


def test_a_write_that_fails_after_measuring_is_exit_1_with_the_figures_printed(gunicorn_server: Any) -> None:
    """mem and top --once measured the server, then --json cannot be written: one line naming it,
    exit 1, the table still printed."""
    srv = gunicorn_server(app="profile_app:app", workers=2)
    for args, figures in ((["mem", "--server-pid", str(srv.pid)], "MaxClients"),
                          (["top", "--pid", str(srv.pid), "--once", "--interval", "100ms"], "PSS")):  # fmt: skip
        done = _pounder(*args, "--json", "/dev/full")
        assert done.returncode == 1, (args, done.stderr)
        assert done.stderr.splitlines() == ["pounder: error: cannot write --json /dev/full: No space left on device"]
        assert figures in done.stdout and str(srv.pid) in done.stdout, (args, done.stdout)
