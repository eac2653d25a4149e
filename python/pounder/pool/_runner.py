"""Measuring one configuration: start the server, warm every child, load it, stop it.

Warming follows the classic method: every child serves at least one request before anything is
measured, so start-up and first-request costs (compiling, building caches) are not counted. A
child has served a request when its CPU time (the kernel's per-process clock) grew by at least
``SERVED_CPU_S`` during a round of load at concurrency = number of children: an idle child blocks
in accept() or wakes for a heartbeat, which costs far less. (The bytes read, ``rchar`` in
``/proc/PID/io``, would be exact but do not count socket ``recv()``.) Rounds repeat until every
child has served one.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pounder._errors import PounderError, public
from pounder._units import MIB
from pounder.load import BenchResult, BenchSpec, Progress, ProgressCallback, run_bench
from pounder.pool._adapters import Adapter, PoolParams
from pounder.procs import PoolSnapshot, ServerSampler, find_server, mem_available, process_cpu_clock, snapshot
from pounder.servers import ManagedServer

WARM_ROUNDS = 30
WARM_TIMEOUT_S = 60.0
SAMPLE_INTERVAL_S = 0.5
SERVED_CPU_S = 50e-6


class MemoryFloorError(PounderError):
    """The machine's available memory fell below the floor during a step."""


@public
@dataclass(frozen=True)
class Warmed:
    """How many of the server's children had served a request after warming."""

    children: int
    warmed: int
    requests: int


@public
class Runner:
    """Runs servers for a tuning session or an experiment: each start gets a fresh directory
    under ``root``; ``progress`` receives every bench's live progress; the memory floor is watched
    throughout."""

    def __init__(self, adapter: Adapter, root: Path, path: str, memory_floor: int, timeout_s: float,
                 progress: ProgressCallback | None = None) -> None:
        self.adapter = adapter
        self.root = root
        self.path = path
        self.memory_floor = memory_floor
        self.timeout_s = timeout_s
        self.progress = progress
        self._starts = 0

    def check_memory(self) -> None:
        available = mem_available()
        if available < self.memory_floor:
            raise MemoryFloorError(
                f"the machine's available memory fell to {available / MIB:.0f} MiB, below the floor of "
                f"{self.memory_floor / MIB:.0f} MiB: the step was stopped")

    @contextlib.contextmanager
    def started(self, params: PoolParams) -> Iterator[ManagedServer]:
        """The server started with ``params`` (stopped on exit, whatever happens)."""
        self.check_memory()
        self._starts += 1
        workdir = self.root / f"{self._starts:03d}-{params.max_clients}c"
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        workdir.chmod(0o755)
        server = self.adapter.server(params, workdir)
        try:
            server.start(timeout_s=60.0)
            yield server
        finally:
            server.stop()
            shutil.rmtree(workdir, ignore_errors=True)

    def url(self, server: ManagedServer) -> str:
        return server.url + self.path

    def spec(self, server: ManagedServer, connections: int, *, duration: float | None = None,
             requests: int | None = None) -> BenchSpec:
        return BenchSpec.from_options(self.url(server), connections=connections, duration=duration,
                                      requests=requests, keepalive=False, timeout=self.timeout_s,
                                      threads=1)

    def _watch(self) -> ProgressCallback:
        last = [0.0]
        report = self.progress

        def watch(progress: Progress) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.5:
                last[0] = now
                self.check_memory()
            if report is not None:
                report(progress)

        return watch

    def bench(self, server: ManagedServer, connections: int, *, duration: float | None = None,
              requests: int | None = None, sample: bool = True) -> BenchResult:
        """Load the server (keep-alive off: every request is a new connection, as a child's
        MaxRequestsPerChild counts them in every server); Ctrl-C raises KeyboardInterrupt."""
        sampler = ServerSampler(find_server(pid=server.pid), interval_s=SAMPLE_INTERVAL_S) if sample else None
        result = run_bench(self.spec(server, connections, duration=duration, requests=requests), self._watch(),
                           sampler)
        if result.interrupted:
            raise KeyboardInterrupt
        return result

    def warm(self, server: ManagedServer, rounds: int | None = None) -> Warmed:
        """Load the server until every child has served at least one request (at most ``rounds``
        rounds, default 30, and 60 s). Children that appear meanwhile are watched from then on."""
        baseline: dict[int, float | None] = {}
        warmed: set[int] = set()
        sent = 0
        alive = server.children()
        deadline = time.monotonic() + WARM_TIMEOUT_S
        for _ in range(rounds or WARM_ROUNDS):
            for pid in alive:
                baseline.setdefault(pid, process_cpu_clock(pid))
            count = max(1, len(alive))
            result = self.bench(server, count, requests=2 * count, sample=False)
            sent += result.requests.complete + result.requests.failed
            for pid in alive:
                start, now = baseline[pid], process_cpu_clock(pid)
                if start is not None and now is not None and now - start >= SERVED_CPU_S:
                    warmed.add(pid)
            alive = server.children()
            if warmed >= set(alive) or time.monotonic() > deadline:
                break
        return Warmed(children=len(alive), warmed=len(warmed & set(alive)), requests=sent)

    def snapshot(self, server: ManagedServer) -> PoolSnapshot:
        return snapshot(find_server(pid=server.pid))

