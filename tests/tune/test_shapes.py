"""Workers x threads compared at the offered load (issue 41): the shapes compared, where the first
round stops, and the choice, on trial figures shaped like the ones measured on this machine (gunicorn
gthread and Puma on 2 cores: requests that wait 40 ms, requests that burn 10 ms of CPU). The
decisions on whole recorded runs: tests/tune/test_recorded_shapes.py."""

from __future__ import annotations

from typing import Any

import pytest

from pounder._tune_point import TunePoint, present, tune_points
from pounder._tune_run import OfferedLoad
from pounder._units import MIB
from pounder.tune import Target
from pounder.tune._points import aggregate_trials
from pounder.tune._shapes import choose_shape, shape_slots, shapes, shapes_done
from tune.test_analysis import load_summary

CLIENTS = OfferedLoad(connections=16, rate=None, source="--clients", held=False)


def shape(workers: int, threads: int, rates: list[float], *, p99_ms: float = 45.0, cpu_us: float = 600.0,
          footprint_mib: float, uss_mib: float = 5.0) -> dict[str, Any]:
    """A shape's point aggregated from trial summaries as the threads step stores them."""
    out = []
    for number, rps in enumerate(rates, start=1):
        trial = load_summary(workers, rps, p99_ms=p99_ms, connections=16)
        trial.update(trial=number, threads=threads, server_cpu_us=cpu_us, footprint=round(footprint_mib * MIB),
                     child_uss=round(uss_mib * MIB), child_shared=15 * MIB, queued=1.0)
        out.append(trial)
    return aggregate_trials(out)


def test_shapes_halve_the_workers_as_the_threads_double() -> None:
    assert shapes(16, 16) == [(16, 1), (8, 2), (4, 4), (2, 8), (1, 16)]
    assert shapes(3, 3) == [(3, 1), (2, 2), (1, 4)]  # rounded up: never fewer requests at once
    assert shapes(1, 1) == [(1, 1)]  # nothing to compare: the step is skipped
    # the memory bound (or --max-children) held the pool at 4 under the 32 clients: threads serve them
    assert shapes(4, 32) == [(4, 1), (4, 2), (4, 4), (4, 8), (2, 16), (1, 32)]
    assert shape_slots(4, 32, hard=4) == 32 and shape_slots(4, 32, hard=40) == 4 and shape_slots(4, 2, hard=4) == 4


def test_the_first_round_stops_after_two_shapes_slower_in_a_row() -> None:
    assert not shapes_done([{"rps": 380.0}], 0.05)
    assert not shapes_done([{"rps": 380.0}, {"rps": 370.0}], 0.05)  # within the tolerance
    # one slow trial (a neighbour, noise) does not stop it: two in a row do
    assert not shapes_done([{"rps": 380.0}, {"rps": 370.0}, {"rps": 300.0}], 0.05)
    assert shapes_done([{"rps": 380.0}, {"rps": 370.0}, {"rps": 300.0}, {"rps": 200.0}], 0.05)
    assert not shapes_done([{"rps": 380.0}, {"rps": 330.0}, {"rps": 375.0}], 0.05)


def _points(choice: Any) -> dict[tuple[int, int], TunePoint]:
    return {(p.children, p.threads or 1): p for p in choice.points}


def test_waiting_requests_choose_the_smallest_footprint_as_fast() -> None:
    """gunicorn gthread at 16 clients waiting 40 ms: every shape serves ~380 req/s, one worker of 16
    threads too; the memory falls with the workers. The smallest footprint wins; the reasons say
    threads replaced workers and what a thread costs."""
    points = [
        shape(16, 1, [381, 378, 383], footprint_mib=92, uss_mib=4.7),
        shape(8, 2, [379, 377, 382], footprint_mib=60, uss_mib=5.4),
        shape(4, 4, [380, 376, 381], footprint_mib=38, uss_mib=6.0),
        shape(2, 8, [377, 379, 380], footprint_mib=27, uss_mib=7.1),
        shape(1, 16, [300, 310, 305], p99_ms=90.0, footprint_mib=21, uss_mib=9.3),
    ]
    choice = choose_shape(points, CLIENTS, Target(clients=16), tolerance=0.05, slots=16, lock="Python's GIL", cores=2.0)
    assert (choice.workers, choice.threads) == (2, 8)
    marked = _points(choice)
    assert not present(marked[(2, 8)].vs_best).worse and present(marked[(1, 16)].vs_best).worse
    assert choice.why.startswith("2 workers x 8 threads: the smallest footprint as good as the best at 16 clients")
    assert "against 92.0 MiB for 16 workers x 1 thread (29% of it)" in choice.why
    assert any(r.startswith("threads replaced workers") and "Python's GIL" in r for r in choice.reasons)
    # (9.3 - 4.7) MiB over the 15 threads added to the one-thread worker's
    assert choice.per_thread == round((round(9.3 * MIB) - round(4.7 * MIB)) / 15)
    # a sentence never contradicts the table: the chosen is not marked slower, the one-thread pool is the reference
    assert "1 worker x 16 threads" in choice.reasons[1] and "distinguishably slower" in choice.reasons[1]


def test_cpu_bound_workers_keep_one_thread_and_the_lock_is_named() -> None:
    """Puma, 10 ms of CPU per request at 8 clients on 2 cores: 2 workers x 1 thread keep both cores
    busy; with fewer workers, the GVL lets each use one core: every shape with threads is slower."""
    busy_cpu = 10_400.0  # a request holds its worker ~10.5 ms (8 / 2 cores share) and uses 10.4 ms of CPU
    points = [
        shape(8, 1, [190, 188, 192], p99_ms=60, cpu_us=busy_cpu, footprint_mib=300),
        shape(4, 2, [189, 187, 190], p99_ms=62, cpu_us=busy_cpu, footprint_mib=170),
        shape(2, 4, [186, 190, 188], p99_ms=61, cpu_us=busy_cpu, footprint_mib=100),
        shape(1, 8, [96, 95, 97], p99_ms=120, cpu_us=busy_cpu, footprint_mib=70),
    ]
    choice = choose_shape(points, OfferedLoad(connections=8, rate=None, source="--clients", held=False),
                          Target(clients=8), tolerance=0.05, slots=8, lock="Ruby's GVL", cores=2.0)
    # 2 workers keep the 2 cores busy: as fast, less memory (measured, not refused by a rule)
    assert (choice.workers, choice.threads) == (2, 4)
    only_slower = [shape(2, 1, [190, 188, 192], p99_ms=40, cpu_us=10_000.0, footprint_mib=80),
                   shape(1, 2, [100, 98, 99], p99_ms=80, cpu_us=10_000.0, footprint_mib=50)]
    kept = choose_shape(only_slower, OfferedLoad(connections=2, rate=None, source="--clients", held=False),
                        Target(clients=2), tolerance=0.05, slots=2, lock="Ruby's GVL", cores=2.0)
    assert (kept.workers, kept.threads) == (2, 1)
    lock = [r for r in kept.reasons if r.startswith("threads added nothing")]
    assert lock and "CPU-bound" in lock[0] and "Ruby's GVL" in lock[0] and lock[0].endswith("1 thread per worker")


def test_p99_target_and_equal_footprints() -> None:
    """--p99 rules out a shape as fast whose p99 is over it; a footprint within 5 % of the smallest is
    the same memory, and the fewer threads win."""
    points = [
        shape(4, 1, [200, 199, 201], p99_ms=30, footprint_mib=100),
        shape(2, 2, [199, 200, 200], p99_ms=40, footprint_mib=61),
        shape(1, 4, [200, 201, 199], p99_ms=80, footprint_mib=59),
    ]
    offered = OfferedLoad(connections=4, rate=None, source="--clients", held=False)
    # without a target, a p99 a third above the lowest is distinguishably higher: only 4 x 1 is as good
    lowest = choose_shape(points, offered, Target(clients=4), tolerance=0.05, slots=4, lock="Python's GIL", cores=2.0)
    assert (lowest.workers, lowest.threads) == (4, 1)
    # the same memory (61 and 59 MiB): the fewer threads
    equal = [shape(4, 1, [200, 199, 201], footprint_mib=100), shape(2, 2, [199, 200, 200], footprint_mib=61),
             shape(1, 4, [200, 201, 199], footprint_mib=59)]
    same = choose_shape(equal, offered, Target(clients=4), tolerance=0.05, slots=4, lock="Python's GIL", cores=2.0)
    assert (same.workers, same.threads) == (2, 2)
    limited = choose_shape(points, offered, Target(clients=4, p99_s=0.05), tolerance=0.05, slots=4,
                           lock="Python's GIL", cores=2.0)
    assert (limited.workers, limited.threads) == (2, 2)
    assert "its p99 meets --p99 50.0 ms" in limited.reasons[0]


def test_points_read_as_records() -> None:
    point = tune_points([shape(8, 2, [380, 381, 379], footprint_mib=60)], "p")[0]
    assert point.threads == 2 and point.footprint == round(60 * MIB) and point.child_shared == 15 * MIB
    # a worker of 2 threads holds 2 requests at once: 16 slots for the 16 connections
    assert point.busy_s == pytest.approx(16 / point.rps)
    failed = tune_points([shape(8, 2, [0, 0, 0], footprint_mib=60)], "p")[0]
    assert failed.counted == 0 and failed.footprint is None  # no counted trial: no memory figure either


def test_noise_does_not_trade_a_cpu_bound_worker_for_a_thread() -> None:
    """Puma at 8 clients, 2 workers burning 10 ms of CPU per request, on a busy machine: the
    intervals cannot tell 1 worker x 2 threads from the best, but the kernel's CPU accounting says
    each worker used 0.95 of a core while it held a request, so 2 cores need 2 workers; one worker's
    threads share one core under the GVL: the 2 workers stay, and the reasons say why."""
    offered = OfferedLoad(connections=8, rate=None, source="--clients", held=False)
    noisy = [shape(2, 1, [130, 60, 180, 110], p99_ms=100, cpu_us=10_100.0, footprint_mib=160),
             shape(1, 2, [70, 64, 62, 73], p99_ms=104, cpu_us=10_700.0, footprint_mib=90)]
    choice = choose_shape(noisy, offered, Target(clients=8), tolerance=0.05, slots=2, lock="Ruby's GVL", cores=2.0)
    marked = _points(choice)
    assert not present(marked[(1, 2)].vs_best).worse  # the wall clock alone could not tell them apart
    assert (choice.workers, choice.threads) == (2, 1)
    floor = [r for r in choice.reasons if r.startswith("the workers are CPU-bound")]
    assert floor and "2 cores need 2 workers" in floor[0] and "1 worker x 2 threads" in floor[0]
    # in a pod of half a core, 1 worker is all the quota needs: the smaller footprint is chosen
    one = choose_shape(noisy, offered, Target(clients=8), tolerance=0.05, slots=2, lock="Ruby's GVL", cores=0.5)
    assert (one.workers, one.threads) == (1, 2)
