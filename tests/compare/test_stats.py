"""The statistics of ``pounder compare`` (pure: no server, no engine).

The bootstrap intervals are checked against the exact bootstrap distribution, enumerated: every
resample of a small dataset is equally likely, so the exact quantiles can be computed by listing
all of them. Then a :class:`CompareResult` built from canned trials: its summaries, its JSON (against
the schema), its text report and its chart.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import random
import re
import statistics
from collections.abc import Sequence
from pathlib import Path

import jsonschema
import pytest

from pounder._stats import RESAMPLES, SEED, quantile
from pounder.compare import (
    MAX_FAILED,
    CompareOptions,
    CompareResult,
    Trial,
    Variant,
    clean_trial,
    default_labels,
    failure_message,
    median_interval,
    paired_ratio_interval,
    ratio_interval,
    render_chart,
    render_compare,
    verdict,
)
from pounder.results import HttpOptions, LoadModel
from support.schemas import schema, validate

# ---------------------------------------------------------------------------------------------
# Exact bootstrap distributions, by enumeration


def exact_medians(values: Sequence[float]) -> list[float]:
    """The median of every resample (with replacement, ordered draws): all equally likely."""
    return [statistics.median(draw) for draw in itertools.product(values, repeat=len(values))]


def exact_ratios(variant: Sequence[float], baseline: Sequence[float]) -> list[float]:
    ours, theirs = exact_medians(variant), exact_medians(baseline)
    return [a / b for a in ours for b in theirs]


def quantile_bracket(values: list[float], q: float, slack: float) -> tuple[float, float]:
    """The values between the exact (q - slack) and (q + slack) quantiles (inverse CDF) of
    equally likely ``values``: where a Monte-Carlo q quantile of many draws must land."""
    ordered = sorted(values)
    count = len(ordered)
    low_index = max(0, math.ceil((q - slack) * count) - 1)
    high_index = min(count - 1, math.ceil((q + slack) * count) - 1)
    return ordered[low_index], ordered[high_index]


# ---------------------------------------------------------------------------------------------
# quantile


@pytest.mark.parametrize(
    ("q", "expected"),
    [(0.0, 1.0), (0.25, 1.75), (0.5, 2.5), (0.75, 3.25), (1.0, 4.0)],
)
def test_quantile_interpolates_like_numpy_default(q: float, expected: float) -> None:
    assert quantile([1.0, 2.0, 3.0, 4.0], q) == pytest.approx(expected)


def test_quantile_of_one_value() -> None:
    assert quantile([7.0], 0.025) == 7.0


# ---------------------------------------------------------------------------------------------
# Known tiny datasets


def test_three_trials_each_interval_is_min_over_max_to_max_over_min() -> None:
    """With 3 trials a resample's median is its middle draw; the smallest median (the smallest
    value drawn at least twice) has probability 7/27 on each side, so the smallest ratio
    min(variant) / max(baseline) has probability 49/729 = 6.7 % > 2.5 %: the exact 95 % interval is
    [min/max, max/min], and the ratio of medians 160/110."""
    variant, baseline = [150.0, 160.0, 200.0], [100.0, 110.0, 120.0]
    exact = sorted(exact_ratios(variant, baseline))
    assert exact.count(150 / 120) / len(exact) == pytest.approx(49 / 729)

    result = ratio_interval(variant, baseline, higher_is_better=True)

    assert result.ratio == pytest.approx(160 / 110)
    assert result.low == pytest.approx(150 / 120)
    assert result.high == pytest.approx(200 / 100)
    assert result.verdict == "faster"


def test_median_interval_of_three_trials_is_their_range() -> None:
    estimate = median_interval([10.0, 30.0, 20.0])
    assert (estimate.median, estimate.low, estimate.high, estimate.samples) == (20.0, 10.0, 30.0, 3)


def test_ratio_interval_matches_the_enumerated_bootstrap_distribution() -> None:
    """4 trials each: 256 x 256 equally likely resample pairs, enumerated; the 10,000-draw
    interval must fall between the exact 2.5 % +- 0.6 % and 97.5 % +- 0.6 % quantiles (the
    Monte-Carlo error of a 2.5 % quantile from 10,000 draws is about 0.16 %)."""
    variant, baseline = [980.0, 1010.0, 1040.0, 1100.0], [900.0, 950.0, 960.0, 1005.0]
    exact = exact_ratios(variant, baseline)

    result = ratio_interval(variant, baseline, higher_is_better=True)

    low_bracket = quantile_bracket(exact, 0.025, 0.006)
    high_bracket = quantile_bracket(exact, 0.975, 0.006)
    assert result.low is not None and result.high is not None
    assert low_bracket[0] <= result.low <= low_bracket[1], (result.low, low_bracket)
    assert high_bracket[0] <= result.high <= high_bracket[1], (result.high, high_bracket)
    assert result.ratio == pytest.approx(statistics.median(variant) / statistics.median(baseline))


def test_median_interval_matches_the_enumerated_bootstrap_distribution() -> None:
    values = [3.0, 7.0, 8.0, 12.0, 20.0]
    exact = exact_medians(values)  # 3125 resamples

    estimate = median_interval(values)

    assert estimate.median == 8.0
    low_bracket = quantile_bracket(exact, 0.025, 0.006)
    high_bracket = quantile_bracket(exact, 0.975, 0.006)
    assert estimate.low is not None and estimate.high is not None
    assert low_bracket[0] <= estimate.low <= low_bracket[1]
    assert high_bracket[0] <= estimate.high <= high_bracket[1]


# ---------------------------------------------------------------------------------------------
# Paired rounds


def test_paired_ratio_interval_matches_the_enumerated_bootstrap_of_the_rounds_ratios() -> None:
    """5 rounds: the per-round ratios' 3125 resamples enumerated; the 10,000-draw interval lies
    between the exact 2.5 % and 97.5 % quantiles +- 0.6 %, the ratio is the median of the ratios."""
    variant, baseline = [210.0, 150.0, 190.0, 120.0, 205.0], [200.0, 140.0, 185.0, 110.0, 190.0]
    ratios = [a / b for a, b in zip(variant, baseline, strict=True)]
    exact = exact_medians(ratios)

    result = paired_ratio_interval(variant, baseline, higher_is_better=True, min_effect=0.0)

    assert result.ratio == pytest.approx(statistics.median(ratios))
    low_bracket = quantile_bracket(exact, 0.025, 0.006)
    high_bracket = quantile_bracket(exact, 0.975, 0.006)
    assert result.low is not None and result.high is not None
    assert low_bracket[0] <= result.low <= low_bracket[1], (result.low, low_bracket)
    assert high_bracket[0] <= result.high <= high_bracket[1], (result.high, high_bracket)
    assert result.verdict == "faster"


def test_a_neighbour_that_slows_both_sides_of_a_round_cancels_in_the_paired_ratio() -> None:
    """Rounds 2 and 4 ran while another process took a core: both pools lost about 40 % there.
    Unpaired, each pool's spread covers the other's median and the 7 % difference is not told;
    paired, every round says 1.05-1.09 and the difference is told."""
    variant = [530.0, 320.0, 520.0, 300.0, 540.0]
    baseline = [495.0, 300.0, 480.0, 280.0, 500.0]

    unpaired = ratio_interval(variant, baseline, higher_is_better=True)
    paired = paired_ratio_interval(variant, baseline, higher_is_better=True)

    assert unpaired.verdict == "no clear difference", unpaired
    assert paired.verdict == "faster", paired
    assert paired.low is not None and paired.high is not None
    assert 1.05 <= paired.low <= paired.high <= 1.09
    assert paired.ratio == pytest.approx(statistics.median(a / b for a, b in zip(variant, baseline, strict=True)))


def test_paired_ratio_of_a_pool_with_itself_is_one_and_no_clear_difference() -> None:
    values = [100.0, 60.0, 110.0]
    result = paired_ratio_interval(values, values, higher_is_better=True)
    assert (result.ratio, result.low, result.high, result.verdict) == (1.0, 1.0, 1.0, "no clear difference")


def test_paired_ratio_needs_two_pairs_and_no_zero_baseline() -> None:
    one = paired_ratio_interval([100.0], [90.0], higher_is_better=True)
    zero = paired_ratio_interval([100.0, 90.0], [0.0, 80.0], higher_is_better=True)
    for result in (one, zero):
        assert (result.ratio, result.low, result.high, result.verdict) == (None, None, None, "unknown")
    with pytest.raises(ValueError, match="2 variant values and 3 baseline values"):
        paired_ratio_interval([1.0, 2.0], [1.0, 2.0, 3.0], higher_is_better=True)
    with pytest.raises(ValueError, match="negative"):
        paired_ratio_interval([1.0, -2.0], [1.0, 2.0], higher_is_better=True)


@pytest.mark.parametrize(("variant", "baseline", "unpaired", "paired"), [
    ([530.0, 320.0, 520.0, 300.0, 540.0], [495.0, 300.0, 480.0, 280.0, 500.0],
     (1.0833333333333333, 0.625, 1.8571428571428572, "no clear difference"),
     (1.0714285714285714, 1.0666666666666667, 1.0833333333333333, "slower")),
    ([100.0, 102.0, 98.0], [90.0, 91.0, 95.0],
     (1.098901098901099, 1.0315789473684212, 1.1333333333333333, "slower"),
     (1.1111111111111112, 1.0315789473684212, 1.120879120879121, "slower")),
    ([10.0, 12.0], [11.0, 0.0], (2.0, None, None, "unknown"), (None, None, None, "unknown")),
])  # fmt: skip
def test_both_ratio_intervals_give_the_figures_they_gave_before_they_shared_their_code(
    variant: list[float], baseline: list[float], unpaired: tuple[object, ...], paired: tuple[object, ...]
) -> None:
    """The very figures both gave at issue40-base (lower is better, 1,000 resamples), to the last
    bit: the checks, the verdict and the two bootstraps are shared or kept as they were."""
    for interval, expected in ((ratio_interval, unpaired), (paired_ratio_interval, paired)):
        result = interval(variant, baseline, higher_is_better=False, resamples=1000)
        assert (result.ratio, result.low, result.high, result.verdict) == expected, interval.__name__


def test_both_ratio_intervals_refuse_the_same_inputs_each_in_its_own_name() -> None:
    for interval in (ratio_interval, paired_ratio_interval):
        name = interval.__name__
        with pytest.raises(ValueError, match=f"^{name} variant: no values$"):
            interval([], [1.0], higher_is_better=True)
        with pytest.raises(ValueError, match=f"^{name} baseline: values must be finite"):
            interval([1.0, 2.0], [1.0, math.inf], higher_is_better=True)
        with pytest.raises(ValueError, match=f"^{name}: values must not be negative$"):
            interval([1.0, 2.0], [-1.0, 2.0], higher_is_better=True)
        with pytest.raises(ValueError, match="^resamples must be at least 1, got 0$"):
            interval([1.0, 2.0], [1.0, 2.0], higher_is_better=True, resamples=0)


# ---------------------------------------------------------------------------------------------
# Verdicts


def test_overlapping_trials_interval_contains_one() -> None:
    variant = [100.0, 104.0, 98.0, 101.0, 99.0]
    baseline = [99.0, 102.0, 100.0, 97.0, 103.0]

    result = ratio_interval(variant, baseline, higher_is_better=True, min_effect=0.0)

    assert result.low is not None and result.high is not None
    assert result.low < 1.0 < result.high
    assert result.verdict == "no clear difference"


def test_clearly_apart_trials_interval_excludes_one() -> None:
    variant = [200.0, 205.0, 198.0, 202.0, 201.0]
    baseline = [100.0, 101.0, 99.0, 102.0, 98.0]

    throughput = ratio_interval(variant, baseline, higher_is_better=True)
    latency = ratio_interval(variant, baseline, higher_is_better=False)

    assert throughput.ratio == pytest.approx(201 / 100)
    assert throughput.low is not None and throughput.high is not None
    assert 1.9 < throughput.low <= 2.01 <= throughput.high < 2.1
    assert throughput.verdict == "faster"
    assert latency.verdict == "slower"  # twice the latency
    assert ratio_interval(baseline, variant, higher_is_better=True).verdict == "slower"
    assert ratio_interval(baseline, variant, higher_is_better=False).verdict == "faster"


def test_a_difference_under_min_effect_is_no_clear_difference() -> None:
    baseline = [1000.0, 1000.5, 1001.0, 999.5, 999.0]
    variant = [value * 1.005 for value in baseline]  # every trial 0.5 % faster: the interval excludes 1

    default = ratio_interval(variant, baseline, higher_is_better=True)
    strict = ratio_interval(variant, baseline, higher_is_better=True, min_effect=0.0)

    assert default.low is not None and default.low > 1.0  # the interval alone excludes 1
    assert default.verdict == "no clear difference"
    assert strict.verdict == "faster"
    assert ratio_interval(baseline, variant, higher_is_better=True).verdict == "no clear difference"


@pytest.mark.parametrize(
    ("ratio", "low", "high", "higher", "expected"),
    [
        (1.5, 1.2, 1.8, True, "faster"),
        (1.5, 1.2, 1.8, False, "slower"),
        (0.5, 0.4, 0.6, True, "slower"),
        (0.5, 0.4, 0.6, False, "faster"),
        (1.1, 0.9, 1.3, True, "no clear difference"),
        (1.0, 1.0, 1.2, True, "no clear difference"),  # 1 on the edge counts as contained
        (None, None, None, True, "unknown"),
        (1.5, None, None, True, "unknown"),
    ],
)
def test_verdict_rule(ratio: float | None, low: float | None, high: float | None, higher: bool, expected: str) -> None:
    assert verdict(ratio, low, high, higher_is_better=higher, min_effect=0.0) == expected


def test_one_trial_has_no_ratio_and_no_interval() -> None:
    """One trial says nothing about noise: no ratio, no interval, on either side."""
    for ours, theirs in (([200.0], [100.0, 101.0, 99.0]), ([200.0, 201.0, 199.0], [100.0])):
        result = ratio_interval(ours, theirs, higher_is_better=True)
        assert (result.ratio, result.low, result.high, result.verdict) == (None, None, None, "unknown")
    estimate = median_interval([5.0])
    assert (estimate.median, estimate.low, estimate.high) == (5.0, None, None)


@pytest.mark.parametrize(
    ("complete", "failed", "counts"),
    [
        (1000, 0, True),
        (990, 10, True),  # exactly 1 % of 1,000 attempted
        (989, 11, False),  # 1.1 %
        (99, 1, True),
        (98, 2, False),
        (1, 0, True),
        (0, 0, False),  # nothing completed: nothing measured
        (0, 5, False),
        (11_860, 0, True),
        (0, 66_835, False),  # the server killed: every connection refused
    ],
)
def test_clean_trial_rule(complete: int, failed: int, counts: bool) -> None:
    assert MAX_FAILED == 0.01
    assert clean_trial(complete, failed) is counts


def test_clean_trial_refuses_bad_input() -> None:
    with pytest.raises(ValueError):
        clean_trial(-1, 0)
    with pytest.raises(ValueError):
        clean_trial(10, 0, max_failed=1.0)


def test_zero_baseline_gives_no_ratio() -> None:
    assert ratio_interval([10.0, 11.0], [0.0, 0.0, 0.0], higher_is_better=True).ratio is None
    partly = ratio_interval([10.0, 11.0, 12.0], [0.0, 5.0, 6.0], higher_is_better=True)
    assert partly.ratio == pytest.approx(11.0 / 5.0)
    assert (partly.low, partly.verdict) == (None, "unknown")  # a resample could divide by 0


def test_same_input_same_interval() -> None:
    variant, baseline = [3.0, 4.0, 5.0, 9.0, 1.0], [2.0, 4.0, 6.0, 3.0, 5.0]
    first = ratio_interval(variant, baseline, higher_is_better=True)
    assert ratio_interval(variant, baseline, higher_is_better=True) == first
    other_seed = ratio_interval(variant, baseline, higher_is_better=True, seed=7)
    assert other_seed.ratio == first.ratio


def _choices_bounds(samples: list[list[float]], resamples: int, ratio: bool) -> tuple[float, float]:
    """The bootstrap as written first: ``statistics.median(rng.choices(...))`` per resample and list."""
    rng = random.Random(SEED)
    draws = []
    for _ in range(resamples):
        medians = [statistics.median(rng.choices(values, k=len(values))) for values in samples]
        draws.append(medians[0] / medians[1] if ratio else medians[0])
    draws.sort()
    tail = (1.0 - 0.95) / 2.0
    return quantile(draws, tail), quantile(draws, 1.0 - tail)


def test_the_bootstrap_draws_what_choices_draws() -> None:
    """The intervals are the very figures of one ``rng.choices`` and ``statistics.median`` per
    resample (the bootstrap draws its resamples in one go, and keeps the intervals of the same
    trials: a tuning run's summary aggregates every point again after each trial), to the last bit."""
    source = random.Random(1)
    for case in range(60):
        ours = [source.uniform(0.1, 1000.0) for _ in range(source.randint(2, 8))]
        theirs = [source.uniform(0.1, 1000.0) for _ in range(source.randint(2, 8))]
        if case % 5 == 0:  # ties
            ours = [float(source.randint(1, 3)) for _ in ours]
        resamples = RESAMPLES if case % 20 == 0 else source.choice([20, 300])  # the default now and then
        estimate = median_interval(ours, resamples=resamples)
        assert (estimate.low, estimate.high) == _choices_bounds([ours], resamples, ratio=False)
        assert median_interval(list(ours), resamples=resamples) == estimate  # kept: the same figures
        both = ratio_interval(ours, theirs, higher_is_better=True, resamples=resamples)
        assert (both.low, both.high) == _choices_bounds([ours, theirs], resamples, ratio=True)
        pairs = min(len(ours), len(theirs))
        paired = paired_ratio_interval(ours[:pairs], theirs[:pairs], higher_is_better=True, resamples=resamples)
        ratios = [mine / base for mine, base in zip(ours, theirs, strict=False)]
        assert (paired.low, paired.high) == _choices_bounds([ratios], resamples, ratio=False)


@pytest.mark.parametrize(
    "values",
    [[], [1.0, float("nan")], [1.0, float("inf")]],
)
def test_bad_values_are_refused(values: list[float]) -> None:
    with pytest.raises(ValueError):
        median_interval(values)
    with pytest.raises(ValueError):
        ratio_interval(values, [1.0, 2.0], higher_is_better=True)


def test_negative_values_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        ratio_interval([-1.0, 2.0], [1.0, 2.0], higher_is_better=True)


# ---------------------------------------------------------------------------------------------
# Labels


@pytest.mark.parametrize(
    ("urls", "expected"),
    [
        (["http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b?x=1"], ["/a", "/b?x=1"]),
        (["http://127.0.0.1:8080", "http://127.0.0.1:8081/"], ["127.0.0.1:8080/", "127.0.0.1:8081/"]),
        (["http://127.0.0.1:8080/", "http://127.0.0.1:8080/"], ["127.0.0.1:8080/ #1", "127.0.0.1:8080/ #2"]),
    ],
)
def test_default_labels(urls: list[str], expected: list[str]) -> None:
    assert default_labels(urls) == expected


# ---------------------------------------------------------------------------------------------
# A result built from canned trials


LOAD = LoadModel(kind="closed", connections=4, threads=2, requests=200, duration_s=None, stages=None,
                 warmup_requests=0, warmup_s=0.0)  # fmt: skip
HTTP = HttpOptions(method="GET", keepalive=True, calls_per_conn=0, timeout_s=30.0, throttle_bps=None,
                   body_bytes=0, headers=())  # fmt: skip


def canned_trial(seq: int, round_: int, label: str, rps: float, p99_us: int, *, cpu: float | None = None,
                 interrupted: bool = False, complete: int = 200,
                 errors: dict[str, int] | None = None) -> Trial:  # fmt: skip
    elapsed = 1.0 if rps == 0 else complete / rps
    errors = errors or {}
    return Trial(seq=seq, round=round_, label=label, started_at="2025-01-01T12:00:00.000Z", interrupted=interrupted,
                 elapsed_s=elapsed, complete=complete, failed=sum(errors.values()), non_2xx=0, unsent=0, late=0,
                 errors=errors, requests_per_s=rps, p50_us=p99_us // 2, p99_us=p99_us,
                 server_cpu_us_per_request=cpu)  # fmt: skip


def canned_result(*, interrupted_after: int | None = None) -> CompareResult:
    rates = {"fast": [1000.0, 1020.0, 990.0, 1010.0, 1005.0], "slow": [200.0, 205.0, 198.0, 202.0, 199.0]}
    trials = [canned_trial(1, 0, "fast", 900.0, 5000, cpu=50.0), canned_trial(2, 0, "slow", 190.0, 24000)]
    for round_ in range(1, 6):
        trials.append(canned_trial(len(trials) + 1, round_, "fast", rates["fast"][round_ - 1], 4000 + round_, cpu=50.0))
        trials.append(canned_trial(len(trials) + 1, round_, "slow", rates["slow"][round_ - 1], 22000 + round_ * 100))
    if interrupted_after is not None:
        trials = trials[:interrupted_after]
        last = trials[-1]
        trials[-1] = canned_trial(last.seq, last.round, last.label, last.requests_per_s, last.p99_us,
                                  interrupted=True)  # fmt: skip
    return CompareResult(
        tool_version="0.1.0",
        started_at="2025-01-01T12:00:00.000Z",
        finished_at="2025-01-01T12:00:30.000Z",
        interrupted=interrupted_after is not None,
        options=CompareOptions(trials=5, warmup=True, baseline="fast", load=LOAD, http=HTTP),
        variants=(Variant("fast", "http://127.0.0.1:8080/", 4242), Variant("slow", "http://127.0.0.1:8081/")),
        connect=("127.0.0.1:8080", "127.0.0.1:8081"),
        trials=tuple(trials),
    )


def test_canned_result_summaries_and_verdict() -> None:
    result = canned_result()

    fast, slow = result.summary("fast"), result.summary("slow")
    assert fast.trials == slow.trials == 5  # the warm-ups are not counted
    assert fast.requests_per_s is not None and fast.requests_per_s.median == 1005.0
    assert slow.requests_per_s is not None and slow.requests_per_s.median == 200.0
    assert fast.server_cpu_us_per_request is not None and fast.server_cpu_us_per_request.median == 50.0
    assert slow.server_cpu_us_per_request is None
    comparison = result.comparison("slow")
    assert comparison.by == "requests_per_s"
    assert comparison.verdict == "slower"
    assert comparison.requests_per_s.ratio == pytest.approx(200.0 / 1005.0)
    assert comparison.p99_us.verdict == "slower"
    assert result.complete and not result.interrupted


def test_schema_is_valid_draft_2020_12() -> None:
    contents = schema("compare")
    jsonschema.Draft202012Validator.check_schema(contents)
    assert contents["$id"].endswith("/compare.schema.json")
    assert contents["properties"]["schema"]["const"] == "pounder/compare/1"


def test_canned_result_follows_the_schema() -> None:
    document = json.loads(canned_result().to_json())
    validate(document, "compare")
    partial = json.loads(canned_result(interrupted_after=5).to_json())
    validate(partial, "compare")
    assert partial["interrupted"] is True and partial["complete"] is False
    assert [trial["counted"] for trial in partial["trials"]] == [False, False, True, True, False]


def test_interrupted_trial_is_kept_but_not_counted() -> None:
    result = canned_result(interrupted_after=5)
    assert [trial.counted for trial in result.trials] == [False, False, True, True, False]
    assert result.summary("fast").trials == 1
    assert result.summary("slow").trials == 1
    assert result.comparison("slow").verdict == "unknown"  # one slow trial: no interval
    report = render_compare(result)
    assert "Interrupted:     yes, after 2 of 10 trials: partial result" in report


def test_report_text() -> None:
    report = render_compare(canned_result())
    lines = report.splitlines()
    assert any(line.split()[:4] == ["fast", "5", "1,005", "990-1,020"] for line in lines), report
    assert "slow is slower than fast: 0.199x the requests/s of fast" in report
    assert "  fast  900* 1,000 1,020 990 1,010 1,005" in report


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_chart_file(tmp_path: Path, suffix: str) -> None:
    pytest.importorskip("matplotlib")
    path = render_chart(canned_result(), tmp_path / f"chart{suffix}")
    data = path.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
    else:
        assert b"<svg" in data[:2000] and data.rstrip().endswith(b"</svg>")
    assert [p.name for p in tmp_path.iterdir()] == [f"chart{suffix}"]  # no temporary file left


# ---------------------------------------------------------------------------------------------
# Trials whose requests failed (the baseline's server killed after its first measured trial)


def killed_result(*, rounds: int = 3) -> CompareResult:
    """"a" answers in its warm-up and round 1, then refuses everything (its server killed); "b"
    answers throughout. Round 1 of "b" has 1 % of its requests reset: still counted."""
    trials = [canned_trial(1, 0, "a", 1000.0, 4000), canned_trial(2, 0, "b", 1000.0, 4000)]
    for round_ in range(1, rounds + 1):
        if round_ == 1:
            trials.append(canned_trial(len(trials) + 1, round_, "a", 1000.0, 4000))
            trials.append(canned_trial(len(trials) + 1, round_, "b", 990.0, 4100, complete=990,
                                       errors={"reset": 10}))  # fmt: skip
        else:
            trials.append(canned_trial(len(trials) + 1, round_, "a", 0.0, 0, complete=0,
                                       errors={"refused": 60_000 + round_}))  # fmt: skip
            trials.append(canned_trial(len(trials) + 1, round_, "b", 1000.0 + round_, 4000 + round_))
    return CompareResult(
        tool_version="0.1.0", started_at="2025-01-01T12:00:00.000Z", finished_at="2025-01-01T12:00:30.000Z",
        interrupted=False, options=CompareOptions(trials=rounds, warmup=True, baseline="a", load=LOAD, http=HTTP),
        variants=(Variant("a", "http://127.0.0.1:8080/"), Variant("b", "http://127.0.0.1:8081/")),
        connect=("127.0.0.1:8080", "127.0.0.1:8081"), trials=tuple(trials),
    )  # fmt: skip


def test_trials_whose_requests_failed_are_kept_but_not_counted() -> None:
    result = killed_result()

    assert [(t.label, t.round, t.not_counted) for t in result.trials] == [
        ("a", 0, "warm-up"), ("b", 0, "warm-up"), ("a", 1, None), ("b", 1, None),
        ("a", 2, "failures"), ("b", 2, None), ("a", 3, "failures"), ("b", 3, None),
    ]  # fmt: skip
    a, b = result.summary("a"), result.summary("b")
    assert (a.trials, a.complete, a.failed) == (1, 200, 0)  # the failed trials are not in its figures
    assert a.requests_per_s is not None and (a.requests_per_s.median, a.requests_per_s.low) == (1000.0, None)
    assert (b.trials, b.failed) == (3, 10)
    assert [t.round for t in result.failed("a")] == [2, 3] and result.failed("b") == []
    assert result.failed_variants == ("a",)
    assert not result.complete

    comparison = result.comparison("b")
    for ratio in (comparison.requests_per_s, comparison.p99_us):  # no ratio from a's one counted trial
        assert (ratio.ratio, ratio.low, ratio.high, ratio.verdict) == (None, None, None, "unknown")
    assert comparison.verdict == "unknown"

    assert failure_message(result) == (
        "requests to a failed in 2 of 3 trials (120,005 failed: refused 120,005), 1 counted trial left: "
        "no comparison with it (at least 2 counted trials needed)"
    )
    document = json.loads(result.to_json())
    validate(document, "compare")
    assert [t["not_counted"] for t in document["trials"]] == [
        "warm-up", "warm-up", None, None, "failures", None, "failures", None,
    ]  # fmt: skip
    assert [t["counted"] for t in document["trials"]] == [False, False, True, True, False, True, False, True]
    assert document["options"]["max_failed"] == 0.01
    assert document["comparisons"][0]["p99_us"]["ratio"] is None


def test_report_says_why_a_trial_did_not_count() -> None:
    report = render_compare(killed_result())
    assert "b vs a: unknown, no ratio: a has 1 counted trial (2 not counted: requests failed); " \
           "at least 2 per variant are needed." in report
    assert "  a  1,000* 1,000 0.00! 0.00!" in report
    assert "Not counted: a trial 2, 60,002 of 60,002 requests failed (refused 60,002); a trial counts with at most " \
           "1 % failed." in report
    assert "Note: b had 10 failed requests" in report  # 1 %: counted, and said


def test_a_variant_with_two_clean_trials_left_still_compares() -> None:
    result = killed_result(rounds=1)
    extra = [canned_trial(5, 2, "a", 1010.0, 4050), canned_trial(6, 2, "b", 1000.0, 4000),
             canned_trial(7, 3, "a", 0.0, 0, complete=0, errors={"refused": 5})]  # fmt: skip
    result = CompareResult(**{**result.__dict__, "trials": result.trials + tuple(extra),
                              "options": CompareOptions(trials=3, warmup=True, baseline="a", load=LOAD, http=HTTP)})
    assert result.summary("a").trials == 2 and result.failed_variants == ()
    assert failure_message(result) is None
    assert result.comparison("b").requests_per_s.ratio is not None


def test_html_report_says_why_a_trial_did_not_count_in_old_and_new_files() -> None:
    from pounder.report import render_report

    document = json.loads(killed_result().to_json())
    old = json.loads(killed_result().to_json())  # as written before the failure rule: no not_counted, no max_failed
    del old["options"]["max_failed"]
    for trial in old["trials"]:
        del trial["not_counted"]
        trial["counted"] = trial["round"] > 0 and not trial["interrupted"]
    validate(old, "compare")
    page = html.unescape(re.sub(r"<[^>]+>", "|", render_report(document)))
    assert "b vs a: unknown, no ratio: a has 1 counted trial (2 not counted: requests failed)" in page
    assert "|a||2||requests failed||60,002 of 60,002||refused 60,002|" in page
    assert "Some trials are not counted" in page and "interrupted" not in page
    old_page = html.unescape(re.sub(r"<[^>]+>", "|", render_report(old)))
    assert "requests failed" not in old_page  # an old file's trials all counted: nothing derived wrongly
