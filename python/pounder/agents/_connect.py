"""Joining a Ray cluster from this process: the address ("local", "auto", HOST:PORT), Ray imported
only here and only when asked for, the head probed before ``ray.init`` (:mod:`._gcs`), a local
cluster started on loopback in a guarded process group (:mod:`._ray_init`) and stopped again."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from types import ModuleType
from typing import Any

from pounder import _interrupt
from pounder._errors import PounderError, UsageError
from pounder.agents._gcs import probe_gcs
from pounder.agents._ray_init import AUTH_MODE, LocalNode, kept_signal_handlers, restore_auth_mode
from pounder.traffic import is_loopback

RAY_EXTRA = "pip install 'pounder[ray]'"
LOCAL, AUTO = "local", "auto"
CONNECT_TIMEOUT_S = 3.0
CURRENT_CLUSTER = Path("/tmp/ray/ray_current_cluster")


def host_port(address: str) -> tuple[str, int]:
    """The head's host and port of ``--ray HOST:PORT``; :class:`~pounder.UsageError` for anything else."""
    if address.startswith("ray://"):
        raise UsageError("--ray takes the cluster's HOST:PORT (its GCS address), not a ray:// client address")
    host, colon, port = address.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--ray must be local, auto or HOST:PORT (the head's address, e.g. 10.0.0.5:6379), "
                         f"not {address!r}")
    return host.strip("[]"), int(port)


def _loopback(host: str) -> bool:
    try:
        return is_loopback(host)
    except ValueError:
        return host == "localhost"


def resolve_address(address: str) -> str:
    """Where ``address`` is: "local", or the head's HOST:PORT ("auto": RAY_ADDRESS or this machine's last)."""
    return _resolve_auto() if address == AUTO else address


def _resolve_auto() -> str:
    address = os.environ.get("RAY_ADDRESS") or (CURRENT_CLUSTER.read_text().strip()
                                                 if CURRENT_CLUSTER.is_file() else "")  # fmt: skip
    if not address:
        raise PounderError(f"no Ray cluster found: --ray auto reads RAY_ADDRESS and {CURRENT_CLUSTER}; "
                           "name one with --ray HOST:PORT, or use --ray local")
    return address


def _import_ray(loopback: bool) -> ModuleType:
    # Ray replaces 127.0.0.1 with the machine's outward address (toward 8.8.8.8) when it guesses
    # the node's IP, unless this is set before it is imported (ray-project/ray#59110). A cluster
    # on loopback then stays on loopback.
    if loopback:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise UsageError(f"--ray needs Ray, which is not installed: {RAY_EXTRA}") from None
    return ray


@contextmanager
def connect(address: str, watch: _interrupt.Watch | None = None) -> Iterator[ModuleType]:
    """Ray, connected to the cluster at ``address`` (what :func:`resolve_address` found; "local": one
    started on loopback, its processes in a group of their own), then disconnected (a local cluster
    stopped; killed at once after a signal, also by ``watch``'s watcher). :class:`~pounder.UsageError`
    without Ray; :class:`~pounder.PounderError` when no GCS answers there (:func:`probe_gcs`)."""
    local = address == LOCAL
    host, port = ("127.0.0.1", 0) if local else host_port(address)
    ray = _import_ray(_loopback(host))
    if not local:
        probe_gcs(host, port, address, CONNECT_TIMEOUT_S)
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR, "namespace": "pounder"}
    node = LocalNode() if local else None
    if node is not None:
        options |= {"address": "local", "_node_ip_address": "127.0.0.1", "include_dashboard": False,
                    "dashboard_host": "127.0.0.1", "num_cpus": 1, "object_store_memory": 80 << 20}
        if watch is not None:
            watch.stop = node.kill
    else:
        options["address"] = address
    auth_mode, at_once = os.environ.get(AUTH_MODE), True  # unless the block ends without a signal
    try:
        with kept_signal_handlers(), node.starting() if node is not None else nullcontext():
            try:
                ray.init(**options)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise PounderError(f"cannot join the Ray cluster at {address}: {str(error).splitlines()[0]}") from None
        yield ray
        at_once = _interrupt.received()
    finally:
        try:
            if node is None:
                ray.shutdown()
            else:
                node.stop(ray, at_once=at_once)
        finally:
            if node is not None:
                restore_auth_mode(auth_mode)
