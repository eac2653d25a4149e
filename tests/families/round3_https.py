"""TLS reasons, HTTPS in experiments, a probe the server does not log.
(issue 39 items 8, 11, 20, 21.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``.

The servers are servers.py's ``tls`` mode (Python's ssl, which loads an RSA key of 1024 bits),
started by each case's set-up with certificates made once per pass with the ``openssl`` CLI (an
expired one with Python's ``cryptography``). The pre-flight handshake is a connection that asks
nothing: a refusal after it is exit 2 with the server's connection seen (``contact=True``) and no
request (:func:`no_request`)."""

from __future__ import annotations

import atexit
import datetime
import ipaddress
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import run as R
from harness import Case, Ctx, Result

P = "@POUNDER@"
_CERTS: dict[str, Path] = {}


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def _expired(directory: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "expired")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))
            .not_valid_after(datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))  # fmt: skip
    (directory / "expired.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "expired.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def certs() -> dict[str, Path]:
    """The certificates of every case, made once: ``NAME.pem`` and ``NAME.key`` for rsa1024,
    rsa2048 (openssl req -x509's usual one: CA:TRUE), ec (P-256, CA:FALSE), expired; ``ca`` a CA
    that signed none of them; ``bad`` a certificate block that is not a certificate."""
    if _CERTS:
        return _CERTS
    directory = Path(tempfile.mkdtemp(prefix="pounder-families-certs-"))
    atexit.register(shutil.rmtree, directory, True)
    for name, newkey, extra in (("rsa1024", "rsa:1024", "CA:FALSE"), ("rsa2048", "rsa:2048", "CA:TRUE"),
                                ("ec", "ec", "CA:FALSE"), ("ca", "ec", "CA:TRUE")):  # fmt: skip
        curve = ["-pkeyopt", "ec_paramgen_curve:P-256"] if newkey == "ec" else []
        _openssl("req", "-x509", "-newkey", newkey, *curve, "-nodes", "-keyout", str(directory / f"{name}.key"),
                 "-out", str(directory / f"{name}.pem"), "-days", "2", "-subj", f"/CN={name}",
                 "-addext", "subjectAltName=IP:127.0.0.1", "-addext", f"basicConstraints=critical,{extra}")  # fmt: skip
    _expired(directory)
    (directory / "bad.pem").write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    _CERTS.update({path.name: path for path in directory.iterdir()})
    return _CERTS


def tls_server(name: str) -> Callable[[Ctx], None]:
    """Set-up: the certificates copied into the case's directory, and servers.py's tls mode with
    ``name``'s certificate as the main server (@URL@ is then its https:// URL)."""

    def setup(ctx: Ctx) -> None:
        for file_name, path in certs().items():
            ctx.write(file_name, path.read_bytes())
        srv = ctx.add_server("main", "tls", extra=["--cert", str(ctx.path(f"{name}.pem")),
                                                   "--key", str(ctx.path(f"{name}.key"))])  # fmt: skip
        ctx.vars["HTTPS"] = f"https://127.0.0.1:{srv.port}/"

    return setup


def no_request(ctx: Ctx, res: Result) -> Iterable[str]:
    counts = ctx.server().counts()
    if counts.get("requests", 0) != 0:
        yield f"the server read {counts['requests']} request(s) although the run was refused"


def not_advised(*flags: str) -> R.Check:
    """The advice (the error line's last parenthesis) names none of ``flags`` (given already)."""

    def not_advised(ctx: Ctx, res: Result) -> Iterable[str]:
        advice = res.err.strip().rpartition("(")[2]
        for flag in flags:
            if flag in advice:
                yield f"the advice names {flag}, which was given: {res.err.strip()}"

    return not_advised


def no_internals(ctx: Ctx, res: Result) -> Iterable[str]:
    for word in ("_ssl.c", "[SSL", "[X509", "os error", "Error(", "Traceback"):
        if word in res.err:
            yield f"an internal detail ({word}) in: {res.err.strip()}"


def served(requests: int, probes: int = 1) -> R.Check:
    """The server read ``requests`` requests; the connections that asked nothing (the probe's)
    number ``probes`` and each closed TLS cleanly (close_notify, nothing logged as an error)."""

    def served(ctx: Ctx, res: Result) -> Iterable[str]:
        counts = ctx.server().counts()
        if counts.get("requests") != requests:
            yield f"the server read {counts.get('requests')} requests, not {requests}"
        if counts.get("idle_close_notify", 0) != probes or counts.get("idle_eof", 0) != 0:
            yield f"connections that asked nothing: {counts} (expected {probes} closed with close_notify)"

    return served


def absent(*rels: str) -> R.Check:
    def absent(ctx: Ctx, res: Result) -> Iterable[str]:
        for rel in rels:
            if ctx.path(rel).exists():
                yield f"{rel} was created by a refused run"

    return absent


def refused(name: str, cert: str, argv: list[str], err: str, *checks: R.Check, **kw: object) -> Case:
    """A run refused after the pre-flight handshake: exit 2, one line, nothing requested."""
    return Case("https", name, argv, rc=2, err=err, server=None, setup=tls_server(cert), contact=True,
                checks=(no_request, no_internals, *checks), **kw)  # type: ignore[arg-type]


def experiment(tls: str = "", load: str = "", urls: str = "@HTTPS@") -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        base = ctx.subst([urls])[0]
        ctx.write("exp.toml", f'title = "https"\nrecord = ["rps", "latency"]\n\n[server]\nadapter = "url"\n\n'
                              f'[[load]]\nconnections = 1\nrequests = 10\ntrials = 3\n{load}\n\n'
                              f'[[variant]]\nlabel = "a"\nurl = "{base}"\n\n'
                              f'[[variant]]\nlabel = "b"\nurl = "{base}b"\n\n{tls}\n')  # fmt: skip

    return setup


def fam_https() -> list[Case]:
    small = r"has a 1024-bit RSA key: pounder's TLS engine \(rustls\) accepts RSA keys of 2048 to 8192 bits only"
    bench = [P, "bench", "@HTTPS@", "-n", "5", "-c", "1"]
    run = [P, "run", "exp.toml", "--results", "res", "--quick"]
    cases = [
        refused("rsa1024-insecure", "rsa1024", [*bench, "--insecure"], small, not_advised("--insecure")),
        refused("rsa1024-trusted-itself", "rsa1024", [*bench, "--cacert", "rsa1024.pem"], small,
                not_advised("--insecure", "--cacert")),
        refused("rsa1024-no-flag", "rsa1024", bench, small),
        refused("ec-self-signed", "ec", bench, r"self-signed: no CA vouches for it \(give --cacert the server's "
                                                r"certificate itself, or --insecure\)$"),
        refused("ec-self-signed-other-ca", "ec", [*bench, "--cacert", "ca.pem"],
                r"self-signed, and not one in ca\.pem \(give --cacert the server's certificate itself, or "
                r"--insecure instead of --cacert\)$"),
        refused("rsa2048-self-signed-ca-true", "rsa2048", bench, r"self-signed: no CA vouches for it"),
        refused("expired-trusted-itself", "expired", [*bench, "--cacert", "expired.pem"],
                r"expired on 2021-01-01 00:00 UTC \(renew the server's certificate, or give --insecure\)$"),
        refused("wrong-name", "ec", [P, "bench", "https://localhost:@PORT@/", "-n", "5", "--cacert", "ec.pem"],
                r"the certificate is for 127\.0\.0\.1, not localhost \(use a URL with one of its names"),
        Case("https", "closed-during-handshake-insecure", [P, "bench", "https://127.0.0.1:@PORT@/", "-n", "5",
                                                           "--insecure"],
             rc=2, err=r"the server closed the connection during the TLS handshake \(check the server's TLS setup\)$",
             server="close_now", contact=True, checks=(not_advised("--insecure"), no_internals)),
    ]
    for name, cert, flags in (("ec-trusted-itself", "ec", ["--cacert", "ec.pem"]),
                              ("ec-insecure", "ec", ["--insecure"]),
                              ("rsa2048-trusted-itself-no-resume", "rsa2048", ["--cacert", "rsa2048.pem",
                                                                               "--no-tls-resume"])):  # fmt: skip
        cases.append(Case("https", name, [*bench, *flags, "-q"], rc=0, server=None, setup=tls_server(cert),
                          checks=(served(5),), note="item 20: the probe closes TLS cleanly and is no request"))
    cases += [
        Case("https", f"file-{name}", [P, "bench", "https://127.0.0.1:9/", "-n", "1", *flags], rc=2, err=err,
             server=None, setup=tls_server("ec"), contact=False, checks=(no_internals,))
        for name, flags, err in (
            ("cacert-not-a-certificate", ["--cacert", "bad.pem"], r"--cacert bad\.pem is not a PEM certificate "
                                                                  r"bundle: a certificate block does not read as one"),
            ("cert-not-a-certificate", ["--cert", "bad.pem", "--key", "ec.key"], r"--cert bad\.pem: its certificate "
                                                                                 r"block does not read as one"),
            ("key-of-another-type", ["--cert", "ec.pem", "--key", "rsa2048.key"],
             r"--key rsa2048\.key is not the private key of --cert ec\.pem$"),
        )
    ]
    # pounder run: the TLS options, and every refusal before anything is printed or written
    cases += [
        Case("https", "run-self-signed-no-tls", run, rc=2, err=r"^pounder: error: https://.*self-signed: no CA",
             out=r"\A\Z",
             server=None, setup=R.chain(tls_server("ec"), experiment()), contact=True,
             checks=(no_request, absent("res"), no_internals), note="item 11: refused before res/ exists"),
        Case("https", "run-cacert-flag", [*run, "--cacert", "ec.pem"], rc=0, server=None,
             setup=R.chain(tls_server("ec"), experiment()), outputs=("res", "res/*"),
             checks=(served(80, probes=2),)),
        Case("https", "run-tls-table", run, rc=0, server=None,
             setup=R.chain(tls_server("ec"), experiment('[tls]\ncacert = "ec.pem"\nresume = false')),
             outputs=("res", "res/*"), checks=(served(80, probes=2),)),
        Case("https", "run-tls-table-insecure-flag-over-cacert", [*run, "--insecure"], rc=0, server=None,
             setup=R.chain(tls_server("ec"), experiment('[tls]\ncacert = "ca.pem"')), outputs=("res", "res/*")),
        Case("https", "run-tls-table-wrong-ca", run, rc=2, err=r"self-signed, and not one in .*ca\.pem",
             server=None, setup=R.chain(tls_server("ec"), experiment('[tls]\ncacert = "ca.pem"')), contact=True,
             checks=(no_request, absent("res"))),
        Case("https", "run-tls-table-without-https", run, rc=2,
             err=r"exp\.toml:\d+: tls: applies to https:// variant URLs", setup=experiment("[tls]\ninsecure = true",
                                                                                           urls="@URL@"),
             checks=(absent("res"),)),
        Case("https", "run-tls-insecure-and-cacert", run, rc=2, err=r"exp\.toml:\d+: tls\.insecure: insecure accepts "
                                                                    r"any certificate: it cannot go with cacert",
             server=None, setup=R.chain(tls_server("ec"), experiment('[tls]\ninsecure = true\ncacert = "ec.pem"')),
             checks=(absent("res"),)),
        Case("https", "run-tls-unknown-key", run, rc=2, err=r"exp\.toml:\d+: tls\.verify", server=None,
             setup=R.chain(tls_server("ec"), experiment("[tls]\nverify = false")), checks=(absent("res"),)),
        Case("https", "run-tls-cacert-missing", run, rc=2, err=r"exp\.toml:\d+: tls\.cacert", server=None,
             setup=R.chain(tls_server("ec"), experiment('[tls]\ncacert = "nowhere.pem"')), checks=(absent("res"),)),
        Case("https", "run-uring-https", [*run, "--insecure"], rc=2,
             err=r"^pounder: error: load 1 \(NC 1, NR 10\): .*uring",
             server=None, setup=R.chain(tls_server("ec"), experiment(load='io = "uring"')),
             checks=(absent("res"), no_request)),
        Case("https", "run-insecure-flag-plain-urls", [*run, "--insecure"], rc=2,
             err=r"--insecure applies to https:// targets", setup=experiment(urls="@URL@"), checks=(absent("res"),)),
    ]
    return cases


FAMILIES = {"https": fam_https}
