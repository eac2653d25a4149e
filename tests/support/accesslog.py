"""Access log lines with sub-second times, the engine's TSV read back, and ``python -m pounder
bench`` in a child process: shared by the replay tests (tests/traffic/test_replay.py and
tests/e2e/test_bench_replay.py)."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from support.cliutil import run_pounder, with_pythonpath

ZONE = timezone(timedelta(hours=1))
T0 = datetime(2026, 11, 23, 9, 0, 0, tzinfo=ZONE)


def stamp(moment: datetime, fraction: bool = True) -> str:
    """``[23/Nov/2026:09:00:01.234 +0100]`` (with ``fraction``), as Apache's
    ``%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t`` writes it."""
    whole = moment.strftime("%d/%b/%Y:%H:%M:%S")
    millis = f".{moment.microsecond // 1000:03d}" if fraction else ""
    return f"{whole}{millis} {moment.strftime('%z')}"


def line(moment: datetime, request: str, fraction: bool = True) -> str:
    """One combined-format line for ``request`` (``GET /a HTTP/1.1``) at ``moment``."""
    return f'127.0.0.1 - - [{stamp(moment, fraction)}] "{request}" 200 512 "-" "curl/8"\n'


def tsv_rows(path: Path) -> list[dict[str, str]]:
    """The engine's TSV (``--tsv``), one dict per request, keyed by the header's names."""
    header, *rows = path.read_text().splitlines()
    names = header.split("\t")
    return [dict(zip(names, row.split("\t"), strict=True)) for row in rows]


def pounder_cli(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m pounder bench ARGS...`` in a child process (its own engine), output captured."""
    return run_pounder("bench", *args, timeout=timeout_s, env=with_pythonpath({"PATH": "/usr/bin:/bin"}))
