"""What a load is sent by: the one interface of this machine's engine (:class:`~pounder.load._bench.Engine`)
and of agents on a cluster (:mod:`pounder.agents`). Whoever runs loads (``bench``, compare's
trials, a tuning run's points, an experiment) holds a sender and never asks which it is.

A sender is checked against every spec before anything starts (:meth:`Sender.check`), then opened
once (:meth:`Sender.open`: agents are placed and greeted there) for as many runs as the block
makes; :meth:`Sender.run` on a sender not opened opens it for that one run.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pounder._errors import public

if TYPE_CHECKING:
    from pounder.load._follow import ProgressCallback
    from pounder.load._spec import BenchSpec
    from pounder.procs import ServerSampler
    from pounder.results import BenchResult


@public
class Sender(abc.ABC):
    """Sends a validated :class:`~pounder.load.BenchSpec` and returns its
    :class:`~pounder.results.BenchResult` (with the server sampled by ``sampler`` meanwhile,
    ``on_progress`` called about every 0.25 s, Ctrl-C keeping what was measured)."""

    distributed: bool = False
    """Whether the load comes from agents elsewhere than this process (its result then has an
    ``agents`` section)."""

    address: str | None = None
    """Where the agents are (a cluster's address), None for this machine's engine."""

    @property
    def count(self) -> int:
        """How many send each load (agents; 1 for this machine's engine)."""
        return 1

    def check(self, spec: BenchSpec) -> None:  # noqa: B027  # nothing to check for most senders
        """:class:`~pounder.UsageError` when ``spec`` cannot be sent by this sender (before
        anything starts)."""

    def elsewhere(self) -> int:
        """How many of those that send run on another machine than this process."""
        return 0

    def record(self) -> dict[str, Any] | None:
        """What a results directory records of the sender to resume with it (None: this machine)."""
        return None

    @contextmanager
    def open(self) -> Iterator[Sender]:
        """The sender ready to run load after load (agents placed and greeted), closed on leaving."""
        yield self

    @abc.abstractmethod
    def run(self, spec: BenchSpec, on_progress: ProgressCallback | None = None, sampler: ServerSampler | None = None,
            *, agents: int | None = None) -> BenchResult:
        """One load: ``spec`` sent and measured. ``agents``: send it from the first ``agents`` only
        (at most :attr:`count`)."""
