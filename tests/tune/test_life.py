"""Shared memory over a child's life (pounder.tune._life): the fits of a curve made here, the
stable verdict, the fall within the horizon, and MaxRequestsPerChild chosen from the unsharing
(pure: no server; the recorded run is in test_recorded.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pounder._units import KIB, MIB
from pounder.tune._life import (
    NOISE_FLOOR,
    life_curve,
    life_lines,
    life_snapshot,
    life_targets,
    may_decide,
    noise_bytes,
    unsharing,
)
from pounder.tune._mrpc import choose_max_requests
from tune.test_analysis import bound, leaking, measure_summary, mrpc_point, sizes, unlimited

REQUESTS = [0, 10, 20, 50, 100, 200, 500, 1000, 2000]


def life_summary(private: Any, shared: Any, *, requests: list[int] | None = None, children: int = 2,
                 rss: int = 52 * MIB, stopped: str | None = None) -> dict[str, Any]:
    """A life point's summary (``measure_life``) whose median child has ``private(r)`` and
    ``shared(r)`` bytes after r requests (every child the same)."""
    snapshots = []
    for r in requests or REQUESTS:
        kids = [{"pid": 100 + i, "private": int(private(r)), "shared": int(shared(r)), "pss": int(private(r)),
                 "rss": rss} for i in range(children)]
        snapshots.append(life_snapshot(float(r), kids))
    return {"children": children, "preload": True, "target": (requests or REQUESTS)[-1], "elapsed_s": 2.0,
            "cap_s": 60.0, "stopped": stopped, "requests": 4000, "failed": 0, "snapshots": snapshots}


def log_curve(start: int, per_tenfold: float) -> Any:
    """start + per_tenfold x log10(r / 10) from 10 requests on (start before)."""
    return lambda r: start + per_tenfold * math.log10(max(r, 10) / 10)


UNSHARING = life_summary(log_curve(6 * MIB, 8 * MIB), log_curve(46 * MIB, -8 * MIB))
"""The recorded app's curve, rounded: a child copies 8 MiB of what it shares per tenfold requests."""


def test_the_snapshots_are_log_spaced_up_to_the_life() -> None:
    assert life_targets(100, 2000) == [10, 20, 50, 100, 200, 500, 1000, 2000]
    assert life_targets(200, 2000) == [20, 40, 100, 200, 400, 1000, 2000]
    assert life_targets(200, 300) == [20, 40, 100, 200, 300]
    assert life_targets(200, 0) == []


def test_the_noise_is_a_percent_of_the_child_at_least_16_pages() -> None:
    assert noise_bytes(50 * MIB) == int(0.5 * MIB)
    assert noise_bytes(MIB) == NOISE_FLOOR == 64 * KIB


def test_a_logarithmic_curve_is_fitted_as_one_with_its_figures() -> None:
    life = life_curve(UNSHARING)
    assert life is not None
    assert life.shared.fit == "log" and life.private.fit == "log"
    assert life.shared.log_r2 == pytest.approx(1.0) and life.shared.linear_r2 < 0.9
    assert life.shared.per_tenfold == pytest.approx(-8 * MIB, rel=1e-6)
    # from 10 to 2,000 requests: 8 MiB x log10(200) = 18.4 MiB over 1,990 requests
    assert life.shared.per_1000 == pytest.approx(-8 * MIB * math.log10(200) / 1.99, rel=1e-6)
    assert life.shared.change == -int(8 * MIB * math.log10(200)) or abs(
        life.shared.change + 8 * MIB * math.log10(200)) <= 2
    assert life.fall == pytest.approx(8 * math.log10(200) / 46, rel=1e-3)  # 40 %
    assert not life.shared.stable and may_decide(life)
    assert life.shared.text().startswith("-8.00 MiB per tenfold requests (log fit, R² 1.00 against ")
    assert life.private.reaches(6 * MIB + 24 * MIB) == pytest.approx(10_000, rel=1e-6)  # 3 decades past 10


def test_a_straight_line_is_fitted_as_one() -> None:
    life = life_curve(life_summary(lambda r: 10 * MIB + 4 * KIB * r, lambda r: 40 * MIB))
    assert life is not None and life.private.fit == "linear" and life.private.linear_r2 == pytest.approx(1.0)
    assert life.private.per_1000 == pytest.approx(4000 * KIB, rel=1e-6)
    assert life.private.text().startswith("+3.91 MiB per 1,000 requests (linear fit, R² 1.00")
    assert life.shared.stable and life.fall == 0 and not may_decide(life)
    assert life.private.reaches(10 * MIB + 4 * KIB * 5000) == pytest.approx(5000, rel=1e-6)


def test_a_change_within_the_noise_is_stable() -> None:
    # 0.4 MiB over the life of a 52 MiB child: under 1 % of it
    life = life_curve(life_summary(lambda r: 10 * MIB + 200 * r, lambda r: 40 * MIB - 200 * r))
    assert life is not None and life.shared.stable and life.private.stable
    assert life.shared.text().startswith("stable (-0.38 MiB over the life measured, within the noise of 0.5")
    judged = unsharing(life, 2000, 30 * MIB)
    assert not judged.decides and "(stable)" in judged.reason


def test_the_fall_within_a_shorter_horizon_is_read_from_the_snapshots() -> None:
    life = life_curve(UNSHARING)
    assert life is not None
    # at 100 requests: one decade past the first loaded snapshot, 8 MiB of 46 lost
    assert unsharing(life, 100, 30 * MIB).fall == pytest.approx(8 / 46)
    # halfway between 100 and 200: interpolated between the snapshots, never extrapolated
    assert life.shared_at(150) == pytest.approx((life.shared_at(100) + life.shared_at(200)) / 2)
    assert life.shared_at(1_000_000) == life.snapshots[-1].shared
    # a horizon of 20 requests: 8 x log10(2) = 2.4 MiB of 46 lost, 5 %: the unsharing does not decide
    assert not unsharing(life, 20, 30 * MIB).decides


def test_the_requests_to_the_share_come_from_the_fit() -> None:
    life = life_curve(UNSHARING)
    assert life is not None
    judged = unsharing(life, 2000, 30 * MIB)  # 24 MiB more than at 10 requests: three decades
    assert judged.decides and judged.requests == pytest.approx(10_000, abs=1)
    assert judged.reason.startswith("unsharing: the children's shared memory fell 40.0% within 2,000 requests, "
                                    "more than 10%; a child's share of the budget is 30.0 MiB: the fitted private "
                                    "memory (log fit) reaches it at ")
    assert judged.reason.endswith("requests (extrapolated)")
    # a share above what the child would be with every shared page copied (6 + 46 MiB): never reached
    never = unsharing(life, 2000, 60 * MIB)
    assert never.decides and never.requests is None and "even with every shared page copied" in never.reason


POINTS = [unlimited(), mrpc_point(10000, 0.999), mrpc_point(1000, 0.99)]

CLIFF = life_summary(lambda r: 5 * MIB if r <= 10 else 21 * MIB, lambda r: 45 * MIB if r <= 10 else 29 * MIB,
                     requests=[0, 10, 20, 50, 100, 200, 500, 1000, 2000, 4000])
"""The collector's first full collection between a child's 10th and 20th request copies 16 MiB
it shared, then nothing more (tests/data/tune-gc-collector, rounded)."""


def test_a_fall_that_stopped_early_sets_no_limit_even_where_the_fit_reaches_the_share() -> None:
    life = life_curve(CLIFF)
    assert life is not None and life.fall > 0.3 and may_decide(life)
    assert life.settled is not None and life.settled.requests == 200  # the geometric middle of 10..4,000
    assert life.private.reaches(25 * MIB) is not None  # the log fit would: the step read as a slope
    judged = unsharing(life, 4000, 25 * MIB)
    assert judged.decides and judged.requests is None
    assert judged.reason.endswith("it then held from 200 to 4,000 requests (within 0.5 MiB): a new child falls the "
                                  "same way, so replacing children does not help and the unsharing sets no limit "
                                  "(the sizes' private memory after K requests counts it)")
    memory = bound(100 * MIB + 2 * 25 * MIB, shared=100 * MIB, child_uss=21 * MIB)
    got = choose_max_requests(POINTS, measure_summary(warm=sizes(max_uss=21 * MIB)), memory, 2, max_loss=0.02,
                              life=life)
    assert got.value == 0 and got.decided_by == "unlimited" and got.unsharing == judged
    assert life_curve(UNSHARING).settled is None  # the logarithmic fall goes on to the end


def test_a_threaded_child_starts_at_what_its_threads_add() -> None:
    memory = bound(100 * MIB + 30 * MIB, shared=100 * MIB, child_uss=20 * MIB)  # 30 MiB for 1 child
    measure = leaking(10 * KIB, start=20 * MIB)
    one = choose_max_requests(POINTS, measure, memory, 1, max_loss=0.02)
    threaded = choose_max_requests(POINTS, measure, memory, 1, max_loss=0.02, threaded=(8, 4 * MIB))
    assert one.child_start_bytes == 20 * MIB and threaded.child_start_bytes == 24 * MIB
    assert one.memory_limit == 1024 and threaded.memory_limit == 614  # (30 - 20) / 10 KiB; (30 - 24) / 10 KiB
    assert any(r.startswith("a child starts at 24.0 MiB (20.0 MiB warmed with one thread, +4.0 MiB with 8 threads "
                            "as the shapes measured) and may reach 30.0 MiB") for r in threaded.reasons)


def test_unsharing_chooses_max_requests_as_a_leak_would() -> None:
    memory = bound(100 * MIB + 2 * 30 * MIB, shared=100 * MIB, child_uss=20 * MIB)  # 30 MiB per child of 2
    measure = measure_summary(warm=sizes(max_uss=20 * MIB))
    life = life_curve(UNSHARING)
    got = choose_max_requests(POINTS, measure, memory, 2, max_loss=0.02, life=life)
    assert got.decided_by == "unsharing" and not got.leak
    assert got.memory_limit == pytest.approx(10_000, abs=1) and got.value in (9900, 10000)
    assert got.unsharing is not None and got.unsharing.decides
    # its cost from the measured points, as a leak's: 1,000 measured within 2 %, 10,000 too
    assert got.loss is not None and got.loss <= 0.02 and not got.forced_by_memory
    assert any(r.startswith("MaxRequestsPerChild from the unsharing, as from a leak: a child's private memory "
                            "reaches its share of the budget (30.0 MiB, 2 children) at ") for r in got.reasons)
    # measured costs still apply: a value the trials show too costly forces it
    costly = [unlimited(), mrpc_point(10000, 0.8), mrpc_point(1000, 0.5)]
    forced = choose_max_requests(costly, measure, memory, 2, max_loss=0.02, life=life)
    assert forced.decided_by == "unsharing" and forced.forced_by_memory and forced.loss == pytest.approx(0.2)


def test_without_the_life_or_with_a_stable_one_nothing_changes() -> None:
    memory = bound(160 * MIB, shared=100 * MIB, child_uss=20 * MIB)
    measure = measure_summary(warm=sizes(max_uss=20 * MIB))
    before = choose_max_requests(POINTS, measure, memory, 2, max_loss=0.02)
    stable = life_curve(life_summary(lambda r: 10 * MIB, lambda r: 40 * MIB))
    after = choose_max_requests(POINTS, measure, memory, 2, max_loss=0.02, life=stable)
    assert before.value == after.value == 0 and before.decided_by == after.decided_by == "unlimited"
    assert before.unsharing is None and after.unsharing is not None and not after.unsharing.decides
    at = next(i for i, r in enumerate(before.reasons) if r.startswith("no leak measured"))
    assert after.reasons == [*before.reasons[:at], after.unsharing.reason, *before.reasons[at:]]


def test_with_a_leak_the_lifes_fit_replaces_the_two_halves_rate() -> None:
    memory = bound(100 * MIB + 2 * 30 * MIB, shared=100 * MIB, child_uss=20 * MIB)
    life = life_curve(UNSHARING)
    got = choose_max_requests(POINTS, leaking(16 * KIB, start=20 * MIB), memory, 2, max_loss=0.02, life=life)
    # the two halves' rate: 10 MiB / 16 KiB = 640 requests; the life's log fit: 10,000
    assert got.leak and got.decided_by == "unsharing" and got.value in (9900, 10000)
    assert any("instead of the 640 of the size measurement's rate" in r for r in got.reasons)


def test_the_text_shows_the_snapshots_and_the_fits() -> None:
    life = life_curve(UNSHARING)
    assert life is not None
    lines = life_lines(life, unsharing(life, 2000, 30 * MIB))
    assert lines[0] == "1b. A child's life (2 children followed to 2,000 requests each, 2.0 s of load; medians; MiB)"
    assert lines[1].split() == ["requests", "private", "shared", "PSS"]
    assert lines[2].split() == ["0", "6.0", "46.0", "6.0"]
    assert lines[-3].startswith("shared: -8.00 MiB per tenfold requests (log fit")
    assert lines[-1].startswith("unsharing: the children's shared memory fell 40.0%")


def _adapter(kind: str, **options: Any) -> Any:
    from pounder.pool import ADAPTERS

    class Stub(ADAPTERS[kind]):
        def __init__(self) -> None:  # no server to point at: only its kind and threads are read
            self.threads = options.get("threads")

    return Stub()


@pytest.mark.parametrize(("kind", "words"), [
    ("puma", "fork_worker"), ("gunicorn", "gc.freeze()"), ("uwsgi", "gc.freeze()"), ("unicorn", "GC.compact"),
    ("apache", "startup.pl"), ("starman", "--preload-app"), ("php-fpm", "load what the children share in the parent"),
])
def test_the_remedy_is_named_in_the_runtimes_terms_when_the_unsharing_decided(kind: str, words: str) -> None:
    from pounder.tune._advice import unsharing_remedy

    memory = bound(100 * MIB + 2 * 30 * MIB, shared=100 * MIB, child_uss=20 * MIB)
    life = life_curve(UNSHARING)
    decided = choose_max_requests(POINTS, measure_summary(warm=sizes(max_uss=20 * MIB)), memory, 2, max_loss=0.02,
                                  life=life)
    said = unsharing_remedy(_adapter(kind, threads=(5, 5) if kind == "puma" else None), life, decided)
    assert said[0].startswith("the children unshare: a child's shared memory fell from 46.0 MiB to 27.6 MiB (40%) "
                              "over 2,000 requests, and its private memory grew from 6.0 MiB to 24.4 MiB")
    assert words in said[0]
    ruby = kind in ("puma", "unicorn")
    assert (len(said) == 2) == ruby
    if kind == "puma":
        assert said[1].startswith("threaded Ruby workers (this one runs up to 5 threads) grow one malloc arena")
        assert "MALLOC_ARENA_MAX=2" in said[1]
    # nothing when the unsharing did not decide, or was not measured
    stable = life_curve(life_summary(lambda r: 10 * MIB, lambda r: 40 * MIB))
    quiet = choose_max_requests(POINTS, measure_summary(warm=sizes(max_uss=20 * MIB)), memory, 2, max_loss=0.02,
                                life=stable)
    assert unsharing_remedy(_adapter(kind), stable, quiet) == []
    assert unsharing_remedy(_adapter(kind), None, decided) == []


def test_a_preloaded_childs_first_growth_that_is_copy_on_write_is_named_so() -> None:
    from pounder.tune._advice import advice

    memory = bound(1024 * MIB, shared=30 * MIB, child_uss=25 * MIB)
    cow = measure_summary(preload=True, cold=sizes(max_uss=3 * MIB, median_shared=48 * MIB),
                          warm=sizes(max_uss=25 * MIB, median_shared=26 * MIB), sharing=0.9)
    said = advice("gunicorn", cow, None, memory, None, [], None, 2.0)
    assert said[0] == ("each child grows 22.0 MiB on its first requests while its shared memory falls 22.0 MiB: most "
                       "of the growth is copy-on-write, pages inherited from the parent written on first use and "
                       "copied, not code loaded (what writes them: below)")
    loaded = measure_summary(preload=True, cold=sizes(max_uss=3 * MIB, median_shared=48 * MIB),
                             warm=sizes(max_uss=25 * MIB, median_shared=47 * MIB), sharing=0.9)
    said = advice("gunicorn", loaded, None, memory, None, [], None, 2.0)
    assert said[0].startswith("each child grows 22.0 MiB on its first requests: code or data is loaded on first use")
