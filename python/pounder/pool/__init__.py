"""Running a server under test: what ``pounder tune`` and ``pounder run`` (experiments) both stand on.

* adapters (:class:`Adapter` and one class per server, listed once in :data:`REGISTRY`) and their
  one factory, :func:`build_adapter` (:func:`make_adapter` with the :class:`AdapterOptions` as
  keywords); :func:`adapter_from_dict` rebuilds a stored one;
* :class:`Runner`: start a configuration (:class:`PoolParams`) in a fresh directory, warm it
  until its children's memory and its throughput stand still (:class:`Warmed`), load it with a
  :class:`Workload` (one path or a weighted mix, keep-alive, slow clients), time a fresh child
  (:meth:`Runner.child_start_s`), snapshot it, stop it, with the machine's memory floor watched
  throughout (:class:`MemoryFloorError`); the server and the load generator on CPUs of their own
  (:func:`split_cpus`, :func:`check_cpus`);
* the children's sizes and their growth per request (:func:`child_sizes`, :func:`pool_memory`,
  :func:`growth_per_request`; :func:`child_statm`: VmSize as Apache2::SizeLimit reads it);
* the results directory (:class:`ResultsDir`; :func:`write_json` and :func:`write_file` write a
  file of one at once).

::

    import os
    from pathlib import Path
    from pounder.pool import PoolParams, Runner, Workload, make_adapter, split_cpus

    server_cpus, load_cpus, text = split_cpus(sorted(os.sched_getaffinity(0)))
    runner = Runner(make_adapter("gunicorn", "app:app", preload=True), Path("servers"),
                    Workload(targets=((3, "GET", "/"), (1, "GET", "/search?q=x"))),
                    memory_floor=256 * 2**20, timeout_s=30.0, server_cpus=server_cpus, load_cpus=load_cpus)
    with runner.started(PoolParams(4)) as server:
        print(runner.warm(server).describe())
        print(runner.bench(server, 4, duration=5.0).derived.requests_per_s)
"""

from pounder.pool._adapter import (
    MAX_THREADS,
    SERVER_OPTIONS,
    Adapter,
    AdapterOptions,
    ChildLimit,
    PoolParams,
    ServerOption,
    own_name,
)
from pounder.pool._adapters import (
    ADAPTERS,
    KINDS,
    REGISTRY,
    TARGET_FIELDS,
    adapter_from_dict,
    build_adapter,
    demo_adapter,
    make_adapter,
    refused_option,
    status_reader,
    status_summary,
)
from pounder.pool._apache import ApacheAdapter
from pounder.pool._command import CommandAdapter
from pounder.pool._cpus import check_cpus, split_cpus
from pounder.pool._gunicorn import GunicornAdapter
from pounder.pool._phpfpm import PhpFpmAdapter
from pounder.pool._puma import PumaAdapter, puma_threads
from pounder.pool._queue import QueueWatch
from pounder.pool._runner import WARM_FAILING_ROUNDS, MemoryFloorError, Runner, Warmed
from pounder.pool._sizes import child_sizes, child_statm, growth_per_request, pool_memory
from pounder.pool._starman import StarmanAdapter
from pounder.pool._store import (
    OLD_TUNE_SCHEMAS,
    POINT_SCHEMA,
    RESULT_SCHEMA,
    SUMMARY_SCHEMA,
    TUNE_SCHEMA,
    ResultsDir,
    write_file,
    write_json,
)
from pounder.pool._unicorn import UnicornAdapter
from pounder.pool._uwsgi import UwsgiAdapter
from pounder.pool._workload import Workload

__all__ = [
    "WARM_FAILING_ROUNDS",
    "ADAPTERS",
    "KINDS",
    "REGISTRY",
    "MAX_THREADS",
    "SERVER_OPTIONS",
    "OLD_TUNE_SCHEMAS",
    "POINT_SCHEMA",
    "RESULT_SCHEMA",
    "SUMMARY_SCHEMA",
    "TUNE_SCHEMA",
    "Adapter",
    "AdapterOptions",
    "ApacheAdapter",
    "ChildLimit",
    "CommandAdapter",
    "GunicornAdapter",
    "MemoryFloorError",
    "PhpFpmAdapter",
    "PoolParams",
    "PumaAdapter",
    "ServerOption",
    "QueueWatch",
    "ResultsDir",
    "Runner",
    "StarmanAdapter",
    "UnicornAdapter",
    "UwsgiAdapter",
    "TARGET_FIELDS",
    "Warmed",
    "Workload",
    "adapter_from_dict",
    "build_adapter",
    "check_cpus",
    "child_sizes",
    "child_statm",
    "demo_adapter",
    "growth_per_request",
    "make_adapter",
    "own_name",
    "refused_option",
    "pool_memory",
    "puma_threads",
    "split_cpus",
    "status_reader",
    "status_summary",
    "write_file",
    "write_json",
]
