"""A saved bench result as a baseline (``pounder bench --baseline OLD.json``): the new run compared
with an earlier run of the same spec, without both servers up at once.

* :func:`check_baseline` refuses, before anything is sent, a baseline of another spec: another
  target (where the requests go), load model (closed or open loop, connections, rate and stages,
  duration or count, warm-up, engine threads) or request (the URL set, its weights, order and
  methods, the method, headers, body (size and SHA-256), keep-alive, timeout; a scenario, a
  replay); and one that
  cannot be compared: interrupted, or of fewer than :data:`MIN_SECONDS` full seconds. One line
  names the first field that differs, with both values.
* :func:`compare_with_baseline` compares two results: each figure's samples are the run's own
  FULL seconds (a final partial second is left out): requests/s from each second's completed
  requests (a second with none counts 0), p99 from each second's p99 (the engine's per-second
  HDR histogram; a second with no completed request has none). The figure of a run is the median
  over its seconds, and new/old has the 95 % percentile-bootstrap interval of
  :func:`pounder._stats.ratio_interval` (the seconds of each run resampled, as ``pounder
  compare`` resamples its trials) and its :func:`~pounder._stats.verdict`. The whole runs' figures
  (requests/s over the measured phase, p99 from each run's HDR histogram) are kept beside them.
* The gates ``slower>N%`` (on the figure the verdict is about: requests/s in closed loop, p99 in
  open loop, as in ``pounder compare``) and ``p99-slower>N%`` fail only when the WHOLE interval is
  more than N % slower (:func:`pounder.results.slowdown_verdict`, compare's rule).

A baseline is weaker evidence than interleaved trials: the two runs met different moments of the
machine (other processes, frequency, a server started afresh), which no interval over one run's
seconds sees; the seconds of a run are not independent either. How much weaker is measured
(:data:`FALSE_ALARMS`: the same server run twice, 20 pairs) and printed with every comparison.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pounder._errors import UsageError, clip, public
from pounder._stats import VERDICTS, Verdict, ratio_interval
from pounder._table import Column, Table, ratio
from pounder.results._measured import READ, MalformedResultError
from pounder.results._run_options import RunOptions

if TYPE_CHECKING:
    from pounder.results._result import BenchResult

MIN_SECONDS = 5
"""The fewest full seconds a run needs for an interval, as ``pounder compare`` needs 5 trials."""
MAX_SAMPLES = 200
"""The most samples per run the bootstrap draws from: a longer run's consecutive seconds are taken
in blocks of ``ceil(seconds / 200)`` (the same for both runs; a final partial block is left out),
each block's figure the mean of its seconds' (the bootstrap's cost grows with its samples: 200 a
side take about a second, an hour of seconds half a minute)."""
Figure = Literal["requests_per_s", "p99_us"]
FIGURES: tuple[Figure, ...] = ("requests_per_s", "p99_us")
FIGURE_NAMES: Mapping[str, str] = {"requests_per_s": "requests/s", "p99_us": "p99"}


@public
@dataclass(frozen=True)
class FalseAlarms:
    """How often the baseline gates fired between two runs of the same server (nothing changed:
    every firing is a false alarm), measured on ``date`` by ``command``
    (benchmarks/baseline_false_alarms.py): ``fired`` maps a gate to the pairs it failed, of
    ``pairs``; ``different`` the pairs whose headline verdict was "faster" or "slower";
    ``low`` and ``high`` the lowest and highest new/old requests/s over the pairs. For contrast,
    ``pounder compare`` of the same server against itself (5 interleaved trials of 1 s a side, as
    long as a pair), ``compare_rounds`` times: ``compare_fired`` the rounds its ``slower>5%``
    failed, ``compare_different`` those whose verdict was "faster" or "slower"."""

    date: str
    pairs: int
    fired: Mapping[str, int]
    different: int
    low: float
    high: float
    command: str
    compare_rounds: int
    compare_fired: int
    compare_different: int

    def sentence(self) -> str:
        """The caveat every comparison prints, with the measured rates."""
        rates = ", ".join(f"{gate} {count}" for gate, count in self.fired.items())
        return (f"A saved baseline is weaker evidence than interleaved trials (pounder compare): the two runs met "
                f"different moments of the machine, which no interval over one run's seconds sees. Measured "
                f"{self.date}, the same server run twice, {self.pairs} pairs (benchmarks/baseline_false_alarms.py): "
                f"new/old requests/s from {self.low:.2f} to {self.high:.2f}; the verdict said faster or slower in "
                f"{self.different} of {self.pairs}; the gates fired in (of {self.pairs}): {rates}. pounder compare "
                f"of the same server against itself (5 interleaved trials of 1 s a side), {self.compare_rounds} "
                f"rounds: slower>5% fired in {self.compare_fired}, the verdict said faster or slower in "
                f"{self.compare_different}.")  # fmt: skip


FALSE_ALARMS = FalseAlarms(
    date="2026-11-29",
    pairs=20,
    fired={"slower>5%": 1, "p99-slower>10%": 0, "slower>10%": 1, "p99-slower>25%": 0},
    different=5,
    low=0.4394,
    high=2.746,
    command="flock /tmp/team/live.lock python benchmarks/baseline_false_alarms.py record DIR --pairs 20 --seconds 5; "
            "flock /tmp/team/live.lock python benchmarks/baseline_false_alarms.py interleaved DIR2 --rounds 20; "
            "python benchmarks/baseline_false_alarms.py evaluate DIR --interleaved DIR2 --write "
            "benchmarks/results/baseline_false_alarms.json",
    compare_rounds=20,
    compare_fired=0,
    compare_different=0,
)
"""The measured false-alarm rates: benchmarks/results/baseline_false_alarms.json, which
tests/results/test_baseline.py holds this to (on the shared 2-core development machine, other
sessions' work running beside the runs)."""


@public
@dataclass(frozen=True)
class BaselineFigure:
    """One figure of the new run against the baseline: ``new`` and ``old`` the medians over each
    run's samples, its full seconds (or blocks of them, :data:`MAX_SAMPLES`; ``new_samples``,
    ``old_samples`` of them; None with none), ``ratio``
    new/old with its 95 % bootstrap interval ``low``-``high`` (None with fewer than
    :data:`MIN_SECONDS` on a side) and the ``verdict`` ("faster", "slower", "no clear difference",
    "unknown"); ``new_whole`` and ``old_whole`` the whole runs' figure (requests/s over the
    measured phase; the p99 of the run's HDR histogram), None when there is none."""

    name: Figure
    new: float | None
    old: float | None
    ratio: float | None
    low: float | None
    high: float | None
    verdict: Verdict
    new_samples: int
    old_samples: int
    new_whole: float | None
    old_whole: float | None

    @property
    def higher_is_better(self) -> bool:
        return self.name == "requests_per_s"

    @property
    def label(self) -> str:
        return FIGURE_NAMES[self.name]


@public
@dataclass(frozen=True)
class Baseline:
    """The ``baseline`` section of a bench result: the ``file`` compared with (as given), when
    it ran (``started_at``) and with which pounder (``tool_version``), the figures
    (``requests_per_s``, ``p99_us``), ``by`` the one ``slower`` and the headline verdict are
    about (requests/s in closed loop, p99 in open loop), and the ``false_alarms`` measured."""

    file: str
    started_at: str
    tool_version: str
    by: Figure
    block_s: int
    """Seconds per sample: 1, or more for a run of more than :data:`MAX_SAMPLES` full seconds."""
    requests_per_s: BaselineFigure
    p99_us: BaselineFigure
    false_alarms: FalseAlarms = FALSE_ALARMS

    @property
    def verdict(self) -> Verdict:
        return self.figure(self.by).verdict

    def figure(self, name: str) -> BaselineFigure:
        if name not in FIGURES:
            raise UsageError(f"a baseline has no figure {name!r} (one of {', '.join(FIGURES)})")
        return cast(BaselineFigure, getattr(self, name))

    @property
    def figures(self) -> tuple[BaselineFigure, ...]:
        return self.requests_per_s, self.p99_us

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: object, key: str = "baseline") -> Baseline:
        """Read :meth:`to_dict`'s output; :class:`MalformedResultError` names the key."""
        figure = _figure_reader()
        baseline: Baseline = READ.record(
            cls, value, key, strict=True, by=READ.choice(*FIGURES), requests_per_s=figure, p99_us=figure,
            false_alarms=_false_alarms,
        )  # fmt: skip
        for name in FIGURES:
            if baseline.figure(name).name != name:
                raise MalformedResultError(f"'{key}.{name}.name' must be {name!r}")
        return baseline


def _figure_reader() -> Callable[[object, str], BaselineFigure]:
    def read(value: object, key: str) -> BaselineFigure:
        figure: BaselineFigure = READ.record(BaselineFigure, value, key, strict=True, name=READ.choice(*FIGURES),
                                             verdict=READ.choice(*VERDICTS))  # fmt: skip
        return figure

    return read


def _false_alarms(value: object, key: str) -> FalseAlarms:
    data = READ.as_dict(value, key)
    fired = READ.as_dict(READ.get(data, "fired"), f"{key}.fired")
    if len(fired) > 16:
        raise MalformedResultError(f"'{key}.fired' lists {len(fired)} gates, more than 16")
    return FalseAlarms(
        date=READ.as_str(READ.get(data, "date"), f"{key}.date"),
        pairs=READ.as_int(READ.get(data, "pairs"), f"{key}.pairs"),
        different=READ.as_int(READ.get(data, "different"), f"{key}.different"),
        low=READ.as_float(READ.get(data, "low"), f"{key}.low"),
        high=READ.as_float(READ.get(data, "high"), f"{key}.high"),
        fired={READ.as_str(gate, f"{key}.fired"): READ.as_int(count, f"{key}.fired.{gate}")
               for gate, count in fired.items()},  # fmt: skip
        command=READ.as_str(READ.get(data, "command"), f"{key}.command"),
        **{name: READ.as_int(READ.get(data, name), f"{key}.{name}")
           for name in ("compare_rounds", "compare_fired", "compare_different")},
    )


# ---------------------------------------------------------------------------------------------
# The same spec


def _differs(field: str, here: object, there: object, file: str) -> UsageError:
    # the engine's threads default to the CPUs available: another machine's baseline needs them given
    hint = f"; give -t {there} to run as it did" if field == "load.threads" else ""
    return UsageError(
        f"--baseline {file} is a run of another spec: {field} is {clip(repr(here), 120)} here and "
        f"{clip(repr(there), 120)} in the baseline{hint} (a baseline is compared only with a run of the same "
        "target, load model and request; pounder compare measures two different ones side by side)"
    )


def _targets(options: RunOptions) -> list[str]:
    return sorted({target.connect for target in options.targets})


def _urls(options: RunOptions) -> list[tuple[str, int, str | None]]:
    return [(target.url, target.weight, target.method) for target in options.targets]


def _replay(options: RunOptions) -> tuple[Any, ...] | None:
    replay = options.replay
    return None if replay is None else (replay.path, replay.format, replay.requests, replay.speed, replay.length_s)


@public
def check_baseline(options: RunOptions, old: BenchResult, file: str) -> None:
    """Refuse, in one line naming the first field that differs (with both values), a baseline
    ``old`` (a :class:`~pounder.BenchResult`) whose spec is not ``options``'s, or that cannot
    be compared (interrupted, or fewer than :data:`MIN_SECONDS` full seconds measured); ``file``
    names it. Called before anything is sent. A closed loop bounded by a count (``-n``) is refused:
    its seconds, the samples, are as many as the server takes, so a faster server would have too
    few for an interval."""
    if options.load.kind == "closed" and options.load.requests is not None:
        raise UsageError(f"--baseline {file}: a baseline compares the runs second by second; bound the load by "
                         f"time (-d {MIN_SECONDS * 6}s), not by a count (-n {options.load.requests}): a run of a count "
                         "lasts as long as the server takes, and a faster one would leave too few seconds to compare")
    if old.interrupted:
        raise UsageError(f"--baseline {file} was interrupted: a partial run is no baseline")
    if old.agents is not None and old.agents.partial:
        raise UsageError(f"--baseline {file} lost agents: a partial run is no baseline")
    if _full_seconds(old.elapsed_s) < MIN_SECONDS:
        raise UsageError(
            f"--baseline {file} measured {_full_seconds(old.elapsed_s)} full seconds: a baseline needs at least "
            f"{MIN_SECONDS} (its seconds are the samples of the interval); record one of -d {MIN_SECONDS}s or more"
        )
    theirs = old.options
    checks: list[tuple[str, Callable[[RunOptions], object]]] = [
        ("the target (where the requests go)", _targets),
        ("the URL set (URL, weight, own method)", _urls),
        ("the order", lambda o: o.order),
        *((f"load.{f.name}", (lambda o, n=f.name: getattr(o.load, n))) for f in fields(options.load)),
        *((f"the request's {f.name}", (lambda o, n=f.name: getattr(o.http, n))) for f in fields(options.http)),
        ("the scenario", lambda o: o.scenario),
        ("the replay (file, format, requests, speed, length)", _replay),
        ("the TLS settings", lambda o: None if o.tls is None else asdict(o.tls)),
        ("the statuses that count as answers (--expect-status)", lambda o: o.expect_status),
    ]
    for field, read in checks:
        here, there = read(options), read(theirs)
        if field.endswith("body_sha256") and None in (here, there):  # a result from before the digest: by size
            continue
        if here != there:
            raise _differs(field, here, there, file)


# ---------------------------------------------------------------------------------------------
# The comparison


def _full_seconds(elapsed_s: float) -> int:
    return math.floor(elapsed_s + 0.001)  # the reply rate's rule (pounder.results._result)


def _seconds(result: BenchResult) -> tuple[list[float], list[float]]:
    """A run's full seconds: completed requests per second (a second with no entry counts 0), and
    each second's p99 in µs (only the seconds that completed a request)."""
    full = _full_seconds(result.elapsed_s)
    by_second = {sample.second: sample for sample in result.series if sample.second < full}
    rates = [float(by_second[s].complete) if s in by_second else 0.0 for s in range(full)]
    p99s = [float(sample.p99_us) for _, sample in sorted(by_second.items()) if sample.complete > 0]
    return rates, p99s


def _blocks(values: list[float], size: int) -> list[float]:
    """``values`` as the means of consecutive blocks of ``size`` (a final partial block left out);
    as they are with ``size`` 1."""
    if size <= 1:
        return values
    return [sum(values[start:start + size]) / size for start in range(0, len(values) - size + 1, size)]


def _figure(name: Figure, new: list[float], old: list[float], new_whole: float | None,
            old_whole: float | None) -> BaselineFigure:  # fmt: skip
    higher = name == "requests_per_s"
    enough = len(new) >= MIN_SECONDS and len(old) >= MIN_SECONDS
    estimate = ratio_interval(new, old, higher_is_better=higher) if enough else None
    middle = sorted(new), sorted(old)
    return BaselineFigure(
        name=name,
        new=_median(middle[0]),
        old=_median(middle[1]),
        ratio=None if estimate is None else estimate.ratio,
        low=None if estimate is None else estimate.low,
        high=None if estimate is None else estimate.high,
        verdict="unknown" if estimate is None else estimate.verdict,
        new_samples=len(new),
        old_samples=len(old),
        new_whole=new_whole,
        old_whole=old_whole,
    )


def _median(ordered: list[float]) -> float | None:
    if not ordered:
        return None
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


def _whole(result: BenchResult) -> tuple[float | None, float | None]:
    """The whole run's requests/s and p99 (µs, from its HDR histogram: the result's percentiles)."""
    rate = None if result.why_no_rate() else result.derived.requests_per_s
    corrected = result.latency.corrected
    return rate, float(corrected.percentiles["99"]) if corrected.count else None


@public
def compare_with_baseline(new: BenchResult, old: BenchResult, file: str | Path) -> Baseline:
    """``new`` (a :class:`~pounder.BenchResult`) against the baseline ``old`` read from ``file``
    (module documentation). The spec is not checked here (:func:`check_baseline` does that before
    a run)."""
    from pounder.results._result import BenchResult

    if not isinstance(new, BenchResult) or not isinstance(old, BenchResult):
        raise UsageError("compare_with_baseline: new and old must be BenchResult objects (see load_result)")
    (new_rates, new_p99s), (old_rates, old_p99s) = _seconds(new), _seconds(old)
    block = math.ceil(max(len(new_rates), len(old_rates), 1) / MAX_SAMPLES)
    new_rates, new_p99s, old_rates, old_p99s = (_blocks(values, block) for values in (new_rates, new_p99s, old_rates,
                                                                                      old_p99s))  # fmt: skip
    (new_rate, new_p99), (old_rate, old_p99) = _whole(new), _whole(old)
    return Baseline(
        file=str(file),
        started_at=old.started_at,
        tool_version=old.tool_version,
        by="p99_us" if new.options.load.is_open else "requests_per_s",
        block_s=block,
        requests_per_s=_figure("requests_per_s", new_rates, old_rates, new_rate, old_rate),
        p99_us=_figure("p99_us", new_p99s, old_p99s, new_p99, old_p99),
    )


# ---------------------------------------------------------------------------------------------
# Told: one table for the text report and the page


def _value(figure: BaselineFigure, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if figure.higher_is_better else f"{value / 1000:,.3f}"


BASELINE_TABLE: Table[BaselineFigure] = Table([
    Column("figure", lambda f: "requests/s" if f.higher_is_better else "p99 ms"),
    Column("new", lambda f: _value(f, f.new)),
    Column("baseline", lambda f: _value(f, f.old)),
    Column("new/baseline (95 % interval)", lambda f: ratio(f.ratio, f.low, f.high)),
    Column("verdict", lambda f: f.verdict),
    Column("samples", lambda f: f"{f.new_samples} / {f.old_samples}"),
    Column("whole runs", lambda f: f"{_value(f, f.new_whole)} / {_value(f, f.old_whole)}"),
])  # fmt: skip
"""The comparison's figures, a row each: the text report and ``pounder report``'s page draw it."""


@public
def baseline_title(baseline: Baseline) -> str:
    """``Baseline: old.json (started ..., pounder 0.1.0): faster (requests/s, closed loop)``."""
    loop = "open loop" if baseline.by == "p99_us" else "closed loop"
    return (f"Baseline: {clip(baseline.file, 200)} (started {clip(baseline.started_at, 40)}, pounder "
            f"{clip(baseline.tool_version, 40)}): "
            f"{baseline.verdict} ({FIGURE_NAMES[baseline.by]}, {loop})")  # fmt: skip


BASELINE_NOTE = ("new and baseline: medians over each run's full seconds (requests/s: the requests completed in "
                 "each second; p99: each second's p99; a run of more than 200 seconds in blocks of seconds, each "
                 "the mean of its seconds); the interval is a bootstrap over those samples; samples: how many "
                 "each run had; whole runs: requests/s over the measured phase and the p99 of each run's HDR "
                 "histogram.")  # fmt: skip
"""What the table's columns are, under it."""


def baseline_lines(baseline: Baseline, width: int = 100) -> list[str]:
    """The text report's section: the title, the table, what its columns are and the caveat."""
    notes = [*textwrap.wrap(BASELINE_NOTE, width, initial_indent="  ", subsequent_indent="  "),
             *textwrap.wrap(baseline.false_alarms.sentence(), width, initial_indent="  ", subsequent_indent="  ")]
    return [baseline_title(baseline), *BASELINE_TABLE.text(baseline.figures), *notes]
