"""`make demo`: the bundled demo app on gunicorn, benchmarked with `pounder bench`.

Until `pounder tune` exists this runs the two measurements the tuning method starts from:
a closed-loop run (how fast can 4 workers go) and an open-loop run at a fixed rate below that
(what latency users see, measured from when each request was meant to go).
The server runs on a free loopback port and is stopped at the end, also on error or Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKERS = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"demo: gunicorn exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("demo: gunicorn did not answer within 30 s")


def bench(*args: str) -> None:
    cmd = [sys.executable, "-m", "pounder", "bench", *args]
    print("$ pounder bench " + " ".join(args), flush=True)
    subprocess.run(cmd, check=True)
    print(flush=True)


def main() -> int:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, DEMO_CPU_MS="2", DEMO_PRELOAD_MB="20")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--chdir", str(HERE), "--bind", f"127.0.0.1:{port}",
         "--workers", str(WORKERS), "--preload", "--log-level", "warning", "app:app"],
        env=env,
    )
    try:
        wait_ready(base + "/health", server)
        print(f"demo: gunicorn with {WORKERS} sync workers on {base} (2 ms of CPU per request)\n")
        bench(base + "/", "-c", "8", "-d", "5s", "--warmup", "1s")
        bench(base + "/", "--rate", "300", "-c", "32", "-d", "5s", "--warmup", "1s")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
