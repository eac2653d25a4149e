"""A private nginx for the tests (:class:`PrivateNginx`): one worker, its prefix, config, pid file
and logs under its own directory, listening on free loopback ports; stopped with SIGQUIT (killed
after 10 s), also when a test fails.

    with PrivateNginx(root, "log_format t '$msec';\\naccess_log {root}/access.log t;\\n"
                      "server {{ listen 127.0.0.1:{port}; location / {{ return 200; }} }}",
                      port=free_port()) as nginx:
        ... nginx.ports["port"] ...

The ``http`` text is a ``str.format`` template of what goes inside ``http { }``; ``{root}`` and each
port given by name are filled in (literal braces doubled).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

_CONF = """\
worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections {connections}; }}
http {{
    client_body_temp_path {root}/tmp; proxy_temp_path {root}/tmp; fastcgi_temp_path {root}/tmp;
    uwsgi_temp_path {root}/tmp; scgi_temp_path {root}/tmp;
{http}
}}
"""


def nginx_binary() -> str | None:
    return shutil.which("nginx", path="/usr/sbin:/usr/bin:/sbin:/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


class PrivateNginx:
    """nginx with the ``http`` block given, started on entering, stopped on leaving."""

    def __init__(self, root: Path, http: str, *, connections: int = 256, **ports: int) -> None:
        self.root = root
        self.ports = ports
        self.conf = _CONF.format(root=root, connections=connections, http=http.format(root=root, **ports))
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PrivateNginx:
        binary = nginx_binary()
        assert binary is not None, "nginx is not installed"
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        conf = self.root / "nginx.conf"
        conf.write_text(self.conf)
        self.proc = subprocess.Popen([binary, "-p", str(self.root), "-c", str(conf)], stderr=subprocess.DEVNULL)
        if not all(wait_port(port) for port in self.ports.values()):
            self.stop()
            error_log = self.root / "error.log"
            raise RuntimeError("nginx did not start: " + (error_log.read_text() if error_log.exists() else "no log"))
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
