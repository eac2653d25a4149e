"""Pass/fail gates (``--fail-if EXPR``): a condition on a result's figures that fails the run.

An expression is ``METRIC OP VALUE`` and says when to FAIL: ``p99>300ms`` fails when the p99
latency is above 300 ms. Operators ``>``, ``>=``, ``<``, ``<=``. The metrics of a bench
(:data:`BENCH_METRICS`):

* ``p50`` ... ``p99.9``, ``max``, ``mean``: the corrected latency (from each request's intended
  send time; in closed loop the same as from the actual send), the one the report shows first.
  The value needs a unit (``300ms``, ``1.5s``, ``500us``; the duration rule of :mod:`pounder._units`).
* ``errors``: failed requests (refused, reset, timed out, ...): a count (``errors>0``) or, with
  ``%``, a share of the requests attempted (``errors>1%``).
* ``non2xx``: complete responses whose status is not 2xx: a count, or with ``%`` a share of the
  complete responses.
* ``rps``: completed requests per second of the measured phase (``rps<500``, ``2.5k``, ``500/s``).
* ``late``: open loop only: requests not sent on time, those that started more than 1 ms after
  their scheduled time plus those never sent for want of a free connection (``requests.unsent``);
  a count, or with ``%`` a share of the requests scheduled. Refused up front for a closed-loop
  load (:func:`check_gates`); on a closed-loop result it is ``unmeasurable``.

A gate that tells nothing is refused when it is read (:func:`parse_gate`): one that can never fail
or always fails over every value its metric can take (every figure is 0 or more, a share at most
100 %: ``errors>100%``, ``errors<=100%``, ``rps>=0``, ``p99<0ms``); ``slower>N%`` with N of 100
or more in closed loop is refused by :func:`check_gates`, which knows the load.

A gate that cannot be measured (a latency with no request completed, ``late`` in closed loop, a
count or share whose whole is 0: ``non2xx`` with no response, ``errors`` with no request sent,
``late`` with none scheduled) is ``unmeasurable``, which fails like ``fail``: a gate never passes
silently, and ``non2xx>0`` does not pass a run that got no answer at all.

:func:`evaluate_gates` works on any :class:`~pounder.BenchResult`, a fresh one or one read back
with :func:`~pounder.load_result`. ``pounder.compare`` adds the ratio gate ``slower`` (the kind
``slowdown`` here) and evaluates gates on a comparison. A bench with a saved baseline
(``--baseline``, :mod:`pounder.results._baseline`) takes :data:`BASELINE_METRICS`: the bench's and
the ratio gates ``slower`` (on the figure the verdict is about, as in compare) and ``p99-slower``,
evaluated on the result's ``baseline`` section with compare's rule (:func:`slowdown_verdict`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from pounder._errors import UsageError, public
from pounder._junit import Case
from pounder._records import Reader
from pounder._table import times
from pounder._units import parse_count, parse_duration, parse_rate, plain
from pounder.results._measured import MalformedResultError

if TYPE_CHECKING:
    from pounder.results._result import BenchResult
    from pounder.results._run_options import LoadModel

Operator = Literal[">", ">=", "<", "<="]
GateVerdict = Literal["pass", "fail", "unmeasurable"]
Unit = Literal["us", "percent", "count", "req/s"]
Kind = Literal["latency", "share", "rate", "slowdown"]

OPERATORS: tuple[Operator, ...] = (">=", "<=", ">", "<")
_LATENCY: dict[str, str] = {f"p{p}": p for p in ("50", "66", "75", "80", "90", "95", "98", "99", "99.9")}
BENCH_METRICS: Mapping[str, Kind] = {
    **dict.fromkeys(_LATENCY, "latency"), "max": "latency", "mean": "latency",
    "errors": "share", "non2xx": "share", "rps": "rate", "late": "share",
}  # fmt: skip
"""The metrics a bench result can be gated on, and what kind of value each takes."""
BASELINE_METRICS: Mapping[str, Kind] = {**BENCH_METRICS, "slower": "slowdown", "p99-slower": "slowdown"}
"""A bench compared with a saved baseline (``--baseline``): the bench's metrics and the ratio gates
``slower`` (requests/s in closed loop, p99 in open loop) and ``p99-slower``."""
EXAMPLES = "p99>300ms, errors>1%, non2xx>0 or rps<500"
_EXPRESSION = re.compile(r"\s*(?P<metric>[A-Za-z][A-Za-z0-9.]*(?:-[A-Za-z]+)?)\s*(?P<op>>=|<=|>|<|==|=|!=)"
                         r"\s*(?P<value>.*?)\s*")
_PERCENT = re.compile(r"(?P<num>\d+(?:\.\d*)?|\.\d+)\s*%")
_READ = Reader(MalformedResultError)


@public
@dataclass(frozen=True)
class Gate:
    """One ``--fail-if`` expression, read: it fails when ``measured OPERATOR threshold``.

    ``threshold`` is in ``unit``: ``us`` (latency, microseconds), ``percent`` (5.0 for 5 %),
    ``count`` or ``req/s``; ``text`` is the expression as written."""

    metric: str
    operator: Operator
    threshold: float
    unit: Unit
    text: str

    def fails(self, measured: float) -> bool:
        """Whether ``measured`` (in :attr:`unit`) fails the gate."""
        return {">": measured > self.threshold, ">=": measured >= self.threshold,
                "<": measured < self.threshold, "<=": measured <= self.threshold}[self.operator]  # fmt: skip

    def shown(self, value: float) -> str:
        """``value`` in the gate's unit as the report shows it: "20.35 ms" (:func:`format_ms`),
        "0.5%", "1,204", "496.99 req/s"."""
        if self.unit == "us":
            from pounder.results._report import format_ms

            return f"{format_ms(value)} ms"
        if self.unit == "percent":
            return f"{plain(value, 4)}%"
        if self.unit == "count":
            return plain(int(value))
        return f"{value:.2f} req/s"

    def shown_threshold(self) -> str:
        """The threshold as written, in its unit: "300 ms", "1%", "500 req/s"."""
        if self.unit == "us":
            return f"{plain(self.threshold / 1000)} ms"
        return f"{plain(self.threshold)} req/s" if self.unit == "req/s" else self.shown(self.threshold)

    def to_dict(self) -> dict[str, Any]:
        return {"expression": self.text, "metric": self.metric, "operator": self.operator,
                "threshold": self.threshold, "unit": self.unit}  # fmt: skip


@public
@dataclass(frozen=True)
class GateResult:
    """A gate evaluated: ``measured`` in the gate's unit (None when ``unmeasurable``), shown as
    ``measured_text``; ``verdict`` "pass", "fail" or "unmeasurable" (which fails too); ``why`` a
    few words on the verdict; ``subject`` what was measured when a result has several (a
    comparison's variant, "B vs A"), else None."""

    gate: Gate
    measured: float | None
    measured_text: str
    verdict: GateVerdict
    why: str
    subject: str | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def named(self) -> str:
        """The gate and what it was evaluated on: ``slower>5% for B vs A``, ``p99>300ms``."""
        return self.gate.text + (f" for {self.subject}" if self.subject else "")

    def line(self) -> str:
        """The gate, the measured figure and why in one phrase, as the line of failed gates says it:
        ``p99>300ms: 412.5 ms, above 300 ms``."""
        return f"{self.named}: {self.measured_text}{', ' + self.why if self.why else ''}"

    def to_dict(self) -> dict[str, Any]:
        return {**self.gate.to_dict(), "subject": self.subject, "measured": self.measured,
                "measured_text": self.measured_text, "verdict": self.verdict, "why": self.why}  # fmt: skip

    @classmethod
    def from_dict(cls, value: object, key: str) -> GateResult:
        data = _READ.as_dict(value, key)

        def text(name: str) -> str:
            return _READ.as_str(_READ.get(data, name), f"{key}.{name}")

        operator, unit, verdict = text("operator"), text("unit"), text("verdict")
        for name, given, allowed in (("operator", operator, OPERATORS), ("unit", unit, ("us", "percent", "count",
                                     "req/s")), ("verdict", verdict, ("pass", "fail", "unmeasurable"))):  # fmt: skip
            if given not in allowed:
                raise MalformedResultError(f"{key}.{name} is {given!r}, expected one of {', '.join(allowed)}")
        measured = _READ.get(data, "measured")
        subject = _READ.get(data, "subject")
        threshold = _READ.as_signed_float(_READ.get(data, "threshold"), f"{key}.threshold")
        gate = Gate(text("metric"), cast(Operator, operator), threshold, cast(Unit, unit), text("expression"))
        return cls(
            gate,
            None if measured is None else _READ.as_signed_float(measured, f"{key}.measured"),
            text("measured_text"),
            cast(GateVerdict, verdict),
            text("why"),
            None if subject is None else _READ.as_str(subject, f"{key}.subject"),
        )


@public
@dataclass(frozen=True)
class GateReport:
    """Every gate of a run evaluated, in the order given."""

    results: tuple[GateResult, ...]

    @property
    def failed(self) -> tuple[GateResult, ...]:
        """The gates that did not pass (``fail`` or ``unmeasurable``)."""
        return tuple(result for result in self.results if not result.passed)

    @property
    def passed(self) -> bool:
        """Whether every gate passed (True with no gate)."""
        return not self.failed

    def to_list(self) -> list[dict[str, Any]]:
        """The ``"gates"`` section of a result's JSON (docs/reference/results.md)."""
        return [result.to_dict() for result in self.results]

    @classmethod
    def from_list(cls, value: object, key: str = "gates") -> GateReport:
        """Read :meth:`to_list`'s output; :class:`~pounder.results.MalformedResultError` names the key."""
        items = _READ.as_list(value, key)
        return cls(tuple(GateResult.from_dict(item, f"{key}[{index}]") for index, item in enumerate(items)))

    def junit_cases(self, classname: str, prefix: str = "") -> list[Case]:
        """One JUnit case per gate (:mod:`pounder._junit`), named as the line of failed gates names
        it (``p99>300ms``, ``slower>5% for B vs A``; after ``prefix``): a gate that did not pass is a
        ``<failure>`` whose message is that line's phrase (gate, measured figure, limit:
        :meth:`GateResult.line`), of ``type`` its verdict (``fail`` or ``unmeasurable``); a passed
        one says its figure in ``<system-out>``."""
        return [Case(prefix + result.named, classname, output=result.line()) if result.passed else
                Case(prefix + result.named, classname, 0.0, "failure", result.line(), result.verdict)
                for result in self.results]  # fmt: skip

    def render(self) -> list[str]:
        """The table printed after a report: gate, measured, verdict (with the subject first when
        there is one); no line without a gate."""
        if not self.results:
            return []
        subjects = any(result.subject is not None for result in self.results)
        rows = [(result.subject or "" if subjects else None, result.gate.text, result.measured_text,
                 result.verdict.upper() if not result.passed else "pass", result.why)
                for result in self.results]  # fmt: skip
        head = ("", "gate", "measured", "verdict", "")
        widths = [max(len(row[i] or "") for row in [head, *rows]) for i in range(4)]
        failed = len(self.failed)
        title = f"Gates (--fail-if): {failed} of {len(self.results)} failed" if failed else \
            f"Gates (--fail-if): all {len(self.results)} passed"  # fmt: skip
        lines = [title]
        for row in [head, *rows]:
            cells = [f"{row[i] or '':<{widths[i]}}" for i in range(4) if i or subjects]
            why = f"  ({row[4]})" if row[4] and row is not head else ""
            lines.append(("  " + "  ".join(cells)).rstrip() + why)
        return lines

    def failure_line(self) -> str | None:
        """One line naming the gates that failed and what was measured; None when all passed."""
        failed = self.failed
        if not failed:
            return None
        return f"{len(failed)} of {len(self.results)} gates failed: " + "; ".join(result.line() for result in failed)


# ---------------------------------------------------------------------------------------------
# Parsing


def _usage(text: str, what: str, reason: str) -> UsageError:
    return UsageError(f"invalid {what} {text!r}: {reason}")


def _share(value: str) -> tuple[float, Unit] | None:
    """``1%`` → (1.0, percent), ``10`` / ``1k`` → (10, count); None when neither (any percentage
    is read: :func:`_pointless` says which make no gate)."""
    percent = _PERCENT.fullmatch(value)
    if percent is not None:
        return float(percent["num"]), "percent"
    try:
        return float(parse_count(value, "count")), "count"
    except UsageError:
        return None


_WHAT = {"latency": "a latency", "rate": "a rate", "share": "a count", "slowdown": "a slowdown"}


def _pointless(kind: Kind, metric: str, op: str, value: str, threshold: float, unit: Unit) -> str | None:
    """Why a gate can never fail or always fails over every value its metric can take (every
    figure is 0 or more; a share is at most 100 %), else None: such a gate tells nothing.
    ``slower``'s upper bound depends on the load (:func:`check_gates`)."""
    what = "a share" if unit == "percent" else _WHAT[kind]
    shown = value.replace(" ", "")
    if kind != "slowdown" and op == ">=" and threshold == 0:
        hint = f"; to fail on any, use {metric}>0" if kind == "share" else ""
        return f"{metric} is never below 0, so {metric}>={shown} always fails{hint}"
    if kind != "slowdown" and op == "<" and threshold == 0:
        return f"{metric} is never below 0 ({what}), so {metric}<{shown} can never fail"
    if unit == "percent" and kind != "slowdown":
        if threshold > 100 or (threshold == 100 and op == ">"):
            return (f"{metric} as a percentage is a share, from 0% to 100%, so {metric}{op}{shown} can never "
                    "fail; give a percentage below 100%")  # fmt: skip
        if op == "<=" and threshold == 100:
            return f"{metric} is a share, at most 100%, so {metric}<=100% always fails"
    return None


def _threshold(kind: Kind, metric: str, value: str) -> tuple[float, Unit] | str:
    """The threshold of a ``kind`` of metric in its unit, or why ``value`` is not one."""
    if not value:
        return f"no value after the operator, e.g. {metric}>{ {'latency': '300ms', 'rate': '500'}.get(kind, '5%')}"
    if kind == "latency":
        if value[-1].isdigit() or value.endswith("."):
            return f"give {metric} a unit, e.g. {metric}>300ms or {metric}>1.5s"
        try:
            return parse_duration(value, metric) * 1e6, "us"
        except UsageError:
            return f"{value!r} is not a duration (500us, 300ms, 1.5s, 2m)"
    if kind == "rate":
        try:
            return parse_rate(value, metric), "req/s"
        except UsageError:
            return f"{value!r} is not a rate (500, 2.5k or 500/s requests per second)"
    share = _share(value)
    if kind == "slowdown":
        if share is None or share[1] != "percent":
            return f"{metric} takes a percentage, e.g. {metric}>5%"
        return share
    if share is None:
        return f"{value!r} is neither a count (10, 1k) nor a percentage from 0% to 100% (1%, 0.5%)"
    return share


SLOWER_CLOSED_MAX = 100.0
"""In closed loop ``slower`` is how much lower the variant's requests/s is than the baseline's, as
a percentage: below 100 % (100 % lower would be no request answered, which a counted trial never
is), so ``slower>N%`` takes N below 100. In open loop it is how much higher the p99 latency is:
any percentage (3 × the baseline's p99 is 200 % slower)."""


@public
def parse_gate(text: str, what: str = "--fail-if", metrics: Mapping[str, Kind] = BENCH_METRICS) -> Gate:
    """One expression (``p99>300ms``) as a :class:`Gate`; :class:`~pounder.UsageError` with one
    line naming the expression and what is allowed. ``metrics``: the metrics taken (default a
    bench's, :data:`BENCH_METRICS`) and their kinds."""
    if not isinstance(text, str):
        raise UsageError(f"{what} expressions must be text such as 'p99>300ms', got {text!r}")
    names = ", ".join(metrics)
    match = _EXPRESSION.fullmatch(text)
    if match is None:
        raise _usage(
            text,
            what,
            f"expected METRIC OP VALUE, e.g. {EXAMPLES} (metrics: {names}; operators: "
            "> >= < <=; the expression says when to fail)",
        )
    metric, op, value = match["metric"].lower(), match["op"], match["value"]
    if metric not in metrics:
        ratio = (" (a ratio gate of pounder compare, pounder run and pounder bench --baseline)"
                 if metric in ("slower", "p99-slower") else "")
        raise _usage(text, what, f"unknown metric {match['metric']!r}{ratio} (one of: {names})")
    if op not in OPERATORS:
        raise _usage(text, what, f"unknown operator {op!r} (one of: > >= < <=; the expression says when to fail)")
    kind = metrics[metric]
    if kind == "slowdown" and op not in (">", ">="):
        raise _usage(text, what, f"{metric} takes > or >= (fail when slower by more than), e.g. {metric}>5%")
    threshold = _threshold(kind, metric, value)
    if isinstance(threshold, str):
        raise _usage(text, what, threshold)
    pointless = _pointless(kind, metric, op, value, *threshold)
    if pointless is not None:
        raise _usage(text, what, pointless)
    return Gate(metric, cast(Operator, op), threshold[0], threshold[1], text.strip())


@public
def parse_gates(exprs: Iterable[str] | str | None, what: str = "--fail-if",
                metrics: Mapping[str, Kind] = BENCH_METRICS) -> tuple[Gate, ...]:  # fmt: skip
    """Every expression of ``exprs`` (one text or several; None: none) as :class:`Gate` objects,
    in order (:func:`parse_gate`)."""
    if exprs is None:
        return ()
    items: Sequence[str] = (exprs,) if isinstance(exprs, str) else tuple(exprs)
    return tuple(parse_gate(item, what, metrics) for item in items)


@public
def check_gates(gates: Iterable[Gate], load: LoadModel, what: str = "--fail-if") -> None:
    """Refuse, before anything is sent, a gate that ``load`` cannot measure (``late`` in closed
    loop) or that can never fail on it (``slower>N%`` with N of 100 or more in closed loop, where
    the slowdown of requests/s is below 100 %: :data:`SLOWER_CLOSED_MAX`)."""
    for gate in gates:
        if gate.unit == "percent" and gate.metric == "slower" and not load.is_open and \
                gate.threshold >= SLOWER_CLOSED_MAX:  # fmt: skip
            raise UsageError(
                f"invalid {what} {gate.text!r}: in closed loop slower is how much lower the variant's requests/s "
                f"is than the baseline's, from 0% to under {SLOWER_CLOSED_MAX:g}% (100% lower would be no answer "
                "at all), so this gate can never fail; give a percentage below 100% (in open loop, --rate, slower "
                "is how much higher the p99 latency is, and may exceed 100%)"
            )
        if gate.metric == "late" and not load.is_open:
            raise UsageError(
                f"invalid {what} {gate.text!r}: late is measured in open loop only (--rate, --stages); "
                "this load is closed loop, where no request has a scheduled time"
            )


# ---------------------------------------------------------------------------------------------
# Evaluation


def _share_of(gate: Gate, count: int, total: int, none: str) -> tuple[float | None, str]:
    """A count (or its share of ``total``); with ``total`` 0 nothing was measured: unmeasurable
    for the reason ``none``, also for a count (``non2xx>0`` must not pass a run with no response)."""
    if total == 0:
        return None, none
    return (float(count), "") if gate.unit == "count" else (count * 100 / total, "")


def _measure(gate: Gate, result: BenchResult) -> tuple[float | None, str]:
    """The figure ``gate`` is about (None and why when there is none)."""
    requests, corrected = result.requests, result.latency.corrected
    attempted = requests.complete + requests.failed
    if BENCH_METRICS.get(gate.metric) == "latency":
        if corrected.count == 0:
            return None, "no request completed" if attempted else "no request was sent"
        if gate.metric == "max":
            return float(corrected.max_us), ""
        if gate.metric == "mean":
            return corrected.mean_us, ""
        return float(corrected.percentiles[_LATENCY[gate.metric]]), ""
    if gate.metric == "errors":
        return _share_of(gate, requests.failed, attempted, "no request was sent")
    if gate.metric == "non2xx":
        none = "no response" if attempted else "no request was sent"
        return _share_of(gate, requests.non_2xx, requests.complete, none)
    if gate.metric == "rps":
        return result.derived.requests_per_s, ""
    if gate.metric == "late":
        if not result.options.load.is_open:
            return None, "closed loop: no request has a scheduled time"
        late = requests.late + requests.unsent
        return _share_of(gate, late, attempted + requests.unsent, "no request was scheduled")
    return None, f"a bench result has no {gate.metric}"


@public
def verdict_of(gate: Gate, measured: float | None, why: str, subject: str | None = None,
               shown: str | None = None) -> GateResult:  # fmt: skip
    """The :class:`GateResult` of ``gate`` given the figure ``measured`` (None: ``unmeasurable``
    for the reason ``why``); ``shown``: the figure as text when it is not the gate's plain unit."""
    if measured is None:
        return GateResult(gate, None, shown or "-", "unmeasurable", why, subject)
    text = shown or gate.shown(measured)
    if gate.fails(measured):
        words = {">": "above", ">=": "at or above", "<": "below", "<=": "at or below"}[gate.operator]
        return GateResult(gate, measured, text, "fail", why or f"{words} {gate.shown_threshold()}", subject)
    return GateResult(gate, measured, text, "pass", why, subject)


@public
def evaluate_gates(gates: Iterable[Gate], result: BenchResult) -> GateReport:
    """Each gate on ``result`` (a fresh one or one read back from JSON), in order."""
    from pounder.results._result import BenchResult

    if not isinstance(result, BenchResult):
        raise UsageError(f"evaluate_gates: result must be a BenchResult, not {type(result).__name__}")
    checked = tuple(gates)
    if not all(isinstance(gate, Gate) for gate in checked):
        raise UsageError("evaluate_gates: gates must be Gate objects (see parse_gates)")
    return GateReport(tuple(_baseline_gate(gate, result) if BASELINE_METRICS.get(gate.metric) == "slowdown"
                            else verdict_of(gate, *_measure(gate, result)) for gate in checked))


@public
def slowdown_verdict(gate: Gate, ratio: float | None, low: float | None, high: float | None, *, latency: bool,
                     figure: str, subject: str | None, shown_ratio: Callable[[float], str],
                     why_none: str) -> GateResult:  # fmt: skip
    """A ratio gate (``slower>N%``) on new/old ``ratio`` and its 95 % interval ``low``-``high``
    (of a latency when ``latency``: higher is slower; else of a rate: lower is slower): it fails
    only when the WHOLE interval is more than N % slower, i.e. on the smallest slowdown the
    interval allows, ``(low - 1) * 100`` for a latency, ``(1 - high) * 100`` for a rate (the rule
    of ``pounder compare`` and of a baseline); with no interval it is ``unmeasurable`` for the
    reason ``why_none``. ``figure`` names what the ratio is of ("p99", "requests/s")."""
    if ratio is None or low is None or high is None:
        return verdict_of(gate, None, why_none, subject, f"{figure} ratio unknown")
    least = (low - 1) * 100 if latency else (1 - high) * 100
    shown = f"{figure} {shown_ratio(ratio)} ({shown_ratio(low)}-{shown_ratio(high)})"
    if gate.fails(least):
        why = f"the whole 95 % interval is {'at least' if gate.operator == '>=' else 'more than'} " \
              f"{gate.shown_threshold()} slower"  # fmt: skip
        return verdict_of(gate, least, why, subject, shown)
    return verdict_of(gate, least, "", subject, shown)


def _baseline_gate(gate: Gate, result: BenchResult) -> GateResult:
    """``slower`` or ``p99-slower`` on the result's ``baseline`` section (unmeasurable without one)."""
    baseline = result.baseline
    if baseline is None:
        return verdict_of(gate, None, "no baseline: give --baseline OLD.json")
    from pounder.results._baseline import MIN_SECONDS

    figure = baseline.figure("p99_us" if gate.metric == "p99-slower" else baseline.by)
    why = (f"{figure.new_samples} and {figure.old_samples} samples (full seconds) with a {figure.label}: "
           f"the interval needs {MIN_SECONDS} on each side" if min(figure.new_samples, figure.old_samples) < MIN_SECONDS
           else f"no interval: a baseline sample of 0 {figure.label}")  # fmt: skip
    return slowdown_verdict(gate, figure.ratio, figure.low, figure.high, latency=not figure.higher_is_better,
                            figure=figure.label, subject=f"new vs {baseline.file}", shown_ratio=times,
                            why_none=why)  # fmt: skip
