"""Who listens where, and how many connections wait to be accepted: real sockets on loopback,
the kernel's own figures (no server needed)."""

from __future__ import annotations

import contextlib
import os
import socket
import time

import pytest

from pounder.servers import AcceptQueue, owns_listener


def _settle(queue: AcceptQueue, expected: int) -> int | None:
    """The queue's count once the handshakes are through (they complete in the kernel, not at once)."""
    deadline = time.monotonic() + 2.0
    while True:
        got = queue.waiting()
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.01)


def test_the_accept_queue_counts_the_connections_not_accepted_yet() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        assert owns_listener(os.getpid(), port, "127.0.0.1")
        with AcceptQueue(port, "127.0.0.1") as queue, contextlib.ExitStack() as stack:
            assert queue.waiting() == 0
            for _ in range(5):
                stack.enter_context(socket.create_connection(("127.0.0.1", port)))
            assert _settle(queue, 5) == 5
            accepted, _ = listener.accept()
            accepted.close()
            assert queue.waiting() == 4
        # another address, or a port nobody listens on: nothing to count
        with AcceptQueue(port, "127.0.0.2") as other:
            assert other.waiting() is None
    with AcceptQueue(port, "127.0.0.1") as closed:
        assert closed.waiting() is None


def test_the_accept_queue_of_an_ipv6_listener() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    with socket.socket(socket.AF_INET6) as listener:
        try:
            listener.bind(("::1", 0))
        except OSError:
            pytest.skip("no ::1")
        listener.listen(4)
        port = listener.getsockname()[1]
        with socket.create_connection(("::1", port)), AcceptQueue(port, "::1") as queue:
            assert _settle(queue, 1) == 1
            with AcceptQueue(port) as anywhere:
                assert anywhere.waiting() == 1


def test_listeners_are_found_by_their_socket_inode_without_time_wait_lines() -> None:
    """``owns_listener`` asks the kernel for listeners only (sock_diag): the inode it finds is the
    socket's own (fstat), on the port and address it is bound to and no other; a connected
    socket on the same port is not a listener."""
    from pounder.servers._listen import listening_inodes  # the function under test is private

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        assert listening_inodes(port, "127.0.0.1") == {str(os.fstat(listener.fileno()).st_ino)}
        assert listening_inodes(port, "127.0.0.2") == set()
        with socket.create_connection(("127.0.0.1", port)):
            assert listening_inodes(port) == {str(os.fstat(listener.fileno()).st_ino)}
        assert owns_listener(os.getpid(), port, "127.0.0.1")
    assert not owns_listener(os.getpid(), port, "127.0.0.1")
