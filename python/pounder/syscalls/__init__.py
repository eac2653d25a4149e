"""System calls per request of a pre-forking server: strace attached to its children while
pounder's bounded load runs, the calls counted by name, and the failing ones (errno, path).

::

    from pounder.syscalls import render_syscalls, trace_syscalls

    report = trace_syscalls("http://127.0.0.1:8080/news/perl/mod_perl/summary",
                            server_pidfile="/run/apache2/apache2.pid", requests=1000)
    print(report.per_request("newfstatat"))
    for failure in report.failures:          # e.g. openat ENOENT /.htaccess 1.0 per request
        print(failure.name, failure.errno, failure.path, failure.per_request)
    print(render_syscalls(report))

:func:`parse_strace_log` counts any ``strace -f -o FILE`` log the same way.
"""

from pounder.syscalls._parse import PATH_CALLS, Call, StraceLogParser, TraceCounts, decode_c_string, parse_strace_log
from pounder.syscalls._read import MalformedSyscallsError, syscalls_from_dict
from pounder.syscalls._report import (
    SYSCALLS_SCHEMA,
    FailedCall,
    SyscallCount,
    SyscallReport,
    count_tables,
    render_syscalls,
)
from pounder.syscalls._strace import find_strace, strace_version
from pounder.syscalls._trace import (
    DEFAULT_CONNECTIONS,
    DEFAULT_DURATION_S,
    DEFAULT_LOAD,
    DEFAULT_REQUESTS,
    DEFAULT_WARMUP,
    trace_syscalls,
)

__all__ = [
    "DEFAULT_CONNECTIONS",
    "DEFAULT_DURATION_S",
    "DEFAULT_LOAD",
    "DEFAULT_REQUESTS",
    "DEFAULT_WARMUP",
    "PATH_CALLS",
    "SYSCALLS_SCHEMA",
    "Call",
    "FailedCall",
    "MalformedSyscallsError",
    "StraceLogParser",
    "SyscallCount",
    "SyscallReport",
    "TraceCounts",
    "count_tables",
    "decode_c_string",
    "find_strace",
    "parse_strace_log",
    "render_syscalls",
    "strace_version",
    "syscalls_from_dict",
    "trace_syscalls",
]
