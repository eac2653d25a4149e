"""Finding a server by pid, pid file or name; bad input is one clear UsageError."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pounder import UsageError
from pounder.procs import find_server, read_pidfile
from support.proctree import TreeFactory


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_by_pid_lists_the_tree(trees: TreeFactory) -> None:
    tree = trees.start()
    kids = tree.spawn(2)
    target = find_server(pid=tree.pid)
    assert target.pid == tree.pid and target.found_by == f"pid {tree.pid}"
    assert tree.marker in target.cmdline
    assert [(m.pid, m.role) for m in target.members] == [(tree.pid, "parent")] + [(k, "child") for k in sorted(kids)]
    assert [m.pid for m in target.children] == sorted(kids)


def test_by_pidfile(trees: TreeFactory, tmp_path: Path) -> None:
    tree = trees.start()
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(f"{tree.pid}\n")
    target = find_server(pidfile=pidfile)
    assert target.pid == tree.pid and target.found_by == f"pidfile {pidfile}"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("garbage\n", "does not contain a process id (got 'garbage')"),
        ("", "does not contain a process id (it is empty)"),
        ("12 34", "does not contain a process id"),
        ("-5", "does not contain a process id"),
        ("0", "does not contain a process id"),
    ],
)
def test_bad_pidfile(tmp_path: Path, content: str, message: str) -> None:
    pidfile = tmp_path / "bad.pid"
    pidfile.write_text(content)
    with pytest.raises(UsageError) as info:
        find_server(pidfile=pidfile)
    assert str(info.value) == f"pidfile {pidfile} {message}" or message in str(info.value)
    assert str(pidfile) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_pidfile_and_stale_pidfile(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        read_pidfile(tmp_path / "nope.pid")
    pid = dead_pid()
    pidfile = tmp_path / "stale.pid"
    pidfile.write_text(f"{pid}\n")
    with pytest.raises(UsageError) as info:
        find_server(pidfile=pidfile)
    assert str(info.value) == f"pidfile {pidfile}: no process with pid {pid} (stale pid file?)"


def test_no_such_pid() -> None:
    pid = dead_pid()
    with pytest.raises(UsageError) as info:
        find_server(pid=pid)
    assert str(info.value) == f"no process with pid {pid}"
    with pytest.raises(UsageError, match="positive"):
        find_server(pid=0)


def test_exactly_one_way() -> None:
    with pytest.raises(UsageError, match="exactly one"):
        find_server()
    with pytest.raises(UsageError, match=r"exactly one .* \(got --pid, --name\)"):
        find_server(pid=os.getpid(), name="x")


def test_by_name_takes_the_top_most_process(trees: TreeFactory) -> None:
    tree = trees.start()
    tree.spawn(3)  # forked children have the same command line (and name) as the parent
    target = find_server(name=tree.marker)
    assert target.pid == tree.pid
    assert len(target.children) == 3


def test_by_name_ambiguous_and_missing(trees: TreeFactory) -> None:
    first = trees.start(marker="pounder-test-twins-" + os.urandom(4).hex())
    second = trees.start(marker=first.marker)
    first.spawn(1)
    with pytest.raises(UsageError) as info:
        find_server(name=first.marker)
    message = str(info.value)
    pids = sorted((first.pid, second.pid))
    assert f"matches 2 separate process trees (pids {pids[0]}, {pids[1]}); pick one with --pid" in message
    with pytest.raises(UsageError, match="no process matches --name 'pounder-no-such-process-"):
        find_server(name="pounder-no-such-process-" + os.urandom(4).hex())
