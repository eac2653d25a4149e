"""The figures of a scenario's steps (``pounder bench --scenario``): :class:`StepStats`, read from
the engine's (or a saved result's) ``steps``, and their table in the text report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pounder._errors import public
from pounder.load._measured import READ, Histogram


@public
@dataclass(frozen=True)
class StepStats:
    """One step of a scenario, over all its virtual users: ``complete`` responses (whatever their
    status), ``failed`` requests (no whole response), of the complete ones ``unexpected_status``
    (not in the step's ``expect``) and ``capture_missed`` (a capture found nothing); each of these
    three ends the user's session, which starts over from the login. ``latency``: as the run's
    corrected latency, of this step's complete responses."""

    name: str
    part: Literal["login", "loop"]
    complete: int
    failed: int
    unexpected_status: int
    capture_missed: int
    latency: Histogram

    @property
    def requests(self) -> int:
        """Requests sent: complete + failed."""
        return self.complete + self.failed


def _step(value: object, key: str) -> StepStats:
    step: StepStats = READ.record(StepStats, value, key, part=READ.choice("login", "loop"), latency=Histogram.from_dict)
    return step


def read_steps(value: object, key: str) -> tuple[StepStats, ...] | None:
    """The ``steps`` of a result (None when it has none: no scenario ran)."""
    if value is None:
        return None
    steps: tuple[StepStats, ...] = tuple(READ.list_of(_step)(value, key))
    return steps


STEP_COLUMNS = ("part", "requests", "failed", "unexpected", "no capture", "p50 ms", "p90 ms", "p99 ms")


def step_rows(steps: tuple[StepStats, ...], format_ms: Callable[[float], str]) -> list[tuple[str, tuple[str, ...]]]:
    """Each step's name and cells under :data:`STEP_COLUMNS` (``format_ms``: µs → ms text)."""
    rows = []
    for step in steps:
        latency = step.latency
        times = (tuple(format_ms(latency.percentiles[p]) for p in ("50", "90", "99")) if latency.count
                 else ("-", "-", "-"))  # fmt: skip
        rows.append(
            (
                step.name,
                (
                    step.part,
                    f"{step.requests:,}",
                    f"{step.failed:,}",
                    f"{step.unexpected_status:,}",
                    f"{step.capture_missed:,}",
                    *times,
                ),
            )
        )
    return rows
