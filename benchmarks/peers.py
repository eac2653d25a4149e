"""pounder against wrk and ab: requests/s and client CPU per request, same server, same load.

A private nginx (one worker) serves a small static file on a free loopback port, pinned to one
core; each client is pinned to the other core and runs one thread with the same connection count
for the same time. Client CPU is read the same way for every tool: the rusage of the client
process (user + sys) from wait4, divided by the requests it completed. For pounder the engine's
own figure (its threads only, no Python start-up) is shown as well.

This is a benchmark, not a test: it prints a table and asserts nothing.

    python benchmarks/peers.py [--duration 10] [--connections 50] [--repeat 3]
    python benchmarks/peers.py --tls [--duration 10] [--connections 50] [--repeat 3]

--tls: the same nginx over HTTPS with a self-signed certificate made here (openssl CLI, EC P-256),
pounder against wrk (ab is left out), twice: keep-alive, and one TLS handshake per request (wrk
-H 'Connection: close', pounder --no-keepalive, the latter with and without session resumption).

Needs nginx, wrk and ab (Debian: nginx, wrk, apache2-utils); `make bench-peers` installs them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SERVER_CPU, CLIENT_CPU = "1", "0"
BODY = b"<html><body>pounder peers benchmark</body></html>\n" * 2

NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 10000000;
    keepalive_timeout 60s;
    client_body_temp_path {root}/tmp;
    proxy_temp_path {root}/tmp;
    fastcgi_temp_path {root}/tmp;
    uwsgi_temp_path {root}/tmp;
    scgi_temp_path {root}/tmp;
    server {{
        listen 127.0.0.1:{port};
        root {root}/www;
        location / {{ }}
    }}
}}
"""


@dataclass
class Sample:
    tool: str
    requests: int
    rps: float
    cpu_s: float
    engine_cpu_s: float | None = None

    @property
    def cpu_us_per_request(self) -> float:
        return self.cpu_s / self.requests * 1e6 if self.requests else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_nginx(root: Path, port: int, tls: bool = False) -> subprocess.Popen[bytes]:
    (root / "www").mkdir()
    (root / "tmp").mkdir()
    (root / "www" / "index.html").write_bytes(BODY)
    conf = root / "nginx.conf"
    text = NGINX_CONF.format(root=root, port=port)
    if tls:  # the same server over HTTPS, resumption allowed (tickets, and a session cache)
        text = text.replace(f"listen 127.0.0.1:{port};", f"listen 127.0.0.1:{port} ssl;\n"
                            f"        ssl_certificate {root}/cert.pem;\n        ssl_certificate_key {root}/key.pem;\n"
                            "        ssl_protocols TLSv1.2 TLSv1.3;\n        ssl_session_cache shared:peers:10m;")
    conf.write_text(text)
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, "nginx", "-c", str(conf), "-p", str(root)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("peers: nginx did not start: " + (root / "error.log").read_text())


class ChildCpu:
    """CPU time of reaped children, measured as a difference of RUSAGE_CHILDREN."""

    def __enter__(self) -> ChildCpu:
        r = os.times()
        self.start = r.children_user + r.children_system
        return self

    def __exit__(self, *exc: object) -> None:
        r = os.times()
        self.seconds = r.children_user + r.children_system - self.start


def client(cmd: list[str]) -> tuple[str, float]:
    with ChildCpu() as cpu:
        proc = subprocess.run(["taskset", "-c", CLIENT_CPU, *cmd], capture_output=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"peers: {cmd[0]} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return proc.stdout.decode(), cpu.seconds


def run_pounder(url: str, c: int, d: int, extra: tuple[str, ...] = ()) -> Sample:
    out, cpu = client([sys.executable, "-m", "pounder", "bench", url, "-c", str(c), "-t", "1", "-d", f"{d}s",
                       "--json", "-", *extra])
    r = json.loads(out)
    done = r["requests"]["complete"] + r["requests"]["failed"]
    engine = r["client_cpu"]["user_s"] + r["client_cpu"]["sys_s"]
    return Sample("pounder", done, r["derived"]["requests_per_s"], cpu, engine)


def run_wrk(url: str, c: int, d: int, extra: tuple[str, ...] = ()) -> Sample:
    out, cpu = client(["wrk", "-t1", f"-c{c}", f"-d{d}s", *extra, url])
    done = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return Sample("wrk", done, rps, cpu)


def run_ab(url: str, c: int, d: int) -> Sample:
    out, cpu = client(["ab", "-k", "-q", "-c", str(c), "-t", str(d), "-n", "100000000", url])
    done = int(re.search(r"Complete requests:\s+(\d+)", out).group(1))  # type: ignore[union-attr]
    rps = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return Sample("ab", done, rps, cpu)


def make_certificate(root: Path) -> None:
    """A self-signed EC P-256 certificate for 127.0.0.1 and localhost: root/cert.pem, root/key.pem."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(root / "key.pem"), "-out", str(root / "cert.pem"), "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=60)


def tls_main(args: argparse.Namespace) -> int:
    """nginx over HTTPS: pounder and wrk, with keep-alive and with one handshake per request."""
    missing = [t for t in ("nginx", "wrk", "taskset", "openssl") if shutil.which(t) is None]
    if missing:
        print(f"peers: --tls needs {', '.join(missing)} (Debian: nginx wrk util-linux openssl)", file=sys.stderr)
        return 2
    port = free_port()
    url = f"https://127.0.0.1:{port}/index.html"
    close = ("-H", "Connection: close")
    runs: dict[str, tuple[str, Callable[..., Sample], tuple[str, ...]]] = {
        "pounder": ("keep-alive", run_pounder, ("--insecure",)),
        "wrk": ("keep-alive", run_wrk, ()),
        "pounder ": ("handshake per request", run_pounder, ("--insecure", "--no-keepalive", "--no-tls-resume")),
        "pounder resumed": ("handshake per request", run_pounder, ("--insecure", "--no-keepalive")),
        "wrk ": ("handshake per request", run_wrk, close),
    }
    samples: dict[str, list[Sample]] = {name: [] for name in runs}
    with tempfile.TemporaryDirectory(prefix="pounder-peers-") as tmp:
        make_certificate(Path(tmp))
        nginx = start_nginx(Path(tmp), port, tls=True)
        try:
            for _ in range(args.repeat):
                for name, (_, fn, extra) in runs.items():
                    samples[name].append(fn(url, args.connections, args.duration, extra))
        finally:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                nginx.kill()
    print(f"nginx 1 worker on cpu {SERVER_CPU} over HTTPS (self-signed EC P-256, TLS 1.3); each client 1 thread on "
          f"cpu {CLIENT_CPU}, {args.connections} connections, {args.duration} s x {args.repeat} runs (median)\n")
    print(f"{'mode':22} {'tool':16} {'requests/s':>12} {'client CPU us/req':>18} {'vs wrk':>7}")
    for mode in ("keep-alive", "handshake per request"):
        names = [name for name, run in runs.items() if run[0] == mode]
        wrk_cpu = statistics.median(s.cpu_us_per_request for s in samples[next(n for n in names if "wrk" in n)])
        for name in names:
            rps = statistics.median(s.rps for s in samples[name])
            cpu = statistics.median(s.cpu_us_per_request for s in samples[name])
            print(f"{mode:22} {name.strip():16} {rps:12.0f} {cpu:18.2f} {cpu / wrk_cpu:6.2f}x")
            engine = [s.engine_cpu_s / s.requests * 1e6 for s in samples[name] if s.engine_cpu_s is not None]
            if engine:
                print(f"{'':22} {'  engine':16} {'':12} {statistics.median(engine):18.2f}   (engine threads only)")
    print("\npounder: full handshakes (--no-tls-resume) unless 'resumed'; wrk resumes no session.")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=10, help="seconds per run (default 10)")
    ap.add_argument("--connections", type=int, default=50, help="connections per client (default 50)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool, interleaved (default 3)")
    ap.add_argument("--tls", action="store_true", help="over HTTPS: pounder and wrk, keep-alive and a handshake "
                    "per request")
    args = ap.parse_args()
    if args.tls:
        return tls_main(args)
    missing = [t for t in ("nginx", "wrk", "ab", "taskset") if shutil.which(t) is None]
    if missing:
        print(f"peers: missing {', '.join(missing)} (Debian: nginx wrk apache2-utils util-linux)", file=sys.stderr)
        return 2
    port = free_port()
    url = f"http://127.0.0.1:{port}/index.html"
    runners = {"pounder": run_pounder, "wrk": run_wrk, "ab": run_ab}
    samples: dict[str, list[Sample]] = {name: [] for name in runners}
    with tempfile.TemporaryDirectory(prefix="pounder-peers-") as tmp:
        nginx = start_nginx(Path(tmp), port)
        try:
            for _ in range(args.repeat):
                for name, fn in runners.items():
                    samples[name].append(fn(url, args.connections, args.duration))
        finally:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                nginx.kill()
    print(f"nginx 1 worker on cpu {SERVER_CPU}; each client 1 thread on cpu {CLIENT_CPU}, "
          f"{args.connections} connections, keep-alive, {args.duration} s x {args.repeat} runs (median)\n")
    print(f"{'tool':10} {'requests/s':>12} {'client CPU us/req':>18} {'vs wrk':>7}")
    wrk_cpu = statistics.median(s.cpu_us_per_request for s in samples["wrk"])
    for name, runs in samples.items():
        rps = statistics.median(s.rps for s in runs)
        cpu = statistics.median(s.cpu_us_per_request for s in runs)
        print(f"{name:10} {rps:12.0f} {cpu:18.2f} {cpu / wrk_cpu:6.2f}x")
        engine = [s.engine_cpu_s / s.requests * 1e6 for s in runs if s.engine_cpu_s is not None]
        if engine:
            print(f"{'  engine':10} {'':12} {statistics.median(engine):18.2f}   (engine threads only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
