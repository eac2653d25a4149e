"""pounder against wrk and ab: requests/s and client CPU per request, same server, same load.

A private nginx (one worker) serves a small static file on a free loopback port, pinned to one
core; each client is pinned to the other core and runs one thread with the same connection count
for the same time. Client CPU is read the same way for every tool: the rusage of the client
process (user + sys) from wait4, divided by the requests it completed. For pounder the engine's
own figure (its threads only, no Python start-up) is shown as well.

This is a benchmark, not a test: it prints a table and asserts nothing.

    python benchmarks/peers.py [--duration 10] [--connections 50] [--repeat 3]

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


def start_nginx(root: Path, port: int) -> subprocess.Popen[bytes]:
    (root / "www").mkdir()
    (root / "tmp").mkdir()
    (root / "www" / "index.html").write_bytes(BODY)
    conf = root / "nginx.conf"
    conf.write_text(NGINX_CONF.format(root=root, port=port))
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


def run_pounder(url: str, c: int, d: int) -> Sample:
    out, cpu = client([sys.executable, "-m", "pounder", "bench", url, "-c", str(c), "-t", "1", "-d", f"{d}s",
                       "--json", "-"])
    r = json.loads(out)
    done = r["requests"]["complete"] + r["requests"]["failed"]
    engine = r["client_cpu"]["user_s"] + r["client_cpu"]["sys_s"]
    return Sample("pounder", done, r["derived"]["requests_per_s"], cpu, engine)


def run_wrk(url: str, c: int, d: int) -> Sample:
    out, cpu = client(["wrk", "-t1", f"-c{c}", f"-d{d}s", url])
    done = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return Sample("wrk", done, rps, cpu)


def run_ab(url: str, c: int, d: int) -> Sample:
    out, cpu = client(["ab", "-k", "-q", "-c", str(c), "-t", str(d), "-n", "100000000", url])
    done = int(re.search(r"Complete requests:\s+(\d+)", out).group(1))  # type: ignore[union-attr]
    rps = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return Sample("ab", done, rps, cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=10, help="seconds per run (default 10)")
    ap.add_argument("--connections", type=int, default=50, help="connections per client (default 50)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool, interleaved (default 3)")
    args = ap.parse_args()
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
