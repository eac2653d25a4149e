"""HTTPS refused for the real reason, and a pre-flight handshake the server does not count (issue
39 items 8, 20, 21): certificates made here with the ``openssl`` CLI, served by a real nginx or by
Python's ``ssl`` (which serves an RSA key of 1024 bits, which nginx refuses to load). And
``pounder run`` on https:// variant URLs (item 11): the ``[tls]`` table and the command line's
flags, every refusal before anything is printed or written."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.schemas import validate

from support.cliutil import assert_usage_error, run_cli
from support.tls import Pki, PyTlsServer, TlsNginx, leaf_certificate, make_pki

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


def _advises(stderr: str, flag: str) -> bool:
    """Whether the message's advice (its last parenthesis) names ``flag``."""
    return flag in stderr.rstrip().rpartition("(")[2]


def test_a_small_rsa_key_is_named_and_insecure_is_not_advised(tmp_path: Path) -> None:
    cert, key = leaf_certificate(tmp_path, "rsa1024", "rsa:1024")
    with PyTlsServer(cert, key) as srv:
        for flags in (["--insecure"], [], ["--cacert", str(cert)]):
            code, stdout, stderr = run_cli("bench", srv.url, *flags, "-n", "3")
            assert_usage_error(code, stdout, stderr,
                               f"{srv.url}: the server's certificate has a 1024-bit RSA key: pounder's TLS engine "
                               "(rustls) accepts RSA keys of 2048 to 8192 bits only, even with --insecure (give the "
                               "server a certificate with an RSA key of 2048 bits or more, or an EC P-256 key)")
            assert not _advises(stderr, "--insecure") and not _advises(stderr, "--cacert"), stderr
        assert all(requests == 0 for requests, _ in srv.ended())  # nothing was sent


def test_a_self_signed_ec_certificate_is_called_self_signed(pki: Pki, tmp_path: Path) -> None:
    cert, key = leaf_certificate(tmp_path, "ec", "ec")  # CA:FALSE, issued by itself
    with TlsNginx(tmp_path / "nginx", dataclasses.replace(pki, server_cert=cert, server_key=key)) as srv:
        assert_usage_error(*run_cli("bench", srv.url, "-n", "3"),
                           f"{srv.url}: the server's certificate is self-signed: no CA vouches for it (give --cacert "
                           "the server's certificate itself, or --insecure)")  # fmt: skip
        assert_usage_error(*run_cli("bench", srv.url, "--cacert", str(pki.ca), "-n", "3"),
                           f"{srv.url}: the server's certificate is self-signed, and not one in {pki.ca} (give "
                           "--cacert the server's certificate itself, or --insecure instead of --cacert)")  # fmt: skip
        for flags in (["--cacert", str(cert)], ["--insecure"]):
            code, _, stderr = run_cli("bench", srv.url, *flags, "-n", "3", "-q")
            assert code == 0, stderr
        assert len(srv.log_lines(srv.port)) == 6


def test_no_advice_names_a_flag_already_given(nginx: TlsNginx, pki: Pki) -> None:
    """Every refusal of a handshake with --insecure given: the advice never says --insecure."""
    code, stdout, stderr = run_cli("bench", f"https://{nginx.plain_url}", "--insecure", "-n", "3")
    assert_usage_error(code, stdout, stderr, "no TLS server there")
    assert not _advises(stderr, "--insecure"), stderr
    code, stdout, stderr = run_cli("bench", nginx.url, "--cacert", str(pki.other_ca), "-n", "3")
    assert_usage_error(code, stdout, stderr, "(give --cacert the CA that signed it, or --insecure instead of --cacert)")


def test_the_probe_closes_cleanly_and_is_no_request(nginx: TlsNginx, pki: Pki, tmp_path: Path) -> None:
    """The pre-flight handshake ends as a client that is done ends TLS (close_notify, not a bare
    TCP close that servers log as an error): Python's ssl sees it; nginx logs exactly the
    requests pounder counted."""
    cert, key = leaf_certificate(tmp_path, "ok", "ec")
    with PyTlsServer(cert, key) as srv:
        out = tmp_path / "r.json"
        code, _, stderr = run_cli("bench", srv.url, "--cacert", str(cert), "-n", "6", "-c", "2", "--json", str(out))
        assert code == 0, stderr
        ended = srv.ended()
        assert sum(requests for requests, _ in ended) == json.loads(out.read_text())["requests"]["complete"] == 6
        probes = [how for requests, how in ended if requests == 0]
        assert probes == ["close_notify"], ended
    for url, flags in ((nginx.url, ["--cacert", str(pki.ca)]),
                       (nginx.verify_url, ["--cacert", str(pki.ca), "--cert", str(pki.client_cert),
                                           "--key", str(pki.client_key)])):  # fmt: skip
        nginx.clear_log()
        code, _, stderr = run_cli("bench", url, *flags, "-n", "7", "-c", "2", "--json", str(out))
        assert code == 0, stderr
        port = int(url.rsplit(":", 1)[1].strip("/"))
        assert len(nginx.log_lines(port)) == json.loads(out.read_text())["requests"]["complete"] == 7


def test_compare_probes_an_address_once(tmp_path: Path) -> None:
    """Two variants on one https:// address: one pre-flight handshake, not one per variant
    (issue 39, 11, 20)."""
    cert, key = leaf_certificate(tmp_path, "once", "ec")
    with PyTlsServer(cert, key) as srv:
        code, _, stderr = run_cli("compare", srv.url + "a", srv.url + "b", "--cacert", str(cert),
                                  "-n", "5", "-c", "1", "--trials", "3")  # fmt: skip
        assert code == 0, stderr
        probes = [how for requests, how in srv.ended() if requests == 0]
        assert probes == ["close_notify"], srv.ended()


def test_tls_file_errors_carry_no_internal_details(tmp_path: Path) -> None:
    """What Python's ssl says of a bad file, without its C source's file and line."""
    cert, key = leaf_certificate(tmp_path, "c", "ec")
    rsa_cert, rsa_key = leaf_certificate(tmp_path, "r", "rsa:2048")
    cut = tmp_path / "cut.pem"
    cut.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    bad_key = tmp_path / "bad.key"
    bad_key.write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    url = "https://127.0.0.1:9/"
    cases = [
        (["--cacert", str(cut)], f"--cacert {cut} is not a PEM certificate bundle: a certificate block does not "
                                 "read as one (a block cut short, or not base64 of DER)"),
        (["--cert", str(cut), "--key", str(key)], f"--cert {cut}: its certificate block does not read as one"),
        (["--cert", str(cert), "--key", str(bad_key)], f"--key {bad_key}: its private key block does not read as one"),
        (["--cert", str(cert), "--key", str(rsa_key)], f"--key {rsa_key} is not the private key of --cert {cert}"),
        (["--cert", str(rsa_cert), "--key", str(key)], f"--key {key} is not the private key of --cert {rsa_cert}"),
    ]
    for flags, message in cases:
        code, stdout, stderr = run_cli("bench", url, *flags, "-n", "1")
        assert_usage_error(code, stdout, stderr, message)
        assert "_ssl.c" not in stderr and "[SSL" not in stderr and "[X509" not in stderr, stderr


EXPERIMENT = """\
title = "https"
[server]
adapter = "url"
[[load]]
connections = 1
requests = 10
trials = 3
{load}
[[variant]]
label = "a"
url = "{url}"
[[variant]]
label = "b"
url = "{url}b"
{tls}
"""


def test_run_loads_https_and_refuses_before_writing(nginx: TlsNginx, pki: Pki, tmp_path: Path) -> None:
    def experiment(name: str, tls: str = "", load: str = "") -> Path:
        path = tmp_path / f"{name}.toml"
        path.write_text(EXPERIMENT.format(url=nginx.url, tls=tls, load=load))
        return path

    plain = experiment("plain")
    nginx.clear_log()
    for argv, message in (
        ([str(plain)], f"{nginx.url}: the server's certificate is not signed by a CA this system trusts"),
        ([str(experiment("uring", load='io = "uring"')), "--cacert", str(pki.ca)], "load 1 (NC 1, NR 10): "),
        ([str(experiment("other", f'[tls]\ncacert = "{pki.other_ca}"'))], f"not signed by a CA in {pki.other_ca}"),
    ):
        results = tmp_path / "refused"
        code, stdout, stderr = run_cli("run", *argv, "--results", str(results), "--quick")
        assert_usage_error(code, stdout, stderr, message)  # one line, nothing on stdout
        assert not results.exists()
    for name, argv in (("flag", [str(plain), "--cacert", str(pki.ca)]),
                       ("file", [str(experiment("file", f'[tls]\ncacert = "{pki.ca}"'))])):  # fmt: skip
        results = tmp_path / name
        code, _, stderr = run_cli("run", *argv, "--results", str(results), "--quick")
        assert code == 0, stderr
        stored = json.loads((results / "experiment.json").read_text())
        validate(stored, "experiment")
        assert stored["experiment"]["tls"]["cacert"] == str(pki.ca)
    # 2 variants x (1 warm-up + 3 trials) x 10 requests, twice; the refused runs sent nothing
    assert len(nginx.log_lines(nginx.port)) == 160
