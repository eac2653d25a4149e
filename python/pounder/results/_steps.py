"""The figures of a scenario's steps (``pounder bench --scenario``): :class:`StepStats`, read from
the engine's (or a saved result's) ``steps``, and their table in the text report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pounder._errors import public
from pounder.results._measured import READ, Histogram


@public
@dataclass(frozen=True)
class StepStats:
    """One step of a scenario, over all its virtual users: ``complete`` responses (whatever their
    status), ``failed`` requests (no whole response), of the complete ones ``unexpected_status``
    (not in the step's ``expect``) and ``capture_missed`` (a capture found nothing); each of these
    three ends the user's session, which starts over from the login. ``latency``: as the run's
    corrected latency, of this step's complete responses. ``capture_unsafe``: of
    ``capture_missed``, those where a capture matched, but a value holding a line break or NUL,
    which its variable would have carried raw into a header (0 in a result from before it)."""

    name: str
    part: Literal["login", "loop"]
    complete: int
    failed: int
    unexpected_status: int
    capture_missed: int
    latency: Histogram
    capture_unsafe: int = 0

    @property
    def requests(self) -> int:
        """Requests sent: complete + failed."""
        return self.complete + self.failed


def _step(value: object, key: str) -> StepStats:
    step: StepStats = READ.record(StepStats, value, key, part=READ.choice("login", "loop"), latency=Histogram.from_dict,
                                  capture_unsafe=_unsafe)  # fmt: skip
    return step


def _unsafe(value: object, key: str) -> int:
    """``capture_unsafe``: absent (a result from before it) is 0."""
    return 0 if value is None else int(READ.by_type("int", "capture_unsafe")(value, key))


UNSAFE_NOTE = "matched a value holding a line break or NUL, which a header cannot carry"
"""Why a capture that matched counts as missed (``capture_unsafe``)."""


def read_steps(value: object, key: str) -> tuple[StepStats, ...] | None:
    """The ``steps`` of a result (None when it has none: no scenario ran)."""
    if value is None:
        return None
    steps: tuple[StepStats, ...] = tuple(READ.list_of(_step)(value, key))
    return steps


@public
def scenario_failure(steps: tuple[StepStats, ...] | None) -> str | None:
    """None unless the result's scenario got nowhere: no loop step completed with an expected
    status and its captures found. Then the one line saying so, with the counts that ended the
    sessions (``bench`` exits 1 with it, after the report and the files, as when no request
    succeeded): ``"no virtual user got past the login steps: log in: 12 unexpected status"``."""
    if steps is None:
        return None
    loop = [step for step in steps if step.part == "loop"]
    if any(step.complete - step.unexpected_status - step.capture_missed > 0 for step in loop):
        return None
    ended = []
    for step in steps:
        missed = "no capture" + (f" ({step.capture_unsafe:,} {UNSAFE_NOTE})" if step.capture_unsafe else "")
        counts = ((step.failed, "failed"), (step.unexpected_status, "unexpected status"),
                  (step.capture_missed, missed))  # fmt: skip
        said = ", ".join(f"{count:,} {what}" for count, what in counts if count)
        if said:
            ended.append(f"{step.name}: {said}")
    head = (
        "no loop step succeeded" if any(step.requests for step in loop) else "no virtual user got past the login steps"
    )
    return f"{head}: {'; '.join(ended) if ended else 'the run ended first (give it more requests or time)'}"


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
