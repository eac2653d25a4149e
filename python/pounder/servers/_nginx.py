"""The nginx in front of a php-fpm pool (:mod:`pounder.servers._phpfpm`): HTTP on a port of its
own, ``*.php`` and the pool's status page passed on with ``fastcgi_pass``, every file it writes in
its own directory (the pool's ``front/``). A server of its own (:class:`NginxFront`): its own
process group, guarded like every server's, never among the pool's processes."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
from collections.abc import Collection
from pathlib import Path

from pounder._errors import UsageError, public
from pounder.servers._base import HOST, ManagedServer

FRONT_READY_PATH = "/pounder-front-ready"
"""Answered by the nginx front itself (204), to know it is up before the pool is."""
_STATUS = re.compile(r"^/[A-Za-z0-9._~/-]*$")
_UNSAFE_PATH = re.compile(r'["\\$\n;{}]')
_SBIN = "/usr/sbin:/usr/local/sbin:/sbin"
_FASTCGI_PARAMS = (
    ("QUERY_STRING", "$query_string"), ("REQUEST_METHOD", "$request_method"), ("CONTENT_TYPE", "$content_type"),
    ("CONTENT_LENGTH", "$content_length"), ("SCRIPT_NAME", "$fastcgi_script_name"),
    ("SCRIPT_FILENAME", "$document_root$fastcgi_script_name"), ("REQUEST_URI", "$request_uri"),
    ("DOCUMENT_URI", "$document_uri"), ("DOCUMENT_ROOT", "$document_root"), ("SERVER_PROTOCOL", "$server_protocol"),
    ("REQUEST_SCHEME", "$scheme"), ("GATEWAY_INTERFACE", "CGI/1.1"), ("SERVER_SOFTWARE", "nginx"),
    ("REMOTE_ADDR", "$remote_addr"), ("REMOTE_PORT", "$remote_port"), ("SERVER_ADDR", "$server_addr"),
    ("SERVER_PORT", "$server_port"), ("SERVER_NAME", "$server_name"), ("REDIRECT_STATUS", "200"))


def check_status_path(path: str) -> str:
    """``path`` (php-fpm's ``pm.status_path``) if the front can pass it on (a plain path);
    :class:`~pounder.UsageError` otherwise."""
    if not _STATUS.match(path):
        raise UsageError(f"php-fpm: pm.status_path {path!r} must be a plain path such as /status")
    return path


def _nginx_path(path: Path) -> str:
    text = str(path)
    if _UNSAFE_PATH.search(text):
        raise UsageError(f"php-fpm: unusable path {text!r} for nginx (contains a quote, backslash, $, ; or brace)")
    return f'"{text}"'


@public
def render_front_conf(*, front_dir: Path, port: int, root: Path, fastcgi: tuple[str, int], host: str = HOST,
                      status_path: str, keepalive: bool = False, user: str | None = None,
                      group: str | None = None) -> str:
    """The nginx.conf of the front of a pool (a pure function): one worker, HTTP on
    ``host``:``port``, document root ``root`` with ``index index.php``, ``*.php`` and
    ``status_path`` passed to ``fastcgi`` (host, port); no access log; every file it writes
    under ``front_dir``. Answers are buffered in memory only (``fastcgi_max_temp_file_size 0``:
    a worker that cannot reach ``front_dir``, as root, still serves them), request bodies up to
    16 MiB too, and bodies of any size are taken. ``keepalive`` False: one request per connection
    (``keepalive_timeout 0``). ``user``/``group``: its workers' (as root)."""
    check_status_path(status_path)
    temp = front_dir / "tmp"
    out = ["# The nginx front of a private php-fpm pool, written by pounder.", "worker_processes 1;"]
    if user is not None:
        out.append(f"user {user}{'' if group is None else ' ' + group};")
    out += [
        f"pid {_nginx_path(front_dir / 'run' / 'nginx.pid')};",
        f"error_log {_nginx_path(front_dir / 'logs' / 'error.log')} warn;",
        "events {", "    worker_connections 4096;", "}",
        "http {",
        "    access_log off;",
        *(f"    {kind}_temp_path {_nginx_path(temp / kind)};"
          for kind in ("client_body", "fastcgi", "proxy", "uwsgi", "scgi")),
        f"    keepalive_timeout {'65s' if keepalive else '0'};",
        "    client_max_body_size 0;",
        "    client_body_buffer_size 16m;",
        "    fastcgi_max_temp_file_size 0;",
        "    server {",
        f"        listen {host}:{port};",
        f"        root {_nginx_path(root)};",
        "        index index.php;",
        *(f"        fastcgi_param {name} {value};" for name, value in _FASTCGI_PARAMS),
        f"        location = {FRONT_READY_PATH} {{ return 204; }}",
        f"        location ~ \\.php$ {{ fastcgi_pass {fastcgi[0]}:{fastcgi[1]}; }}",
        f"        location = {status_path} {{ fastcgi_pass {fastcgi[0]}:{fastcgi[1]}; }}",
        "    }",
        "}",
    ]
    return "\n".join(out) + "\n"


@public
def find_nginx() -> str | None:
    return shutil.which("nginx", path=os.environ.get("PATH", "") + ":" + _SBIN)




@public
class NginxFront(ManagedServer):
    """The nginx in front of a php-fpm pool (see :func:`render_front_conf`): ``fastcgi`` (host,
    port) must be set before it starts. Stopped with SIGQUIT (its graceful shutdown)."""

    kind = "nginx"
    stop_signal = signal.SIGQUIT

    def __init__(self, workdir: str | os.PathLike[str], *, root: str | os.PathLike[str],
                 status_path: str, keepalive: bool = False, user: tuple[str, str] | None = None,
                 binary: str | None = None, stop_timeout_s: float = 10.0, die_with_parent: bool = True,
                 cpus: Collection[int] | None = None, host: str = HOST) -> None:
        super().__init__(workdir, ready_path=FRONT_READY_PATH, stop_timeout_s=stop_timeout_s,
                         die_with_parent=die_with_parent, cpus=cpus, host=host)
        self.root = Path(root).resolve()
        self.status_path = check_status_path(status_path)
        self.keepalive = keepalive
        self.user = user
        self.binary = binary or find_nginx() or "nginx"
        self.fastcgi: tuple[str, int] | None = None

    @property
    def conf_path(self) -> Path:
        return self.workdir / "nginx.conf"

    def _expected_children(self) -> int:
        return 1

    def _prepare(self, port: int) -> list[str]:
        if self.fastcgi is None:
            raise RuntimeError("the nginx front needs the pool's address (fastcgi) before it starts")
        temp = self.workdir / "tmp"
        temp.mkdir(parents=True, exist_ok=True)
        self.conf_path.write_text(render_front_conf(
            front_dir=self.workdir, port=port, root=self.root, fastcgi=self.fastcgi, host=self.host,
            status_path=self.status_path, keepalive=self.keepalive,
            user=None if self.user is None else self.user[0], group=None if self.user is None else self.user[1]))
        if self.user is not None:  # its workers write request bodies there
            entry = pwd.getpwnam(self.user[0])
            os.chown(temp, entry.pw_uid, entry.pw_gid)
        return [self.binary, "-p", f"{self.workdir}/", "-c", str(self.conf_path), "-e", str(self.error_log),
                "-g", "daemon off;"]
