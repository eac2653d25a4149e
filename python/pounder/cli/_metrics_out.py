"""``--metrics-out URL`` of the commands that load (bench, compare, run, tune): declared once on
:class:`pounder.metrics.MetricsOptions`, offered with :func:`metrics_option`, and a block around
the command's loads (:func:`metrics_out`) that ends with one line on stderr."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from pounder.cli._bridge import Use, given
from pounder.metrics import MetricsOptions, MetricsStream, stream_metrics


def metrics_option(panel: str) -> Use:
    """``--metrics-out`` shown in ``panel``."""
    return Use(MetricsOptions, "metrics_out", panel)


@contextmanager
def metrics_out(ctx: typer.Context, command: str, *, allow_remote: bool) -> Iterator[None]:
    """The command's loads inside the block streamed to ``--metrics-out`` (checked on entering:
    one line, exit 2, before anything is sent); at the end, however the block ends, one line
    saying how many samples were sent or dropped (nothing when none was made)."""
    stream: MetricsStream | None = None
    try:
        with stream_metrics(given(ctx, MetricsOptions).metrics_out, command=command,
                            allow_remote=allow_remote) as stream:  # fmt: skip
            yield
    finally:
        summary = None if stream is None else stream.summary
        if summary is not None and summary.samples:
            try:
                sys.stderr.write(f"pounder: {summary.line()}\n")
                sys.stderr.flush()
            except OSError:
                pass
