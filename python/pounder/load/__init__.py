"""Load generation for ``pounder bench``: the load options (``_options``, declared once; the load
model ``_model``), the spec handed to the engine (``_spec``: the options checked, with what to
send from :mod:`pounder.traffic`), the TLS files and the pre-flight handshake (``_tls``), what
sends a load (``_sender``: the interface; this machine's engine, run in ``_bench`` and followed to
its end in ``_follow``, is the first;
agents on a cluster, in :mod:`pounder.agents`, the second). A run's result is a
:class:`~pounder.results.BenchResult` (:mod:`pounder.results`). The public names are re-exported
by :mod:`pounder`."""

from pounder._native import load_engine
from pounder.load._bench import (
    ENGINE,
    OutputWriteError,
    bench,
    check_io,
    check_tls,
    run_bench,
    server_sampler,
    serves_all,
)
from pounder.load._follow import POLL_INTERVAL_S, Progress, ProgressCallback
from pounder.load._options import LoadOptions
from pounder.load._sender import Sender
from pounder.load._spec import BenchSpec, Target

__all__ = [
    "ENGINE",
    "POLL_INTERVAL_S",
    "BenchSpec",
    "LoadOptions",
    "OutputWriteError",
    "Progress",
    "ProgressCallback",
    "Sender",
    "Target",
    "bench",
    "check_io",
    "check_tls",
    "load_engine",
    "run_bench",
    "server_sampler",
    "serves_all",
]
