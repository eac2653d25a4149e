"""How a tuning run writes its figures (the tables and the reasons print them the same way)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder._errors import public
from pounder._units import children_text, mib

Summary = Mapping[str, Any]


@public
def rps_text(value: float) -> str:
    """Requests per second: ``1,089``."""
    return f"{value:,.0f}"


@public
def ms_text(value: float) -> str:
    """Milliseconds: ``12.5``."""
    return f"{value:,.1f}"


@public
def share_text(value: float) -> str:
    """A fraction as a percentage: ``4.5%``."""
    return f"{value:.1%}"


@public
def change_text(ratio: float) -> str:
    """A ratio to a baseline as a signed change: 1.045 -> ``+4.5%``, 0.8 -> ``-20.0%``."""
    return f"{ratio - 1:+.1%}"


@public
def cores_text(value: float) -> str:
    """Cores busy: ``1.6``."""
    return f"{value:.1f}"


def _bytes(value: float) -> str:
    return f"{value:,.0f}"


def _mib(value: float) -> str:
    return f"{mib(value)} MiB"


def _low(point: Summary) -> float | None:
    value = point.get("rps_low")
    return None if value is None else float(value)


def _high(point: Summary) -> float | None:
    value = point.get("rps_high")
    return None if value is None else float(value)


@public
def rate_with_interval(point: Summary) -> str:
    """``1,089 req/s (1,010-1,150)``: a point's median throughput and its 95 % interval (the
    median alone when there is no interval)."""
    low, high = _low(point), _high(point)
    text = f"{rps_text(float(point['rps']))} req/s"
    return text if low is None or high is None else f"{text} ({rps_text(low)}-{rps_text(high)})"


def _serve(count: int) -> str:
    """``count`` children and the verb that agrees: "1 child serves", "2 children serve"."""
    return f"{children_text(count)} {'serves' if count == 1 else 'serve'}"


def _counts(values: Sequence[int]) -> str:
    return ", ".join(f"{v:,}" for v in values)


