"""A TCP peer asked what it speaks: connect, send a preface, read the first bytes of its answer.

Open to every layer (it imports no package): whether a port speaks TLS (``pounder.results``'
:func:`~pounder.results.speaks_tls`, a ClientHello) and whether a Ray head's GCS answers
(``pounder.agents``, HTTP/2's client preface)."""

from __future__ import annotations

import socket


def first_bytes(host: str, port: int, preface: bytes, count: int, timeout_s: float) -> bytes:
    """The first ``count`` bytes ``host:port`` answers to ``preface`` (fewer when it closes first);
    :class:`OSError` (:class:`TimeoutError` among them) when it cannot be asked."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(preface)
        head = b""
        while len(head) < count:
            piece = sock.recv(count - len(head))
            if not piece:
                break
            head += piece
    return head
