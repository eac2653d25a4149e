"""pounder against wrk, ab and oha: client CPU per request and requests/s, same server, same load.

A private nginx (one worker) serves a 100-byte body on a free loopback port (from memory, nginx's
return 200, so that the client core is the limit; --static: from a file), pinned to one core;
every client is pinned to the other core and runs one thread (pounder -t 1, wrk -t1, oha
--worker-threads 1, ab) with the same connection count. The tools run interleaved, A B C D E in
each round, the first tool of a round moving one place each round, over --rounds rounds, so that
a noisy shared machine hits every tool alike; medians over the rounds are shown, with the
min-max of each round's ratio to wrk (the pairwise ratio: wrk ran in the same round, moments
apart).

CPU per request is the marginal cost: each tool runs twice per round, --short and --long seconds,
and its client CPU (user + sys of the process, all its threads and children, from the kernel by
wait4) of the long run less the short one is divided by the requests it completed in the long
run less the short one, so start-up (Python's import, a Tokio runtime, connecting) does not
count. Requests are each tool's own count, checked against nginx's (stub_status, on a second
port) after every run.

Three modes, all by default (--mode): keep-alive, a new connection per request (pounder
--no-keepalive, wrk -H 'Connection: close', ab without -k, oha --disable-keepalive), and keep-alive
with each client capped at --client-cpu of its core (default 0.5) by a cgroup CPU quota (cgroup v1
cpu.cfs_quota_us, or v2 cpu.max; benchmarks/cpucap.py), so that the client core, not the server, is
certainly the limit: requests/s is judged there, and only from rounds the cap bound (cpu.stat: the
long run throttled, and >= 90 % of the quota used between the short and the long run); without a
writable cpu cgroup that mode is skipped and says why. pounder runs on both of its I/O paths (--io
uring, --io epoll). A verdict line per target of issue 30 states the measured value and PASS or
FAIL; the numbers decide (tables and verdicts: benchmarks/peers_report.py).

This is a benchmark, not a test: it prints tables and asserts nothing.

    python benchmarks/peers.py [--rounds 5] [--short 3] [--long 6] [--connections 50]
                               [--mode all|both|keepalive|close|capped] [--client-cpu 0.5]
                               [--markdown FILE] [--only TOOL,...]
    python benchmarks/peers.py --tls [...]

--tls: the same nginx over HTTPS with a self-signed certificate made here (openssl CLI, EC P-256),
pounder (--insecure; HTTPS runs on the epoll path) against wrk, keep-alive and one TLS handshake
per request (wrk -H 'Connection: close'; pounder --no-keepalive, with and without resumption).

Needs nginx, taskset, and the peers wrk and ab (Debian: nginx wrk apache2-utils util-linux) and
oha (crates.io); `make bench-peers` installs them, oha into benchmarks/.tools. A missing peer is
skipped and named.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cpucap import Cap, Throttle, cpu_cap
from peers_report import BOUND_SHARE, footnotes, table, verdicts

SERVER_CPU, CLIENT_CPU = "1", "0"
BODY = b"<html><body>pounder peers benchmark</body></html>\n" * 2
TOOLS_DIR = Path(__file__).resolve().parent / ".tools" / "bin"
RUN_SLACK_S = 60  # a client still running this long after its duration is killed

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
        location = /small {{ default_type text/html; return 200 "{body}"; }}
    }}
    server {{
        listen 127.0.0.1:{status_port};
        location / {{ stub_status; }}
    }}
}}
"""
TLS_LISTEN = """listen 127.0.0.1:{port} ssl;
        ssl_certificate {root}/cert.pem;
        ssl_certificate_key {root}/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:peers:10m;"""


# ----------------------------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Nginx:
    port: int
    status_port: int

    def requests(self) -> int:
        """nginx's count of requests so far (stub_status), this read included."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.status_port}/", timeout=10) as answer:
            text = answer.read().decode()
        return int(text.splitlines()[2].split()[2])  # " accepts handled requests" -> its third number


@contextmanager
def nginx_server(root: Path, tls: bool = False) -> Iterator[Nginx]:
    """One nginx worker on SERVER_CPU serving BODY at /index.html (a file) and /small (from memory, the cheaper
    for nginx); stopped (SIGQUIT, then kill) at the end."""
    root.mkdir(exist_ok=True)
    root.chmod(0o755)  # nginx's worker (nobody, when started by root) must read www/: a 403 is no benchmark
    (root / "www").mkdir()
    (root / "tmp").mkdir()
    (root / "www" / "index.html").write_bytes(BODY)
    server = Nginx(free_port(), free_port())
    body = BODY.decode().replace("\n", "\\n")
    text = NGINX_CONF.format(root=root, port=server.port, status_port=server.status_port, body=body)
    if tls:  # the same server over HTTPS, resumption allowed (tickets, and a session cache)
        text = text.replace(f"listen 127.0.0.1:{server.port};", TLS_LISTEN.format(root=root, port=server.port))
    (root / "nginx.conf").write_text(text)
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, "nginx", "-c", str(root / "nginx.conf"), "-p", str(root)])
    try:
        _wait_listening(server.status_port, proc, root)
        yield server
    finally:
        stop(proc, signal.SIGQUIT)


def stop(proc: subprocess.Popen[bytes], signum: int) -> None:
    """Asks a server to stop with ``signum``; killed after 10 s."""
    proc.send_signal(signum)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_listening(port: int, proc: subprocess.Popen[bytes], root: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("peers: nginx did not start: " + (root / "error.log").read_text())


def make_certificate(root: Path) -> None:
    """A self-signed EC P-256 certificate for 127.0.0.1 and localhost: root/cert.pem, root/key.pem."""
    key, cert = str(root / "key.pem"), str(root / "cert.pem")
    args = "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1".split()
    names = "subjectAltName=IP:127.0.0.1,DNS:localhost"
    subprocess.run(
        ["openssl", *args, "-keyout", key, "-out", cert, "-addext", names], check=True, capture_output=True, timeout=60
    )


# ----------------------------------------------------------------------------------- the clients


@dataclass
class Sample:
    """One run of one tool: its own count and rate, its CPU from wait4, nginx's count."""

    requests: int
    rps: float
    cpu_s: float
    nginx_requests: int
    failed: int = 0
    engine_cpu_s: float | None = None  # pounder: its engine threads only (the result's client_cpu)
    io_path: str | None = None  # pounder: the path the result says it ran on
    wall_s: float = 0.0  # from start to reaped
    throttle: Throttle | None = None  # capped runs: the CFS periods it ran in, and was throttled in


@dataclass
class Tool:
    """A client: how to run it for a duration and read its count from what it printed."""

    name: str
    argv: Callable[[str, int, int], list[str]]  # (url, connections, seconds) -> command line
    parse: Callable[[str], tuple[int, float, int, dict[str, object]]]  # -> requests, rps, failed, extra
    expect_io: str | None = None


@dataclass
class Ran:
    """What run_client saw: the client's stdout, CPU, wall time, and its cgroup's throttling (capped runs)."""

    out: str
    cpu_s: float
    wall_s: float
    throttle: Throttle | None


def run_client(argv: list[str], timeout_s: float, cap: Cap | None = None) -> Ran:
    """Run argv pinned to CLIENT_CPU, inside cap's cgroup when given (it enters between fork and exec); its stdout,
    CPU (user + sys, all threads, reaped children, from wait4), wall time, and the periods it was throttled in."""
    before = cap.stat() if cap is not None else None
    with tempfile.TemporaryFile() as err:
        start = time.monotonic()
        enter = cap.enter if cap is not None else None
        proc = subprocess.Popen(
            ["taskset", "-c", CLIENT_CPU, *argv], stdout=subprocess.PIPE, stderr=err, preexec_fn=enter
        )
        assert proc.stdout is not None
        try:
            out = _read_until(proc, start + timeout_s)
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:  # an error or Ctrl-C: the client must not outlive us (nor keep its cgroup busy)
            proc.kill()
            proc.wait()
            raise
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        proc.stdout.close()
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-600:]
            raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {tail or out.decode(errors='replace')[-600:]}")
    throttle = cap.stat() - before if cap is not None and before is not None else None
    return Ran(out.decode(errors="replace"), usage.ru_utime + usage.ru_stime, wall, throttle)


def _read_until(proc: subprocess.Popen[bytes], deadline: float) -> bytes:
    """proc's stdout until it closes it, or until the deadline (then proc is killed)."""
    assert proc.stdout is not None
    out = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            proc.kill()
            return bytes(out)
        if select.select([proc.stdout], [], [], left)[0]:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                return bytes(out)
            out += chunk


def _number(pattern: str, text: str, default: str | None = None) -> str:
    match = re.search(pattern, text)
    if match is None:
        if default is not None:
            return default
        raise RuntimeError(f"cannot find {pattern!r} in: {text[-600:]}")
    return match.group(1)


def parse_pounder(out: str) -> tuple[int, float, int, dict[str, object]]:
    result = json.loads(out)
    cpu = result["client_cpu"]["user_s"] + result["client_cpu"]["sys_s"]
    path = (result.get("io") or {}).get("path")
    requests = result["requests"]
    return (
        requests["complete"],
        result["derived"]["requests_per_s"],
        requests["failed"] + requests["non_2xx"],
        {"engine_cpu_s": cpu, "io_path": path},
    )


def parse_wrk(out: str) -> tuple[int, float, int, dict[str, object]]:
    done = int(_number(r"(\d+) requests in", out))
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    non2xx = int(_number(r"Non-2xx or 3xx responses: (\d+)", out, "0"))
    return done, float(_number(r"Requests/sec:\s+([\d.]+)", out)), errors + non2xx, {}


def parse_ab(out: str) -> tuple[int, float, int, dict[str, object]]:
    done = int(_number(r"Complete requests:\s+(\d+)", out))
    failed = int(_number(r"Failed requests:\s+(\d+)", out, "0")) + int(_number(r"Non-2xx responses:\s+(\d+)", out, "0"))
    return done, float(_number(r"Requests per second:\s+([\d.]+)", out)), failed, {}


def parse_oha(out: str) -> tuple[int, float, int, dict[str, object]]:
    result = json.loads(out)
    statuses = result.get("statusCodeDistribution", {})
    done = sum(statuses.values())
    # the requests cut off at the deadline are "aborted due to deadline": not failures of the server
    errors = sum(n for what, n in result.get("errorDistribution", {}).items() if "deadline" not in what)
    errors += sum(n for status, n in statuses.items() if not status.startswith("2"))
    return done, float(result["summary"]["requestsPerSec"]), errors, {}


def find_oha() -> str | None:
    local = TOOLS_DIR / "oha"
    return str(local) if os.access(local, os.X_OK) else shutil.which("oha")


def pounder_argv(*extra: str) -> Callable[[str, int, int], list[str]]:
    """pounder bench with one engine thread, the JSON result on stdout."""
    py = [sys.executable, "-m", "pounder", "bench"]
    return lambda u, c, d: [*py, u, "-c", str(c), "-t", "1", "-d", f"{d}s", *extra, "--json", "-"]


def wrk_argv(*extra: str) -> Callable[[str, int, int], list[str]]:
    return lambda u, c, d: ["wrk", "-t1", f"-c{c}", f"-d{d}s", *extra, u]


def ab_argv(*extra: str) -> Callable[[str, int, int], list[str]]:
    # -t alone would stop at 50,000 requests: -n after it lifts that
    return lambda u, c, d: ["ab", *extra, "-q", "-c", str(c), "-t", str(d), "-n", "100000000", u]


def oha_argv(oha: str, *extra: str) -> Callable[[str, int, int], list[str]]:
    fixed = ["--worker-threads", "1", "--no-tui", "--output-format", "json", *extra]
    return lambda u, c, d: [oha, "-z", f"{d}s", "-c", str(c), *fixed, u]


def plain_tools(keepalive: bool, only: set[str] | None) -> tuple[list[Tool], list[str]]:
    """The tools of one plain-HTTP mode, and the peers missing (named, with where to get them)."""
    no_ka = () if keepalive else ("--no-keepalive",)
    oha = find_oha()
    candidates: list[tuple[Tool, str | None]] = [
        (Tool("pounder uring", pounder_argv("--io", "uring", *no_ka), parse_pounder, "uring"), None),
        (Tool("pounder epoll", pounder_argv("--io", "epoll", *no_ka), parse_pounder, "epoll"), None),
        (
            Tool("wrk", wrk_argv() if keepalive else wrk_argv("-H", "Connection: close"), parse_wrk),
            None if shutil.which("wrk") else "wrk (Debian: wrk)",
        ),
        (
            Tool("ab", ab_argv("-k") if keepalive else ab_argv(), parse_ab),
            None if shutil.which("ab") else "ab (Debian: apache2-utils)",
        ),
        (
            Tool("oha", oha_argv(oha or "oha", *(() if keepalive else ("--disable-keepalive",))), parse_oha),
            None if oha else "oha (crates.io: make bench-peers builds it into benchmarks/.tools)",
        ),
    ]
    wanted = [(t, missing) for t, missing in candidates if only is None or t.name in only]
    return [t for t, missing in wanted if missing is None], [missing for _, missing in wanted if missing is not None]


def tls_tools(handshake_per_request: bool) -> list[Tool]:
    """pounder (epoll: HTTPS runs there) and wrk over HTTPS."""
    if not handshake_per_request:
        return [Tool("pounder", pounder_argv("--insecure"), parse_pounder), Tool("wrk", wrk_argv(), parse_wrk)]
    return [
        Tool("pounder full", pounder_argv("--insecure", "--no-keepalive", "--no-tls-resume"), parse_pounder),
        Tool("pounder resumed", pounder_argv("--insecure", "--no-keepalive"), parse_pounder),
        Tool("wrk", wrk_argv("-H", "Connection: close"), parse_wrk),
    ]


def sample(tool: Tool, server: Nginx, url: str, connections: int, seconds: int, cap: Cap | None = None) -> Sample:
    before = server.requests()
    ran = run_client(tool.argv(url, connections, seconds), seconds + RUN_SLACK_S, cap)
    seen = server.requests() - before - 1  # less the second status read itself
    done, rps, failed, extra = tool.parse(ran.out)
    path = extra.get("io_path")
    if tool.expect_io is not None and path != tool.expect_io:
        raise RuntimeError(f"{tool.name}: the result says it ran on {path!r}, not {tool.expect_io!r}")
    engine = extra.get("engine_cpu_s")
    engine_s = float(engine) if isinstance(engine, float | int) else None
    io_path = None if path is None else str(path)
    return Sample(done, rps, ran.cpu_s, seen, failed, engine_s, io_path, ran.wall_s, ran.throttle)


# ----------------------------------------------------------------------------------- measuring


@dataclass
class Round:
    short: Sample
    long: Sample
    span_s: int  # long - short, seconds

    @property
    def extra_requests(self) -> int:
        return self.long.requests - self.short.requests

    @property
    def us_per_request(self) -> float:
        """Marginal client CPU per request: (CPU long - CPU short) / (requests long - requests short)."""
        n = self.extra_requests
        return (self.long.cpu_s - self.short.cpu_s) / n * 1e6 if n > 0 else float("nan")

    @property
    def engine_us_per_request(self) -> float | None:
        if self.long.engine_cpu_s is None or self.short.engine_cpu_s is None or self.extra_requests <= 0:
            return None
        return (self.long.engine_cpu_s - self.short.engine_cpu_s) / self.extra_requests * 1e6

    @property
    def core_busy(self) -> float:
        """The share of its core the tool used over the extra seconds."""
        return (self.long.cpu_s - self.short.cpu_s) / self.span_s


@dataclass
class Mode:
    """One mode's tools and what each did in every round."""

    title: str
    tools: list[Tool]
    missing: list[str] = field(default_factory=list)
    rounds: dict[str, list[Round]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # a tool that failed: its message (no more rounds)
    count_notes: list[str] = field(default_factory=list)
    cap: Cap | None = None  # the clients run in this cgroup, held to a fraction of their core
    skipped: str | None = None  # why the mode was not measured


def measure(mode: Mode, server: Nginx, url: str, args: argparse.Namespace) -> None:
    """args.rounds rounds; in each every tool runs short then long, the tools in turn, the first moving along."""
    mode.rounds = {tool.name: [] for tool in mode.tools}
    if mode.skipped:
        return
    for r in range(args.rounds):
        order = mode.tools[r % len(mode.tools) :] + mode.tools[: r % len(mode.tools)]
        for tool in order:
            if tool.name in mode.errors:
                continue
            try:
                short = sample(tool, server, url, args.connections, args.short, mode.cap)
                long = sample(tool, server, url, args.connections, args.long, mode.cap)
            except (RuntimeError, subprocess.SubprocessError, json.JSONDecodeError, KeyError) as error:
                mode.errors[tool.name] = str(error).strip().splitlines()[-1][:300]
                print(f"peers: {mode.title}: {tool.name} failed, left out: {mode.errors[tool.name]}", file=sys.stderr)
                continue
            mode.rounds[tool.name].append(Round(short, long, args.long - args.short))
            for s in (short, long):
                check_count(mode, tool.name, s, args.connections)
        print(f"peers: {mode.title}: round {r + 1} of {args.rounds} done", file=sys.stderr)


def check_count(mode: Mode, name: str, s: Sample, connections: int) -> None:
    """A tool's count is nginx's, less at most the requests in flight when it stopped (one per connection)."""
    if not 0 <= s.nginx_requests - s.requests <= connections + s.failed:
        mode.count_notes.append(f"{name}: counted {s.requests} (failed {s.failed}), nginx served {s.nginx_requests}")
    elif s.failed:
        mode.count_notes.append(f"{name}: {s.failed} failed of {s.requests + s.failed}")


# ----------------------------------------------------------------------------------- reporting


def method_line(args: argparse.Namespace, tls: bool) -> str:
    return (
        f"Method: nginx 1 worker on cpu {SERVER_CPU}{' over HTTPS (self-signed EC P-256)' if tls else ''} serving "
        f"100 bytes {'from a file' if args.static else 'from memory (return 200)'}, "
        f"each client pinned to cpu {CLIENT_CPU} with one thread (pounder -t 1, wrk -t1, oha --worker-threads 1, "
        f"ab), {args.connections} "
        f"connections, {args.rounds} interleaved rounds; CPU per request is the marginal cost: client CPU "
        f"(user + sys, wait4) of a {args.long} s run less a {args.short} s run over the extra requests "
        "completed; requests/s from the long run; medians, and each round's ratio to wrk (median, min-max)."
        + (
            f" Capped mode: each client in a cgroup with a CPU quota of {args.client_cpu:.2f} of a core (CFS period "
            f"100 ms), so that the client core is the limit; a round counts as bound when the long run was "
            f"throttled and the tool used >= {BOUND_SHARE:.0%} of its quota between the short and the long run "
            "(CPU over wall time); requests/s is judged there."
            if args.mode in ("all", "capped") and not tls
            else ""
        )
    )


def report(modes: dict[str, Mode], args: argparse.Namespace, tls: bool) -> None:
    text, md = [method_line(args, tls), ""], [method_line(args, tls), ""]
    for mode in modes.values():
        text += [mode.title, *table(mode, False), *footnotes(mode), ""]
        notes = [f"- {n}" for n in footnotes(mode)]
        md += [f"**{mode.title}**", "", *table(mode, True), "", *(notes + [""] if notes else [])]
    if not tls:
        v = verdicts(modes)
        text += v
        md += ["Verdicts (issue 30):", "", *(f"- {line}" for line in v)]
    print("\n".join(text))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(md).rstrip() + "\n")
        print(f"\nMarkdown written to {args.markdown}")


# ----------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--short", type=int, default=3, help="seconds of the short run of each pair (default 3)")
    ap.add_argument("--long", type=int, default=6, help="seconds of the long run of each pair (default 6)")
    ap.add_argument("--connections", type=int, default=50, help="connections per client (default 50)")
    ap.add_argument(
        "--mode",
        choices=("all", "both", "keepalive", "close", "capped"),
        default="all",
        help="keep-alive, a new connection per request, both, keep-alive with the client capped (--client-cpu), or "
        "all three (default)",
    )
    ap.add_argument(
        "--client-cpu",
        type=float,
        default=0.5,
        metavar="FRACTION",
        help="the capped mode: each client held to this fraction of its core by a cgroup CPU quota, so that the "
        "client core, not the server, is the limit (default 0.5)",
    )
    ap.add_argument("--only", metavar="TOOL,...", help="only these tools (names as in the table; wrk is the baseline)")
    ap.add_argument(
        "--static",
        action="store_true",
        help="nginx serves the body from a file (/index.html), not from memory (/small, the default: the cheaper "
        "for nginx, so that the client core is the limit)",
    )
    ap.add_argument("--markdown", metavar="FILE", help="also write the tables and verdicts as Markdown")
    ap.add_argument(
        "--tls", action="store_true", help="over HTTPS: pounder and wrk, keep-alive and a handshake per request"
    )
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.connections < 1 or not 0 < args.short < args.long:
        ap.error("--rounds and --connections must be >= 1 and 0 < --short < --long")
    if not 0.01 <= args.client_cpu <= 1:
        ap.error("--client-cpu is a fraction of one core: 0.01 to 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    needed = ("nginx", "taskset", "wrk", "openssl") if args.tls else ("nginx", "taskset")
    missing = [t for t in needed if shutil.which(t) is None]
    if missing:
        print(f"peers: needs {', '.join(missing)} (Debian: nginx util-linux wrk openssl)", file=sys.stderr)
        return 2
    only = None if args.only is None else {name.strip() for name in args.only.split(",")}
    modes: dict[str, Mode] = {}
    if args.tls:
        modes["tls-keepalive"] = Mode("HTTPS, keep-alive", tls_tools(False))
        title = "HTTPS, a handshake per request (pounder full: --no-tls-resume; wrk resumes no session)"
        modes["tls-close"] = Mode(title, tls_tools(True))
    wanted = {"all": ("keepalive", "close", "capped"), "both": ("keepalive", "close")}.get(args.mode, (args.mode,))
    for key, title, keepalive in (
        ("keepalive", "keep-alive", True),
        ("close", "a new connection per request", False),
        ("capped", f"keep-alive, each client capped at {args.client_cpu:.2f} core (the client core the limit)", True),
    ):
        if not args.tls and key in wanted:
            tools, absent = plain_tools(keepalive, only)
            modes[key] = Mode(title, tools, absent)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the finally blocks stop nginx, drop the cgroup
    with tempfile.TemporaryDirectory(prefix="pounder-peers-") as tmp, ExitStack() as stack:
        if "capped" in modes:
            capped = modes["capped"]
            capped.cap = stack.enter_context(cpu_cap(args.client_cpu))
            capped.skipped = capped.cap.error
            if capped.skipped:
                print(f"peers: {capped.title}: skipped: {capped.skipped}", file=sys.stderr)
        if args.tls:
            make_certificate(Path(tmp))
        with nginx_server(Path(tmp), tls=args.tls) as server:
            path = "/index.html" if args.static else "/small"
            url = f"{'https' if args.tls else 'http'}://127.0.0.1:{server.port}{path}"
            for mode in modes.values():
                for name in mode.missing:
                    print(f"peers: {mode.title}: skipped, not found: {name}", file=sys.stderr)
                measure(mode, server, url, args)
    report(modes, args, args.tls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
