"""``pounder tune``: start the real server, sweep its five parameters, recommend a configuration.

::

    from pounder.tune import GunicornAdapter, make_options, render_tune, tune

    result = tune(GunicornAdapter("app:app", pythonpath="/srv/app", preload=True),
                  make_options(ram="2G", clients=50), results="tune-out")
    print(result.params.max_clients, result.params.max_requests)
    print(render_tune(result))

Each measured point is written to the results directory as it is measured, with what the run
derives from its points so far (``summary.json``); ``resume(DIR)`` continues an interrupted run.
See :mod:`pounder.tune._session` for the steps and :mod:`pounder.tune._analysis` for the rules
behind each decision. The server under test is run by :mod:`pounder.pool` (adapters, the runner,
the results directory); its adapters are re-exported here.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterator

from pounder._errors import UsageError, check_callable, check_instance, check_path, public
from pounder._tune_point import TunePoint
from pounder._tune_run import SpareChoice, Target
from pounder.load import ENGINE, ProgressCallback, Sender
from pounder.pool import (
    RESULT_SCHEMA,
    TUNE_SCHEMA,
    Adapter,
    ApacheAdapter,
    CommandAdapter,
    GunicornAdapter,
    MemoryFloorError,
    PoolParams,
    ResultsDir,
    StarmanAdapter,
    adapter_from_dict,
    demo_adapter,
)
from pounder.tune._analysis import ChildrenChoice
from pounder.tune._machine import manifest, measured_cpus
from pounder.tune._memory import MemoryBound
from pounder.tune._mrpc import MaxRequestsChoice
from pounder.tune._options import TuneOptions, make_options
from pounder.tune._profile_step import check_profile, profile_step
from pounder.tune._render import render_tune
from pounder.tune._result import TuneResult
from pounder.tune._session import Log, TuneSession


def _finish(session: TuneSession) -> TuneResult:
    result = profile_step(session, session.run())
    session.results.save_result(result.to_dict(), render_tune(result))
    return result


@contextlib.contextmanager
def _opened(sender: Sender | None, options: TuneOptions, *, resuming: bool = False) -> Iterator[Sender]:
    """``sender`` (default this machine's engine) opened for a whole run; agents on other machines
    cannot reach a server on loopback: refused before anything starts."""
    with (sender or ENGINE).open() as opened:
        away = opened.elsewhere()
        if away and ipaddress.IPv4Address(options.listen).is_loopback:
            what = (f"{away} of the {opened.count} agents run on other machines and cannot reach a server on "
                    f"{options.listen}")
            if resuming:
                raise UsageError(f"{what}, where this run's server listens: resume it with agents on this machine "
                                 "only (e.g. --ray local)")
            raise UsageError(f"{what}: give --listen with this machine's address on their network (and "
                             "--allow-remote)")
        yield opened


@public
def tune(adapter: Adapter, options: TuneOptions | None = None, *, results: str | os.PathLike[str],
         log: Log | None = None, progress: ProgressCallback | None = None, status: Log | None = None,
         sender: Sender | None = None) -> TuneResult:
    """Run every step for ``adapter`` and return the recommendation. ``results`` must not exist
    yet (or be an empty directory). ``sender``: what sends the measured loads (default this
    machine's engine); with a :class:`pounder.agents.Cluster` they are sent by its agents, placed
    once for the whole run, and the server listens on ``options.listen`` and keeps every CPU here.
    Raises :class:`~pounder.UsageError` on bad input, :class:`~pounder.servers.ServerStartError`
    when the server does not start (with its own log lines), :class:`MemoryFloorError` when memory
    runs low; on ``KeyboardInterrupt`` every server is stopped and what was measured stays in
    ``results`` for :func:`resume`."""
    check_instance(adapter, Adapter, "tune: adapter")
    check_instance(options, TuneOptions, "tune: options", optional=True)
    check_path(results, "tune: results")
    for name, callback in (("log", log), ("progress", progress), ("status", status)):
        check_callable(callback, f"tune: {name}")
    check_instance(sender, Sender, "tune: sender", optional=True)
    options = options or TuneOptions()
    options.validate()
    adapter.check()
    check_profile(adapter, options)
    ResultsDir.check_new(results)
    with _opened(sender, options) as opened:
        store = ResultsDir.create(results, manifest(adapter, options, opened))
        try:
            return _finish(TuneSession(adapter, options, store, log=log, progress=progress, status=status,
                                       sender=opened))
        finally:
            store.release()


@public
def open_run(results: str | os.PathLike[str]) -> tuple[ResultsDir, Adapter, TuneOptions]:
    """The results directory of an earlier run, with the adapter and options it was run with;
    :class:`~pounder.UsageError` if ``results`` does not hold a readable run (a stored point
    that cannot be read back is named, to be removed and measured again) or what the run's
    server needs is no longer there."""
    check_path(results, "results")
    store, stored = ResultsDir.open(results)
    adapter_data, options_data = stored.get("adapter"), stored.get("options")
    if not isinstance(adapter_data, dict) or not isinstance(options_data, dict):
        raise UsageError(f"{store.manifest_path} has no adapter or options to resume with")
    options = TuneOptions.from_dict(options_data)
    store.check_points()
    return store, adapter_from_dict(adapter_data, check=True), options


@public
def resume(results: str | os.PathLike[str], *, log: Log | None = None, progress: ProgressCallback | None = None,
           status: Log | None = None, sender: Sender | None = None) -> TuneResult:
    """Continue the run stored in ``results``: measure only the points not stored yet. A run
    whose loads were sent by Ray agents goes on only with agents (a ``sender`` such as a
    :class:`pounder.agents.Cluster`), and one sent from this machine only from this machine: its
    points are compared with each other."""
    for name, callback in (("log", log), ("progress", progress), ("status", status)):
        check_callable(callback, f"resume: {name}")
    check_instance(sender, Sender, "resume: sender", optional=True)
    distributed = sender is not None and sender.distributed
    store, adapter, options = open_run(results)
    check_profile(adapter, options)
    recorded = ResultsDir.open(results)[1]
    stored = recorded.get("load")
    if stored is not None and not isinstance(stored, dict):
        raise UsageError(f"{store.manifest_path}: 'load' must be an object or absent")
    if stored is not None and not distributed:
        count = stored.get("agents")
        raise UsageError(f"{results} was measured with load from {count} Ray agent{'s' * (count != 1)} "
                         f"(--ray {stored.get('ray')}): resume it with --ray too")
    if stored is None and distributed:
        raise UsageError(f"{results} was measured with load from this machine: resume it without --ray")
    store.hold()  # one process at a time writes a run
    try:
        with _opened(sender, options, resuming=True) as opened:
            return _finish(TuneSession(adapter, options, store, log=log, progress=progress, status=status,
                                       sender=opened, measured_on=measured_cpus(recorded, options)))
    finally:
        store.release()


__all__ = [
    "RESULT_SCHEMA",
    "TUNE_SCHEMA",
    "Adapter",
    "ApacheAdapter",
    "ChildrenChoice",
    "CommandAdapter",
    "GunicornAdapter",
    "MaxRequestsChoice",
    "MemoryBound",
    "MemoryFloorError",
    "PoolParams",
    "ResultsDir",
    "SpareChoice",
    "StarmanAdapter",
    "Target",
    "TuneOptions",
    "TunePoint",
    "TuneResult",
    "adapter_from_dict",
    "demo_adapter",
    "make_options",
    "open_run",
    "render_tune",
    "resume",
    "tune",
]
