"""Devel::NYTProf in a Perl server's children (Apache + mod_perl, Starman): :class:`NYTProf`.

How (decisions):

1. The server loads NYTProf itself, with ``start=no`` (nothing profiled until asked), one file
   per process (``addpid=1``), subroutines and call stacks only (``stmts=0``), and pounder's
   window module ``Pounder::ProfileWindow`` (see :mod:`pounder.servers._nytprof`): a server
   pounder starts does so with ``profile_dir`` (``ApacheServer``/``StarmanServer``, or
   ``Adapter.profiling(dir)``); for another, :meth:`NYTProf.check` names the lines to add.
2. The window module profiles a request when the flag file ``DIR/pounder-profile-window.on``
   exists as the request begins, and stops when it ends: :meth:`~NYTProf.resume` creates the
   flag, :meth:`~NYTProf.pause` removes it, so exactly the requests of the profiled trials are
   profiled (no warm-up, no unprofiled trial, not the time between requests).
3. A child writes its ``nytprof.out.PID`` when it exits cleanly: one replaced during a window
   (MaxConnectionsPerChild) wrote it then; at :meth:`~NYTProf.finish` pounder asks every current
   child to exit after its request (Apache: SIGUSR1, its graceful stop of one child; Starman,
   Net::Server: SIGHUP) and the parent replaces them. Then every file written since the first
   window is read (the call stacks with their exclusive time, in ns, and the calls of each sub,
   per child) and all are merged with ``nytprofmerge`` into one ``nytprof.out`` (kept, for
   ``nytprofhtml``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pounder._errors import PounderError, UsageError, public
from pounder._units import children_text, count_text
from pounder.procs import ServerGone, ServerTarget, discover
from pounder.profile._profiler import Profiler, Sampled
from pounder.servers import (
    NYTPROF_FILE,
    WINDOW_FLAG,
    WINDOW_MARK,
    apache_nytprof_lines,
    die_with_parent_hook,
    nytprof_env,
    starman_nytprof_args,
)

READER = Path(__file__).resolve().parent / "nytprof_read.pl"
"""Reads one NYTProf file: its call stacks (exclusive ticks) and calls per sub."""
EXIT_TIMEOUT_S = 15.0
"""How long :meth:`NYTProf.finish` waits for the children asked to exit."""
READ_TIMEOUT_S = 300.0
SUGGESTED_DIR = Path("/var/tmp/pounder-nytprof")
"""The directory named in the lines to add when the user gave none."""
_WINDOW_FRAMES = re.compile(r"^(Pounder::ProfileWindow::|DB::)")
"""Frames of the window itself (enabling, disabling): not the application's time."""


@public
def is_perl_server(target: ServerTarget) -> bool:
    """Whether the server runs Perl: its parent's program is perl or maps libperl (mod_perl)."""
    try:
        if os.path.basename(os.readlink(f"/proc/{target.pid}/exe")).startswith("perl"):
            return True
    except OSError:
        pass
    return "/libperl.so" in _read(Path(f"/proc/{target.pid}/maps"))


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _is_apache(target: ServerTarget) -> bool:
    return target.name in ("apache2", "httpd") or re.search(r"(^|/)(apache2|httpd)\b", target.cmdline) is not None


def _missing_lines(target: ServerTarget, directory: Path) -> str:
    """What to add to the server's configuration, as one line of text."""
    if _is_apache(target):
        lines = "; ".join(apache_nytprof_lines(directory))
        return (f"add to its httpd.conf, after LoadModule perl_module and before the application's Perl lines: "
                f"{lines}; make {directory} writable by its children, then restart it")
    args = " ".join(word if " " not in word else f"'{word}'" for word in starman_nytprof_args())
    return (f"start it with NYTPROF={nytprof_env(directory)} in its environment and the options {args} "
            f"before the .psgi (Starman; {directory} writable by its workers)")


def _marked_dir(pids: list[int]) -> Path | None:
    """The profile directory the window module keeps open (its mark file), from any of ``pids``."""
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.endswith("/" + WINDOW_MARK):
                return Path(link).parent
    return None


def _env_dir(pid: int) -> Path | None:
    """The directory of NYTPROF's ``file=`` in the process's initial environment."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for entry in environ:
        if entry.startswith(b"NYTPROF="):
            match = re.search(r"(?:^|:)file=([^:]+)", entry[8:].decode("utf-8", "replace"))
            if match:
                return Path(match.group(1)).parent
    return None


def _nytprof_mapped(pids: list[int]) -> bool:
    return any("/NYTProf.so" in _read(Path(f"/proc/{pid}/maps")) for pid in pids)


@dataclass
class _Read:
    """One child's profile, read."""

    pid: int
    stacks: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)


def read_nytprof(path: Path, pid: int, perl: str = "perl") -> _Read:
    """One NYTProf file's call stacks (exclusive ns of the leaf) and calls per sub, the window's
    own frames left out; :class:`~pounder.PounderError` when it cannot be read (a child that did
    not exit cleanly leaves an incomplete file)."""
    try:
        done = subprocess.run([perl, str(READER), str(path)], stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=READ_TIMEOUT_S, check=False, preexec_fn=die_with_parent_hook(signal.SIGKILL))
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PounderError(f"cannot read the profile {path}: {error}") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise PounderError(f"cannot read the profile {path}" + (f": {tail[-1]}" if tail else ""))
    out = _Read(pid)
    ticks = 0
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        kind, value, *rest = line.split("\t") + [""]
        if kind == "ticks_per_sec":
            ticks = int(value)
        elif kind == "stack" and not _WINDOW_FRAMES.match(rest[0]):
            out.stacks[rest[0]] = int(value)
        elif kind == "calls" and not _WINDOW_FRAMES.match(rest[0]):
            out.calls[rest[0]] = int(value)
    if ticks <= 0:
        raise PounderError(f"cannot read the profile {path}: no clock rate in it")
    out.stacks = {stack: round(value * 1e9 / ticks) for stack, value in out.stacks.items()}
    return out


def _file_key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


@public
class NYTProf(Profiler):
    """Devel::NYTProf loaded in a Perl server (see the module's docstring). ``directory``: where
    the server's NYTProf writes (``file=DIR/nytprof.out``); by default found from the server (the
    window module's mark file among its open files, or ``NYTPROF`` in its parent's environment)."""

    name = "nytprof"
    unit = "ns"

    def __init__(self, target: ServerTarget, *, directory: str | os.PathLike[str] | None = None,
                 exit_timeout_s: float = EXIT_TIMEOUT_S) -> None:
        self.target = target
        self.directory = Path(directory).resolve() if directory is not None else None
        self.exit_timeout_s = exit_timeout_s
        self._workdir: Path | None = None
        self._before: dict[str, tuple[int, int, int] | None] = {}
        self._found_open = False

    def version(self) -> str | None:
        try:
            done = subprocess.run(["perl", "-MDevel::NYTProf::Core", "-e", "print $Devel::NYTProf::Core::VERSION"],
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        text = done.stdout.decode("utf-8", "replace").strip()
        return f"Devel::NYTProf {text}" if done.returncode == 0 and text else None

    def _pids(self) -> list[int]:
        try:
            return [member.pid for member in discover(self.target)]
        except ServerGone as error:
            raise PounderError(str(error)) from None

    def check(self) -> None:
        """UsageError unless ``nytprofmerge`` and ``perl`` are here, the server is a Perl server
        and it runs NYTProf with pounder's window (naming the lines to add otherwise)."""
        if shutil.which("nytprofmerge") is None or shutil.which("perl") is None:
            raise UsageError("nytprofmerge is not installed: install Devel::NYTProf (Debian: apt-get install "
                             "libdevel-nytprof-perl) or choose another --profiler")
        if not is_perl_server(self.target):
            raise UsageError(f"process {self.target.pid} ({self.target.name}) is not a Perl server (no perl, no "
                             "libperl): NYTProf profiles Perl; use --profiler py-spy or perf")
        pids = self._pids()
        children = pids[1:]
        found = _marked_dir(pids) or _env_dir(self.target.pid)
        directory = self.directory or found
        prepared = _nytprof_mapped(children or pids) and _marked_dir(pids) is not None
        if not prepared or directory is None:
            raise UsageError(f"the server (process {self.target.pid}, {self.target.name}) does not run Devel::NYTProf "
                             f"with pounder's window: {_missing_lines(self.target, directory or SUGGESTED_DIR)}")
        if not os.access(directory, os.W_OK | os.X_OK):
            raise UsageError(f"cannot write to the profile directory {directory} (the flag file that opens a window "
                             "goes there): run as the server's user or root")
        self.directory = directory
        if (directory / WINDOW_FLAG).exists():  # left by a pounder killed while a window was open
            (directory / WINDOW_FLAG).unlink(missing_ok=True)
            self._found_open = True

    def _dir(self) -> Path:
        if self.directory is None:
            self.check()
        assert self.directory is not None
        return self.directory

    def _files(self) -> dict[str, tuple[int, int, int] | None]:
        return {path.name: _file_key(path) for path in self._dir().glob(f"{NYTPROF_FILE}.*")}

    def resume(self, workdir: Path) -> None:
        directory = self._dir()
        if self._workdir is None:  # the first window: the files already there are not this run's
            self._workdir = Path(workdir)
            self._workdir.mkdir(parents=True, exist_ok=True)
            self._before = self._files()
        (directory / WINDOW_FLAG).touch()

    def pause(self) -> None:
        if self.directory is not None:
            (self.directory / WINDOW_FLAG).unlink(missing_ok=True)

    def _exit_children(self) -> tuple[list[int], list[str]]:
        """Ask every current child to exit after its request; wait for them. Returns the children
        asked and the notes."""
        how = signal.SIGUSR1 if _is_apache(self.target) else signal.SIGHUP
        try:
            children = [member.pid for member in discover(self.target) if member.role == "child"]
        except ServerGone:
            return [], ["the server exited before its children could be asked to write their profiles"]
        for pid in children:
            try:
                os.kill(pid, how)
            except OSError:
                pass
        deadline = time.monotonic() + self.exit_timeout_s
        left = children
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [pid for pid in left if _alive(pid)]
        asked = count_text(len(children), "child", "children")
        notes = [f"pounder asked the server's {asked} to exit after their request "
                 f"({signal.Signals(how).name}) so that each wrote its profile; the server replaced them"]
        if left:
            notes.append(f"{children_text(len(left))} had not exited {self.exit_timeout_s:g} s later (pids "
                         f"{', '.join(map(str, left[:10]))}): what they profiled is missing")
        return children, notes

    def finish(self) -> Sampled:
        self.pause()
        if self._workdir is None:
            return Sampled(stacks={}, unit=self.unit, pids=(), notes=("no window was opened: nothing profiled",))
        asked, notes = self._exit_children()
        notes.append("the unprofiled trials ran with NYTProf loaded but off: the cost leaves out what loading it "
                     "costs (compare with a server started without it)")
        if self._found_open:
            notes.append("a window left open by an earlier pounder (killed while profiling) was closed before this "
                         "run; files its children wrote since may hold requests of that time")
        keep = self._workdir / "children"
        keep.mkdir(parents=True, exist_ok=True)
        reads: list[_Read] = []
        kept: list[Path] = []
        for name, key in sorted(self._files().items()):
            suffix = name[len(NYTPROF_FILE) + 1:]
            if self._before.get(name, "new") == key or not suffix.isdigit():
                continue
            path = keep / name
            shutil.move(str(self._dir() / name), path)
            try:
                reads.append(read_nytprof(path, int(suffix)))
                kept.append(path)
            except PounderError as error:
                notes.append(f"child {suffix}'s profile was left out: {error}")
        files = {"children": str(keep)}
        if kept:
            merged = self._workdir / NYTPROF_FILE
            done = subprocess.run(["nytprofmerge", "-o", str(merged), *map(str, kept)], stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=READ_TIMEOUT_S, check=False,
                                  preexec_fn=die_with_parent_hook(signal.SIGKILL))
            if done.returncode == 0 and merged.is_file():
                files[NYTPROF_FILE] = str(merged)
            else:
                tail = done.stderr.decode("utf-8", "replace").strip().splitlines()
                notes.append("nytprofmerge failed" + (f": {tail[-1]}" if tail else "") + "; the children's files "
                             f"are in {keep}")
        replaced = sorted({read.pid for read in reads} - set(asked))
        if replaced:
            notes.append(f"{children_text(len(replaced))} exited during the windows (replaced by the server, e.g. "
                         "after "
                         "MaxConnectionsPerChild); each wrote its own profile and all are included")
        return _sampled(reads, notes, files)

    def close(self) -> None:
        try:
            self.pause()
        except OSError:
            pass


def _alive(pid: int) -> bool:
    """Running (not exited, not a zombie)."""
    status = _read(Path(f"/proc/{pid}/stat"))
    return bool(status) and status.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def _sampled(reads: list[_Read], notes: list[str], files: dict[str, str]) -> Sampled:
    stacks: dict[tuple[int, str], int] = {}
    calls: dict[str, int] = {}
    for read in reads:
        for stack, value in read.stacks.items():
            stacks[(read.pid, stack)] = stacks.get((read.pid, stack), 0) + value
        for sub, count in read.calls.items():
            calls[sub] = calls.get(sub, 0) + count
    if not reads:
        notes.append("no child wrote a profile: did any request reach the server during the windows?")
    return Sampled(stacks=stacks, unit="ns", pids=tuple(sorted(read.pid for read in reads)), calls=calls,
                   notes=tuple(notes), files=files)
