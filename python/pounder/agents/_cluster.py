"""Where agents run (:class:`Cluster`, a sender of load not yet opened) and the one place that
chooses between this machine's engine and agents (:func:`make_sender`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pounder import _interrupt
from pounder._errors import PounderError, UsageError, check_type, public
from pounder.agents._connect import AUTO, LOCAL, connect, host_port, resolve_address
from pounder.agents._pool import AgentPool, check_distributable
from pounder.agents._ship import Shipment, shipment
from pounder.load import ENGINE, BenchSpec, ProgressCallback, Sender
from pounder.load import bench as _bench
from pounder.procs import ServerSampler
from pounder.results import BenchResult


@public
@dataclass(frozen=True)
class Cluster(Sender):
    """Where a distributed bench runs: ``address`` is "local" (a one-machine Ray cluster that pounder
    starts on loopback and stops afterwards), "auto" (the cluster in ``RAY_ADDRESS`` or the one this
    machine last started) or the head's HOST:PORT; ``agents`` how many (default: one per node times
    ``per_node``); ``per_node`` how many agents may share a node (default 1; with "local", all).

    A :class:`~pounder.load.Sender`: :meth:`open` places its agents (an :class:`AgentPool`) for
    load after load; :meth:`run` places them for one load."""

    address: str
    agents: int | None = None
    per_node: int | None = None
    distributed = True

    def __post_init__(self) -> None:
        check_type(self.address, str, "--ray", "a string")
        for value, what in ((self.agents, "--agents"), (self.per_node, "--agents-per-node")):
            check_type(value, int, what, "a whole number", optional=True)
            if value is not None and not 1 <= value <= 1000:
                raise UsageError(f"{what} must be between 1 and 1000, got {value}")
        if self.address not in (LOCAL, AUTO):
            host_port(self.address)

    @classmethod
    def from_options(cls, ray: str | None, agents: int | None = None, per_node: int | None = None) -> Cluster | None:
        """The cluster of ``--ray``, ``--agents`` and ``--agents-per-node``; None without ``--ray``."""
        if ray is None:
            if agents is not None or per_node is not None:
                raise UsageError("--agents and --agents-per-node need --ray")
            return None
        return cls(ray, agents, per_node)

    @property
    def local(self) -> bool:
        return self.address == LOCAL

    @property
    def count(self) -> int:
        if self.agents is None:
            raise PounderError("a cluster's agents are counted once they are placed: open it (Cluster.open)")
        return self.agents

    def check(self, spec: BenchSpec) -> None:
        check_distributable(spec, self.agents)

    @contextmanager
    def open(self) -> Iterator[AgentPool]:
        """The agents, placed and greeted, for as many runs as the block makes; on leaving, they
        are stopped and the cluster disconnected (a local one stopped). Raises
        :class:`~pounder.UsageError` without Ray or when the cluster has too few nodes for the
        agents, :class:`~pounder.PounderError` when it cannot be reached or cannot run them."""
        address = resolve_address(self.address)
        sent = None if self.local else _shipment()  # a local cluster runs this Python: nothing to send
        with _interrupt.watched() as watch, connect(address, watch) as ray:
            pool = AgentPool(ray, address, per_node=self.per_node, local=self.local, sent=sent)
            try:
                pool.place(self.agents)
                watch.settle()  # a signal from now on stops a run, which keeps what the agents measured
                yield pool
            finally:
                pool.close()

    def run(self, spec: BenchSpec, on_progress: ProgressCallback | None = None, sampler: ServerSampler | None = None,
            *, agents: int | None = None) -> BenchResult:
        """One load from the agents, placed for it and stopped after it (see :func:`run_bench_ray`)."""
        self.check(spec)
        with self.open() as pool:
            return pool.run(spec, on_progress, sampler, agents=agents)


def _shipment() -> Shipment:
    try:
        return shipment()
    except OSError as error:
        raise PounderError(f"cannot make this pounder ready to send to the agents: {error}") from None


@public
def make_sender(ray: str | None = None, agents: int | None = None, agents_per_node: int | None = None) -> Sender:
    """What sends the load for ``--ray``, ``--agents`` and ``--agents-per-node``: a :class:`Cluster`
    with ``--ray``, else this machine's engine (:data:`pounder.load.ENGINE`). The one place that
    chooses; everything after holds a :class:`~pounder.load.Sender`."""
    return Cluster.from_options(ray, agents, agents_per_node) or ENGINE


@public
@contextmanager
def agent_pool(cluster: Cluster) -> Iterator[AgentPool]:
    """``cluster.open()``: its agents, placed and greeted, for as many runs as the block makes."""
    check_type(cluster, Cluster, "agent_pool: cluster", "a Cluster")
    with cluster.open() as pool:
        yield pool


@public
def run_bench_ray(spec: BenchSpec, cluster: Cluster, on_progress: ProgressCallback | None = None,
                  sampler: ServerSampler | None = None) -> BenchResult:
    """Run ``spec`` from the agents of ``cluster`` and return the merged result (its ``agents``
    section says who sent what). Ctrl-C stops every agent and keeps what they measured; an agent
    lost mid-run leaves ``result.agents.partial`` set. Raises :class:`~pounder.UsageError` on bad
    input or without Ray, :class:`~pounder.PounderError` when the cluster cannot run the agents."""
    check_type(spec, BenchSpec, "run_bench_ray: spec", "a BenchSpec")
    check_type(cluster, Cluster, "run_bench_ray: cluster", "a Cluster")
    return cluster.run(spec, on_progress, sampler)


@public
def bench(url: str | None = None, *, ray: str | None = None, agents: int | None = None,
          agents_per_node: int | None = None, **options: Any) -> BenchResult:
    """:func:`pounder.load.bench` (``options`` are its keyword arguments), the load sent from agents
    on a Ray cluster when ``ray`` is given ("local", "auto" or the head's HOST:PORT): ``agents`` of
    them (default one per node), at most ``agents_per_node`` on a node (default 1); see
    :func:`run_bench_ray`. The server sampled with the server options is on this machine. This is
    ``pounder.bench``."""
    return _bench(url, sender=make_sender(ray, agents, agents_per_node), **options)
