"""Experiment files with https:// variant URLs: the ``[tls]`` table read and checked with the file's
line, its paths relative to the file, pounder run's flags over it, and its record in experiment.json
(issue 39 item 11)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pounder.experiment import ExperimentError, TlsSpec, load_experiment
from pounder.load import LoadOptions
from support.schemas import validate
from support.tls import make_pki

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")

FILE = """\
title = "t"

[server]
adapter = "url"

[[load]]
requests = 10

[[variant]]
label = "a"
url = "{url}"

[[variant]]
label = "b"
url = "{url}b"
{tls}"""


def _write(tmp_path: Path, tls: str, url: str = "https://127.0.0.1:8443/") -> Path:
    path = tmp_path / "exp" / "e.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(FILE.format(url=url, tls=tls))
    return path


def test_the_tls_table(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "exp" / "pki")
    exp = load_experiment(_write(tmp_path, '\n[tls]\ncacert = "pki/ca.pem"\ncert = "pki/client.pem"\n'
                                           'key = "pki/client.key"\nresume = false\n'))  # fmt: skip
    assert exp.tls == TlsSpec(cacert=pki.ca, cert=pki.client_cert, key=pki.client_key, resume=False)
    document = {"schema": "pounder/experiment/1", "tool_version": "0", "started_at": "2026-11-28T07:00:00Z",
                "quick": False, "experiment": exp.to_dict()}  # fmt: skip
    validate(document, "experiment")
    assert document["experiment"]["tls"]["cacert"] == str(pki.ca)
    # the command line's flags, each over the file's key
    assert exp.tls.over(LoadOptions(insecure=True)) == TlsSpec(insecure=True, cert=pki.client_cert,
                                                               key=pki.client_key, resume=False)  # fmt: skip
    assert exp.tls.over(LoadOptions()) == exp.tls
    assert load_experiment(_write(tmp_path, "")).tls == TlsSpec()


@pytest.mark.parametrize(("tls", "url", "message"), [
    ("\n[tls]\ninsecure = true\n", "http://127.0.0.1:8080/",
     "e.toml:17: tls: applies to https:// variant URLs (adapter 'url'), and no variant's url is https://"),
    ('\n[tls]\ninsecure = true\ncacert = "ca.pem"\n', None,
     "e.toml:18: tls.insecure: insecure accepts any certificate: it cannot go with cacert"),
    ('\n[tls]\ncert = "ca.pem"\n', None, "e.toml:18: tls.cert: cert and key go together"),
    ('\n[tls]\ncacert = "missing.pem"\n', None, "e.toml:18: tls.cacert: "),
    ("\n[tls]\nverify = false\n", None, "e.toml:18: tls.verify: "),
    ("\n[tls]\ninsecure = 1\n", None, "e.toml:18: tls.insecure: "),
    ('\n[tls]\ncacert = "e.toml"\n', None, "e.toml:17: tls: cacert "),
])  # fmt: skip
def test_tls_mistakes_name_the_line(tmp_path: Path, tls: str, url: str | None, message: str) -> None:
    make_pki(tmp_path / "exp")
    with pytest.raises(ExperimentError) as caught:
        load_experiment(_write(tmp_path, tls, url or "https://127.0.0.1:8443/"))
    assert message in str(caught.value) and "\n" not in str(caught.value)
