"""Open-loop precision of pounder's two I/O paths (io_uring and epoll), side by side.

Two measurements, each over --rounds interleaved rounds (the path that goes first alternates):

freeze: the test server of tests/support (freeze mode: every response held during the windows
[k s, k s + 250 ms), k >= 1, of its own clock; 5 ms otherwise) loaded open loop at 200 req/s for
4 s on each path. A run of a whole number of periods holds every phase of the period equally,
wherever it starts, so the corrected latency's distribution is the same on every run: a
quarter of the requests wait up to 250 ms, and the corrected p90 is about 155 ms. Target: the
io_uring path's p90 within +-15 % of the epoll path's (the median of the per-round ratios).

send time: open loop at --rate (default 10,000 req/s) for 3 s against a private nginx (one
worker, the other core), one engine thread; from the TSV, each request's send-time error
|start_unix_us - (the run's start_unix_us + intended_offset_us)|: its median and p99 per run,
the median over the rounds per path. Target: within 100 µs (a PASS/FAIL for the median and for
the p99; and the share of sends within it).

The engine is driven through pounder.load.load_engine() with a spec of its own (the result's
start_unix_us is needed for the TSV's intended times), in this process pinned to one core, the
servers to the other. This is a benchmark, not a test: it prints and asserts nothing.

    python benchmarks/precision.py [--rounds 5] [--rate 10000] [--only freeze|send]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peers import CLIENT_CPU, SERVER_CPU, nginx_server, stop

from pounder.load import load_engine

ROOT = Path(__file__).resolve().parent.parent
TESTSERVER = ROOT / "tests" / "support" / "testserver.py"
PATHS = ("uring", "epoll")
FREEZE_MS, FREEZE_EVERY_MS, FREEZE_DELAY_MS = 250, 1000, 5
FREEZE_RATE, FREEZE_S = 200, 4.0  # 4 whole periods
SEND_S = 3.0
WARMUP_S = 1.0
P90_TOLERANCE = 0.15
SEND_TARGET_US = 100


def engine_run(spec: dict[str, Any], limit_s: float) -> dict[str, Any]:
    """Run one engine spec to its end (cancelled after limit_s) and return its result."""
    run = load_engine().start(spec)
    deadline = time.monotonic() + limit_s
    while not run.wait(0.5):
        if time.monotonic() > deadline:
            run.cancel()
    text = run.result()
    assert text is not None
    result: dict[str, Any] = json.loads(text)
    got = (result.get("io") or {}).get("path")
    if got != spec["io"]:
        raise SystemExit(f"precision: asked for io {spec['io']}, the result says {got!r}")
    return result


def spec_for(port: int, path: str, io: str, rate: float, seconds: float, tsv: Path | None = None) -> dict[str, Any]:
    """Open loop at rate for seconds after a 1 s warm-up (its connections opened; a whole freeze period)."""
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: pounder-precision\r\n\r\n".encode()
    return {
        "targets": [{"tcp": f"127.0.0.1:{port}", "request": request}],
        "connections": 1000,
        "threads": 1,
        "stages": [[seconds, rate, rate]],
        "warmup_s": WARMUP_S,
        "timeout_s": 10.0,
        "io": io,
        "tsv_path": None if tsv is None else str(tsv),
    }


def start_freeze_server(workdir: Path) -> tuple[subprocess.Popen[bytes], int, float]:
    """The freeze test server on SERVER_CPU: its process, port and the monotonic time its clock started."""
    proc = subprocess.Popen(
        [
            "taskset",
            "-c",
            SERVER_CPU,
            sys.executable,
            str(TESTSERVER),
            "--port",
            "0",
            "--mode",
            "freeze",
            "--delay-ms",
            str(FREEZE_DELAY_MS),
            "--freeze-ms",
            str(FREEZE_MS),
            "--freeze-every-ms",
            str(FREEZE_EVERY_MS),
            "--count-file",
            str(workdir / "counts.json"),
            "--max-lifetime",
            "600",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    if not select.select([proc.stdout], [], [], 15)[0]:
        proc.kill()
        raise SystemExit("precision: the freeze server did not start")
    started = time.monotonic()  # its clock started just before READY
    line = proc.stdout.readline().decode().strip()
    if not line.startswith("READY "):
        proc.kill()
        raise SystemExit(f"precision: the freeze server said {line!r}")
    return proc, int(line.split()[1]), started


def rotate(r: int) -> tuple[str, ...]:
    return PATHS if r % 2 == 0 else PATHS[::-1]


def freeze(rounds: int) -> dict[str, list[float]]:
    """Corrected p90 (µs) per path per round against the freeze server."""
    p90: dict[str, list[float]] = {io: [] for io in PATHS}
    with tempfile.TemporaryDirectory(prefix="pounder-precision-") as tmp:
        proc, port, started = start_freeze_server(Path(tmp))
        try:
            # windows exist from 1 s on: a run that starts after 0.25 s holds every phase equally
            time.sleep(max(0.0, started + FREEZE_EVERY_MS / 1000 - time.monotonic()))
            for r in range(rounds):
                for io in rotate(r):
                    result = engine_run(spec_for(port, "/", io, FREEZE_RATE, FREEZE_S), FREEZE_S + 30)
                    requests = result["requests"]
                    if requests["failed"] or requests["unsent"]:
                        print(f"precision: freeze, {io}: {requests}", file=sys.stderr)
                    p90[io].append(float(result["latency"]["corrected"]["percentiles"]["90"]))
                print(f"precision: freeze round {r + 1} of {rounds} done", file=sys.stderr)
        finally:
            stop(proc, signal.SIGTERM)
    return p90


@dataclass
class SendErrors:
    """|actual - intended| send time over one run's TSV rows, µs."""

    median: float
    p99: float
    within: float  # the share of rows within SEND_TARGET_US
    rows: int


def send_errors(tsv: Path, start_unix_us: int) -> SendErrors:
    with tsv.open(newline="") as f:
        rows = csv.DictReader(f, delimiter="\t")
        errors = sorted(
            abs(int(row["start_unix_us"]) - (start_unix_us + int(row["intended_offset_us"]))) for row in rows
        )
    if not errors:
        raise SystemExit(f"precision: the TSV {tsv} has no rows")
    p99 = errors[min(len(errors) - 1, int(len(errors) * 0.99))]
    within = sum(e <= SEND_TARGET_US for e in errors) / len(errors)
    return SendErrors(float(statistics.median(errors)), float(p99), within, len(errors))


def send_time(rounds: int, rate: float) -> dict[str, list[SendErrors]]:
    """The send-time error per path per round, against nginx."""
    out: dict[str, list[SendErrors]] = {io: [] for io in PATHS}
    with tempfile.TemporaryDirectory(prefix="pounder-precision-") as tmp:
        with nginx_server(Path(tmp)) as server:
            for r in range(rounds):
                for io in rotate(r):
                    tsv = Path(tmp) / f"{io}-{r}.tsv"
                    result = engine_run(spec_for(server.port, "/index.html", io, rate, SEND_S, tsv), SEND_S + 30)
                    requests = result["requests"]
                    if requests["non_2xx"] or requests["complete"] == 0:
                        raise SystemExit(f"precision: nginx did not answer 200: {result['status']}")
                    if requests["failed"] or requests["unsent"]:
                        print(f"precision: send time, {io}: {requests}", file=sys.stderr)
                    out[io].append(send_errors(tsv, int(result["start_unix_us"])))
                    tsv.unlink()
                print(f"precision: send-time round {r + 1} of {rounds} done", file=sys.stderr)
    return out


def report_freeze(p90: dict[str, list[float]]) -> list[str]:
    ratios = [u / e for u, e in zip(p90["uring"], p90["epoll"], strict=True) if e > 0]
    lines = [
        f"freeze server, open loop {FREEZE_RATE} req/s for {FREEZE_S:g} s ({FREEZE_MS} ms held every "
        f"{FREEZE_EVERY_MS} ms), corrected p90 per round:"
    ]
    for io in PATHS:
        lines.append(
            f"  {io:6} "
            + "  ".join(f"{v / 1000:7.1f} ms" for v in p90[io])
            + f"   median {statistics.median(p90[io]) / 1000:.1f} ms"
        )
    if ratios:
        median = statistics.median(ratios)
        ok = abs(median - 1) <= P90_TOLERANCE
        lines.append(
            f"freeze corrected p90, uring vs epoll: median {median:.3f}x (rounds {min(ratios):.3f}-"
            f"{max(ratios):.3f}; target within +-{P90_TOLERANCE:.0%}): {'PASS' if ok else 'FAIL'}"
        )
    return lines


def report_send(errors: dict[str, list[SendErrors]], rate: float) -> list[str]:
    lines = [
        f"send time at {rate:,.0f} req/s open loop for {SEND_S:g} s against nginx, |actual - intended| "
        f"(the TSV), per round median / p99 / share within {SEND_TARGET_US} µs:"
    ]
    for io in PATHS:
        runs = errors[io]
        each = "  ".join(f"{e.median:.0f}/{e.p99:.0f} µs/{e.within:.1%}" for e in runs)
        lines.append(f"  {io:6} {each}   ({runs[0].rows if runs else 0} rows in the first)")
    for io in PATHS:
        runs = errors[io]
        if not runs:
            continue
        median = statistics.median(e.median for e in runs)
        p99 = statistics.median(e.p99 for e in runs)
        within = statistics.median(e.within for e in runs)
        lines.append(
            f"send-time error at {rate:,.0f} req/s, {io} (medians over {len(runs)} rounds; target {SEND_TARGET_US} "
            f"µs): median {median:.0f} µs: {'PASS' if median <= SEND_TARGET_US else 'FAIL'}; p99 {p99:.0f} µs: "
            f"{'PASS' if p99 <= SEND_TARGET_US else 'FAIL'}; {within:.1%} within {SEND_TARGET_US} µs"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--rate", type=float, default=10_000, help="the send-time run's rate, req/s (default 10000)")
    ap.add_argument("--only", choices=("freeze", "send"), help="only one of the two measurements")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.rate <= 0:
        ap.error("--rounds must be >= 1 and --rate > 0")
    os.sched_setaffinity(0, {int(CLIENT_CPU)})  # the engine's threads, started here, inherit it
    lines: list[str] = []
    if args.only in (None, "freeze"):
        lines += report_freeze(freeze(args.rounds)) + [""]
    if args.only in (None, "send"):
        lines += report_send(send_time(args.rounds, args.rate), args.rate)
    print("\n".join(lines).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
