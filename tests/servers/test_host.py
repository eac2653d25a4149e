"""``--listen``: a server under test on another address than 127.0.0.1 (where Ray agents on other
machines reach it). Each adapter's real server is started on 127.0.0.2 and must answer there and
only there; :func:`listen_address` refuses what cannot be listened on, before anything starts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pounder import UsageError
from pounder.pool import ApacheAdapter, CommandAdapter, GunicornAdapter, PoolParams, StarmanAdapter
from pounder.servers import apache_missing, listen_address, owns_listener, starman_missing
from pounder.servers._net import answers_http

APPS = Path(__file__).resolve().parents[1] / "apps"
OTHER = "127.0.0.2"


def _adapter(kind: str) -> object:
    if kind == "gunicorn":
        return GunicornAdapter("wsgi_app:app", pythonpath=str(APPS))
    if kind == "starman":
        if starman_missing():
            pytest.skip(str(starman_missing()))
        return StarmanAdapter(APPS / "app.psgi")
    if kind == "apache":
        if apache_missing():
            pytest.skip(str(apache_missing()))
        return ApacheAdapter(perl_handlers={"/": "PounderTest::Hello"}, perl_lib=APPS / "perl" / "lib")
    return CommandAdapter(f"{sys.executable} -m http.server {{port}} --bind {{host}}")


@pytest.mark.parametrize("kind", ["gunicorn", "starman", "apache", "command"])
def test_each_server_listens_on_the_address_given_and_nowhere_else(kind: str, public_dir: Path) -> None:
    adapter = _adapter(kind)
    server = adapter.server(PoolParams(1), public_dir, host=OTHER)  # type: ignore[attr-defined]
    with server:
        assert server.url == f"http://{OTHER}:{server.port}"
        assert answers_http(server.port, host=OTHER)
        assert owns_listener(server.pid, server.port, OTHER)
        assert not owns_listener(server.pid, server.port, "127.0.0.1")
        assert not answers_http(server.port, timeout_s=1.0)  # 127.0.0.1: nobody there


def test_listen_address_accepts_this_machines_addresses() -> None:
    assert listen_address("127.0.0.1") == "127.0.0.1"
    assert listen_address(OTHER) == OTHER  # all of 127.0.0.0/8 is this machine's loopback


@pytest.mark.parametrize(("host", "allow_remote", "message"), [
    ("localhost", False, r"--listen must be an IPv4 address of this machine .* not 'localhost'"),
    ("::1", False, "must be an IPv4 address"),
    (" 127.0.0.1", False, "must be an IPv4 address"),
    ("127.0.0.01", False, "must be an IPv4 address"),
    ("0.0.0.0", True, "not 0.0.0.0"),
    ("192.0.2.1", False, r"--listen 192.0.2.1 would open the server under test to the network: add --allow-remote"),
    ("192.0.2.1", True, r"--listen 192.0.2.1: not an address of this machine"),  # TEST-NET-1: bound, never sent to
    (5, False, "must be an IPv4 address as a string, got 5"),
])  # fmt: skip
def test_listen_address_refuses(host: object, allow_remote: bool, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        listen_address(host, allow_remote=allow_remote)  # type: ignore[arg-type]
