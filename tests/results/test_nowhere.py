"""The one rule for a load that got nowhere (:func:`pounder.results.load_failure`), against real servers:
no answer 2xx or 3xx (all 500, all 404 unless ``--expect-status 404``), plain http:// to a TLS port
(nginx's 400, Python's ssl server closing), a server requiring a client certificate, and a scenario
whose users never get past the login, in ``bench``, ``compare`` (per variant: no verdict, exit 1,
results written first) and the warm-up of the servers pounder starts (``tune``, ``run``). Each
load is tiny (-n 20 or -d 200ms)."""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pounder import PounderError, UsageError
from pounder.load import BenchSpec
from pounder.results import BenchResult, load_failure, load_result, parse_statuses, statuses_text
from pounder.results._outcome import speaks_tls
from support.cliutil import assert_usage_error, run_cli
from support.schemas import validate

DATA = Path(__file__).resolve().parents[1] / "data"
needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")
needs_nginx = pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
                                 reason="needs nginx")  # fmt: skip


def _error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pounder: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


# ---------------------------------------------------------------------------------------------
# --expect-status read


def test_expect_status_is_read_once_and_refused_in_one_line() -> None:
    assert parse_statuses("404") == ((404, 404),)
    assert parse_statuses("4xx, 500-503") == ((400, 499), (500, 503))
    assert parse_statuses([404, "410"]) == ((404, 404), (410, 410))
    assert parse_statuses(None) is None
    assert statuses_text(((404, 404), (500, 599))) == "404, 500-599"
    for bad in ("", "600", "99", "4x", "abc" * 1000, True, "499-400"):
        with pytest.raises(UsageError) as caught:
            parse_statuses(bad)
        assert "\n" not in str(caught.value) and len(str(caught.value)) < 240
    spec = BenchSpec.from_options("http://127.0.0.1:9/", requests=1, expect_status="404")
    assert spec.run_options().expect_status == ((404, 404),)
    with pytest.raises(UsageError, match="--expect-status cannot go with --scenario: each step's expect"):
        BenchSpec.from_options("http://127.0.0.1:9", requests=1, expect_status="404",
                               scenario=Path(__file__).parent / "missing.toml")  # fmt: skip


def test_bench_refuses_a_bad_expect_status_before_sending(testserver) -> None:  # type: ignore[no-untyped-def]
    server = testserver()
    code, out, err = run_cli("bench", "-n", "5", "--expect-status", "7xx", server.url)
    assert_usage_error(code, out, err, "--expect-status takes HTTP statuses from 100 to 599")
    assert server.count() == 0


# ---------------------------------------------------------------------------------------------
# bench


def test_all_500_exits_1_after_writing_the_result(testserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = testserver()
    out = tmp_path / "r.json"
    code, stdout, stderr = run_cli("bench", "-n", "20", "-c", "2", "--json", str(out), f"{server.url}/status/500")
    assert code == 1, stderr
    assert _error_line(stderr) == ("pounder: error: no answer was 2xx or 3xx (20 × 500); give --expect-status CODE "
                                   "when that answer is the one expected")  # fmt: skip
    assert "Complete requests" in stdout or stdout  # the report is still shown
    assert load_result(out).status == {"500": 20}  # written first
    assert server.count() == 20


def test_an_expected_status_is_an_answer(testserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = testserver()
    out = tmp_path / "r.json"
    code, _, stderr = run_cli("bench", "-n", "20", "-c", "2", "-q", "--expect-status", "404,410", "--json", str(out),
                              f"{server.url}/status/404")  # fmt: skip
    assert (code, stderr) == (0, "")
    document = json.loads(out.read_text())
    validate(document, "bench-result")
    assert document["options"]["expect_status"] == [[404, 404], [410, 410]]
    assert load_result(out).options.expect_status == ((404, 404), (410, 410))
    code, _, stderr = run_cli("bench", "-n", "20", "-c", "2", "-q", "--expect-status", "404",
                              f"{server.url}/status/500")  # fmt: skip
    assert code == 1, stderr
    assert _error_line(stderr) == "pounder: error: no answer had an expected status (20 × 500; expected: 404)"
    code, _, stderr = run_cli("bench", "-n", "20", "-c", "2", "-q", f"{server.url}/status/302")
    assert (code, stderr) == (0, "")  # 3xx is an answer


@pytest.fixture
def python_tls_port(tmp_path: Path) -> Iterator[int]:
    """A TLS server made with Python's ssl module (it closes a connection that does not speak TLS)."""
    from support.tls import make_pki

    pki = make_pki(tmp_path / "pki")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            try:
                conn.settimeout(2)
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(4096)
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            except (OSError, ssl.SSLError):
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@needs_openssl
def test_plain_http_to_python_tls_port_is_named(python_tls_port: int) -> None:
    assert speaks_tls(f"127.0.0.1:{python_tls_port}")
    code, _, stderr = run_cli("bench", "-n", "10", "-c", "1", "-q", "--timeout", "2s",
                              f"http://127.0.0.1:{python_tls_port}/")  # fmt: skip
    assert code == 1, stderr
    line = _error_line(stderr)
    assert line.startswith("pounder: error: no request succeeded (10 failed")
    assert line.endswith(f": the server at 127.0.0.1:{python_tls_port} speaks TLS: use https://"), line


@needs_openssl
@needs_nginx
def test_plain_http_to_nginx_tls_port_and_a_missing_client_certificate(tmp_path: Path, testserver) -> None:  # type: ignore[no-untyped-def]
    from support.tls import TlsNginx, make_pki

    pki = make_pki(tmp_path / "pki")
    with TlsNginx(tmp_path / "nginx", pki) as srv:
        code, _, stderr = run_cli("bench", "-n", "20", "-c", "2", "-q", f"http://127.0.0.1:{srv.port}/")
        assert code == 1
        assert _error_line(stderr) == (f"pounder: error: no answer was 2xx or 3xx (20 × 400): the server at "
                                       f"127.0.0.1:{srv.port} speaks TLS: use https://")  # fmt: skip
        assert not speaks_tls(f"127.0.0.1:{srv.plain_port}")
        code, _, stderr = run_cli("bench", "-n", "20", "-c", "2", "-q", "--cacert", str(pki.ca), srv.verify_url)
        assert code == 1
        line = _error_line(stderr)
        assert line.startswith("pounder: error: no answer was 2xx or 3xx (20 × 400); a server that requires a "
                               "client certificate answers 400 without one"), line  # fmt: skip
        assert line.endswith("give --cert FILE and --key FILE")
        code, _, stderr = run_cli("bench", "-n", "20", "-c", "2", "-q", "--cacert", str(pki.ca), "--cert",
                                  str(pki.client_cert), "--key", str(pki.client_key), srv.verify_url)  # fmt: skip
        assert (code, stderr) == (0, "")
    assert not speaks_tls(testserver().url.split("/")[2])  # a plain HTTP port answers HTTP


# ---------------------------------------------------------------------------------------------
# compare: a variant whose trials got nowhere has no verdict


LOGIN_NEVER_MATCHES = """\
[[login]]
name = "log in"
path = "/"
capture = [{ var = "token", body = 'token="([^"]+)"' }]

[[loop]]
name = "home"
path = "/"
"""


def test_compare_with_a_login_that_never_matches_exits_1_without_a_verdict(testserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = testserver()
    scenario = tmp_path / "login.toml"
    scenario.write_text(LOGIN_NEVER_MATCHES)
    out = tmp_path / "c.json"
    base = server.url
    code, stdout, stderr = run_cli("compare", base, base, "--label", "a", "--label", "b", "--scenario",
                                   str(scenario), "-d", "200ms", "-c", "2", "--trials", "3", "--no-warmup",
                                   "--json", str(out))  # fmt: skip
    assert code == 1, (stdout, stderr)
    line = _error_line(stderr)
    assert line.startswith("pounder: error: every trial of a got nowhere (no virtual user got past the login "
                           "steps: log in: "), line  # fmt: skip
    assert "every trial of b got nowhere" in line
    assert f"scenario {scenario} (each step's method), keep-alive" in stdout
    assert "GET, keep-alive" not in stdout
    assert "slower" not in stdout and "faster" not in stdout
    assert "b vs a: unknown, no ratio: a has 0 counted trials (3 not counted: got nowhere)" in stdout
    document = json.loads(out.read_text())
    validate(document, "compare")
    assert document["options"]["scenario"] == str(scenario)
    assert all(trial["not_counted"] == "failures" and trial["nowhere"].startswith("no virtual user got past")
               for trial in document["trials"])  # fmt: skip
    assert document["comparisons"][0]["verdict"] == "unknown"


def test_compare_of_a_variant_answering_404_exits_1_unless_expected(testserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = testserver()
    good, missing = server.url, f"{server.url}/status/404"
    args = ("compare", good, missing, "--label", "good", "--label", "missing", "-n", "30", "-c", "2", "--trials", "3",
            "--no-warmup", "-q")  # fmt: skip
    code, _, stderr = run_cli(*args, "--json", str(tmp_path / "c.json"))
    assert code == 1, stderr
    assert _error_line(stderr) == ("pounder: error: every trial of missing got nowhere (no answer was 2xx or 3xx "
                                   "(30 × 404); give --expect-status CODE when that answer is the one expected): no "
                                   "comparison with it (at least 2 counted trials needed)")  # fmt: skip
    document = json.loads((tmp_path / "c.json").read_text())
    validate(document, "compare")
    code, _, stderr = run_cli(*args, "--expect-status", "200,404")
    assert (code, stderr) == (0, "")


# ---------------------------------------------------------------------------------------------
# the servers pounder starts (tune, run): their warm-up


def test_a_started_server_that_answers_only_404_stops_at_its_warm_up(tmp_path: Path) -> None:
    from pounder.pool import PoolParams, Runner, Workload, make_adapter

    if shutil.which("gunicorn") is None:
        pytest.skip("needs gunicorn")
    apps = Path(__file__).resolve().parents[1] / "apps"
    runner = Runner(make_adapter("gunicorn", "wsgi_app:app", pythonpath=str(apps)), tmp_path / "servers",
                    Workload(path="/no-such-page"), 0, 10.0)  # fmt: skip
    with runner.started(PoolParams(1)) as server, pytest.raises(PounderError) as caught:
        runner.warm(server, rounds=1)
    message = str(caught.value)
    assert "got nowhere while warming up: no answer was 2xx or 3xx (2 × 404)" in message, message
    assert "--expect-status" not in message  # tune and run take none: none is advised


def test_an_open_loop_run_whose_arrivals_were_all_unsent_says_so() -> None:
    """Nothing completed, nothing failed, every arrival unsent (every connection busy): the line
    says unsent, not "0 failed" (a recorded bench result, its counts set so)."""
    document = json.loads((DATA / "tune-phpfpm-leak/points/children-2-t3.json").read_text())["bench"]
    document["requests"].update(complete=0, failed=0, non_2xx=0, unsent=7)
    document["status"] = {}
    document["errors"] = {name: 0 for name in document["errors"]}
    result = BenchResult.from_dict(document)
    assert load_failure(result) == "no request succeeded (7 unsent: no free connection in time)"
    document["requests"].update(failed=3)
    document["errors"]["refused"] = 3
    assert load_failure(BenchResult.from_dict(document)) == \
        "no request succeeded (3 failed: refused 3; 7 unsent: no free connection in time)"
