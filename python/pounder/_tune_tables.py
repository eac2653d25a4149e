"""The tables of a tuning run's steps, each declared once (:mod:`pounder._table`) for the text
``pounder tune`` prints and the page ``pounder report`` draws: the children sweep, the pools
compared at the offered load (each candidate at the children sweep's concurrency, when the sweep
measured it, and at the offered load; its mark, chosen or best, as the run stored it), the
MaxRequestsPerChild sweep and the spare settings. A row is a :class:`pounder._tune_point.TunePoint`; a column of a point
is declared once below and listed in the tables that show it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pounder._table import Column, Table, cores, flags, interval, ms, ratio, share, whole
from pounder._tune_point import TunePoint, Versus, present
from pounder._units import mib

Point = Column[TunePoint]


def versus_text(versus: Versus | None) -> str:
    """A ratio against a reference with its interval, ``-4.5% (-7.0..-2.1)``; "-" without one."""
    return "-" if versus is None else ratio(versus.ratio, versus.low, versus.high)


MC: Point = Column("MC", lambda p: p.children)
NC: Point = Column("NC", lambda p: p.connections)
TRIALS: Point = Column("trials", lambda p: p.trials_text)
NR: Point = Column("NR", lambda p: f"{p.attempted:,}")
RPS: Point = Column("RPS", lambda p: whole(p.rps))
RPS_CI: Point = Column("95% CI", lambda p: interval(p.rps_low, p.rps_high))
P50: Point = Column("p50", lambda p: ms(p.p50_ms))
P99: Point = Column("p99", lambda p: ms(p.p99_ms))
P99_CI: Point = Column("p99 95% CI", lambda p: interval(p.p99_low, p.p99_high, ",.1f"))
QUEUED: Point = Column("queued", lambda p: share(p.queued))
SERVER_CPU: Point = Column("srv CPU us/req", lambda p: whole(p.server_cpu_us))
SERVER_CORES: Point = Column("srv cores", lambda p: cores(p.server_cores))
LOAD_CORES: Point = Column("load cores", lambda p: cores(p.client_cores))
OTHER_CORES: Point = Column("other cores", lambda p: cores(p.other_cores))
MAX_USS: Point = Column("max USS MiB", lambda p: mib(p.max_child_uss))
FAILED: Point = Column("failed", lambda p: p.failed)
FLAGS: Point = Column("", lambda p: flags(p.wide, p.remeasured))


def children_table(*, queued: bool, other_cores: bool = True) -> Table[TunePoint]:
    """The children sweep's table: a row per count of children; ``queued`` (the accept queue's
    share, absent in results of earlier versions) and ``other_cores`` (other processes' CPU) when
    the run has them."""
    return Table([MC, NC, TRIALS, NR, RPS, RPS_CI, P50, P99, *([QUEUED] if queued else []), SERVER_CPU,
                  SERVER_CORES, LOAD_CORES, *([OTHER_CORES] if other_cores else []), MAX_USS, FAILED, FLAGS])


def mrpc_table(*, other_cores: bool = False) -> Table[TunePoint]:
    """The MaxRequestsPerChild sweep's table: a row per value (0: unlimited), with the change of its
    requests/s against unlimited measured in the same rounds; ``other_cores`` when the page has them."""
    return Table([
        Column("MRPC", lambda p: p.max_requests or "unlimited"), NC, TRIALS, NR, RPS, RPS_CI,
        Column("RPS vs unlimited (95% CI)", lambda p: versus_text(p.vs_unlimited)), P99,
        Column("NR/MRPC", lambda p: p.respawns), MAX_USS, FAILED, *([OTHER_CORES] if other_cores else []), FLAGS,
    ])


def spare_table() -> Table[TunePoint]:
    """The spare settings' table: medians of interleaved bursts from idle to full load, the p99 with
    its interval, the slow seconds and the setting chosen."""
    return Table([
        Column("", lambda p: p.name or "?"),
        Column("Start", lambda p: p.start_servers),
        Column("MinSpare", lambda p: p.min_spare),
        Column("MaxSpare", lambda p: p.max_spare),
        TRIALS,
        Column("idle children", lambda p: p.idle_children),
        NC,
        RPS,
        Column("p99 1st s", lambda p: ms(p.first_p99_ms)),
        Column("p99", lambda p: f"{present(p.p99_ms):,.1f}"),
        P99_CI,
        Column("steady p99", lambda p: ms(p.steady_p99_ms)),
        Column("slow s", lambda p: "-" if p.burst_s is None else p.burst_s),
        Column("", lambda p: "chosen" if p.chosen else ""),
    ])


@dataclass(frozen=True)
class PoolRow:
    """A candidate pool: its ``point`` at the offered load, the children sweep's point of the same
    count (``at_sweep``, None when the sweep did not measure it) and its ``mark``."""

    point: TunePoint
    at_sweep: TunePoint | None
    mark: str


def pools_table(label: str) -> Table[PoolRow]:
    """The pools table; ``label`` names the sweep's concurrency (:func:`pounder._figures.sweep_load_text`)."""
    at_offered_load: list[Point] = [
        MC,
        NC, TRIALS, NR, RPS, RPS_CI,
        Column("RPS vs best (95% CI)", lambda p: versus_text(p.vs_best)),
        P50, P99, P99_CI,
        SERVER_CORES, LOAD_CORES, OTHER_CORES,
        FAILED, FLAGS,
    ]
    at_sweep: list[Column[PoolRow]] = [
        Column(f"RPS {label}", lambda r: "-" if r.at_sweep is None else whole(r.at_sweep.rps)),
        Column(f"p99 {label}", lambda r: "-" if r.at_sweep is None else ms(r.at_sweep.p99_ms)),
    ]
    columns: list[Column[PoolRow]] = [c.of(_point) for c in at_offered_load]
    return Table([columns[0], *at_sweep, *columns[1:], Column("", lambda r: r.mark, mark=True)])


def _point(row: PoolRow) -> TunePoint:
    return row.point


def pool_rows(points: Sequence[TunePoint], sweep: Sequence[TunePoint], chosen: int | None,
              best: int | None) -> list[PoolRow]:
    """The rows of ``points``, each with the sweep's point of its count and its mark."""
    at_sweep = {p.children: p for p in sweep}
    return [PoolRow(p, at_sweep.get(p.children), "chosen" if p.children == chosen else
                    "best" if p.children == best else "") for p in points]


THREADS: Point = Column("threads", lambda p: p.threads or 1)
FOOTPRINT: Point = Column("footprint MiB", lambda p: mib(p.footprint))
WORKER_USS: Point = Column("worker USS MiB", lambda p: mib(p.child_uss))
WORKER_SHARED: Point = Column("worker shared MiB", lambda p: mib(p.child_shared))


@dataclass(frozen=True)
class ShapeRow:
    """A shape (workers x threads) at the offered load: its ``point`` and its ``mark``."""

    point: TunePoint
    mark: str


def shapes_table() -> Table[ShapeRow]:
    """The workers x threads table: a row per shape at the offered load, with its memory after the
    load (the footprint, sum of PSS; a worker's median private and shared memory)."""
    columns: list[Point] = [
        Column("workers", lambda p: p.children), THREADS, NC, TRIALS, NR, RPS, RPS_CI,
        Column("RPS vs best (95% CI)", lambda p: versus_text(p.vs_best)), P99, P99_CI,
        FOOTPRINT, WORKER_USS, WORKER_SHARED, SERVER_CPU, SERVER_CORES, OTHER_CORES, FAILED, FLAGS,
    ]
    return Table([*(c.of(_shape_point) for c in columns), Column("", lambda r: r.mark, mark=True)])


def _shape_point(row: ShapeRow) -> TunePoint:
    return row.point


def shape_rows(points: Sequence[TunePoint], chosen: tuple[int, int] | None,
               best: tuple[int, int] | None) -> list[ShapeRow]:
    """The rows of ``points``, each with its mark (chosen, best)."""
    def shape(point: TunePoint) -> tuple[int, int]:
        return point.children, point.threads or 1

    return [ShapeRow(p, "chosen" if shape(p) == chosen else "best" if shape(p) == best else "") for p in points]
