"""HTTPS options (``--insecure``, ``--cacert``, ``--cert``/``--key``, ``--no-tls-resume``): their
files read and checked up front (:func:`read_tls`, PEM parsed by Python's ``ssl``, the key
matched to its certificate), and the pre-flight handshake (:func:`check_handshakes`) that turns a
certificate the engine would refuse into one line before any request is sent.

The engine gets the PEM contents, not the paths, so that agents on other machines get them too.
"""

from __future__ import annotations

import os
import re
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pounder._errors import UsageError, check_flag, check_path
from pounder._files import SMALL_LIMIT, read_input
from pounder.results import TlsInfo

if TYPE_CHECKING:
    from types import ModuleType

    from pounder._engine import EngineTls
    from pounder.load._options import LoadOptions

TLS_FILE_LIMIT = SMALL_LIMIT
"""The largest --cacert, --cert or --key file read (1 MiB: a bundle of a few thousand roots)."""
PROBE_TIMEOUT_S = 10.0
"""The pre-flight handshake's longest wait (or the request timeout, when shorter)."""
FIELD_FLAGS = {"tls.ca_pem": "--cacert", "tls.cert_pem": "--cert", "tls.key_pem": "--key"}


@dataclass(frozen=True)
class TlsSettings:
    """The TLS options as the engine gets them, with the paths they were read from (for messages)."""

    insecure: bool = False
    ca_pem: bytes | None = None
    cert_pem: bytes | None = None
    key_pem: bytes | None = None
    resume: bool = True
    paths: tuple[tuple[str, str], ...] = ()
    """``(flag, path)`` of each file read."""

    def info(self) -> TlsInfo:
        """What the result records of these settings (``options.tls``): the files as given."""
        paths = dict(self.paths)
        return TlsInfo(insecure=self.insecure, cacert=paths.get("--cacert"), cert=paths.get("--cert"),
                       resume=self.resume)  # fmt: skip

    def engine_dict(self) -> EngineTls:
        return {"insecure": self.insecure, "ca_pem": self.ca_pem, "cert_pem": self.cert_pem,
                "key_pem": self.key_pem, "resume": self.resume}  # fmt: skip

    def flag_of(self, engine_message: str) -> str:
        """The engine's message about a field (``tls.key_pem: ...``) in the user's words: the flag
        and its file (``--cert FILE is an X.509 v1 certificate; ...``)."""
        field, _, why = engine_message.partition(": ")
        flag = FIELD_FLAGS.get(field)
        path = dict(self.paths).get(flag or "")
        if not flag or not path:
            return engine_message
        return f"{flag} {path} {why}" if why.startswith(("is ", "does ")) else f"{flag} {path}: {why}"

    @property
    def cacert_given(self) -> bool:
        return self.ca_pem is not None

    def in_words(self, reason: str) -> str:
        """The engine's reason with the files it speaks of named (``the --cacert file``: its path)."""
        path = dict(self.paths).get("--cacert")
        return reason.replace("the --cacert file", path) if path else reason


def _given_flags(given: LoadOptions) -> list[str]:
    flags = [("--insecure", given.insecure), ("--cacert", given.cacert is not None),
             ("--cert", given.cert is not None), ("--key", given.key is not None),
             ("--no-tls-resume", not given.tls_resume)]  # fmt: skip
    return [flag for flag, used in flags if used]


def check_tls_types(given: LoadOptions) -> None:
    check_flag(given.insecure, "insecure")
    check_flag(given.tls_resume, "tls_resume")
    for name in ("cacert", "cert", "key"):
        check_path(getattr(given, name), name, optional=True)


def read_tls(given: LoadOptions, https: bool) -> TlsSettings | None:
    """The TLS settings of a run whose targets include ``https`` ones (else None, and a TLS option
    given is an error): every file read and checked now, :class:`~pounder.UsageError` naming it."""
    used = _given_flags(given)
    if not https:
        if used:
            raise UsageError(f"{used[0]} applies to https:// targets, and no target is https://")
        return None
    if given.insecure and given.cacert is not None:
        raise UsageError("--insecure accepts any certificate: it cannot go with --cacert")
    if (given.cert is None) != (given.key is None):
        raise UsageError("--cert and --key go together: the client certificate and its private key")
    paths: list[tuple[str, str]] = []
    ca = cert = key = None
    if given.cacert is not None:
        ca = _read("--cacert", given.cacert, paths)
        _check_ca(ca, paths[-1][1])
    if given.cert is not None and given.key is not None:
        cert = _read("--cert", given.cert, paths)
        key = _read("--key", given.key, paths)
        _check_pair(cert, key, dict(paths))
    return TlsSettings(
        insecure=given.insecure, ca_pem=ca, cert_pem=cert, key_pem=key, resume=given.tls_resume, paths=tuple(paths)
    )


def _read(flag: str, path: str | os.PathLike[str], paths: list[tuple[str, str]]) -> bytes:
    text = os.fspath(path)
    data = read_input(text, flag, limit=TLS_FILE_LIMIT)
    if len(data) > TLS_FILE_LIMIT:
        raise UsageError(f"{flag} {text} is larger than the limit of 1 MiB")
    if b"-----BEGIN " not in data:
        raise UsageError(f"{flag} {text} is not a PEM file (no '-----BEGIN' line)")
    paths.append((flag, text))
    return data


_UNREADABLE = "(a block cut short, or not base64 of DER)"


def _check_ca(pem: bytes, path: str) -> None:
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise UsageError(f"--cacert {path} holds no certificate (a PEM 'BEGIN CERTIFICATE' block)")
    if not _reads_as_certificates(pem):
        raise UsageError(f"--cacert {path} is not a PEM certificate bundle: a certificate block does not read "
                         f"as one {_UNREADABLE}")  # fmt: skip


def _reads_as_certificates(pem: bytes) -> bool:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cadata=pem.decode("ascii", "replace"))
    except (ssl.SSLError, ValueError):
        return False
    return True


def _check_pair(cert: bytes, key: bytes, paths: dict[str, str]) -> None:
    cert_path, key_path = paths["--cert"], paths["--key"]
    if b"-----BEGIN CERTIFICATE-----" not in cert:
        raise UsageError(f"--cert {cert_path} holds no certificate (a PEM 'BEGIN CERTIFICATE' block)")
    if b"ENCRYPTED" in key:
        raise UsageError(f"--key {key_path} is encrypted: give it decrypted (openssl pkey -in KEY -out PLAIN)")
    if b"PRIVATE KEY-----" not in key:
        raise UsageError(f"--key {key_path} holds no private key (a PEM 'BEGIN ... PRIVATE KEY' block)")
    if not _reads_as_certificates(cert):
        raise UsageError(f"--cert {cert_path}: its certificate block does not read as one {_UNREADABLE}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_cert_chain(cert_path, key_path, password=b"")
    except ssl.SSLError as error:
        if getattr(error, "reason", None) in ("KEY_VALUES_MISMATCH", "NO_CERTIFICATE_ASSIGNED"):
            raise UsageError(f"--key {key_path} is not the private key of --cert {cert_path}") from None
        raise UsageError(f"--key {key_path}: its private key block does not read as one {_UNREADABLE}") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"--key {key_path} does not go with --cert {cert_path}: {_ssl_reason(error)}") from None


def _ssl_reason(error: Exception) -> str:
    """An error of Python's ssl module in words: no ``[LIB: REASON]`` prefix, no ``(_ssl.c:N)``."""
    reason = getattr(error, "reason", None)
    if reason:
        return str(reason).lower().replace("_", " ")
    if isinstance(error, OSError) and error.strerror and not isinstance(error, ssl.SSLError):
        return error.strerror.lower()
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    text = re.sub(r"^\[[^]]*\]\s*", "", re.sub(r"\s*\(_ssl\.c:\d+\)", "", text))
    return text.strip() or "not readable"


def _hint(reason: str, settings: TlsSettings) -> str:
    """What to do about a refused handshake, never advising a flag the user already gave."""
    hint = _advice(reason, settings)
    if settings.insecure and "--insecure" in hint:
        return "check the server's TLS setup"  # --insecure accepts any certificate: not the cause
    return hint


def _advice(reason: str, settings: TlsSettings) -> str:
    if " RSA key: " in reason or " EC key on the curve " in reason:
        return "give the server a certificate with an RSA key of 2048 bits or more, or an EC P-256 key"
    if " is self-signed, and not one in " in reason or "(CA:TRUE), not one in " in reason:
        return "give --cacert the server's certificate itself, or --insecure instead of --cacert"
    if " is self-signed" in reason:
        return "give --cacert the server's certificate itself, or --insecure"
    if "not signed by a CA in " in reason:
        return "give --cacert the CA that signed it, or --insecure instead of --cacert"
    if "a CA this system trusts" in reason or "(CA:TRUE)" in reason:
        return "give --cacert FILE or --insecure"
    if " expired on " in reason or " has expired" in reason or " not valid until " in reason:
        return "renew the server's certificate, or give --insecure"
    if reason.startswith("the certificate is "):
        return "use a URL with one of its names, or give --insecure"
    if reason.startswith("the server's certificate ") and settings.cacert_given:
        return "check that --cacert holds the CA that signed it, or give --insecure instead of --cacert"
    if reason.startswith("the server's certificate "):
        return "give --cacert FILE or --insecure"
    if "client certificate" in reason:
        return "give --cert FILE and --key FILE" if settings.cert_pem is None else "check --cert and --key"
    if reason.startswith("no TLS server there"):
        return "use http:// for a plain HTTP port"
    return "check the server's TLS setup"


def check_handshakes(
    engine: ModuleType, targets: list[tuple[str, str, str]], settings: TlsSettings, timeout_s: float
) -> None:
    """One handshake to each distinct ``(url, tcp, tls_name)`` address, no request: a
    :class:`~pounder.UsageError` ``URL: reason (what to do)`` when one fails. An address that
    accepts no connection is left to the run, which counts it as for plain HTTP."""
    done: set[tuple[str, str]] = set()
    for url, tcp, name in targets:
        if (tcp, name) in done:
            continue
        done.add((tcp, name))
        try:
            reason = engine.tls_probe(tcp, name, settings.engine_dict(), min(timeout_s, PROBE_TIMEOUT_S))
        except ValueError as error:
            raise UsageError(settings.flag_of(str(error))) from None
        if reason is not None:
            raise UsageError(f"{url}: {settings.in_words(reason)} ({_hint(reason, settings)})")
