"""The demo application: a small WSGI app with the traits the tuning method looks at.

- Data built at import (``DEMO_PRELOAD_MB``, default 20): with gunicorn ``--preload`` it is built
  once in the parent and shared with the children copy-on-write; without it, every child builds
  its own copy.
- A CPU cost per request (``DEMO_CPU_MS``, default 2, or ``?cpu_ms=N`` per request).
- An optional leak per request (``DEMO_LEAK_KB``, default 0), the kind MaxRequestsPerChild exists
  to contain.

Paths: ``/`` (the work above), ``/static`` (a fixed small answer, no CPU work), ``/health``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from urllib.parse import parse_qs

PRELOAD_MB = int(os.environ.get("DEMO_PRELOAD_MB", "20"))
CPU_MS = float(os.environ.get("DEMO_CPU_MS", "2"))
LEAK_KB = int(os.environ.get("DEMO_LEAK_KB", "0"))

# One large immutable bytes object: reference counting touches only its header page, so the
# data stays shared after fork (many small objects would be copied page by page).
DATA = bytes(range(256)) * (PRELOAD_MB * 4096)
_leak: list[bytes] = []

StartResponse = Callable[[str, list[tuple[str, str]]], object]


def burn(ms: float) -> int:
    """Spends about `ms` milliseconds of CPU time; returns a checksum so nothing is optimised."""
    end = time.thread_time() + ms / 1000.0
    acc = 0
    while time.thread_time() < end:
        for i in range(200):
            acc = (acc * 31 + i) & 0xFFFFFFFF
    return acc


def app(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
    path = str(environ.get("PATH_INFO", "/"))
    if path in ("/static", "/health"):
        body = b"ok\n"
    else:
        query = parse_qs(str(environ.get("QUERY_STRING", "")))
        cpu_ms = float(query.get("cpu_ms", [CPU_MS])[0])
        checksum = burn(cpu_ms)
        if LEAK_KB:
            # Written, not just allocated: calloc'd zero pages would not be resident.
            _leak.append(b"x" * (LEAK_KB * 1024))
        body = f"pid {os.getpid()} checksum {checksum} data {len(DATA)}\n".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
