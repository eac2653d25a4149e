"""Running a comparison: repeated, interleaved trials of the same load against each variant.

Order: one warm-up trial per variant (not counted), then rounds ``A B C``, ``A B C``, ... (``trials``
rounds), so that drift over time (a machine warming up, another job starting) falls on every
variant alike. Each trial is one :func:`~pounder.run_bench` of the same validated load, with the
variant's server sampled when it has a pid (for its CPU per request); with a Ray ``cluster``, every
trial is sent by the same agents.

``results``: one JSON document (schema ``pounder/compare/1``) rewritten after every trial,
atomically (a temporary file in the same directory, renamed), so it always holds every trial
measured so far and the statistics over them; ``finished_at`` stays ``null`` until the run ended.

Ctrl-C stops the comparison: the trial running then is kept but not counted (marked
``interrupted``), the trials done are reported, and the result says ``interrupted``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pounder._compare_run import MAX_TRIALS, MAX_VARIANTS
from pounder._errors import PounderError, UsageError, check_callable, check_path, check_text, check_type, public
from pounder._files import check_output_path, utc_timestamp, write_atomic
from pounder._stats import MIN_EFFECT
from pounder._version import __version__
from pounder.compare._gates import (
    ACCEPTED,
    COMPARE_METRICS,
    check_slower_trials,
    evaluate_compare_gates,
    parse_compare_gates,
)
from pounder.compare._result import CompareOptions, CompareResult, Trial, TrialCallback, Variant
from pounder.load import ENGINE, BenchSpec, LoadOptions, ProgressCallback, Sender, check_io, check_tls, run_bench
from pounder.procs import ServerSampler, ServerTarget, check_server, find_server, serves
from pounder.results import Gate, check_gates

DEFAULT_TRIALS = 5
MIN_TRIALS = 3
MAX_LABEL = 60
DEFAULT_TRIAL_S = 5.0
"""Length of a trial when neither ``requests``, ``duration`` nor ``stages`` is given."""
SAMPLE_INTERVAL_S = 0.5


@public
def default_labels(urls: Sequence[str]) -> list[str]:
    """Labels for ``urls``: each URL's path (and query); where two are alike, ``host:port/path``;
    where the URLs themselves are alike, ``#1``, ``#2``... appended in order."""

    def path(url: str) -> str:
        parts = urlsplit(url.strip())
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def full(url: str) -> str:
        return urlsplit(url.strip()).netloc + path(url)

    labels = [path(url) for url in urls]
    if len(set(labels)) < len(labels):
        labels = [full(url) for url in urls]
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    numbered: dict[str, int] = {}
    unique = []
    for label in labels:
        if seen[label] > 1:
            numbered[label] = numbered.get(label, 0) + 1
            label = f"{label} #{numbered[label]}"
        unique.append(label)
    return unique


def _check_variants(variants: Sequence[Variant]) -> tuple[Variant, ...]:
    if isinstance(variants, (str, bytes)) or not isinstance(variants, Sequence):
        raise UsageError(f"variants must be a list of pounder.compare.Variant, not {type(variants).__name__}")
    checked = tuple(variants)
    if not all(isinstance(variant, Variant) for variant in checked):
        raise UsageError("variants must be pounder.compare.Variant objects")
    for variant in checked:
        check_text(variant.url, f"the url of variant {variant.label!r}")
        check_type(variant.server_pid, int, f"the server_pid of variant {variant.label!r}", "a process id or None",
                   optional=True)
    if not 2 <= len(checked) <= MAX_VARIANTS:
        raise UsageError(f"compare needs between 2 and {MAX_VARIANTS} URLs, got {len(checked)}")
    labels: set[str] = set()
    for variant in checked:
        label = check_label(variant.label)
        if label in labels:
            raise UsageError(f"label {label!r} is given twice; labels must be unique")
        labels.add(label)
    return checked


@public
def check_label(label: object) -> str:
    """A variant's label: printable text without leading or trailing spaces, at most
    ``MAX_LABEL`` characters; :class:`~pounder.UsageError` otherwise."""
    if not isinstance(label, str) or not label.strip() or label != label.strip() or not label.isprintable():
        raise UsageError(f"invalid label {label!r}: it must be printable text without leading or trailing spaces")
    if len(label) > MAX_LABEL:
        raise UsageError(f"label {label!r} is longer than {MAX_LABEL} characters")
    return label


@public
def check_trials(trials: int) -> int:
    if isinstance(trials, bool) or not isinstance(trials, int) or not MIN_TRIALS <= trials <= MAX_TRIALS:
        raise UsageError(f"--trials must be a whole number between {MIN_TRIALS} and {MAX_TRIALS}, got {trials!r}")
    return trials


def _check_min_effect(min_effect: float) -> float:
    if isinstance(min_effect, bool) or not isinstance(min_effect, (int, float)) or not 0 <= min_effect < 1:
        raise UsageError(f"--min-effect must be at least 0 % and less than 100 %, got {min_effect!r}")
    return float(min_effect)


def _server(variant: Variant, spec: BenchSpec) -> ServerTarget | None:
    """The server sampled for ``variant``'s CPU per request: it must listen where the requests go
    (else that figure, the only one compare takes from it, would mean nothing)."""
    if variant.server_pid is None:
        return None
    try:
        target = check_server(find_server(pid=variant.server_pid))
    except UsageError as error:
        raise UsageError(f"{variant.label}: {error}") from None
    connect = spec.targets[0].info().connect
    if serves(target, connect) is False:
        raise UsageError(f"{variant.label}: process {target.pid} does not listen on {connect}, where the requests go: "
                         "its CPU per request would mean nothing (another server, or a backend behind a proxy)")
    return target


@public
def trial_plan(labels: Sequence[str], trials: int, warmup: bool) -> list[tuple[str, int]]:
    """The runs in order as ``(label, round)``: round 0 (warm-up) for every label when
    ``warmup``, then rounds 1..``trials``, each going through the labels in order."""
    rounds = range(0 if warmup else 1, trials + 1)
    return [(label, round_) for round_ in rounds for label in labels]


@public
def compare(
    variants: Sequence[Variant],
    *,
    trials: int = DEFAULT_TRIALS,
    warmup: bool = True,
    baseline: str | None = None,
    min_effect: float = MIN_EFFECT,
    results: str | os.PathLike[str] | None = None,
    on_trial: TrialCallback | None = None,
    on_progress: ProgressCallback | None = None,
    options: LoadOptions | None = None,
    sender: Sender | None = None,
    gates: Sequence[str | Gate] | str | None = None,
    **load: Any,
) -> CompareResult:
    """Is one variant faster than another, and by how much: the same load against each variant,
    ``trials`` times, interleaved, after a warm-up trial each (``warmup=False``: none).

    The load options are :func:`pounder.bench`'s (:class:`~pounder.LoadOptions`, as ``options`` or
    as keyword arguments) and apply to every trial alike; when neither
    ``requests``, ``duration`` nor ``stages`` is given a trial lasts 5 s. ``baseline`` is the label
    the others are compared with (default: the first variant). ``min_effect``: a ratio within this
    fraction of 1 is "no clear difference" even when its interval excludes 1 (default 1 %).

    ``results``: a JSON file rewritten after every trial (see the module documentation).
    ``on_trial(trial, planned)`` is called after every trial, ``on_progress`` during each (as for
    :func:`pounder.run_bench`).

    ``sender``: what sends every trial (default this machine's engine; a
    :class:`pounder.agents.Cluster`: the same agents on a Ray cluster, placed once for the whole
    comparison).

    ``gates``: ``--fail-if`` expressions (``"slower>5%"``, ``"p99>300ms"``; see
    :func:`parse_compare_gates`) or :class:`~pounder.results.Gate` objects, checked before anything
    is sent and evaluated once the comparison ended (also when interrupted): ``result.gates``.

    Raises :class:`~pounder.UsageError` on bad input, before anything is sent. On Ctrl-C the
    trials done are returned, with ``interrupted=True``.
    """
    checked = _check_variants(variants)
    gate_list = _gates(gates)
    labels = [variant.label for variant in checked]
    check_text(baseline, "baseline", optional=True)
    check_path(results, "results", optional=True)
    check_callable(on_trial, "on_trial")
    check_callable(on_progress, "on_progress")
    base = labels[0] if baseline is None else baseline
    if base not in labels:
        raise UsageError(f"--baseline {base!r} is not one of the labels: {', '.join(labels)}")
    trials = check_trials(trials)
    check_slower_trials(gate_list or (), trials)
    min_effect = _check_min_effect(min_effect)
    if not isinstance(warmup, bool):
        raise UsageError(f"warmup must be True or False, got {warmup!r}")
    given = LoadOptions.of(options, **load)
    if given.requests is None and given.duration is None and given.stages is None:
        given = LoadOptions.of(given, duration=DEFAULT_TRIAL_S)
    specs = [BenchSpec.from_options(variant.url, options=given) for variant in checked]
    check_gates(gate_list or (), specs[0].load)  # a gate this load can never fail (slower>100% in closed loop)
    servers = [_server(variant, spec) for variant, spec in zip(checked, specs, strict=True)]
    output = check_output_path(os.fspath(results), "--json", "JSON") if results is not None else None
    if output == "-":
        raise UsageError("results must be a file, not '-'")
    check_type(sender, Sender, "sender", "a Sender (e.g. a pounder.agents.Cluster) or None", optional=True)
    sender = sender or ENGINE
    for spec in specs:
        sender.check(spec)
    with sender.open() as opened:
        for spec in specs:
            opened.check(spec)
        return _trials(checked, specs, servers, output, opened, on_trial, on_progress,
                       trials=trials, warmup=warmup, baseline=base, min_effect=min_effect, gates=gate_list)


def _gates(gates: Sequence[str | Gate] | str | None) -> tuple[Gate, ...] | None:
    """``compare``'s gates (None: none given): expressions parsed, :class:`Gate` objects as they are."""
    if gates is None or isinstance(gates, str):
        return None if gates is None else parse_compare_gates(gates)
    if not isinstance(gates, Sequence):
        raise UsageError(f"gates must be a list of --fail-if expressions such as 'slower>5%', not {gates!r}")
    checked = tuple(gate if isinstance(gate, Gate) else parse_compare_gates(gate)[0] for gate in gates)
    for gate in checked:
        if gate.metric not in COMPARE_METRICS:
            raise UsageError(f"invalid gate {gate.text!r}: a comparison takes {ACCEPTED}")
    return checked


def _trials(checked: tuple[Variant, ...], specs: Sequence[BenchSpec], servers: Sequence[ServerTarget | None],
            output: str | None, sender: Sender, on_trial: TrialCallback | None,
            on_progress: ProgressCallback | None, *, trials: int, warmup: bool, baseline: str,
            min_effect: float, gates: tuple[Gate, ...] | None = None) -> CompareResult:
    labels = [variant.label for variant in checked]
    base = baseline
    first = specs[0].run_options()
    result = CompareResult(
        tool_version=__version__,
        started_at=utc_timestamp(),
        finished_at=None,
        interrupted=False,
        options=CompareOptions(trials=trials, warmup=warmup, baseline=base, load=first.load, http=first.http,
                               min_effect=min_effect, ray=sender.address,
                               agents=sender.count if sender.distributed else None, scenario=first.scenario,
                               expect_status=first.expect_status),
        variants=checked,
        connect=tuple(spec.targets[0].info().connect for spec in specs),
    )  # fmt: skip
    path = None if output is None else Path(output)
    for spec in specs:  # --io uring where it cannot be: before any handshake
        check_io(spec)
    probed: set[tuple[tuple[str | None, str | None], ...]] = set()
    for spec in specs:  # every https:// address's certificate before the first trial sends anything, once
        address = tuple((target.tcp, target.tls_name) for target in spec.targets)
        if address not in probed:
            probed.add(address)
            check_tls(spec)

    def save(current: CompareResult) -> None:
        if path is not None:
            write_atomic(path, current.to_json(), "--json")

    save(result)
    plan = trial_plan(labels, trials, warmup)
    done: list[Trial] = []
    interrupted = False
    try:
        for seq, (label, round_) in enumerate(plan, start=1):
            index = labels.index(label)
            server = servers[index]
            sampler = None if server is None else ServerSampler(server, interval_s=SAMPLE_INTERVAL_S)
            bench = run_bench(specs[index], on_progress, sampler, sender)
            if bench.agents is not None and bench.agents.partial:  # a share of the load is missing
                save(_with(result, done, finished=True, interrupted=False))
                lost = "; ".join(bench.agents.lost_notes())
                raise PounderError(f"trial {seq} ({label}) is partial and not counted: {lost}; the trials before "
                                   "it are kept")
            trial = Trial.from_bench(seq, round_, label, bench)
            done.append(trial)
            save(_with(result, done, finished=False, interrupted=bench.interrupted))
            if on_trial is not None:
                on_trial(trial, len(plan))
            if bench.interrupted:
                interrupted = True
                break
    except KeyboardInterrupt:
        interrupted = True
    final = _with(result, done, finished=True, interrupted=interrupted)
    if gates is not None:
        final = replace(final, gates=evaluate_compare_gates(gates, final))
    save(final)
    return final


def _with(result: CompareResult, trials: Sequence[Trial], *, finished: bool, interrupted: bool) -> CompareResult:
    return CompareResult(
        tool_version=result.tool_version,
        started_at=result.started_at,
        finished_at=utc_timestamp() if finished else None,
        interrupted=interrupted,
        options=result.options,
        variants=result.variants,
        connect=result.connect,
        trials=tuple(trials),
    )

