"""Shared memory over a child's life (pure, no I/O): the life point's snapshots read as a curve,
the children's private (USS) and shared memory fitted against the requests served, and whether
the unsharing decides MaxRequestsPerChild.

The life point (:mod:`pounder.tune._life_step`) starts the server of the size measurement again and
loads it, closed loop at as many clients as children, to about 0.1, 0.2, 0.5, 1, 2, 5, 10 x K
requests per child (K: ``--requests-per-child``; up to ``--life N``), snapshotting the children
after each load. Per snapshot the median child's private, shared and PSS; the curve starts at the
first loaded snapshot (the child's first requests done), so a child's lazy start-up is not taken
for unsharing.

* :func:`life_curve`: both series fitted by least squares against ln(requests) and against
  requests; the fit with the larger R² is the one stated ("log" or "linear"), with the change per
  1,000 requests over the measured span (and per tenfold requests for the log fit). A series is
  "stable" when its measured change from the first to the last snapshot is within the noise
  (:func:`noise_bytes`).
* :func:`unsharing`: the fall of the median child's shared memory within the MaxRequestsPerChild
  horizon (the value chosen for a leak, else the life measured), from the measured snapshots (never
  extrapolated); more than :data:`UNSHARING_FALL` of it makes MaxRequestsPerChild follow from the
  unsharing as from a leak: the requests at which the fitted private memory reaches the child's
  share of the budget. Unsharing alone cannot make a child grow by more than it shared: when the
  share is above the first snapshot's private + shared, the child never reaches it. Nor when the
  fall stopped (:attr:`Life.settled`: the shared memory held over the later half of the life
  measured): a fall in a child's first requests, such as the collector's first full collection
  copying every page it touches, happens again in every new child.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pounder._errors import public
from pounder._records import Record
from pounder._units import MIB, mib_unit

UNSHARING_FALL = 0.10
"""The fall of the median child's shared memory within the MaxRequestsPerChild horizon (a fraction
of its shared memory at the first snapshot) from which the unsharing decides MaxRequestsPerChild."""

NOISE_FRACTION = 0.01
"""A series is stable when its change is under this fraction of the child's size (its RSS at the
first snapshot) ..."""

NOISE_FLOOR = 64 * 1024
"""... or under 16 pages (64 KiB), whichever is larger: what the allocator moves between two
snapshots of an idle child, the size measurement's own threshold for a leak's total
(``LEAK_MIN_TOTAL``)."""

LIFE_STEPS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
"""The snapshots' requests per child, as multiples of K (log-spaced), up to ``--life``."""

MAX_REQUESTS_MODELLED = 1_000_000
"""The most requests a fit is extrapolated to (MaxRequestsPerChild's own bound for a leak)."""


@public
def life_targets(requests_per_child: int, life: int) -> list[int]:
    """The requests per child (from the start of the child) at which the life point snapshots
    the children: :data:`LIFE_STEPS` x ``requests_per_child`` below ``life``, then ``life``
    itself; [] when ``life`` is 0 (off)."""
    if life <= 0:
        return []
    targets = sorted({max(1, round(step * requests_per_child)) for step in LIFE_STEPS
                      if step * requests_per_child < life})
    return [*targets, life]


@public
def noise_bytes(child_rss: int) -> int:
    """The change a series may show and still be called stable: :data:`NOISE_FRACTION` of the
    child's RSS, at least :data:`NOISE_FLOOR`."""
    return max(NOISE_FLOOR, int(NOISE_FRACTION * child_rss))


def _least_squares(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """(slope, intercept, R²) of ys on xs; R² is 1 for a series that does not vary."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    var_x = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var_x if var_x else 0.0
    intercept = mean_y - slope * mean_x
    total = sum((y - mean_y) ** 2 for y in ys)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    return slope, intercept, 1.0 if total == 0 else max(0.0, 1 - residual / total)


@public
@dataclass(frozen=True)
class LifeFit(Record):
    """One series (a child's ``private`` or ``shared`` memory, bytes) against the requests it
    served, fitted both ways: ``log_slope`` bytes per unit of ln(requests) (x ln 10 per tenfold
    requests), ``linear_slope`` bytes per request, each with its intercept and R²; ``fit``: the one
    with the larger R² ("log" or "linear"); ``change``: the measured change from the first snapshot
    to the last (bytes, signed); ``per_1000``: the stated fit's change per 1,000 requests over the
    measured span; ``stable``: ``change`` within ``noise`` (:func:`noise_bytes`)."""

    series: str
    log_slope: float
    log_intercept: float
    log_r2: float
    linear_slope: float
    linear_intercept: float
    linear_r2: float
    fit: str
    change: int
    per_1000: float
    noise: int
    stable: bool

    def at(self, requests: float) -> float:
        """The stated fit's value at ``requests`` per child."""
        if self.fit == "log":
            return self.log_intercept + self.log_slope * math.log(max(1.0, requests))
        return self.linear_intercept + self.linear_slope * requests

    @property
    def per_tenfold(self) -> float:
        return self.log_slope * math.log(10)

    def reaches(self, value: float) -> float | None:
        """The requests per child at which the stated fit reaches ``value`` (growing series), None
        when it does not grow or not within :data:`MAX_REQUESTS_MODELLED`."""
        if self.fit == "log":
            if self.log_slope <= 0:
                return None
            exponent = (value - self.log_intercept) / self.log_slope
            requests = math.exp(min(exponent, math.log(MAX_REQUESTS_MODELLED) + 1))
        else:
            if self.linear_slope <= 0:
                return None
            requests = (value - self.linear_intercept) / self.linear_slope
        return None if requests > MAX_REQUESTS_MODELLED else max(1.0, requests)

    def text(self) -> str:
        """``stable (...)``, ``-8.45 MiB per tenfold requests (log fit, R² 1.00 against 0.72 for a linear
        one; -9.77 MiB per 1,000 requests on average over the life measured)`` or ``+0.41 MiB per 1,000
        requests (linear fit, R² 0.99 against 0.80 for a log one)``."""
        if self.stable:
            return (f"stable ({_signed_mib(self.change)} over the life measured, within the noise of "
                    f"{mib_unit(self.noise)})")
        if self.fit == "log":
            return (f"{_signed_mib(self.per_tenfold)} per tenfold requests (log fit, R² {self.log_r2:.2f} against "
                    f"{self.linear_r2:.2f} for a linear one; {_signed_mib(self.per_1000)} per 1,000 requests on "
                    "average over the life measured)")
        return (f"{_signed_mib(self.per_1000)} per 1,000 requests (linear fit, R² {self.linear_r2:.2f} against "
                f"{self.log_r2:.2f} for a log one)")


def _signed_mib(value: float) -> str:
    return f"{'+' if value >= 0 else '-'}{abs(value) / MIB:,.2f} MiB"


def fit_series(name: str, requests: Sequence[float], values: Sequence[int], noise: int) -> LifeFit:
    """``values`` fitted against ``requests`` both ways (:class:`LifeFit`); at least two snapshots."""
    log_slope, log_intercept, log_r2 = _least_squares([math.log(max(1.0, r)) for r in requests], values)
    linear_slope, linear_intercept, linear_r2 = _least_squares(requests, values)
    fit = "log" if log_r2 >= linear_r2 else "linear"
    change = int(values[-1]) - int(values[0])
    span = requests[-1] - requests[0]
    first, last = requests[0], requests[-1]
    if fit == "log":
        fitted_change = log_slope * (math.log(max(1.0, last)) - math.log(max(1.0, first)))
    else:
        fitted_change = linear_slope * span
    per_1000 = fitted_change / span * 1000 if span > 0 else 0.0
    return LifeFit(series=name, log_slope=log_slope, log_intercept=log_intercept, log_r2=log_r2,
                   linear_slope=linear_slope, linear_intercept=linear_intercept, linear_r2=linear_r2, fit=fit,
                   change=change, per_1000=per_1000, noise=noise, stable=abs(change) < noise)


@public
@dataclass(frozen=True)
class LifeSnapshot(Record):
    """The children after ``requests`` requests each (the mean: requests completed / children):
    the median child's private (USS), shared and PSS, the largest USS (bytes), and how many
    children were read."""

    requests: float
    children: int
    private: int
    shared: int
    pss: int
    max_private: int


@public
@dataclass(frozen=True)
class Life(Record):
    """A child's memory over its life (module documentation): the ``snapshots`` (the first one at
    0 requests, the children as forked), up to ``reached`` requests per child of the ``target``
    (``stopped``: why it stopped short, None when it got there); ``private`` and ``shared`` fitted
    from the first loaded snapshot on; ``fall``: the share of the median child's shared memory lost
    from the first loaded snapshot to the last; ``replaced``: children that were not there at the
    start (a crash or a request limit: their figures start again)."""

    target: int
    reached: float
    stopped: str | None
    elapsed_s: float
    children: int
    preload: bool | None
    snapshots: list[LifeSnapshot]
    private: LifeFit
    shared: LifeFit
    fall: float
    replaced: int
    summary: str
    reasons: list[str] = field(default_factory=list)

    @property
    def loaded(self) -> list[LifeSnapshot]:
        """The snapshots the fits use: those after the children served requests."""
        return [s for s in self.snapshots if s.requests > 0]

    @property
    def settled(self) -> LifeSnapshot | None:
        """The first snapshot of the life's later half (from the geometric middle of the requests
        measured, at least two snapshots) when the median child's shared memory held within the
        noise from it to the last: the unsharing happened early and stopped; None when it still
        moves."""
        loaded = self.loaded
        middle = math.sqrt(max(1.0, loaded[0].requests) * max(1.0, loaded[-1].requests))
        late = [s for s in loaded[1:] if s.requests >= middle]
        if len(late) < 2:
            return None
        values = [s.shared for s in late]
        return late[0] if max(values) - min(values) < self.shared.noise else None

    def shared_at(self, requests: float) -> float:
        """The median child's measured shared memory at ``requests`` per child, interpolated
        linearly between the snapshots either side (the last one's beyond it: never extrapolated)."""
        points = self.loaded
        if requests <= points[0].requests:
            return float(points[0].shared)
        for before, after in zip(points, points[1:], strict=False):
            if requests <= after.requests:
                span = after.requests - before.requests
                share = (requests - before.requests) / span if span > 0 else 1.0
                return before.shared + share * (after.shared - before.shared)
        return float(points[-1].shared)


def _median(values: Sequence[int]) -> int:
    return int(statistics.median(values)) if values else 0


@public
def life_snapshot(requests: float, children: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A life snapshot as the point stores it, from its children as a snapshot lists them (each
    with ``pid``, ``private``, ``shared``, ``pss``, ``rss``)."""
    return {"requests": requests, "children": len(children),
            "private": _median([int(c["private"]) for c in children]),
            "shared": _median([int(c["shared"]) for c in children]),
            "pss": _median([int(c["pss"]) for c in children]),
            "rss": _median([int(c["rss"]) for c in children]),
            "max_private": max((int(c["private"]) for c in children), default=0),
            "pids": sorted(int(c["pid"]) for c in children)}


@public
def life_curve(summary: Mapping[str, Any]) -> Life | None:
    """The life point's ``summary`` read as a curve and fitted (module documentation); None when
    it holds fewer than two loaded snapshots (nothing to fit)."""
    stored = list(summary.get("snapshots") or [])
    snapshots = [LifeSnapshot(requests=float(s["requests"]), children=int(s["children"]), private=int(s["private"]),
                              shared=int(s["shared"]), pss=int(s["pss"]), max_private=int(s["max_private"]))
                 for s in stored]
    loaded = [s for s in snapshots if s.requests > 0 and s.children > 0]
    if len(loaded) < 2:
        return None
    first = next(s for s in stored if float(s["requests"]) > 0 and int(s["children"]) > 0)
    noise = noise_bytes(int(first.get("rss") or (loaded[0].private + loaded[0].shared)))
    requests = [s.requests for s in loaded]
    private = fit_series("private", requests, [s.private for s in loaded], noise)
    shared = fit_series("shared", requests, [s.shared for s in loaded], noise)
    start_pids = set(stored[0].get("pids") or [])
    replaced = len({pid for s in stored for pid in s.get("pids") or []} - start_pids) if start_pids else 0
    fall = (loaded[0].shared - loaded[-1].shared) / loaded[0].shared if loaded[0].shared > 0 else 0.0
    reached = loaded[-1].requests
    stopped = summary.get("stopped")
    summary_text = (f"over {reached:,.0f} requests per child ({len(snapshots)} snapshots of "
                    f"{int(summary['children'])} children): shared {shared.text()}; private {private.text()}")
    reasons = [
        f"the children were followed from their start to {reached:,.0f} requests each, snapshotted at "
        + ", ".join(f"{s.requests:,.0f}" for s in snapshots) + " requests per child",
        f"median child's shared memory {mib_unit(loaded[0].shared)} after {loaded[0].requests:,.0f} requests, "
        f"{mib_unit(loaded[-1].shared)} after {reached:,.0f}: {fall:.1%} of it "
        f"{'lost' if fall >= 0 else 'gained'}",
        f"median child's private memory (USS) {mib_unit(loaded[0].private)} then {mib_unit(loaded[-1].private)}",
        f"a series is stable when it changed by less than {mib_unit(noise)} (1% of the child's "
        f"{mib_unit(int(first.get('rss') or 0))} RSS, at least 64 KiB: allocator noise)",
    ]
    if stopped:
        reasons.append(str(stopped))
    if replaced:
        reasons.append(f"{replaced} children were replaced during the life measurement (a crash or a request "
                       "limit): the medians mix children of different ages")
    return Life(target=int(summary["target"]), reached=reached, stopped=None if not stopped else str(stopped),
                elapsed_s=float(summary.get("elapsed_s") or 0.0), children=int(summary["children"]),
                preload=summary.get("preload"), snapshots=snapshots, private=private, shared=shared, fall=fall,
                replaced=replaced, summary=summary_text, reasons=reasons)


@public
@dataclass(frozen=True)
class Unsharing(Record):
    """Whether the unsharing decides MaxRequestsPerChild (:func:`unsharing`): the ``horizon``
    (requests per child), the measured ``fall`` of the median child's shared memory within it (a
    fraction), ``decides`` (more than :data:`UNSHARING_FALL`, and the shared series not stable);
    ``requests``: when it decides, the requests at which the fitted private memory reaches the
    child's share of the budget ``limit`` (None: it never does, by unsharing or within
    :data:`MAX_REQUESTS_MODELLED`); one ``reason``."""

    horizon: int
    fall: float
    decides: bool
    limit: int
    requests: int | None
    reason: str


@public
def unsharing(life: Life, horizon: int, limit: int, unit: str = "requests") -> Unsharing:
    """The unsharing judged within ``horizon`` requests per child against the child's share of the
    budget ``limit`` (bytes; module documentation)."""
    loaded = life.loaded
    base = loaded[0].shared
    at = life.shared_at(horizon)
    fall = (base - at) / base if base > 0 else 0.0
    measured = min(float(horizon), life.reached)
    where = (f"within {horizon:,} {unit} (measured to {life.reached:,.0f})" if horizon > life.reached
             else f"within {horizon:,} {unit}")
    if fall <= UNSHARING_FALL or life.shared.stable:
        why = "stable" if life.shared.stable else f"at most {UNSHARING_FALL:.0%}"
        return Unsharing(horizon=horizon, fall=fall, decides=False, limit=limit, requests=None,
                         reason=f"children's shared memory fell {fall:.1%} {where} ({why}): the unsharing does not "
                                "decide MaxRequestsPerChild")
    ceiling = loaded[0].private + base  # every shared page copied: the most unsharing can add
    requests: int | None = None
    settled = life.settled
    if settled is not None:
        tail = (f"it then held from {settled.requests:,.0f} to {life.reached:,.0f} {unit} (within "
                f"{mib_unit(life.shared.noise)}): a new child falls the same way, so replacing children does not "
                "help and the unsharing sets no limit (the sizes' private memory after K requests counts it)")
    elif limit >= ceiling:
        tail = f"even with every shared page copied a child ({mib_unit(ceiling)}) stays under it"
    else:
        found = life.private.reaches(limit)
        requests = None if found is None else max(1, int(found))
        if requests is None:
            tail = f"the fitted private memory does not reach it within {MAX_REQUESTS_MODELLED:,} {unit}"
        else:
            beyond = " (extrapolated)" if requests > measured else ""
            tail = f"the fitted private memory ({life.private.fit} fit) reaches it at {requests:,} {unit}{beyond}"
    return Unsharing(horizon=horizon, fall=fall, decides=True, limit=limit, requests=requests,
                     reason=f"unsharing: the children's shared memory fell {fall:.1%} {where}, more than "
                            f"{UNSHARING_FALL:.0%}; a child's share of the budget is {mib_unit(limit)}: {tail}")


@public
def may_decide(life: Life | None) -> bool:
    """Whether the unsharing may decide MaxRequestsPerChild (the MaxRequestsPerChild step then
    measures every value): the shared memory fell by more than :data:`UNSHARING_FALL` over the
    life measured, and its series is not stable."""
    return life is not None and life.fall > UNSHARING_FALL and not life.shared.stable


@public
def life_line(summary: Mapping[str, Any]) -> str:
    """One line for the life point (the run's log, an interrupted run's report): the median child's
    shared and private memory at the first loaded snapshot and the last."""
    snapshots = [s for s in summary.get("snapshots") or [] if float(s["requests"]) > 0]
    if not snapshots:
        return "no request completed"
    first, last = snapshots[0], snapshots[-1]
    text = (f"median child shared {mib_unit(int(first['shared']))} after {float(first['requests']):,.0f} requests, "
            f"{mib_unit(int(last['shared']))} after {float(last['requests']):,.0f}; private "
            f"{mib_unit(int(first['private']))} then {mib_unit(int(last['private']))}")
    return text + (" (stopped short: the cap on its load)" if summary.get("stopped") else "")


@public
def life_lines(life: Life, judged: Unsharing | None) -> list[str]:
    """The text report's part for ``life``: a heading, a table of the snapshots (MiB), the fits,
    and what the unsharing decided (``judged``, None: nothing)."""
    out = [f"1b. A child's life ({life.children} children followed to {life.reached:,.0f} requests each, "
           f"{life.elapsed_s:,.1f} s of load; medians; MiB)"]
    rows = [f"{'requests':>10} {'private':>8} {'shared':>8} {'PSS':>8}"]
    rows += [f"{s.requests:>10,.0f} {s.private / MIB:>8.1f} {s.shared / MIB:>8.1f} {s.pss / MIB:>8.1f}"
             for s in life.snapshots]
    out += [f"  {row}" for row in rows]
    out.append(f"shared: {life.shared.text()}; {life.fall:.1%} of it lost from the first loaded snapshot to the last")
    out.append(f"private: {life.private.text()}")
    out += [reason for reason in life.reasons if reason.startswith(("stopped", "children were replaced"))
            or "replaced" in reason]
    if judged is not None:
        out.append(judged.reason)
    return out
