"""Measuring one configuration: start the server, warm every child, load it, stop it.

Warming follows the classic method: every child serves requests before anything is measured, so
start-up and first-request costs (compiling, building caches) are not counted. A child has served
a request when its CPU time (the kernel's per-process clock) grew by at least ``SERVED_CPU_S``
during a round of load at concurrency = number of children: an idle child blocks in accept() or
wakes for a heartbeat, which costs far less. (The bytes read, ``rchar`` in ``/proc/PID/io``,
would be exact but do not count socket ``recv()``.) Then rounds go on until the children's summed
USS and the round's throughput stand still (applications that load lazily - Django, Dancer2 -
grow by megabytes over their first requests): see :meth:`Runner.warm`.

CPUs: the server (and every child it forks) runs on ``server_cpus``, the load generator (the
engine's threads, started in this process by each bench, and the sampler) on ``load_cpus``; see
:func:`~pounder.pool.split_cpus`.

Sender: every measured load is sent by the runner's :class:`~pounder.load.Sender` (opened: Ray
agents elsewhere, so the server keeps its CPUs, or this machine's engine); warming and the probes
of a child's start, which measure nothing, are always sent by this machine's engine.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import signal
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pounder._errors import PounderError, check_instance, public
from pounder._files import write_atomic
from pounder._units import KIB, MIB, children_text, pinned_thread
from pounder.load import ENGINE, BenchSpec, LoadOptions, Progress, ProgressCallback, Sender
from pounder.pool._adapter import Adapter, PoolParams
from pounder.pool._charged import MemoryPeak, charged_memory
from pounder.pool._cpus import check_cpus
from pounder.pool._pod import oom_note, pod_before, pod_figures
from pounder.pool._queue import QueueWatch
from pounder.pool._workload import Workload, url_file_line
from pounder.procs import (
    PoolSnapshot,
    ServerSampler,
    ServerTarget,
    find_server,
    mem_available,
    process_cpu_clock,
    snapshot,
)
from pounder.results import BenchResult, clean_trial, load_failure
from pounder.servers import HOST, ManagedServer, Pod, ServerExitedError, ServerFailure, listen_address

WARM_ROUNDS = 30
WARM_STEADY_GROWTH = 0.8
WARM_TIMEOUT_S = 60.0
WARM_ROUND_REQUESTS = 10
"""Requests per child in a warming round (at least)."""
WARM_ROUND_S = 0.3
"""A warming round lasts at least this long (more requests when the server is fast)."""
WARM_ROUND_MAX_REQUESTS = 5000
WARM_USS_GROWTH = 0.01
WARM_USS_SLACK = 256 * KIB
"""Growth per child always counted as standing still (allocator noise)."""
WARM_RPS_CHANGE = 0.10
WARM_STABLE_ROUNDS = 2
WARM_FAILING_ROUNDS = 3
"""Warming stops after this many rounds in a row that would not count as a trial
(:func:`pounder.results.clean_trial`): children that fail do not settle by warming."""
SAMPLE_INTERVAL_S = 0.5
SERVED_CPU_S = 50e-6
CHILD_START_TIMEOUT_S = 30.0
_POLL_S = 0.01
_SETTLE_POLL_S = 0.05
URL_FILE = "workload.urls"


class MemoryFloorError(PounderError):
    """The machine's available memory (MemAvailable) fell below the runner's ``memory_floor``
    during a step: checked before each server start and on a load's progress, at most every half
    second (:meth:`Runner.check_memory`); the step stops at once."""


@public
@dataclass(frozen=True)
class Warmed:
    """What warming did: ``warmed`` of the ``children`` had served requests; ``settled``: the
    children's summed USS and the throughput stood still for the last rounds (False after a
    single quick round, or when the round cap or the time limit came first); ``rounds`` of load
    sent ``requests``; the last round's throughput ``rps`` and the children's summed USS
    ``uss`` in bytes after it (None when they could not be read)."""

    children: int
    warmed: int
    requests: int
    settled: bool = False
    rounds: int = 1
    rps: float | None = None
    uss: int | None = None
    failing: bool = False
    """Warming stopped because its last rounds each failed more than 1 % of their requests."""

    def describe(self) -> str:
        """``warm: 4/4 children served, USS settled at 123 MiB after 5 rounds``."""
        text = f"warm: {self.warmed}/{children_text(self.children)} served"
        if self.uss is not None:
            state = "settled" if self.settled else "not settled (its requests failed)" if self.failing else \
                "not settled"
            text += f", USS {state} at {self.uss / MIB:,.0f} MiB"
        return text + f" after {self.rounds} round{'s' if self.rounds != 1 else ''}"


@public
class Runner:
    """Runs servers for a tuning session or an experiment: each start gets a fresh directory
    under ``root``; every load sends ``workload`` (a :class:`Workload`, or a path for one GET);
    ``progress`` receives every bench's live progress; the memory floor is watched throughout.
    ``server_cpus`` / ``load_cpus``: the CPUs the server and the load generator run on (None:
    anywhere; see :func:`split_cpus`). ``host``: the address the servers listen on (see
    :func:`~pounder.servers.listen_address`). ``sender``: what sends the measured loads, opened
    (default this machine's engine; see the module's documentation). Every server starts in a
    memory cgroup of its own when one can be made (:meth:`charged` reads it); ``log`` is told
    once why not when none can (also :attr:`cgroup_note`)."""

    def __init__(self, adapter: Adapter, root: Path, workload: Workload | str, memory_floor: int, timeout_s: float,
                 progress: ProgressCallback | None = None, *, server_cpus: Collection[int] | None = None,
                 load_cpus: Collection[int] | None = None, host: str = HOST,
                 sender: Sender | None = None, logs_dir: Path | None = None,
                 log: Callable[[str], None] | None = None, pod: Pod | None = None) -> None:
        self.adapter = adapter
        self.root = root
        self.logs_dir = root.parent / "logs" if logs_dir is None else logs_dir
        """Where the whole logs of a server that failed are kept (``NNN-Mc/`` per start)."""
        self.workload = Workload(path=workload) if isinstance(workload, str) else check_instance(
            workload, Workload, "Runner: workload")
        self.memory_floor = memory_floor
        self.timeout_s = timeout_s
        self.progress = progress
        check_cpus(server_cpus, load_cpus)
        self.server_cpus = None if server_cpus is None else tuple(sorted(set(server_cpus)))
        self.load_cpus = None if load_cpus is None else tuple(sorted(set(load_cpus)))
        self.host = listen_address(host, allow_remote=True)
        self.sender: Sender = check_instance(sender, Sender, "Runner: sender", optional=True) or ENGINE
        self.ready_s: float | None = None
        """Seconds from the latest start until the server answered HTTP with its first children up."""
        self._starts = 0
        self._log = log
        self.cgroup_note = ""
        """Why the servers of this run have no memory cgroup of their own ("" while they have one)."""
        self.pod = pod
        """The pod every server runs in (``--cpus``: a CPU quota and the memory limit; None: none)."""
        self.pod_reading: dict[str, Any] = {}
        """The latest measured load's figures in the pod (:func:`~pounder.pool._pod.pod_figures`; {} without)."""

    @property
    def path(self) -> str:
        """The workload's one path (requested when it has no mix)."""
        return self.workload.path

    @path.setter
    def path(self, value: str) -> None:
        self.workload = replace(self.workload, path=value)

    def check_memory(self) -> None:
        available = mem_available()
        if available < self.memory_floor:
            raise MemoryFloorError(
                f"the machine's available memory fell to {available / MIB:.0f} MiB, below the floor of "
                f"{self.memory_floor / MIB:.0f} MiB: the step was stopped")

    @contextlib.contextmanager
    def started(self, params: PoolParams) -> Iterator[ManagedServer]:
        """The server started with ``params`` on ``server_cpus`` (stopped on exit, whatever
        happens); :attr:`ready_s` says how long it took to answer."""
        self.check_memory()
        self._starts += 1
        workdir = self.root / f"{self._starts:03d}-{params.max_clients}c"
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        workdir.chmod(0o755)
        server = self.adapter.server(params, workdir, cpus=self.server_cpus, keepalive=self.workload.keepalive,
                                     host=self.host)
        server.use_cgroup = True  # every server pounder measures: see charged()
        server.pod = self.pod
        try:
            self.ready_s = None
            began = time.monotonic()
            server.start(timeout_s=60.0)
            self.ready_s = time.monotonic() - began
            self._note_cgroup(server.cgroup_note)
            yield server
        except ServerFailure as error:
            server.stop()
            logs = server.log_files
            error.logs = self._keep_logs(logs, workdir.name)
            for old, kept in zip(logs, error.logs, strict=False):  # the excerpt names the kept files
                error.log_tail = error.log_tail.replace(str(old), str(kept))
            raise
        finally:
            server.stop()
            shutil.rmtree(workdir, ignore_errors=True)

    def _note_cgroup(self, note: str) -> None:
        """Say once per run why a server got no memory cgroup of its own."""
        if note and not self.cgroup_note:
            self.cgroup_note = note
            if self._log is not None:
                self._log(note)

    @staticmethod
    def charged(server: ManagedServer, snap: PoolSnapshot) -> dict[str, Any] | None:
        """What the running ``server``'s own memory cgroup is charged, read right after ``snap``, with
        the PSS split of its processes (:func:`~pounder.pool._charged.charged_memory`); None without
        a cgroup."""
        return charged_memory(server, snap)

    @staticmethod
    def memory_peak(server: ManagedServer) -> MemoryPeak:
        """The most the running ``server``'s memory cgroup is charged during a ``with`` block
        (:class:`~pounder.pool._charged.MemoryPeak`: its ``reading()`` once the block ended)."""
        return MemoryPeak(server)

    def _keep_logs(self, logs: list[Path], name: str) -> tuple[Path, ...]:
        """The logs of a server that failed, moved to ``logs_dir/name/`` (before its workdir goes)."""
        if not logs:
            return ()
        folder = self.logs_dir / name
        try:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            return tuple(Path(shutil.move(path, folder / path.name)) for path in logs)
        except OSError:  # the error being raised matters more than its logs
            return ()

    def url(self, server: ManagedServer) -> str:
        """The URL of the workload's one path (a mix has many: see :meth:`spec`)."""
        return server.url + self.workload.path

    def spec(self, server: ManagedServer, connections: int, *, duration: float | None = None,
             requests: int | None = None, rate: float | None = None, full_speed: bool = False) -> BenchSpec:
        """The bench spec of the workload: its one path, or its mix written as a URL file into the
        server's directory and replayed in weighted random order. With ``rate``: open loop at that
        many requests per second, at most ``connections`` in flight. ``full_speed``: the clients
        read as fast as they can (no ``throttle``)."""
        load = LoadOptions(connections=connections, duration=duration, requests=requests, rate=rate,
                           keepalive=self.workload.keepalive, throttle=None if full_speed else self.workload.throttle,
                           timeout=self.timeout_s, threads=1,
                           allow_remote=not ipaddress.IPv4Address(self.host).is_loopback)
        if not self.workload.targets:
            return BenchSpec.from_options(self.url(server), options=load)
        return BenchSpec.from_options(url_file=self._url_file(server), order="random", options=load)

    def _url_file(self, server: ManagedServer) -> Path:
        path = server.workdir / URL_FILE
        lines = [url_file_line(weight, method, server.url + target) for weight, method, target in self.workload.targets]
        write_atomic(path, "\n".join(lines) + "\n", "the workload's URL file")
        return path

    def _watch(self, measuring: list[float] | None = None) -> ProgressCallback:
        """The progress callback: checks memory, reports; appends to ``measuring`` when the
        measured phase began (``time.monotonic()``, from the engine's elapsed time)."""
        last = [0.0]
        report = self.progress

        def watch(progress: Progress) -> None:
            now = time.monotonic()
            if measuring is not None and not measuring and progress.phase == "measure":
                measuring.append(now - progress.elapsed_s)
            if now - last[0] >= 0.5:
                last[0] = now
                self.check_memory()
            if report is not None:
                report(progress)

        return watch

    def bench(self, server: ManagedServer, connections: int, *, duration: float | None = None,
              requests: int | None = None, sample: bool = True, rate: float | None = None,
              queue: QueueWatch | None = None, full_speed: bool = False) -> BenchResult:
        """Load the server with the workload, the load generator on ``load_cpus``; Ctrl-C raises
        KeyboardInterrupt. Keep-alive is off unless the workload turns it on: every request is
        then a new connection, and a child's MaxRequestsPerChild means the same in every server
        (Apache and Starman count connections, gunicorn requests). ``queue`` (from
        :meth:`queue_watch`) samples the server's accept queue during the load's measured phase.
        A sampled (measured) load is sent by :attr:`sender`, from as many of its agents as it has
        connections (and requests), at most all; an agent lost meanwhile raises
        :class:`~pounder.PounderError`: a load with a share missing is not a measurement."""
        sampler = ServerSampler(self.tree(server), interval_s=SAMPLE_INTERVAL_S,
                                front=server.front_pid) if sample else None
        spec = self.spec(server, connections, duration=duration, requests=requests, rate=rate, full_speed=full_speed)
        measuring: list[float] = []
        # the engine's threads (and the sampler's, the queue watch's) are created by this thread:
        # they inherit its affinity
        with pinned_thread(self.load_cpus), queue or contextlib.nullcontext():
            sender = self.sender if sample else ENGINE
            used = min(sender.count, connections, requests or connections)
            before = pod_before(server) if sample else None
            result = sender.run(spec, self._watch(measuring), sampler, agents=used)
            if sample:
                self.pod_reading = pod_figures(server, before)
        if result.interrupted:
            raise KeyboardInterrupt
        if result.agents is not None and result.agents.partial:
            raise PounderError(f"a load was sent only in part, so it is not counted: "
                               f"{'; '.join(result.agents.lost_notes())}")
        if queue is not None and measuring:
            queue.window(measuring[0], measuring[0] + min(duration or result.elapsed_s, result.elapsed_s))
        return result

    def queue_watch(self, server: ManagedServer) -> QueueWatch:
        """A watch of ``server``'s accept queue (and of its own counters, read by its adapter's
        status reader), for :meth:`bench`."""
        return QueueWatch(server.port, server.host, status=server.status_counters, reader=self.adapter.status_reader)

    def warm(self, server: ManagedServer, rounds: int | None = None) -> Warmed:
        """Load the server with the workload until it is warm: every child has served requests,
        and for two rounds in a row the children's summed USS grew by less than 1 % (or 256 KiB
        per child) and the round's throughput rose by less than 10 % over the round before (a
        fall is the machine's noise, not warming: it does not hold warming up). A round is
        at least 10 requests per child at concurrency = children, and at least 0.3 s. At most
        ``rounds`` rounds (default 30) and 60 s: ``settled`` says whether it got there.
        Three rounds in a row with more than 1 % of their requests failed end it too (unsettled):
        failing children do not settle by warming. ``rounds=1``: one quick round of 2 requests per
        child (where warming must not hide a child's replacement). Children that appear meanwhile
        are watched from then on; a change of children starts the count of still rounds again.
        Warming reads the answers at full speed (no ``--throttle``): it is the children that must
        warm, and slow clients would only make each round last longer. When no round got anywhere
        (:func:`~pounder.results.load_failure`: no request succeeded, no answer was 2xx or 3xx) it
        raises :class:`~pounder.PounderError` saying so: a server that answers nothing good has
        nothing to tune or compare."""
        baseline: dict[int, float | None] = {}
        warmed: set[int] = set()
        sent = done = stable = failing = 0
        rps: float | None = None
        uss: int | None = None
        per_request: float | None = None
        alive = server.children()
        deadline = time.monotonic() + WARM_TIMEOUT_S
        quick = rounds == 1
        size = 0
        nowhere: str | None = ""
        while done < (rounds or WARM_ROUNDS):
            for pid in alive:
                baseline.setdefault(pid, process_cpu_clock(pid))
            count = max(1, len(alive))
            size = 2 * count if quick else min(WARM_ROUND_MAX_REQUESTS, max(size, WARM_ROUND_REQUESTS * count))
            result = self.bench(server, count, requests=size, sample=False, full_speed=True)
            if nowhere is not None and not result.interrupted:  # until a round got somewhere
                nowhere = load_failure(result, expect_flag=None)
            done += 1
            sent += result.requests.complete + result.requests.failed
            for pid in alive:
                start, now = baseline[pid], process_cpu_clock(pid)
                if start is not None and now is not None and now - start >= SERVED_CPU_S:
                    warmed.add(pid)
            before = alive
            alive = server.children()
            last_rps, last_uss, last_per_request = rps, uss, per_request
            rps = result.derived.requests_per_s
            uss = self._children_uss(server)
            served = result.requests.complete
            per_request = ((uss - last_uss) / served if uss is not None and last_uss is not None and served
                           else None)
            if rps is not None and rps > 0:  # the next round lasts WARM_ROUND_S at least
                size = max(size, int(rps * WARM_ROUND_S) + 1)
            still = (alive == before and warmed >= set(alive)
                     and _uss_still(last_uss, uss, len(alive), per_request, last_per_request)
                     and _rps_still(last_rps, rps))
            stable = stable + 1 if still else 0
            failing = 0 if clean_trial(served, result.requests.failed) else failing + 1
            if quick or stable >= WARM_STABLE_ROUNDS or failing >= WARM_FAILING_ROUNDS or time.monotonic() > deadline:
                break
        if nowhere:  # the one rule of every load (pounder.results.load_failure): nothing to tune or compare
            raise PounderError(f"the server (pid {server.pid}) got nowhere while warming up: {nowhere} (check the "
                               "path the requests ask for, and the application's log)")  # fmt: skip
        return Warmed(children=len(alive), warmed=len(warmed & set(alive)), requests=sent,
                      settled=stable >= WARM_STABLE_ROUNDS, rounds=done, rps=rps, uss=uss,
                      failing=failing >= WARM_FAILING_ROUNDS)

    def _children_uss(self, server: ManagedServer) -> int | None:
        try:
            children = self.snapshot(server).children
        except PounderError:
            return None
        return sum(child.private for child in children)

    def child_start_s(self, server: ManagedServer, timeout_s: float = CHILD_START_TIMEOUT_S) -> float | None:
        """Seconds a lost child costs before a fresh one serves: one idle child is killed
        (SIGKILL, as a crash or the OOM killer ends it: every server replaces such a child); the
        figure runs until the server has as many children again, the new one has finished
        starting (its CPU clock stands still for 50 ms) and it has served a request of the
        workload (rounds of one request per child). It includes the parent's reaction: Apache's
        parent replaces a lost child only in its once-a-second maintenance loop, and a mod_perl
        child without preloading compiles the application on its first request. Resolution:
        about 0.1 s. None when the server has no children or no fresh child served within
        ``timeout_s``. Call it with no other load running."""
        before = server.children()
        if not before:
            return None
        began = time.monotonic()
        deadline = began + timeout_s
        with contextlib.suppress(ProcessLookupError):
            os.kill(before[-1], signal.SIGKILL)
        while True:
            now = server.children()
            fresh = [pid for pid in now if pid not in before]
            if fresh and len(now) >= len(before):
                break
            if time.monotonic() > deadline or not server.running:
                return None
            time.sleep(_POLL_S)
        child = fresh[0]
        clock = process_cpu_clock(child)
        while True:  # until it has finished starting
            time.sleep(_SETTLE_POLL_S)
            later = process_cpu_clock(child)
            if clock is None or later is None or time.monotonic() > deadline:
                return None
            if later - clock < SERVED_CPU_S:
                break
            clock = later
        while time.monotonic() < deadline:
            start = process_cpu_clock(child)
            self.bench(server, len(now), requests=len(now), sample=False, full_speed=True)
            after = process_cpu_clock(child)
            if start is None or after is None:
                return None
            if after - start >= SERVED_CPU_S:
                return time.monotonic() - began
        return None

    def snapshot(self, server: ManagedServer) -> PoolSnapshot:
        """The server's processes now, its workers as children (the nested ones too: see
        :attr:`~pounder.servers.ManagedServer.nested_workers`)."""
        taken = snapshot(self.tree(server))
        return taken.with_nested_workers() if server.nested_workers else taken

    @staticmethod
    def tree(server: ManagedServer) -> ServerTarget:
        """The running server's processes; a server that exited meanwhile (its parent killed, or
        halted by its workers' failures) is a :class:`~pounder.servers.ServerExitedError` with its
        own log lines."""
        try:
            return find_server(pid=server.pid)
        except PounderError:
            kills = None if server.cgroup is None or server.pod is None else server.cgroup.oom_kills()
            why = f": {oom_note(kills, server.pod.memory if server.pod else None, 'server')}" if kills else ""
            raise ServerExitedError(f"the server (pid {server.pid}) exited while it was measured{why}",
                                    server.log_tail()) from None


def _uss_still(last: int | None, now: int | None, children: int, per_request: float | None = None,
               last_per_request: float | None = None) -> bool:
    """The children's memory no longer grows as a warming child's does: it grew less than 1 %
    (or 256 KiB per child) over the round, or it grows per request at a steady rate (at least
    80 % of the round before's: a leak, which no amount of warming ends; first-use loading slows
    down as it completes)."""
    if last is None or now is None:
        return False
    if now - last < max(WARM_USS_GROWTH * last, WARM_USS_SLACK * max(1, children)):
        return True
    return (per_request is not None and last_per_request is not None and last_per_request > 0
            and per_request >= WARM_STEADY_GROWTH * last_per_request)


def _rps_still(last: float | None, now: float | None) -> bool:
    """The throughput no longer climbs: within 10 % of the round before, or below it (a warming
    server gets faster; a drop is the machine's noise, not warming)."""
    if last is None or now is None or last <= 0:
        return False
    return now <= last * (1 + WARM_RPS_CHANGE)
