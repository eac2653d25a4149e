"""WSGI test app for the gunicorn tests (``wsgi_app:app``), configured by environment variables.

- ``APP_MAP_FILE`` (default none): a file mapped read-only at import and read page by page, so its
  pages are resident in the page cache and mapped by the process that imported the app (under
  ``--preload`` the arbiter only: a worker maps them when it touches them).
- ``APP_DATA_MB`` (default 0): that many MB of data built at import, as one large immutable
  ``bytes`` object (written, so resident). Under ``gunicorn --preload`` it is built once in the
  arbiter and shared copy-on-write by the workers: reference counting only writes the object's
  header page, and ``gc.freeze()`` keeps the collector off the preloaded objects. Without
  ``--preload`` every worker builds its own copy.

Paths: ``/`` trivial answer; ``/pid`` the worker's pid; ``/cpu?ms=N`` burns about N ms of CPU
(default 20); ``/sleep?ms=N`` waits N ms without CPU (default 30: an I/O-bound request); ``/leak``
keeps ~100 KB per request for the life of the worker; ``/touch`` reads preloaded objects
(``APP_OBJECTS``); ``/big?kb=N`` answers N KiB (default 1024) in 64 KiB
pieces; ``/lazy`` grows the worker by ``LAZY_MB``
(4) MiB spread over its first ``LAZY_REQUESTS`` (20) requests, then stays (an application that
loads lazily, as Django or Dancer2 do); ``/data`` the data size and the pid that built it;
``/exit?after=N&code=C`` (defaults 5 and 1): the worker exits with status C without answering its
(N+1)-th request (its client sees the connection closed: a failed request), as a worker that
crashes every few requests (status 3 makes gunicorn's arbiter halt: a worker boot error);
``/hold?ms=N`` (default 500) holds the request N ms without CPU, counting the requests in flight in
this process, and answers ``pid P in_flight_max M``: the most that were in flight in this process
at once since it started (a worker's threads: gunicorn's gthread workers, uWSGI's threads).

- ``APP_OBJECTS`` (default 0): that many small objects (strings of about 100 bytes) built at
  import, the way an application's preloaded tables and caches are many small objects; ``/touch``
  reads ``APP_TOUCH`` (default 80) of them per request, chosen at random with an exponential
  distribution (mean ``APP_OBJECTS`` / 8, so a few are read by every request and most rarely).
  Reading one writes its reference count, so under ``--preload`` each page the worker reads is
  copied on its first read: the worker's shared memory falls, and its private memory grows, about
  logarithmically with the requests it served (``gc.freeze()`` does not help: it keeps the
  collector off the objects, not the reference counts). ``APP_TOUCHED_DIR`` (default none): after
  each ``/touch`` the worker writes to ``DIR/PID`` the number of distinct memory pages holding the
  objects it has read (by their addresses): the pages it copied, counted by the app itself.
- ``APP_HELD_DIR`` (default none): every worker appends to ``DIR/PID`` a line per request: when it
  ended (Unix time, s) and how long it held the worker (ms), from the call of the app until the
  server closed the answer's iterable (after it wrote the last byte: with a slow client and nothing
  buffering in between, the transfer too).
- ``APP_GC_OBJECTS`` (default 0): that many small records built at import (each a dict holding a
  list: two objects the cycle collector tracks). ``/gc/build?n=N`` (default 2000) builds N such
  records for the request and drops them: enough to start collections on its own, now and then a
  full one, which writes to the GC header of every object it tracks, the preloaded records too,
  copying their pages into the worker; it answers ``pid P full_collections C`` (the full
  collections this process ran since it was forked).
- ``APP_GC_FREEZE`` (default 1): ``gc.freeze()`` at the end of the import (under ``gunicorn
  --preload``, before the fork: Instagram's remedy), which moves every object built so far out of
  the collector's reach; ``0`` leaves them to it. Reference counts are still written: it keeps
  the pages a request reads shared no better.
"""

from __future__ import annotations

import gc
import mmap
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from urllib.parse import parse_qs

MAP_FILE = os.environ.get("APP_MAP_FILE")
MAPPED: mmap.mmap | None = None
if MAP_FILE:
    with open(MAP_FILE, "rb") as mapped_file:
        MAPPED = mmap.mmap(mapped_file.fileno(), 0, prot=mmap.PROT_READ)
    MAPPED_SUM = sum(MAPPED[i] for i in range(0, len(MAPPED), mmap.PAGESIZE))
DATA_MB = int(os.environ.get("APP_DATA_MB", "0"))
DATA = bytes(range(256)) * (DATA_MB * 4096)
BUILT_IN = os.getpid()
LEAK: list[bytes] = []
LAZY: list[bytearray] = []
LAZY_MB = 4
LAZY_REQUESTS = 20
AGED: list[bytearray] = []
HELD_DIR = os.environ.get("APP_HELD_DIR")
OBJECTS = [f"{index:010d}" * 10 for index in range(int(os.environ.get("APP_OBJECTS", "0")))]
TOUCH = int(os.environ.get("APP_TOUCH", "80"))
TOUCHED_DIR = os.environ.get("APP_TOUCHED_DIR")
TOUCHED: set[int] = set()  # /touch: the pages (address // page size) of the objects this worker read
SERVED = [0]  # requests this worker took (/exit)
STARTED = [time.monotonic()]  # when this process started: reset in every forked worker
IN_FLIGHT = [0, 0]  # /hold: the requests in flight in this process now, the most at once
IN_FLIGHT_LOCK = [threading.Lock()]


def _forked() -> None:
    STARTED[0] = time.monotonic()
    SERVED[0] = 0
    TOUCHED.clear()
    IN_FLIGHT[:] = [0, 0]
    IN_FLIGHT_LOCK[0] = threading.Lock()


def hold(ms: float) -> int:
    """Holds the request ``ms`` ms, counted in flight meanwhile; returns the most in flight at once."""
    with IN_FLIGHT_LOCK[0]:
        IN_FLIGHT[0] += 1
        IN_FLIGHT[1] = max(IN_FLIGHT)
    try:
        time.sleep(ms / 1000.0)
    finally:
        with IN_FLIGHT_LOCK[0]:
            IN_FLIGHT[0] -= 1
    return IN_FLIGHT[1]


os.register_at_fork(after_in_child=_forked)

StartResponse = Callable[[str, list[tuple[str, str]]], object]

GC_RECORDS = [{"id": i, "tags": [i]} for i in range(int(os.environ.get("APP_GC_OBJECTS", "0")))]
FULL_COLLECTIONS = [gc.get_stats()[2]["collections"]]  # before the fork: reset in every forked worker
os.register_at_fork(after_in_child=lambda: FULL_COLLECTIONS.__setitem__(0, gc.get_stats()[2]["collections"]))
if os.environ.get("APP_GC_FREEZE", "1") != "0":
    gc.freeze()


def burn(ms: float) -> int:
    """Spends about ``ms`` milliseconds of CPU time; returns a checksum."""
    end = time.thread_time() + ms / 1000.0
    acc = 0
    while time.thread_time() < end:
        for i in range(200):
            acc = (acc * 31 + i) & 0xFFFFFFFF
    return acc


class _Held:
    """The answer's pieces; when the server closes it, how long the request held the worker is
    appended to ``APP_HELD_DIR/PID``."""

    def __init__(self, pieces: Iterable[bytes], began: float) -> None:
        self.pieces, self.began = pieces, began

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces

    def close(self) -> None:
        held_ms = (time.monotonic() - self.began) * 1000
        with open(os.path.join(str(HELD_DIR), str(os.getpid())), "a") as held:
            held.write(f"{time.time():.6f} {held_ms:.3f}\n")


def app(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
    began = time.monotonic()
    pieces = _answer(environ, start_response)
    return _Held(pieces, began) if HELD_DIR else pieces


def _answer(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
    path = str(environ.get("PATH_INFO", "/"))
    query = parse_qs(str(environ.get("QUERY_STRING", "")))
    pid = os.getpid()
    status = "200 OK"
    if path == "/":
        body = "hello\n"
    elif path == "/pid":
        body = f"{pid}\n"
    elif path == "/cpu":
        ms = float(query.get("ms", ["20"])[0])
        body = f"pid {pid} cpu_ms {ms:g} checksum {burn(ms)}\n"
    elif path == "/sleep":
        ms = float(query.get("ms", ["30"])[0])
        time.sleep(ms / 1000.0)
        body = f"pid {pid} slept_ms {ms:g}\n"
    elif path == "/hold":
        most = hold(float(query.get("ms", ["500"])[0]))
        body = f"pid {pid} in_flight_max {most}\n"
    elif path == "/lazy":
        if len(LAZY) < LAZY_REQUESTS:  # written, so resident and private to this worker
            LAZY.append(bytearray(b"z" * (LAZY_MB * 1024 * 1024 // LAZY_REQUESTS)))
        body = f"pid {pid} lazy {len(LAZY)}/{LAZY_REQUESTS}\n"
    elif path == "/age":
        # a cache that fills once the worker is old: after_s seconds after it started, mib MiB, once
        after_s = float(query.get("after_s", ["6"])[0])
        if not AGED and time.monotonic() - STARTED[0] >= after_s:
            AGED.append(bytearray(b"a" * (int(query.get("mib", ["32"])[0]) * 1024 * 1024)))
        body = f"pid {pid} aged {len(AGED)}\n"
    elif path == "/touch":
        read = 0
        for _ in range(TOUCH if OBJECTS else 0):
            index = int(random.expovariate(8 / len(OBJECTS))) % len(OBJECTS)
            read += len(OBJECTS[index])  # the object's reference count written: its page copied
            if TOUCHED_DIR:
                TOUCHED.add(id(OBJECTS[index]) // mmap.PAGESIZE)
        if TOUCHED_DIR:
            with open(os.path.join(TOUCHED_DIR, str(pid)), "w") as touched:
                touched.write(f"{len(TOUCHED)}\n")
        body = f"pid {pid} read {read} bytes of {len(OBJECTS)} objects\n"
    elif path == "/leak":
        LEAK.append(b"x" * 102400)
        body = f"pid {pid} leaked {len(LEAK)} x 100 KB\n"
    elif path == "/data":
        body = f"pid {pid} bytes {len(DATA)} built_in {BUILT_IN}\n"
    elif path == "/gc/build":
        rows = [{"id": i, "tags": [i]} for i in range(int(query.get("n", ["2000"])[0]))]
        del rows
        body = f"pid {pid} full_collections {gc.get_stats()[2]['collections'] - FULL_COLLECTIONS[0]}\n"
    elif path == "/exit":
        SERVED[0] += 1
        if SERVED[0] > int(query.get("after", ["5"])[0]):
            os._exit(int(query.get("code", ["1"])[0]))
        body = f"pid {pid} served {SERVED[0]}\n"
    elif path == "/big":
        size = int(query.get("kb", ["1024"])[0]) * 1024
        start_response(status, [("Content-Type", "application/octet-stream"), ("Content-Length", str(size))])
        piece = b"b" * 65536
        return [piece[: min(65536, size - at)] for at in range(0, size, 65536)]
    else:
        status, body = "404 Not Found", "not found\n"
    data = body.encode()
    start_response(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(data)))])
    return [data]
