"""How a tuning run writes its figures (the tables and the reasons print them the same way)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pounder._errors import public
from pounder._tune_point import TunePoint
from pounder._units import children_text, mib

Summary = Mapping[str, Any]
"""A document as stored: the sizes measurement, a trial's summary, a confirmation as it is built."""


def _written(spec: str) -> Callable[[float], str]:
    """A figure as :func:`format` writes it with ``spec``."""
    return lambda value: format(value, spec)


rps_text = _written(",.0f")
"""Requests per second: ``1,089``."""
ms_text = _written(",.1f")
"""Milliseconds: ``12.5``."""
share_text = _written(".1%")
"""A fraction as a percentage: ``4.5%``."""
cores_text = _written(".1f")
"""Cores busy: ``1.6``."""
_bytes = _written(",.0f")
"""Bytes: ``4,096``."""


@public
def change_text(ratio: float) -> str:
    """A ratio to a baseline as a signed change: 1.045 -> ``+4.5%``, 0.8 -> ``-20.0%``."""
    return f"{ratio - 1:+.1%}"


def _mib(value: float) -> str:
    return f"{mib(value)} MiB"


@public
def rate_with_interval(point: TunePoint) -> str:
    """``1,089 req/s (1,010-1,150)``: a point's median throughput and its 95 % interval (the
    median alone when there is no interval)."""
    rps, low, high = point.rps, point.rps_low, point.rps_high
    text = f"{rps_text(rps)} req/s"
    return text if low is None or high is None else f"{text} ({rps_text(low)}-{rps_text(high)})"


def _serve(count: int) -> str:
    """``count`` children and the verb that agrees: "1 child serves", "2 children serve"."""
    return f"{children_text(count)} {'serves' if count == 1 else 'serve'}"


def _counts(values: Sequence[int]) -> str:
    return ", ".join(f"{v:,}" for v in values)


