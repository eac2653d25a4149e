"""The driver of the agents: placed on a cluster once (a placement group: one per node unless
``per_node`` packs them), then given one load after another, each agent running the engine on its
share of one spec, started together and merged exactly.

Placing checks that every agent runs this pounder (:mod:`._boot`); every run checks that every
agent may and can reach the targets, estimates each agent's clock offset from the fastest of
several round trips, and gives every agent its share with one start time in that agent's own clock.
While they run it polls them (``on_progress`` sees the sums); an agent that dies or falls silent is
lost: the others finish, and the result says it is partial. The merge adds the agents' histograms
(``pounder._engine.merge``): the figures are those of one run, not averages.

What travels: the spec to the agents; progress counters and, at the end, each agent's encoded
histograms back. Never a per-request record.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pounder import _live
from pounder._errors import PounderError, UsageError, check_type, public
from pounder._files import utc_timestamp
from pounder._units import count_text
from pounder._version import __version__
from pounder.agents._agent import machine_id, target_hosts
from pounder.agents._boot import Agent, by_value
from pounder.agents._report import agent_report, merged_io
from pounder.agents._ship import Shipment
from pounder.load import POLL_INTERVAL_S, BenchSpec, Progress, ProgressCallback, Sender, load_engine, serves_all
from pounder.procs import ServerLoadReport, ServerSampler
from pounder.results import Agents, BenchResult, MalformedResultError

if TYPE_CHECKING:
    from pounder._engine import EngineSpec

HELLO_TIMEOUT_S = 120.0
"""A cold agent imports Ray and pounder first: seconds each on a busy node."""
PLACEMENT_TIMEOUT_S = 60.0
SILENCE_S = 10.0
"""An agent that answers no poll for this long is lost."""
LAST_WAIT_S = 2.0
"""After a second Ctrl-C, how long the cancelled agents still have to return what they measured
(a third Ctrl-C stops at once)."""
CLOCK_ROUNDS = 8
MIN_LEAD_S = 0.5
"""The start is at least this far ahead of the moment the shares are sent (more with slow round
trips); an agent that gets its share late starts at once, and its ``began_ms`` shows it."""
_PHASES = ("waiting", "warmup", "measure", "drain", "done")


# ---------------------------------------------------------------------------------------------
# The driver


@dataclass
class _Member:
    """What the driver knows of one agent (its run's fields are reset before every run)."""

    index: int
    actor: Any
    hello: Mapping[str, Any] = field(default_factory=dict)
    share: EngineSpec = field(default_factory=dict)  # type: ignore[assignment]
    offset_s: float = 0.0
    error_s: float = 0.0
    last: Mapping[str, Any] | None = None
    seconds: list[str] = field(default_factory=list)
    """The finished seconds of its series reported so far (kept should it be lost)."""
    reached: set[str] = field(default_factory=set)
    """Target hosts it has connected to once, not probed again (a tuning run starts a server on a
    new port for each trial; a probe's connection would count against MaxRequestsPerChild)."""
    heard: float = 0.0
    pending: Any = None
    result: dict[str, Any] | None = None
    lost: str | None = None

    @property
    def active(self) -> bool:
        return self.result is None and self.lost is None

    def reset(self, share: EngineSpec) -> None:
        self.share, self.last, self.pending, self.result, self.seconds = share, None, None, None, []
        if self.lost is None:
            return
        raise PounderError(f"agent {self.index} on {self.hello.get('host', '?')} was lost in an earlier run: "
                           f"{self.lost}")


def _get(ray: ModuleType, refs: list[Any], timeout_s: float, what: str) -> list[Any]:
    try:
        values: list[Any] = ray.get(refs, timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        raise PounderError(f"the agents did not {what} within {timeout_s:g} s") from None
    except ray.exceptions.RayError as error:
        raise PounderError(f"an agent failed to {what}: {str(error).splitlines()[0]}") from None
    return values


def _clock(ray: ModuleType, actor: Any) -> tuple[float, float]:
    """(offset, error) in seconds: the agent's clock minus the driver's, from the fastest round trip."""
    best: tuple[float, float] | None = None
    for _ in range(CLOCK_ROUNDS):
        before = time.time()
        theirs = _get(ray, [actor.clock.remote()], HELLO_TIMEOUT_S, "tell the time")[0]
        after = time.time()
        if best is None or after - before < 2 * best[1]:
            best = (theirs - (before + after) / 2, (after - before) / 2)
    assert best is not None
    return best


@public
def agent_file(path: str | None, index: int | str) -> str | None:
    """An agent's own TSV or HDR log: the path (made absolute in this process) with ``.agent-N``
    before its suffix, on the agent's machine."""
    check_type(path, str, "agent_file: path", "a string or None", optional=True)
    if path is None:
        return None
    file = Path(path).absolute()  # the command's directory, not the agent process's
    return str(file.with_name(f"{file.stem}.agent-{index}{file.suffix}"))


class _Told:
    """The agents' finished seconds told to whoever listens (:mod:`pounder._live`, ``--metrics-out``)
    as they come: a second once every agent still running has gone past it (or at the end), the
    agents' entries of it added up (their histograms merged: the percentiles are those of all their
    requests of that second)."""

    def __init__(self, members: list[_Member], target: str) -> None:
        self._members, self._target = members, target
        self._start_unix: float | None = None
        self._read = [0] * len(members)
        self._entries: list[dict[int, str]] = [{} for _ in members]
        self._next = 0

    def poll(self, final: bool) -> None:
        if self._start_unix is None:
            measuring = [float(m.last.get("elapsed_s", 0.0)) for m in self._members
                         if m.last and m.last.get("phase") in ("measure", "drain", "done")]  # fmt: skip
            if not measuring:
                return
            self._start_unix = time.time() - max(measuring)
        for index, member in enumerate(self._members):
            for text in member.seconds[self._read[index]:]:
                self._entries[index][int(json.loads(text)["second"])] = text
            self._read[index] = len(member.seconds)
        last = max((max(entries, default=-1) for entries in self._entries), default=-1)
        # an agent's entries are its finished seconds (a second with no request has none): a second is
        # whole once every agent still running has finished it
        upto = last + 1 if final else min(
            (max(entries, default=-1) + 1 for member, entries in zip(self._members, self._entries, strict=True)
             if member.active), default=last + 1)  # fmt: skip
        batch = []
        for second in range(self._next, upto):
            texts = [entries[second] for entries in self._entries if second in entries]
            if texts:
                batch.append({**json.loads(load_engine().sum_seconds(texts)), "second": second})
        self._next = max(self._next, upto)
        _live.tell_seconds(self._target, self._start_unix, batch)
        active = [m.last for m in self._members if m.active and m.last]
        if not final and any(last.get("phase") == "measure" for last in active):
            _live.tell_in_flight(self._target, time.time(), sum(int(last.get("in_flight", 0)) for last in active))


@public
class AgentPool(Sender):
    """Agents placed on a cluster and greeted once, then given one bench after another (a compare's
    trials, an experiment's): each :meth:`run` synchronises the clocks again, deals out the shares,
    starts them together and merges their results. Open one with :meth:`Cluster.open
    <pounder.agents.Cluster.open>` (or :func:`~pounder.agents.agent_pool`)."""

    distributed = True

    def __init__(self, ray: ModuleType, address: str, *, per_node: int | None = None, local: bool = False,
                 sent: Shipment | None = None) -> None:
        self.ray = ray
        self.sent = sent
        """This pounder, zipped to send to the agents (:func:`~pounder.agents._ship.shipment`); None
        when nothing is sent (a local cluster runs this process's Python)."""
        self.address: str = address
        """The cluster's address ("local", or HOST:PORT: for "auto", the one found)."""
        self.asked_per_node, self.local = per_node, local
        self.members: list[_Member] = []
        self.running: list[_Member] = []
        """The agents of the current (or latest) run: the first ``agents`` of :attr:`members`."""
        self.per_node = 1
        self.group: Any = None
        self.interrupted = False
        self.give_up_at: float | None = None

    @property
    def count(self) -> int:
        return len(self.members)

    def elsewhere(self) -> int:
        """How many of the agents run on another machine than this process."""
        here = machine_id()
        return sum(member.hello.get("machine") != here for member in self.members)

    def record(self) -> dict[str, Any]:
        return {"ray": self.address, "agents": self.count, "per_node": self.per_node}

    # -- once: place and greet ---------------------------------------------------------------

    def place(self, count: int | None) -> None:
        """Reserve the nodes (a placement group) and start ``count`` agents (default: one per node
        times ``per_node``); each runs this pounder (the files in :attr:`sent`, unpacked on its node
        unless they are there) or says why it refuses to (:mod:`._boot`)."""
        ray = self.ray
        nodes = [node for node in ray.nodes() if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) >= 1]
        self.per_node = per_node = self.asked_per_node or ((count or 1) if self.local else 1)
        count = count or len(nodes) * per_node
        groups = math.ceil(count / per_node)
        if groups > len(nodes):
            raise UsageError(f"{count} agents at {per_node} per node need {count_text(groups, 'node')}; the cluster "
                             f"has {len(nodes)} with a CPU (--agents-per-node packs more agents on a node)")
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self.group = placement_group([{"CPU": 1}] * groups, strategy="STRICT_SPREAD" if groups > 1 else "PACK")
        ready, _ = ray.wait([self.group.ready()], timeout=PLACEMENT_TIMEOUT_S)
        if not ready:
            raise PounderError(f"the cluster did not give {groups} nodes a free CPU each within "
                               f"{PLACEMENT_TIMEOUT_S:g} s: are other jobs holding them?")
        by_value()  # the agent's first code travels with it: a node needs only Ray
        build, package = (None, None) if self.sent is None else (self.sent.build,
                                                                 [ray.put(self.sent.archive.read_bytes())])
        remote = ray.remote(num_cpus=1 / per_node, max_restarts=0, max_task_retries=0)(Agent)
        self.members = [
            _Member(index, remote.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
                self.group, index // per_node)).remote(__version__, build, package))
            for index in range(count)
        ]  # fmt: skip
        hellos = _get(ray, [m.actor.hello.remote() for m in self.members], HELLO_TIMEOUT_S, "start")
        for member, hello in zip(self.members, hellos, strict=True):
            member.hello = hello
            if hello.get("refused"):
                raise PounderError(f"agent {member.index} on {hello['host']}: {hello['refused']}")

    def close(self) -> None:
        for member in self.members:
            try:
                self.ray.kill(member.actor, no_restart=True)
            except Exception:  # already gone  # noqa: S110
                pass
        if self.group is not None:
            try:
                self.ray.util.remove_placement_group(self.group)
            except Exception:  # the cluster is gone: nothing left to free  # noqa: S110
                pass

    # -- every run ------------------------------------------------------------------------------

    def check(self, spec: BenchSpec) -> None:
        """:class:`~pounder.UsageError` when ``spec`` cannot be dealt out to these agents."""
        check_distributable(spec, self.count)

    def run(self, spec: BenchSpec, on_progress: ProgressCallback | None = None,
            sampler: ServerSampler | None = None, *, agents: int | None = None) -> BenchResult:
        """One bench from every agent (the first ``agents`` only, when given): ``spec`` dealt out,
        one start, the results merged (the server sampled meanwhile with ``sampler``)."""
        check_type(agents, int, "AgentPool.run: agents", "a whole number or None", optional=True)
        if agents is not None and not 1 <= agents <= self.count:
            raise UsageError(f"AgentPool.run: agents must be between 1 and {self.count}, got {agents}")
        check_distributable(spec, len(self.members[:agents]))
        self.running = self.members[:agents]
        self.interrupted, self.give_up_at = False, None
        for member in self.running:
            member.reset(spec.share_spec(member.index, len(self.running)))
            if spec.auto_threads:  # its share of its own machine's CPUs, not the driver's
                cpus = int(member.hello["cpus"]) // self._sharing(member)
                member.share["threads"] = max(1, min(member.share["connections"], cpus))
        self._check_targets(spec.allow_remote)
        started_at = utc_timestamp()
        served = None if sampler is None else serves_all(sampler.target, spec, sampler.front)
        told = _Told(self.running, spec.target_label()) if _live.anyone() else None
        try:
            self._launch(spec, sampler)
            self._follow(spec, on_progress, told)
            if told is not None:
                told.poll(final=True)
        finally:
            server = sampler.stop() if sampler is not None and sampler.started else None
        if server is not None:
            server = replace(server, serves_url=served)
        return self._result(spec, started_at, server)

    def _sharing(self, member: _Member) -> int:
        """How many agents run on ``member``'s machine (they share its CPUs: several Ray nodes on
        one machine, as a loopback cluster has, are one machine's CPUs, not one each)."""
        return sum(other.hello["machine"] == member.hello["machine"] for other in self.running)

    def _check_targets(self, allow_remote: bool) -> None:
        hosts = target_hosts(self.running[0].share)
        refs = [m.actor.check.remote(m.share, allow_remote, machine_id(), not hosts <= m.reached)
                for m in self.running]  # fmt: skip
        for member, problem in zip(self.running, _get(self.ray, refs, HELLO_TIMEOUT_S, "check the targets"),
                                   strict=True):  # fmt: skip
            if problem is not None:
                raise PounderError(f"agent {member.index} on {member.hello['host']}: {problem}")
            member.reached |= hosts

    def _launch(self, spec: BenchSpec, sampler: ServerSampler | None) -> None:
        for member in self.running:
            member.offset_s, member.error_s = _clock(self.ray, member.actor)
        lead = max(MIN_LEAD_S, 10 * 2 * max(m.error_s for m in self.running))
        start_at = time.time() + lead
        for member in self.running:
            member.share = {
                **member.share, "export_histograms": True,
                "start_at_unix_us": round((start_at + member.offset_s) * 1e6),
                "tsv_path": agent_file(spec.tsv_path, member.index),
                "hdr_log_path": agent_file(spec.hdr_log_path, member.index),
            }  # fmt: skip
        if sampler is not None:  # from just before the first request
            sampler.start()
        refused = _get(self.ray, [m.actor.start.remote(m.share) for m in self.running], HELLO_TIMEOUT_S, "start")
        now = time.monotonic()
        for member in self.running:
            member.heard = now
        for member, problem in zip(self.running, refused, strict=True):
            if problem is not None:
                self._cancel()
                raise PounderError(f"agent {member.index} on {member.hello['host']}: {problem}")

    def _cancel(self) -> None:
        for member in self.running:
            if member.active:
                member.actor.cancel.remote()

    def _poll(self) -> None:
        """One round: ask every active agent, take what came within the poll interval, and declare
        lost an agent whose process died or that stayed silent too long."""
        ray, exceptions = self.ray, self.ray.exceptions
        active = [m for m in self.running if m.active]
        for member in active:
            if member.pending is None:
                member.pending = member.actor.poll.remote(len(member.seconds))
        ray.wait([m.pending for m in active], num_returns=len(active), timeout=POLL_INTERVAL_S)
        now = time.monotonic()
        for member in active:
            ready, _ = ray.wait([member.pending], timeout=0)
            if ready:
                ref, member.pending = member.pending, None
                try:
                    progress, seconds, result = ray.get(ref)
                except exceptions.ActorUnavailableError:  # temporary: its node may come back
                    pass
                except exceptions.RayError as error:
                    member.lost = f"it died ({type(error).__name__})"
                    continue
                else:
                    member.heard, member.last = now, progress
                    member.seconds.extend(seconds)
                    if result is not None:
                        member.result = json.loads(result)
                        continue
            if now - member.heard > SILENCE_S:
                member.lost = f"it answered nothing for {SILENCE_S:g} s"
                ray.kill(member.actor, no_restart=True)

    def _progress(self, spec: BenchSpec) -> Progress:
        lasts = [m.last or {} for m in self.running if m.lost is None]
        phases = [str(last.get("phase", "waiting")) for last in lasts] or ["done"]
        load = spec.load
        return Progress(
            phase=min(phases, key=lambda phase: _PHASES.index(phase) if phase in _PHASES else 0),
            elapsed_s=max((float(last.get("elapsed_s", 0.0)) for last in lasts), default=0.0),
            complete=sum(int(last.get("complete", 0)) for last in lasts),
            failed=sum(int(last.get("failed", 0)) for last in lasts),
            rate=sum(float(last.get("rate", 0.0)) for last in lasts),
            planned_s=load.duration_s, planned_requests=load.requests, interrupted=self.interrupted,
            in_flight=sum(int(last.get("in_flight", 0)) for last in lasts),
        )  # fmt: skip

    def _follow(self, spec: BenchSpec, on_progress: ProgressCallback | None, told: _Told | None = None) -> None:
        while any(m.active for m in self.running):
            began = time.monotonic()
            try:
                self._poll()
                if told is not None:
                    told.poll(final=not any(m.active for m in self.running))
                if on_progress is not None:
                    on_progress(self._progress(spec))
                if any(m.active for m in self.running):  # one round per interval, however fast they answer
                    time.sleep(max(0.0, began + POLL_INTERVAL_S - time.monotonic()))
            except KeyboardInterrupt:
                if self.give_up_at is not None:  # a third one: out, whatever came
                    raise
                if self.interrupted:  # a second one: the cancelled agents get a last moment to answer
                    self.give_up_at = time.monotonic() + LAST_WAIT_S
                self.interrupted = True
                self._cancel()
            except BaseException:  # the progress callback stopped the run
                self._cancel()
                raise
            if self.give_up_at is not None and time.monotonic() > self.give_up_at:
                for member in self.running:
                    if member.active:
                        member.lost = "stopped by a second Ctrl-C before it returned its result"

    @staticmethod
    def _kept(member: _Member) -> dict[str, Any] | None:
        """What a lost agent reported of its run: its finished seconds added up."""
        if member.result is not None or not member.seconds:
            return None
        try:
            kept: dict[str, Any] = json.loads(load_engine().sum_seconds(member.seconds))
        except ValueError:  # its last progress counts then: the others' result stands
            return None
        return kept

    def _result(self, spec: BenchSpec, started_at: str, server: ServerLoadReport | None) -> BenchResult:
        done = [m for m in self.running if m.result is not None]
        if not done and self.interrupted:  # stopped before anything came back: nothing to keep
            raise KeyboardInterrupt
        if not done:
            reasons = "; ".join(f"agent {m.index}: {m.lost}" for m in self.running if m.lost)
            raise PounderError(f"no agent returned a result ({reasons})")
        for member in done:  # every time in the driver's clock
            assert member.result is not None
            for key in ("start_unix_us", "measure_start_unix_us", "began_unix_us"):
                if member.result.get(key) is not None:
                    member.result[key] -= round(member.offset_s * 1e6)
        measured = [m.result for m in done if m.result and m.result["measure_start_unix_us"]]
        first_measure = min((result["measure_start_unix_us"] for result in measured), default=0)
        for result in measured:  # the series are added by second of the run: a late agent's seconds move along
            shift = round((result["measure_start_unix_us"] - first_measure) / 1e6)
            for entry in result["series"]:
                entry["second"] += shift
        began = {m.index: m.result["began_unix_us"] for m in done if m.result and m.result.get("began_unix_us")}
        first = min(began.values(), default=None)
        agents = Agents(
            address=self.address, per_node=self.per_node,
            nodes=len({m.hello["node_id"] for m in self.running}),
            start_skew_ms=(max(began.values()) - min(began.values())) / 1000 if len(began) > 1 else None,
            members=tuple(
                agent_report(m.index, m.hello, m.share, (m.offset_s * 1000, m.error_s * 1000),
                             None if first is None or m.index not in began else (began[m.index] - first) / 1000,
                             m.result, m.last or {"complete": 0, "failed": 0, "elapsed_s": 0.0}, m.lost,
                             self._sharing(m), self._kept(m))
                for m in self.running
            ),
        )  # fmt: skip
        try:
            merged = load_engine().merge([json.dumps(m.result) for m in done])
            whole = BenchResult.from_engine(
                merged, options=spec.run_options(), started_at=started_at, interrupted=self.interrupted,
                tool_version=__version__, server=server, agents=agents,
            )  # fmt: skip
            return replace(whole, io=merged_io([(m.index, m.result) for m in done if m.result is not None]))
        except (ValueError, MalformedResultError) as error:
            raise PounderError(f"the agents' results cannot be merged: {error}") from None


@public
def check_distributable(spec: BenchSpec, agents: int | None = None) -> None:
    """What a distributed run cannot do, refused before anything starts (with ``agents``, also a
    share without a connection or a request)."""
    check_type(spec, BenchSpec, "check_distributable: spec", "a BenchSpec")
    check_type(agents, int, "check_distributable: agents", "a whole number or None", optional=True)
    load = spec.load
    if load.warmup_requests and not load.is_open:
        raise UsageError("with --ray, --warmup takes a time (--warmup 5s): agents finish a count of warm-up "
                         "requests at different moments, and their measured phases would not begin together")
    for path, flag in ((spec.tsv_path, "--tsv"), (spec.hdr_log_path, "--hdr-log")):
        if path == "-":
            raise UsageError(f"with --ray, {flag} names a file each agent writes on its own machine, not '-'")
    for index in range(agents or 0):
        spec.share_spec(index, agents or 1)
