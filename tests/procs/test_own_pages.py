"""pounder's own process taken out of a server's memory figures (issue 14, item 9).

smaps counts a page as shared when any other process maps it: a Python server's parent whose
libpython pages only pounder's (Python) process maps too reads megabytes less private while pounder
looks. The same effect, made large and exact here: a real gunicorn --preload whose arbiter maps a
file (8 MiB, read page by page at import); pounder's process maps and reads the same file. The
figures pounder reports must be those read with its process gone: ``cat /proc/PID/smaps_rollup``
from a shell after the pounder process exited (no pounder Python alive), compared here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pounder
from support.cliutil import pounder_argv
from support.schemas import validate

MIB = 1 << 20
PYTHON_DIR = Path(pounder.__file__).resolve().parents[1]
POUNDER_MAPPING_THE_FILE = r"""
import json, mmap, sys
from pounder.procs import find_server, read_process, snapshot
pid, path = int(sys.argv[1]), sys.argv[2]
with open(path, "rb") as file:
    mapped = mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ)
sum(mapped[i] for i in range(0, len(mapped), mmap.PAGESIZE))
snap = snapshot(find_server(pid=pid))
raw = read_process(pid)
print(json.dumps({"excluded": snap.own_excluded, "parent": snap.parent.to_dict(), "raw": raw.to_dict()}))
"""


def run_python(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PYTHON_DIR), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def rollup_from_a_shell(pid: int) -> dict[str, int]:
    """/proc/PID/smaps_rollup read by cat (not pounder's code), in bytes."""
    text = subprocess.run(["sh", "-c", f"cat /proc/{pid}/smaps_rollup"], capture_output=True, text=True,
                          timeout=10, check=True).stdout  # fmt: skip
    fields = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == "kB":
            fields[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return fields


def close(ours: int, theirs: int) -> bool:
    return abs(ours - theirs) <= max(256 * 1024, theirs * 0.02)


@pytest.fixture
def mapped_file(tmp_path: Path) -> Path:
    path = tmp_path / "mapped.bin"
    with open(path, "wb") as file:
        file.write(os.urandom(8 * MIB))
        file.flush()
        os.fsync(file.fileno())
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="page frames (/proc/kpagecount) need root")
def test_pages_shared_only_with_pounder_count_as_the_servers_own(gunicorn_server: Any, mapped_file: Path) -> None:
    srv = gunicorn_server(workers=2, preload=True, env={"APP_MAP_FILE": str(mapped_file)})
    measured = json.loads(run_python("-c", POUNDER_MAPPING_THE_FILE, str(srv.pid), str(mapped_file)))
    quiet = rollup_from_a_shell(srv.pid)  # the pounder process has exited
    assert measured["excluded"]
    raw, parent = measured["raw"], measured["parent"]
    quiet_private = quiet["Private_Clean"] + quiet["Private_Dirty"]
    quiet_shared = quiet["Shared_Clean"] + quiet["Shared_Dirty"]
    # the effect is there: read as smaps has it while pounder maps the file, 8 MiB move to shared
    assert raw["private"] <= quiet_private - 7 * MIB, (raw, quiet)
    assert raw["shared"] >= quiet_shared + 7 * MIB, (raw, quiet)
    # and pounder reports the figures without its own process
    assert close(parent["private"], quiet_private), (parent, quiet)
    assert close(parent["shared"], quiet_shared), (parent, quiet)
    assert close(parent["pss"], quiet["Pss"]), (parent, quiet)
    assert parent["rss"] == raw["rss"]


def test_pounder_mem_says_whether_its_own_process_was_taken_out(gunicorn_server: Any) -> None:
    srv = gunicorn_server(workers=2, preload=True)
    document = json.loads(run_python(*pounder_argv("mem", "--pid", srv.pid, "--json", "-")[1:]))
    validate(document, "mem")
    assert document["schema"] == "pounder/mem/2"
    assert document["own_process_excluded"] is (os.geteuid() == 0)
    text = run_python(*pounder_argv("mem", "--pid", srv.pid)[1:])
    assert ("could not be taken out of the figures" in text) is (os.geteuid() != 0)
