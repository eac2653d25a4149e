"""``--metrics-out`` as one option (declared once, on :class:`MetricsOptions`) and as a block
around any run of loads (:func:`stream_metrics`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pounder import _live
from pounder._errors import public
from pounder._flags import flag
from pounder.metrics._endpoint import parse_metrics_out
from pounder.metrics._stream import MetricsStream


@public
@dataclass(frozen=True)
class MetricsOptions:
    """Where a command streams its per-second figures (bench, compare, run, tune)."""

    metrics_out: str | None = field(default=None, metadata=flag("--metrics-out", metavar="URL", help=(
        "Stream per-second figures while the load runs (requests, errors, non-2xx, latency p50/p99/max; the "
        "server's children's USS, PSS and CPU when sampled), labelled with the run: "
        "prometheus+http://HOST:PORT/api/v1/write (Prometheus remote-write) or otlp+http://HOST:PORT/v1/metrics "
        "(OTLP/HTTP); +https for TLS. A slow or absent endpoint never slows the run: what cannot be sent is "
        "dropped and counted in one line at the end. Loopback unless --allow-remote; needs "
        "pip install 'pounder[metrics]'. Series: docs/metrics.md.")))


@public
@contextmanager
def stream_metrics(url: str | None, *, command: str, allow_remote: bool = False,
                   run: str | None = None) -> Iterator[MetricsStream | None]:  # fmt: skip
    """Every load run in this process inside the block streamed to ``url`` (``--metrics-out``;
    None: nothing, the block yields None). The URL and the exporter are checked on entering, before
    anything is sent (:class:`~pounder.UsageError`); on leaving, the rest is sent (at most a few
    seconds) and the stream's :attr:`MetricsStream.summary` says how many samples were dropped."""
    if url is None:
        yield None
        return
    stream = MetricsStream(parse_metrics_out(url, allow_remote=allow_remote), command=command, run=run)
    stream.start()
    try:
        with _live.listening(stream):
            yield stream
    finally:
        stream.summary = stream.close()


