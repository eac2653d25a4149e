"""Step 4: MaxRequestsPerChild from the measured points and their intervals (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pounder._errors import public
from pounder._figures import WIDE
from pounder._records import Record
from pounder._tune_point import Points, TunePoint, Versus, present, tune_points
from pounder._units import children_text
from pounder.compare import paired_ratio_interval, ratio_interval
from pounder.pool import ADAPTERS, Adapter
from pounder.tune._analysis import LOSS_NOISE
from pounder.tune._life import Life, Unsharing, unsharing
from pounder.tune._memory import Growth, MemoryBound, growth
from pounder.tune._points import paired_values, trial_values
from pounder.tune._text import (
    Summary,
    _bytes,
    _counts,
    _mib,
    change_text,
    share_text,
)

MAX_MODELLED = 1_000_000
"""The largest MaxRequestsPerChild a leak's memory limit is rounded to."""
MAX_DECADES = 10
"""The respawn model estimates a cost at most this many times beyond the largest value measured
(one decade)."""


# ---------------------------------------------------------------------------------------------
# Step 4: MaxRequestsPerChild


def _round_down(value: int) -> int:
    """Down to two significant digits: 3456 -> 3400, 87 -> 87, 1 -> 1."""
    if value < 100:
        return max(1, value)
    scale: int = 10 ** (len(str(value)) - 2)
    return value // scale * scale


def _trial_rates(point: TunePoint) -> list[float]:
    return trial_values(point, "rps")


def _value(point: TunePoint) -> int:
    """The point's MaxRequestsPerChild (0: unlimited), which every point of this step holds."""
    return present(point.max_requests)


@public
def mrpc_losses(points: Points) -> list[TunePoint]:
    """The MaxRequestsPerChild points as records, each finite one with ``vs_unlimited``, a
    :class:`~pounder._tune_point.Versus` (``ratio``, ``low``, ``high``, ``verdict``, ``pairs``;
    stored as those keys): :func:`pounder.compare.paired_ratio_interval` of its
    counted trials' rps against the unlimited point's (``max_requests`` 0) round by round (``pairs``
    rounds both counted; at least 2), else :func:`pounder.compare.ratio_interval` of the two sets of
    trials (no ``pairs``), higher is better. With fewer
    than 2 trials on either side: the ratio of the medians, no interval, verdict "unknown". The
    unlimited point, and every point when none is unlimited, get ``vs_unlimited`` None."""
    records = tune_points(points, "mrpc")
    base = next((p for p in records if _value(p) == 0), None)
    return [_with_vs(point, None if base is None or point is base else _versus(point, base)) for point in records]


def _versus(point: TunePoint, base: TunePoint) -> Versus | None:
    """``point``'s throughput against the unlimited ``base`` (:func:`mrpc_losses`)."""
    ours, theirs = _trial_rates(point), _trial_rates(base)
    mine, paired = paired_values(point, base, "rps")  # the unlimited baseline ran in every round
    found: dict[str, Any]
    if len(mine) >= 2 and min(paired) > 0:
        estimate = paired_ratio_interval(mine, paired, higher_is_better=True)
        found = {"ratio": estimate.ratio, "low": estimate.low, "high": estimate.high, "verdict": estimate.verdict,
                 "pairs": len(mine)}
    elif len(ours) >= 2 and len(theirs) >= 2:
        estimate = ratio_interval(ours, theirs, higher_is_better=True)
        found = {"ratio": estimate.ratio, "low": estimate.low, "high": estimate.high, "verdict": estimate.verdict}
    elif base.rps > 0:
        found = {"ratio": point.rps / base.rps, "low": None, "high": None, "verdict": "unknown"}
    else:
        return None
    return Versus.from_dict(found, "vs_unlimited")


def _with_vs(point: TunePoint, vs: Versus | None) -> TunePoint:
    """``point`` with ``vs_unlimited`` ``vs``, its document holding it (None too, as a point stores it)."""
    return replace(point, vs_unlimited=vs, stored={**point.stored, "vs_unlimited": None if vs is None else vs.stored})


def _vs(point: TunePoint) -> Versus | None:
    vs = point.vs_unlimited
    return vs if vs is not None and vs.ratio is not None else None


def _measured(point: TunePoint) -> Versus:
    """The ``vs_unlimited`` of a point that has one with a ratio (:func:`_respawned`)."""
    return present(_vs(point))


def _change_with_interval(vs: Versus) -> str:
    text = f"{change_text(present(vs.ratio))} vs unlimited"
    if vs.low is not None and vs.high is not None:
        text += f" ({change_text(vs.low)} to {change_text(vs.high)})"
    return text


def _affordable(vs: Versus, max_loss: float) -> bool:
    """A value is affordable when it is shown to cost at most ``max_loss``: its median within it,
    and the interval's low end within it too; or, when the comparison cannot tell it from
    unlimited ("no clear difference"), an interval no wider than a sweep point may be before it is
    flagged (its low end within :data:`WIDE`). A wider one is too noisy to decide on (:func:`_noisy`)
    and is not affordable. Without an interval (one trial), the median alone."""
    if present(vs.ratio) < 1 - max_loss:
        return False
    if vs.low is None or vs.low >= 1 - max_loss:
        return True
    return vs.verdict == "no clear difference" and vs.low >= 1 - WIDE


def _noisy(vs: Versus, max_loss: float) -> bool:
    """Not affordable only because its interval is too wide to decide: the median within
    ``max_loss``, no clear difference from unlimited, the interval's low end past :data:`WIDE`."""
    return (present(vs.ratio) >= 1 - max_loss and vs.low is not None and vs.low < 1 - WIDE
            and vs.verdict == "no clear difference")


def _cost_text(vs: Versus, max_loss: float) -> str:
    """What a value's measured cost says, against ``max_loss``, in the words its interval allows."""
    if not _affordable(vs, max_loss):
        if _noisy(vs, max_loss):
            return (f"its interval is wider than ±{WIDE:.0%}: too noisy to tell whether it costs more than "
                    f"{share_text(max_loss)}")
        return f"not shown to cost at most {share_text(max_loss)}"
    if vs.low is None or vs.low >= 1 - max_loss:
        return f"within {share_text(max_loss)}"
    return f"no clear difference from unlimited, its median within {share_text(max_loss)}"


def _too_costly(vs: Versus, max_loss: float) -> bool:
    """The whole interval (the median without one) costs more than ``max_loss``."""
    return (vs.high if vs.high is not None else present(vs.ratio)) < 1 - max_loss


@public
@dataclass(frozen=True)
class RespawnModel(Record):
    """A respawn every ``v`` requests costs ``k / v`` of a request's time: the ratio to unlimited is
    1 / (1 + k / v). ``k`` is fitted on ``fitted_on``, the largest value measured clearly slower
    than unlimited; ``agrees`` / ``disagrees``: the measured values whose interval holds (or not)
    the model's prediction. Usable only with ``k`` > 0, no disagreement, and at least one agreeing
    value besides the one it was fitted on (a fit always agrees with its own point)."""

    k: float
    fitted_on: int | None
    agrees: list[int]
    disagrees: list[int]

    @property
    def usable(self) -> bool:
        return self.k > 0 and not self.disagrees and any(v != self.fitted_on for v in self.agrees)

    def ratio(self, value: int) -> float:
        return 1.0 if value <= 0 else 1 / (1 + self.k / value)


def _respawned(points: Sequence[TunePoint]) -> list[TunePoint]:
    return [p for p in points if _value(p) > 0 and present(p.respawns) > 0 and _vs(p) is not None]


@public
def respawn_model(points: Points) -> RespawnModel:
    """The k / v model fitted on the points with ``vs_unlimited`` (:func:`mrpc_losses`) and checked
    against every one that respawned (the prediction within its interval; within ``LOSS_NOISE`` of
    its median when it has none)."""
    respawned = _respawned(tune_points(points, "mrpc"))
    slower = [p for p in respawned if _measured(p).verdict == "slower"
              or (_measured(p).low is None and present(_measured(p).ratio) <= 1 - LOSS_NOISE)]
    if not slower:
        return RespawnModel(k=0.0, fitted_on=None, agrees=[], disagrees=[])
    fit = max(slower, key=_value)
    v = _value(fit)
    k = max(0.0, (1 / present(_measured(fit).ratio) - 1) * v)
    model = RespawnModel(k=k, fitted_on=v, agrees=[], disagrees=[])
    for point in sorted(respawned, key=_value):
        vs = _measured(point)
        predicted = model.ratio(_value(point))
        if vs.low is not None and vs.high is not None:
            ok = vs.low <= predicted <= vs.high
        else:
            ok = abs(predicted - present(vs.ratio)) <= LOSS_NOISE
        (model.agrees if ok else model.disagrees).append(_value(point))
    return model


@public
def respawn_mechanism(kind: str) -> str:
    """What a respawn costs on this server, by its own mechanism (its adapter's ``respawn``)."""
    return (ADAPTERS[kind] if kind in ADAPTERS else Adapter).respawn


@public
@dataclass(frozen=True)
class MaxRequestsChoice(Record):
    """MaxRequestsPerChild, and why (``value`` 0 = unlimited). ``decided_by``: "measured" (a
    measured value), "model" (beyond the largest measured value), "unlimited", "memory" (a
    leak), or "unsharing" (the children's shared memory falling over their life,
    :mod:`pounder.tune._life`; ``unsharing`` holds the judgement whenever the life was measured).
    ``loss``: the chosen value's cost as a fraction of the throughput (measured median, or the
    model's; None when neither says). ``respawn_cost_requests``: the model's ``k`` (0
    without a usable fit)."""

    value: int
    leak: bool
    growth_bytes_per_request: float
    child_start_bytes: int
    child_limit_bytes: int
    memory_limit: int | None
    respawn_cost_requests: float
    loss: float | None
    forced_by_memory: bool
    decided_by: str
    model: RespawnModel
    reasons: list[str] = field(default_factory=list)
    unsharing: Unsharing | None = None


def _model_text(model: RespawnModel) -> str:
    return (f"the model (one respawn costs k requests' worth: ratio = 1 / (1 + k / value); k = {model.k:,.1f}, "
            f"fitted on {model.fitted_on:,}) agrees with every value measured ({_counts(model.agrees)})")


def child_start(measure: Summary, threaded: tuple[int, int] | None = None) -> tuple[int, str]:
    """A child's private memory at its start, and how it is said: the warmed size of the sizes step
    (children with one thread), plus what ``threaded`` (threads, bytes; :meth:`ShapeChoice.thread_memory`)
    says the chosen shape's threads add."""
    start = int(measure["warm"]["max_uss"])
    if threaded is None or threaded[1] <= 0:
        return start, _mib(start)
    return start + threaded[1], (f"{_mib(start + threaded[1])} ({_mib(start)} warmed with one thread, "
                                 f"+{_mib(threaded[1])} with {threaded[0]} threads as the shapes measured)")


def choose_max_requests(points: Points, measure: Summary, memory: MemoryBound, children: int, *,
                        max_loss: float, counts: str = "requests", kind: str = "command",
                        life: Life | None = None, threaded: tuple[int, int] | None = None) -> MaxRequestsChoice:
    """MaxRequestsPerChild from the measured points and their intervals (:func:`_affordable`).

    With no leak: as large as possible, unlimited (the largest value measured and its cost are
    reported). Values that never respawned during their measurement say nothing about the cost and
    are left out. With a leak: the largest value that keeps a child within its share of the budget
    for ``children`` children (``forced_by_memory`` when it costs more than ``max_loss``); its cost
    from the measured points, or from :func:`respawn_model` when the model agrees with every
    measured point and the value is at most a decade beyond the largest measured. The model never
    overrides a measured point. With the children's ``life`` measured and their shared memory
    falling by more than a tenth within the horizon (the leak's value, else the life measured;
    :func:`pounder.tune._life.unsharing`): the requests at which the fitted private memory reaches
    the child's share of the budget, as a leak's limit, costed the same way (with a leak too: the
    life measured the same private memory further, from the child's start; a leak's value stays
    when the fit never reaches the share). ``threaded``: the chosen shape's threads and what they
    add to a worker's start (:func:`child_start`)."""
    grown = growth(measure)
    records = tune_points(points, "mrpc")
    if any(p.vs_unlimited is None and "vs_unlimited" not in p.stored for p in records):
        records = mrpc_losses(records)
    model = respawn_model(records)
    start, start_text = child_start(measure, threaded)
    limit = memory.child_limit(children)
    unit = "requests" if counts == "requests" else "connections (= requests with keep-alive off)"
    respawned = sorted(_respawned(records), key=_value, reverse=True)
    quiet = sorted(_value(p) for p in records if _value(p) > 0 and present(p.respawns) == 0)
    reasons = list(grown.reasons)
    forced = False
    loss: float | None
    if quiet:
        reasons.append(f"{_counts(quiet)} {unit}: no child was replaced during the measurement, so it says nothing "
                       "about the cost of respawning")
    memory_limit, value, decided_by = _leak_limit(grown, start, start_text, limit, children, unit, reasons)
    judged = None
    if life is not None:
        judged = unsharing(life, value if value else max(1, int(life.reached)), limit,
                           "requests" if counts == "requests" else "connections")
        reasons.append(judged.reason)
        if judged.decides and judged.requests is not None:
            leak_value = value
            memory_limit = judged.requests
            value = _round_down(min(judged.requests, MAX_MODELLED))
            reasons.append(f"MaxRequestsPerChild from the unsharing, as from a leak: a child's private memory reaches "
                           f"its share of the budget ({_mib(limit)}, {children_text(children)}) at "
                           f"{judged.requests:,} {unit}, rounded to {value:,}"
                           + (f", instead of the {leak_value:,} of the size measurement's rate: the life followed "
                              "the same private memory from the child's start, further, and fitted its curve"
                              if decided_by == "memory" else ""))
            decided_by = "unsharing"
    if value:
        loss, forced = _costed(value, respawned, model, max_loss, unit, reasons)
    else:
        # no leak (growth that unshares pages shows as USS growth too): as large as possible
        loss = 0.0
        reasons.append("no leak measured: MaxRequestsPerChild as large as possible, unlimited (0); a child replaced "
                       "only costs a fork and a warm-up")
        if respawned:
            largest = respawned[0]
            top_vs = _measured(largest)
            reasons.append(f"{_value(largest):,} {unit}, the largest value measured: "
                           f"{_change_with_interval(top_vs)}: {_cost_text(top_vs, max_loss)}; a larger value "
                           "respawns less often and costs at most as much, if a limit is wanted against slow "
                           "growth a short run cannot see")
    if respawned:
        reasons.append(f"a respawn: {respawn_mechanism(kind)}")
    return MaxRequestsChoice(value=value, leak=grown.leak, growth_bytes_per_request=grown.second,
                             child_start_bytes=start, child_limit_bytes=limit, memory_limit=memory_limit,
                             respawn_cost_requests=model.k if model.usable else 0.0, loss=loss,
                             forced_by_memory=forced, decided_by=decided_by, model=model, reasons=reasons,
                             unsharing=judged)


def _leak_limit(grown: Growth, start: int, start_text: str, limit: int, children: int, unit: str,
                reasons: list[str]) -> tuple[int | None, int, str]:
    """(memory_limit, value, decided_by) for a leak: the requests that keep a child starting at
    ``start`` within ``limit``, rounded down; its reason appended to ``reasons``. (None, 0,
    "unlimited") without a leak."""
    if not grown.leak:
        return None, 0, "unlimited"
    headroom = limit - start
    memory_limit = max(1, int(headroom // grown.second)) if headroom > 0 else 1
    value = _round_down(min(memory_limit, MAX_MODELLED))
    reasons.append(f"a child starts at {start_text} and may reach {_mib(limit)} ({children_text(children)} in the "
                   f"budget): at {_bytes(grown.second)} bytes per request, at most {memory_limit:,} {unit}, "
                   f"rounded to {value:,}")
    return memory_limit, value, "memory"


def _costed(value: int, respawned: Sequence[TunePoint], model: RespawnModel, max_loss: float, unit: str,
            reasons: list[str]) -> tuple[float | None, bool]:
    """What respawning every ``value`` requests (a limit memory sets: a leak's or the unsharing's)
    costs, from the measured points first, then the model (:func:`choose_max_requests`); its reason
    appended to ``reasons``. (loss, forced by memory)."""
    cheaper = [p for p in respawned if _value(p) <= value and _affordable(_measured(p), max_loss)]
    costlier = [p for p in respawned if _value(p) >= value and _too_costly(_measured(p), max_loss)]
    if cheaper:
        ref = max(cheaper, key=_value)
        vs = _measured(ref)
        measured = _value(ref)
        reasons.append(f"respawning every {value:,} {unit} was measured: {_change_with_interval(vs)}"
                       if measured == value else
                       f"respawning every {value:,} {unit} costs at most what {measured:,} cost when measured "
                       f"({_change_with_interval(vs)}): a larger value respawns less often")
        return max(0.0, 1 - present(vs.ratio)), False
    if costlier:
        ref = min(costlier, key=_value)
        vs = _measured(ref)
        reasons.append(f"memory forces it: respawning every {value:,} {unit} costs at least what "
                       f"{_value(ref):,} measured, {_change_with_interval(vs)}, more than "
                       f"{share_text(max_loss)}; fewer children would leave room for a larger limit")
        return 1 - present(vs.ratio), True
    if model.usable and value <= MAX_DECADES * max(_value(p) for p in respawned):
        loss = 1 - model.ratio(value)
        forced = loss > max_loss
        reasons.append(f"{_model_text(model)}: respawning every {value:,} {unit} costs about {share_text(loss)} "
                       "(modelled)" + (f", more than {share_text(max_loss)}: memory forces it" if forced else ""))
        return loss, forced
    reasons.append(f"what respawning every {value:,} {unit} costs was not measured")
    return None, False


def unlimited_only(choice: MaxRequestsChoice, who: str) -> tuple[MaxRequestsChoice, int]:
    """For a server that cannot replace a child after a number of requests: ``choice`` as
    unlimited, and the requests a leaking child may serve (0 without a leak), which a worker
    killer is then given (:meth:`pounder.pool.Adapter.size_limit`)."""
    requests = choice.value if choice.leak else 0
    at = f" at {requests:,} requests" if requests else ""
    return replace(choice, value=0, decided_by="unlimited", forced_by_memory=False, loss=None, reasons=[
        *choice.reasons, f"{who} cannot replace a child after a number of requests: it runs unlimited (see the "
        f"advice for a worker killer{at})"]), requests
