"""HTTPS for the tests: certificates made with the ``openssl`` CLI (:func:`make_pki`), and a private
nginx with TLS (:class:`TlsNginx`) whose access log says what it served: one line per request,
``STATUS REUSED CONNECTION PORT`` (REUSED ``r`` when the TLS session was resumed, else ``.``;
CONNECTION nginx's serial number of the connection, which counts every connection its one
worker accepted, also those that made no request).

    pki = make_pki(tmp_path)
    with TlsNginx(tmp_path / "nginx", pki) as srv:
        ... srv.url, srv.verify_url (client certificate required), srv.plain_url ...
        srv.log_lines()
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from support.nginx import PrivateNginx, free_port, wait_port

__all__ = ["Pki", "PyTlsServer", "TlsNginx", "free_port", "make_pki", "openssl", "self_signed", "v1_certificate",
           "wait_port"]


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)


@dataclass(frozen=True)
class Pki:
    """A CA, a server certificate it signed (localhost and 127.0.0.1), a client certificate it
    signed, and another CA that signed none of them."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    openssl(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(cert),
        "-days",
        "2",
        "-subj",
        f"/CN=pounder test {name}",
    )
    return cert, key


def _leaf(directory: Path, name: str, ca: tuple[Path, Path], san: str) -> tuple[Path, Path]:
    cert, key, csr, ext = (directory / f"{name}{suffix}" for suffix in (".pem", ".key", ".csr", ".ext"))
    openssl(
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(csr),
        "-subj",
        f"/CN={name}",
    )
    ext.write_text(f"subjectAltName={san}\n")
    openssl(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca[0]),
        "-CAkey",
        str(ca[1]),
        "-CAcreateserial",
        "-out",
        str(cert),
        "-days",
        "2",
        "-extfile",
        str(ext),
    )
    return cert, key


def self_signed(directory: Path, name: str = "ss") -> tuple[Path, Path]:
    """A self-signed certificate made the usual way (RSA, CA:TRUE) for 127.0.0.1 only, and its key."""
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1")  # fmt: skip
    return cert, key


def v1_certificate(directory: Path) -> tuple[Path, Path]:
    """An X.509 v1 certificate (self-signed, no extensions) and its key."""
    cert, key, csr = directory / "v1.pem", directory / "v1.key", directory / "v1.csr"
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key),
            "-out", str(csr), "-subj", "/CN=v1")  # fmt: skip
    openssl("x509", "-req", "-in", str(csr), "-signkey", str(key), "-out", str(cert), "-days", "2")
    return cert, key


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory, "ca")
    server = _leaf(directory, "server", ca, "DNS:localhost,IP:127.0.0.1")
    client = _leaf(directory, "client", ca, "DNS:client")
    other, _ = _ca(directory, "other")
    return Pki(ca[0], server[0], server[1], client[0], client[1], other)


_HTTP = """\
    log_format t '$status $ssl_session_reused $connection $server_port';
    access_log {root}/access.log t;
    keepalive_timeout 60s;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_session_cache shared:pounder:1m;
    server {{
        listen 127.0.0.1:{port} ssl;
        location / {{ return 200 "ok\\n"; }}
    }}
    server {{
        listen 127.0.0.1:{verify_port} ssl;
        ssl_verify_client on;
        ssl_client_certificate {ca};
        location / {{ return 200 "ok\\n"; }}
    }}
    server {{
        listen 127.0.0.1:{plain_port};
        location / {{ return 200 "ok\\n"; }}
    }}"""


class TlsNginx:
    """One nginx (one worker) with three servers on free loopback ports: HTTPS (``url``), HTTPS
    requiring a client certificate signed by the CA (``verify_url``), plain HTTP (``plain_url``)."""

    def __init__(self, root: Path, pki: Pki) -> None:
        self.root = root
        self.pki = pki
        self.port, self.verify_port, self.plain_port = free_port(), free_port(), free_port()
        http = _HTTP.replace("{cert}", str(pki.server_cert)).replace("{key}", str(pki.server_key))
        self.nginx = PrivateNginx(root, http.replace("{ca}", str(pki.ca)), port=self.port,
                                  verify_port=self.verify_port, plain_port=self.plain_port)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/"

    @property
    def verify_url(self) -> str:
        return f"https://localhost:{self.verify_port}/"

    @property
    def plain_url(self) -> str:
        return f"127.0.0.1:{self.plain_port}/"

    def __enter__(self) -> TlsNginx:
        self.nginx.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        self.nginx.stop()

    def log_lines(self, port: int | None = None) -> list[str]:
        """The access log's lines (of one server's port), after a moment for the last ones."""
        time.sleep(0.1)
        path = self.root / "access.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return [line for line in lines if port is None or line.endswith(f" {port}")]

    def clear_log(self) -> None:
        (self.root / "access.log").write_text("")


def leaf_certificate(directory: Path, name: str, newkey: str, *, ca: bool = False) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 with a key made by ``openssl req -newkey NEWKEY``
    (``rsa:1024``, ``ec`` for P-256), CA:FALSE unless ``ca``; and its key."""
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    curve = ["-pkeyopt", "ec_paramgen_curve:P-256"] if newkey == "ec" else []
    openssl("req", "-x509", "-newkey", newkey, *curve, "-nodes", "-keyout", str(key), "-out", str(cert),
            "-days", "2", "-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1",
            "-addext", f"basicConstraints=critical,CA:{'TRUE' if ca else 'FALSE'}")  # fmt: skip
    return cert, key


class PyTlsServer:
    """An HTTPS server of Python's ``ssl`` (OpenSSL at security level 0, so that it serves what
    nginx refuses to load: an RSA key of 1024 bits) on a free loopback port, one thread per
    connection, answering every request ``200 ok``. It records how each connection ended:
    ``ends`` is a list of ``(requests, how)``, ``how`` one of ``close_notify`` (the client closed
    TLS cleanly), ``eof`` (TCP closed without close_notify), ``reset``, ``handshake`` (the
    handshake failed)."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.set_ciphers("DEFAULT:@SECLEVEL=0")
        self.context.load_cert_chain(str(cert), str(key))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.ends: list[tuple[int, str]] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/"

    def __enter__(self) -> PyTlsServer:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.listener.close()
        self.thread.join(5)

    def ended(self) -> list[tuple[int, str]]:
        """``ends``, after a moment for the last connections to end."""
        time.sleep(0.4)
        with self.lock:
            return list(self.ends)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        requests, how = 0, "eof"
        conn.settimeout(10)
        try:
            tls = self.context.wrap_socket(conn, server_side=True, suppress_ragged_eofs=False)
        except (ssl.SSLError, OSError):
            how = "handshake"
        else:
            buffer = b""
            try:
                while True:
                    data = tls.recv(65536)
                    if not data:
                        how = "close_notify"
                        break
                    buffer += data
                    while b"\r\n\r\n" in buffer:
                        _, _, buffer = buffer.partition(b"\r\n\r\n")
                        requests += 1
                        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
            except ssl.SSLEOFError:
                how = "eof"
            except (ConnectionResetError, BrokenPipeError):
                how = "reset"
            except (ssl.SSLError, OSError):
                how = "eof"
        finally:
            conn.close()
        with self.lock:
            self.ends.append((requests, how))
