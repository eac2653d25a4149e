"""``pounder mem`` on real process trees: the table and totals parse, ``--json -`` follows
``mem.schema.json``, bad input is one ``pounder: error:`` line with exit status 2."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from support import cliutil
from support.cliutil import assert_usage_error, start_pounder, with_pythonpath
from support.proctree import TreeFactory

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "python/pounder/schemas/mem.schema.json").read_text())
MIB = 1 << 20
ROW = re.compile(
    r"^\s*(?P<pid>\d+) (?P<role>parent|child|grandchild)\s+(?P<vsz>[\d.]+)\s+(?P<rss>[\d.]+)\s+(?P<shared>[\d.]+)"
    r"\s+(?P<private>[\d.]+)\s+(?P<pss>[\d.]+)\s+(?P<swap>[\d.]+)\s+(?P<cpu>[\d.]+)\s+(?P<age>\S+)  (?P<name>.*)$"
)


def run_cli(*args: str) -> tuple[int, str, str]:
    return cliutil.run_cli("mem", *args)


@pytest.fixture
def trees() -> Iterator[TreeFactory]:
    factory = TreeFactory()
    try:
        yield factory
    finally:
        factory.stop_all()


def parse_rows(text: str) -> list[dict[str, str]]:
    return [match.groupdict() for line in text.splitlines() if (match := ROW.match(line))]


def field(text: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}:\s+(.*)$", text, re.MULTILINE)
    assert match, f"no {label!r} line in:\n{text}"
    return match.group(1)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_table_and_totals(trees: TreeFactory) -> None:
    tree = trees.start(mb=40)
    kids = tree.spawn(3)
    code, out, err = run_cli("--server-pid", str(tree.pid), "--ram", "4G")
    assert code == 0 and err == "", err
    rows = parse_rows(out)
    assert [(int(r["pid"]), r["role"]) for r in rows] == [(tree.pid, "parent")] + [(k, "child") for k in sorted(kids)]
    for row in rows[1:]:
        assert float(row["shared"]) >= 35 and float(row["private"]) < 10
        assert float(row["rss"]) >= 35 and row["name"].startswith("python")
        assert re.fullmatch(r"\d+s|\d+m\d\ds", row["age"])
    parent_rss = float(rows[0]["rss"])
    footprint = float(field(out, "Footprint (sum of PSS)").split()[0])
    assert footprint == pytest.approx(sum(float(r["pss"]) for r in rows), abs=0.3)
    assert 40 <= footprint < 1.5 * parent_rss
    assert field(out, "Children") == "3"
    costs = re.fullmatch(r"median ([\d.]+) MiB, max ([\d.]+) MiB \(private, USS\)", field(out, "One more child costs"))
    assert costs and float(costs[2]) == max(float(r["private"]) for r in rows[1:])
    sharing = re.fullmatch(r"median ([\d.]+) % \(child shared / parent RSS\)", field(out, "Sharing with the parent"))
    assert sharing and 60 < float(sharing[1]) <= 105
    assert field(out, "  RAM budget") == "4096.0 MiB (--ram)"
    shared = float(field(out, "  shared (median child)").split()[0])
    max_uss = float(field(out, "  max child USS").split()[0])
    clients = int(field(out, "  MaxClients").split()[0])
    assert clients == pytest.approx((4096 - shared) / max_uss, rel=0.1)
    no_sharing = re.fullmatch(r"(\d+) = RAM / max child RSS \(([\d.]+) MiB\)", field(out, "  without sharing"))
    assert no_sharing and int(no_sharing[1]) == int(4096 // float(no_sharing[2]))
    assert "Skipped" not in out


def test_json_to_stdout_follows_the_schema(trees: TreeFactory, tmp_path: Path) -> None:
    tree = trees.start(mb=40)
    tree.spawn(2)
    code, out, err = run_cli("--server-pidfile", _pidfile(tmp_path, tree.pid), "--json", "-")
    assert code == 0, err
    data = json.loads(out)  # nothing but the JSON on stdout
    jsonschema.validate(data, SCHEMA)
    assert data["target"]["pid"] == tree.pid and data["target"]["found_by"].startswith("pidfile ")
    assert [p["role"] for p in data["processes"]] == ["parent", "child", "child"]
    totals = data["totals"]
    assert totals["footprint"] == sum(p["pss"] for p in data["processes"])
    assert totals["children"] == 2 and totals["max_child_uss"] < 10 * MIB
    mc = data["max_clients"]
    assert mc["ram_source"] == "MemAvailable + footprint" and mc["ram"] == mc["mem_available"] + totals["footprint"]
    assert mc["max_clients"] == (mc["ram"] - mc["shared"]) // mc["max_child_uss"]


def test_json_file_and_the_table(trees: TreeFactory, tmp_path: Path) -> None:
    tree = trees.start()
    path = tmp_path / "mem.json"
    code, out, err = run_cli("--server-pid", str(tree.pid), "--json", str(path))
    assert code == 0, err
    data = json.loads(path.read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["max_clients"] is None and data["totals"]["children"] == 0  # no children yet
    assert field(out, "MaxClients") == "n/a (the server has no child processes to measure)"
    assert len(parse_rows(out)) == 1


def _pidfile(tmp_path: Path, content: int | str) -> str:
    path = tmp_path / "server.pid"
    path.write_text(f"{content}\n")
    return str(path)


def test_no_such_pid() -> None:
    pid = dead_pid()
    assert_usage_error(*run_cli("--server-pid", str(pid)), f"no process with pid {pid}")


def test_pidfile_with_garbage(tmp_path: Path) -> None:
    path = _pidfile(tmp_path, "not a pid")
    line = assert_usage_error(*run_cli("--server-pidfile", path), "does not contain a process id")
    assert path in line


def test_pidfile_of_a_dead_process(tmp_path: Path) -> None:
    pid = dead_pid()
    path = _pidfile(tmp_path, pid)
    assert_usage_error(*run_cli("--server-pidfile", path),
                       f"pidfile {path}: no process with pid {pid} (stale pid file?)")


def test_missing_pidfile(tmp_path: Path) -> None:
    assert_usage_error(*run_cli("--server-pidfile", str(tmp_path / "none.pid")), "none.pid does not exist")


def test_name(trees: TreeFactory) -> None:
    tree = trees.start()
    tree.spawn(2)
    code, out, err = run_cli("--server-name", tree.marker, "--ram", "1G")
    assert code == 0, err
    assert f"(pid {tree.pid}, found by name '{tree.marker}')" in out.splitlines()[0]
    assert [r["role"] for r in parse_rows(out)] == ["parent", "child", "child"]
    assert_usage_error(*run_cli("--server-name", "pounder-nothing-" + os.urandom(4).hex()),
                       "no process matches --server-name")
    twin = trees.start(marker=tree.marker)
    line = assert_usage_error(*run_cli("--server-name", tree.marker), "matches 2 separate process trees")
    assert str(tree.pid) in line and str(twin.pid) in line


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([], "give exactly one of --server-pid, --server-pidfile and --server-name"),
        (["--server-pid", "1", "--server-name", "x"],
         "give exactly one of --server-pid, --server-pidfile and --server-name (got --server-pid and --server-name)"),
        (["--server-pid", "abc"], "invalid --server-pid 'abc'"),
        (["--server-pid", "0"], "invalid --server-pid '0'"),
        (["--server-pid", "1", "--ram", "lots"], "invalid --ram 'lots'"),
        (["--server-pid", "1", "--ram", "4"], "less than 1 MiB"),
        (["--server-pid", "1", "--count", "2"], "--count needs --watch"),
        (["--server-pid", "1", "--watch", "2s", "--count", "0"], "invalid --count '0'"),
        (["--server-pid", "1", "--watch", "soon"], "invalid --watch 'soon'"),
        (["--server-pid", "1", "--watch", "1s", "--json", "-"], "--json - cannot be combined with --watch"),
        (["--server-pid", "1", "--json", "/nonexistent-dir/x.json"], "directory /nonexistent-dir does not exist"),
    ],
)
def test_bad_input(args: list[str], fragment: str) -> None:
    assert_usage_error(*run_cli(*args), fragment)


def test_watch_with_count(trees: TreeFactory, tmp_path: Path) -> None:
    tree = trees.start()
    tree.spawn(1)
    path = tmp_path / "last.json"
    code, out, err = run_cli("--server-pid", str(tree.pid), "--watch", "100ms", "--count", "3", "--json", str(path))
    assert code == 0, err
    assert out.count("Footprint (sum of PSS):") == 3
    assert len(parse_rows(out)) == 6
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)


def test_short_lived_children_are_skipped_not_errors(trees: TreeFactory) -> None:
    tree = trees.start(mode="churn")
    for _ in range(15):
        code, out, err = run_cli("--server-pid", str(tree.pid))
        assert code == 0, err
        skipped = [line for line in out.splitlines() if line.startswith("Skipped:")]
        assert len(skipped) <= 1
        if skipped:
            assert re.fullmatch(r"Skipped:\s+pids? \d+(, \d+)* \(exited while being read\)", skipped[0])


def test_ctrl_c_stops_watch_with_status_0(trees: TreeFactory) -> None:
    tree = trees.start()
    proc = start_pounder("mem", "--server-pid", tree.pid, "--watch", "100ms", env=with_pythonpath())
    try:
        deadline = time.monotonic() + 10
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the first table has started: the loop is running
        assert first.startswith("pounder "), first
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(1)
            except subprocess.TimeoutExpired:
                continue
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and err == ""


def test_ram_cgroup_is_the_budget_as_tune_reads_it(trees: TreeFactory) -> None:
    """Issue 39: ``mem --ram cgroup`` was refused ("invalid --ram 'cgroup'") where ``tune --ram
    cgroup`` works: one parser for a RAM budget (pounder.servers.parse_ram_budget). A cgroup made
    here with a 300 MiB limit is the budget, read back as the kernel's own memory.limit_in_bytes /
    memory.max says, named in the table and the JSON (schema)."""
    from pounder.servers import make_cgroup

    if os.geteuid() != 0:
        pytest.skip("not root: no memory cgroup to make")
    made, why = make_cgroup()
    if made is None:
        pytest.skip(why)
    try:
        made.set_limit(300 * MIB)
        limit = made.path / ("memory.max" if made.version == 2 else "memory.limit_in_bytes")
        kernel = int(limit.read_text())  # the kernel's own figure (v1 rounds to pages)
        tree = trees.start()
        tree.spawn(1)
        code, out, err = run_cli("--server-pid", str(tree.pid), "--ram", f"cgroup:{made.name}")
        assert code == 0 and err == "", err
        assert field(out, "  RAM budget") == (f"{kernel / MIB:.1f} MiB (--ram cgroup:{made.name}: the cgroup's "
                                              "memory limit)")
        code, out, err = run_cli("--server-pid", str(tree.pid), "--ram", f"cgroup:{made.path}", "--json", "-")
        assert code == 0, err
        data = json.loads(out)
        jsonschema.validate(data, SCHEMA)
        assert data["max_clients"]["ram"] == kernel
        assert data["max_clients"]["ram_source"] == f"--ram cgroup:{made.path}: the cgroup's memory limit"
        assert_usage_error(*run_cli("--server-pid", str(tree.pid), "--ram", "cgroup:"),
                           "--ram cgroup: needs a cgroup after the colon")
        assert_usage_error(*run_cli("--server-pid", str(tree.pid), "--ram", "cgroup:/pounder-no-such-cgroup"),
                           "--ram cgroup:/pounder-no-such-cgroup: no such memory cgroup")
    finally:
        made.remove()
