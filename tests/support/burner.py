"""A neighbour on the machine: a process that burns 0.5-1 core in bursts, as a staging box's other
tenants, a laptop's browser or a CI runner's other jobs do (the busy-machine tuning tests).

Run as a program it alternates a busy loop (one core) for 0.4-1.2 s with a pause of 0.1-0.5 s
(random, seeded): about 0.75 of a core on average over a second or more, 1 core during a burst, 0
in a pause. :func:`burning` starts it in a process group of its own and kills that group when its
block ends, also on failure; should the test process itself be killed (SIGKILL), the kernel kills
the burner with it (PR_SET_PDEATHSIG), so no neighbour outlives a run."""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pounder.servers import die_with_parent_hook

BURST_S = (0.4, 1.2)
PAUSE_S = (0.1, 0.5)


def burn(seed: int, limit_s: float) -> None:
    """Bursts and pauses until ``limit_s`` seconds have passed (a safety net: :func:`burning` stops it first)."""
    rng = random.Random(seed)
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        stop = time.monotonic() + rng.uniform(*BURST_S)
        spins = 0
        while time.monotonic() < stop:
            spins += 1
        time.sleep(rng.uniform(*PAUSE_S))


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` from /proc/PID/stat, seconds (the test's own reading)."""
    with open(f"/proc/{pid}/stat") as file:
        fields = file.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def burning(seed: int = 1, limit_s: float = 900.0) -> Iterator[subprocess.Popen[bytes]]:
    """The burner running for the block (its own process group, killed at the end, also on failure)."""
    process = subprocess.Popen([sys.executable, __file__, "--seed", str(seed), "--limit", str(limit_s)],
                               start_new_session=True, stdin=subprocess.DEVNULL,
                               preexec_fn=die_with_parent_hook(signal.SIGKILL))
    try:
        yield process
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=float, default=900.0)
    arguments = parser.parse_args()
    burn(arguments.seed, arguments.limit)
