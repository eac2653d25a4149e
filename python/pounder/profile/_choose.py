"""Which profiler for a server: by the runtime its children run (what /proc/PID/exe and
/proc/PID/maps show), or as the user names it (``--profiler``)."""

from __future__ import annotations

import os
from typing import Any

from pounder._errors import UsageError
from pounder.procs import ServerTarget
from pounder.profile._profiler import Profiler

PROFILERS = ("auto", "py-spy", "nytprof", "perf")
RUNTIMES = ("python", "perl", "other")


def _maps(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
            return maps.read()
    except OSError:
        return ""


def _exe(pid: int) -> str:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def runtime(target: ServerTarget) -> str:
    """"python", "perl" or "other": what the server's first child (else its parent) runs. Python:
    a ``python*`` program or libpython / uWSGI's python plugin mapped; Perl: a ``perl`` program or
    libperl (mod_perl) mapped."""
    pid = target.children[0].pid if target.children else target.pid
    exe, maps = _exe(pid), _maps(pid)
    if exe.startswith("python") or "libpython" in maps or "python3_plugin.so" in maps:
        return "python"
    if exe.startswith("perl") or "libperl" in maps:
        return "perl"
    return "other"


def make_profiler(target: ServerTarget, name: str = "auto", **options: Any) -> Profiler:
    """The profiler ``name`` (one of :data:`PROFILERS`; "auto" by :func:`runtime`: py-spy for Python,
    Devel::NYTProf for Perl, perf for anything else) for ``target``; ``options`` go to py-spy
    (``rate``, ``native``) or perf (``frequency``) and are ignored by the others."""
    if name not in PROFILERS:
        raise UsageError(f"--profiler must be one of {', '.join(PROFILERS)}, not {name!r}")
    if name == "auto":
        name = {"python": "py-spy", "perl": "nytprof", "other": "perf"}[runtime(target)]
    if options.get("native") and name != "py-spy":
        raise UsageError(f"--native is py-spy's (native frames of Python); the profiler here is {name}")
    if options.get("rate") is not None and name == "nytprof":
        raise UsageError("--sample-rate is for py-spy and perf: NYTProf does not sample, it times every call")
    if name == "py-spy":
        from pounder.profile._pyspy import PySpy

        return PySpy(target, rate=options.get("rate", 100), native=options.get("native", False))
    if name == "nytprof":
        from pounder.profile._nytprof import NYTProf

        return NYTProf(target)
    from pounder.profile._perf import Perf

    return Perf(target, frequency=int(options.get("rate", 99)))
