"""Helpers for the tests of threads in a worker (Puma, gunicorn's gthread workers, uWSGI's
threads): requests held at once against the test apps' ``/hold`` (they count the requests in
flight in their own process)."""

from __future__ import annotations

import concurrent.futures
import socket
import threading
from urllib.parse import urlsplit

from support.srvutil import fields

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


__all__ = ["HOLD_MS", "in_flight"]
