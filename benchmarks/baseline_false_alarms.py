"""How often a saved baseline calls the same server slower: the false-alarm rate of
``pounder bench --baseline OLD.json --fail-if ...``.

The same server, run twice, ``--pairs`` times (default 20): each run starts its own gunicorn (2
sync workers, the demo app :mod:`pounder.demo.app`, 1 MB of preloaded data, 2 ms of CPU per
request) on the same loopback port, warms it up for 1 s and benches it closed loop (4
connections, ``--seconds`` long, default 5), then stops it. The first run of each pair is the
baseline, the second the new run. Nothing changed between them, so every gate that fires is a
false alarm. The gates: ``slower>5%`` (requests/s in closed loop), ``p99-slower>10%``,
``slower>10%`` and ``p99-slower>25%``.

Two steps, so that the verdicts can be worked out again from the same runs:

    flock /tmp/team/live.lock python benchmarks/baseline_false_alarms.py record DIR [--pairs 20] [--seconds 5]
    flock /tmp/team/live.lock python benchmarks/baseline_false_alarms.py interleaved DIR2 [--rounds 20]
    python benchmarks/baseline_false_alarms.py evaluate DIR --interleaved DIR2 \
        [--write benchmarks/results/baseline_false_alarms.json]

``record`` writes ``DIR/pair-NN-old.json`` and ``DIR/pair-NN-new.json`` (bench results);
``evaluate`` compares each new run with its old one (:func:`pounder.results.compare_with_baseline`
and the gates on it, as ``pounder bench --baseline`` does) and prints how many pairs each gate failed; with
``--write`` it writes the figures that README and the baseline comparison's text quote
(tests/results/test_baseline.py checks that they are the file's). This is a benchmark, not a
test: it asserts nothing.

For contrast, ``interleaved`` asks the question the way ``pounder compare`` does: ``--rounds`` times
a fresh gunicorn and ``pounder compare`` of its URL against itself, 5 interleaved trials of 1 s a
side after a warm-up trial each (about as long as a pair of baseline runs), ``slower>5%`` evaluated;
``evaluate --interleaved DIR2`` counts how often it fired and how often the verdict was not "no
clear difference".
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pounder
from pounder.results import BASELINE_METRICS, compare_with_baseline, evaluate_gates, parse_gates

GATES = ("slower>5%", "p99-slower>10%", "slower>10%", "p99-slower>25%")
WORKERS = 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_answering(port: int, process: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"GET /health HTTP/1.0\r\nHost: x\r\n\r\n")
                if sock.recv(16).startswith(b"HTTP/1."):
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("gunicorn did not answer in 30 s")


def _run(port: int, seconds: int, path: Path) -> None:
    """One run: a fresh gunicorn, 1 s of warm-up, ``seconds`` measured, the server stopped."""
    process = _serving(port)
    try:
        result = pounder.bench(f"http://127.0.0.1:{port}/", connections=4, duration=f"{seconds}s", warmup="1s")
        path.write_text(result.to_json(), encoding="utf-8")
    finally:
        _stop(process)


def _serving(port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DEMO_PRELOAD_MB": "1", "DEMO_CPU_MS": "2"}
    command = [sys.executable, "-m", "gunicorn", "-w", str(WORKERS), "-b", f"127.0.0.1:{port}",
               "--log-level", "warning", "pounder.demo.app:app"]  # fmt: skip
    process = subprocess.Popen(command, env=env, start_new_session=True)
    _wait_answering(port, process)
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def interleaved(folder: Path, rounds: int) -> None:
    """The same question asked the interleaved way, for contrast: ``rounds`` times a fresh
    gunicorn, and ``pounder compare`` of its URL against itself (5 trials of 1 s each, after a
    warm-up trial each: about as long as a pair of baseline runs), ``slower>5%`` evaluated."""
    from pounder.compare import Variant, compare

    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    for index in range(1, rounds + 1):
        process = _serving(port)
        try:
            url = f"http://127.0.0.1:{port}/"
            result = compare([Variant("old", url), Variant("new", url)], trials=5, duration="1s", connections=4,
                             gates=["slower>5%"], results=folder / f"compare-{index:02d}.json")
        finally:
            _stop(process)
        print(f"round {index} of {rounds}: {result.comparison('new').verdict}", file=sys.stderr)


def record(folder: Path, pairs: int, seconds: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    for pair in range(1, pairs + 1):
        for side in ("old", "new"):
            _run(port, seconds, folder / f"pair-{pair:02d}-{side}.json")
        print(f"pair {pair} of {pairs} recorded", file=sys.stderr)
    (folder / "recorded.json").write_text(json.dumps({
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "pairs": pairs, "seconds": seconds,
        "load": f"closed loop, 4 connections, {seconds} s after 1 s of warm-up",
        "server": f"gunicorn, {WORKERS} sync workers, pounder.demo.app (2 ms of CPU per request), a fresh one per run",
    }, indent=2) + "\n", encoding="utf-8")  # fmt: skip


def _interleaved_figures(folder: Path) -> dict[str, int]:
    """From ``interleaved``'s comparisons: the rounds, those whose slower>5% did not pass, those
    whose verdict was faster or slower."""
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("compare-*.json"))]
    rounds = [document for document in documents if "gates" in document]  # finished (pounder/compare/1)
    fired = different = 0
    for document in rounds:
        fired += any(gate["verdict"] != "pass" for gate in document["gates"])
        different += document["comparisons"][0]["verdict"] != "no clear difference"
    return {"rounds": len(rounds), "fired": fired, "different": different}


def evaluate(folder: Path, write: Path | None, interleaved_folder: Path | None = None) -> None:
    recorded = json.loads((folder / "recorded.json").read_text(encoding="utf-8"))
    pairs = recorded["pairs"]
    gates = parse_gates(GATES, metrics=BASELINE_METRICS)
    fired = dict.fromkeys(GATES, 0)
    different = 0  # pairs whose headline verdict (requests/s) was "faster" or "slower"
    ratios: dict[str, list[float]] = {"requests/s": [], "p99": []}
    for pair in range(1, pairs + 1):
        old = pounder.load_result(folder / f"pair-{pair:02d}-old.json")
        new = pounder.load_result(folder / f"pair-{pair:02d}-new.json")
        baseline = compare_with_baseline(new, old, f"pair-{pair:02d}-old.json")
        for verdict in evaluate_gates(gates, replace(new, baseline=baseline)).results:
            if not verdict.passed:
                fired[verdict.gate.text] += 1
        different += baseline.verdict != "no clear difference"
        for figure in baseline.figures:
            if figure.ratio is not None:
                ratios[figure.label].append(figure.ratio)
    print(f"{pairs} pairs of runs of the same server ({recorded['server']}; {recorded['load']}), "
          f"recorded {recorded['date']}")  # fmt: skip
    for gate, count in fired.items():
        print(f"  {gate:<16} fired in {count:>2} of {pairs} pairs ({count / pairs:.0%})")
    print(f"  the verdict on requests/s was faster or slower (not 'no clear difference') in {different} of {pairs} "
          f"pairs ({different / pairs:.0%})")
    for name, values in ratios.items():
        if values:
            print(f"  new/old {name}: from {min(values):.3f} to {max(values):.3f}")
    contrast = None if interleaved_folder is None else _interleaved_figures(interleaved_folder)
    if contrast is not None:
        print(f"pounder compare of the same server against itself (5 interleaved trials of 1 s a side), "
              f"{contrast['rounds']} rounds: slower>5% fired in {contrast['fired']}, the verdict said faster or "
              f"slower in {contrast['different']}")  # fmt: skip
    if write is not None:
        write.parent.mkdir(parents=True, exist_ok=True)
        write.write_text(json.dumps({
            **recorded,
            "command": ("flock /tmp/team/live.lock python benchmarks/baseline_false_alarms.py record DIR "
                        f"--pairs {pairs} --seconds {recorded['seconds']}; "
                        + ("" if contrast is None else "flock /tmp/team/live.lock python "
                           f"benchmarks/baseline_false_alarms.py interleaved DIR2 --rounds {contrast['rounds']}; ")
                        + "python benchmarks/baseline_false_alarms.py evaluate DIR "
                        + ("" if contrast is None else "--interleaved DIR2 ")
                        + "--write benchmarks/results/baseline_false_alarms.json"),
            "fired": fired,
            "different": different,
            "low": round(min(ratios["requests/s"]), 4),
            "high": round(max(ratios["requests/s"]), 4),
            **({} if contrast is None else {"interleaved": contrast}),
            "ratios": {name: [round(value, 4) for value in values] for name, values in ratios.items()},
        }, indent=2) + "\n", encoding="utf-8")  # fmt: skip
        print(f"written: {write}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    rec = sub.add_parser("record", help="run the pairs (take /tmp/team/live.lock)")
    rec.add_argument("folder", type=Path)
    rec.add_argument("--pairs", type=int, default=20)
    rec.add_argument("--seconds", type=int, default=5)
    ev = sub.add_parser("evaluate", help="the gates' verdicts on recorded pairs")
    ev.add_argument("folder", type=Path)
    ev.add_argument("--write", type=Path, default=None)
    ev.add_argument("--interleaved", type=Path, default=None, help="the folder of the interleaved step")
    inter = sub.add_parser("interleaved", help="pounder compare of the same server against itself (take the lock)")
    inter.add_argument("folder", type=Path)
    inter.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    if args.step == "interleaved":
        interleaved(args.folder, args.rounds)
    elif args.step == "record":
        record(args.folder, args.pairs, args.seconds)
    else:
        evaluate(args.folder, args.write, args.interleaved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
