"""Profiling a server's children for exactly the measured windows (:func:`profile`).

How (also in ``pounder profile --help``):

1. The server is found (``find_server``) and must be the one behind the URL (one of its processes
   listens on the URL's address and port); the profiler is chosen by what its children run and
   checked (present, permitted, the server prepared for it) before anything is sent.
2. The warm-up requests are sent unprofiled (a child's first requests load code).
3. ``rounds`` rounds follow, each an unprofiled trial and a profiled one of the same load, in
   alternating order (off on, on off, ...) so a drift of the machine falls on both alike. The
   profiler samples only during the profiled trials' loads: its window opens right before the
   load and closes right after.
4. The profiler's cost is each round's ratio, profiled / unprofiled, of requests/s and of the
   corrected p50 latency: their median and range, and a cost told only when a one-sided sign test
   over the rounds says so (``_cost``).
5. The profile (the windows' stacks summed) is read into shares: a function's self share is the
   weight of the stacks it is the leaf of, its inclusive share the weight of the stacks it is on.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil

from pounder import _interrupt
from pounder._errors import PounderError, UsageError, check_callable, check_path, check_text, public
from pounder._files import utc_timestamp
from pounder._units import count_in_range, pinned_thread
from pounder._version import __version__
from pounder.load import BenchSpec, LoadOptions, ProgressCallback, check_io, check_tls, run_bench
from pounder.procs import (
    SERVER_OPTIONS,
    ServerGone,
    ServerTarget,
    check_server,
    discover,
    find_server,
    process_cpu_clock,
    server_exit,
    serves,
)
from pounder.profile._choose import make_profiler
from pounder.profile._cost import profiler_cost
from pounder.profile._profiler import Profiler, Sampled
from pounder.profile._result import (
    ChildProfile,
    ProfileResult,
    ProfileTrial,
    stored_functions,
    stored_stacks,
)
from pounder.profile._stacks import function_table, merged, per_process
from pounder.results import BenchResult, describe_load, load_failure
from pounder.traffic import NotLoopbackError

DEFAULT_ROUNDS = 5
MAX_ROUNDS = 50
DEFAULT_WARMUP = 200
MAX_WARMUP = 1_000_000
DEFAULT_DURATION_S = 3.0
DEFAULT_LOAD = LoadOptions(duration=DEFAULT_DURATION_S)
"""A trial's load unless told otherwise: bench's defaults, 3 s long."""

TrialCallback = Callable[[ProfileTrial], None]


def _target(pid: int | None, pidfile: str | os.PathLike[str] | None, name: str | None,
            connect: str | None) -> ServerTarget:  # fmt: skip
    """The server named, a server (:func:`~pounder.procs.check_server`) listening on ``connect``
    (None: not checked, a backend behind a proxy) with children to profile."""
    target = check_server(find_server(pid=pid, pidfile=pidfile, name=name, options=SERVER_OPTIONS))
    if connect is not None and serves(target, connect) is False:
        raise UsageError(f"process {target.pid} does not listen on {connect}: it is not the server behind the URL "
                         "(a backend behind a proxy, as php-fpm behind nginx: --behind-proxy)")  # fmt: skip
    if not target.children:
        raise UsageError(f"the server process {target.pid} ({target.name}) has no children to profile: name the "
                         "parent of a pre-forking server (its workers serve the requests)")  # fmt: skip
    return target


def _specs(url: str, given: LoadOptions, warm: int) -> tuple[BenchSpec, BenchSpec | None]:
    """A trial's spec (bounded: a duration when neither one nor a request count is given) and the warm-up's."""
    if given.duration is None and given.requests is None:
        given = LoadOptions.of(given, duration=DEFAULT_DURATION_S)
    try:
        spec = BenchSpec.from_options(url, options=given)
        warm_spec = None if warm == 0 else BenchSpec.from_options(
            url, options=LoadOptions.of(given, requests=warm, duration=None, rate=None, stages=None))
    except NotLoopbackError as error:
        raise UsageError(f"{error.address} is not a loopback address (127.0.0.0/8 or ::1): the profiler runs on "
                         "this machine, so the server must too") from None  # fmt: skip
    return spec, warm_spec


def _trial(round_: int, profiled: bool, result: BenchResult) -> ProfileTrial:
    p50 = result.latency.corrected.percentiles.get("50", 0)
    p99 = result.latency.corrected.percentiles.get("99", 0)
    return ProfileTrial(round=round_, profiled=profiled, complete=result.requests.complete,
                        failed=result.requests.failed, non_2xx=result.requests.non_2xx, elapsed_s=result.elapsed_s,
                        requests_per_s=result.derived.requests_per_s, p50_us=p50, p99_us=p99,
                        whole=not result.interrupted,
                        nowhere=None if result.interrupted else load_failure(result))  # fmt: skip


class ServerExitedError(PounderError):
    """The server exited during :func:`profile`: ``cause`` names how (``the server process 123
    (gunicorn) was killed by SIGKILL``); ``result`` holds what was measured and sampled until then
    (marked ``interrupted``), to be written as after a signal."""

    def __init__(self, cause: str, result: ProfileResult) -> None:
        super().__init__(f"{cause} during the profile")
        self.cause = cause
        self.result = result


def _server_gone(target: ServerTarget, error: PounderError | None = None) -> str | None:
    """How the server ended when it has (:func:`~pounder.procs.server_exit`), else None; a profiler's
    ``error`` while the server still runs is the profiler's and raised."""
    gone = server_exit(target)
    if gone is None and error is not None:
        raise error
    return gone


def _rounds(profiler: Profiler, target: ServerTarget, spec: BenchSpec, rounds: int, workdir: Path,
            on_progress: ProgressCallback | None, on_trial: TrialCallback | None,
            load_cpus: Collection[int] | None) -> tuple[list[ProfileTrial], bool, str | None]:  # fmt: skip
    """The interleaved trials (off on, on off, ...); True with them when Ctrl-C cut the run short; how
    the server ended when it exited meanwhile (the rounds stop there: a profiler that fails then,
    as py-spy finding no process, is not to blame)."""
    trials: list[ProfileTrial] = []
    try:
        for number in range(1, rounds + 1):
            for profiled in ((False, True) if number % 2 else (True, False)):
                try:
                    if profiled:
                        profiler.resume(workdir)
                except PounderError as error:
                    return trials, False, _server_gone(target, error)
                with pinned_thread(load_cpus):  # the load only: the profiler is not pinned with it
                    result = run_bench(spec, on_progress)
                failed: PounderError | None = None
                try:
                    if profiled:
                        profiler.pause()
                except PounderError as error:
                    failed = error
                trials.append(_trial(number, profiled, result))
                if on_trial is not None:
                    on_trial(trials[-1])
                if result.interrupted:
                    return trials, True, None
                if (gone := _server_gone(target, failed)) is not None:
                    return trials, False, gone
    except KeyboardInterrupt:
        return trials, True, None
    return trials, False, None


def _collect(chosen: Profiler, target: ServerTarget, gone: str | None) -> tuple[Sampled, set[int], str | None]:
    """The last window closed and what was sampled read (the pool's processes alive then with it);
    after the server exited, a profiler that cannot finish leaves what it could not read out."""
    try:
        chosen.pause()
    except PounderError as error:
        gone = gone or _server_gone(target, error)
    after = _alive(target)  # before finish(), which may ask the children to exit (NYTProf)
    try:
        return chosen.finish(), after, gone
    except PounderError as error:
        gone = gone or _server_gone(target, error)
        return Sampled(stacks={}, unit=chosen.unit, pids=()), after, gone


def _children(stacks: dict[int, dict[str, int]], total: int) -> tuple[ChildProfile, ...]:
    rows = []
    for pid, own in sorted(stacks.items()):
        weight = sum(own.values())
        top = function_table(own)[0] if weight else None
        rows.append(ChildProfile(pid=pid, weight=weight, share=weight / total if total else 0.0,
                                 top_function=top.name if top else "", top_share=top.self_share if top else 0.0))
    return tuple(sorted(rows, key=lambda row: (-row.weight, row.pid)))


def _answers(trials: tuple[ProfileTrial, ...]) -> list[str]:
    """A note when profiled responses were not 2xx: their handling (an error page) is in the profile."""
    profiled = [t for t in trials if t.profiled]
    bad, answered = sum(t.non_2xx for t in profiled), sum(t.complete for t in profiled)
    if not bad:
        return []
    return [f"{bad:,} of the {answered:,} profiled responses were not 2xx: the profile is of what answered them "
            "(an error page?); check the URL with pounder bench"]


def tree_cpu(target: ServerTarget) -> float:
    """CPU seconds (user + system) of the server's processes now, children it has reaped included."""
    total = 0.0
    try:
        members = discover(target)
    except ServerGone:
        return 0.0
    for member in members:  # the kernel's per-process clocks: ns, where /proc's ticks are 10 ms
        total += process_cpu_clock(member.pid) or 0.0
    try:
        reaped = psutil.Process(target.pid).cpu_times()
    except psutil.Error:
        return total
    return total + reaped.children_user + reaped.children_system


MIN_CPU_PER_REQUEST_S = 10e-6
"""Below this much of the server's CPU per request, the load did not reach it (``behind_proxy``)."""


def _check_reached(target: ServerTarget, cpu_before: float, result: ProfileResult) -> None:
    """With ``behind_proxy`` nothing checked that the load reaches the server: its processes must have
    worked for the requests sent (at least :data:`MIN_CPU_PER_REQUEST_S` each)."""
    requests = sum(t.complete for t in result.trials)
    used = tree_cpu(target) - cpu_before
    if requests and not result.interrupted and used < MIN_CPU_PER_REQUEST_S * requests:
        raise PounderError(f"process {target.pid} ({target.name}) used {used * 1000:.0f} ms of CPU for the "
                           f"{requests:,} requests sent: the load did not reach it (is it the backend behind "
                           "this URL?)")  # fmt: skip


@contextmanager
def _place(workdir: str | os.PathLike[str] | None) -> Iterator[Path]:
    """The profiler's directory: ``workdir`` (made, or empty) kept, else a temporary one removed."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="pounder-profile-") as tmp:
            yield Path(tmp)
        return
    yield Path(workdir)


def check_workdir(workdir: str | os.PathLike[str] | None) -> None:
    """UsageError unless ``workdir`` is None, a new directory (made now) or an empty one."""
    if workdir is None:
        return
    path = Path(check_path(workdir, "--keep"))
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"--keep {path}: must be a new or empty directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--keep {path}: cannot make it: {error.strerror or error}") from None


def _alive(target: ServerTarget) -> set[int]:
    try:
        return {member.pid for member in discover(target)}
    except ServerGone:
        return set()


@public
def profile(
    url: str,
    *,
    server_pid: int | None = None,
    server_pidfile: str | os.PathLike[str] | None = None,
    server_name: str | None = None,
    profiler: str = "auto",
    rounds: int | str = DEFAULT_ROUNDS,
    warmup: int | str = DEFAULT_WARMUP,
    rate: int | None = None,
    native: bool = False,
    workdir: str | os.PathLike[str] | None = None,
    behind_proxy: bool = False,
    load_cpus: Collection[int] | None = None,
    on_progress: ProgressCallback | None = None,
    on_trial: TrialCallback | None = None,
    options: LoadOptions | None = None,
    **load: Any,
) -> ProfileResult:
    """Profile the children of the server behind ``url`` while pounder loads it (see the module's
    docstring for how): ``rounds`` rounds of an unprofiled and a profiled trial, each of the load
    options (:class:`~pounder.LoadOptions` as ``options`` or keywords; 3 s long by default), after
    ``warmup`` unprofiled requests. ``profiler``: "auto", "py-spy", "nytprof" or "perf"; ``rate``:
    samples per second for py-spy and perf; ``native``: py-spy's native frames; ``workdir``: a
    directory (new, or empty) where the profiler's own files are kept (NYTProf's merged
    ``nytprof.out`` for ``nytprofhtml``, py-spy's raw output); by default they are removed.

    Raises :class:`~pounder.UsageError` before anything is sent for bad input or what to fix first
    (no such server, a profiler missing or not permitted, a Perl server not prepared for NYTProf),
    :class:`~pounder.PounderError` when nothing was sampled; :class:`ServerExitedError` when the
    server exits during the run, naming how, with what was measured until then as its ``result``
    (``interrupted`` set). After Ctrl-C the result holds what was sampled until then, with
    ``interrupted`` set; no profiler process is left running.
    """
    check_text(url, "profile: url")
    check_callable(on_progress, "on_progress")
    check_callable(on_trial, "on_trial")
    count = count_in_range(rounds, "--rounds", 1, MAX_ROUNDS)
    warm = count_in_range(warmup, "--warmup", 0, MAX_WARMUP)
    spec, warm_spec = _specs(url, LoadOptions.of(DEFAULT_LOAD if options is None else options, **load), warm)
    target = _target(server_pid, server_pidfile, server_name, None if behind_proxy else spec.targets[0].info().connect)
    chosen = make_profiler(target, profiler, **({} if rate is None else {"rate": rate}), native=native)
    chosen.check()
    check_workdir(workdir)
    check_io(spec)
    check_tls(spec)  # its handshake before the warm-up and the profiler: not profiled
    started_at = utc_timestamp()
    if warm_spec is not None:
        with pinned_thread(load_cpus):
            if run_bench(warm_spec).interrupted:
                raise KeyboardInterrupt
    before = _alive(target)
    cpu_before = tree_cpu(target) if behind_proxy else None
    try:
        with _place(workdir) as place:
            trials, interrupted, gone = _rounds(chosen, target, spec, count, place, on_progress, on_trial, load_cpus)
            sampled: Sampled | None = None
            try:
                with _interrupt.deferred():  # a signal now waits until what was sampled is read
                    sampled, after, gone = _collect(chosen, target, gone)
            except KeyboardInterrupt:
                if sampled is None:
                    raise
                interrupted = True
            if workdir is None and sampled.files:
                sampled = replace(sampled, files={}, notes=(*sampled.notes, "the profiler's files (" + ", ".join(
                    sampled.files) + ") were removed: --keep DIR keeps them"))
    finally:
        chosen.close()
    result = _result(url, target, chosen, spec, count, warm_spec, tuple(trials), sampled, (before, after),
                     started_at, interrupted or gone is not None)  # fmt: skip
    if gone is not None:
        raise ServerExitedError(gone, replace(result, notes=(*result.notes, f"{gone} during the profile: the "
                                                             "rounds stopped there")))  # fmt: skip
    if cpu_before is not None:
        _check_reached(target, cpu_before, result)
    return result


def _result(url: str, target: ServerTarget, chosen: Profiler, spec: BenchSpec, rounds: int,
            warm_spec: BenchSpec | None, trials: tuple[ProfileTrial, ...], sampled: Sampled,
            alive: tuple[set[int], set[int]], started_at: str, interrupted: bool) -> ProfileResult:  # fmt: skip
    # The parent's own samples are not the requests' work (its loop, forking): kept apart.
    children = {key: weight for key, weight in sampled.stacks.items() if key[0] != target.pid}
    parent_weight = sum(weight for (pid, _), weight in sampled.stacks.items() if pid == target.pid)
    pool = merged(children)
    total = sum(pool.values())
    if total == 0 and not interrupted:
        raise PounderError(f"{chosen.name} collected nothing from process {target.pid}'s children during "
                           f"{sum(t.complete for t in trials if t.profiled):,} profiled requests: did the load "
                           "reach this server?")  # fmt: skip
    kept, dropped = stored_stacks(pool)
    before, after = alive
    seen = set(sampled.pids) - {target.pid}
    return ProfileResult(
        tool_version=__version__, started_at=started_at, url=spec.targets[0].info().url,
        server_pid=target.pid, server_name=target.name, found_by=target.found_by,
        profiler=chosen.name, profiler_version=chosen.version(), unit=sampled.unit,
        load=describe_load(spec.load) + ("" if spec.http.keepalive else ", keep-alive off"), rounds=rounds,
        warmup_requests=0 if warm_spec is None else warm_spec.load.requests or 0, trials=trials,
        cost=profiler_cost(trials),
        total_weight=total, functions=stored_functions(pool, sampled.calls or None),
        children=_children(per_process(children), total), stacks=kept, dropped_weight=dropped,
        parent_weight=parent_weight,
        started=tuple(sorted(seen - before)), exited=tuple(sorted((before | seen) - after - {target.pid})),
        notes=(*_answers(trials), *sampled.notes), files=dict(sampled.files), interrupted=interrupted,
    )  # fmt: skip
