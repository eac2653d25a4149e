"""HTTPS options without a server: URLs, the engine spec, the files checked up front, and results
with and without the TLS fields."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

import pounder.load
from pounder import BenchSpec, UsageError
from pounder.results import BenchResult
from pounder.traffic import parse_url
from support.tls import Pki, make_pki, openssl

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_https_urls() -> None:
    url = parse_url("https://LocalHost/p?q=1")
    assert (url.tls, url.port, url.host_header, url.request_target) == (True, 443, "localhost", "/p?q=1")
    assert not parse_url("http://127.0.0.1/").tls
    spec = BenchSpec.from_options("https://127.0.0.1:8443/", requests=1, insecure=True)
    engine = spec.engine_spec()
    assert engine["targets"][0]["tls_name"] == "127.0.0.1"
    assert engine["tls"] == {"insecure": True, "ca_pem": None, "cert_pem": None, "key_pem": None, "resume": True}
    assert spec.run_options().tls == pounder.results.TlsInfo(insecure=True, cacert=None, cert=None, resume=True)
    assert BenchSpec.from_options("http://127.0.0.1/", requests=1).run_options().tls is None
    mixed = BenchSpec.from_options("https://[::1]:8443/", requests=1, tls_resume=False)
    assert mixed.engine_spec()["targets"][0]["tls_name"] == "::1"
    assert mixed.engine_spec()["tls"]["resume"] is False  # type: ignore[index]
    assert BenchSpec.from_options("http://127.0.0.1/", requests=1).engine_spec()["tls"] is None


def test_files_are_read_and_checked(pki: Pki, tmp_path: Path) -> None:
    spec = BenchSpec.from_options(
        "https://localhost:8443/", requests=1, cacert=pki.ca, cert=pki.client_cert, key=pki.client_key
    )
    tls = spec.engine_spec()["tls"]
    assert tls is not None and tls["ca_pem"] == pki.ca.read_bytes() and tls["key_pem"] == pki.client_key.read_bytes()

    def refused(message: str, **options: object) -> None:
        with pytest.raises(UsageError, match=message):
            BenchSpec.from_options("https://localhost:8443/", requests=1, **options)

    refused("--insecure accepts any certificate: it cannot go with --cacert", insecure=True, cacert=pki.ca)
    refused("--cert and --key go together", key=pki.client_key)
    refused("--cacert not found: ", cacert=f"{pki.ca}x")
    refused("is not a PEM file", cacert=pki.ca.parent / "ca.srl")
    refused("is not the private key of --cert", cert=pki.client_cert, key=pki.server_key)
    encrypted = tmp_path / "encrypted.key"
    openssl("pkey", "-in", str(pki.client_key), "-out", str(encrypted), "-aes256", "-passout", "pass:secret")
    refused("is encrypted", cert=pki.client_cert, key=encrypted)
    big = tmp_path / "big.pem"
    big.write_bytes(b"-----BEGIN CERTIFICATE-----\n" + b"A" * (1 << 20))
    refused("larger than the limit", cacert=big)
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tmp_path / "s.sock"))
        with pytest.raises(UsageError, match="--unix-socket carries plain HTTP"):
            BenchSpec.from_options("https://localhost/", requests=1, unix_socket=str(tmp_path / "s.sock"))
    with pytest.raises(UsageError, match="--cert applies to https:// targets"):
        BenchSpec.from_options("http://localhost/", requests=1, cert=pki.client_cert, key=pki.client_key)


def test_results_with_and_without_tls() -> None:
    """A result written before HTTPS (no tls phase, counts or error categories) reads as none."""
    stored = Path(__file__).parents[1] / "data" / "tune-phpfpm-leak" / "points" / "children-2-t3.json"
    data = json.loads(stored.read_text())["bench"]
    assert "tls" not in data["phases"] and "tls_certificate" not in data["errors"]
    old = BenchResult.from_dict(data)
    assert old.tls is None and old.errors.tls_certificate == old.errors.tls_handshake == 0
    assert old.phases.tls.count == 0 and old.options.tls is None
    assert "tls" not in old.to_dict() and "tls" not in old.to_dict()["options"]
    data = {**data, "tls": {"handshakes": 3, "resumed": 1}}
    new = BenchResult.from_dict(data)
    assert new.tls is not None and (new.tls.handshakes, new.tls.resumed) == (3, 1)
    assert BenchResult.from_json(new.to_json()).tls == new.tls
    settings = {"insecure": False, "cacert": "ca.pem", "cert": None, "resume": False}
    data["options"] = {**data["options"], "tls": settings}
    read = BenchResult.from_dict(data)
    assert read.options.tls is not None and (read.options.tls.cacert, read.options.tls.resume) == ("ca.pem", False)
    assert BenchResult.from_json(read.to_json()).to_dict()["options"]["tls"] == settings


def test_a_bad_host_name_is_told_without_python_words() -> None:
    """Not Python's "encoding with 'idna' codec failed (UnicodeError: ...)" (issue 39 item 21)."""
    for host in ("a..b", "a" * 70 + ".test"):
        with pytest.raises(UsageError) as caught:
            BenchSpec.from_options(f"http://{host}/", requests=1)
        assert str(caught.value) == (f"cannot resolve host {host!r}: not a valid host name (a label between dots is "
                                     "empty, or longer than 63 characters)")  # fmt: skip
