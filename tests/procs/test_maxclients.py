"""MaxClients = (RAM - shared) / max child USS, with known numbers and on a real tree; sizes."""

from __future__ import annotations

import time

import pytest

from pounder import PounderError, UsageError
from pounder.procs import PoolSnapshot, ProcMem, max_clients, mem_available, parse_ram, parse_size, snapshot
from support.proctree import TreeFactory

MIB = 1 << 20


def proc(pid: int, role: str, shared_mib: float, private_mib: float, pss_mib: float = 1.0) -> ProcMem:
    shared, private = round(shared_mib * MIB), round(private_mib * MIB)
    return ProcMem(
        pid=pid, ppid=1 if role == "parent" else 100, role=role, name="httpd",  # type: ignore[arg-type]
        vsz=4 * (shared + private), rss=shared + private, shared=shared, private=private,
        pss=round(pss_mib * MIB), swap=0, cpu_user_s=0.0, cpu_system_s=0.0, children_cpu_s=0.0, age_s=1.0,
    )  # fmt: skip


def known_pool() -> PoolSnapshot:
    return PoolSnapshot(
        root_pid=100,
        taken_at=time.time(),
        processes=(
            proc(100, "parent", 90, 10, 40),
            proc(101, "child", 80, 10, 30),
            proc(102, "child", 90, 20, 40),  # the largest child: USS 20 MiB, RSS 110 MiB
            proc(103, "child", 70, 15, 30),
            proc(104, "grandchild", 5, 1, 2),
        ),
    )


def test_formula_with_known_numbers() -> None:
    pool = known_pool()
    totals = pool.totals
    assert totals.children == 3 and totals.grandchildren == 1
    assert totals.footprint == 142 * MIB
    assert totals.median_child_uss == 15 * MIB and totals.max_child_uss == 20 * MIB
    assert totals.min_child_shared == 70 * MIB and totals.median_child_shared == 80 * MIB
    assert totals.median_sharing == pytest.approx(0.8)  # 80 MiB shared / 100 MiB parent RSS

    result = max_clients(1024 * MIB, pool)
    assert result.ram == 1024 * MIB and result.ram_source == "given" and result.mem_available is None
    assert result.shared == 80 * MIB and result.shared_basis == "median child shared"
    assert result.max_child_uss == 20 * MIB and result.max_child_rss == 110 * MIB
    assert result.max_clients == 47  # (1024 - 80) / 20 = 47.2
    assert result.max_clients_no_sharing == 9  # 1024 / 110 = 9.3
    assert max_clients("1G", pool) == result
    assert max_clients(50 * MIB, pool).max_clients == 0  # less RAM than the shared part


def test_default_budget_is_mem_available_plus_the_footprint() -> None:
    pool = known_pool()
    before = mem_available()
    result = max_clients(None, pool)
    assert result.ram_source == "MemAvailable + footprint"
    assert result.mem_available is not None
    assert result.ram == result.mem_available + 142 * MIB
    assert abs(result.mem_available - before) < 256 * MIB
    assert result.max_clients == (result.ram - 80 * MIB) // (20 * MIB)


def test_no_children_no_max_clients() -> None:
    pool = PoolSnapshot(100, time.time(), (proc(100, "parent", 10, 10),))
    assert pool.totals.children == 0 and pool.totals.max_child_uss is None
    with pytest.raises(PounderError, match="no child processes"):
        max_clients(MIB * 1024, pool)


def test_on_a_real_tree(trees: TreeFactory) -> None:
    tree = trees.start(mb=40)
    tree.spawn(3)
    snap = snapshot(tree.pid)
    result = max_clients("4G", snap)
    assert result.shared >= 35 * MIB
    assert result.max_child_uss < 10 * MIB
    assert result.max_clients == (4096 * MIB - result.shared) // result.max_child_uss
    assert result.max_clients > 10 * result.max_clients_no_sharing  # sharing matters a lot here
    assert result.max_clients_no_sharing == 4096 * MIB // result.max_child_rss


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512M", 512 * MIB),
        ("4G", 4 << 30),
        ("4g", 4 << 30),
        ("4GB", 4 << 30),
        ("1.5GiB", 3 << 29),
        ("2048k", 2 * MIB),
        ("1T", 1 << 40),
        ("3 MiB", 3 * MIB),
        ("1048576", MIB),
        ("1048576B", MIB),
    ],
)
def test_sizes_are_powers_of_1024(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "G", "4X", "-1G", "4 G B", "four", "1e9", "4Gi"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(UsageError, match="invalid --ram"):
        parse_size(text)


def test_a_ram_budget_needs_a_unit() -> None:
    with pytest.raises(UsageError, match="less than 1 MiB"):
        parse_ram("4")
    assert parse_ram("4G") == 4 << 30
