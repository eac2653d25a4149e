"""What a bench run by several agents records about them: the ``agents`` section of a bench
result (``pounder/bench-result/3``). The merged measurements are the result's own fields; this
is who sent them, from where, when each began and how busy each was, so a reader can tell a
load generator that was the limit, a late start or a lost agent from the server's behaviour."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pounder._errors import public
from pounder.results._measured import READ

SATURATED = 0.9
"""An agent whose engine used this share of the CPU it could use was probably the limit."""
MAX_START_SKEW_MS = 50.0
"""Agents that began further apart than this did not load the server together at first."""
MAX_CLOCK_ERROR_MS = 5.0
"""A clock offset known no better than this can put a request in the wrong second of the series."""


@public
@dataclass(frozen=True)
class AgentReport:
    """One agent: where it ran, its share, what it measured on its own, and whether it was lost.

    ``offset_ms`` is the agent's clock minus the driver's, measured from the fastest of several
    round trips; ``clock_error_ms`` is half that round trip (the offset is known to ± that).
    ``began_ms`` is when its load began, after the earliest agent's, in the driver's clock (None
    when it never began). ``cpu_busy`` is its engine's CPU time over the CPU it could use (its
    threads, at most its share of the CPUs it may run on, for the whole run); None without a result. A lost agent
    (``lost`` says why) keeps what it measured up to the last second it reported (``kept_seconds`` of
    them: its counts and percentiles; with none, its last progress counts); they are not in the
    merged totals. ``kept_seconds`` is None for an agent that returned its result."""

    index: int
    host: str
    node_id: str
    node_ip: str
    pid: int
    connections: int
    threads: int
    offset_ms: float
    clock_error_ms: float
    began_ms: float | None
    complete: int
    failed: int
    elapsed_s: float
    client_cpu_s: float
    cpu_busy: float | None
    p50_us: int | None
    p90_us: int | None
    p99_us: int | None
    max_us: int | None
    lost: str | None
    kept_seconds: int | None = None

    @property
    def saturated(self) -> bool:
        return self.cpu_busy is not None and self.cpu_busy >= SATURATED


@public
@dataclass(frozen=True)
class Agents:
    """The agents of a distributed run. ``address`` is the Ray cluster ("local", or the head's
    HOST:PORT; for ``--ray auto``, the one found); ``per_node`` how many agents shared a node;
    ``start_skew_ms`` the spread of their ``began_ms`` (None when fewer than two began)."""

    address: str
    per_node: int
    nodes: int
    start_skew_ms: float | None
    members: tuple[AgentReport, ...]

    @property
    def partial(self) -> bool:
        """An agent was lost: the merged figures lack its share."""
        return any(agent.lost is not None for agent in self.members)

    @property
    def clock_error_ms(self) -> float:
        return max((agent.clock_error_ms for agent in self.members), default=0.0)

    def partial_line(self) -> str | None:
        """The one line a run whose agents were lost fails with (None when none was)."""
        lost = [agent for agent in self.members if agent.lost is not None]
        if not lost:
            return None
        return (f"the run is partial: {len(lost)} of {len(self.members)} agents were lost "
                f"({'; '.join(f'agent {agent.index}: {agent.lost}' for agent in lost)})")

    def lost_notes(self) -> list[str]:
        """One line per lost agent: why, and what it had measured (not in the figures)."""
        return [f"agent {agent.index} ({agent.host}) was lost: {agent.lost}; its share is not in the figures "
                f"({agent.complete:,} complete, {agent.failed:,} failed {_kept_text(agent.kept_seconds)})"
                for agent in self.members if agent.lost is not None]

    def warnings(self) -> list[str]:
        """What a reader must know before trusting the merged figures."""
        notes = self.lost_notes()
        notes += [f"agent {agent.index} ({agent.host}) used {agent.cpu_busy:.0%} of the CPU it could use: the load "
                  "generator, not the server, may have been the limit"
                  for agent in self.members if agent.saturated and agent.cpu_busy is not None]
        if self.start_skew_ms is not None and self.start_skew_ms > MAX_START_SKEW_MS:
            notes.append(f"the agents began {self.start_skew_ms:.1f} ms apart (more than {MAX_START_SKEW_MS:g} ms): "
                         "the first second did not see the whole load")
        if self.clock_error_ms > MAX_CLOCK_ERROR_MS:
            notes.append(f"clock offsets are known only to ±{self.clock_error_ms:.1f} ms: a request near a second's "
                         "edge can be counted in the next second of the series")
        return notes

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "members": [asdict(agent) for agent in self.members]}

    @classmethod
    def from_dict(cls, value: object, key: str) -> Agents:
        members = READ.list_of(lambda item, where: READ.record(AgentReport, item, where,
                                                               kept_seconds=READ.by_type("int | None")))
        agents: Agents = READ.record(cls, value, key, members=members)
        return agents


def _kept_text(seconds: int | None) -> str:
    if not seconds:
        return "when last heard"
    return f"in the {seconds} second{'s' * (seconds != 1)} it reported"


def read_agents(value: object, key: str) -> Agents | None:
    """The ``agents`` section of a result, None when the run had no agents."""
    return None if value is None else Agents.from_dict(value, key)
