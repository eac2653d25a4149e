"""A profile taken inside another run (``pounder tune --profile``, an experiment's
``record = ["profile"]``): the profiler checked before that run starts anything, the files it
writes, its summary in the run's text, and the side-by-side table of an experiment's variants.

1. :func:`check_profiler`: the run's server is not running yet, so the profiler is chosen by the
   server's language (py-spy for Python, Devel::NYTProf for a Perl server pounder starts, perf
   for PHP and Ruby) and checked as far as it can be without the server: the program there, the
   kernel allowing it (ptrace for py-spy, perf_event_paranoid and a test recording for perf).
   A server whose language pounder cannot tell (a command) is checked by :func:`profile` once it
   runs.
2. :func:`save_profile`: ``NAME.json`` (``pounder/profile/1``) and the flame graph SVG.
3. :func:`summary_lines`: the top functions by self share and the profiler's cost, with the
   lines of ``pounder profile``'s own text.
4. :func:`moved_rows` / :func:`render_moved`: for the top functions of each profile, the self
   share in every profile ("where did the time move"). Pure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from pounder._errors import UsageError
from pounder._units import count_text
from pounder.pool import write_file, write_json
from pounder.profile._flame import flame_svg
from pounder.profile._render import _rows, cost_lines
from pounder.profile._result import ProfileResult
from pounder.servers import die_with_parent_hook

SUMMARY_TOP = 5
"""Functions in a run's summary of its profile."""
MOVED_TOP = 5
"""Functions of each profile in the side-by-side table."""
_PTRACE_SCOPE = Path("/proc/sys/kernel/yama/ptrace_scope")
_PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
_CAP_SYS_PTRACE = 19
_CHECK_TIMEOUT_S = 20.0


def profiler_for(language: str, nytprof: bool) -> str:
    """The profiler a server of ``language`` gets: "py-spy" (python), "nytprof" (a Perl server
    that can load it, ``nytprof``), "perf" (php, ruby), "auto" (unknown: chosen by what it runs)."""
    if language == "python":
        return "py-spy"
    if language == "perl" and nytprof:
        return "nytprof"
    return "perf" if language in ("php", "ruby", "perl") else "auto"


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _may_ptrace() -> bool:
    """Whether this process may trace a process it did not start itself (a sibling: py-spy and
    the server are both pounder's children)."""
    if os.geteuid() == 0:
        return True
    scope = _read_int(_PTRACE_SCOPE)
    if not scope:
        return True
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    caps = next((line.split()[1] for line in status.splitlines() if line.startswith("CapEff:")), "0")
    return bool(int(caps, 16) >> _CAP_SYS_PTRACE & 1)


def _check_perf() -> None:
    perf = shutil.which("perf")
    if perf is None:
        raise UsageError("perf is not installed: profiling this server needs perf (apt-get install linux-perf; "
                         "linux-tools-generic on Ubuntu)")
    level = _read_int(_PARANOID)
    advice = (f"run pounder as root, or allow it: sysctl kernel.perf_event_paranoid=1 ({_PARANOID} is "
              f"{'unreadable' if level is None else level})")
    if os.geteuid() != 0 and level is not None and level > 2:
        raise UsageError(f"perf may not profile other processes here: {advice}")
    try:
        done = subprocess.run([perf, "record", "-q", "-g", "-F", "99", "-o", os.devnull, "--", "true"],
                              capture_output=True, timeout=_CHECK_TIMEOUT_S, check=False,
                              preexec_fn=die_with_parent_hook(signal.SIGKILL))
    except (OSError, subprocess.TimeoutExpired) as error:
        raise UsageError(f"perf could not make a test recording: {error}") from None
    if done.returncode != 0:
        said = next((line.strip() for line in done.stderr.decode(errors="replace").splitlines() if line.strip()),
                    "no message")
        raise UsageError(f"perf cannot record here ({said[:160]}): {advice}")


def check_profiler(language: str, nytprof: bool) -> str:
    """The profiler of :func:`profiler_for`, checked before anything starts; UsageError (one line,
    with what to do) when it cannot run here."""
    name = profiler_for(language, nytprof)
    if name == "py-spy":
        from pounder.profile._pyspy import find_py_spy

        find_py_spy()
        if not _may_ptrace():
            raise UsageError(f"py-spy may not read the server's processes: {_PTRACE_SCOPE} is "
                             f"{_read_int(_PTRACE_SCOPE)} and pounder runs neither as root nor with CAP_SYS_PTRACE "
                             "(run as root, or sysctl kernel.yama.ptrace_scope=0)")
    elif name == "nytprof":
        if shutil.which("nytprofmerge") is None or shutil.which("perl") is None:
            raise UsageError("nytprofmerge is not installed: profiling a Perl server needs Devel::NYTProf (Debian: "
                             "apt-get install libdevel-nytprof-perl)")
    elif name == "perf":
        _check_perf()
    return name


def save_profile(result: ProfileResult, folder: Path, name: str, flame: str) -> list[Path]:
    """``folder/NAME`` (the result as JSON) and ``folder/FLAME`` (its flame graph; none when
    nothing was sampled): the paths written."""
    written = [folder / name]
    write_json(written[0], result.to_dict())
    if result.stacks:
        title = f"{result.server_name} (pid {result.server_pid}): {result.url}"
        write_file(folder / flame, flame_svg(result.stacks, title=title, unit=result.unit))
        written.append(folder / flame)
    return written


def summary_lines(result: ProfileResult, files: Sequence[Path | str], *, heading: str = "Profile",
                  top: int = SUMMARY_TOP) -> list[str]:
    """The profile in a few lines of a run's text: ``heading`` with what was profiled, then
    (indented) the profiler's cost, the top functions by self share, the files."""
    version = result.profiler_version or result.profiler
    total = (count_text(result.total_weight, "sample") if result.unit == "samples"
             else f"{result.total_weight / 1e9:,.3f} s of profiled time")
    lines = [f"{heading}: {result.server_name} (pid {result.server_pid}) by {version}; {result.load}; "
             f"{count_text(result.rounds, 'round')} of an unprofiled and a profiled trial, "
             f"{result.profiled_requests:,} requests "
             "profiled", *(f"  {line}" for line in cost_lines(result))]
    if result.interrupted:
        lines.append("  Interrupted: the profile holds what was sampled until the run stopped.")
    if result.total_weight:
        lines += [f"  Top {count_text(min(top, len(result.functions)), 'function')} by self share (of {total}):",
                  *(f"  {line}" for line in _rows(result, result.by_self, top))]
    else:
        lines.append("  Nothing was sampled.")
    lines.append("  Files: " + ", ".join(str(path) for path in files))
    return lines


def moved_rows(profiles: Mapping[str, ProfileResult], baseline: str,
               top: int = MOVED_TOP) -> list[tuple[str, list[float | None]]]:
    """For the first ``top`` functions by self share of each profile (the baseline's first), the
    self share (0..1) of each in every profile, in the order of ``profiles``; None where a profile
    does not store the function (below its stored functions, or never seen). Rows by the
    baseline's share, then by the largest share elsewhere."""
    if baseline not in profiles:
        raise ValueError(f"no profile labelled {baseline!r}")
    order = [baseline, *(label for label in profiles if label != baseline)]
    names: list[str] = []
    for label in order:
        names += [row.name for row in profiles[label].by_self[:top] if row.name not in names]
    shares = {label: {row.name: row.self_share for row in result.functions} for label, result in profiles.items()}
    rows = [(name, [shares[label].get(name) for label in profiles]) for name in names]
    at = list(profiles).index(baseline)
    return sorted(rows, key=lambda row: (-(row[1][at] or 0.0), -max(share or 0.0 for share in row[1]), row[0]))


def render_moved(profiles: Mapping[str, ProfileResult], baseline: str, top: int = MOVED_TOP,
                 width: int = 60) -> list[str]:
    """:func:`moved_rows` as a text table: self share in % per profile, "-" where not stored."""
    rows = moved_rows(profiles, baseline, top)
    labels = list(profiles)
    name_width = min(width, max([len("function"), *(len(name) for name, _ in rows)]))
    cells = [max(7, len(label)) for label in labels]
    lines = [f"  {'function':<{name_width}}" + "".join(f"  {label:>{w}}" for label, w in zip(labels, cells,
                                                                                          strict=True))]
    for name, shares in rows:
        lines.append(f"  {name[:name_width]:<{name_width}}" + "".join(
            f"  {'-' if share is None else f'{share * 100:.1f}':>{w}}" for share, w in zip(shares, cells,
                                                                                          strict=True)))
    return lines
