"""The load model: how many connections, how long, at what rate (:func:`build_load_model`).

Decisions (also shown in ``pounder bench --help``):

* Closed loop (no ``rate``/``stages``): ``connections`` users (default 10). Without ``requests``
  and ``duration`` the run lasts 10 s; with both it stops at whichever comes first.
* Open loop (``rate`` or ``stages``): ``connections`` (alias ``max_in_flight``) is the cap on
  requests in flight, default 1000. ``rate`` "R" is one constant stage lasting ``duration``
  (default 10 s) or, with only ``requests`` N, N/R seconds. A ramp "A..B/T" lasts T, and is
  followed by a constant stage at B when ``duration`` is longer; a ramp "A..B" lasts ``duration``.
  ``stages`` set the run's length themselves, so they exclude ``requests`` and ``duration``.
* ``threads`` defaults to the CPUs this process may run on and is silently clamped to
  ``connections`` (a thread with no connection would idle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pounder._errors import UsageError
from pounder._units import (
    available_cpus,
    count_in_range,
    invalid,
    is_count,
    parse_count,
    parse_duration,
    parse_rate,
    plain,
)
from pounder.results import LoadModel, Stage

if TYPE_CHECKING:
    from pounder.load._options import LoadOptions

DEFAULT_CONNECTIONS = 10
DEFAULT_OPEN_LOOP_CAP = 1000
DEFAULT_DURATION_S = 10.0
MAX_CONNECTIONS = 100_000
MAX_THREADS = 1024
MAX_REQUESTS = 10**10
MAX_DURATION_S = 24 * 3600.0
MAX_RATE = 10_000_000.0

Number = int | float | str
"""A number as a user gives it: a number, or text with its unit (``"10k"``, ``"30s"``)."""

FLAGS: Mapping[str, str] = {
    "connections": "-c/--connections", "requests": "-n/--requests", "duration": "-d/--duration", "rate": "--rate",
}
"""What the messages call the load options (bench's flags); a caller whose users write them
otherwise (an experiment file's keys) passes its own ``names``."""


@dataclass(frozen=True)
class RateSpec:
    """What ``--rate`` says: a constant rate (``start == end``) or a ramp, with the ramp's own
    length when it was given as ``A..B/60s`` (``over_s``), else ``None``."""

    start: float
    end: float
    over_s: float | None = None

    @property
    def is_ramp(self) -> bool:
        return self.start != self.end or self.over_s is not None


@dataclass(frozen=True)
class Warmup:
    """``--warmup``: either a number of requests or a time, never both (the other is 0)."""

    requests: int = 0
    seconds: float = 0.0


def parse_rate_spec(text: str, what: str = "--rate") -> RateSpec:
    """``"500"`` (constant), ``"50..500"`` (ramp over the whole run), ``"50..500/60s"`` (ramp
    over 60 s)."""
    hint = "use requests per second, e.g. 500, 50..500 or 50..500/60s"
    ramp, slash, over = text.strip().rpartition("/")
    if not slash or over == "s":  # no '/', or "500/s": a plain rate with its unit
        ramp, over, slash = text.strip(), "", ""
    start_text, dots, end_text = ramp.partition("..")
    if slash and not dots:
        raise invalid(what, text, "a duration after '/' needs a ramp such as 50..500/60s")
    try:
        start = parse_rate(start_text, what)
        end = parse_rate(end_text, what) if dots else start
        over_s = parse_duration(over, what) if slash else None
    except UsageError:
        raise invalid(what, text, hint) from None
    return RateSpec(start=start, end=end, over_s=over_s)


def parse_stages(text: str, what: str = "--stages") -> tuple[Stage, ...]:
    """``"30s@100,60s@400,30s@100"``: comma-separated ``DURATION@RATE`` stages, each constant;
    ``"60s@100..400"`` is a stage ramping from 100 to 400 req/s."""
    stages = []
    for part in text.split(","):
        duration_text, at, rate_text = part.strip().partition("@")
        if not at or not duration_text or not rate_text:
            raise invalid(what, part.strip(), "each stage is DURATION@RATE, e.g. 30s@100 or 60s@100..400")
        rate = parse_rate_spec(rate_text, what)
        if rate.over_s is not None:
            raise invalid(what, part.strip(), "a stage's length goes before '@', e.g. 60s@100..400")
        stages.append(Stage(parse_duration(duration_text, what), rate.start, rate.end))
    return tuple(stages)


def parse_warmup(text: str, what: str = "--warmup") -> Warmup:
    """``"5s"`` (or any duration with a unit) → a warmup time; ``"100"``/``"1k"`` → requests."""
    cleaned = text.strip()
    if is_count(cleaned):
        return Warmup(requests=parse_count(cleaned, what))
    try:
        return Warmup(seconds=parse_duration(cleaned, what))
    except UsageError:
        raise invalid(what, text, "a number of requests such as 100, or a time such as 5s") from None


def count(value: int | str | None, what: str, low: int, high: int) -> int | None:
    """:func:`pounder._units.count_in_range`, with None (not given) let through."""
    return None if value is None else count_in_range(value, what, low, high)


def seconds(value: Number | None, what: str, high: float = MAX_DURATION_S) -> float | None:
    """A duration (``"30s"`` or a number of seconds) more than 0 and at most ``high``; None let through."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UsageError(f"{what} must be a duration, got {value!r}")
    length = parse_duration(value, what) if isinstance(value, str) else float(value)
    if not 0 < length <= high:
        raise UsageError(f"{what} must be more than 0 and at most {high / 3600:g}h, got {plain(length)}s")
    return length


def _check_rate(rate: float, what: str) -> float:
    """``what`` names the rates: ``"--rate"``, ``"--stages rates"``. Not a number (nan) is refused too."""
    if not 0 <= rate <= MAX_RATE:
        raise UsageError(f"{what} must be between 0 and {MAX_RATE:,.0f} req/s, got {plain(rate)}")
    return rate


def _check_stages(stages: tuple[Stage, ...], what: str, rates: str) -> tuple[Stage, ...]:
    for stage in stages:
        seconds(stage.duration_s, f"{what} stage length")
        _check_rate(stage.start_rate, rates)
        _check_rate(stage.end_rate, rates)
    total = sum(stage.duration_s for stage in stages)
    if total > MAX_DURATION_S:
        raise UsageError(f"{what} last {total / 3600:g}h in total; at most 24h")
    if all(stage.start_rate == 0 and stage.end_rate == 0 for stage in stages):
        raise UsageError(f"{what}: the rate is 0 throughout, nothing would be sent")
    return stages


def _rate_stages(rate: RateSpec, duration_s: float | None, requests: int | None,
                 names: Mapping[str, str]) -> tuple[Stage, ...]:
    """Turn ``--rate`` (+ ``-d``/``-n``) into stages; see the module docstring."""
    if not rate.is_ramp:
        _check_rate(rate.start, names["rate"])  # before it divides the requests (inf, nan)
        if rate.start == 0:
            raise UsageError(f"{names['rate']} must be more than 0")
        length = duration_s or (requests / rate.start if requests else DEFAULT_DURATION_S)
        return (Stage(length, rate.start, rate.start),)
    if rate.over_s is None:
        if duration_s is None and requests is not None:
            raise UsageError("a --rate ramp needs a length: give it (--rate 50..500/60s) or give -d")
        return (Stage(duration_s or DEFAULT_DURATION_S, rate.start, rate.end),)
    ramp = Stage(rate.over_s, rate.start, rate.end)
    if duration_s is None or duration_s == rate.over_s:
        return (ramp,)
    if duration_s < rate.over_s:
        raise UsageError(f"--duration ({plain(duration_s)}s) is shorter than the --rate ramp ({plain(rate.over_s)}s)")
    return (ramp, Stage(duration_s - rate.over_s, rate.end, rate.end))


def _check_load_conflicts(
    *,
    rate: object,
    stages: object,
    requests: object,
    duration: object,
    max_in_flight: object,
) -> None:
    if rate is not None and stages is not None:
        raise UsageError("--rate and --stages cannot be combined (a constant rate is one stage, e.g. --stages 60s@500)")
    if stages is not None and requests is not None:
        raise UsageError("-n/--requests cannot be combined with --stages (the stages set the run's length)")
    if stages is not None and duration is not None:
        raise UsageError("-d/--duration cannot be combined with --stages (the stages set the run's length)")
    if max_in_flight is not None and rate is None and stages is None:
        raise UsageError("--max-in-flight only applies to open loop (--rate or --stages); in closed loop use -c")


def build_load_model(
    *,
    connections: int | str | None = None,
    requests: int | str | None = None,
    duration: Number | None = None,
    threads: int | str | None = None,
    rate: float | int | str | None = None,
    stages: str | Sequence[Stage] | None = None,
    max_in_flight: int | str | None = None,
    warmup: int | str | None = None,
    names: Mapping[str, str] | None = None,
) -> LoadModel:
    """Validate the load options into a :class:`LoadModel` (see the module docstring).
    ``names``: what the messages call connections, requests, duration and rate (default
    :data:`FLAGS`)."""
    called = {**FLAGS, **(names or {})}
    _check_load_conflicts(
        rate=rate,
        stages=stages,
        requests=requests,
        duration=duration,
        max_in_flight=max_in_flight,
    )
    cap = count(max_in_flight, "--max-in-flight", 1, MAX_CONNECTIONS)
    users = count(connections, called["connections"], 1, MAX_CONNECTIONS)
    if cap is not None and users is not None and cap != users:
        raise UsageError("-c and --max-in-flight both set the open-loop connection cap; give only one")
    request_count = count(requests, called["requests"], 1, MAX_REQUESTS)
    duration_s = seconds(duration, called["duration"])
    schedule = _schedule(rate, stages, duration_s, request_count, called)
    open_loop = schedule is not None
    connection_count = cap or users or (DEFAULT_OPEN_LOOP_CAP if open_loop else DEFAULT_CONNECTIONS)
    thread_count = count(threads, "-t/--threads", 1, MAX_THREADS) or available_cpus()
    if schedule is not None:
        duration_s = sum(stage.duration_s for stage in schedule)
    elif duration_s is None and request_count is None:
        duration_s = DEFAULT_DURATION_S
    warm = _warmup(warmup)
    return LoadModel(
        kind="open" if open_loop else "closed",
        connections=connection_count,
        threads=min(thread_count, connection_count),
        requests=request_count,
        duration_s=duration_s,
        stages=schedule,
        warmup_requests=warm.requests,
        warmup_s=warm.seconds,
    )


def _schedule(
    rate: float | int | str | None,
    stages: str | Sequence[Stage] | None,
    duration_s: float | None,
    requests: int | None,
    names: Mapping[str, str],
) -> tuple[Stage, ...] | None:
    if stages is not None:
        if not isinstance(stages, (str, Sequence)) or (
            not isinstance(stages, str) and not all(isinstance(stage, Stage) for stage in stages)
        ):
            raise UsageError(f"stages must be text such as '10s@50,30s@50..500' or a list of Stage, not {stages!r}")
        parsed = parse_stages(stages) if isinstance(stages, str) else tuple(stages)
        return _check_stages(parsed, "--stages", "--stages rates")
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float, str)):
        raise UsageError(f"{names['rate']} must be a number of requests per second, got {rate!r}")
    spec = parse_rate_spec(rate, names["rate"]) if isinstance(rate, str) else RateSpec(float(rate), float(rate))
    return _check_stages(_rate_stages(spec, duration_s, requests, names), names["rate"], names["rate"])


def _warmup(warmup: int | str | None) -> Warmup:
    if warmup is None:
        return Warmup()
    if not isinstance(warmup, str):
        return Warmup(requests=count(warmup, "--warmup", 0, MAX_REQUESTS) or 0)
    parsed = parse_warmup(warmup)
    count(parsed.requests, "--warmup", 0, MAX_REQUESTS)
    if parsed.seconds:
        seconds(parsed.seconds, "--warmup")
    return parsed


def replay_model(given: LoadOptions, length_s: float) -> tuple[LoadModel, int | None, float | None]:
    """A replay's load model (open loop, its cap on requests in flight, its threads) for a replay of
    ``length_s`` seconds; its ``-n``; the ``-d`` that cuts it, or None."""
    cap = count(given.max_in_flight, "--max-in-flight", 1, MAX_CONNECTIONS)
    users = count(given.connections, "-c/--connections", 1, MAX_CONNECTIONS)
    connections = cap or users or DEFAULT_OPEN_LOOP_CAP
    threads = count(given.threads, "-t/--threads", 1, MAX_THREADS) or available_cpus()
    requests = count(given.requests, "-n/--requests", 1, MAX_REQUESTS)
    duration = seconds(given.duration, "-d/--duration")
    cut = duration if duration is not None and duration < length_s else None
    model = LoadModel(kind="open", connections=connections, threads=min(threads, connections), requests=requests,
                      duration_s=cut if cut is not None else length_s, stages=None, warmup_requests=0,
                      warmup_s=0.0)  # fmt: skip
    return model, requests, cut
