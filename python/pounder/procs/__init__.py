"""A pre-forking server's processes: memory per process from ``/proc/PID/smaps_rollup`` (USS,
shared, PSS: never summed RSS), the pool totals, MaxClients from measured numbers, and a
background sampler for the length of a bench.

::

    import pounder

    server = pounder.find_server(pidfile="/run/apache2/apache2.pid")
    snap = pounder.snapshot(server)
    print(snap.totals.footprint, snap.totals.max_child_uss)
    print(pounder.max_clients("4G", snap).max_clients)
    print(pounder.procs.max_clients_from(4 << 30, shared=80 << 20, child_uss=20 << 20, child_rss=110 << 20))

    sampler = pounder.ServerSampler(server, interval_s=1.0)
    sampler.start()
    ...  # load the server
    report = sampler.stop()
    print(report.server_cpu_s, report.private_growth_total)
"""

from pounder._units import parse_ram, parse_size
from pounder.procs._find import (
    MEM_OPTIONS,
    SERVER_OPTIONS,
    ServerGone,
    ServerTarget,
    TreeMember,
    discover,
    find_server,
    read_pidfile,
    serves,
)
from pounder.procs._identity import check_server, server_exit
from pounder.procs._load_report import (
    LOAD_SCHEMA,
    ChildSummary,
    MalformedReportError,
    MemPoint,
    PerRequest,
    ServerLoadReport,
    per_request,
)
from pounder.procs._maxclients import (
    PAGE_SIZE,
    ClientLimit,
    MaxClients,
    NoChildrenError,
    default_ram_budget,
    max_clients,
    max_clients_from,
    why_no_max_clients,
)
from pounder.procs._mem_result import MEM_READ_SCHEMAS, MalformedMemError, MemResult, load_mem, mem_from_dict
from pounder.procs._read import (
    ROLES,
    ProcessGone,
    ProcMem,
    Role,
    Rollup,
    Statm,
    mem_available,
    mem_total,
    process_cpu_clock,
    read_process,
    read_rollup,
    read_statm,
)
from pounder.procs._render import render_mem
from pounder.procs._sampler import ServerSampler
from pounder.procs._snapshot import MEM_SCHEMA, PoolSnapshot, PoolTotals, read_members, snapshot
from pounder.procs._status import StatusPoint, parse_status

__all__ = [
    "check_server",
    "server_exit",
    "MEM_OPTIONS",
    "SERVER_OPTIONS",
    "LOAD_SCHEMA",
    "MEM_READ_SCHEMAS",
    "MEM_SCHEMA",
    "PAGE_SIZE",
    "ROLES",
    "ChildSummary",
    "ClientLimit",
    "MalformedMemError",
    "MalformedReportError",
    "MaxClients",
    "MemPoint",
    "MemResult",
    "NoChildrenError",
    "PerRequest",
    "PoolSnapshot",
    "PoolTotals",
    "ProcMem",
    "ProcessGone",
    "Role",
    "Rollup",
    "Statm",
    "ServerGone",
    "ServerLoadReport",
    "ServerSampler",
    "ServerTarget",
    "StatusPoint",
    "TreeMember",
    "default_ram_budget",
    "discover",
    "find_server",
    "max_clients",
    "max_clients_from",
    "why_no_max_clients",
    "load_mem",
    "mem_available",
    "mem_from_dict",
    "mem_total",
    "parse_ram",
    "parse_size",
    "parse_status",
    "per_request",
    "process_cpu_clock",
    "read_members",
    "read_pidfile",
    "read_process",
    "read_rollup",
    "read_statm",
    "render_mem",
    "serves",
    "snapshot",
]
