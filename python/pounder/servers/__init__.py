"""Real pre-forking servers on a free loopback port, in their own directory, stopped for sure.

    from pounder.servers import GunicornServer

    with GunicornServer("/tmp/work", "app:app", pythonpath="/srv/app", workers=3) as server:
        urllib.request.urlopen(server.url + "/")
        server.children()    # the worker pids

Each server class keeps the rendering of its configuration / command line in a pure function of
its private module (``_apache_conf.render_apache_conf``, ``_gunicorn.gunicorn_command``,
``render_command``, ...) separate from the process handling of :class:`ManagedServer`.
:class:`CommandServer` runs any other pre-forking server from a command template
(``... --bind {host}:{port} --workers {workers}``), and :class:`ApacheServer` can add the user's
own Apache configuration file (``conf=``) to its private httpd.conf, minus the directives pounder
sets itself.

A server that fails raises a :class:`ServerFailure` (:class:`ServerStartError`,
:class:`ServerExitedError`) whose ``log_tail`` is a bounded excerpt of its logs, errors first
(``_logs``), with Apache's lines of the generated httpd.conf named as the user's file's.

Every server runs in a process group of its own that the guard (``_guard``) stops should this
process die without stopping it, SIGKILL included; :func:`guard_group` puts another group of this
process's under it (a local Ray node's), :func:`release_group` takes it off.

Memory as the platform counts it: a server started with ``cgroup=True`` runs in a memory cgroup of
its own (:func:`make_cgroup`, :class:`MemoryCgroup`, whose ``memory()`` is a :class:`CgroupMemory`);
``_cgroup.cgroup_limit`` reads the memory limit of a cgroup. The pod, emulated: a
server given a :class:`Pod` (``server.pod``) runs in a cpu cgroup with its CPU quota too
(:class:`CpuCgroup`, whose ``usage()`` is a :class:`CpuUsage`), its memory
limit enforced; :func:`cpu_quota` reads the quota of a cgroup (``--cpus cgroup``),
:func:`pod_unavailable` says why no quota can be set here, :func:`pod_cpus_check` checks a quota.

A server's own view of a load (its ``status_counters`` read before and after it): its
:class:`StatusReader` (:data:`PHP_FPM_STATUS`, :data:`UWSGI_STATUS`, :data:`PUMA_STATUS`; others
:data:`NO_STATUS`), which its pool adapter names.
"""

from pounder.servers._apache import ApacheServer, apache_missing, apache_notes, debian_layout, read_user_conf
from pounder.servers._base import HOST, ManagedServer
from pounder.servers._cgroup import CgroupMemory, MemoryCgroup, make_cgroup
from pounder.servers._command import CommandServer, command_missing, render_command
from pounder.servers._failure import ServerExitedError, ServerFailure, ServerStartError, die_with_parent_hook
from pounder.servers._guard import guard_group, release_group
from pounder.servers._gunicorn import (
    GunicornServer,
    gunicorn_app_file,
    gunicorn_app_missing,
    gunicorn_missing,
    gunicorn_worker_class,
)
from pounder.servers._listen import AcceptQueue, owns_listener
from pounder.servers._net import free_port, listen_address
from pounder.servers._nginx import NginxFront
from pounder.servers._nytprof import (
    NYTPROF_FILE,
    WINDOW_FLAG,
    WINDOW_MARK,
    apache_nytprof_lines,
    nytprof_env,
    starman_nytprof_args,
)
from pounder.servers._phpfpm import PhpFpmServer, check_pool_conf, phpfpm_missing
from pounder.servers._phpfpm_pool import PoolFile, parse_pool_conf, read_pool_conf
from pounder.servers._phpfpm_status import PHP_FPM_STATUS
from pounder.servers._pod import CpuCgroup, CpuUsage, Pod, cpu_quota, pod_cpus_check, pod_unavailable
from pounder.servers._puma import (
    FORK_WORKER_MAX,
    PumaServer,
    PumaSettings,
    PumaStats,
    PumaWorkerStats,
    check_fork_worker,
    puma_missing,
    puma_stats,
    render_puma_config,
)
from pounder.servers._puma_status import PUMA_STATUS
from pounder.servers._ram_budget import RAM_FORMS, RamBudget, parse_ram_budget
from pounder.servers._starman import StarmanServer, starman_missing
from pounder.servers._status import NO_STATUS, StatusReader
from pounder.servers._tool import interrupt_then_kill
from pounder.servers._unicorn import UnicornServer, UnicornSettings, render_unicorn_config, unicorn_missing
from pounder.servers._uwsgi import (
    CHEAPER_ALGO,
    CHEAPER_OVERLOAD,
    UwsgiServer,
    ini_lazy_apps,
    read_uwsgi_ini,
    uwsgi_missing,
    uwsgi_stats,
    uwsgi_target_is_ini,
)
from pounder.servers._uwsgi_app import uwsgi_app_file, uwsgi_app_missing
from pounder.servers._uwsgi_options import uwsgi_unknown_options
from pounder.servers._uwsgi_status import UWSGI_STATUS

__all__ = [
    "FORK_WORKER_MAX",
    "HOST",
    "NO_STATUS",
    "PHP_FPM_STATUS",
    "PUMA_STATUS",
    "StatusReader",
    "UWSGI_STATUS",
    "AcceptQueue",
    "ApacheServer",
    "CgroupMemory",
    "CommandServer",
    "CpuCgroup",
    "CpuUsage",
    "GunicornServer",
    "ManagedServer",
    "MemoryCgroup",
    "NginxFront",
    "PhpFpmServer",
    "Pod",
    "PoolFile",
    "PumaServer",
    "PumaSettings",
    "PumaStats",
    "PumaWorkerStats",
    "ServerExitedError",
    "ServerFailure",
    "ServerStartError",
    "StarmanServer",
    "CHEAPER_ALGO",
    "CHEAPER_OVERLOAD",
    "UwsgiServer",
    "UnicornServer",
    "UnicornSettings",
    "check_fork_worker",
    "check_pool_conf",
    "parse_pool_conf",
    "phpfpm_missing",
    "read_pool_conf",
    "apache_missing",
    "apache_notes",
    "parse_ram_budget",
    "RAM_FORMS",
    "RamBudget",
    "command_missing",
    "cpu_quota",
    "debian_layout",
    "die_with_parent_hook",
    "free_port",
    "guard_group",
    "interrupt_then_kill",
    "gunicorn_app_file",
    "gunicorn_app_missing",
    "gunicorn_missing",
    "gunicorn_worker_class",
    "ini_lazy_apps",
    "listen_address",
    "make_cgroup",
    "pod_cpus_check",
    "pod_unavailable",
    "read_user_conf",
    "read_uwsgi_ini",
    "release_group",
    "owns_listener",
    "puma_missing",
    "puma_stats",
    "render_command",
    "render_puma_config",
    "render_unicorn_config",
    "starman_missing",
    "uwsgi_app_file",
    "uwsgi_app_missing",
    "uwsgi_missing",
    "uwsgi_stats",
    "uwsgi_target_is_ini",
    "uwsgi_unknown_options",
    "unicorn_missing",
    "NYTPROF_FILE",
    "WINDOW_FLAG",
    "WINDOW_MARK",
    "apache_nytprof_lines",
    "nytprof_env",
    "starman_nytprof_args",
]
