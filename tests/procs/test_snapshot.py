"""Reading real processes: a parent that wrote 40 MiB and forked children that share it (or
rewrote it), checked against an independent sum over the full ``/proc/PID/smaps``."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from pounder import PounderError
from pounder.procs import (
    ProcessGone,
    discover,
    find_server,
    read_members,
    read_process,
    read_rollup,
    render_mem,
    snapshot,
)
from pounder.procs._snapshot import PoolSnapshot
from support.proctree import TreeFactory, wait_gone

MIB = 1 << 20


def smaps_totals(pid: int) -> dict[str, int]:
    """Sum every mapping's fields of /proc/PID/smaps (kB → bytes): not the code under test."""
    totals: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps", encoding="ascii", errors="replace") as file:
        for line in file:
            parts = line.split()
            if len(parts) == 3 and parts[0].endswith(":") and parts[2] == "kB":
                key = parts[0][:-1]
                totals[key] = totals.get(key, 0) + int(parts[1]) * 1024
    return totals


def close(ours: int, theirs: int) -> bool:
    return abs(ours - theirs) <= max(256 * 1024, theirs * 0.02)


def test_children_share_what_the_parent_wrote(trees: TreeFactory) -> None:
    tree = trees.start(mb=40)
    kids = tree.spawn(3)
    snap = snapshot(find_server(pid=tree.pid))

    assert [proc.role for proc in snap.processes] == ["parent", "child", "child", "child"]
    assert [proc.pid for proc in snap.children] == sorted(kids)
    assert all(proc.ppid == tree.pid for proc in snap.children)
    assert snap.skipped == ()
    parent = snap.parent
    assert parent.rss >= 40 * MIB
    for child in snap.children:
        assert child.shared >= 35 * MIB, child
        assert child.private < 10 * MIB, child
        assert child.rss >= child.shared + child.private - MIB
    totals = snap.totals
    assert totals.children == 3
    # The footprint counts the 40 MiB once, not four times; the sum of RSS counts it four times.
    assert totals.footprint < 1.5 * parent.rss
    assert totals.footprint >= 40 * MIB
    assert totals.rss_sum > 3.5 * 40 * MIB
    assert totals.max_child_uss is not None and totals.max_child_uss < 10 * MIB
    assert totals.median_sharing is not None and 0.6 < totals.median_sharing <= 1.05
    assert set(snap.sharing_with_parent) == set(kids)

    for taken in snap.processes:
        # smaps read here counts this (pounder's) process's mappings: compare the figures as read,
        # without taking pounder's process out (test_own_pages.py checks that part)
        proc = read_process(taken.pid, taken.role)
        ref = smaps_totals(proc.pid)
        assert close(proc.rss, ref["Rss"]), (proc, ref)
        assert close(proc.pss, ref["Pss"]), (proc, ref)
        assert close(proc.shared, ref["Shared_Clean"] + ref["Shared_Dirty"]), (proc, ref)
        assert close(proc.private, ref["Private_Clean"] + ref["Private_Dirty"]), (proc, ref)
        assert proc.swap == ref.get("Swap", 0)
        assert proc.vsz >= proc.rss
        assert 0 <= proc.age_s < 60
        assert proc.name.startswith("python")


def test_children_that_rewrite_the_data_own_a_copy(trees: TreeFactory) -> None:
    tree = trees.start(mb=40)
    tree.spawn(3, write=True)
    snap = snapshot(tree.pid)
    assert len(snap.children) == 3
    for child in snap.children:
        assert child.private >= 35 * MIB, child
        ref = smaps_totals(child.pid)
        assert close(child.private, ref["Private_Clean"] + ref["Private_Dirty"])
    assert snap.totals.footprint >= 4 * 35 * MIB


def test_cpu_times_come_from_the_process(trees: TreeFactory) -> None:
    tree = trees.start()
    kid = tree.spawn(1)[0]
    burned = tree.burn(kid, 0.2)
    child = read_process(kid, "child")
    assert child.cpu_s == pytest.approx(burned, abs=0.05)
    tree.burn(kid, 0.05, exit_after=True)  # the parent waits for it: its CPU moves to cutime
    assert read_process(tree.pid).children_cpu_s >= 0.2


def test_an_exited_or_zombie_process_is_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    state = ""
    while time.monotonic() < deadline:  # exited but not reaped: a zombie
        with open(f"/proc/{proc.pid}/stat") as file:
            state = file.read().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
        time.sleep(0.01)
    try:
        assert state == "Z"
        with pytest.raises(ProcessGone):
            read_process(proc.pid)
        with pytest.raises(ProcessGone):
            read_rollup(proc.pid)
    finally:
        proc.wait()
    wait_gone(proc.pid)
    with pytest.raises(ProcessGone):
        read_process(proc.pid)
    with pytest.raises(ProcessGone):
        read_rollup(proc.pid)


def test_a_process_gone_mid_read_is_skipped_and_reported_once(trees: TreeFactory) -> None:
    tree = trees.start()
    kids = tree.spawn(2)
    members = discover(tree.pid)
    assert [member.pid for member in members] == [tree.pid, *sorted(kids)]
    gone = sorted(kids)[0]
    tree.burn(gone, 0.0, exit_after=True)  # exits (and is reaped) after being listed
    wait_gone(gone)
    processes, skipped = read_members(members)
    assert skipped == (gone,)
    assert [proc.pid for proc in processes] == [tree.pid, sorted(kids)[1]]
    text = render_mem(PoolSnapshot(tree.pid, time.time(), processes, skipped))
    assert [line for line in text.splitlines() if "exited while being read" in line] == [
        f"Skipped:                      pid {gone} (exited while being read)"
    ]


def test_many_short_lived_children_never_break_a_snapshot(trees: TreeFactory) -> None:
    tree = trees.start(mode="churn")
    skipped = 0
    for _ in range(30):
        snap = snapshot(tree.pid)
        assert snap.parent.pid == tree.pid
        skipped += len(snap.skipped)
        assert not set(snap.skipped) & {proc.pid for proc in snap.processes}
    print(f"skipped {skipped} processes over 30 snapshots")


def test_grandchildren_have_their_role(trees: TreeFactory) -> None:
    tree = trees.start()
    kids = tree.spawn(2)
    roles = {member.pid: member.role for member in discover(os.getpid())}
    assert roles[os.getpid()] == "parent"
    assert roles[tree.pid] == "child"
    assert all(roles[kid] == "grandchild" for kid in kids)


def _read_as_nobody(pid: int) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        "from pounder import PounderError\n"
        "from pounder.procs import read_process\n"
        f"try:\n    read_process({pid})\nexcept PounderError as e:\n    print(e)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run(
        [sys.executable, "-c", code], user=65534, group=65534, env=env, capture_output=True, text=True, timeout=30
    )


def test_permission_denied_is_one_clear_line() -> None:
    expected = "cannot read /proc/{pid}/smaps_rollup: permission denied; run as the server's user or root"
    try:
        with open("/proc/1/smaps_rollup", "rb"):
            readable = True
    except PermissionError:
        readable = False
    if not readable:
        with pytest.raises(PounderError) as info:
            read_process(1)
        assert not isinstance(info.value, ProcessGone)
        assert str(info.value) == expected.format(pid=1)
        return
    if os.geteuid() != 0:
        pytest.skip("pid 1 is readable and we cannot switch users")
    result = _read_as_nobody(os.getpid())
    if "No module named" in result.stderr:
        pytest.skip("pounder is not importable by user nobody")
    assert result.stdout.strip() == expected.format(pid=os.getpid()), result.stderr


def test_a_truncated_self_set_name_shows_the_program() -> None:
    # mod_perl sets $0 to the binary's full path; the kernel keeps its first 15 bytes as the name.
    script = (
        "import ctypes, sys, time\n"
        "ctypes.CDLL(None).prctl(15, sys.executable.encode()[:15], 0, 0, 0)\n"  # PR_SET_NAME
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        if len(sys.executable) <= 15:
            pytest.skip("the interpreter's path is too short to be truncated")
        assert psutil.Process(proc.pid).name() == sys.executable[:15]
        assert read_process(proc.pid).name == os.path.basename(sys.executable)
    finally:
        proc.kill()
        proc.wait()


def test_nested_workers_count_as_children() -> None:
    """Puma's fork_worker: worker 0 (a child) forks the others, which count as workers once the
    snapshot is told so; a child of those (a process a worker started) stays a grandchild."""
    from pounder.procs import ProcMem  # noqa: PLC0415

    def proc(pid: int, ppid: int, role: str, private_mib: int) -> ProcMem:
        return ProcMem(pid, ppid, role, "puma", 300 * MIB, 30 * MIB, 20 * MIB, private_mib * MIB,  # type: ignore[arg-type]
                       25 * MIB, 0, 1.0, 0.5, 0.0, 5.0)

    taken = PoolSnapshot(1, time.time(), (proc(1, 0, "parent", 5), proc(2, 1, "child", 7),
                                          proc(3, 2, "grandchild", 9), proc(4, 2, "grandchild", 3),
                                          proc(5, 4, "grandchild", 11)))
    assert (taken.totals.children, taken.totals.max_child_uss) == (1, 7 * MIB)
    nested = taken.with_nested_workers()
    assert [p.pid for p in nested.children] == [2, 3, 4]
    assert (nested.totals.children, nested.totals.grandchildren, nested.totals.max_child_uss) == (3, 1, 9 * MIB)
    assert nested.totals.footprint == taken.totals.footprint == 5 * 25 * MIB
