"""Running a bench: start the engine, follow its progress, collect the result.

Ctrl-C (``KeyboardInterrupt``) during a run cancels it: the engine stops issuing requests, drains
for at most a second, and the partial result is returned with ``interrupted=True``. A second
Ctrl-C while draining propagates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from pounder._errors import PounderError
from pounder._version import __version__
from pounder.load._parse import Stage
from pounder.load._result import BenchResult, LoadModel, MalformedResultError
from pounder.load._spec import BenchSpec, Number

if TYPE_CHECKING:
    from pounder._engine import ProgressInfo, Run

POLL_INTERVAL_S = 0.25


@dataclass(frozen=True)
class Progress:
    """A snapshot of a running bench, given to the ``on_progress`` callback about every 0.25 s.

    ``phase`` is "warmup", "measure", "drain" or "done"; ``elapsed_s`` is the time since the
    measured phase began (0 during warm-up); ``complete`` and ``failed`` count measured requests
    only; ``rate`` the completions in the last full second; ``planned_s`` and
    ``planned_requests`` what the run is set to measure (``None`` when not bounded by it).
    """

    phase: str
    elapsed_s: float
    complete: int
    failed: int
    rate: float
    planned_s: float | None
    planned_requests: int | None
    interrupted: bool


ProgressCallback = Callable[[Progress], None]


def _load_engine() -> ModuleType:
    try:
        from pounder import _engine
    except ImportError as error:
        raise PounderError(f"the load engine pounder._engine cannot be loaded ({error}); is pounder built?") from None
    return _engine


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _snapshot(info: ProgressInfo, load: LoadModel, interrupted: bool) -> Progress:
    return Progress(
        phase=info["phase"],
        elapsed_s=info["elapsed_s"],
        complete=info["complete"],
        failed=info["failed"],
        rate=info["rate"],
        planned_s=load.duration_s,
        planned_requests=load.requests,
        interrupted=interrupted,
    )


def _poll(run: Run, load: LoadModel, on_progress: ProgressCallback | None, interrupted: bool) -> None:
    while True:
        done = run.wait(POLL_INTERVAL_S)
        if on_progress is not None:
            on_progress(_snapshot(run.progress(), load, interrupted))
        if done:
            return


def _follow(run: Run, load: LoadModel, on_progress: ProgressCallback | None) -> bool:
    """Wait for the run to finish; returns True when it was interrupted by Ctrl-C."""
    try:
        _poll(run, load, on_progress, interrupted=False)
        return False
    except KeyboardInterrupt:
        run.cancel()
        _poll(run, load, on_progress, interrupted=True)
        return True


def run_bench(spec: BenchSpec, on_progress: ProgressCallback | None = None) -> BenchResult:
    """Run a validated spec and return its result."""
    engine = _load_engine()
    started_at = _now_iso()
    try:
        run: Run = engine.start(spec.engine_spec())
    except ValueError as error:
        raise PounderError(f"the engine rejected the spec: {error}") from None
    interrupted = _follow(run, spec.load, on_progress)
    try:
        return BenchResult.from_engine(
            run.result(),
            options=spec.run_options(),
            started_at=started_at,
            interrupted=interrupted,
            tool_version=__version__,
        )
    except MalformedResultError as error:
        raise PounderError(f"the engine returned a malformed result: {error}") from None


def bench(
    url: str | None = None,
    *,
    url_file: str | Path | None = None,
    order: str = "sequential",
    connections: int | str | None = None,
    requests: int | str | None = None,
    duration: Number | None = None,
    threads: int | str | None = None,
    rate: float | int | str | None = None,
    stages: str | Sequence[Stage] | None = None,
    max_in_flight: int | str | None = None,
    keepalive: bool = True,
    calls_per_conn: int | str | None = None,
    warmup: int | str | None = None,
    throttle: int | str | None = None,
    unix_socket: str | None = None,
    method: str | None = None,
    body: str | bytes | None = None,
    content_type: str | None = None,
    headers: Sequence[str] | Mapping[str, str] = (),
    cookies: Sequence[str] = (),
    auth: str | None = None,
    timeout: Number | None = None,
    allow_remote: bool = False,
    tsv_path: str | Path | None = None,
    hdr_log_path: str | Path | None = None,
    on_progress: ProgressCallback | None = None,
) -> BenchResult:
    """Benchmark an HTTP server; the keyword arguments mirror ``pounder bench``'s options.

    Values may be given as a user types them (``requests="10k"``, ``duration="2m"``,
    ``rate="50..500/60s"``, ``throttle="56kbit"``) or as numbers (seconds, requests per second,
    bytes per second). ``headers`` are ``"Name: value"`` strings or a mapping; ``body`` is text,
    ``"@file"`` or bytes. Defaults: closed loop with 10 connections for 10 s, 30 s timeout,
    keep-alive on. See :class:`BenchSpec` for the rules.

    Raises :class:`~pounder.UsageError` on bad input (before anything is sent) and
    :class:`~pounder.PounderError` if the engine cannot run. On Ctrl-C the partial result is
    returned with ``interrupted=True``.
    """
    spec = BenchSpec.from_options(
        url,
        url_file=url_file,
        order=order,
        connections=connections,
        requests=requests,
        duration=duration,
        threads=threads,
        rate=rate,
        stages=stages,
        max_in_flight=max_in_flight,
        keepalive=keepalive,
        calls_per_conn=calls_per_conn,
        warmup=warmup,
        throttle=throttle,
        unix_socket=unix_socket,
        method=method,
        body=body,
        content_type=content_type,
        headers=headers,
        cookies=cookies,
        auth=auth,
        timeout=timeout,
        allow_remote=allow_remote,
        tsv_path=tsv_path,
        hdr_log_path=hdr_log_path,
    )
    return run_bench(spec, on_progress)
