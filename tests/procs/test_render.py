"""The ``pounder mem`` text: fixed columns, one token per cell, rows cut to fit a terminal."""

from __future__ import annotations

import time

from pounder._units import age_text as age
from pounder.procs import PoolSnapshot, ProcMem, max_clients, render_mem
from pounder.procs._render import header_line, mib

MIB = 1 << 20


def proc(pid: int, role: str, age_s: float = 5.0) -> ProcMem:
    return ProcMem(pid, 1, role, "apache2", 300 * MIB, 30 * MIB, 25 * MIB, 5 * MIB, 10 * MIB, 0, 1.5, 0.25, 0.0, age_s)  # type: ignore[arg-type]


def pool(children: int) -> PoolSnapshot:
    children_ = tuple(proc(i, "child") for i in range(2, 2 + children))
    return PoolSnapshot(1, time.time(), (proc(1, "parent", 90061), *children_))


def test_columns_line_up() -> None:
    text = render_mem(pool(3), max_clients("1G", pool(3)))
    lines = text.splitlines()
    header = lines.index(header_line())
    rows = lines[header + 1 : header + 5]
    assert rows[0].split() == ["1", "parent", "300.0", "30.0", "25.0", "5.0", "10.0", "0.0", "1.75", "1d01h", "apache2"]
    assert {len(row) for row in rows} == {len(header_line()) - len("name") + len("apache2")}
    assert "\n  MaxClients:                 199 = (RAM - shared) / max child USS\n" in text  # (1024 - 25) / 5


def test_rows_can_be_cut_but_totals_stay() -> None:
    text = render_mem(pool(10), max_rows=4)
    assert "... and 8 more processes" in text
    assert "Children:                     10" in text
    assert "MaxClients:                   n/a (not computed)" in text
    assert "... and 1 more process\n" in render_mem(pool(1), max_rows=1)
    assert "MaxClients:                   n/a (the server has no child processes to measure)" in render_mem(pool(0))


def test_units() -> None:
    assert mib(None) == "-" and mib(MIB * 3 // 2) == "1.5"
    assert [age(s) for s in (0, 59.9, 60, 3599, 3600, 86399, 86400 * 3 + 3600 * 4)] == [
        "0s", "59s", "1m00s", "59m59s", "1h00m", "23h59m", "3d04h"
    ]  # fmt: skip
