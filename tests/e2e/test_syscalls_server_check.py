"""`pounder syscalls` refuses to trace a server that is not the one behind the URL (issue 14, item 6).

Two real servers: the one serving the URL (our test server, or gunicorn) and another one whose pid
file is given (gunicorn). Before anything is sent pounder checks that a process of the named tree
listens on the URL's address and port; when the tree holds the listening socket but another process
accepts the connections (a socket holder such as a supervisor), the trace is refused after the load:
the traced processes accepted none of pounder's connections.
"""

from __future__ import annotations

import http.server
import shutil
import threading
from collections.abc import Iterator

import pytest

import pounder
from pounder.syscalls import trace_syscalls
from support import cliutil
from support.cliutil import assert_usage_error
from support.proctree import TreeFactory

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")


def test_pidfile_of_another_server_is_refused_before_any_request(testserver, gunicorn_server) -> None:
    serving = testserver(mode="ok")
    other = gunicorn_server(workers=2)
    code, out, err = cliutil.run_cli("syscalls", serving.url + "/", "--server-pidfile", str(other.pidfile),
                                     "-n", "100", "--warmup", "10")  # fmt: skip
    assert_usage_error(code, out, err, f"process {other.pid} (from pidfile {other.pidfile}) does not listen on "
                       f"127.0.0.1:{serving.port}: it is not the server behind the URL")  # fmt: skip
    assert serving.count() == 0  # not even the warm-up was sent


def test_the_same_check_with_a_pid(testserver, gunicorn_server) -> None:
    serving = testserver(mode="ok")
    other = gunicorn_server(workers=2)
    with pytest.raises(pounder.UsageError, match=rf"^process {other.pid} does not listen on 127\.0\.0\.1:"):
        trace_syscalls(serving.url + "/", server_pid=other.pid, requests=100)
    assert serving.count() == 0


@needs_strace
def test_the_server_behind_the_url_passes(gunicorn_server) -> None:
    server = gunicorn_server(workers=2)
    report = trace_syscalls(server.url + "/", server_pidfile=server.pidfile, requests=50, connections=2,
                            warmup=10, timeout=10)  # fmt: skip
    assert report.requests == 50
    assert report.connections_accepted == report.connections_opened == 50


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the http.server name)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def held_socket() -> Iterator[tuple[http.server.ThreadingHTTPServer, TreeFactory]]:
    """A small HTTP server in this process, and a factory of process trees that may inherit its
    listening socket; both stopped at teardown."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    trees = TreeFactory()
    try:
        yield httpd, trees
    finally:
        trees.stop_all()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@needs_strace
def test_a_tree_that_holds_the_socket_but_accepts_nothing_is_refused_after_the_load(held_socket) -> None:
    httpd, trees = held_socket
    holder = trees.start(pass_fds=(httpd.fileno(),))
    holder.spawn(2)
    url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    with pytest.raises(pounder.PounderError, match=rf"^process {holder.pid} accepted none of the 50 connections "
                       "pounder opened: it is not the server behind the URL") as raised:  # fmt: skip
        trace_syscalls(url, server_pid=holder.pid, requests=50, connections=2, warmup=0, timeout=10)
    assert not isinstance(raised.value, pounder.UsageError)  # exit 1: it was found out after the load
