"""Where a long tuning run is: the step (3 of 6), the point and trial, and the time left estimated
from the points still planned and the time the points measured so far took."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

STEP_NAMES = {
    "sizes": "child sizes",
    "life": "a child's life",
    "children": "children sweep",
    "pools": "pools at the offered load",
    "max-requests": "MaxRequestsPerChild",
    "spare": "spare servers",
    "confirm": "confirmation",
}


def minutes_text(seconds: float) -> str:
    """``about 4 min`` / ``under a minute``."""
    if seconds < 60:
        return "under a minute"
    return f"about {round(seconds / 60):,} min"


class StepProgress:
    """The steps of a run (``steps``, in order) and how many points each still has to measure:
    :meth:`expect` sets a step's count when it is known (a first guess is given up front),
    :meth:`measured` counts one off with the seconds it took. Points read back from the results
    directory cost nothing and are not counted."""

    def __init__(self, steps: Sequence[str], guesses: dict[str, int]) -> None:
        self.steps = list(steps)
        self._left = {step: max(0, guesses.get(step, 0)) for step in self.steps}
        self._took: list[float] = []
        self._step = self.steps[0] if self.steps else ""
        self._started: float | None = None

    def expect(self, step: str, points: int) -> None:
        """``step`` will measure about ``points`` more points (stored ones are skipped later)."""
        self._left[step] = max(0, points)

    def start(self, step: str) -> None:
        """A point of ``step`` is being measured now."""
        self._step = step
        self._started = time.monotonic()

    def measured(self, step: str) -> None:
        """A point of ``step`` was measured."""
        if self._started is not None:
            self._took.append(time.monotonic() - self._started)
            self._started = None
        self._left[step] = max(0, self._left.get(step, 1) - 1)

    def skipped(self, step: str) -> None:
        """A point of ``step`` was read back, not measured."""
        self._left[step] = max(0, self._left.get(step, 1) - 1)

    def left_s(self) -> float | None:
        """Seconds left: the points still planned (this step's and the later ones') times the
        median time of a point measured so far; None before the first point."""
        if not self._took:
            return None
        index = self.steps.index(self._step) if self._step in self.steps else 0
        points = sum(self._left[step] for step in self.steps[index:])
        return points * statistics.median(self._took)

    def where(self, step: str) -> str:
        """``step 3 of 6 (pools at the offered load)``, and the time left when it can be told."""
        index = self.steps.index(step) + 1 if step in self.steps else 0
        text = f"step {index} of {len(self.steps)} ({STEP_NAMES.get(step, step)})"
        left = self.left_s()
        return text if left is None else f"{text}, {minutes_text(left)} left"
