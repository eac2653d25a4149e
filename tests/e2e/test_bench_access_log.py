"""The user's traffic from an access log, end to end: ``pounder bench --access-log`` replays the
log's mix, counted by the server per request."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pounder

T0 = datetime(2026, 11, 23, 10, 0, 0, tzinfo=timezone.utc)


def known_log(path: Path) -> Path:
    """40 s: 70 % GET /a, 30 % GET /b?q=1 every second; 200 requests in second 25, 50 or fewer in
    the others."""
    lines = []
    for second in range(40):
        count = 200 if second == 25 else 10 * (2 + second % 4)
        for index in range(count):
            target = "/a" if index % 10 < 7 else "/b?q=1"
            moment = (T0 + timedelta(seconds=second)).strftime("%d/%b/%Y:%H:%M:%S %z")
            lines.append(f'127.0.0.1 - - [{moment}] "GET {target} HTTP/1.1" 200 13 "-" "test"\n')
    path.write_text("".join(lines))
    return path


def test_access_log_mix_replayed_as_the_server_counts_it(
    testserver: Any, cli: Callable[..., Any], tmp_path: Path
) -> None:
    log_path = known_log(tmp_path / "access.log")
    log = pounder.read_access_log(log_path)
    assert (log.peak_second.start, log.peak_second.count) == (T0 + timedelta(seconds=25), 200)
    weights = {path: weight for weight, _, path in log.targets}
    assert weights["/a"] / log.used == 0.7
    srv = testserver()
    json_path = tmp_path / "result.json"
    proc = cli(srv.url, "--access-log", str(log_path), "-n", "3000", "-c", "4", "--json", str(json_path))
    assert proc.returncode == 0 and proc.stderr == "", proc.stdout + proc.stderr
    assert "Busiest second 2026-11-23T10:00:25+00:00: 200 requests" in proc.stdout
    assert proc.stdout.index("Busiest second") < proc.stdout.index("Complete requests:")
    counted = srv.by_request()
    total = sum(counted.values())
    assert set(counted) == {"GET /a", "GET /b?q=1"} and total >= 3000
    assert abs(counted["GET /a"] / total - 0.70) <= 0.03, counted
    assert abs(counted["GET /b?q=1"] / total - 0.30) <= 0.03, counted
    result = json.loads(json_path.read_text())
    assert result["options"]["order"] == "random"
    assert [(t["url"], t["method"]) for t in result["options"]["targets"]] == [
        (f"{srv.url}/a", "GET"), (f"{srv.url}/b?q=1", "GET")]
    assert result["requests"]["failed"] == 0
