"""Helpers for the tests of threads in a worker (Puma, gunicorn's gthread workers, uWSGI's
threads): requests held at once against the test apps' ``/hold`` (they count the requests in
flight in their own process), and a printed configuration started as a user would."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from pounder.servers import free_port
from pounder.servers._net import answers_http
from support.leftovers import kill_leftovers, processes_mentioning
from support.srvutil import fields, wait_not_running

HOLD_MS = 600
"""How long ``/hold`` keeps each request: longer than it takes the client to send them all."""


def in_flight(url: str, clients: int = 4, hold_ms: int = HOLD_MS) -> tuple[set[int], int]:
    """``clients`` requests of ``/hold`` sent together (each from a thread of its own on a connection
    of its own, all connected before any is sent): (the pids that answered, the most requests in
    flight at once any of them saw in its own process). Counted by the app, not timed.

    Each request goes out whole: gunicorn 27's gthread workers answer a request whose head came in
    two pieces on one of several fresh connections only after about 4 s (measured)."""
    parts = urlsplit(url)
    address = (parts.hostname or "127.0.0.1", parts.port or 80)
    together = threading.Barrier(clients)

    def one(_: int) -> dict[str, str]:
        with socket.create_connection(address, timeout=30.0) as sock:
            together.wait(timeout=30.0)
            sock.sendall(f"GET /hold?ms={hold_ms} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            data = b""
            while chunk := sock.recv(65536):  # HTTP/1.0: the server closes after the answer
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.split(b" ", 2)[1:2] == [b"200"], head[:200]
        return fields(body.decode())

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        answers = list(pool.map(one, range(clients)))
    return {int(answer["pid"]) for answer in answers}, max(int(answer["in_flight_max"]) for answer in answers)


@contextlib.contextmanager
def serving(argv: Sequence[str], cwd: Path, port: int, stop: signal.Signals = signal.SIGTERM,
            timeout_s: float = 60.0) -> Iterator[str]:
    """Run ``argv`` in ``cwd`` (a printed configuration's command line, listening on ``port``) until
    it answers HTTP; yield its URL; then stop it with ``stop``: it must exit and leave nothing
    running in ``cwd``. Its whole session is killed in every case, also on failure."""
    log = cwd / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while not answers_http(port):
            assert proc.poll() is None, f"exited {proc.returncode}: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no answer in {timeout_s:g} s: {log.read_text()[-3000:]}"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
        proc.send_signal(stop)
        proc.wait(timeout=30)
        assert wait_not_running([p.pid for p in processes_mentioning(str(cwd))], 10) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kill_leftovers(str(cwd))


__all__ = ["HOLD_MS", "free_port", "in_flight", "serving"]
