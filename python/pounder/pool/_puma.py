"""Puma (cluster mode, one thread per worker unless ``threads`` says otherwise) serving a Rack
application as a pool under test."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pounder._errors import UsageError, public
from pounder._units import MIB, mib_unit
from pounder.pool._adapter import MAX_THREADS, AdapterOptions, ChildLimit, PoolParams, _env_prefix, server_names
from pounder.pool._rack import RackAdapter
from pounder.servers import (
    HOST,
    PUMA_STATUS,
    ManagedServer,
    PumaServer,
    PumaSettings,
    check_fork_worker,
    puma_missing,
    render_puma_config,
)

_THREADS = re.compile(r"^\s*(\d{1,4})\s*(?:[,:]\s*(\d{1,4})\s*)?$")


@public
def puma_threads(value: Any) -> tuple[int, int]:
    """Puma's ``threads MIN, MAX`` from ``value``: "N" (N,N, as ``puma -t N``), "MIN,MAX" (or
    Puma's "MIN:MAX"), an int or a pair of ints; :class:`~pounder.UsageError` in one line unless
    0 <= MIN <= MAX, 1 <= MAX <= :data:`MAX_THREADS`."""
    pair: tuple[Any, ...]
    if isinstance(value, str):
        match = _THREADS.match(value)
        pair = (int(match[1]), int(match[2] or match[1])) if match else ()
    elif isinstance(value, int) and not isinstance(value, bool):
        pair = (value, value)
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        pair = tuple(value)
    else:
        pair = ()
    if len(pair) != 2 or not all(isinstance(n, int) and not isinstance(n, bool) for n in pair) \
            or not 0 <= pair[0] <= pair[1] or not 1 <= pair[1] <= MAX_THREADS:
        raise UsageError(f"puma: threads must be N or MIN,MAX with 0 <= MIN <= MAX and 1 <= MAX <= {MAX_THREADS}, "
                         f"not {value!r}")
    return int(pair[0]), int(pair[1])


@public
class PumaAdapter(RackAdapter):
    """Puma 5 in cluster mode serving the Rack application in ``rackup`` (a config.ru), with
    ``threads`` (MIN, MAX: default 1, 1, one request per worker, as the other pre-fork servers; see
    :func:`puma_threads`) in the production environment.

    ``preload``: ``preload_app!`` (load the application in the master before forking). Default
    False, as Puma 5.6 runs a configuration file that sets ``workers``: its own default turns
    preloading on only when the environment's WEB_CONCURRENCY is above 1 (not for ``workers`` in
    the file nor ``-w``); pounder writes ``preload_app!`` out either way.

    ``fork_worker``: Puma's ``fork_worker N`` (None: off; see
    :class:`~pounder.servers.PumaServer`): worker 0 forks the others, which are reforked from it
    once it has served N requests (0: never).

    Puma has no limit on the requests a worker serves: ``server()`` refuses ``max_requests`` > 0."""

    kind = "puma"
    status_reader = PUMA_STATUS
    who = "puma"
    missing = staticmethod(puma_missing)
    preload_remedy = "add preload_app! to puma.rb"
    respawn = ("Puma's master forks a replacement when it sees a worker exit: a fork plus loading the application "
               "(unless preload_app!) and the new worker's warm-up")
    names: ClassVar[Mapping[str, str]] = server_names(max_clients="workers", preload="preload_app!", threads="threads")
    options = frozenset({"preload", "env", "threads", "fork_worker"})
    threaded = True
    runtime_lock = "Ruby's GVL"
    preload_off = ("preload_app! false",)

    @classmethod
    def from_options(cls, target: str | os.PathLike[str] | None, options: AdapterOptions) -> PumaAdapter:
        threads = {} if options.threads is None else {"threads": options.threads}
        return cls(cls.given_target(target), env=options.env, extra_args=options.extra_args, **options.preloading,
                   fork_worker=options.fork_worker, **threads)

    def __init__(self, rackup: str | os.PathLike[str], *, preload: bool = False,
                 env: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = (),
                 threads: Any = None, fork_worker: int | None = None) -> None:
        super().__init__(rackup, preload=preload, env=env, extra_args=extra_args)
        self._threads_given = threads is not None
        self.threads = puma_threads((1, 1) if threads is None else threads)
        self.fork_worker = check_fork_worker(fork_worker)

    def _server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
                keepalive: bool = False, host: str = HOST) -> ManagedServer:
        """Puma keeps connections alive on its own (``keepalive`` is not a setting of it)."""
        self.refuse_request_limit(params)
        return PumaServer(workdir, self.rackup, workers=params.max_clients, threads=self.threads_in(params),
                          preload_app=self.with_preload(params), fork_worker=self.fork_worker, env=self.env,
                          extra_args=self.extra_args, cpus=cpus, host=host)

    def _render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        settings = PumaSettings(workers=params.max_clients, threads=self.threads_in(params),
                                preload_app=self.with_preload(params), fork_worker=self.fork_worker)
        low, high = settings.threads
        lines = ["# puma.rb", render_puma_config(settings, port=None).rstrip("\n"),
                 f"# threads {low}, {high}: as measured, "
                 + ("one request per worker at a time" if high == 1 else f"up to {high} requests per worker at a time"),
                 f"# bind: yours (Puma's default is tcp://0.0.0.0:9292); pounder measured with a backlog of "
                 f"{settings.backlog}, Puma's default"]
        if params.max_requests:
            lines.append(f"# {params.max_requests} requests per worker: Puma has no such limit (use a worker killer)")
        lines += ["", "# run with",
                  f"{_env_prefix(self.env)}puma -C puma.rb {self.command_tail()}"]
        return "\n".join(lines)

    def threads_in(self, params: PoolParams) -> tuple[int, int]:
        """Puma's ``threads MIN, MAX`` of a start with ``params``: N, N for ``params.threads`` N
        (it overrides ``--threads``), else the adapter's own."""
        threads = params.threads
        return self.threads if threads is None else (threads, threads)

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

    @property
    def threads_fixed(self) -> bool:
        return self._threads_given

    def to_dict(self) -> dict[str, Any]:  # threads only when given: tune compares workers x threads otherwise
        return {**super().to_dict(), **({"threads": list(self.threads)} if self._threads_given else {}),
                **({} if self.fork_worker is None else {"fork_worker": self.fork_worker})}

    def describe(self) -> str:
        low, high = self.threads
        preloading = " with preload_app!" if self.preload else ""
        forking = "" if self.fork_worker is None else f", fork_worker {self.fork_worker}"
        return f"Puma (cluster, threads {low},{high}{forking}) serving {self.rackup}{preloading}"
