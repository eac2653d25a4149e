"""Live progress of a bench on stderr (only when stderr is a terminal)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pounder._units import plain
from pounder.load import Progress, ProgressCallback


def _status(progress: Progress) -> str:
    planned = f"/{plain(progress.planned_s)}" if progress.planned_s is not None and progress.phase == "measure" else ""
    parts = [
        f"{progress.complete:,} done",
        f"{progress.failed:,} failed",
        f"{progress.rate:,.0f} req/s",
        f"{progress.elapsed_s:.1f}{planned} s",
    ]
    if progress.interrupted:
        parts.append("interrupted, finishing")
    return "  ".join(parts)


def _fraction(progress: Progress) -> float | None:
    """How far the measured phase is, 0..1, or None when unknown."""
    if progress.phase != "measure":
        return None
    fractions = []
    if progress.planned_s:
        fractions.append(progress.elapsed_s / progress.planned_s)
    if progress.planned_requests:
        fractions.append((progress.complete + progress.failed) / progress.planned_requests)
    return min(1.0, max(fractions)) if fractions else None


@contextmanager
def live_progress(enabled: bool, server_line: Callable[[], str | None] | None = None) -> Iterator[
        ProgressCallback | None]:
    """Yield a progress callback that draws a live line on stderr, or None when not ``enabled``.
    The line appears with the first progress (so a run refused for bad input draws nothing) and
    disappears when the bench ends, so the report starts on a clean screen. ``server_line``: a
    line drawn under it, asked for once a second (``pounder top``'s compact form of the server)."""
    if not enabled:
        yield None
        return
    # Imported here: rich's console costs ~20 ms of start-up, needed only on a terminal.
    from rich.console import Console, RenderableType
    from rich.progress import BarColumn, TextColumn
    from rich.progress import Progress as RichProgress
    from rich.text import Text

    class WithLine(RichProgress):
        line: str | None = None
        asked = 0.0

        def get_renderables(self) -> Iterator[RenderableType]:
            yield self.make_tasks_table(self.tasks)
            if self.line:
                yield Text(self.line, no_wrap=True, overflow="ellipsis")

    display = WithLine(
        TextColumn("{task.description:<8}"),
        BarColumn(),
        TextColumn("{task.fields[status]}"),
        console=Console(stderr=True),
        transient=True,
    )
    task = display.add_task("starting", total=None, status="")

    def update(progress: Progress) -> None:
        if not display.live.is_started:
            display.start()
        fraction = _fraction(progress)
        if server_line is not None and time.monotonic() - display.asked >= 1.0:
            display.asked = time.monotonic()
            display.line = server_line()
        display.update(
            task,
            description=progress.phase,
            total=None if fraction is None else 1.0,
            completed=fraction or 0.0,
            status=_status(progress),
        )

    try:
        yield update
    finally:
        if display.live.is_started:
            display.stop()


@contextmanager
def live_status() -> Iterator[tuple[Callable[[str], None], Callable[[str], None], ProgressCallback]]:
    """For a long run of several benches (``pounder tune``), on a terminal: ``(log, status,
    progress)``. ``log`` prints a line above the live display, ``status`` names what is measured
    now, ``progress`` draws the running bench."""
    from rich.console import Console
    from rich.progress import BarColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    console = Console(stderr=True)
    display = RichProgress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    with display:
        task = display.add_task("starting", total=None, status="")

        def log(line: str) -> None:
            display.console.print(line, highlight=False, markup=False)

        def status(label: str) -> None:
            display.update(task, description=label, total=None, completed=0, status="")

        def update(progress: Progress) -> None:
            fraction = _fraction(progress)
            display.update(task, total=None if fraction is None else 1.0, completed=fraction or 0.0,
                           status=_status(progress))

        yield log, status, update
