"""Puma (cluster mode, one thread per worker) serving a Rack application as a pool under test."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import ClassVar

from pounder._errors import public
from pounder._units import MIB, mib_unit
from pounder.pool._adapter import ChildLimit, PoolParams, _env_prefix
from pounder.pool._rack import RackAdapter
from pounder.servers import (
    HOST,
    ManagedServer,
    PumaServer,
    PumaSettings,
    puma_missing,
    render_puma_config,
)


@public
class PumaAdapter(RackAdapter):
    """Puma 5 in cluster mode serving the Rack application in ``rackup`` (a config.ru), with
    ``threads 1, 1`` (one request per worker, as the other pre-fork servers) in the production
    environment.

    ``preload``: ``preload_app!`` (load the application in the master before forking). Default
    False, as Puma 5.6 runs a configuration file that sets ``workers``: its own default turns
    preloading on only when the environment's WEB_CONCURRENCY is above 1 (not for ``workers`` in
    the file nor ``-w``); pounder writes ``preload_app!`` out either way.

    Puma has no limit on the requests a worker serves: ``server()`` refuses ``max_requests`` > 0."""

    kind = "puma"
    who = "puma"
    missing = staticmethod(puma_missing)
    preload_remedy = "add preload_app! to puma.rb"
    respawn = ("Puma's master forks a replacement when it sees a worker exit: a fork plus loading the application "
               "(unless preload_app!) and the new worker's warm-up")
    names: ClassVar[Mapping[str, str]] = {
        "max_clients": "workers", "max_requests": "-", "start_servers": "-",
        "min_spare": "-", "max_spare": "-", "preload": "preload_app!"}

    def server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
               keepalive: bool = False, host: str = HOST) -> ManagedServer:
        """Puma keeps connections alive on its own (``keepalive`` is not a setting of it)."""
        self.refuse_request_limit(params)
        return PumaServer(workdir, self.rackup, workers=params.max_clients, preload_app=self.with_preload(params),
                          env=self.env, extra_args=self.extra_args, cpus=cpus, host=host)

    def render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        settings = PumaSettings(workers=params.max_clients, preload_app=self.with_preload(params))
        lines = ["# puma.rb", render_puma_config(settings, port=None).rstrip("\n"),
                 f"# bind: yours (Puma's default is tcp://0.0.0.0:9292); pounder measured with a backlog of "
                 f"{settings.backlog}, Puma's default"]
        if params.max_requests:
            lines.append(f"# {params.max_requests} requests per worker: Puma has no such limit (use a worker killer)")
        lines += ["", "# run with",
                  f"{_env_prefix(self.env)}puma -C puma.rb {self.command_tail()}"]
        return "\n".join(lines)

    def size_limit(self, limit: ChildLimit) -> str:
        """puma_worker_killer (Debian ruby-puma-worker-killer): it sums the RSS of the master and
        every worker (shared pages counted in each) and restarts the largest worker above
        ``ram`` x ``percent_usage``; ``ram`` here is that sum when every worker reaches its share
        of the budget: the budget as the killer counts it."""
        total = limit.parent + limit.children * limit.rss
        leak = (f"; at the measured leak a worker reaches it after about {limit.requests:,} requests"
                if limit.requests else "")
        return "\n".join([
            f"Puma cannot replace a worker after a number of requests: puma_worker_killer can, by memory. It sums "
            f"the RSS of the master and every worker, so the pages they share count once per process: ram = master "
            f"RSS {mib_unit(limit.parent)} + {limit.children} x (shared {mib_unit(limit.shared)} + the private "
            f"{mib_unit(limit.limit)} each may reach in the budget) = {total // MIB:,} MiB, the RAM budget as it "
            f"counts it{leak}:",
            "  # puma.rb", "  before_fork do", "    require 'puma_worker_killer'",
            f"    PumaWorkerKiller.config {{ |c| c.ram = {total // MIB}; c.frequency = 5; c.percent_usage = 1.0 }}",
            "    PumaWorkerKiller.start", "  end"])

    def describe(self) -> str:
        return f"Puma (cluster, threads 1,1) serving {self.rackup}{' with preload_app!' if self.preload else ''}"
