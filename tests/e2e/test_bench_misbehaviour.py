"""Misbehaving servers: every failure is counted under its category, the run ends by itself and
nothing crashes (library and CLI)."""

from __future__ import annotations

import dataclasses

import pytest

import pounder
from pounder.results import ERROR_CATEGORIES

REQUESTS = 40
CATEGORIES = ERROR_CATEGORIES  # the TLS ones too: 0 over plain HTTP


def assert_only(result, category: str, count: int) -> None:
    """``count`` failures, all of them in ``category``; nothing complete."""
    errors = dataclasses.asdict(result.errors)
    assert set(errors) == set(CATEGORIES)
    assert errors == {name: (count if name == category else 0) for name in CATEGORIES}, errors
    assert result.requests.failed == count
    assert result.requests.complete == 0
    assert result.status == {}
    assert result.latency.corrected.count == 0  # failures are not latency samples
    # the series counts failures by the second they ended in; aborted ones never ended
    assert sum(second.failed for second in result.series) == count  # aborted ones count in the second the run stopped


@pytest.mark.parametrize(
    ("mode", "category"),
    [
        ("reset", "reset"),  # RST after reading the request
        ("malformed", "bad_response"),  # garbage status line
        ("bigheaders", "bad_response"),  # > 64 KiB of headers
        ("truncated", "reset"),  # Content-Length 1000, 500 bytes, close
        ("badchunk", "bad_response"),  # non-hex chunk size
        ("midclose", "reset"),  # close in the middle of the headers
    ],
)
@pytest.mark.parametrize("keepalive", [True, False], ids=["keepalive", "no-keepalive"])
def test_misbehaviour_counted_in_its_category(testserver, run, assert_accounted, mode, category, keepalive, io_path):
    srv = testserver(mode=mode)
    result = run(srv.url + "/", connections=4, threads=2, requests=REQUESTS, keepalive=keepalive, timeout=5,
                 io=io_path)

    assert_only(result, category, REQUESTS)
    stats = assert_accounted(srv, result)
    # each failure spoils its connection: a fresh one for every request
    assert stats["connections"] == result.connections_opened == REQUESTS
    assert run.wall_s < 5, "a broken response must fail at once, not wait for the timeout"
    assert srv.running and srv.stderr() == ""


@pytest.mark.parametrize(("mode", "category"), [("reset", "reset"), ("malformed", "bad_response")])
def test_misbehaviour_open_loop(testserver, run, assert_accounted, mode, category):
    srv = testserver(mode=mode)
    result = run(srv.url + "/", rate=100, duration="1s", timeout=5)

    assert_only(result, category, 100)
    assert result.requests.unsent == 0
    assert_accounted(srv, result)


def test_reset_over_unix_socket(testserver, run, assert_accounted, io_path):
    # on a Unix socket the server can only close (no RST): EOF before any response is still "reset"
    srv = testserver(mode="reset", unix=True)
    result = run("http://localhost/", unix_socket=srv.unix, connections=2, requests=20, timeout=5, io=io_path)

    assert_only(result, "reset", 20)
    assert_accounted(srv, result)


def test_silent_times_out(testserver, run, assert_accounted, io_path):
    srv = testserver(mode="silent")
    result = run(srv.url + "/", connections=4, threads=2, requests=8, timeout="0.5s", io=io_path)

    assert_only(result, "timeout", 8)
    stats = assert_accounted(srv, result)
    assert stats["connections"] == result.connections_opened == 8  # a timed-out connection is not reused
    # two rounds of 4 requests, each ending at its 0.5 s timeout
    assert 1.0 <= run.wall_s < 4.0


def test_silent_run_ends_at_deadline(testserver, run, assert_accounted, io_path):
    srv = testserver(mode="silent")
    result = run(srv.url + "/", connections=4, threads=2, duration="1s", timeout=30, io=io_path)

    # the run ends at the deadline plus at most the 1 s drain, not at the 30 s timeout
    assert run.wall_s < 4.0, run.wall_s
    assert result.elapsed_s == pytest.approx(1.0, abs=0.5)
    # the 4 requests still in flight are counted, as aborted
    assert_only(result, "aborted", 4)
    assert_accounted(srv, result)


def test_silent_aborted_connections_are_counted(testserver, run):
    # connections.opened counts every connection the engine opened, also those of aborted requests
    srv = testserver(mode="silent")
    result = run(srv.url + "/", connections=4, threads=2, duration="1s", timeout=30)

    assert result.errors.aborted == 4
    assert result.connections_opened == srv.connections() == 4


def test_silent_open_loop_aborted(testserver, run, assert_accounted):
    srv = testserver(mode="silent")
    result = run(srv.url + "/", rate=20, duration="1s", timeout=30)

    assert run.wall_s < 4.0, run.wall_s
    assert_only(result, "aborted", 20)
    assert result.requests.unsent == 0
    assert_accounted(srv, result)


@pytest.mark.parametrize("keepalive", [True, False], ids=["keepalive", "no-keepalive"])
def test_refused(run, free_port, keepalive, io_path):
    result = run(f"http://127.0.0.1:{free_port}/", connections=2, requests=10, keepalive=keepalive, io=io_path)

    assert_only(result, "refused", 10)
    assert result.connections_opened == 0
    assert result.bytes.total == 0
    assert result.bytes.sent == 0
    assert run.wall_s < 5


def test_refused_duration_ends(run, free_port):
    result = run(f"http://127.0.0.1:{free_port}/", connections=2, duration="0.5s")

    assert result.requests.failed > 0
    assert_only(result, "refused", result.requests.failed)
    assert run.wall_s < 3


# ---------------------------------------------------------------------------------------------
# Through the CLI in a subprocess: exit 0, the report, no traceback


def _assert_nothing_succeeded(proc, message):
    """A run where nothing succeeded is no success: exit 1, the report still printed, one line."""
    assert proc.returncode == 1, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Complete requests:        0" in proc.stdout, proc.stdout
    assert proc.stderr == f"pounder: error: {message}\n"


@pytest.mark.parametrize(
    ("mode", "category", "label"),
    [("reset", "reset", "reset"), ("malformed", "bad_response", "bad response"), ("truncated", "reset", "reset")],
)
def test_cli_misbehaviour(testserver, cli, mode, category, label):
    srv = testserver(mode=mode)
    proc = cli(srv.url + "/", "-c", "2", "-n", "20", "--timeout", "5s")

    _assert_nothing_succeeded(proc, f"no request succeeded (20 failed: {label} 20)")
    assert "Failed requests:          20" in proc.stdout, proc.stdout
    assert "Complete requests:        0" in proc.stdout, proc.stdout
    breakdown = [line for line in proc.stdout.splitlines() if line.strip().startswith("(refused")]
    assert len(breakdown) == 1, proc.stdout
    assert f"{label} 20" in breakdown[0], breakdown
    assert srv.count() == 20


def test_cli_silent_timeout(testserver, cli):
    srv = testserver(mode="silent")
    proc = cli(srv.url + "/", "-c", "2", "-n", "4", "--timeout", "0.5s")

    _assert_nothing_succeeded(proc, "no request succeeded (4 failed: timeout 4)")
    assert "Failed requests:          4" in proc.stdout, proc.stdout
    assert "timeout 4" in proc.stdout, proc.stdout
    assert srv.count() == 4


def test_cli_refused(cli, free_port, tmp_path):
    out = tmp_path / "r.json"
    proc = cli(f"http://127.0.0.1:{free_port}/", "-c", "1", "-n", "5", "--json", str(out))

    _assert_nothing_succeeded(proc, "no request succeeded (5 failed: refused 5)")
    assert pounder.load_result(out).requests.failed == 5  # written all the same
    assert "Failed requests:          5" in proc.stdout, proc.stdout
    assert "refused 5" in proc.stdout, proc.stdout
    assert "Status codes: none" in proc.stdout, proc.stdout
