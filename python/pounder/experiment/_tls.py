"""HTTPS in experiment files: the ``[tls]`` table, which holds ``pounder bench``'s TLS options for
the https:// variant URLs (adapter ``url``)::

    [tls]
    cacert = "ca.pem"      # --cacert, relative to the experiment file
    insecure = false       # --insecure
    cert = "client.pem"    # --cert and --key: a client certificate
    key = "client.key"
    resume = true          # false: --no-tls-resume

``pounder run`` takes the same flags, each given one over the file's key (:meth:`TlsSpec.over`).
The files are read and checked, and one handshake is made to each https:// address, before
anything is written (:func:`pounder.experiment._run.run_experiment`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pounder._errors import public
from pounder.experiment._reader import Reader
from pounder.load import LoadOptions

TLS_KEYS = {"insecure": "--insecure", "cacert": "--cacert", "cert": "--cert", "key": "--key",
            "resume": "--no-tls-resume"}  # fmt: skip
"""Each key of ``[tls]`` and the flag of pounder bench it stands for."""


@public
@dataclass(frozen=True)
class TlsSpec:
    """``[tls]``: how the https:// variant URLs are trusted (paths resolved against the file)."""

    insecure: bool = False
    cacert: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    resume: bool = True

    def options(self) -> dict[str, Any]:
        """As :class:`~pounder.LoadOptions` fields."""
        return {"insecure": self.insecure, "cacert": self.cacert, "cert": self.cert, "key": self.key,
                "tls_resume": self.resume}  # fmt: skip

    def with_load(self, load: LoadOptions) -> LoadOptions:
        return replace(load, **self.options())

    def over(self, given: LoadOptions) -> TlsSpec:
        """These settings with the TLS options of ``given`` (the command line's) over them, each
        given one replacing the file's key; ``--insecure`` drops the file's ``cacert`` (they cannot
        go together) and ``--cacert`` the file's ``insecure``."""
        spec = self
        if given.insecure:
            spec = replace(spec, insecure=True, cacert=None)
        if given.cacert is not None:
            spec = replace(spec, cacert=Path(os.fspath(given.cacert)), insecure=False)
        if given.cert is not None or given.key is not None:
            spec = replace(spec, cert=_path(given.cert), key=_path(given.key))
        if not given.tls_resume:
            spec = replace(spec, resume=False)
        return spec

    def to_dict(self) -> dict[str, Any]:
        return {"insecure": self.insecure, "cacert": _text(self.cacert), "cert": _text(self.cert),
                "key": _text(self.key), "resume": self.resume}  # fmt: skip


def _path(value: str | os.PathLike[str] | None) -> Path | None:
    return None if value is None else Path(os.fspath(value))


def _text(path: Path | None) -> str | None:
    return None if path is None else str(path)


def read_tls(r: Reader, data: dict[str, Any], https: bool) -> TlsSpec:
    """The ``[tls]`` table (none: the defaults); refused when no variant URL is https://, or when
    its keys cannot go together (as pounder bench refuses its flags)."""
    table = r.get(data, "", "tls", dict)
    if table is None:
        return TlsSpec()
    r.table(table, "tls", set(TLS_KEYS))
    if not https:
        raise r.fail("tls", "applies to https:// variant URLs (adapter 'url'), and no variant's url is https://")
    spec = TlsSpec(
        insecure=r.get(table, "tls", "insecure", bool, default=False),
        cacert=r.path_of(table, "tls", "cacert", "file"),
        cert=r.path_of(table, "tls", "cert", "file"),
        key=r.path_of(table, "tls", "key", "file"),
        resume=r.get(table, "tls", "resume", bool, default=True),
    )
    if spec.insecure and spec.cacert is not None:
        raise r.fail("tls.insecure", "insecure accepts any certificate: it cannot go with cacert")
    if (spec.cert is None) != (spec.key is None):
        raise r.fail("tls.cert" if spec.key is None else "tls.key",
                     "cert and key go together: the client certificate and its private key")  # fmt: skip
    return spec


def in_file_words(message: str) -> str:
    """pounder bench's message about its TLS flags in the file's words: ``--cacert F`` as ``cacert F``."""
    for key, flag in TLS_KEYS.items():
        message = message.replace(f"{flag} ", f"{key} ") if key != "resume" else message
    return message
