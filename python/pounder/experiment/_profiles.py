"""An experiment's ``record = ["profile"]``: one profile per variant, and where the time moved.

After the loads (and the system calls) every variant's server is started once more on its own,
as the experiment starts it (its workers, its request limit, its settings; with Devel::NYTProf
loaded for a Perl server: ``adapter.profiling``), warmed with the variant's path, and profiled by
:func:`pounder.profile.profile` under the experiment's first load (its connections, rate and
keep-alive; each trial as long as one of its trials, 1 s with ``--quick``, else 5 s for a load
given as requests), 2 rounds with ``--quick`` else 5, then stopped. So the comparisons ran
with no profiler in their servers. The profiles go to ``profile-<N>.json`` (N: the variant's
position in the file) with ``flame-<N>.svg``; the text ends with the side-by-side table of
:func:`pounder.profile.render_moved`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pounder._errors import PounderError
from pounder._units import count_text
from pounder.experiment._file import Experiment, LoadSpec, VariantSpec
from pounder.load import LoadOptions
from pounder.pool import Adapter, PoolParams, Runner
from pounder.profile import (
    DEFAULT_ROUNDS,
    ProfileResult,
    check_profiler,
    profile,
    profiler_for,
    render_moved,
    save_profile,
)

DURATION = "5s"
"""A trial's length when the first load is given as requests."""
QUICK_DURATION = "1s"

Log = Callable[[str], None]


def params_of(exp: Experiment, variant: VariantSpec) -> PoolParams:
    """The pool a variant's server runs: the variant's workers, request limit and spare settings, else the
    server's (no spare settings: every child started and kept)."""
    server = exp.server
    spares = {name: getattr(server, name) if getattr(variant, name) is None else getattr(variant, name)
              for name in ("start_servers", "min_spare", "max_spare")}
    return PoolParams(variant.workers or server.workers,
                      max_requests=server.max_requests if variant.max_requests is None else variant.max_requests,
                      **spares)


def check_profiles(exp: Experiment, adapters: list[Adapter]) -> None:
    """With ``profile`` recorded: each server's profiler checked (UsageError) before anything starts."""
    if "profile" in exp.record:
        for adapter in adapters:
            check_profiler(adapter.language, adapter.nytprof)


def _load(load: LoadSpec, quick: bool) -> LoadOptions:
    duration = QUICK_DURATION if quick else load.duration or DURATION
    return LoadOptions(connections=load.connections, duration=duration, rate=load.rate, keepalive=load.keepalive,
                       threads=1, io=load.io)


def profile_variants(exp: Experiment, adapters: dict[str, Adapter], folder: Path, quick: bool, say: Log,
                     profiles: dict[str, ProfileResult], memory_floor: int) -> None:
    """Each variant profiled on a server of its own (see the module), into ``profiles`` as they come and
    ``folder``; KeyboardInterrupt after writing what was sampled."""
    for number, variant in enumerate(exp.variants, start=1):
        adapter = adapters[variant.label]
        runner = Runner(adapter.profiling(folder / "nytprof" / f"variant-{number}"),
                        folder / "servers" / f"profile-{number}", variant.path or "/", memory_floor, 30.0)
        say(f"profiling {variant.label}")
        try:
            with runner.started(params_of(exp, variant)) as server:
                runner.warm(server)
                result = profile(runner.url(server), server_pid=server.pid, rounds=2 if quick else DEFAULT_ROUNDS,
                                 warmup=0, options=_load(exp.loads[0], quick),
                                 profiler=profiler_for(adapter.language, adapter.nytprof))
        except PounderError as error:  # the loads stand: this variant has no profile, and the text says why
            say(f"profile of {variant.label}: not taken: {error}")
            continue
        save_profile(result, folder, f"profile-{number}.json", f"flame-{number}.svg")
        profiles[variant.label] = result
        if result.interrupted:
            raise KeyboardInterrupt


def _cost(result: ProfileResult) -> str:
    """"0.91x" (a cost the rounds tell), "0.97x, no cost told" or "not known"."""
    figure = result.cost.throughput
    if figure.ratio is None:
        return "not known"
    return f"{figure.ratio:.2f}x" + ("" if figure.told else f", no cost told by {count_text(figure.rounds, 'round')}")


def moved_lines(profiles: dict[str, ProfileResult], baseline: str) -> list[str]:
    """The text's last part: where the time moved between the variants (their self shares)."""
    if baseline not in profiles or len(profiles) < 2:
        return []
    first = next(iter(profiles.values()))
    costs = ", ".join(f"{label} {_cost(result)}" for label, result in profiles.items())
    return ["", f"Where did the time move (self share %, the top functions of each variant's profile; "
                f"{first.profiler_version or first.profiler}, profile-N.json)", *render_moved(profiles, baseline),
            f"  the profiler's cost, requests/s profiled / not: {costs}"]
