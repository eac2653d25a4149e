"""HTTPS end to end: ``pounder bench https://...`` against a real nginx with TLS and a real Apache
with mod_ssl, certificates made here with the ``openssl`` CLI. Counts are held to the servers' own
access logs: every request, and every resumed TLS session (nginx's ``$ssl_session_reused``,
mod_ssl's ``SSL_SESSION_RESUMED``)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.schemas import validate

import pounder
from pounder.report._bench import bench_sections
from pounder.report._html import page
from pounder.servers import ApacheServer, apache_missing
from support.cliutil import assert_usage_error, run_cli
from support.tls import Pki, TlsNginx, free_port, make_pki, self_signed, v1_certificate

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None or shutil.which("nginx", path="/usr/sbin:/usr/bin") is None,
    reason="needs openssl and nginx",
)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def nginx(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsNginx]:
    with TlsNginx(tmp_path_factory.mktemp("nginx"), pki) as srv:
        yield srv


def test_counts_and_the_tls_phase(nginx: TlsNginx, pki: Pki, tmp_path: Path) -> None:
    nginx.clear_log()
    out = tmp_path / "r.json"
    tsv = tmp_path / "r.tsv"
    code, stdout, stderr = run_cli(
        "bench", nginx.url, "--cacert", str(pki.ca), "-n", "300", "-c", "3", "-t", "1", "--json", str(out),
        "--tsv", str(tsv),
    )  # fmt: skip
    assert code == 0, stderr
    served = nginx.log_lines(nginx.port)
    assert len(served) == 300 and all(line.startswith("200 ") for line in served)
    result = json.loads(out.read_text())
    validate(result, "bench-result")
    assert result["requests"]["complete"] == 300
    assert result["tls"]["handshakes"] == result["connections"]["opened"] == result["phases"]["tls"]["count"] == 3
    assert result["errors"]["tls_certificate"] == result["errors"]["tls_handshake"] == 0
    lines = stdout.splitlines()
    assert any(line.startswith("TLS handshakes:") and line.split()[2] == "3" for line in lines), stdout
    phases = [
        line.split(":")[0]
        for line in lines
        if line[:1].isupper() and line.split(":")[0] in ("Connect", "TLS", "Waiting", "Processing", "Total")
    ]
    assert phases == ["Connect", "TLS", "Waiting", "Processing", "Total"], stdout
    assert pounder.load_result(out).phases.tls.count == 3  # read back
    # the settings: in the JSON and the report
    assert result["options"]["tls"] == {"insecure": False, "cacert": str(pki.ca), "cert": None, "resume": True}
    assert f"TLS settings:             server certificate checked against {pki.ca}, session resumption on" in lines
    assert pounder.load_result(out).options.tls == pounder.results.TlsInfo(False, str(pki.ca), None, True)
    # the TSV: the handshake in its last column, for the requests that opened a connection
    header, *rows = (line.split("\t") for line in tsv.read_text().splitlines())
    assert header[-3:] == ["bytes", "error", "tls_us"] and len(rows) == 300
    handshakes = [row for row in rows if row[-1] != ""]
    assert len(handshakes) == 3 and all(row[header.index("connect_us")] != "" for row in handshakes)
    assert all(int(row[-1]) <= int(row[header.index("uncorrected_us")]) for row in handshakes)
    # pounder report's page: the handshakes
    assert "TLS handshakes: 3 (" in page("bench", "t", bench_sections([("r", pounder.load_result(out))]))


def test_refused_certificates_are_one_line_before_anything_is_sent(nginx: TlsNginx, pki: Pki) -> None:
    nginx.clear_log()
    assert_usage_error(
        *run_cli("bench", nginx.url, "--cacert", str(pki.other_ca), "-n", "5"),
        f"{nginx.url}: the server's certificate is not signed by a CA in {pki.other_ca} (give --cacert the CA that "
        "signed it, or --insecure instead of --cacert)",
    )
    wrong = (f"{nginx.url}: the server's certificate is not signed by a CA this system trusts (give --cacert FILE "
             "or --insecure)",)  # fmt: skip
    assert_usage_error(*run_cli("bench", nginx.url, "-n", "5"), *wrong)  # the system's roots
    assert_usage_error(*run_cli("compare", nginx.url, nginx.url, "-n", "5", "--trials", "3"), *wrong)
    assert_usage_error(
        *run_cli("bench", f"https://{nginx.plain_url}", "--insecure", "-n", "5"),
        "no TLS server there",
        "(use http:// for a plain HTTP port)",
    )
    assert_usage_error(
        *run_cli("bench", f"http://{nginx.plain_url}", "--insecure", "-n", "5"),
        "--insecure applies to https:// targets",
    )
    assert_usage_error(
        *run_cli("bench", nginx.url, "--cacert", str(pki.server_key), "-n", "5"),
        f"--cacert {pki.server_key} holds no certificate",
    )
    assert_usage_error(
        *run_cli(
            "bench", nginx.url, "--cert", str(pki.client_cert), "--key", str(pki.server_key), "--insecure", "-n", "5"
        ),
        "is not the private key of --cert",
    )
    assert nginx.log_lines(nginx.port) == []  # (the plain server logged the probe's ClientHello as a 400)
    code, _, stderr = run_cli("bench", nginx.url, "--insecure", "-n", "5", "-q")
    assert code == 0, stderr
    assert len(nginx.log_lines(nginx.port)) == 5


def test_the_pre_flight_handshake_is_made_once_outside_the_run(nginx: TlsNginx, pki: Pki) -> None:
    """run_bench makes no connection besides the run's; bench makes one before it (the probe).
    nginx numbers every connection its one worker accepts ($connection), requests or not."""
    spec = pounder.BenchSpec.from_options(nginx.url, cacert=pki.ca, requests=20, connections=2, threads=1, timeout=10)

    def serials() -> list[int]:
        return sorted({int(line.split()[2]) for line in nginx.log_lines(nginx.port)})

    nginx.clear_log()
    first = pounder.run_bench(spec)
    second = pounder.run_bench(spec)
    runs = serials()
    assert first.connections_opened == second.connections_opened == 2 and len(runs) == 4
    assert runs == list(range(runs[0], runs[0] + 4)), runs  # one after the other: nothing in between
    nginx.clear_log()
    result = pounder.bench(nginx.url, cacert=pki.ca, requests=20, connections=2, threads=1, timeout=10)
    assert result.connections_opened == result.tls.handshakes == 2  # type: ignore[union-attr]
    assert serials() == [runs[-1] + 2, runs[-1] + 3]  # runs[-1] + 1: the probe's, which made no request


def test_a_self_signed_certificate_given_with_cacert(pki: Pki, tmp_path: Path) -> None:
    """openssl req -x509's certificate (CA:TRUE) given as --cacert is trusted as it is, as curl
    does; its name is still checked."""
    cert, key = self_signed(tmp_path)
    with TlsNginx(tmp_path / "nginx", dataclasses.replace(pki, server_cert=cert, server_key=key)) as srv:
        code, _, stderr = run_cli("bench", srv.url, "--cacert", str(cert), "-n", "10", "-c", "2", "-q")
        assert code == 0, stderr
        assert len(srv.log_lines(srv.port)) == 10
        localhost = f"https://localhost:{srv.port}/"
        assert_usage_error(
            *run_cli("bench", localhost, "--cacert", str(cert), "-n", "5"),
            f"{localhost}: the certificate is for 127.0.0.1, not localhost (use a URL with one of its names, or "
            "give --insecure)",
        )
        assert_usage_error(
            *run_cli("bench", srv.url, "--cacert", str(pki.ca), "-n", "5"),
            "the server's certificate is self-signed, and not one in",
        )
        assert len(srv.log_lines(srv.port)) == 10


def test_a_v1_client_certificate_is_named(nginx: TlsNginx, pki: Pki, tmp_path: Path) -> None:
    cert, key = v1_certificate(tmp_path)
    assert_usage_error(
        *run_cli("bench", nginx.verify_url, "--cacert", str(pki.ca), "--cert", str(cert), "--key", str(key), "-n", "5"),
        f"--cert {cert} is an X.509 v1 certificate; a v3 one is needed",
    )


def test_one_handshake_per_request_and_resumption(nginx: TlsNginx, pki: Pki) -> None:
    for resume in (True, False):
        nginx.clear_log()
        result = pounder.bench(
            nginx.url,
            cacert=pki.ca,
            requests=60,
            connections=2,
            threads=1,
            keepalive=False,
            tls_resume=resume,
            timeout=10,
        )
        served = nginx.log_lines(nginx.port)
        assert result.requests.complete == len(served) == 60
        assert result.tls is not None and result.tls.handshakes == result.phases.tls.count == 60
        # what nginx saw resumed is what pounder counted
        assert result.tls.resumed == sum(line.split()[1] == "r" for line in served)
        assert (result.tls.resumed > 0) == resume, result.tls


def test_client_certificate(nginx: TlsNginx, pki: Pki) -> None:
    nginx.clear_log()
    result = pounder.bench(
        nginx.verify_url,
        cacert=pki.ca,
        cert=pki.client_cert,
        key=pki.client_key,
        requests=20,
        connections=2,
        timeout=10,
    )
    assert result.requests.complete == 20 and result.status == {"200": 20}
    # nginx checks the client certificate after the handshake: without one, it answers 400
    result = pounder.bench(nginx.verify_url, cacert=pki.ca, requests=5, connections=1, timeout=10)
    assert result.status == {"400": 5}
    assert [line.split()[0] for line in nginx.log_lines(nginx.verify_port)] == ["200"] * 20 + ["400"] * 5


APACHE_SSL = """\
LoadModule ssl_module {modules}/mod_ssl.so
LoadModule socache_shmcb_module {modules}/mod_socache_shmcb.so
SSLSessionCache shmcb:{root}/ssl_scache(512000)
LogFormat "%>s %{{SSL_SESSION_RESUMED}}x" tls
Listen 127.0.0.1:{port}
<VirtualHost 127.0.0.1:{port}>
    SSLEngine on
    SSLCertificateFile {cert}
    SSLCertificateKeyFile {key}
    CustomLog {root}/tls_access.log tls
</VirtualHost>
Listen 127.0.0.1:{verify_port}
<VirtualHost 127.0.0.1:{verify_port}>
    SSLEngine on
    SSLCertificateFile {cert}
    SSLCertificateKeyFile {key}
    SSLCACertificateFile {ca}
    SSLVerifyClient require
    CustomLog {root}/tls_access.log tls
</VirtualHost>
"""


@pytest.mark.skipif(apache_missing(perl=False) is not None, reason=str(apache_missing(perl=False)))
def test_apache_mod_ssl(pki: Pki) -> None:
    root = Path(tempfile.mkdtemp(prefix="pounder-test-tls-"))  # where Apache's children (www-data) reach
    try:
        root.chmod(0o755)
        _apache_mod_ssl(pki, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _apache_mod_ssl(pki: Pki, root: Path) -> None:
    for path in (pki.server_cert, pki.server_key, pki.ca):
        shutil.copy(path, root / path.name)
    port, verify_port = free_port(), free_port()
    conf = APACHE_SSL.format(
        modules="/usr/lib/apache2/modules",
        root=root,
        port=port,
        verify_port=verify_port,
        cert=root / "server.pem",
        key=root / "server.key",
        ca=root / "ca.pem",
    )
    log = root / "tls_access.log"
    with ApacheServer(root / "w", extra_conf=conf, start_servers=2, max_request_workers=4, keepalive=True):
        url = f"https://localhost:{port}/"
        result = pounder.bench(url, cacert=pki.ca, requests=100, connections=2, timeout=10)
        assert result.requests.complete == 100 and result.tls is not None and result.tls.handshakes == 2
        assert len(log.read_text().splitlines()) == 100
        log.write_text("")
        result = pounder.bench(url, cacert=pki.ca, requests=40, connections=2, keepalive=False, timeout=10)
        served = log.read_text().splitlines()
        assert result.requests.complete == len(served) == result.tls.handshakes == 40  # type: ignore[union-attr]
        assert result.tls.resumed == sum(line.endswith(" Resumed") for line in served) > 0  # type: ignore[union-attr]
        log.write_text("")
        # mod_ssl refuses a missing client certificate in the handshake: one line, nothing sent
        assert_usage_error(
            *run_cli("bench", f"https://localhost:{verify_port}/", "--cacert", str(pki.ca), "-n", "5"),
            "client certificate",
            "(give --cert FILE and --key FILE)",
        )
        assert log.read_text() == ""
        code, _, stderr = run_cli(
            "bench",
            f"https://localhost:{verify_port}/",
            "--cacert",
            str(pki.ca),
            "-n",
            "5",
            "--cert",
            str(pki.client_cert),
            "--key",
            str(pki.client_key),
            "-q",
        )
        assert code == 0, stderr
        served = log.read_text().splitlines()
        assert len(served) == 5 and all(line.startswith("200 ") for line in served)
