#!/usr/bin/env python3
"""The hostile pass of issue 25, run again: every family of faults and bad inputs it tried, each
case a small declarative entry (the command, what to set up, the exit status, the stderr
expected, the files that may change), and the promises every case is held to:

- exit status as the docs say; exit 2 (bad input) is exactly one stderr line ``pounder: error: ...``
  and nothing sent (the case's server saw no connection) or started; every other failure one
  ``pounder: error:`` line; no traceback; numbers in messages not printed as 1e+09 or with 20 digits;
- no process left: every process pounder started (its descendants, seen every 0.1 s while it
  runs, and every process carrying the case's mark) is gone a few seconds after pounder exits,
  and no new orphan (a pounder, a case server, a Ray process adopted by init) appears;
- no file that existed before the case changed, unless it is a named output (every file in the
  case's directory hashed before and after, mounts included); no temporary file left by a run
  that ended by itself;
- a time limit per case (a hang is a failure), and max RSS at most 200 MB.

    python3 tests/families/run.py [--family NAME[,NAME]] [--case SUBSTRING] [-v] [--keep] [--list]

Needs root (tmpfs mounts, unshare, prlimit), strace, psutil. Servers are tests/families/servers.py,
on 127.0.0.1 (and ::1) free ports only; nothing is sent to another address. Prints one line per
case and "N of M cases handled as promised"; exits 0 only when every case passed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the round-3 family modules (round3_*.py) import this file's helpers as ``run``: one module, not two
sys.modules.setdefault("run", sys.modules[__name__])

from harness import (  # noqa: E402
    CASE_MARK,
    JANITOR,
    POUNDER,
    PY,
    SERVERS,
    Case,
    Check,
    Ctx,
    Result,
    Runner,
    flock_holder,
    start_server,
)

P = "@POUNDER@"
DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJ = '{"a":' * 60_000 + "1" + "}" * 60_000
RANDOM = random.Random(25)
BINARY = bytes(RANDOM.randrange(256) for _ in range(4096))
FIXTURES: dict[str, Path] = {}

# ------------------------------------------------------------------------------------------------
# Checks (each returns the reasons it failed, none when it passed)


def _bench(ctx: Ctx, rel: str) -> dict:
    return ctx.json(rel)


def counts_add_up(rel: str = "out.json") -> Check:
    def counts_add_up(ctx: Ctx, res: Result) -> Iterable[str]:
        d = _bench(ctx, rel)
        req, errs = d["requests"], d["errors"]
        if req["failed"] != sum(errs.values()):
            yield f"failed {req['failed']} != sum of error classes {sum(errs.values())} {errs}"
        series = d.get("series") or []
        for key in ("complete", "failed"):
            total = sum(s[key] for s in series)
            if total != req[key]:
                yield f"series {key} adds up to {total}, requests.{key} is {req[key]}"
        if any(v < 0 for v in [*req.values(), *errs.values(), *d["bytes"].values()]):
            yield "a negative count"
        answered = sum(n for code, n in d.get("status", {}).items() if code[:1] in ("2", "3"))
        if res.rc is not None and res.rc not in (130, 143) and (answered > 0) != (res.rc == 0):
            yield (
                f"exit {res.rc} with {answered} answer(s) 2xx or 3xx of {req['complete']} complete "
                "(0 when one was, 1 when none was)"
            )
        sent = ctx.vars.get("counts", {}).get("requests", 0)
        if sent > 0 and d["bytes"]["sent"] == 0:
            yield f"Bytes sent: 0 although the server read {sent} request(s)"

    return counts_add_up


def nothing_asked(ctx: Ctx, res: Result) -> Iterable[str]:
    """The case's server read no request (a connection that asked nothing, such as the TLS probe's, is allowed)."""
    asked = ctx.vars.get("counts", {}).get("requests", 0)
    if asked:
        yield f"the server read {asked} request(s)"


def error_class(*classes: str, rel: str = "out.json") -> Check:
    def error_class(ctx: Ctx, res: Result) -> Iterable[str]:
        d = _bench(ctx, rel)
        if not any(d["errors"].get(c, 0) > 0 or (c == "complete" and d["requests"]["complete"] > 0) for c in classes):
            yield f"expected {' or '.join(classes)} > 0, got complete {d['requests']['complete']}, errors {d['errors']}"

    return error_class


def figures_printed(ctx: Ctx, res: Result) -> Iterable[str]:
    if "Complete requests:" not in res.out and "req/s" not in res.out:
        yield "the figures measured were not printed"


def if_rc(rc: int, check: Check) -> Check:
    """``check`` only when the exit status is ``rc``."""

    def if_rc(ctx: Ctx, res: Result) -> Iterable[str]:
        return check(ctx, res) if res.rc == rc else ()

    if_rc.__name__ = getattr(check, "__name__", "check")
    return if_rc


def names(*words: str) -> Check:
    def names(ctx: Ctx, res: Result) -> Iterable[str]:
        line = " ".join(res.error_lines())
        for word in words:
            word = ctx.subst([word])[0]
            if word not in line:
                yield f"the error line does not name {word!r}: {line[:160]!r}"

    return names


def interrupted_result(rel: str = "out.json") -> Check:
    def interrupted_result(ctx: Ctx, res: Result) -> Iterable[str]:
        path = ctx.path(rel)
        if not path.exists():
            yield f"no partial result {rel} written"
            return
        d = json.loads(path.read_text())
        if d.get("interrupted") is not True:
            yield f"{rel}: interrupted is {d.get('interrupted')!r}, not true"
        done = ctx.run([P, "report", rel, "-o", f"_page_{ctx.index}.html"], timeout=60)
        if done.returncode != 0:
            yield f"pounder report {rel}: exit {done.returncode}: {done.stderr.strip()[:150]}"

    return interrupted_result


def tsv_whole(rel: str = "out.tsv") -> Check:
    def tsv_whole(ctx: Ctx, res: Result) -> Iterable[str]:
        path = ctx.path(rel)
        if not path.exists():
            yield f"{rel} not written"
            return
        lines = path.read_text().split("\n")
        if lines[-1] != "":
            yield f"{rel} cut mid-line"
        rows = [line for line in lines[1:] if line]
        if not rows:
            yield f"{rel} has no request line"
        bad = [r for r in rows if len(r.split("\t")) != len(lines[0].split("\t"))]
        if bad:
            yield f"{rel}: {len(bad)} lines with a wrong number of fields"

    return tsv_whole


def nonempty(*rels: str) -> Check:
    def nonempty(ctx: Ctx, res: Result) -> Iterable[str]:
        for rel in rels:
            p = ctx.path(rel)
            if not p.exists() or p.stat().st_size == 0:
                yield f"{rel} missing or empty"

    return nonempty


def same_content(rel: str, content: bytes) -> Check:
    def same_content(ctx: Ctx, res: Result) -> Iterable[str]:
        p = ctx.path(rel)
        if not p.exists() or p.read_bytes() != content:
            yield f"{rel} does not hold its old content"

    return same_content


def no_connect_to(*addresses: str) -> Check:
    def no_connect_to(ctx: Ctx, res: Result) -> Iterable[str]:
        log = Path(ctx.vars["LOG"])
        if not log.exists():
            yield "strace wrote no log"
            return
        text = log.read_text()
        for line in text.splitlines():
            if "connect(" in line and any(f'"{a}"' in line for a in addresses):
                yield f"connect() to a non-loopback address: {line.strip()[:140]}"
                return

    return no_connect_to


def rate_within(rate: float, duration: float, pct: float = 1.0, rel: str = "out.json") -> Check:
    def rate_within(ctx: Ctx, res: Result) -> Iterable[str]:
        d = _bench(ctx, rel)
        rps = d["derived"]["requests_per_s"]
        if abs(rps - rate) > rate * pct / 100:
            yield (
                f"req/s {rps:.4f}, not within {pct:g} % of {rate:g} (elapsed_s {d['elapsed_s']:.3f}, complete "
                f"{d['requests']['complete']})"
            )
        if abs(d["elapsed_s"] - duration) > duration * pct / 100:
            yield f"elapsed_s {d['elapsed_s']:.3f}, not the schedule's {duration:g} s"

    return rate_within


def elapsed_is(duration: float, pct: float = 1.0, rel: str = "out.json") -> Check:
    def elapsed_is(ctx: Ctx, res: Result) -> Iterable[str]:
        d = _bench(ctx, rel)
        if abs(d["elapsed_s"] - duration) > duration * pct / 100:
            yield f"elapsed_s {d['elapsed_s']:.3f}, not the schedule's {duration:g} s"
        done = d["requests"]["complete"]
        if d["elapsed_s"] > 0 and abs(d["derived"]["requests_per_s"] - done / d["elapsed_s"]) > 1e-6 * max(1, done):
            yield "requests_per_s is not complete / elapsed_s"

    return elapsed_is


def throttled(rate_bps: float, pct: float = 5.0, rel: str = "out.json") -> Check:
    def throttled(ctx: Ctx, res: Result) -> Iterable[str]:
        d = _bench(ctx, rel)
        size = d["bytes"]["total"]
        took = d["latency"]["uncorrected"]["max_us"] / 1e6
        expect = size / rate_bps
        ctx.notes.append(
            f"{size} B at {rate_bps:g} B/s: {took:.3f} s, size/rate {expect:.3f} s ({(took / expect - 1) * 100:+.1f} %)"
        )
        if d["requests"]["complete"] != 1:
            yield f"complete {d['requests']['complete']}, not 1"
        if abs(took - expect) > expect * pct / 100:
            yield f"{size} B at {rate_bps:g} B/s took {took:.3f} s; size/rate is {expect:.3f} s (±{pct:g} % promised)"

    return throttled


# ------------------------------------------------------------------------------------------------
# Set-up helpers


def files(**spec: str | bytes) -> callable:
    def setup(ctx: Ctx) -> None:
        for rel, data in spec.items():
            ctx.write(rel.replace("__", "."), data)

    return setup


def chain(*steps):
    def setup(ctx: Ctx) -> None:
        for step in steps:
            step(ctx)

    return setup


def fifo(rel: str):
    def setup(ctx: Ctx) -> None:
        os.mkfifo(ctx.path(rel))

    return setup


def sparse(rel: str, size: int):
    def setup(ctx: Ctx) -> None:
        with open(ctx.path(rel), "wb") as f:
            f.truncate(size)

    return setup


def mkdir(rel: str):
    def setup(ctx: Ctx) -> None:
        ctx.path(rel).mkdir(parents=True, exist_ok=True)

    return setup


def hardlink(src: str, dst: str):
    def setup(ctx: Ctx) -> None:
        os.link(ctx.path(src), ctx.path(dst))

    return setup


def symlink(target: str, rel: str):
    def setup(ctx: Ctx) -> None:
        os.symlink(target, ctx.path(rel))

    return setup


def url_file(rel: str = "urls.txt", extra: str = ""):
    def setup(ctx: Ctx) -> None:
        ctx.write(rel, f"# targets\n{ctx.url}\n2 {ctx.url}a\n{extra}")

    return setup


def fixture(name: str, rel: str):
    def setup(ctx: Ctx) -> None:
        src = FIXTURES[name]
        if src.is_dir():
            shutil.copytree(src, ctx.path(rel), symlinks=True)
        else:
            shutil.copyfile(src, ctx.path(rel))

    return setup


def mutated_result(rel: str, mutate) -> callable:
    def setup(ctx: Ctx) -> None:
        d = json.loads(FIXTURES["bench"].read_text())
        mutate(d)
        ctx.write(rel, json.dumps(d))

    return setup


def experiment(rel: str = "exp.toml", urls: tuple[str, str] | None = None, duration: str = "500ms", trials: int = 3):
    def setup(ctx: Ctx) -> None:
        a, b = urls or (ctx.url, ctx.url + "b")
        ctx.write(
            rel,
            f'title = "families"\nrecord = ["rps", "latency"]\n\n[server]\nadapter = "url"\n\n'
            f'[[load]]\nconnections = 2\nduration = "{duration}"\ntrials = {trials}\n\n'
            f'[[variant]]\nlabel = "a"\nurl = "{a}"\n\n[[variant]]\nlabel = "b"\nurl = "{b}"\n',
        )

    return setup


def tune_command(tag: str = "@TAG@", shell: bool = False, workers: bool = True) -> str:
    inner = f"@PY@ @SRV@ --mode prefork --port {{port}} --max-requests {{max_requests}} --tag {tag}"
    inner += " --workers {workers}" if workers else " --workers 2"
    if shell:
        return f"bash -c '{inner}; echo stopped'"
    return inner


TUNE_QUICK = [
    "--quick",
    "--ram",
    "256M",
    "--max-children",
    "2",
    "--no-confirm",
    "--point-duration",
    "1s",
    "--requests-per-child",
    "20",
    "--mrpc",
    "0,100",
]


def when_marked(after: float = 1.0):
    """A trigger: the case's server has been running for ``after`` seconds."""

    def trigger(ctx: Ctx, now: float) -> bool:
        import psutil

        for proc in psutil.process_iter(["cmdline", "create_time"]):
            cmd = " ".join(proc.info["cmdline"] or [])
            if (
                ctx.tag in cmd
                and "servers.py" in cmd
                and "pounder" not in cmd.split(" ")[0]
                and "/bin/pounder" not in cmd
                and time.time() - proc.info["create_time"] >= after
            ):
                return True
        return False

    return trigger


# ------------------------------------------------------------------------------------------------
# DNS: a listener on a loopback address, port 53, recording every packet


class DnsTrap:
    def __init__(self) -> None:
        self.sock = None
        for last in range(77, 90):
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((f"127.0.0.{last}", 53))
                self.sock, self.address = s, f"127.0.0.{last}"
                break
            except OSError:
                s.close()
        if self.sock is None:
            raise RuntimeError("cannot bind a UDP socket to port 53 on 127.0.0.77-89")
        self.sock.settimeout(0.2)
        self.packets: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            try:
                data, _ = self.sock.recvfrom(4096)
                self.packets.append(data)
            except OSError:
                continue

    def names(self) -> list[str]:
        out = []
        for p in self.packets:
            labels, i = [], 12
            while i < len(p) and p[i]:
                n = p[i]
                labels.append(p[i + 1 : i + 1 + n].decode("latin-1"))
                i += n + 1
            out.append(".".join(labels))
        return out

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def with_resolver(ctx: Ctx) -> None:
    trap = DnsTrap()
    ctx.vars["trap"] = trap
    conf = ctx.logdir / f"{ctx.index}.resolv.conf"
    conf.write_text(f"nameserver {trap.address}\noptions timeout:1 attempts:1\n")
    ctx.vars["RESOLV"] = str(conf)


def no_dns(ctx: Ctx, res: Result) -> Iterable[str]:
    trap: DnsTrap = ctx.vars["trap"]
    time.sleep(0.1)
    trap.close()
    if trap.packets:
        yield f"{len(trap.packets)} DNS quer(ies) left pounder: {trap.names()[:3]}"


def hosts(lines: str):
    def setup(ctx: Ctx) -> None:
        path = ctx.logdir / f"{ctx.index}.hosts"
        path.write_text(ctx.subst([lines])[0])
        ctx.vars["HOSTS"] = str(path)

    return setup


def in_ns(bind: str, target: str, argv: list[str]) -> list[str]:
    """argv run in a mount namespace of its own, with ``bind`` mounted over ``target``."""
    return ["unshare", "-m", "sh", "-c", f'mount --bind "$0" {target} && exec "$@"', bind, *argv]


def strace(argv: list[str]) -> list[str]:
    return ["strace", "-f", "-qq", "-e", "trace=connect", "-o", "@LOG@", *argv]


def log_path(ctx: Ctx) -> None:
    ctx.vars["LOG"] = str(ctx.logdir / f"{ctx.index}.strace")


# ------------------------------------------------------------------------------------------------
# The families


def fam_options() -> list[Case]:
    bad = {
        "c-zero": ["-c", "0"],
        "c-negative": ["-c", "-1"],
        "c-word": ["-c", "abc"],
        "c-exp": ["-c", "1e12"],
        "c-fraction": ["-c", "2.5"],
        "n-zero": ["-n", "0"],
        "n-negative": ["-n", "-5"],
        "n-20-digits": ["-n", "99999999999999999999"],
        "n-over-limit": ["-n", "10000000001"],
        "d-zero": ["-d", "0s"],
        "d-negative": ["-d", "-1s"],
        "d-25h": ["-d", "25h"],
        "d-1e400": ["-d", "1e400"],
        "d-nan": ["-d", "nan"],
        "rate-zero": ["--rate", "0"],
        "rate-negative": ["--rate", "-5"],
        "rate-word": ["--rate", "abc"],
        "rate-exp": ["--rate", "1e12"],
        "rate-ramp-bad": ["--rate", "10..abc"],
        "timeout-zero": ["--timeout", "0"],
        "timeout-negative": ["--timeout", "-1s"],
        "timeout-huge": ["--timeout", "1e400"],
        "throttle-zero": ["--throttle", "0"],
        "throttle-word": ["--throttle", "fast"],
        "t-zero": ["-t", "0"],
        "t-huge": ["-t", "100000"],
        "warmup-negative": ["--warmup", "-1"],
        "header-content-length": ["-H", "Content-Length: 5"],
        "header-transfer-encoding": ["-H", "Transfer-Encoding: chunked"],
        "header-no-colon": ["-H", "no colon here"],
        "header-crlf": ["-H", "X-A: b\r\nX-B: c"],
        "header-nul": ["-H", "X-A: b\x01c"],
        "header-empty-name": ["-H", ": value"],
        "method-space": ["-m", "GE T"],
        "method-empty": ["-m", ""],
        "method-crlf": ["-m", "GET\r\nX"],
        "stages-bad": ["--stages", "bad"],
        "stages-and-rate": ["--stages", "1s@10", "--rate", "5"],
        "stages-and-n": ["--stages", "1s@10", "-n", "5"],
        "stages-zero": ["--stages", "0s@10"],
        "order-bogus": ["--order", "bogus"],
        "max-in-flight-closed": ["--max-in-flight", "5"],
        "max-in-flight-zero": ["--rate", "10", "--max-in-flight", "0"],
        "calls-per-conn-negative": ["--calls-per-conn", "-1"],
        "sample-interval-alone": ["--sample-interval", "0"],
        "server-pid-zero": ["--server-pid", "0"],
        "server-pid-missing": ["--server-pid", "99999999"],
        "server-pidfile-missing": ["--server-pidfile", "nope.pid"],
        "server-status-alone": ["--server-status", "@URL@server-status"],
        "agents-without-ray": ["--agents", "3"],
        "ray-client-address": ["--ray", "ray://127.0.0.1:10001"],
        "ray-garbage": ["--ray", "not an address"],
        "cookie-bad": ["--cookie", "nocookie"],
        "auth-bad": ["-A", "nocolon"],
        "log-methods-alone": ["--log-methods", "GET"],
        "exclude-static-alone": ["--exclude-static"],
        "unix-socket-too-long": ["--unix-socket", "/tmp/" + "s" * 120 + ".sock"],
        "unknown-option": ["--frobnicate"],
        "body-missing-file": ["-b", "@missing.bin"],
        "json-empty-path": ["--json", ""],
        "url-and-url-file": ["-f", "urls.txt"],
    }
    cases = []
    for name, extra in bad.items():
        setup = url_file() if name == "url-and-url-file" else None
        cases.append(
            Case(
                "options",
                name,
                [P, "bench", "@URL@", "-d", "1s", *extra]
                if name
                not in (
                    "n-zero",
                    "n-negative",
                    "n-20-digits",
                    "n-over-limit",
                    "stages-and-n",
                    "stages-bad",
                    "stages-zero",
                    "d-zero",
                    "d-negative",
                    "d-25h",
                    "d-1e400",
                    "d-nan",
                    "d-inf",
                    "d-word",
                )
                else [P, "bench", "@URL@", *extra],
                rc=2,
                setup=setup,
                timeout=15,
            )
        )
    # the other commands' options
    more = {
        "compare-one-url": [P, "compare", "@URL@"],
        "compare-trials-2": [P, "compare", "@URL@", "@URL@x", "--trials", "2"],
        "compare-label-count": [P, "compare", "@URL@", "@URL@x", "--label", "a"],
        "compare-baseline-unknown": [P, "compare", "@URL@", "@URL@x", "--baseline", "nope"],
        "compare-min-effect-negative": [P, "compare", "@URL@", "@URL@x", "--min-effect", "-1"],
        "compare-c-zero": [P, "compare", "@URL@", "@URL@x", "-c", "0"],
        "compare-chart-format": [P, "compare", "@URL@", "@URL@x", "--chart", "c.gif"],
        "mem-nothing": [P, "mem"],
        "mem-pid-zero": [P, "mem", "--server-pid", "0"],
        "mem-watch-zero": [P, "mem", "--server-pid", "1", "--watch", "0s"],
        "mem-ram-bad": [P, "mem", "--server-pid", "1", "--ram", "lots"],
        "mem-count-without-watch": [P, "mem", "--server-pid", "1", "--count", "3"],
        "syscalls-n-zero": [P, "syscalls", "@URL@", "--server-pid", "1", "-n", "0"],
        "syscalls-n-over": [P, "syscalls", "@URL@", "--server-pid", "1", "-n", "200000"],
        "syscalls-no-server": [P, "syscalls", "@URL@"],
        "report-nothing": [P, "report"],
        "report-missing": [P, "report", "missing.json"],
        "run-missing": [P, "run", "missing.toml"],
        "tune-nothing": [P, "tune"],
        "tune-unknown-server": [P, "tune", "lighttpd", "x.conf"],
        "tune-trials-2": [P, "tune", "command", tune_command(), "--trials", "2"],
        "tune-ram-bad": [P, "tune", "command", tune_command(), "--ram", "0"],
        "tune-p99-bad": [P, "tune", "command", tune_command(), "--p99", "fast"],
        "tune-mrpc-bad": [P, "tune", "command", tune_command(), "--mrpc", "a,b"],
        "tune-no-port": [P, "tune", "command", "@PY@ @SRV@ --mode prefork --tag @TAG@"],
        "tune-bad-placeholder": [P, "tune", "command", tune_command() + " {nope}"],
        "tune-unbalanced-quote": [P, "tune", "command", tune_command() + " 'x"],
        "tune-missing-program": [P, "tune", "command", "/nonexistent/server --port {port}"],
        "tune-no-proxy-alone": [P, "tune", "command", tune_command(), "--no-proxy"],
        "tune-stop-signal-bad": [P, "tune", "command", tune_command(), "--stop-signal", "NOPE"],
        "tune-resume-missing": [P, "tune", "--resume", "missing-dir"],
        "tune-results-not-empty": [P, "tune", "command", tune_command(), "--results", "."],
    }
    for name, argv in more.items():
        setup = files(**{"a__txt": "x"}) if name == "tune-results-not-empty" else None
        cases.append(Case("options", name, argv, rc=2, setup=setup, timeout=15, no_start=name.startswith("tune")))
    return cases


def fam_urls() -> list[Case]:
    bad = {
        "https": "https://127.0.0.1:@PORT@/",
        "ftp": "ftp://127.0.0.1:@PORT@/",
        "no-host": "http://",
        "port-99999": "http://127.0.0.1:99999/",
        "port-zero": "http://127.0.0.1:0/",
        "port-negative": "http://127.0.0.1:-1/",
        "port-twice": "http://127.0.0.1:@PORT@:80/",
        "open-bracket": "http://[::1/",
        "no-scheme": "127.0.0.1:@PORT@/",
        "empty": "",
        "credentials": "http://user:pw@127.0.0.1:@PORT@/",
        "space-in-host": "http://127.0.0 .1:@PORT@/",
        "link-local-zone": "http://[fe80::1%25eth0]:@PORT@/",
        "unix-scheme": "unix:///tmp/x.sock",
    }
    # https:// to a plain-HTTP server: refused after the pre-flight handshake (docs/guide/bench.md, HTTPS), no request
    cases = [
        Case(
            "urls",
            name,
            [P, "bench", url, "-n", "1"],
            rc=2,
            timeout=15,
            **({"contact": True, "checks": (nothing_asked,)} if name == "https" else {}),
        )
        for name, url in bad.items()
    ]

    def request_head_clean(ctx: Ctx, res: Result) -> Iterable[str]:
        rec = Path(ctx.vars["REC"])
        if res.rc == 0 and rec.exists():
            head = rec.read_bytes()
            if re.search(rb"(?mi)^x-injected:", head):
                yield "a header was injected through the URL"
            line = head.split(b"\r\n", 1)[0]
            if re.search(rb"[\x00-\x1f\x7f]", line):
                yield f"a control character was sent in the request line: {line[:80]!r}"

    # accepted (a browser strips tabs and newlines) or refused; never sent as they are
    for name, url in (
        ("crlf-in-path", "http://127.0.0.1:@PORT@/a\r\nX-Injected: 1"),
        ("control-char-in-path", "http://127.0.0.1:@PORT@/a\x01b"),
        ("control-char-in-query", "http://127.0.0.1:@PORT@/?q=\x1b[31m"),
        ("del-in-path", "http://127.0.0.1:@PORT@/a\x7fb"),
    ):
        cases.append(
            Case(
                "urls",
                name,
                [P, "bench", url, "-n", "1", "-c", "1"],
                rc=(0, 2),
                server_extra=("--record-file", "@REC@"),
                checks=(request_head_clean,),
            )
        )
    cases.append(
        Case(
            "urls",
            "long-100kb",
            [P, "bench", "http://127.0.0.1:@PORT@/" + "a" * 100_000, "-n", "1", "-c", "1"],
            rc=(0, 2),
            note="no promise on the length: no hang, no traceback",
        )
    )
    cases.append(
        Case(
            "urls",
            "compare-https",
            [P, "compare", "@URL@", "https://127.0.0.1:@PORT@/"],
            rc=2,
            contact=True,
            checks=(nothing_asked,),
        )
    )
    cases.append(
        Case("urls", "syscalls-https", [P, "syscalls", "https://127.0.0.1:@PORT@/", "--server-pid", "1"], rc=2)
    )
    return cases


def fam_inputs() -> list[Case]:
    b = [P, "bench", "@URL@", "-n", "5", "-c", "1"]
    cases = [
        Case("inputs", "url-file-dir", [P, "bench", "-f", "d", "-n", "5"], rc=2, setup=mkdir("d")),
        Case("inputs", "url-file-fifo", [P, "bench", "-f", "f", "-n", "5"], rc=2, setup=fifo("f"), timeout=10),
        Case("inputs", "url-file-dev-zero", [P, "bench", "-f", "/dev/zero", "-n", "5"], rc=2, timeout=10),
        Case("inputs", "url-file-missing", [P, "bench", "-f", "missing.txt", "-n", "5"], rc=2),
        Case("inputs", "url-file-empty", [P, "bench", "-f", "u.txt", "-n", "5"], rc=2, setup=files(u__txt="")),
        Case(
            "inputs",
            "url-file-comments-only",
            [P, "bench", "-f", "u.txt", "-n", "5"],
            rc=2,
            setup=files(u__txt="# nothing\n\n   # here\n"),
        ),
        Case("inputs", "url-file-binary", [P, "bench", "-f", "u.bin", "-n", "5"], rc=2, setup=files(u__bin=BINARY)),
        Case(
            "inputs",
            "url-file-latin1",
            [P, "bench", "-f", "u.txt", "-n", "5"],
            rc=2,
            setup=lambda c: c.write("u.txt", f"{c.url}caf\xe9\n".encode("latin-1")),
        ),
        Case(
            "inputs", "url-file-too-big", [P, "bench", "-f", "u.txt", "-n", "5"], rc=2, setup=sparse("u.txt", 65 << 20)
        ),
        Case(
            "inputs",
            "url-file-bad-weight",
            [P, "bench", "-f", "u.txt", "-n", "5"],
            rc=2,
            setup=lambda c: c.write("u.txt", f"x {c.url}\n"),
        ),
        Case(
            "inputs",
            "url-file-zero-weight",
            [P, "bench", "-f", "u.txt", "-n", "5"],
            rc=2,
            setup=lambda c: c.write("u.txt", f"0 {c.url}\n"),
        ),
        Case(
            "inputs",
            "url-file-bad-method",
            [P, "bench", "-f", "u.txt", "-n", "5"],
            rc=2,
            setup=lambda c: c.write("u.txt", f"{c.url}\nGE\x01T {c.url}\n"),
        ),
        Case(
            "inputs",
            "url-file-remote-line",
            [P, "bench", "-f", "u.txt", "-n", "5"],
            rc=2,
            setup=lambda c: c.write("u.txt", f"{c.url}\nhttp://10.1.2.3/\n"),
        ),
        Case(
            "inputs",
            "url-file-symlink-loop",
            [P, "bench", "-f", "a", "-n", "5"],
            rc=2,
            setup=chain(symlink("b", "a"), symlink("a", "b")),
        ),
        Case(
            "inputs",
            "url-file-symlink-to-fifo",
            [P, "bench", "-f", "l", "-n", "5"],
            rc=2,
            setup=chain(fifo("f"), symlink("f", "l")),
            timeout=10,
        ),
        Case(
            "inputs",
            "url-file-long-line",
            [P, "bench", "-f", "u.txt", "-n", "5"],
            rc=(1, 2),
            setup=lambda c: c.write("u.txt", "http://127.0.0.1:1/" + "x" * (2 << 20) + "\n"),
        ),
        Case("inputs", "body-dir", [*b, "-b", "@d"], rc=2, setup=mkdir("d")),
        Case("inputs", "body-fifo", [*b, "-b", "@f"], rc=2, setup=fifo("f"), timeout=10),
        Case("inputs", "body-dev-zero", [*b, "-b", "@/dev/zero"], rc=2, timeout=10),
        Case("inputs", "body-dev-urandom", [*b, "-b", "@/dev/urandom"], rc=2, timeout=10),
        Case("inputs", "body-missing", [*b, "-b", "@nope.bin"], rc=2),
        Case("inputs", "body-too-big", [*b, "-b", "@big.bin"], rc=2, setup=sparse("big.bin", 65 << 20)),
        Case("inputs", "access-log-dir", [P, "bench", "@URL@", "--access-log", "d", "-n", "5"], rc=2, setup=mkdir("d")),
        Case(
            "inputs",
            "access-log-fifo",
            [P, "bench", "@URL@", "--access-log", "f", "-n", "5"],
            rc=2,
            setup=fifo("f"),
            timeout=10,
        ),
        Case(
            "inputs",
            "access-log-binary",
            [P, "bench", "@URL@", "--access-log", "a.log", "-n", "5"],
            rc=2,
            setup=files(a__log=BINARY),
        ),
        Case(
            "inputs",
            "access-log-empty",
            [P, "bench", "@URL@", "--access-log", "a.log", "-n", "5"],
            rc=2,
            setup=files(a__log=""),
        ),
        Case(
            "inputs",
            "access-log-bad-gzip",
            [P, "bench", "@URL@", "--access-log", "a.log.gz", "-n", "5"],
            rc=2,
            setup=files(a__log__gz=b"\x1f\x8b\x08\x00" + BINARY[:200]),
        ),
        Case(
            "inputs",
            "access-log-gzip-bomb",
            [P, "bench", "@URL@", "--access-log", "a.log.gz", "-n", "5"],
            rc=2,
            setup=lambda c: c.write("a.log.gz", gzip.compress(b"\0" * (300 << 20), 9)),
            timeout=40,
            checks=(lambda c, r: c.notes.append(f"max RSS {r.maxrss_mb:.0f} MB") or (),),
        ),
        Case(
            "inputs",
            "access-log-too-big",
            [P, "bench", "@URL@", "--access-log", "a.log", "-n", "5"],
            rc=2,
            setup=sparse("a.log", 5 << 30),
        ),
        Case("inputs", "pidfile-fifo", [*b, "--server-pidfile", "f"], rc=2, setup=fifo("f"), timeout=10),
        Case("inputs", "pidfile-binary", [*b, "--server-pidfile", "p"], rc=2, setup=files(p=BINARY)),
        Case("inputs", "pidfile-negative", [*b, "--server-pidfile", "p"], rc=2, setup=files(p="-5\n")),
        Case("inputs", "pidfile-huge-number", [*b, "--server-pidfile", "p"], rc=2, setup=files(p="9" * 40 + "\n")),
        Case("inputs", "mem-pidfile-dir", [P, "mem", "--server-pidfile", "d"], rc=2, setup=mkdir("d")),
        Case("inputs", "mem-pidfile-fifo", [P, "mem", "--server-pidfile", "f"], rc=2, setup=fifo("f"), timeout=10),
        Case("inputs", "mem-pidfile-big", [P, "mem", "--server-pidfile", "p"], rc=2, setup=sparse("p", 1 << 20)),
        # report inputs
        Case(
            "inputs",
            "report-dir-not-result",
            [P, "report", "d", "-o", "r.html"],
            rc=2,
            setup=chain(mkdir("d"), files(d__x="1")),
        ),
        Case("inputs", "report-fifo", [P, "report", "f", "-o", "r.html"], rc=2, setup=fifo("f"), timeout=10),
        Case("inputs", "report-dev-zero", [P, "report", "/dev/zero", "-o", "r.html"], rc=2, timeout=10),
        Case("inputs", "report-binary", [P, "report", "r.json", "-o", "r.html"], rc=2, setup=files(r__json=BINARY)),
        Case("inputs", "report-deep-arrays", [P, "report", "r.json", "-o", "r.html"], rc=2, setup=files(r__json=DEEP)),
        Case(
            "inputs",
            "report-deep-objects",
            [P, "report", "r.json", "-o", "r.html"],
            rc=2,
            setup=files(r__json=DEEP_OBJ),
        ),
        Case("inputs", "report-empty", [P, "report", "r.json", "-o", "r.html"], rc=2, setup=files(r__json="")),
        Case("inputs", "report-list", [P, "report", "r.json", "-o", "r.html"], rc=2, setup=files(r__json="[]")),
        Case(
            "inputs",
            "report-other-schema",
            [P, "report", "r.json", "-o", "r.html"],
            rc=2,
            setup=files(r__json='{"schema": "other/1"}'),
        ),
        Case(
            "inputs",
            "report-truncated",
            [P, "report", "r.json", "-o", "r.html"],
            rc=2,
            setup=lambda c: c.write("r.json", FIXTURES["bench"].read_text()[:700]),
        ),
        Case(
            "inputs", "report-too-big", [P, "report", "r.json", "-o", "r.html"], rc=2, setup=sparse("r.json", 300 << 20)
        ),
        Case(
            "inputs",
            "report-nan",
            [P, "report", "r.json", "-o", "r.html"],
            rc=2,
            setup=mutated_result("r.json", lambda d: d.__setitem__("elapsed_s", "NaN")),
        ),
        # experiment files
        Case("inputs", "run-dir", [P, "run", "d"], rc=2, setup=mkdir("d")),
        Case("inputs", "run-fifo", [P, "run", "f"], rc=2, setup=fifo("f"), timeout=10),
        Case("inputs", "run-binary", [P, "run", "e.toml"], rc=2, setup=files(e__toml=BINARY)),
        Case("inputs", "run-bad-toml", [P, "run", "e.toml"], rc=2, setup=files(e__toml="title = \n[server\n")),
        Case(
            "inputs",
            "run-deep-toml",
            [P, "run", "e.toml"],
            rc=2,
            setup=files(e__toml="a = " + "[" * 100_000 + "]" * 100_000 + "\n"),
        ),
        Case(
            "inputs",
            "run-deep-inline-tables",
            [P, "run", "e.toml"],
            rc=2,
            setup=files(e__toml="a = " + "{b = " * 50_000 + "1" + "}" * 50_000 + "\n"),
        ),
        Case("inputs", "run-too-big", [P, "run", "e.toml"], rc=2, setup=sparse("e.toml", 2 << 20)),
        Case(
            "inputs",
            "run-workers-word",
            [P, "run", "e.toml"],
            rc=2,
            err=r"e\.toml:\d+: ",
            setup=lambda c: c.write(
                "e.toml", 'title = "t"\n[server]\nadapter = "command"\ncommand = "x {port}"\nworkers = "two"\n'
            ),
        ),
        Case("inputs", "run-zero-duration", [P, "run", "e.toml"], rc=2, setup=experiment("e.toml", duration="0s")),
        # tune inputs: nothing may be started
        Case(
            "inputs",
            "tune-urls-fifo",
            [P, "tune", "command", tune_command(), "--urls", "f", *TUNE_QUICK],
            rc=2,
            setup=fifo("f"),
            no_start=True,
            timeout=15,
            server=None,
        ),
        Case(
            "inputs",
            "tune-urls-dir",
            [P, "tune", "command", tune_command(), "--urls", "d", *TUNE_QUICK],
            rc=2,
            setup=mkdir("d"),
            no_start=True,
            server=None,
        ),
        Case(
            "inputs",
            "tune-urls-binary",
            [P, "tune", "command", tune_command(), "--urls", "u.bin", *TUNE_QUICK],
            rc=2,
            setup=files(u__bin=BINARY),
            no_start=True,
            server=None,
        ),
        Case(
            "inputs",
            "tune-access-log-fifo",
            [P, "tune", "command", tune_command(), "--access-log", "f", *TUNE_QUICK],
            rc=2,
            setup=fifo("f"),
            no_start=True,
            timeout=15,
            server=None,
        ),
        Case(
            "inputs",
            "tune-apache-conf-fifo",
            [P, "tune", "apache", "f", *TUNE_QUICK],
            rc=2,
            setup=fifo("f"),
            no_start=True,
            timeout=15,
            server=None,
        ),
        Case(
            "inputs",
            "tune-apache-conf-binary",
            [P, "tune", "apache", "c.conf", *TUNE_QUICK],
            rc=(1, 2),
            setup=files(c__conf=BINARY),
            timeout=30,
            server=None,
            grace=5,
            outputs=("pounder-tune-*",),
        ),
        Case(
            "inputs",
            "tune-resume-not-a-run",
            [P, "tune", "--resume", "d"],
            rc=2,
            setup=chain(mkdir("d"), files(d__x="1")),
            server=None,
        ),
        Case(
            "inputs",
            "tune-resume-deep-json",
            [P, "tune", "--resume", "d"],
            rc=2,
            setup=chain(mkdir("d"), lambda c: c.write("d/tune.json", DEEP)),
            server=None,
        ),
    ]
    return cases


def fam_aliases() -> list[Case]:
    """Outputs never overwrite an input or another output: compared as files (device, inode)."""
    f = [P, "bench", "-f", "urls.txt", "-n", "20", "-c", "2", "-q"]
    body = [P, "bench", "@URL@", "-b", "@body.txt", "-n", "20", "-c", "2", "-q"]
    out2 = [P, "bench", "@URL@", "-n", "20", "-c", "2", "-q"]
    bodyfile = files(body__txt="field=value\n")
    cases = [
        Case("aliases", "json-is-url-file", [*f, "--json", "urls.txt"], rc=2, setup=url_file()),
        Case("aliases", "json-dot-slash-url-file", [*f, "--json", "./urls.txt"], rc=2, setup=url_file()),
        Case(
            "aliases",
            "tsv-hardlink-url-file",
            [*f, "--tsv", "run.tsv"],
            rc=2,
            setup=chain(url_file(), hardlink("urls.txt", "run.tsv")),
        ),
        Case(
            "aliases",
            "hdr-hardlink-url-file",
            [*f, "--hdr-log", "run.hdr"],
            rc=2,
            setup=chain(url_file(), hardlink("urls.txt", "run.hdr")),
        ),
        Case(
            "aliases",
            "csv-symlink-url-file",
            [*f, "--csv", "run.csv"],
            rc=2,
            setup=chain(url_file(), symlink("urls.txt", "run.csv")),
        ),
        Case(
            "aliases",
            "report-symlink-url-file",
            [*f, "--report", "run.html"],
            rc=2,
            setup=chain(url_file(), symlink("urls.txt", "run.html")),
        ),
        Case(
            "aliases",
            "json-hardlink-in-subdir",
            [*f, "--json", "sub/../sub/x.json"],
            rc=2,
            setup=chain(url_file(), mkdir("sub"), hardlink("urls.txt", "sub/x.json")),
        ),
        Case(
            "aliases",
            "url-file-dot-slash",
            [P, "bench", "-f", "./urls.txt", "-n", "20", "-q", "--hdr-log", "urls.txt"],
            rc=2,
            setup=url_file(),
        ),
        Case(
            "aliases",
            "hdr-hardlink-body",
            [*body, "--hdr-log", "b.hdr"],
            rc=2,
            setup=chain(bodyfile, hardlink("body.txt", "b.hdr")),
        ),
        Case(
            "aliases",
            "tsv-hardlink-body",
            [*body, "--tsv", "b.tsv"],
            rc=2,
            setup=chain(bodyfile, hardlink("body.txt", "b.tsv")),
        ),
        Case("aliases", "report-is-body", [*body, "--report", "body.txt"], rc=2, setup=bodyfile),
        Case(
            "aliases",
            "json-symlink-body-abs",
            [*body, "--json", "j.json"],
            rc=2,
            setup=chain(bodyfile, lambda c: os.symlink(c.path("body.txt"), c.path("j.json"))),
        ),
        Case("aliases", "json-and-csv-same", [*out2, "--json", "o.out", "--csv", "o.out"], rc=2),
        Case("aliases", "json-and-tsv-dot-slash", [*out2, "--json", "o.out", "--tsv", "./o.out"], rc=2),
        Case(
            "aliases",
            "json-and-csv-hardlinks",
            [*out2, "--json", "a.out", "--csv", "b.out"],
            rc=2,
            setup=chain(files(a__out="old\n"), hardlink("a.out", "b.out")),
        ),
        Case(
            "aliases",
            "hdr-and-tsv-symlink",
            [*out2, "--hdr-log", "l.out", "--tsv", "t.out"],
            rc=2,
            setup=chain(files(t__out="old\n"), symlink("t.out", "l.out")),
        ),
        Case(
            "aliases",
            "json-is-access-log",
            [P, "bench", "@URL@", "--access-log", "a.log", "-n", "5", "-q", "--json", "j.json"],
            rc=2,
            setup=chain(
                files(a__log='127.0.0.1 - - [22/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 5\n'),
                hardlink("a.log", "j.json"),
            ),
        ),
        Case(
            "aliases",
            "json-is-pidfile",
            [*out2, "--server-pidfile", "s.pid", "--json", "s.pid"],
            rc=2,
            setup=lambda c: c.write("s.pid", f"{c.server().proc.pid}\n"),
        ),
        Case(
            "aliases",
            "report-out-is-input",
            [P, "report", "r.json", "-o", "r.json"],
            rc=2,
            setup=fixture("bench", "r.json"),
            server=None,
        ),
        Case(
            "aliases",
            "report-out-hardlink-input",
            [P, "report", "r.json", "-o", "r.html"],
            rc=2,
            setup=chain(fixture("bench", "r.json"), hardlink("r.json", "r.html")),
            server=None,
        ),
        Case(
            "aliases",
            "report-out-symlink-input",
            [P, "report", "r.json", "-o", "r.html"],
            rc=2,
            setup=chain(fixture("bench", "r.json"), symlink("r.json", "r.html")),
            server=None,
        ),
        Case(
            "aliases",
            "report-out-into-run-dir",
            [P, "report", "R", "-o", "R/tune.json"],
            rc=2,
            setup=fixture("tune", "R"),
            server=None,
        ),
        Case(
            "aliases",
            "compare-json-is-chart",
            [P, "compare", "@URL@", "@URL@x", "--json", "c.svg", "--chart", "c.svg", "--trials", "3", "-d", "200ms"],
            rc=2,
        ),
        Case(
            "aliases",
            "compare-report-hardlink-json",
            [P, "compare", "@URL@", "@URL@x", "--json", "c.json", "--report", "c.html", "--trials", "3", "-d", "200ms"],
            rc=2,
            setup=chain(files(c__json="{}"), hardlink("c.json", "c.html")),
        ),
        Case(
            "aliases",
            "run-report-is-experiment",
            [P, "run", "exp.toml", "--report", "exp.toml", "--quick"],
            rc=2,
            setup=experiment(),
        ),
        Case(
            "aliases",
            "run-results-is-experiment",
            [P, "run", "exp.toml", "--results", "exp.toml", "--quick"],
            rc=2,
            setup=experiment(),
        ),
        Case(
            "aliases",
            "mem-json-is-pidfile",
            [P, "mem", "--server-pidfile", "s.pid", "--json", "s.pid"],
            rc=2,
            setup=lambda c: c.write("s.pid", f"{c.server().proc.pid}\n"),
        ),
        Case(
            "aliases",
            "tune-report-hardlink-urls",
            [P, "tune", "command", tune_command(), "--urls", "u.txt", "--report", "r.html", *TUNE_QUICK],
            rc=2,
            server=None,
            no_start=True,
            setup=chain(files(u__txt="http://127.0.0.1/\n"), hardlink("u.txt", "r.html")),
        ),
        Case("aliases", "json-is-directory", [*out2, "--json", "d"], rc=2, setup=mkdir("d")),
        Case("aliases", "json-in-missing-dir", [*out2, "--json", "nodir/x.json"], rc=2),
    ]
    return cases


def fam_writes() -> list[Case]:
    """A write error: exit 1 and one line naming the option, the figures still printed, no file that
    existed before changed unless it is the named output."""
    b = [P, "bench", "@URL@", "-n", "300", "-c", "2"]
    full = [figures_printed]
    old_tsv = b"start\told\n" * 800  # 8.8 KB
    old_json = b'{"old": true}\n'

    def full_fs(rel: str = "full", size: str = "64k", leave: int = 0, old: dict[str, bytes] | None = None):
        def setup(ctx: Ctx) -> None:
            ctx.mount_tmpfs(rel, size)
            for name, data in (old or {}).items():
                ctx.write(f"{rel}/{name}", data)
            ctx.fill(rel, leave)

        return setup

    def ro_fs(rel: str = "ro", old: dict[str, bytes] | None = None, remount: bool = True):
        def setup(ctx: Ctx) -> None:
            if remount:
                ctx.mount_tmpfs(rel, "1m")
                for name, data in (old or {}).items():
                    ctx.write(f"{rel}/{name}", data)
                ctx.remount_ro(rel)
            else:
                ctx.mount_tmpfs(rel, "1m", ro=True)

        return setup

    cases = []
    for opt in ("--json", "--csv", "--tsv", "--hdr-log", "--report"):
        cases.append(
            Case(
                "writes",
                f"dev-full{opt}",
                [*b, opt, "/dev/full"],
                rc=1,
                contact=True,
                checks=(*full, names(opt)),
                timeout=30,
            )
        )
    # a full disk during the run: the old file stays whole, the run says so
    cases += [
        Case(
            "writes",
            "full-disk-tsv",
            [P, "bench", "@URL@", "-d", "2s", "-c", "2", "--tsv", "full/run.tsv"],
            rc=1,
            contact=True,
            setup=full_fs(old={"run.tsv": old_tsv}, leave=4096),
            checks=(*full, names("--tsv"), same_content("full/run.tsv", old_tsv)),
        ),
        Case(
            "writes",
            "full-disk-hdr-log",
            [P, "bench", "@URL@", "-d", "2s", "-c", "2", "--hdr-log", "full/run.hdr"],
            rc=1,
            contact=True,
            setup=full_fs(old={"run.hdr": old_tsv}, leave=0),
            checks=(*full, names("--hdr-log"), same_content("full/run.hdr", old_tsv)),
        ),
        Case(
            "writes",
            "full-disk-json",
            [*b, "--json", "full/r.json"],
            rc=1,
            contact=True,
            setup=full_fs(old={"r.json": old_json}),
            checks=(*full, names("--json"), same_content("full/r.json", old_json)),
        ),
        Case(
            "writes",
            "full-disk-csv",
            [*b, "--csv", "full/r.csv"],
            rc=1,
            contact=True,
            setup=full_fs(old={"r.csv": b"old\n"}),
            checks=(*full, names("--csv"), same_content("full/r.csv", b"old\n")),
        ),
        Case(
            "writes",
            "full-disk-report",
            [*b, "--report", "full/r.html"],
            rc=1,
            contact=True,
            timeout=40,
            setup=full_fs(old={"r.html": b"<p>old</p>"}),
            checks=(*full, names("--report"), same_content("full/r.html", b"<p>old</p>")),
        ),
        Case(
            "writes",
            "full-disk-json-and-csv",
            [*b, "--json", "full/r.json", "--csv", "r.csv"],
            rc=1,
            contact=True,
            setup=full_fs(),
            outputs=("r.csv",),
            checks=(*full, names("--json"), nonempty("r.csv")),
        ),
        Case(
            "writes",
            "full-disk-tsv-new",
            [P, "bench", "@URL@", "-d", "2s", "-c", "2", "--tsv", "full/new.tsv", "--json", "r.json"],
            rc=1,
            contact=True,
            setup=full_fs(leave=8192),
            outputs=("r.json",),
            checks=(*full, names("--tsv"), nonempty("r.json")),
        ),
    ]
    # a temporary file a killed run left beside an output: the next run removes it
    cases.append(
        Case(
            "writes",
            "stale-temp-removed",
            [P, "bench", "@URL@", "-n", "50", "-c", "1", "-q", "--tsv", "run.tsv", "--json", "r.json"],
            rc=0,
            setup=files(run__tsv="old\n", **{"__run__tsv__999999__abcdefgh__pounder-tmp": "half a tsv"}),
            outputs=("run.tsv", ".run.tsv.*"),
            checks=(
                lambda c, r: (
                    []
                    if not c.path(".run.tsv.999999.abcdefgh.pounder-tmp").exists()
                    else ["the stale temporary file of a dead run is still there"]
                ),
            ),
        )
    )
    # a read-only file system: refused before the run (exit 2, nothing sent) or after it (exit 1)
    for opt, name in (
        ("--json", "r.json"),
        ("--csv", "r.csv"),
        ("--tsv", "r.tsv"),
        ("--hdr-log", "r.hdr"),
        ("--report", "r.html"),
    ):
        cases.append(
            Case(
                "writes",
                f"read-only{opt}",
                [*b, opt, f"ro/{name}"],
                rc=(1, 2),
                setup=ro_fs(old={name: b"old\n"}),
                checks=(names(opt), same_content(f"ro/{name}", b"old\n"), if_rc(1, figures_printed)),
            )
        )
    cases.append(
        Case(
            "writes",
            "read-only-mount-new-file",
            [*b, "--json", "ro/new.json"],
            rc=(1, 2),
            setup=ro_fs(remount=False),
            checks=(names("--json"), if_rc(1, figures_printed)),
        )
    )
    cases += [
        Case(
            "writes",
            "compare-json-dev-full",
            [P, "compare", "@URL@", "@URL@x", "--trials", "3", "-d", "200ms", "--no-warmup", "--json", "/dev/full"],
            rc=1,
            checks=(names("--json"),),
            timeout=30,
        ),
        Case(
            "writes",
            "compare-json-full-disk",
            [P, "compare", "@URL@", "@URL@x", "--trials", "3", "-d", "200ms", "--no-warmup", "--json", "full/c.json"],
            rc=1,
            timeout=30,
            setup=full_fs(old={"c.json": old_json}),
            checks=(names("--json"), same_content("full/c.json", old_json)),
        ),
        Case(
            "writes",
            "report-dev-full",
            [P, "report", "r.json", "-o", "/dev/full"],
            rc=1,
            server=None,
            setup=fixture("bench", "r.json"),
            checks=(names("/dev/full"),),
            timeout=40,
        ),
        Case(
            "writes",
            "report-full-disk",
            [P, "report", "r.json", "-o", "full/r.html"],
            rc=1,
            server=None,
            timeout=40,
            setup=chain(fixture("bench", "r.json"), full_fs(old={"r.html": b"<p>old</p>"})),
            checks=(same_content("full/r.html", b"<p>old</p>"),),
        ),
        Case(
            "writes",
            "report-read-only",
            [P, "report", "r.json", "-o", "ro/r.html"],
            rc=(1, 2),
            server=None,
            timeout=40,
            setup=chain(fixture("bench", "r.json"), ro_fs(old={"r.html": b"<p>old</p>"})),
            checks=(same_content("ro/r.html", b"<p>old</p>"),),
        ),
        Case(
            "writes",
            "mem-json-dev-full",
            [P, "mem", "--server-pid", "@SPID@", "--json", "/dev/full"],
            rc=1,
            setup=lambda c: c.vars.__setitem__("SPID", c.server().proc.pid),
            checks=(names("--json"),),
        ),
        Case(
            "writes",
            "run-results-full-disk",
            [P, "run", "exp.toml", "--quick", "--results", "full/R"],
            rc=1,
            setup=chain(experiment(), full_fs(leave=2048)),
            timeout=40,
        ),
        Case(
            "writes",
            "run-results-read-only",
            [P, "run", "exp.toml", "--quick", "--results", "ro/R"],
            rc=(1, 2),
            setup=chain(experiment(), ro_fs(remount=False)),
            timeout=40,
        ),
        Case(
            "writes",
            "tune-results-read-only",
            [P, "tune", "command", tune_command(), "--results", "ro/R", *TUNE_QUICK],
            rc=2,
            server=None,
            no_start=True,
            setup=ro_fs(remount=False),
        ),
    ]
    return cases


HOSTILE = {
    # mode: error classes one of which must be counted (complete: a response was complete)
    "ok": ("complete",),
    "status500": ("complete",),
    "slowloris": ("timeout",),
    "endless_chunked": ("timeout",),
    "endless_header": ("bad_response",),
    "short_cl": ("reset",),
    "big_body": ("complete", "timeout"),
    "huge_headers": ("bad_response",),
    "garbage": ("bad_response",),
    "http09": ("bad_response", "reset"),
    "reset": ("reset",),
    "close_now": ("reset",),
    "backlog": ("timeout", "refused"),
    "never_read": ("timeout",),
    "silent": ("timeout",),
    "slow_body": ("timeout",),
    "continue_flood": ("timeout", "bad_response"),
    "no_framing": ("timeout",),
    "bad_cl": ("bad_response",),
    "dup_cl": ("bad_response",),
}


def fam_hostile() -> list[Case]:
    cases = []

    def case(mode: str, label: str, extra: list[str], d: float = 2.0, classes: tuple[str, ...] | None = None) -> Case:
        return Case(
            "hostile",
            f"{mode}-{label}",
            [P, "bench", "@URL@", "-d", f"{d:g}s", "--timeout", "1s", "--json", "out.json", *extra],
            rc=(0, 1),
            server=mode,
            max_time=d + 5,
            timeout=d + 15,
            max_rss_mb=200,
            checks=(counts_add_up(), error_class(*(classes or HOSTILE[mode])), figures_printed),
            outputs=(),
        )

    for mode in HOSTILE:
        cases.append(case(mode, "closed", ["-c", "4"]))
    for mode in ("slowloris", "endless_chunked", "short_cl", "garbage", "backlog", "silent", "big_body"):
        cases.append(case(mode, "open", ["--rate", "20", "-c", "4"]))
    for mode in ("slowloris", "short_cl", "reset", "close_now", "no_framing", "big_body"):
        cases.append(case(mode, "no-keepalive", ["-c", "4", "--no-keepalive"]))
    for mode in ("backlog", "reset", "silent"):
        cases.append(case(mode, "c200", ["-c", "200"]))
    cases.append(case("endless_chunked", "throttled", ["-c", "2", "--throttle", "10KB/s"]))
    cases.append(case("never_read", "big-request-body", ["-c", "2", "-b", "@body.bin"], classes=("timeout",)))
    cases[-1].setup = files(body__bin=b"B" * (4 << 20))
    # aborted at the end of the run (timeout longer than the run): bytes were sent
    cases.append(
        Case(
            "hostile",
            "silent-aborted",
            [P, "bench", "@URL@", "-d", "1s", "-c", "4", "--json", "out.json"],
            rc=1,
            server="silent",
            max_time=7,
            checks=(counts_add_up(), error_class("aborted")),
        )
    )
    cases.append(
        Case(
            "hostile",
            "never-read-aborted",
            [P, "bench", "@URL@", "-d", "1s", "-c", "4", "--json", "out.json"],
            rc=1,
            server="never_read",
            max_time=7,
            checks=(counts_add_up(), error_class("aborted")),
        )
    )
    return cases


def fam_signals() -> list[Case]:
    long_bench = [P, "bench", "@URL@", "-d", "30s", "-c", "2"]
    outs = ["--json", "out.json", "--csv", "out.csv", "--tsv", "out.tsv", "--hdr-log", "out.hdr"]
    partial = (interrupted_result(), tsv_whole(), nonempty("out.csv", "out.hdr"))
    cases = [
        Case(
            "signals",
            "bench-sigint-group",
            [*long_bench, *outs],
            rc=130,
            signal=signal.SIGINT,
            signal_at=1.5,
            signal_group=True,
            err=r"interrupted",
            checks=partial,
            timeout=40,
        ),
        Case(
            "signals",
            "bench-sigterm",
            [*long_bench, *outs],
            rc=143,
            signal=signal.SIGTERM,
            signal_at=1.5,
            err=r"interrupted",
            checks=partial,
            timeout=40,
        ),
        Case(
            "signals",
            "bench-sighup",
            [*long_bench, *outs],
            rc=130,
            signal=signal.SIGHUP,
            signal_at=1.5,
            err=r"interrupted",
            checks=partial,
            timeout=40,
            note="docs: 130 for Ctrl-C or SIGHUP",
        ),
        Case(
            "signals",
            "bench-sigint-at-start",
            [*long_bench, "--json", "out.json"],
            rc=130,
            signal=signal.SIGINT,
            signal_at=0.25,
            err=r"pounder: error: interrupted",
            timeout=20,
        ),
        Case(
            "signals",
            "bench-sigterm-at-start",
            [*long_bench, "--json", "out.json"],
            rc=143,
            signal=signal.SIGTERM,
            signal_at=0.3,
            err=r"pounder: error: interrupted",
            timeout=20,
        ),
        Case(
            "signals",
            "bench-sigint-open-loop",
            [P, "bench", "@URL@", "--rate", "200", "-d", "30s", "--json", "out.json"],
            rc=130,
            signal=signal.SIGINT,
            signal_at=1.5,
            err="interrupted",
            checks=(interrupted_result(),),
            timeout=40,
        ),
        Case(
            "signals",
            "bench-sigterm-silent-server",
            [P, "bench", "@URL@", "-d", "30s", "-c", "8", "--json", "out.json"],
            rc=143,
            server="silent",
            signal=signal.SIGTERM,
            signal_at=1.5,
            err="interrupted",
            checks=(interrupted_result(),),
            timeout=40,
        ),
        Case(
            "signals",
            "bench-sigint-connection-storm",
            [P, "bench", "@URL@", "-d", "30s", "-c", "800", "--json", "out.json"],
            rc=130,
            server="backlog",
            signal=signal.SIGINT,
            signal_at=1.5,
            err="interrupted",
            checks=(interrupted_result(),),
            timeout=40,
        ),
        Case(
            "signals",
            "bench-sigterm-slowloris",
            [P, "bench", "@URL@", "-d", "30s", "-c", "4", "--json", "out.json"],
            rc=143,
            server="slowloris",
            signal=signal.SIGTERM,
            signal_at=1.5,
            err="interrupted",
            checks=(interrupted_result(),),
            timeout=40,
        ),
        Case(
            "signals",
            "bench-sigint-warmup",
            [P, "bench", "@URL@", "--warmup", "20s", "-d", "10s", "-c", "2", "--json", "out.json"],
            rc=130,
            signal=signal.SIGINT,
            signal_at=1.5,
            err="interrupted",
            timeout=40,
        ),
        Case(
            "signals",
            "bench-sigterm-old-json-replaced",
            [*long_bench, "-q", "--json", "out.json"],
            rc=143,
            signal=signal.SIGTERM,
            signal_at=1.2,
            setup=files(out__json='{"old": 1}'),
            outputs=("out.json",),
            checks=(interrupted_result(),),
            timeout=40,
        ),
        Case(
            "signals",
            "bench-sigkill-old-tsv-kept",
            [*long_bench, "--tsv", "run.tsv", "--hdr-log", "run.hdr"],
            rc=-9,
            signal=signal.SIGKILL,
            signal_at=1.5,
            setup=files(run__tsv="old tsv\n", run__hdr="old hdr\n"),
            timeout=40,
            checks=(same_content("run.tsv", b"old tsv\n"), same_content("run.hdr", b"old hdr\n")),
        ),
        Case(
            "signals",
            "compare-sigint",
            [P, "compare", "@URL@", "@URL@x", "-d", "1s", "--trials", "5", "--json", "c.json"],
            rc=130,
            signal=signal.SIGINT,
            signal_at=2.5,
            signal_group=True,
            err="interrupted",
            checks=(
                lambda c, r: [] if c.json("c.json").get("interrupted") is True else ["c.json: interrupted is not true"],
                lambda c, r: (
                    []
                    if c.run([P, "report", "c.json", "-o", "c.html"], timeout=60).returncode == 0
                    else ["pounder report c.json failed"]
                ),
            ),
            timeout=40,
        ),
        Case(
            "signals",
            "compare-sigterm",
            [P, "compare", "@URL@", "@URL@x", "-d", "1s", "--trials", "5", "--json", "c.json"],
            rc=143,
            signal=signal.SIGTERM,
            signal_at=2.5,
            err="interrupted",
            timeout=40,
        ),
        Case(
            "signals",
            "run-sigint",
            [P, "run", "exp.toml", "--results", "R"],
            rc=130,
            signal=signal.SIGINT,
            signal_at=2.5,
            setup=experiment(duration="1s", trials=5),
            err="interrupted",
            checks=(nonempty("R/experiment.json"),),
            timeout=40,
        ),
        Case(
            "signals",
            "run-sigterm",
            [P, "run", "exp.toml", "--results", "R"],
            rc=143,
            signal=signal.SIGTERM,
            signal_at=2.5,
            setup=experiment(duration="1s", trials=5),
            err="interrupted",
            timeout=40,
        ),
        Case(
            "signals",
            "mem-watch-sigint",
            [P, "mem", "--server-pid", "@SPID@", "--watch", "500ms"],
            rc=0,
            signal=signal.SIGINT,
            signal_at=1.5,
            setup=lambda c: c.vars.__setitem__("SPID", c.server().proc.pid),
            timeout=20,
        ),
        Case(
            "signals",
            "tune-sigterm",
            [P, "tune", "command", tune_command(), "--results", "R", *TUNE_QUICK],
            rc=143,
            server=None,
            signal=signal.SIGTERM,
            signal_at=when_marked(1.0),
            err=r"interrupted.*--resume",
            timeout=60,
            grace=5,
        ),
        Case(
            "signals",
            "tune-sigint-group",
            [P, "tune", "command", tune_command(), "--results", "R", *TUNE_QUICK],
            rc=130,
            server=None,
            signal=signal.SIGINT,
            signal_group=True,
            signal_at=when_marked(1.5),
            err=r"interrupted.*--resume",
            timeout=60,
            grace=5,
        ),
        Case(
            "signals",
            "tune-sighup",
            [P, "tune", "command", tune_command(), "--results", "R", *TUNE_QUICK],
            rc=130,
            server=None,
            signal=signal.SIGHUP,
            signal_at=when_marked(1.0),
            err=r"interrupted.*--resume",
            timeout=60,
            grace=5,
        ),
        Case(
            "signals",
            "syscalls-sigint",
            [P, "syscalls", "@URL@", "--server-pid", "@SPID@", "-n", "100000", "-c", "2", "--warmup", "0"],
            rc=130,
            server="prefork",
            signal=signal.SIGINT,
            signal_at=3.0,
            setup=lambda c: c.vars.__setitem__("SPID", c.server().proc.pid),
            err="interrupted",
            timeout=60,
            checks=(lambda c, r: [] if c.server().proc.poll() is None else ["the server traced was stopped"],),
        ),
    ]
    return cases


def fam_orphans() -> list[Case]:
    return [
        Case(
            "orphans",
            "tune-shell-wrapped-sigkill",
            [P, "tune", "command", tune_command(shell=True, workers=False), "--results", "R", *TUNE_QUICK],
            rc=-9,
            server=None,
            signal=signal.SIGKILL,
            signal_at=when_marked(1.5),
            timeout=60,
            grace=5,
            note="a guard kills the server group after SIGKILL",
        ),
        Case(
            "orphans",
            "tune-plain-sigkill",
            [P, "tune", "command", tune_command(), "--results", "R", *TUNE_QUICK],
            rc=-9,
            server=None,
            signal=signal.SIGKILL,
            signal_at=when_marked(1.5),
            timeout=60,
            grace=5,
        ),
        Case(
            "orphans",
            "tune-shell-wrapped-sigterm",
            [P, "tune", "command", tune_command(shell=True, workers=False), "--results", "R", *TUNE_QUICK],
            rc=143,
            server=None,
            signal=signal.SIGTERM,
            signal_at=when_marked(1.5),
            timeout=60,
            grace=5,
        ),
        Case(
            "orphans",
            "run-command-sigkill",
            [P, "run", "exp.toml", "--results", "R"],
            rc=-9,
            server=None,
            signal=signal.SIGKILL,
            signal_at=when_marked(1.5),
            timeout=60,
            grace=5,
            setup=lambda c: c.write(
                "exp.toml",
                'title = "orphans"\n[server]\nadapter = "command"\ncommand = "'
                + c.subst([tune_command(shell=True, workers=False)])[0].replace("'", "'")
                + '"\nworkers = 2\n\n[[load]]\nconnections = 2\nduration = "2s"\ntrials = 3\n\n'
                '[[variant]]\nlabel = "a"\npath = "/"\n\n[[variant]]\nlabel = "b"\npath = "/b"\n',
            ),
        ),
    ]


def fam_limits() -> list[Case]:
    def lim(soft: int, hard: int, argv: list[str]) -> list[str]:
        return ["prlimit", f"--nofile={soft}:{hard}", *argv]

    def raised_or_named(c: int, soft: int) -> Check:
        def raised_or_named(ctx: Ctx, res: Result) -> Iterable[str]:
            if res.rc == 2:
                line = " ".join(res.error_lines()).replace(",", "")
                for n in (str(c), str(soft)):
                    if not re.search(rf"\b{n}\b", line):
                        yield f"exit 2 without naming {n}: {line[:160]!r}"
            elif res.rc in (0, 1):
                d = ctx.json("out.json")
                other = d["errors"]["other"]
                if other:
                    yield f"ran with {other} 'other' failures (descriptors ran out?)"

        return raised_or_named

    return [
        Case(
            "limits",
            "c1000-nofile-256-hard",
            lim(256, 256, [P, "bench", "@URL@", "-c", "1000", "-d", "1s", "--json", "out.json"]),
            rc=2,
            timeout=20,
            checks=(raised_or_named(1000, 256),),
        ),
        Case(
            "limits",
            "c1100-nofile-1024-hard",
            lim(1024, 1024, [P, "bench", "@URL@", "-c", "1100", "-d", "2s", "--json", "out.json"]),
            rc=(0, 2),
            timeout=20,
            checks=(raised_or_named(1100, 1024),),
        ),
        Case(
            "limits",
            "c1000-nofile-256-raisable",
            lim(256, 4096, [P, "bench", "@URL@", "-c", "1000", "-d", "1s", "--json", "out.json"]),
            rc=(0, 2),
            timeout=20,
            checks=(raised_or_named(1000, 256),),
            note="raised to the hard limit when allowed",
        ),
        Case(
            "limits",
            "c250-nofile-256-hard",
            lim(256, 256, [P, "bench", "@URL@", "-c", "250", "-d", "1s", "--json", "out.json"]),
            rc=(0, 2),
            timeout=20,
            checks=(raised_or_named(250, 256),),
        ),
        Case(
            "limits",
            "open-loop-cap-nofile-256",
            lim(256, 256, [P, "bench", "@URL@", "--rate", "100", "-c", "1000", "-d", "1s", "--json", "out.json"]),
            rc=(0, 2),
            timeout=20,
            checks=(raised_or_named(1000, 256),),
        ),
        Case(
            "limits",
            "compare-c1000-nofile-256",
            lim(256, 256, [P, "compare", "@URL@", "@URL@x", "-c", "1000", "-d", "1s"]),
            rc=2,
            timeout=20,
        ),
        Case(
            "limits",
            "backlog-c1000-nofile-256",
            lim(256, 256, [P, "bench", "@URL@", "-c", "1000", "-d", "1s", "--json", "out.json"]),
            rc=2,
            server="backlog",
            timeout=20,
            checks=(raised_or_named(1000, 256),),
        ),
    ]


def fam_network() -> list[Case]:
    def remote(name: str, argv: list[str], *addresses: str, rc: int = 2, setup=None) -> Case:
        return Case(
            "network",
            name,
            strace(argv),
            rc=rc,
            setup=chain(log_path, setup) if setup else log_path,
            checks=(no_connect_to(*addresses),),
            timeout=20,
        )

    cases = [
        remote("ipv4-10", [P, "bench", "http://10.1.2.3/", "-n", "1"], "10.1.2.3"),
        remote("ipv4-test-net", [P, "bench", "http://192.0.2.1:8080/", "-n", "1"], "192.0.2.1"),
        remote("ipv4-own-eth0", [P, "bench", "http://192.0.2.2:@PORT@/", "-n", "1"], "192.0.2.2"),
        remote("ipv6-doc", [P, "bench", "http://[2001:db8::1]/", "-n", "1"], "2001:db8::1"),
        remote("ipv6-mapped-v4", [P, "bench", "http://[::ffff:10.1.2.3]/", "-n", "1"], "10.1.2.3", "::ffff:10.1.2.3"),
        remote("ipv4-hex", [P, "bench", "http://0x0a010203/", "-n", "1"], "10.1.2.3"),
        remote("ipv4-decimal", [P, "bench", "http://167838211/", "-n", "1"], "10.1.2.3"),
        remote("ipv4-short", [P, "bench", "http://10.1/", "-n", "1"], "10.0.0.1"),
        remote(
            "url-file-remote",
            [P, "bench", "-f", "u.txt", "-n", "1"],
            "10.1.2.3",
            setup=lambda c: c.write("u.txt", f"{c.url}\nhttp://10.1.2.3/\n"),
        ),
        remote("compare-remote", [P, "compare", "@URL@", "http://10.1.2.3/"], "10.1.2.3"),
        remote("syscalls-remote", [P, "syscalls", "http://10.1.2.3/", "--server-pid", "1"], "10.1.2.3"),
        remote(
            "run-remote-variant",
            [P, "run", "exp.toml"],
            "10.1.2.3",
            setup=lambda c: experiment(urls=(c.url, "http://10.1.2.3/"))(c),
        ),
        remote(
            "access-log-remote-base",
            [P, "bench", "http://10.1.2.3/", "--access-log", "a.log", "-n", "1"],
            "10.1.2.3",
            setup=files(a__log='127.0.0.1 - - [22/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 5\n'),
        ),
        Case(
            "network",
            "tune-listen-remote",
            [P, "tune", "command", tune_command(), "--listen", "192.0.2.2", *TUNE_QUICK],
            rc=2,
            server=None,
            no_start=True,
        ),
        Case(
            "network",
            "ray-at-http-server",
            [P, "bench", "@URL@", "-d", "1s", "--ray", "127.0.0.1:@PORT@"],
            rc=1,
            max_time=8,
            timeout=60,
            err="Ray",
            note="item 10: one line within a few seconds",
        ),
        Case(
            "network",
            "ray-at-silent-listener",
            [P, "bench", "@URL@", "-d", "1s", "--ray", "127.0.0.1:@PORT@"],
            rc=1,
            server="silent",
            max_time=8,
            timeout=60,
            err="Ray",
        ),
        Case(
            "network",
            "ray-at-refused-port",
            [P, "bench", "@URL@", "-d", "1s", "--ray", "127.0.0.1:1"],
            rc=1,
            max_time=8,
            timeout=60,
        ),
        Case(
            "network",
            "ray-silent-sigint",
            [P, "bench", "@URL@", "-d", "1s", "--ray", "127.0.0.1:@PORT@"],
            rc=130,
            server="silent",
            signal=signal.SIGINT,
            signal_at=1.5,
            timeout=60,
        ),
    ]
    # names: no DNS query may leave the machine for a name that cannot be loopback
    for name, url in (
        ("name-www-example-com", "http://www.example.com/"),
        ("name-example-invalid", "http://example.invalid:8080/"),
        ("name-localhost-dot-com", "http://localhost.example.com/"),
        ("name-idn-remote", "http://bücher.example/"),
    ):
        cases.append(
            Case(
                "network",
                name,
                in_ns("@RESOLV@", "/etc/resolv.conf", [P, "bench", url, "-n", "1"]),
                rc=2,
                setup=with_resolver,
                checks=(no_dns,),
                timeout=20,
            )
        )
    cases.append(
        Case(
            "network",
            "name-compare-remote",
            in_ns("@RESOLV@", "/etc/resolv.conf", [P, "compare", "@URL@", "http://www.example.com/"]),
            rc=2,
            setup=with_resolver,
            checks=(no_dns,),
            timeout=20,
        )
    )
    cases.append(
        Case(
            "network",
            "name-url-file-remote",
            in_ns("@RESOLV@", "/etc/resolv.conf", [P, "bench", "-f", "u.txt", "-n", "1"]),
            rc=2,
            setup=chain(with_resolver, lambda c: c.write("u.txt", f"{c.url}\nhttp://www.example.com/\n")),
            checks=(no_dns,),
            timeout=20,
        )
    )
    # localhost with both addresses: the server on one of them only
    dual = "127.0.0.1 localhost\n::1 localhost\n"
    dual6 = "::1 localhost\n127.0.0.1 localhost\n"
    cases += [
        Case(
            "network",
            "localhost-dual-server-v6-only",
            in_ns(
                "@HOSTS@",
                "/etc/hosts",
                [P, "bench", "http://localhost:@PORT:v6@/", "-n", "20", "-c", "2", "--json", "out.json"],
            ),
            rc=0,
            server=None,
            setup=chain(lambda c: c.add_server("v6", "ok", ipv6=True), hosts(dual)),
            checks=(counts_add_up(),),
        ),
        Case(
            "network",
            "localhost-dual6-server-v6-only",
            in_ns("@HOSTS@", "/etc/hosts", [P, "bench", "http://localhost:@PORT:v6@/", "-n", "20", "-c", "2"]),
            rc=0,
            server=None,
            setup=chain(lambda c: c.add_server("v6", "ok", ipv6=True), hosts(dual6)),
        ),
        Case(
            "network",
            "localhost-dual-server-v4-only",
            in_ns("@HOSTS@", "/etc/hosts", [P, "bench", "http://localhost:@PORT@/", "-n", "20", "-c", "2"]),
            rc=0,
            setup=hosts(dual6),
        ),
        Case(
            "network",
            "name-dual-server-v6-only",
            in_ns("@HOSTS@", "/etc/hosts", [P, "bench", "http://app.test:@PORT:v6@/", "-n", "20", "-c", "2"]),
            rc=0,
            server=None,
            setup=chain(lambda c: c.add_server("v6", "ok", ipv6=True), hosts("127.0.0.1 app.test\n::1 app.test\n")),
        ),
        Case(
            "network",
            "ipv6-loopback-literal",
            [P, "bench", "http://[::1]:@PORT:v6@/", "-n", "20", "-c", "2"],
            rc=0,
            server=None,
            setup=lambda c: c.add_server("v6", "ok", ipv6=True),
        ),
        Case(
            "network",
            "hosts-name-remote",
            strace(in_ns("@HOSTS@", "/etc/hosts", [P, "bench", "http://far.test/", "-n", "1"])),
            rc=2,
            setup=chain(log_path, hosts("10.1.2.3 far.test\n")),
            checks=(no_connect_to("10.1.2.3"),),
        ),
        Case(
            "network",
            "hosts-name-mixed",
            strace(in_ns("@HOSTS@", "/etc/hosts", [P, "bench", "http://mixed.test:@PORT@/", "-n", "1"])),
            rc=(0, 2),
            setup=chain(log_path, hosts("10.1.2.3 mixed.test\n127.0.0.1 mixed.test\n")),
            checks=(no_connect_to("10.1.2.3"),),
        ),
        Case(
            "network",
            "idn-host-header",
            in_ns("@HOSTS@", "/etc/hosts", [P, "bench", "http://BÜCHER.test:@PORT@/", "-n", "1", "-c", "1"]),
            rc=0,
            server_extra=("--record-file", "@REC@"),
            setup=chain(hosts("127.0.0.1 xn--bcher-kva.test\n")),
            checks=(
                lambda c, r: (
                    []
                    if re.search(rb"(?mi)^host: xn--bcher-kva\.test:\d+\r?$", Path(c.vars["REC"]).read_bytes())
                    else [f"Host header sent: {Path(c.vars['REC']).read_bytes().split(b'Host:')[-1][:40]!r}"]
                ),
            ),
        ),
    ]
    return cases


def fam_results() -> list[Case]:
    def neg(path: list[str], value: object = -5):
        def mutate(d: dict) -> None:
            target = d
            for key in path[:-1]:
                target = target[int(key)] if isinstance(target, list) else target[key]
            if isinstance(target, list):
                target[int(path[-1])] = value
            else:
                target[path[-1]] = value

        return mutate

    lib = (
        "import sys, pounder\ntry:\n    pounder.{fn}(sys.argv[1])\nexcept pounder.UsageError as e:\n"
        "    print('pounder: error: ' + str(e).splitlines()[0], file=sys.stderr); sys.exit(2)\nprint('loaded')\n"
    )
    mutations = {
        "complete": (["requests", "complete"], -5),
        "failed": (["requests", "failed"], -1),
        "refused": (["errors", "refused"], -3),
        "status": (["status", "200"], -7),
        "bytes": (["bytes", "total"], -100),
        "connections": (["connections", "opened"], -1),
        "series": (["series", "0", "complete"], -2),
        "float-count": (["requests", "complete"], 1.5),
        "string-count": (["requests", "complete"], "5"),
        "elapsed-negative": (["elapsed_s"], -1.0),
    }
    cases = []
    for name, (path, value) in mutations.items():
        cases.append(
            Case(
                "results",
                f"report-{name}",
                [P, "report", "r.json", "-o", "r.html"],
                rc=2,
                server=None,
                setup=mutated_result("r.json", neg(path, value)),
            )
        )
    for name in ("complete", "refused", "series", "string-count"):
        path, value = mutations[name]
        cases.append(
            Case(
                "results",
                f"load_result-{name}",
                ["@PY@", "-c", lib.format(fn="load_result"), "r.json"],
                rc=2,
                server=None,
                setup=mutated_result("r.json", neg(path, value)),
            )
        )
    cases.append(
        Case(
            "results",
            "load_result-deep",
            ["@PY@", "-c", lib.format(fn="load_result"), "r.json"],
            rc=2,
            server=None,
            setup=files(r__json=DEEP),
        )
    )
    cases.append(
        Case(
            "results",
            "load_mem-deep",
            ["@PY@", "-c", lib.format(fn="load_mem"), "m.json"],
            rc=2,
            server=None,
            setup=files(m__json=DEEP),
        )
    )

    def neg_mem(ctx: Ctx) -> None:
        d = json.loads(FIXTURES["mem"].read_text())
        d["processes"][0]["rss"] = -4096
        d["totals"]["processes"] = -1
        ctx.write("m.json", json.dumps(d))

    cases.append(
        Case(
            "results",
            "load_mem-negative",
            ["@PY@", "-c", lib.format(fn="load_mem"), "m.json"],
            rc=2,
            server=None,
            setup=neg_mem,
        )
    )
    cases.append(
        Case(
            "results", "report-mem-negative", [P, "report", "m.json", "-o", "m.html"], rc=2, server=None, setup=neg_mem
        )
    )

    def neg_compare(ctx: Ctx) -> None:
        d = json.loads(FIXTURES["compare"].read_text())
        d["trials"][0]["complete"] = -9
        d["variants"][0]["complete"] = -9
        ctx.write("c.json", json.dumps(d))

    cases.append(
        Case(
            "results",
            "report-compare-negative",
            [P, "report", "c.json", "-o", "c.html"],
            rc=2,
            server=None,
            setup=neg_compare,
        )
    )
    cases.append(
        Case(
            "results",
            "report-good-result",
            [P, "report", "r.json", "-o", "r.html"],
            rc=0,
            server=None,
            setup=fixture("bench", "r.json"),
            outputs=(),
            timeout=60,
        )
    )
    return cases


def fam_rates() -> list[Case]:
    def body_for(total: int) -> int:
        head = len(f"HTTP/1.1 200 OK\r\nContent-Length: {total}\r\nContent-Type: text/plain\r\n\r\n")
        return total - head

    return [
        Case(
            "rates",
            "rate-10-for-5s",
            [P, "bench", "@URL@", "--rate", "10", "-d", "5s", "--json", "out.json"],
            rc=0,
            checks=(rate_within(10, 5),),
            timeout=20,
        ),
        Case(
            "rates",
            "rate-1-for-5s",
            [P, "bench", "@URL@", "--rate", "1", "-d", "5s", "--json", "out.json"],
            rc=0,
            checks=(rate_within(1, 5),),
            timeout=20,
        ),
        Case(
            "rates",
            "rate-10-for-1s",
            [P, "bench", "@URL@", "--rate", "10", "-d", "1s", "--json", "out.json"],
            rc=0,
            checks=(rate_within(10, 1),),
            timeout=20,
        ),
        Case(
            "rates",
            "rate-ramp-to-0",
            [P, "bench", "@URL@", "--rate", "100..0", "-d", "1s", "--json", "out.json"],
            rc=0,
            checks=(elapsed_is(1),),
            timeout=20,
        ),
        Case(
            "rates",
            "rate-tiny",
            [P, "bench", "@URL@", "--rate", "0.001", "-d", "2s", "--json", "out.json"],
            rc=(0, 1),
            checks=(elapsed_is(2),),
            timeout=20,
        ),
        Case(
            "rates",
            "stages",
            [P, "bench", "@URL@", "--stages", "1s@20,1s@40", "--json", "out.json"],
            rc=0,
            checks=(rate_within(30, 2),),
            timeout=20,
        ),
        Case(
            "rates",
            "throttle-400B-100Bps",
            [P, "bench", "@URL@", "-n", "1", "-c", "1", "--throttle", "100B/s", "--json", "out.json"],
            rc=0,
            server_extra=("--body-size", str(body_for(400))),
            checks=(throttled(100),),
            timeout=30,
        ),
        Case(
            "rates",
            "throttle-2KB-33.6kbps",
            [P, "bench", "@URL@", "-n", "1", "-c", "1", "--throttle", "33.6kbps", "--json", "out.json"],
            rc=0,
            server_extra=("--body-size", str(body_for(2000))),
            checks=(throttled(33600 / 8),),
            timeout=30,
        ),
        Case(
            "rates",
            "throttle-100KB-50KBps",
            [P, "bench", "@URL@", "-n", "1", "-c", "1", "--throttle", "50KB/s", "--json", "out.json"],
            rc=0,
            server_extra=("--body-size", str(body_for(100_000))),
            checks=(throttled(50_000),),
            timeout=30,
        ),
        Case(
            "rates",
            "throttle-5KB-1KBps",
            [P, "bench", "@URL@", "-n", "1", "-c", "1", "--throttle", "1KB/s", "--json", "out.json"],
            rc=0,
            server_extra=("--body-size", str(body_for(5000))),
            checks=(throttled(1000),),
            timeout=30,
        ),
    ]


def fam_lock() -> list[Case]:
    def held_by_other(ctx: Ctx) -> None:
        fixture("tune", "R")(ctx)
        holder = flock_holder(ctx.path("R/.pounder.lock"))
        JANITOR.add_proc(holder)
        ctx.bg.append(holder)
        assert holder.stdout is not None
        holder.stdout.readline()
        ctx.vars["HOLDER"] = holder.pid

    def resumed_in_background(ctx: Ctx) -> None:
        fixture("tune", "R")(ctx)
        a = ctx.spawn(
            [P, "tune", "--resume", "R"],
            stdout=open(ctx.logdir / f"{ctx.index}.a.out", "wb"),
            stderr=open(ctx.logdir / f"{ctx.index}.a.err", "wb"),
        )
        ctx.vars["A"] = a.pid
        lock = ctx.path("R/.pounder.lock")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if lock.exists() and lock.read_text().strip() == str(a.pid):
                time.sleep(0.5)
                return
            if a.poll() is not None:
                raise RuntimeError(f"the first resume ended (exit {a.returncode}) before the second started")
            time.sleep(0.1)
        raise RuntimeError("the first resume never took the lock")

    def first_one_stops(ctx: Ctx, res: Result) -> Iterable[str]:
        a = next(p for p in ctx.bg if p.pid == ctx.vars["A"])
        if a.poll() is not None:
            yield f"the first resume had ended (exit {a.returncode}) when the second was refused"
            return
        os.killpg(a.pid, signal.SIGINT)
        try:
            rc = a.wait(5)
        except subprocess.TimeoutExpired:
            yield "the first resume did not stop within 5 s of SIGINT"
            return
        if rc != 130:
            yield f"the first resume exited {rc} after SIGINT (130 promised)"
        time.sleep(1.0)
        import psutil

        left = [
            p.pid
            for p in psutil.process_iter(["cmdline"])
            if "famc-" in " ".join(p.info["cmdline"] or []) and "fixture" in " ".join(p.info["cmdline"] or [])
        ]
        if left:
            yield f"the first resume left its server: {left}"

    return [
        Case(
            "lock",
            "resume-held-by-other-process",
            [P, "tune", "--resume", "R"],
            rc=2,
            server=None,
            setup=held_by_other,
            err=r"@HOLDER@",
            checks=(names("@HOLDER@"),),
            timeout=20,
        ),
        Case(
            "lock",
            "two-resumes-at-once",
            [P, "tune", "--resume", "R"],
            rc=2,
            server=None,
            setup=resumed_in_background,
            checks=(names("@A@"), first_one_stops),
            outputs=("R/*",),
            timeout=30,
        ),
        Case(
            "lock",
            "stale-lock-file-ignored",
            [P, "tune", "--resume", "R"],
            rc=130,
            server=None,
            setup=lambda c: (fixture("tune", "R")(c), c.write("R/.pounder.lock", "999999\n")),
            outputs=("R/*",),
            signal=signal.SIGINT,
            signal_at=4.0,
            timeout=40,
            grace=5,
            err="--resume",
        ),
    ]


def fam_ray() -> list[Case]:
    return [
        Case(
            "ray",
            f"local-startup-sigint-at-{at:g}s",
            [P, "bench", "@URL@", "-d", "5s", "--ray", "local", "--json", "out.json"],
            rc=130,
            signal=signal.SIGINT,
            signal_at=at,
            signal_group=True,
            timeout=90,
            grace=10,
            err="interrupted",
            note="item 12: Ctrl-C during --ray local start-up",
        )
        for at in (3.0, 6.0)
    ]


def fam_servers() -> list[Case]:
    """A server that fails says why from its own log, in at most 20 lines (the user's file and line
    for a configuration error), and is stopped."""

    def stderr_lines_at_most(n: int) -> Check:
        def stderr_lines_at_most(ctx: Ctx, res: Result) -> Iterable[str]:
            lines = res.err_lines()
            if len(lines) > n:
                yield f"{len(lines)} lines on stderr (the log tail is at most 20 lines)"

        return stderr_lines_at_most

    failing = (
        "bash -c 'for i in $(seq 1 100000); do echo log line $i of a failing app; done; "
        "echo FATAL: cannot load app >&2; exit 3' @TAG@{port}"
    )
    return [
        Case(
            "servers",
            "apache-syntax-error",
            [P, "tune", "apache", "bad.conf", *TUNE_QUICK, "--results", "R"],
            rc=1,
            server=None,
            setup=files(bad__conf="ServerName families\nNoSuchDirective here\n"),
            err=r"line 2 of \S*bad\.conf",
            checks=(stderr_lines_at_most(26),),
            outputs=("R/*",),
            timeout=60,
            grace=5,
        ),
        Case(
            "servers",
            "failing-app-huge-log",
            [P, "tune", "command", failing, *TUNE_QUICK, "--results", "R"],
            rc=1,
            server=None,
            err="FATAL: cannot load app",
            checks=(stderr_lines_at_most(26),),
            timeout=90,
            grace=5,
        ),
        Case(
            "servers",
            "command-own-port-in-use",
            [
                P,
                "tune",
                "command",
                "@PY@ @SRV@ --mode prefork --port @PORT@ --workers 2 --tag @TAG@ --body-size {port}",
                *TUNE_QUICK,
                "--results",
                "R",
            ],
            rc=1,
            checks=(
                lambda c, r: ["blames 'taken twice'"] if "taken twice" in r.err else [],
                lambda c, r: (
                    []
                    if re.search(r"in use|@PORT@", c.subst([r.err])[0]) or str(c.port) in r.err
                    else ["the message does not say the command's own port is in use"]
                ),
            ),
            timeout=60,
            grace=5,
        ),
        Case(
            "servers",
            "tune-results-full-disk",
            [P, "tune", "command", tune_command(), "--results", "full/R", *TUNE_QUICK],
            rc=1,
            server=None,
            setup=lambda c: c.mount_tmpfs("full", "12k"),
            timeout=90,
            grace=5,
        ),
    ]


PARALLEL = {"options", "urls", "inputs", "aliases", "writes", "results"}
"""Families whose cases may run two at a time: bad inputs and outputs, where no timing is promised."""

import round3_configs  # noqa: E402
import round3_https  # noqa: E402
import round3_profile_top  # noqa: E402
import round3_replay  # noqa: E402
import round3_report  # noqa: E402
import round3_statuses  # noqa: E402

FAMILIES = {
    "options": fam_options,
    "urls": fam_urls,
    "inputs": fam_inputs,
    "aliases": fam_aliases,
    "writes": fam_writes,
    "hostile": fam_hostile,
    "signals": fam_signals,
    "orphans": fam_orphans,
    "limits": fam_limits,
    "network": fam_network,
    "results": fam_results,
    "rates": fam_rates,
    "lock": fam_lock,
    "servers": fam_servers,
    "ray": fam_ray,
}
for _module in (round3_statuses, round3_https, round3_replay, round3_report, round3_profile_top, round3_configs):
    FAMILIES.update(_module.FAMILIES)

# ------------------------------------------------------------------------------------------------
# Fixtures: a bench result, a compare result, a mem result and an interrupted tune run


def make_fixtures(base: Path, needed: set[str]) -> None:
    fdir = base / "_fixtures"
    fdir.mkdir(parents=True, exist_ok=True)
    (base / "_logs").mkdir(parents=True, exist_ok=True)
    srv = start_server("ok", base / "_logs", "fixture")
    try:

        def run(argv: list[str], **kw) -> subprocess.CompletedProcess[str]:
            return subprocess.run(argv, cwd=fdir, capture_output=True, text=True, timeout=120, **kw)

        if needed & {"bench"}:
            done = run([POUNDER, "bench", srv.url, "-n", "300", "-c", "2", "-q", "--json", "bench.json"])
            if done.returncode != 0:
                raise RuntimeError(f"fixture bench: {done.stderr}")
            FIXTURES["bench"] = fdir / "bench.json"
        if needed & {"compare"}:
            done = run(
                [
                    POUNDER,
                    "compare",
                    srv.url,
                    srv.url + "x",
                    "--trials",
                    "3",
                    "-d",
                    "200ms",
                    "--no-warmup",
                    "-q",
                    "--json",
                    "compare.json",
                ]
            )
            if done.returncode != 0:
                raise RuntimeError(f"fixture compare: {done.stderr}")
            FIXTURES["compare"] = fdir / "compare.json"
        if needed & {"mem"}:
            done = run([POUNDER, "mem", "--server-pid", str(srv.proc.pid), "--json", "mem.json"])
            if done.returncode != 0:
                raise RuntimeError(f"fixture mem: {done.stderr}")
            FIXTURES["mem"] = fdir / "mem.json"
        if needed & {"tune"}:
            cmd = tune_command(tag=f"{CASE_MARK}-fixture").replace("@PY@", PY).replace("@SRV@", str(SERVERS))
            proc = subprocess.Popen(
                [POUNDER, "tune", "command", cmd, "--results", "tune", *TUNE_QUICK],
                cwd=fdir,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            JANITOR.add_proc(proc)
            deadline = time.monotonic() + 60
            points = fdir / "tune" / "points"
            while time.monotonic() < deadline and proc.poll() is None:
                if points.is_dir() and len(list(points.iterdir())) >= 2:
                    break
                time.sleep(0.2)
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                JANITOR.stop_procs([proc])
            JANITOR.stop_procs([proc])
            if not (fdir / "tune" / "tune.json").exists():
                raise RuntimeError("fixture tune: no tune.json")
            (fdir / "tune" / ".pounder.lock").unlink(missing_ok=True)
            FIXTURES["tune"] = fdir / "tune"
    finally:
        JANITOR.stop_procs([srv.proc])


# ------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", help="only these families (comma-separated): " + ", ".join(FAMILIES))
    parser.add_argument("--case", help="only cases whose family/name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="show stderr and stdout of failing cases")
    parser.add_argument("--keep", action="store_true", help="keep the case directories and logs")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=2,
        help="cases run at once in the families where timing does not matter (default 2)",
    )
    args = parser.parse_args()
    chosen = args.family.split(",") if args.family else list(FAMILIES)
    unknown = [f for f in chosen if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown family {unknown[0]!r}; families: {', '.join(FAMILIES)}")
    cases = [c for f in chosen for c in FAMILIES[f]()]
    if args.case:
        cases = [c for c in cases if args.case in c.id]
    if args.list:
        for c in cases:
            print(c.id)
        print(f"{len(cases)} cases")
        return 0
    if os.geteuid() != 0:
        print("run.py: needs root (tmpfs mounts, unshare, prlimit)", file=sys.stderr)
        return 2

    def on_term(signum, frame):
        raise KeyboardInterrupt

    # pounder keeps a signal its caller ignores ignored (nohup, `cmd &`): the cases need them delivered
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    probe = subprocess.run([POUNDER, "--version"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        said = probe.stderr.strip()[-300:]
        print(f"run.py: {POUNDER} --version fails (exit {probe.returncode}): {said}", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="pounder-families-"))
    base.chmod(0o755)  # servers that drop privileges (Apache's children) must reach their directories
    started = time.monotonic()
    results: list[tuple[Case, bool, float, list[str], Result | None, Ctx]] = []
    print(f"pounder families: {len(cases)} cases, {probe.stdout.strip()} = {POUNDER}, work in {base}", flush=True)
    try:
        need = set()
        fams = {c.family for c in cases}
        if fams & {"inputs", "aliases", "writes", "results", "report"}:
            need |= {"bench"}
        if fams & {"results", "report"}:
            need |= {"mem", "compare"}
        if fams & {"aliases", "lock"}:
            need |= {"tune"}
        if need:
            t = time.monotonic()
            make_fixtures(base, need)
            print(f"fixtures ({', '.join(sorted(need))}) in {time.monotonic() - t:.1f} s", flush=True)
        runner = Runner(base, args.verbose)

        def report(case: Case, *outcome) -> None:
            _report(results, args.verbose, case, *outcome)

        blocks: list[list[Case]] = []
        for case in cases:
            if blocks and (case.family in PARALLEL) == (blocks[-1][0].family in PARALLEL):
                blocks[-1].append(case)
            else:
                blocks.append([case])
        for block in blocks:
            if block[0].family in PARALLEL and args.jobs > 1:
                pool = concurrent.futures.ThreadPoolExecutor(args.jobs)
                try:
                    futures = [pool.submit(runner.run_case, case) for case in block]
                    for case, future in zip(block, futures, strict=False):
                        report(case, *future.result())
                finally:
                    pool.shutdown(wait=False, cancel_futures=True)
            else:
                for case in block:
                    report(case, *runner.run_case(case))
    except KeyboardInterrupt:
        print("run.py: interrupted", file=sys.stderr)
    finally:
        JANITOR.everything()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    passed = sum(1 for r in results if r[1])
    total = time.monotonic() - started
    failed = [r for r in results if not r[1]]
    print()
    if failed:
        print("Failing cases:")
        for case, _, _took, why, _res, _ctx in failed:
            print(f"  {case.id}: {'; '.join(why)}")
    print(f"{passed} of {len(results)} cases handled as promised ({len(cases)} planned), in {total:.0f} s")
    return 0 if passed == len(results) == len(cases) else 1


def _report(
    results: list, verbose: bool, case: Case, ok: bool, took: float, why: list[str], res: Result | None, ctx: Ctx
) -> None:
    results.append((case, ok, took, why, res, ctx))
    status = "PASS" if ok else "FAIL"
    detail = "; ".join(why) if why else ("; ".join(ctx.notes) if ctx.notes else "")
    rc = "timeout" if res is None or res.timed_out else f"exit {res.rc}"
    print(f"{status} {took:6.2f}s  {case.id:<52} {rc:<8} {detail}", flush=True)
    if not ok and verbose and res is not None:
        argv = " ".join(repr(a) if (" " in a or not a) else a for a in ctx.vars.get("argv", []))
        print(f"       argv: {argv[:600]}")
        err_lines = res.err.splitlines()
        shown = err_lines if len(err_lines) <= 8 else [*err_lines[:5], "...", *err_lines[-3:]]
        for line in shown:
            print(f"       stderr| {line[:300]}")
        if res.out:
            for line in res.out.splitlines()[:3]:
                print(f"       stdout| {line[:200]}")


if __name__ == "__main__":
    sys.exit(main())
