"""Unicorn serving a Rack application as a pool under test."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import ClassVar

from pounder._errors import (
    public,
)
from pounder._units import count_text, mib_unit
from pounder.pool._adapter import ChildLimit, PoolParams, _env_prefix, server_names
from pounder.pool._rack import RackAdapter
from pounder.servers import (
    HOST,
    ManagedServer,
    UnicornServer,
    UnicornSettings,
    render_unicorn_config,
    unicorn_missing,
)


@public
class UnicornAdapter(RackAdapter):
    """Unicorn serving the Rack application in ``rackup`` (a config.ru) in the production
    environment (``-E production``).

    ``preload``: ``preload_app true`` (load the application in the master before forking).
    Default False, Unicorn 6's own default.

    Unicorn has no limit on the requests a worker serves: ``server()`` refuses ``max_requests`` > 0."""

    kind = "unicorn"
    who = "unicorn"
    missing = staticmethod(unicorn_missing)
    preload_remedy = "set preload_app true in unicorn.conf.rb"
    preload_off = ("preload_app false",)
    respawn = ("Unicorn's master forks a replacement as soon as it reaps an exited worker: a fork plus loading the "
               "application (unless preload_app true) and the new worker's warm-up")
    names: ClassVar[Mapping[str, str]] = server_names(max_clients="worker_processes", preload="preload_app true")

    def _server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
                keepalive: bool = False, host: str = HOST) -> ManagedServer:
        """Unicorn closes every connection after its answer (``keepalive`` is not a setting of it)."""
        self.refuse_request_limit(params)
        return UnicornServer(workdir, self.rackup, workers=params.max_clients, preload_app=self.with_preload(params),
                             env=self.env, extra_args=self.extra_args, cpus=cpus, host=host)

    def _render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        settings = UnicornSettings(workers=params.max_clients, preload_app=self.with_preload(params))
        lines = ["# unicorn.conf.rb", render_unicorn_config(settings, port=None).rstrip("\n"),
                 f"# listen: yours (Unicorn's default is 0.0.0.0:8080); pounder measured with a backlog of "
                 f"{settings.backlog}, Unicorn's default"]
        if params.max_requests:
            lines.append(f"# {params.max_requests} requests per worker: Unicorn has no such limit "
                         "(use a worker killer)")
        lines += ["", "# run with",
                  f"{_env_prefix(self.env)}unicorn -E production -c unicorn.conf.rb "
                  f"{self.command_tail()}"]
        return "\n".join(lines)

    def size_limit(self, limit: ChildLimit) -> str:
        """unicorn-worker-killer (Debian ruby-unicorn-worker-killer): ``Oom`` replaces a worker whose
        RSS (shared pages included) passes a limit drawn between its two figures, checked every 16
        requests; ``MaxRequests`` after a count drawn between its two (given with a leak only)."""
        high, started = limit.rss, limit.start + limit.shared
        low = min(high, max(started, high - (high - started) // 10))  # spread over the last tenth of the growth
        lines = [f"Unicorn cannot replace a worker after a number of requests: unicorn-worker-killer can, in "
                 f"config.ru before `run`. Its Oom limit is RSS: shared {mib_unit(limit.shared)} + the private "
                 f"{mib_unit(limit.limit)} each of {count_text(limit.children, 'worker')} may reach in the budget = "
                 f"{mib_unit(high)}:", "  require 'unicorn/worker_killer'",
                 f"  use Unicorn::WorkerKiller::Oom, {low}, {high}  # bytes of RSS"]
        if limit.requests:
            lines.append(f"  use Unicorn::WorkerKiller::MaxRequests, {limit.requests - limit.requests // 10}, "
                         f"{limit.requests}  # the measured leak reaches the limit after {limit.requests:,} requests")
        return "\n".join(lines)

    def describe(self) -> str:
        return f"Unicorn serving {self.rackup}{' with preload_app true' if self.preload else ''}"
