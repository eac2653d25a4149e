"""WSGI app for the profiler tests (``profile_app:app``): every request spends most of its time in
``hot_loop`` and some in ``cold_loop``, and times both inside the app.

``APP_TIMING_DIR``: every worker rewrites ``DIR/PID`` after each request with three numbers, the
nanoseconds spent in ``hot_loop``, in ``cold_loop`` and in the whole app call (wall clock,
``time.perf_counter_ns``), summed over its requests: the share a profiler should find.
``?hot=N&cold=M``: the loops' iterations (defaults 400000 and 100000, about 25 ms of CPU here).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from urllib.parse import parse_qs

TIMING_DIR = os.environ.get("APP_TIMING_DIR")
_TOTALS = [0, 0, 0]


def hot_loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def cold_loop(n: int) -> int:
    total = 0
    for i in range(n):
        total ^= i
    return total


def app(environ: dict[str, object], start_response: Callable[..., object]) -> Iterable[bytes]:
    began = time.perf_counter_ns()
    query = parse_qs(str(environ.get("QUERY_STRING") or ""))
    hot_n, cold_n = int(query.get("hot", ["400000"])[0]), int(query.get("cold", ["100000"])[0])
    at = time.perf_counter_ns()
    hot_loop(hot_n)
    hot_ns = time.perf_counter_ns() - at
    at = time.perf_counter_ns()
    cold_loop(cold_n)
    cold_ns = time.perf_counter_ns() - at
    start_response("200 OK", [("Content-Type", "text/plain")])
    _TOTALS[0] += hot_ns
    _TOTALS[1] += cold_ns
    _TOTALS[2] += time.perf_counter_ns() - began
    if TIMING_DIR:
        with open(os.path.join(TIMING_DIR, str(os.getpid())), "w") as out:
            out.write(" ".join(map(str, _TOTALS)))
    return [b"ok\n"]
