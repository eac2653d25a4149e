"""A load agent: the code that runs on a Ray node, in an actor (``_boot``'s, which ``_pool`` starts
with ``ray.remote``: it imports this module once it has chosen the pounder to run). It runs only
pounder's engine, on the spec the driver gives it, and answers in plain values: nothing here
imports Ray at module level, so the class is importable (and testable) without it.

Every method returns at once (the engine runs in its own threads), so one thread per actor is
enough: ``poll`` and ``cancel`` never queue behind a long call.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pounder._ip import is_loopback
from pounder._units import available_cpus
from pounder._version import __version__

if TYPE_CHECKING:
    from pounder._engine import EngineSpec, Run

PROBE_TIMEOUT_S = 3.0


def _host_port(tcp: str) -> tuple[str, int]:
    host, _, port = tcp.rpartition(":")
    return host.strip("[]"), int(port)


def _addresses(spec: EngineSpec, kind: Literal["tcp", "unix"]) -> list[str]:
    """The spec's distinct targets of one kind (a TCP target's several addresses, tried in
    order, are one comma-separated string)."""
    return sorted({address for target in spec["targets"] if (address := target.get(kind))})


def target_hosts(spec: EngineSpec) -> set[str]:
    """The machines a spec's requests go to: each TCP target's host, each Unix socket's path."""
    tcp = {_host_port(one)[0] for address in _addresses(spec, "tcp") for one in address.split(",")}
    return tcp | set(_addresses(spec, "unix"))


def _unix_connection(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(PROBE_TIMEOUT_S)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return sock


def _unreachable(address: str, connect: Callable[[], socket.socket]) -> str | None:
    """Why one connection to ``address`` fails, None when it opens (it is closed at once)."""
    try:
        connect().close()
    except OSError as error:
        return f"cannot connect to {address}: {error.strerror or error}"
    return None


def _io_problem(spec: EngineSpec) -> str | None:
    """Why this agent's kernel cannot take the I/O path the spec asks for (``--io uring``), or None."""
    from pounder import _engine

    try:
        _engine.choose_io(spec)
    except ValueError as error:  # another refusal of the spec is start's to say
        why = str(error)
        if why.startswith("io_uring: "):
            return f"--io {spec.get('io')}: {why.removeprefix('io_uring: ')} on this agent's machine"
    return None


def machine_id() -> str:
    """This machine (this boot of it): two agents, or an agent and the driver, with the same id
    share a loopback interface."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"


class Agent:
    """One agent of a distributed bench: it says who it is, tells the time, checks that it may
    and can reach the targets, then runs its share of the load and reports on it."""

    def __init__(self) -> None:
        self._run: Run | None = None

    def hello(self) -> dict[str, Any]:
        """Versions and identity: the driver refuses an agent whose pounder differs from its own."""
        from pounder import _engine

        try:
            import ray

            context = ray.get_runtime_context()
            node_id, node_ip = context.get_node_id(), ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
        except Exception:  # outside Ray (a test of this class)
            node_id, node_ip = "", ""
        return {
            "pounder": __version__,
            "engine": _engine.__version__,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "node_id": node_id,
            "node_ip": node_ip,
            "cpus": available_cpus(),
            "machine": machine_id(),
        }

    def clock(self) -> float:
        """This machine's clock, seconds since the epoch."""
        return time.time()

    def check(self, spec: EngineSpec, allow_remote: bool, driver_machine: str, probe: bool = True) -> str | None:
        """Why this agent cannot send the spec's requests (None when it can): a target that is not
        this machine's loopback without ``allow_remote``, a loopback target when this agent is not on
        the driver's machine (it would load its own machine, not the one the user named), or (with
        ``probe``) one it cannot connect to. The rule is checked here, where the requests leave."""
        home = machine_id() == driver_machine
        for path in _addresses(spec, "unix"):
            if not home:
                return (f"target {path} is a Unix socket, and this agent is on another machine than pounder: "
                        "it would load its own machine")
            if probe and (problem := _unreachable(path, partial(_unix_connection, path))):
                return problem
        for addresses in _addresses(spec, "tcp"):  # reachable when one of them is: the engine tries each
            problems: list[str] = []
            reachable = not probe
            for address in addresses.split(","):
                host, port = _host_port(address)
                if not allow_remote and not is_loopback(host):
                    return f"target {address} is not on this machine's loopback (--allow-remote allows it)"
                if is_loopback(host) and not home:
                    return (f"target {address} is a loopback address, and this agent is on another machine than "
                            "pounder: it would load its own machine; give an address the agents reach "
                            "(with --allow-remote)")
                if not reachable:
                    connect = partial(socket.create_connection, (host, port), PROBE_TIMEOUT_S)
                    problem = _unreachable(address, connect)
                    reachable = problem is None
                    problems += [problem] if problem else []
            if not reachable:
                return problems[0]
        return _io_problem(spec)

    def start(self, spec: EngineSpec) -> str | None:
        """Start the engine on ``spec`` (it waits for the spec's start time); the engine's refusal
        as a message, None once it runs."""
        from pounder import _engine

        if self._run is not None and self._run.result() is None:
            return "this agent already runs a load"
        try:
            self._run = _engine.start(spec)
        except ValueError as error:
            return f"the engine rejected the spec: {error}"
        return None

    def poll(self, seconds_from: int = 0) -> tuple[dict[str, Any], list[str], str | None]:
        """The engine's progress, the seconds of its series finished since the ``seconds_from``-th
        (JSON, each with its histogram: what the driver keeps should this agent die), and its
        result JSON once the run is over (else None)."""
        if self._run is None:
            return {"phase": "waiting", "elapsed_s": 0.0, "complete": 0, "failed": 0, "rate": 0.0}, [], None
        result = self._run.result()  # before the seconds: a finished run's seconds are all there
        return dict(self._run.progress()), self._run.seconds(seconds_from), result

    def cancel(self) -> None:
        """Stop issuing requests; the result still comes, with what was measured."""
        if self._run is not None:
            self._run.cancel()
