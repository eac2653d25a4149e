"""Running an experiment file: start one server per distinct variant setting (all side by side,
each on its own loopback port), warm them, compare the variants under each load with interleaved
trials, and record the children's memory.

The results directory is written as it goes::

    DIR/experiment.json     the experiment as read (pounder/experiment/1)
    DIR/load-<N>.json       the comparison under load N (pounder/compare/1), after each trial
    DIR/memory.json         each server's children after warm-up and after the loads, with the
                            requests sent to it by then
    DIR/syscalls-<N>.json   variant N's system calls per request (pounder/syscalls/1), when recorded
    DIR/profile-<N>.json    variant N's profile (pounder/profile/1) and DIR/flame-<N>.svg, when recorded
    DIR/summary.txt         the text ``pounder run`` printed
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pounder._errors import PounderError, UsageError, check_callable, check_instance, check_path, public
from pounder._files import utc_timestamp
from pounder._units import MIB
from pounder._version import __version__
from pounder.compare import (
    SLOWER_MIN_TRIALS,
    CompareResult,
    TrialCallback,
    Variant,
    check_slower_trials,
    compare,
    failure_message,
    parse_compare_gates,
    render_compare,
)
from pounder.experiment._file import Experiment, LoadSpec, VariantSpec, server_adapter
from pounder.experiment._profiles import check_profiles, moved_lines, params_of, profile_variants
from pounder.experiment._tls import TlsSpec
from pounder.load import ENGINE, BenchSpec, Sender, check_io, check_tls
from pounder.pool import (
    Adapter,
    ResultsDir,
    Runner,
    pool_memory,
    write_file,
    write_json,
)
from pounder.profile import ProfileResult
from pounder.results import Gate, check_gates
from pounder.servers import ManagedServer
from pounder.syscalls import SyscallReport, trace_syscalls

EXPERIMENT_SCHEMA = "pounder/experiment/1"
MEMORY_FLOOR = 256 * MIB
SYSCALL_REQUESTS = 200
STAT_CALLS = frozenset({"stat", "lstat", "newfstatat", "fstatat64", "statx", "stat64", "lstat64"})
OPEN_CALLS = frozenset({"open", "openat", "openat2"})
QUICK_TRIALS = 3
QUICK_DURATION = "1s"

Log = Callable[[str], None]


@public
@dataclass
class ExperimentResult:
    """The comparisons (one per load) and the memory of each variant's server."""

    experiment: Experiment
    comparisons: list[tuple[LoadSpec, CompareResult]]
    memory: dict[str, dict[str, Any]]
    results_dir: Path
    syscalls: dict[str, SyscallReport] = field(default_factory=dict)
    interrupted: bool = False
    """A signal (Ctrl-C, SIGTERM, SIGHUP) stopped the run: what was measured until then is here."""
    profiles: dict[str, ProfileResult] = field(default_factory=dict)
    """Each variant's profile, when recorded (:mod:`pounder.experiment._profiles`)."""

    def failures(self) -> list[str]:
        """For each load where a variant was left with fewer than 2 counted trials because its
        requests failed (:func:`pounder.compare.failure_message`): ``load N (LABEL): ...``; no
        comparison with it under that load."""
        return [f"load {index} ({load.label}): {message}"
                for index, (load, result) in enumerate(self.comparisons, start=1)
                if (message := failure_message(result)) is not None]

    def gate_failures(self) -> list[str]:
        """For each load whose comparison failed a gate: ``load N (LABEL): ...`` (the gates that failed)."""
        return [f"load {index} ({load.label}): {line}"
                for index, (load, result) in enumerate(self.comparisons, start=1)
                if result.gates is not None and (line := result.gates.failure_line()) is not None]

    def stopped_line(self) -> str | None:
        """When a signal stopped the run, where: ``interrupted after 1 of 2 loads (the last one
        partly): partial result``; None when it was not."""
        if not self.interrupted:
            return None
        if len(self.comparisons) == len(self.experiment.loads) and not self.comparisons[-1][1].interrupted:
            return "interrupted after the loads, while recording (system calls, profiles): partial result"
        return (f"interrupted after {len(self.comparisons)} of {len(self.experiment.loads)} loads "
                f"(the last one partly): partial result")

    def to_junit(self) -> str:
        """The run as JUnit XML (``pounder run --junit``: :mod:`pounder.experiment._junit`)."""
        from pounder.experiment._junit import experiment_junit

        return experiment_junit(self).render()

    def render(self) -> str:
        exp = self.experiment
        out = [exp.title, "=" * len(exp.title)]
        if exp.description:
            out.append(exp.description)
        out.append(f"results in {self.results_dir}")
        stopped = self.stopped_line()
        if stopped is not None:
            out.append(stopped)
        for index, (load, result) in enumerate(self.comparisons, start=1):
            out += ["", f"Load {index}: {load.label}, keep-alive {'on' if load.keepalive else 'off'}",
                    render_compare(result).rstrip("\n")]
        if "memory" in exp.record and self.memory:
            out += ["", "Children's memory (MiB; after warm-up -> after the loads; requests: sent to the variant's "
                        "server by then)"]
            width = max(len(label) for label in self.memory)
            out.append(f"  {'':<{width}}  {'children':>8}  {'requests':>19}  {'max USS':>16}  {'shared (median)':>16}  "
                       f"{'footprint':>16}")
            for label, sizes in self.memory.items():
                before, after = sizes["warm"], sizes.get("after", sizes["warm"])  # no "after": stopped before a load

                def pair(key: str, before: dict[str, Any] = before, after: dict[str, Any] = after) -> str:
                    return f"{(before[key] or 0) / MIB:7.1f} ->{(after[key] or 0) / MIB:7.1f}"

                sent = ("-" if "requests" not in after else  # a run before the requests were recorded
                        f"{before.get('requests', 0):>8,} ->{after['requests']:>8,}")
                out.append(f"  {label:<{width}}  {after['children']:>8}  {sent:>19}  {pair('max_child_uss'):>16}  "
                           f"{pair('median_child_shared'):>16}  {pair('footprint'):>16}")
        if self.syscalls:
            out += ["", f"System calls per request (strace on the children, {SYSCALL_REQUESTS} requests per variant)"]
            width = max(len(label) for label in self.syscalls)
            out.append(f"  {'':<{width}}  {'all':>7}  {'stat':>7}  {'open':>7}  {'failing':>7}")
            for label, report in self.syscalls.items():
                stat = sum(c.per_request for c in report.calls if c.name in STAT_CALLS)
                opened = sum(c.per_request for c in report.calls if c.name in OPEN_CALLS)
                failing = sum(f.per_request for f in report.failures)
                out.append(f"  {label:<{width}}  {report.total_per_request:7.2f}  {stat:7.2f}  {opened:7.2f}  "
                           f"{failing:7.2f}")
            for label, report in self.syscalls.items():
                for failure in report.failures[:12]:
                    out.append(f"  {label}: {failure.name} {failure.errno} {failure.path or '-'} "
                               f"{failure.per_request:.2f}/request")
        out += moved_lines(self.profiles, exp.baseline)
        return "\n".join(out) + "\n"


@public
def run_experiment(exp: Experiment, results: str | Path, *, quick: bool = False, log: Log | None = None,
                   on_trial: TrialCallback | None = None, sender: Sender | None = None,
                   gates: Sequence[str] | None = None) -> ExperimentResult:
    """Run every load of ``exp``; everything measured is in ``results`` as it comes. Ctrl-C (or
    any ``KeyboardInterrupt``) stops it: every server is stopped, what was measured is written and
    returned with ``interrupted=True``. ``sender``: what sends the loads (default this machine's
    engine; a :class:`pounder.agents.Cluster` is placed for each load's comparison, see
    :func:`pounder.compare.compare`). ``gates``: more gates than the file's ``fail_if`` (:func:`_gates`)."""
    check_instance(exp, Experiment, "run_experiment: exp (see load_experiment)")
    checked_gates = _gates(exp, gates, quick)
    check_path(results, "run_experiment: results")
    check_callable(log, "run_experiment: log")
    check_callable(on_trial, "run_experiment: on_trial")
    check_instance(sender, Sender, "run_experiment: sender", optional=True)
    sender = sender or ENGINE
    say = log or (lambda line: None)
    ResultsDir.check_new(results)
    planned = _servers(exp)  # every server's inputs checked (UsageError) before anything is created
    check_profiles(exp, [adapter for _, adapter in planned])
    _check_loads(exp, sender)  # the last refusal: nothing was printed or written before it
    for warning in dict.fromkeys(w for _, adapter in planned for w in adapter.warnings()):
        say(f"warning: {warning}")  # what a server would ignore without a word (it runs all the same)
    folder = Path(results)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # checked above; something changed since
        raise PounderError(f"cannot create the results directory {results}: {error.strerror or error}") from None
    write_json(folder / "experiment.json", {
        "schema": EXPERIMENT_SCHEMA, "tool_version": __version__,
        "started_at": utc_timestamp("seconds"),
        "quick": quick, "experiment": exp.to_dict()})
    comparisons: list[tuple[LoadSpec, CompareResult]] = []
    memory: dict[str, dict[str, Any]] = {}
    syscalls: dict[str, SyscallReport] = {}
    profiles: dict[str, ProfileResult] = {}
    interrupted = False
    try:
        with contextlib.ExitStack() as stack:
            urls: dict[str, tuple[str, int | None]] = {}
            runners: Started = []
            if exp.server.adapter == "url":
                urls = {v.label: (str(v.url), None) for v in exp.variants}
            else:
                runners = _start_servers(exp, planned, folder, stack, urls, memory, say)
            variants = [Variant(label=v.label, url=urls[v.label][0], server_pid=urls[v.label][1])
                        for v in exp.variants]
            try:
                for index, load in enumerate(exp.loads, start=1):
                    say(f"load {index}: {load.label}")
                    result = _compare(variants, exp.baseline, load, quick, on_trial, folder / f"load-{index}.json",
                                      sender, checked_gates, exp.tls)
                    comparisons.append((load, result))
                    if result.interrupted:
                        interrupted = True
                        break
            finally:  # the children after the loads, also when a signal cut them short
                for members, runner, server in runners:
                    sizes = {**pool_memory(runner.snapshot(server)),
                             "requests": _sent(members, memory, comparisons)}
                    for variant in members:
                        memory[variant.label]["after"] = sizes
            if "syscalls" in exp.record and not interrupted:
                for number, variant in enumerate(exp.variants, start=1):
                    say(f"tracing the system calls of {variant.label}")
                    url, pid = urls[variant.label]
                    report = trace_syscalls(url, server_pid=pid, requests=SYSCALL_REQUESTS, connections=2)
                    syscalls[variant.label] = report
                    write_json(folder / f"syscalls-{number}.json", report.to_dict())
        if "profile" in exp.record and not interrupted:  # each on a server of its own, the others stopped
            profile_variants(exp, {v.label: adapter for members, adapter in planned for v in members}, folder,
                             quick, say, profiles, MEMORY_FLOOR)
    except KeyboardInterrupt:  # every server is stopped by now; what was measured is written below
        interrupted = True
    finally:
        if memory:
            write_json(folder / "memory.json", {"schema": "pounder/experiment-memory/1", "variants": memory})
    outcome = ExperimentResult(exp, comparisons, memory, folder, syscalls, interrupted, profiles)
    write_file(folder / "summary.txt", outcome.render())
    return outcome


Started = list[tuple[list[VariantSpec], Runner, ManagedServer]]


def _check_loads(exp: Experiment, sender: Sender) -> None:
    """Every load as load_experiment checked it (an Experiment may be built by hand), what the
    sender cannot send (agents cannot share), the I/O path each load asks for (``io = "uring"``
    with HTTPS), the [tls] files, and one TLS handshake to each https:// variant URL (as pounder
    bench makes it): every refusal before any server starts, anything is printed or written."""
    urls = [str(v.url) for v in exp.variants] if exp.server.adapter == "url" else ["http://127.0.0.1:1/"]
    specs: list[BenchSpec] = []
    for index, load in enumerate(exp.loads, start=1):
        options = exp.tls.with_load(load.options())
        try:
            options.load_model()
            specs = [BenchSpec.from_options(url, options=options) for url in urls]
            for spec in specs:
                sender.check(spec)
                check_io(spec)
        except UsageError as error:
            raise UsageError(f"load {index} ({load.label}): {error}") from None
    probed: dict[str, BenchSpec] = {}  # the handshake depends on no load: the last load's specs, one per address
    for url, spec in zip(urls, specs, strict=True):
        probed.setdefault(urlsplit(url).netloc.lower(), spec)
    for spec in probed.values():
        check_tls(spec)


def _gates(exp: Experiment, gates: Sequence[str] | None, quick: bool = False) -> tuple[Gate, ...] | None:
    """The gates of every load's comparison: the experiment file's ``fail_if``, then ``gates``
    (``--fail-if`` expressions of a comparison, :func:`pounder.compare.parse_compare_gates`); None
    when there are none. ``slower`` is refused for a load of fewer than 5 trials (``quick``: 3)."""
    if not exp.fail_if and gates is None:
        return None
    own, given = parse_compare_gates(exp.fail_if, "fail_if"), parse_compare_gates(gates)
    for index, load in enumerate(exp.loads, start=1):
        fix = "run without --quick" if quick else "set trials = 5 or more in this load"
        if quick and load.trials < SLOWER_MIN_TRIALS:
            fix += ", with trials = 5 or more in this load"
        try:
            for checked, what in ((own, "fail_if"), (given, "--fail-if")):
                check_slower_trials(checked, min(load.trials, QUICK_TRIALS) if quick else load.trials, what, fix)
                check_gates(checked, load.options().load_model(), what)  # slower>100% in closed loop
        except UsageError as error:
            raise UsageError(f"load {index} ({load.label}): {error}") from None
    return (*own, *given)


def _servers(exp: Experiment) -> list[tuple[list[VariantSpec], Adapter]]:
    """The variants of each distinct server setting, with the adapter that starts their server
    (its inputs checked); none for plain URLs."""
    if exp.server.adapter == "url":
        return []
    groups: dict[tuple[Any, ...], list[VariantSpec]] = {}
    for variant in exp.variants:
        groups.setdefault(variant.server_key(), []).append(variant)
    return [(members, server_adapter(exp, members[0])) for members in groups.values()]


def _start_servers(exp: Experiment, planned: list[tuple[list[VariantSpec], Adapter]], folder: Path,
                   stack: contextlib.ExitStack, urls: dict[str, tuple[str, int | None]],
                   memory: dict[str, dict[str, Any]], say: Log) -> Started:
    """One server per distinct server setting (stopped by ``stack``), warmed; their URLs and the
    children's memory after warm-up."""
    runners: Started = []
    for number, (members, adapter) in enumerate(planned, start=1):
        first = members[0]
        params = params_of(exp, first)
        runner = Runner(adapter, folder / "servers" / f"server-{number}", first.path or "/", MEMORY_FLOOR, 30.0)
        say(f"starting the server for {', '.join(v.label for v in members)}")
        server = stack.enter_context(runner.started(params))
        runners.append((members, runner, server))
        # behind a front (php-fpm's nginx) the pool's parent does not listen where the requests go:
        # compare samples no server then (its CPU per request would be the front's, or nothing)
        pid = server.pid if server.front_pid is None else None
        for variant in members:
            urls[variant.label] = (server.url + str(variant.path), pid)
    for members, runner, server in runners:
        sent = 0
        for variant in members:
            runner.path = str(variant.path)
            sent += runner.warm(server).requests
        sizes = {**pool_memory(runner.snapshot(server)), "requests": sent}
        for variant in members:
            memory[variant.label] = {"warm": sizes}
    return runners


def _sent(members: Sequence[VariantSpec], memory: dict[str, dict[str, Any]],
          comparisons: Sequence[tuple[LoadSpec, CompareResult]]) -> int:
    """The requests sent to the server of ``members`` so far: its warm-up's, then every trial of
    theirs (the comparisons' warm-up trials too), complete or failed."""
    labels = {variant.label for variant in members}
    return int(memory[members[0].label]["warm"]["requests"]) + sum(
        trial.complete + trial.failed for _, result in comparisons for trial in result.trials if trial.label in labels)


def _compare(variants: Sequence[Variant], baseline: str, load: LoadSpec, quick: bool,
             on_trial: TrialCallback | None, results: Path, sender: Sender,
             gates: tuple[Gate, ...] | None = None, tls: TlsSpec | None = None) -> CompareResult:
    """The comparison under ``load`` (https:// URLs trusted as ``tls`` says), written to
    ``results`` after every trial."""
    duration = load.duration
    if quick and duration is not None:
        duration = QUICK_DURATION
    return compare(list(variants), baseline=baseline, trials=min(load.trials, QUICK_TRIALS) if quick else load.trials,
                   connections=load.connections, requests=None if quick and duration else load.requests,
                   duration=duration, rate=load.rate, keepalive=load.keepalive, io=load.io, on_trial=on_trial,
                   results=results, sender=sender, gates=gates, **(tls or TlsSpec()).options())

