"""Host names as the machine resolves them, in a private mount namespace (``unshare -m``) whose
``/etc/hosts`` and ``/etc/resolv.conf`` are our own files, so nothing of the machine changes:

- a name that cannot be this machine is refused before any DNS query leaves (a resolver of our
  own on a loopback address records every query; ``--allow-remote`` shows that it would see one);
- ``localhost`` with both ::1 and 127.0.0.1 reaches a server listening on only one of them, as a
  browser does, counted against the server's own log.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pounder import load_result

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                reason="needs root and unshare(1) for a private /etc/hosts")

RESOLVER = "127.83.0.1"  # a loopback address of its own: nothing else listens on its port 53


def in_namespace(tmp_path: Path, argv: list[str], *, hosts: str = "127.0.0.1 localhost\n",
                 timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``argv`` run with our hosts file and a resolv.conf naming only :data:`RESOLVER`."""
    (tmp_path / "hosts").write_text(hosts)
    (tmp_path / "resolv.conf").write_text(f"nameserver {RESOLVER}\noptions timeout:1 attempts:1\n")
    script = (f"mount --bind {tmp_path / 'hosts'} /etc/hosts && "
              f"mount --bind {tmp_path / 'resolv.conf'} /etc/resolv.conf && exec \"$@\"")
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *argv], capture_output=True, text=True,
                          timeout=timeout_s, cwd=tmp_path)


@pytest.fixture
def resolver() -> Iterator[socket.socket]:
    """A DNS server that answers nothing and keeps every query it receives."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind((RESOLVER, 53))
    except OSError as error:
        sock.close()
        pytest.skip(f"cannot listen on {RESOLVER}:53: {error}")
    sock.setblocking(False)
    yield sock
    sock.close()


def queries(sock: socket.socket, wait_s: float = 0.3) -> list[bytes]:
    time.sleep(wait_s)
    got = []
    while True:
        try:
            got.append(sock.recv(512))
        except BlockingIOError:
            return got


def test_a_remote_name_is_refused_without_a_dns_query(tmp_path: Path, resolver: socket.socket) -> None:
    refused = in_namespace(tmp_path, ["pounder", "bench", "http://www.example.com:9/", "-n", "1"])
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines() == [
        "pounder: error: www.example.com is not in /etc/hosts nor a loopback address, and no DNS query was sent "
        "for it (pounder loads only this machine); pass --allow-remote to load another machine"]
    assert queries(resolver) == []
    # The control: with --allow-remote the name is looked up, and our resolver sees the query.
    allowed = in_namespace(tmp_path, ["pounder", "bench", "--allow-remote", "http://www.example.com:9/", "-n", "1"])
    assert allowed.returncode == 2, allowed.stderr
    assert "cannot resolve host 'www.example.com'" in allowed.stderr
    assert any(b"\x07example\x03com" in query for query in queries(resolver))


def test_a_name_the_hosts_file_gives_elsewhere_is_refused(tmp_path: Path, resolver: socket.socket) -> None:
    done = in_namespace(tmp_path, ["pounder", "bench", "http://db.test:9/", "-n", "1"],
                        hosts="127.0.0.1 localhost\n192.0.2.10 db.test\n")
    assert done.returncode == 2
    assert "db.test (192.0.2.10) is not a loopback address" in done.stderr
    assert queries(resolver) == []


@pytest.fixture
def ipv6_only_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """Python's http.server on ::1 only; its log has one line per request it answered."""
    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "server.log"
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.html").write_text("hello\n")
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "::1", "-d", str(tmp_path / "www"),
                                   str(port)], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("::1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, log.read_text()
                time.sleep(0.05)
        yield port, log
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("hosts", ["127.0.0.1 localhost\n::1 localhost\n", "::1 localhost\n127.0.0.1 localhost\n"])
def test_localhost_reaches_a_server_on_ipv6_only(tmp_path: Path, ipv6_only_server: tuple[int, Path],
                                                 hosts: str) -> None:
    port, log = ipv6_only_server
    before = log.read_text().count('"GET / HTTP/1.1" 200')  # the readiness probe sent no request
    done = in_namespace(tmp_path, ["pounder", "bench", f"http://localhost:{port}/", "-n", "20", "-c", "2",
                                   "--json", "out.json", "-q"], hosts=hosts)
    assert done.returncode == 0, done.stderr
    result = load_result(tmp_path / "out.json")
    assert (result.requests.complete, result.requests.failed) == (20, 0)
    assert result.status == {"200": 20}
    assert re.fullmatch(rf"127\.0\.0\.1:{port},\[::1\]:{port}", result.options.targets[0].connect)
    assert log.read_text().count('"GET / HTTP/1.1" 200') - before == 20
