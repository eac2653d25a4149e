"""``pounder tune --profile``: where the recommended configuration's children spend their time.

After the run has decided (and confirmed) its recommendation, the recommended configuration is
started once more (with Devel::NYTProf loaded for a Perl server: ``adapter.profiling``), every
child warmed, and :func:`pounder.profile.profile` run against it at the confirmation's load
(the offered load: its clients, or its rate open loop), each trial as long as a sweep point, 2
rounds with ``--quick`` else 5 (enough to tell a cost). ``profile.json`` (``pounder/profile/1``) and ``flame.svg`` go to
the results directory; the server is stopped in every case (Ctrl-C too, after what was sampled
is written). A resumed run profiles again.

The profiler is checked before the run starts anything (:func:`check_profile`): a missing py-spy
is said at once, not after the tuning.
"""

from __future__ import annotations

import copy
import ipaddress
from dataclasses import replace
from pathlib import Path

from pounder._errors import PounderError, UsageError
from pounder.load import LoadOptions
from pounder.pool import Adapter
from pounder.profile import (
    DEFAULT_ROUNDS,
    ProfileResult,
    check_profiler,
    profile,
    profiler_for,
    save_profile,
    summary_lines,
)
from pounder.tune._options import TuneOptions
from pounder.tune._result import TuneResult
from pounder.tune._session import TuneSession

PROFILE_FILE = "profile.json"
FLAME_FILE = "flame.svg"
NYTPROF_DIR = "nytprof"


def check_profile(adapter: Adapter, options: TuneOptions) -> None:
    """With ``options.profile``: UsageError (one line) when the profile could not be taken, before
    anything starts: its profiler missing or not permitted, a request mix (a profile loads one
    URL), a server away from loopback (the profiler runs here)."""
    if not options.profile:
        return
    if options.targets:
        raise UsageError("--profile loads one URL (--path): it cannot replay the --urls or --access-log mix; profile "
                         "one of its URLs with pounder profile")
    if not ipaddress.IPv4Address(options.listen).is_loopback:
        raise UsageError("--profile needs the server on loopback (no --listen): the profiler runs on this machine")
    check_profiler(adapter.language, adapter.nytprof)


def describe(load: LoadOptions) -> str:
    return f"{load.rate:,.6g} req/s" if load.rate is not None else f"{load.connections} clients"


def _load(session: TuneSession, result: TuneResult) -> LoadOptions:
    """The confirmation's load (the offered load), a trial as long as a sweep point."""
    options, workload = session.options, session.runner.workload
    offered = result.offered
    connections = offered.connections if offered is not None else result.params.max_clients
    rate = offered.rate if offered is not None else None
    return LoadOptions(connections=connections, rate=rate, duration=options.point_s, keepalive=workload.keepalive,
                       throttle=workload.throttle, timeout=options.timeout_s, threads=1)


def profile_step(session: TuneSession, result: TuneResult) -> TuneResult:
    """``result`` with its profile's summary (``profile_lines``) when the run profiles; the files
    written into the results directory. KeyboardInterrupt after writing what was sampled."""
    options = session.options
    if not options.profile:
        return result
    folder = Path(session.results.path)
    runner = copy.copy(session.runner)  # its CPUs, address, memory floor; its own adapter
    runner.adapter = session.adapter.profiling(folder / NYTPROF_DIR)
    rounds = 2 if options.quick else DEFAULT_ROUNDS  # 5: enough rounds to tell a cost
    load = _load(session, result)
    session._status(f"profile: the recommended configuration at {describe(load)}")
    for stale in (PROFILE_FILE, FLAME_FILE):  # a resumed run's earlier, interrupted profile
        (folder / stale).unlink(missing_ok=True)
    try:
        with runner.started(result.params) as server:
            runner.warm(server)
            profiled: ProfileResult = profile(
                runner.url(server), server_pid=server.pid, rounds=rounds, warmup=0, options=load,
                profiler=profiler_for(session.adapter.language, session.adapter.nytprof), load_cpus=runner.load_cpus)
    except PounderError as error:  # the recommendation stands: the text says why it has no profile
        session._log(f"profile: not taken: {error}")
        return replace(result, profile_lines=(f"Profile: not taken: {error}",))
    files = save_profile(profiled, folder, PROFILE_FILE, FLAME_FILE)
    if profiled.interrupted:
        raise KeyboardInterrupt
    lines = summary_lines(profiled, [path.relative_to(folder) for path in files],
                          heading="Profile of the recommended configuration")
    session._log(lines[0])
    return replace(result, profile_lines=tuple(lines))
