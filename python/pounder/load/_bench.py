"""Running a bench: start the engine, follow it to its end (:mod:`._follow`), collect the result.

Ctrl-C (``KeyboardInterrupt``) during a run cancels it: the engine stops issuing requests, drains
for at most 0.2 s (a second at the normal end of a run), and the partial result is returned with
``interrupted=True``. A second Ctrl-C while draining propagates. Any other exception raised by the
``on_progress`` callback cancels the run too (waiting up to 5 s for the engine to stop) and
propagates.
"""

from __future__ import annotations

import os
import re
import resource
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pounder import _live
from pounder._errors import PounderError, UsageError, check_callable, check_instance, check_text, public
from pounder._files import StagedOutput, utc_timestamp
from pounder._native import load_engine
from pounder._records import decode_json
from pounder._units import parse_duration, plain
from pounder._version import __version__
from pounder.load._follow import ProgressCallback, Told, follow
from pounder.load._model import Number
from pounder.load._sender import Sender
from pounder.load._spec import BenchSpec
from pounder.load._tls import check_handshakes
from pounder.procs import SERVER_OPTIONS, ServerSampler, ServerTarget, check_server, find_server, serves
from pounder.results import (
    BASELINE_METRICS,
    BENCH_METRICS,
    BenchResult,
    Gate,
    IoInfo,
    MalformedResultError,
    check_baseline,
    check_gates,
    compare_with_baseline,
    evaluate_gates,
    load_result,
    parse_gates,
)
from pounder.traffic import parse_url, resolve

if TYPE_CHECKING:
    from pounder._engine import Run

@public
def serves_all(target: ServerTarget, spec: BenchSpec, front: int | None = None) -> bool | None:
    """Whether the sampled server - or the front that passes its load to it, whose root is
    ``front`` (php-fpm's nginx) - listens where every target of ``spec`` sends its requests
    (False as soon as one does not; None when one cannot be told)."""
    def served(connect: str) -> bool | None:
        own = serves(target, connect)
        if own or front is None:
            return own
        try:
            return serves(find_server(pid=front), connect) or own
        except PounderError:  # the front is gone
            return own

    found = {served(connect) for connect in {t.info().connect for t in spec.targets}}
    return False if False in found else None if None in found else True


@public
def run_bench(
    spec: BenchSpec, on_progress: ProgressCallback | None = None, sampler: ServerSampler | None = None,
    sender: Sender | None = None,
) -> BenchResult:
    """Run a validated spec and return its result. With a ``sampler``, the server's processes are
    sampled from just before the first request to just after the last one. ``sender``: what sends
    the load (default this machine's engine, :data:`ENGINE`; agents on a cluster, see
    :mod:`pounder.agents`). It makes no connection besides the run's: the pre-flight TLS check
    (:func:`check_tls`) is the caller's, once before its first run."""
    check_instance(spec, BenchSpec, "run_bench: spec")
    check_callable(on_progress, "on_progress")
    check_instance(sampler, ServerSampler, "sampler", optional=True)
    check_instance(sender, Sender, "run_bench: sender", optional=True)
    return (sender or ENGINE).run(spec, on_progress, sampler)


@public
def check_tls(spec: BenchSpec) -> None:
    """One TLS handshake (no request) to each https:// address of ``spec``, as the run would
    make it: :class:`~pounder.UsageError` ``URL: reason (what to do)`` when the engine would
    refuse the certificate, or no TLS server answers there. Nothing when no target is https://.
    :func:`bench` calls it before its run; a caller of :func:`run_bench` calls it once before
    the first run (not inside a measured window: the server logs and counts the handshake, and
    answers a plain HTTP port with a 400)."""
    check_instance(spec, BenchSpec, "check_tls: spec")
    if spec.tls is None:
        return
    targets = [(t.url, t.tcp, t.tls_name) for t in spec.targets if t.tls_name is not None and t.tcp is not None]
    check_handshakes(load_engine(), targets, spec.tls, spec.http.timeout_s)


@public
def check_io(spec: BenchSpec) -> IoInfo:
    """The I/O path the engine takes for ``spec`` on this machine (io_uring or epoll) and why:
    what the result's ``io`` will say. :class:`~pounder.UsageError` in one line when ``io="uring"``
    cannot be taken (HTTPS, a scenario or a throttle runs on epoll only; a kernel without a usable
    io_uring). It makes no connection. :func:`bench` calls it before its run; a caller of
    :func:`run_bench` calls it once before the first run, like :func:`check_tls`."""
    check_instance(spec, BenchSpec, "check_io: spec")
    try:
        path, reason = load_engine().choose_io(spec.engine_spec())
    except ValueError as error:
        raise _io_error(str(error), spec) from None
    return IoInfo(path=path, reason=reason)


def _io_error(message: str, spec: BenchSpec) -> PounderError:
    """The engine's ``io_uring: why`` in the user's words (a usage error), or any other refusal."""
    if not message.startswith("io_uring: "):
        return PounderError(f"the engine rejected the spec: {message}")
    return UsageError(f"--io {spec.io}: {message.removeprefix('io_uring: ')}; use --io auto or epoll")


@public
class Engine(Sender):
    """The load sent from this process by the Rust engine (its threads; the GIL released)."""

    def __init__(self) -> None:
        """This machine's engine: nothing to set (one is enough, :data:`ENGINE`)."""

    def run(self, spec: BenchSpec, on_progress: ProgressCallback | None = None, sampler: ServerSampler | None = None,
            *, agents: int | None = None) -> BenchResult:
        if agents not in (None, 1):
            raise UsageError(f"this machine's engine is one sender, not {agents}")
        return _run_here(spec, on_progress, sampler)


ENGINE = Engine()
"""This machine's engine: the sender of every load unless agents are asked for."""


def _run_here(spec: BenchSpec, on_progress: ProgressCallback | None, sampler: ServerSampler | None) -> BenchResult:
    ensure_descriptors(spec.load.connections, spec.load.threads)
    engine = load_engine()
    started_at = utc_timestamp()
    served = None if sampler is None else serves_all(sampler.target, spec, sampler.front)
    # --tsv and --hdr-log are written beside their file and renamed over it at the end
    staged: dict[str, StagedOutput] = {}
    try:
        for flag, path in _streams(spec):
            staged[flag] = StagedOutput(path, flag)
        if sampler is not None:
            sampler.start()
        try:
            try:
                run: Run = engine.start({**spec.engine_spec(), "tsv_path": staged["--tsv"].path,
                                         "hdr_log_path": staged["--hdr-log"].path})
            except ValueError as error:
                if spec.tls is not None and str(error).startswith("tls"):  # a file the checks let through
                    raise UsageError(spec.tls.flag_of(str(error))) from None
                if str(error).startswith("io_uring: "):  # --io uring where it cannot be (check_io not called)
                    raise _io_error(str(error), spec) from None
                raise _start_error(str(error), staged) from None
            told = Told(run, spec.target_label()) if _live.anyone() else None
            interrupted = follow(run, spec.load, on_progress, told)
        finally:
            server = sampler.stop() if sampler is not None else None
    except BaseException:
        for output in staged.values():
            output.discard()
        raise
    if server is not None:
        server = replace(server, serves_url=served)
    engine_json = run.result()
    assert engine_json is not None  # None only while in flight, and _follow returned once wait() said done
    unwritten = _settle(staged, engine_json)
    try:
        result = BenchResult.from_engine(
            engine_json,
            options=spec.run_options(),
            started_at=started_at,
            interrupted=interrupted,
            tool_version=__version__,
            server=server,
        )
    except MalformedResultError as error:
        raise PounderError(f"the engine returned a malformed result: {error}") from None
    if unwritten:
        raise OutputWriteError("; ".join(unwritten), result)
    return result


DESCRIPTOR_MARGIN = 64
"""Descriptors a run needs besides one per connection and those already open: the engine's own
(each thread's runtime, the output files), the server sampler's reads of /proc."""


@public
def ensure_descriptors(connections: int, threads: int = 1) -> None:
    """Make sure this process may open a descriptor for each of ``connections``, besides those
    open now, a few for each engine thread and :data:`DESCRIPTOR_MARGIN` more: the soft limit
    (``ulimit -n``) is raised as far as the hard limit allows; beyond that a
    :class:`~pounder.UsageError` names both numbers, before anything is sent (past the limit,
    connections fail with EMFILE and the run is lost)."""
    try:
        open_now = len(os.listdir("/proc/self/fd"))
    except OSError:
        open_now = 0
    needed = connections + DESCRIPTOR_MARGIN + 4 * threads + open_now
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return
    if hard != resource.RLIM_INFINITY and needed > hard:
        raise UsageError(f"{connections:,} connections need about {needed:,} file descriptors, more than this "
                         f"process may open (soft limit {soft:,}, hard limit {hard:,}): lower -c, or raise the "
                         "hard limit (ulimit -Hn as root)")
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    except (OSError, ValueError) as error:
        raise UsageError(f"{connections:,} connections need about {needed:,} file descriptors and the limit "
                         f"({soft:,}) could not be raised: {error}") from None


def _streams(spec: BenchSpec) -> tuple[tuple[str, str | None], ...]:
    return (("--tsv", spec.tsv_path), ("--hdr-log", spec.hdr_log_path))


_ENGINE_NAMES = {"--tsv": "tsv", "--hdr-log": "hdr log"}


def _os_error(text: str) -> str:
    """The engine's words for an I/O error, without Rust's ``(os error 28)``."""
    return re.sub(r"\s*\(os error \d+\)$", "", text.strip())


def _start_error(message: str, staged: Mapping[str, StagedOutput]) -> PounderError:
    """A spec the engine refused, or an output it could not open: the latter named as the user
    typed it."""
    for flag, output in staged.items():
        name = _ENGINE_NAMES[flag]
        if message.startswith(f"{name}: "):
            return PounderError(f"cannot write {flag} {output.target}: {_os_error(message.split(': ')[-1])}")
    return PounderError(f"the engine rejected the spec: {message}")


def _settle(staged: Mapping[str, StagedOutput], engine_json: str) -> list[str]:
    """Each stream output renamed over its file, or, when the engine could not write it whole
    (``write_errors``), removed (the file stays as it was); the lines that say which failed."""
    failed: dict[str, str] = {}
    if '"write_errors"' in engine_json:
        for line in decode_json(engine_json).get("write_errors") or []:
            name, _, why = str(line).partition(": ")
            failed.setdefault(name, _os_error(why))
    unwritten = []
    for flag, output in staged.items():
        reason = failed.get(_ENGINE_NAMES[flag])
        if reason is not None:
            kept = " (the file is left as it was)" if output.staged and os.path.exists(output.target or "") else ""
            output.discard()
            unwritten.append(f"cannot write {flag} {output.target}: {reason}{kept}")
            continue
        try:
            output.commit()
        except PounderError as error:
            unwritten.append(str(error))
    return unwritten


@public
class OutputWriteError(PounderError):
    """A stream output (``--tsv``, ``--hdr-log``) could not be written whole (a full disk, a
    write error): the file named is left as it was. The run itself went on: its ``result`` is
    whole, to be shown and written elsewhere."""

    def __init__(self, message: str, result: BenchResult) -> None:
        super().__init__(message)
        self.result = result


@public
def server_sampler(
    *,
    pid: int | None = None,
    pidfile: str | Path | None = None,
    name: str | None = None,
    status_url: str | None = None,
    interval: Number | None = None,
    allow_remote: bool = False,
) -> ServerSampler | None:
    """The sampler for ``bench``'s server options, or None when no server is named. The server
    is looked up now, so a wrong pid is a :class:`~pounder.UsageError` before anything is sent."""
    check_text(status_url, "server_status", optional=True)
    if pid is None and pidfile is None and name is None:
        if status_url is not None or interval is not None:
            raise UsageError(
                "--server-status and --sample-interval need --server-pid, --server-pidfile or --server-name"
            )
        return None
    target = check_server(find_server(pid=pid, pidfile=pidfile, name=name, options=SERVER_OPTIONS))
    interval_s = parse_interval(interval)
    if status_url is not None:
        url = parse_url(status_url)
        resolve(url.host, url.port, allow_remote=allow_remote)
    return ServerSampler(target, interval_s=interval_s, status_url=status_url)


def parse_interval(value: Number | None) -> float:
    """The sampling interval: default 1 s, between 0.05 s and 60 s."""
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UsageError(f"--sample-interval must be a duration such as 1s or 500ms, not {value!r}")
    seconds = parse_duration(value, "--sample-interval") if isinstance(value, str) else float(value)
    if not 0.05 <= seconds <= 60:
        raise UsageError(f"--sample-interval must be between 50ms and 60s, got {plain(seconds)}s")
    return seconds


@public
def bench(
    url: str | None = None,
    *,
    server_pid: int | None = None,
    server_pidfile: str | Path | None = None,
    server_name: str | None = None,
    server_status: str | None = None,
    sample_interval: Number | None = None,
    on_progress: ProgressCallback | None = None,
    sender: Sender | None = None,
    gates: Sequence[str | Gate] | str | None = None,
    baseline: str | Path | None = None,
    **spec_options: Any,
) -> BenchResult:
    """Benchmark an HTTP server; the keyword arguments mirror ``pounder bench``'s options.

    ``spec_options`` are :meth:`BenchSpec.from_options`'s: ``url_file``, ``order``, ``warmup``,
    ``unix_socket``, ``tsv_path``, ``hdr_log_path``, and the load options (``connections``,
    ``requests``, ``duration``, ``rate``, ``headers``, ...: the fields of :class:`LoadOptions`, as
    keyword arguments or as ``options=LoadOptions(...)``). Values may be given as a user types them
    (``requests="10k"``, ``duration="2m"``, ``rate="50..500/60s"``, ``throttle="56kbit"``) or as
    numbers (seconds, requests per second, bytes per second). ``headers`` are ``"Name: value"``
    strings or a mapping (one ``"Name: value"`` string is one header); ``body`` is text,
    ``"@file"`` or bytes. Defaults: closed loop with 10 connections for 10 s, 30 s timeout,
    keep-alive on. See :class:`BenchSpec` for the rules.

    ``server_pid``, ``server_pidfile`` or ``server_name`` name the server's parent process: its
    processes are then sampled while the load runs (every ``sample_interval``, default 1 s) and
    ``result.server`` holds their CPU time and memory; ``server_status`` is an Apache mod_status
    URL (``?auto`` is added) read at each sample.

    ``sender``: what sends the load (default this machine's engine); agents on a Ray cluster are
    :class:`pounder.agents.Cluster` (``pounder.bench(url, ray=...)`` builds one). The server
    sampled with the server options is on this machine.

    ``gates``: ``--fail-if`` expressions (``"p99>300ms"``, ``"errors>1%"``; see
    :func:`parse_gates`) or :class:`Gate` objects, checked before anything is sent (``late`` needs
    an open-loop load) and evaluated on the final result (merged, with agents):
    ``result.gates`` holds the verdicts, which the JSON and the report show.

    ``baseline``: a saved bench result (``--json`` of an earlier run) of the same spec, read with
    :func:`~pounder.load_result` and checked before anything is sent
    (:func:`~pounder.results.check_baseline`: another target, load model or request is refused
    in one line naming the field); the run is compared with it
    (:func:`~pounder.results.compare_with_baseline`) into ``result.baseline``, and the gates may
    then be ``slower>N%`` and ``p99-slower>N%`` (:data:`~pounder.results.BASELINE_METRICS`).

    Raises :class:`~pounder.UsageError` on bad input (before anything is sent) and
    :class:`~pounder.PounderError` if the engine cannot run. On Ctrl-C the partial result is
    returned with ``interrupted=True``.
    """
    check_callable(on_progress, "on_progress")
    check_instance(sender, Sender, "bench: sender", optional=True)
    checked = _gates(gates, BENCH_METRICS if baseline is None else BASELINE_METRICS)
    spec = BenchSpec.from_options(url, **spec_options)
    check_gates(checked, spec.load)
    old = None if baseline is None else _baseline(baseline, spec)
    sampler = server_sampler(
        pid=server_pid, pidfile=server_pidfile, name=server_name, status_url=server_status,
        interval=sample_interval, allow_remote=spec.allow_remote,
    )  # fmt: skip
    check_io(spec)
    check_tls(spec)
    if gates is None and old is None:
        return run_bench(spec, on_progress, sampler, sender)

    def judged(result: BenchResult) -> BenchResult:
        if old is not None:
            result = replace(result, baseline=compare_with_baseline(result, old, str(baseline)))
        return result if gates is None else replace(result, gates=evaluate_gates(checked, result))

    try:
        result = run_bench(spec, on_progress, sampler, sender)
    except OutputWriteError as error:  # the figures are whole: their comparison and gates too
        raise OutputWriteError(str(error), judged(error.result)) from None
    return judged(result)


def _baseline(path: str | Path, spec: BenchSpec) -> BenchResult:
    """The saved result ``path``, read and checked against ``spec`` (one line when it cannot be)."""
    check_text(str(path) if isinstance(path, Path) else path, "baseline")
    try:
        old = load_result(path)
    except UsageError as error:
        raise UsageError(f"--baseline: {error}") from None
    check_baseline(spec.run_options(), old, str(path))
    return old


def _gates(gates: Sequence[str | Gate] | str | None, metrics: Any = BENCH_METRICS) -> tuple[Gate, ...]:
    """``bench``'s gates (of ``metrics``): expressions parsed, :class:`Gate` objects as they are."""
    if gates is None or isinstance(gates, str):
        return parse_gates(gates, metrics=metrics)
    if not isinstance(gates, Sequence):
        raise UsageError(f"gates must be a list of --fail-if expressions such as 'p99>300ms', not {gates!r}")
    return tuple(gate if isinstance(gate, Gate) else parse_gates(gate, metrics=metrics)[0] for gate in gates)
