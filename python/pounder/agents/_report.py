"""One agent's line in a distributed result (:class:`~pounder.results.AgentReport`), made from what
the agent said and measured."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder.results import AgentReport, IoInfo, MalformedResultError

_IO_NAMES = {"uring": "io_uring", "epoll": "epoll"}


def agent_report(
    index: int, hello: Mapping[str, Any], share: Mapping[str, Any], clock: tuple[float, float],
    began_ms: float | None, result: Mapping[str, Any] | None, last: Mapping[str, Any], lost: str | None,
    sharing: int = 1, kept: Mapping[str, Any] | None = None,
) -> AgentReport:
    """One agent's record from what it said (``hello``: its CPUs among them), its share of the
    spec, its clock (offset, error in ms), its engine result (None when lost: then what was
    ``kept`` of its seconds, a ``sum_seconds`` document, or else its ``last`` progress) and how
    many agents shared its machine (they share its CPUs)."""
    threads = int(share["threads"])
    cpu_s = busy = seconds = None
    latency: Mapping[str, Any] = {}
    counts = last
    if result is not None:
        counts = result["requests"]
        cpu = result["client_cpu"]
        cpu_s = cpu["user_s"] + cpu["sys_s"]
        wall_s = result["elapsed_s"] + result["warmup"]["elapsed_s"]
        usable = min(float(threads), int(hello["cpus"]) / sharing) * wall_s
        busy = cpu_s / usable if usable > 0 else None
        latency = result["latency"]["corrected"]["percentiles"] if result["latency"]["corrected"]["count"] else {}
    else:  # lost: what it reported, second by second
        seconds = int(kept["seconds"]) if kept is not None else 0
        if kept is not None and seconds:
            counts = kept
            if kept["complete"]:
                latency = {"50": kept["p50_us"], "90": kept["p90_us"], "99": kept["p99_us"], "100": kept["max_us"]}
    return AgentReport(
        index=index, host=str(hello["host"]), node_id=str(hello["node_id"]), node_ip=str(hello["node_ip"]),
        pid=int(hello["pid"]), connections=int(share["connections"]), threads=threads,
        offset_ms=clock[0], clock_error_ms=clock[1], began_ms=began_ms,
        complete=int(counts["complete"]), failed=int(counts["failed"]),
        elapsed_s=float(result["elapsed_s"] if result is not None else last["elapsed_s"]),
        client_cpu_s=cpu_s or 0.0, cpu_busy=busy,
        p50_us=latency.get("50"), p90_us=latency.get("90"), p99_us=latency.get("99"), max_us=latency.get("100"),
        lost=lost, kept_seconds=seconds,
    )  # fmt: skip


def merged_io(shares: Sequence[tuple[int, Mapping[str, Any]]]) -> IoInfo | None:
    """The I/O path of a merged run from its shares' results (``(agent index, result)``): theirs
    when they all say the same; else the path they share, or "mixed", with what each agent took
    and why. None when no share says (agents of a pounder from before the io_uring path).
    :class:`~pounder.results.MalformedResultError` for an ``io`` that is not the engine's."""
    taken: dict[tuple[Any, str], list[int]] = {}  # (path, reason): the agents
    for index, result in shares:
        io = result.get("io")
        if io is None:
            continue
        if not isinstance(io, Mapping) or io.get("path") not in _IO_NAMES or not isinstance(io.get("reason"), str):
            raise MalformedResultError(f"agent {index}: 'io' must be {{path: uring or epoll, reason}}, got {io!r}")
        taken.setdefault((io["path"], io["reason"]), []).append(index)
    if len(taken) <= 1:
        return next((IoInfo(path=path, reason=reason) for path, reason in taken), None)
    paths = {path for path, _ in taken}
    reason = "; ".join(f"agent{'s' * (len(agents) > 1)} {', '.join(map(str, agents))}: {_IO_NAMES[path]} ({why})"
                       for (path, why), agents in taken.items())  # fmt: skip
    return IoInfo(path=paths.pop() if len(paths) == 1 else "mixed", reason=reason)
