"""Issue 14, item 19: ``pounder report`` renders a ``pounder mem --json`` result, with the same
numbers as the JSON, and the library reads it back (``pounder.load_mem``)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pounder
from pounder._units import mib
from support.cliutil import run_pounder
from support.schemas import validate


def _pounder(*args: str) -> subprocess.CompletedProcess[str]:
    return run_pounder(*args, timeout=60)


def _cells(page: str, pid: int) -> list[str]:
    row = re.search(rf"<tr><td>{pid}</td>(.*?)</tr>", page)
    assert row is not None, f"no row for pid {pid}"
    return re.findall(r"<td>(.*?)</td>", row[1])


def test_report_renders_a_mem_result(gunicorn_server: Any, tmp_path: Path) -> None:
    srv = gunicorn_server(workers=4, preload=True)
    mem_path, page_path = tmp_path / "m.json", tmp_path / "r.html"
    done = _pounder("mem", "--pidfile", str(srv.pidfile), "--ram", "1G", "--json", str(mem_path))
    assert done.returncode == 0, done.stderr
    document = json.loads(mem_path.read_text())
    validate(document, "mem")
    done = _pounder("report", str(mem_path), "-o", str(page_path))
    assert done.returncode == 0, done.stderr
    page = page_path.read_text()

    assert len(document["processes"]) >= 5
    for proc in document["processes"]:
        cells = _cells(page, proc["pid"])
        assert cells[:2] == [proc["role"], proc["name"]]
        assert cells[2:] == [mib(proc[key], grouped=False) for key in ("rss", "shared", "private", "pss", "swap")]
    limit = document["max_clients"]
    assert limit["ram"] == 1 << 30 and limit["children"] == 4
    assert f"<td>MaxClients</td><td>{limit['max_clients']}</td>" in page
    assert f"<td>without sharing</td><td>{limit['max_clients_no_sharing']}</td>" in page
    for label, key in (("RAM budget", "ram"), ("shared", "shared"), ("max child USS", "max_child_uss"),
                       ("max child RSS", "max_child_rss")):
        assert f"<td>{label}</td><td>{mib(limit[key], grouped=False)} MiB</td>" in page
    assert f"{mib(document['totals']['footprint'], grouped=False)} MiB for" in page

    loaded = pounder.load_mem(mem_path)
    assert loaded.snapshot.to_dict(loaded.max_clients)["processes"] == document["processes"]
    assert loaded.max_clients is not None and loaded.max_clients.to_dict() == limit
    totals = {key: value for key, value in document["totals"].items() if key != "sharing_with_parent"}
    assert dataclasses.asdict(loaded.snapshot.totals) == totals


def test_report_of_a_server_without_children_says_why_there_is_no_maxclients(testserver: Any, tmp_path: Path) -> None:
    srv = testserver()
    mem_path, page_path = tmp_path / "m.json", tmp_path / "r.html"
    done = _pounder("mem", "--pid", str(srv.proc.pid), "--json", str(mem_path))
    assert done.returncode == 0, done.stderr
    document = json.loads(mem_path.read_text())
    assert document["max_clients"] is None
    done = _pounder("report", str(mem_path), "-o", str(page_path))
    assert done.returncode == 0, done.stderr
    page = page_path.read_text()
    assert "MaxClients is not shown: the server has no child processes to measure." in page
    assert "<td>MaxClients</td>" not in page
    cells = _cells(page, srv.proc.pid)
    assert cells[0] == "parent" and cells[3] == mib(document["processes"][0]["shared"], grouped=False)
    assert pounder.load_mem(mem_path).max_clients is None
