"""The statistics of ``pounder compare`` (and of the profiler's cost in ``pounder profile``): medians
over trials and percentile-bootstrap intervals.

Pure functions of lists of numbers (no I/O, no clock), so the same trials always give the same
figures: the bootstrap draws from a :class:`random.Random` seeded with a fixed ``seed``.

* :func:`median_interval`: the median of one variant's trials and a percentile-bootstrap interval
  for it (resample the trials with replacement, take the median, ``resamples`` times; the interval
  is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those medians).
* :func:`ratio_interval`: median(variant) / median(baseline) and its percentile-bootstrap
  interval: each resample draws the variant's trials and the baseline's trials independently, with
  replacement, and takes the ratio of their medians.
* :func:`paired_ratio_interval`: the same question when the trials come in pairs measured side by
  side (round r of the variant and round r of the baseline ran back to back, so they saw the same
  neighbours on the machine): the median of the per-round ratios variant_r / baseline_r and its
  percentile-bootstrap interval, resampling the rounds (each resample draws rounds with
  replacement and takes the median of their ratios). What disturbed a round disturbed both sides,
  so it cancels in the ratio instead of widening both medians' spread.
* :func:`verdict`: "faster", "slower", "no clear difference" (the interval contains 1, or the
  ratio is within ``min_effect`` of 1) or "unknown" (no interval).

Whether a trial counts (:func:`pounder.results.clean_trial`, :data:`pounder.results.MAX_FAILED`) is
defined with the results, in ``pounder.results``: the pool's warm-up applies the same rule.

Quantiles interpolate linearly between order statistics (numpy's default, "type 7").

Limits: with few trials the percentile bootstrap is too narrow (with 3 trials a variant compared
with itself is called different about 9 % of the time at 95 %, with 5 trials about 3-4 %); that is
why at least 2 trials per side are needed for any interval and 5 is the default, and why a
difference under ``min_effect`` is never called a difference.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pounder._errors import public

RESAMPLES = 10_000
CONFIDENCE = 0.95
SEED = 20_240_601
MIN_EFFECT = 0.01
MIN_SAMPLES = 2
"""Fewer trials than this on either side: no interval and no ratio (a single trial says nothing
about noise)."""

Verdict = Literal["faster", "slower", "no clear difference", "unknown"]
VERDICTS: tuple[Verdict, ...] = ("faster", "slower", "no clear difference", "unknown")


@public
@dataclass(frozen=True)
class Estimate:
    """A median over trials with its bootstrap interval (``low``/``high`` None with fewer than
    :data:`MIN_SAMPLES` trials)."""

    median: float
    low: float | None
    high: float | None
    samples: int


@public
@dataclass(frozen=True)
class RatioEstimate:
    """median(variant) / median(baseline) with its bootstrap interval and the verdict.

    ``ratio`` is None with fewer than :data:`MIN_SAMPLES` trials on either side or when the
    baseline's median is 0; ``low``/``high`` are None then too, and with a baseline trial of 0 (a
    resample could divide by zero). ``higher_is_better`` says which way "faster" goes (requests/s:
    higher; latency: lower).
    """

    ratio: float | None
    low: float | None
    high: float | None
    higher_is_better: bool
    verdict: Verdict


def quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of an ascending, non-empty sequence, interpolating linearly
    between order statistics (numpy's default, Hyndman & Fan type 7)."""
    if not ordered:
        raise ValueError("quantile of an empty sequence")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be between 0 and 1, got {q!r}")
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    fraction = position - below
    return ordered[below] + (ordered[above] - ordered[below]) * fraction


def _check(values: Sequence[float], what: str) -> list[float]:
    numbers = [float(value) for value in values]
    if not numbers:
        raise ValueError(f"{what}: no values")
    if not all(math.isfinite(value) for value in numbers):
        raise ValueError(f"{what}: values must be finite, got {numbers!r}")
    return numbers


def _medians_of_resamples(rng: random.Random, samples: Sequence[Sequence[float]], resamples: int) -> list[list[float]]:
    """For each of ``resamples`` rounds and each list of ``samples`` in turn, the median of a resample
    with replacement (as many values as the list): the very draws and medians of
    ``statistics.median(rng.choices(values, k=len(values)))`` in that order (``choices`` takes
    ``values[floor(random() * n)]`` per item), without two calls per resample: the bootstrap is the
    cost of a tuning run's summary after every trial."""
    draw = rng.random
    per_round = sum(len(values) for values in samples)
    draws = [draw() for _ in itertools.repeat(None, resamples * per_round)]
    columns: list[list[float]] = []
    offset = 0
    for values in samples:
        size, half = len(values), len(values) // 2
        mine = draws if len(samples) == 1 else [
            u for start in range(offset, len(draws), per_round) for u in draws[start:start + size]]
        picked = map(values.__getitem__, map(int, map(float(size).__mul__, mine)))
        ordered = map(sorted, zip(*[picked] * size, strict=True))  # one resample after another
        columns.append([s[half] for s in ordered] if size % 2 else [(s[half - 1] + s[half]) / 2 for s in ordered])
        offset += size
    return columns


def _bounds(draws: list[float], confidence: float) -> tuple[float, float]:
    draws.sort()
    tail = (1.0 - confidence) / 2.0
    return quantile(draws, tail), quantile(draws, 1.0 - tail)


def _check_settings(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")


@public
def median_interval(
    values: Sequence[float], *, resamples: int = RESAMPLES, confidence: float = CONFIDENCE, seed: int = SEED
) -> Estimate:
    """The median of ``values`` and its percentile-bootstrap interval (module documentation)."""
    _check_settings(resamples, confidence)
    numbers = _check(values, "median_interval")
    middle = statistics.median(numbers)
    if len(numbers) < MIN_SAMPLES:
        return Estimate(middle, None, None, len(numbers))
    kept = _median_interval(tuple(numbers), resamples, confidence, seed)
    return Estimate(middle, kept.low, kept.high, kept.samples)  # the median of these very numbers (-0.0 == 0.0)


@functools.lru_cache(maxsize=4096)
def _median_interval(numbers: tuple[float, ...], resamples: int, confidence: float, seed: int) -> Estimate:
    """The bootstrap of :func:`median_interval`, kept for the same trials (a tuning run's summary
    aggregates every point again after each trial)."""
    (draws,) = _medians_of_resamples(random.Random(seed), [numbers], resamples)
    low, high = _bounds(draws, confidence)
    return Estimate(statistics.median(numbers), low, high, len(numbers))


@public
def ratio_interval(
    variant: Sequence[float],
    baseline: Sequence[float],
    *,
    higher_is_better: bool,
    min_effect: float = MIN_EFFECT,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> RatioEstimate:
    """median(``variant``) / median(``baseline``), its percentile-bootstrap interval and the
    :func:`verdict` (module documentation)."""
    return _ratio("ratio_interval", variant, baseline, paired=False, higher_is_better=higher_is_better,
                  min_effect=min_effect, resamples=resamples, confidence=confidence, seed=seed)


@functools.lru_cache(maxsize=4096)
def _ratio_bounds(ours: tuple[float, ...], theirs: tuple[float, ...], resamples: int, confidence: float,
                  seed: int) -> tuple[float, float]:
    """The bootstrap interval of :func:`ratio_interval`: each resample draws the variant's trials,
    then the baseline's."""
    mine, base = _medians_of_resamples(random.Random(seed), [ours, theirs], resamples)
    return _bounds([a / b for a, b in zip(mine, base, strict=True)], confidence)


@public
def paired_ratio_interval(
    variant: Sequence[float],
    baseline: Sequence[float],
    *,
    higher_is_better: bool,
    min_effect: float = MIN_EFFECT,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> RatioEstimate:
    """The median of the pairs' ratios ``variant[i] / baseline[i]``, its percentile-bootstrap
    interval over the pairs and the :func:`verdict` (module documentation). ``ratio`` is None
    with fewer than :data:`MIN_SAMPLES` pairs or a baseline of 0 (no ratio for that pair)."""
    return _ratio("paired_ratio_interval", variant, baseline, paired=True, higher_is_better=higher_is_better,
                  min_effect=min_effect, resamples=resamples, confidence=confidence, seed=seed)


def _ratio(name: str, variant: Sequence[float], baseline: Sequence[float], *, paired: bool, higher_is_better: bool,
           min_effect: float, resamples: int, confidence: float, seed: int) -> RatioEstimate:
    """What :func:`ratio_interval` and :func:`paired_ratio_interval` share: the inputs checked (in
    this order: the settings, the variant's values, the baseline's, as many of each when
    ``paired``, none negative; ``name`` in the messages), the ratio and its interval drawn as each
    says, and the :func:`verdict` on them."""
    _check_settings(resamples, confidence)
    ours = _check(variant, f"{name} variant")
    theirs = _check(baseline, f"{name} baseline")
    if paired and len(ours) != len(theirs):
        raise ValueError(f"{name}: {len(ours)} variant values and {len(theirs)} baseline values")
    if any(value < 0 for value in ours + theirs):
        raise ValueError(f"{name}: values must not be negative")
    ratio, low, high = (_paired_ratio if paired else _ratio_of_medians)(ours, theirs, resamples, confidence, seed)
    return RatioEstimate(
        ratio=ratio,
        low=low,
        high=high,
        higher_is_better=higher_is_better,
        verdict=verdict(ratio, low, high, higher_is_better=higher_is_better, min_effect=min_effect),
    )


_Interval = tuple[float | None, float | None, float | None]
"""A ratio and its interval's bounds, each None where there is none."""


def _ratio_of_medians(ours: list[float], theirs: list[float], resamples: int, confidence: float,
                      seed: int) -> _Interval:
    """median(``ours``) / median(``theirs``) and the bootstrap interval of :func:`ratio_interval`."""
    enough = len(ours) >= MIN_SAMPLES and len(theirs) >= MIN_SAMPLES
    base = statistics.median(theirs)
    ratio = statistics.median(ours) / base if base > 0 and enough else None
    if enough and min(theirs) > 0:
        return (ratio, *_ratio_bounds(tuple(ours), tuple(theirs), resamples, confidence, seed))
    return ratio, None, None


def _paired_ratio(ours: list[float], theirs: list[float], resamples: int, confidence: float, seed: int) -> _Interval:
    """The median of the pairs' ratios and the bootstrap interval of :func:`paired_ratio_interval`
    (the same lengths)."""
    if len(ours) < MIN_SAMPLES or min(theirs) <= 0:
        return None, None, None
    ratios = [mine / base for mine, base in zip(ours, theirs, strict=True)]
    estimate = _median_interval(tuple(ratios), resamples, confidence, seed)
    return statistics.median(ratios), estimate.low, estimate.high


@public
def verdict(
    ratio: float | None,
    low: float | None,
    high: float | None,
    *,
    higher_is_better: bool,
    min_effect: float = MIN_EFFECT,
) -> Verdict:
    """"unknown" without a ratio or an interval; "no clear difference" when the interval contains
    1 or the ratio is within ``min_effect`` of 1 (1 / (1 + min_effect) < ratio < 1 + min_effect);
    else "faster" or "slower" (a ratio above 1 is faster when ``higher_is_better``)."""
    if min_effect < 0:
        raise ValueError(f"min_effect must not be negative, got {min_effect}")
    if ratio is None or low is None or high is None:
        return "unknown"
    if low <= 1.0 <= high:
        return "no clear difference"
    if ratio > 0 and 1.0 / (1.0 + min_effect) < ratio < 1.0 + min_effect:
        return "no clear difference"
    above = low > 1.0
    return "faster" if above == higher_is_better else "slower"


