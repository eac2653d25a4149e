"""The machinery of tests/families/run.py: a case, its directory, its servers, the checks every
case gets (exit status, one ``pounder: error:`` line, no traceback, no process left, no file
changed but the named outputs, a time limit) and the clean-up of servers, mounts and processes
even when a case fails or the run is interrupted.

Standalone: the standard library and psutil only; nothing of pounder is imported (pounder is run
as a command, the way a user runs it)."""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers.py"
PY = sys.executable
RUN_ID = f"{os.getpid()}"
HARNESS_MARK = f"famh-{RUN_ID}"  # in the argv of every server the harness starts itself
CASE_MARK = f"famc-{RUN_ID}"  # in the argv of every server a case asks pounder to start


def _resolve_pounder() -> str:
    """The pounder command: $POUNDER, or the real script behind a pyenv shim (so that the pid we
    start is pounder's own Python process), or `pounder` on PATH."""
    if os.environ.get("POUNDER"):
        return os.environ["POUNDER"]
    found = shutil.which("pounder")
    if found is None:
        sys.exit("run.py: pounder is not on PATH")
    if "/shims/" in found and shutil.which("pyenv"):
        with contextlib.suppress(Exception):
            real = subprocess.run(
                ["pyenv", "which", "pounder"], capture_output=True, text=True, timeout=20
            ).stdout.strip()
            if real and os.path.exists(real):
                return real
    return found


POUNDER = _resolve_pounder()

# ------------------------------------------------------------------------------------------------
# What is left to clean up, whatever happens


class Janitor:
    """Servers, background processes and mounts to undo, newest first."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.mounts: list[str] = []
        self.lock = threading.RLock()

    def add_proc(self, proc: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
        with self.lock:
            self.procs.append(proc)
        return proc

    def stop_procs(self, procs: Iterable[subprocess.Popen[bytes]] | None = None) -> None:
        with self.lock:
            chosen = list(self.procs if procs is None else procs)
        for proc in chosen:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 2
        for proc in chosen:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.05, deadline - time.monotonic()))
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(2)
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)  # what is left of its group
            with self.lock:
                if proc in self.procs:
                    self.procs.remove(proc)

    def unmount(self, points: Iterable[str] | None = None) -> None:
        with self.lock:
            chosen = list(self.mounts if points is None else points)
        for point in reversed(chosen):
            for _ in range(5):
                done = subprocess.run(["umount", point], capture_output=True)
                if done.returncode == 0:
                    break
                time.sleep(0.2)
            else:
                subprocess.run(["umount", "-l", point], capture_output=True)
            with self.lock:
                if point in self.mounts:
                    self.mounts.remove(point)

    def kill_marked(self, marks: tuple[str, ...] = (HARNESS_MARK, CASE_MARK), spare: Iterable[int] = ()) -> list[str]:
        """Kill every process still carrying one of ``marks``; say which."""
        killed = []
        me = os.getpid()
        spared = set(spare)
        for proc in psutil.process_iter(["pid", "cmdline"]):
            cmd = " ".join(proc.info["cmdline"] or [])
            if (
                proc.info["pid"] != me
                and proc.info["pid"] not in spared
                and any(re.search(re.escape(m) + r"(?!\d)", cmd) for m in marks)
            ):
                with contextlib.suppress(psutil.Error):
                    proc.kill()
                    killed.append(f"{proc.info['pid']} {cmd[:100]}")
        return killed

    def everything(self) -> None:
        self.stop_procs()
        self.unmount()
        self.kill_marked()


JANITOR = Janitor()

# ------------------------------------------------------------------------------------------------
# Servers


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    count_file: Path
    mode: str
    ipv6: bool = False

    @property
    def url(self) -> str:
        return f"http://[::1]:{self.port}/" if self.ipv6 else f"http://127.0.0.1:{self.port}/"

    def counts(self) -> dict[str, int]:
        try:
            return json.loads(self.count_file.read_text())
        except (OSError, ValueError):
            return {"connections": -1, "requests": -1}


def _die_with_harness() -> None:
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    os.setsid()


def start_server(mode: str, logdir: Path, name: str, *, ipv6: bool = False, extra: Iterable[str] = ()) -> Server:
    count_file = logdir / f"{name}.counts.json"
    argv = [PY, str(SERVERS), "--mode", mode, "--count-file", str(count_file), "--tag", HARNESS_MARK, *extra]
    if ipv6:
        argv.append("--ipv6")
    proc = JANITOR.add_proc(
        subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_harness,
        )
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().split()
    if len(line) != 2 or line[0] != "READY":
        JANITOR.stop_procs([proc])
        raise RuntimeError(f"server {mode} did not start")
    return Server(proc, int(line[1]), count_file, mode, ipv6)


# ------------------------------------------------------------------------------------------------
# A case


@dataclass
class Result:
    rc: int | None  # exit status; -N when killed by signal N; None on time-out
    out: str
    err: str
    elapsed: float  # s from start to exit (or to the time-out)
    maxrss_mb: float | None
    signal_at: float | None = None  # s after start when the signal was sent
    exit_after_signal: float | None = None
    timed_out: bool = False
    seen: dict[int, tuple[float, str]] = field(default_factory=dict)  # descendants seen: pid -> (ctime, cmd)
    marked_seen: dict[int, tuple[float, str]] = field(default_factory=dict)  # processes with the case mark
    pid: int = 0

    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]

    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("pounder: error:")]


class Ctx:
    """What a case's set-up, command and checks share: its directory, servers, marks."""

    def __init__(self, case: Case, base: Path, logdir: Path, index: int) -> None:
        self.case = case
        self.dir = base / case.family / case.name
        self.logdir = logdir
        self.index = index
        self.tag = f"{CASE_MARK}-{index}x"  # x: -1x is not in -12x
        self.servers: dict[str, Server] = {}
        self.bg: list[subprocess.Popen[bytes]] = []
        self.vars: dict[str, Any] = {}
        self.notes: list[str] = []
        self.mounts: list[str] = []
        self.vars["REC"] = str(logdir / f"{index}.request-head")

    # servers -----------------------------------------------------------------------------
    def server(self, key: str = "main") -> Server:
        return self.servers[key]

    @property
    def url(self) -> str:
        return self.servers["main"].url

    @property
    def port(self) -> int:
        return self.servers["main"].port

    def add_server(self, key: str, mode: str, **kw: Any) -> Server:
        srv = start_server(mode, self.logdir, f"{self.index}-{key}", **kw)
        self.servers[key] = srv
        return srv

    # files --------------------------------------------------------------------------------
    def path(self, rel: str) -> Path:
        return self.dir / rel

    def write(self, rel: str, data: str | bytes) -> Path:
        p = self.path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        p.write_bytes(data)
        return p

    def mount_tmpfs(self, rel: str, size: str = "64k", ro: bool = False) -> Path:
        point = self.path(rel)
        point.mkdir(parents=True, exist_ok=True)
        opts = f"size={size}" + (",ro" if ro else "")
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(point)], check=True, capture_output=True)
        with JANITOR.lock:
            JANITOR.mounts.append(str(point))
        self.mounts.append(str(point))
        return point

    def remount_ro(self, rel: str) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self.path(rel))], check=True, capture_output=True)

    def fill(self, rel: str, leave: int = 0) -> None:
        """Fill the file system holding directory ``rel`` with a file, leaving ``leave`` bytes."""
        point = self.path(rel)
        st = os.statvfs(point)
        free = st.f_bavail * st.f_frsize
        with contextlib.suppress(OSError), open(point / ".filler", "wb") as f:
            f.write(b"\0" * max(0, free - leave))

    # other processes --------------------------------------------------------------------------
    def spawn(self, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        proc = JANITOR.add_proc(
            subprocess.Popen(self.subst(argv), cwd=self.dir, stdin=subprocess.DEVNULL, start_new_session=True, **kw)
        )
        self.bg.append(proc)
        return proc

    def run(self, argv: list[str], timeout: float = 30, **kw: Any) -> subprocess.CompletedProcess[str]:
        """Run a helper command to completion (a second pounder in a check, a report...)."""
        return subprocess.run(
            self.subst(argv),
            cwd=self.dir,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            **kw,
        )

    def subst(self, argv: Iterable[str]) -> list[str]:
        out = []
        for word in argv:
            word = word.replace("@POUNDER@", POUNDER).replace("@PY@", PY).replace("@SRV@", str(SERVERS))
            word = word.replace("@TAG@", self.tag).replace("@DIR@", str(self.dir))
            for key, srv in self.servers.items():
                word = word.replace(f"@URL:{key}@", srv.url).replace(f"@PORT:{key}@", str(srv.port))
            if "main" in self.servers:
                word = word.replace("@URL@", self.url).replace("@PORT@", str(self.port))
            for key, value in self.vars.items():
                if isinstance(value, (str, int, float)):
                    word = word.replace(f"@{key}@", str(value))
            out.append(word)
        return out

    def json(self, rel: str) -> Any:
        return json.loads(self.path(rel).read_text())


Check = Callable[[Ctx, Result], Iterable[str]]


@dataclass
class Case:
    family: str
    name: str
    argv: list[str]
    rc: int | tuple[int, ...] = 0
    err: str | None = None  # regex that stderr must match (re.search)
    out: str | None = None  # regex that stdout must match
    setup: Callable[[Ctx], None] | None = None
    server: str | None = "ok"  # mode of the harness's own server (@URL@), or None
    server_extra: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()  # paths (globs, relative to the case directory) that may change
    contact: bool | None = None  # True: the server must see a connection; False: must not;
    #                                   None: must not when the exit status is 2
    timeout: float = 25.0
    max_time: float | None = None  # wall time limit of the run itself
    signal: int | None = None
    signal_at: float | Callable[[Ctx, float], bool] = 1.0  # s after start, or a trigger
    signal_group: bool = False  # to the process group (a terminal's Ctrl-C)
    signal_within: float = 2.0  # s from the signal to the exit
    checks: tuple[Check, ...] = ()
    max_rss_mb: float | None = None  # the largest RSS of pounder or a process it started
    grace: float = 3.0  # s allowed for processes to go once pounder exited
    no_start: bool = False  # no process with the case's mark may ever start
    env: dict[str, str] | None = None
    note: str = ""  # what is promised, for the report

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"


# ------------------------------------------------------------------------------------------------
# Snapshots: files and processes


def _digest(path: str, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        if size <= 16 << 20:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        else:
            h.update(f.read(1 << 20))
            f.seek(size - (1 << 20))
            h.update(f.read(1 << 20))
    return h.hexdigest()


def snapshot_files(root: Path) -> dict[str, tuple[Any, ...]]:
    found: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir",)
            elif stat.S_ISREG(st.st_mode):
                try:
                    found[rel] = (
                        "file",
                        st.st_size,
                        _digest(full, st.st_size)
                        if st.st_size <= 16 << 20
                        else (st.st_mtime_ns, st.st_ino, _digest(full, st.st_size)),
                    )
                except OSError as error:
                    found[rel] = ("unreadable", str(error))
            else:
                found[rel] = ("special", stat.S_IFMT(st.st_mode))
    return found


def _allowed(rel: str, patterns: Iterable[str]) -> bool:
    return any(rel == pattern or fnmatch.fnmatch(rel, pattern) for pattern in patterns)


def process_table() -> dict[int, tuple[int, float, str]]:
    table = {}
    for proc in psutil.process_iter(["pid", "ppid", "create_time", "cmdline", "name"]):
        info = proc.info
        cmd = " ".join(info["cmdline"] or []) or f"[{info['name']}]"
        table[info["pid"]] = (info["ppid"] or 0, info["create_time"] or 0.0, cmd)
    return table


def descendants(table: dict[int, tuple[int, float, str]], root: int) -> dict[int, tuple[float, str]]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[float, str]] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found[pid] = (table[pid][1], table[pid][2])
        todo.extend(children.get(pid, []))
    return found


def _pounder_traceback(text: str) -> bool:
    """A Python traceback of pounder's own (a server's traceback quoted from its log is not)."""
    return (
        "Traceback" in text
        and bool(re.search(r'File "[^"]*(/pounder/|bin/pounder)', text))
        or "Fatal Python error" in text
    )


def _cwd_under(pid: int, root: Path) -> bool:
    try:
        cwd = psutil.Process(pid).cwd()
    except psutil.Error:
        return False
    return cwd == str(root) or cwd.startswith(str(root) + os.sep)


def _short(cmd: str) -> str:
    words = cmd.split()
    if not words:
        return "?"
    if words[0].endswith(("python3", "python")) and len(words) > 1:
        return os.path.basename(words[1])
    return os.path.basename(words[0])[:30]


def _is_pounder(cmd: str) -> bool:
    """A pounder command line (pounder itself, or a wrapper running it), not a server."""
    head = cmd.split(" -c ")[0] if cmd.startswith(("bash", "sh")) else cmd
    return (
        POUNDER in head
        or "bin/pounder" in head
        or "-m pounder" in head
        or head.startswith(("strace", "unshare", "prlimit"))
    )


def still_alive(pid: int, ctime: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - ctime) < 0.05 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# ------------------------------------------------------------------------------------------------
# Running one case


_NUM_EXP = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]?\d+(?![\w])", re.I)
_NUM_LONG = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _small_files(root: Path) -> list[str]:
    """The text of the case's small input files (a number quoted from one is the user's own)."""
    texts = []
    for path in root.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= 65536:
                texts.append(path.read_bytes().decode("utf-8", "replace"))
    return texts


def number_problems(line: str, argv: list[str]) -> list[str]:
    """Numbers in a message printed as 1e+09 or with 20 digits, when the user did not write
    them so."""
    given = " ".join(argv)
    given_plain = given.replace(",", "")
    problems = []
    # paths are not numbers
    text = re.sub(r"(/[^\s:;,']*)", " ", line)
    for match in _NUM_EXP.finditer(text):
        if match.group(0) not in given:
            problems.append(f"number printed as {match.group(0)!r}")
    for match in _NUM_LONG.finditer(text):
        token = match.group(0).rstrip(",")
        whole, _, frac = token.replace(",", "").partition(".")
        if (len(whole) >= 17 or len(frac) >= 10) and token.replace(",", "") not in given_plain:
            problems.append(f"number printed as {token!r} (not what was given)")
    return problems


class Runner:
    def __init__(self, base: Path, verbose: bool = False) -> None:
        self.base = base
        self.logdir = base / "_logs"
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.verbose = verbose
        self.index = 0
        self._lock = threading.Lock()

    def run_case(self, case: Case) -> tuple[bool, float, list[str], Result | None, Ctx]:
        with self._lock:
            self.index += 1
            index = self.index
        ctx = Ctx(case, self.base, self.logdir, index)
        why: list[str] = []
        res: Result | None = None
        t0 = time.monotonic()
        try:
            ctx.dir.mkdir(parents=True, exist_ok=False)
            if case.server:
                ctx.add_server("main", case.server, extra=ctx.subst(case.server_extra))
            if case.setup:
                case.setup(ctx)
            before_files = snapshot_files(ctx.dir)
            before_procs = process_table()
            res = self._launch(ctx)
            why += self._generic(ctx, res, before_procs)
            for check in case.checks:
                try:
                    why += [w for w in check(ctx, res) if w]
                except Exception as error:  # a check that cannot read what it needs: a failure
                    why.append(f"check {getattr(check, '__name__', 'check')}: {type(error).__name__}: {error}")
            after_files = snapshot_files(ctx.dir)
            why += self._files(ctx, res, before_files, after_files)
        except KeyboardInterrupt:
            raise
        except Exception as error:
            why.append(f"harness: {type(error).__name__}: {error}")
        finally:
            JANITOR.stop_procs(ctx.bg)
            for srv in ctx.servers.values():
                JANITOR.stop_procs([srv.proc])
            JANITOR.unmount(ctx.mounts)
            killed = JANITOR.kill_marked((ctx.tag,))
            if killed and not any("left" in w for w in why):
                why.append(f"processes with a case mark still running at the end: {killed[:3]}")
        return not why, time.monotonic() - t0, why, res, ctx

    # ---------------------------------------------------------------------------------------
    def _launch(self, ctx: Ctx) -> Result:
        case = ctx.case
        argv = ctx.subst(case.argv)
        ctx.vars["argv"] = argv
        out_path = self.logdir / f"{ctx.index}.out"
        err_path = self.logdir / f"{ctx.index}.err"
        env = dict(os.environ)
        env.pop("RAY_ADDRESS", None)
        env["COLUMNS"] = "120"
        if case.env:
            env.update(case.env)
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.monotonic()
            proc = subprocess.Popen(
                argv, cwd=ctx.dir, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True, env=env
            )
        JANITOR.add_proc(proc)  # killed if the harness is interrupted
        ctx.vars["pid"] = proc.pid
        seen: dict[int, tuple[float, str]] = {}
        marked: dict[int, tuple[float, str]] = {}
        stop_poll = threading.Event()
        peak = [0]

        def poll() -> None:
            while not stop_poll.is_set():
                table = process_table()
                family = descendants(table, proc.pid)
                for pid, info in family.items():
                    seen.setdefault(pid, info)
                for pid in [proc.pid, *family]:
                    with contextlib.suppress(psutil.Error):
                        peak[0] = max(peak[0], psutil.Process(pid).memory_info().rss)
                for pid, (_, ctime, cmd) in table.items():
                    if ctx.tag in cmd and pid not in (os.getpid(), proc.pid) and not _is_pounder(cmd):
                        marked.setdefault(pid, (ctime, cmd))
                stop_poll.wait(0.1)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        status = 0
        signal_at = None
        timed_out = False
        while True:
            pid, st, _ = os.wait4(proc.pid, os.WNOHANG)
            now = time.monotonic() - start
            if pid == proc.pid:
                status = st
                break
            if case.signal is not None and signal_at is None:
                due = (now >= case.signal_at) if not callable(case.signal_at) else case.signal_at(ctx, now)
                if due:
                    signal_at = now
                    with contextlib.suppress(OSError):
                        if case.signal_group:
                            os.killpg(proc.pid, case.signal)
                        else:
                            os.kill(proc.pid, case.signal)
            if now > case.timeout:
                timed_out = True
                for target in list(seen):
                    with contextlib.suppress(OSError):
                        os.kill(target, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                _, status, _ = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        end = time.monotonic() - start
        proc.returncode = 0  # reaped by wait4 above
        with JANITOR.lock:
            JANITOR.procs.remove(proc)
        # one more look at who was there, then stop polling
        time.sleep(0.05)
        stop_poll.set()
        poller.join()
        rc: int | None
        if timed_out:
            rc = None
        elif os.WIFSIGNALED(status):
            rc = -os.WTERMSIG(status)
        else:
            rc = os.WEXITSTATUS(status)
        out_text = out_path.read_bytes().decode("utf-8", "replace")
        err_text = err_path.read_bytes().decode("utf-8", "replace")
        return Result(
            rc=rc,
            out=out_text,
            err=err_text,
            elapsed=end,
            maxrss_mb=peak[0] / (1 << 20) if peak[0] else None,
            signal_at=signal_at,
            exit_after_signal=(end - signal_at) if signal_at is not None else None,
            timed_out=timed_out,
            seen=seen,
            marked_seen=marked,
            pid=proc.pid,
        )

    # ---------------------------------------------------------------------------------------
    def _generic(self, ctx: Ctx, res: Result, before: dict[int, tuple[int, float, str]]) -> list[str]:
        case = ctx.case
        why: list[str] = []
        expected = case.rc if isinstance(case.rc, tuple) else (case.rc,)
        if res.timed_out:
            why.append(f"did not end within {case.timeout:g} s (killed)")
        elif res.rc not in expected:
            why.append(f"exit {res.rc}, expected {' or '.join(map(str, expected))}")
        if _pounder_traceback(res.err) or _pounder_traceback(res.out):
            why.append("a Traceback was printed")
        lines = res.err_lines()
        errors = res.error_lines()
        if res.rc == 2:
            if len(lines) != 1 or not lines[0].startswith("pounder: error: "):
                why.append(f"exit 2 with {len(lines)} stderr lines (one 'pounder: error:' line promised)")
        if res.rc in (1, 2, 130, 143) and len(errors) != 1:
            why.append(f"{len(errors)} 'pounder: error:' lines on stderr (one promised)")
        for line in errors:
            why += number_problems(line, ctx.vars.get("argv", []) + _small_files(ctx.dir))
        if case.err and not re.search(ctx.subst([case.err])[0], res.err, re.S | re.M):
            why.append(f"stderr does not match /{case.err}/")
        if case.out and not re.search(case.out, res.out, re.S | re.M):
            why.append(f"stdout does not match /{case.out}/")
        if case.max_time is not None and res.elapsed > case.max_time:
            why.append(f"took {res.elapsed:.1f} s (at most {case.max_time:g} s promised)")
        if case.signal is not None:
            if res.signal_at is None:
                why.append("ended before the signal could be sent")
            elif res.exit_after_signal is not None and res.exit_after_signal > case.signal_within and not res.timed_out:
                why.append(
                    f"exited {res.exit_after_signal:.1f} s after the signal (within {case.signal_within:g} s promised)"
                )
        if case.max_rss_mb is not None and res.maxrss_mb is not None and res.maxrss_mb > case.max_rss_mb:
            why.append(f"max RSS {res.maxrss_mb:.0f} MB (at most {case.max_rss_mb:g} MB)")
        # the servers: contact
        if "main" in ctx.servers:
            counts = ctx.servers["main"].counts()
            ctx.vars["counts"] = counts
            must_not = case.contact is False or (case.contact is None and res.rc == 2)
            if must_not and counts.get("connections", 0) != 0:
                why.append(
                    f"the server saw {counts['connections']} connection(s), {counts['requests']} request(s): "
                    "something was sent"
                )
            if case.contact is True and counts.get("connections", 0) <= 0:
                why.append("the server saw no connection")
        if case.no_start and res.marked_seen:
            pid, (_, cmd) = next(iter(res.marked_seen.items()))
            why.append(f"a server process was started: {pid} {cmd[:90]}")
        if case.signal is not None and res.exit_after_signal is not None:
            names = sorted({_short(cmd) for _, cmd in res.seen.values()})
            ctx.notes.append(
                f"exit {res.exit_after_signal:.2f} s after the signal; {len(res.seen)} processes under pounder"
                + (f" ({', '.join(names[:4])})" if names else "")
            )
        why += self._leftovers(ctx, res, before)
        return why

    def _leftovers(self, ctx: Ctx, res: Result, before: dict[int, tuple[int, float, str]]) -> list[str]:
        """Every process pounder started (seen as its descendant, or carrying the case's mark)
        must be gone within the grace time once pounder exited."""
        watch = {**res.seen, **res.marked_seen}
        deadline = time.monotonic() + ctx.case.grace
        left: dict[int, tuple[float, str]] = {}
        new_orphans: dict[int, str] = {}
        own = {srv.proc.pid for srv in ctx.servers.values()} | {p.pid for p in ctx.bg}
        while True:
            left = {pid: info for pid, info in watch.items() if pid not in own and still_alive(pid, info[0])}
            table = process_table()
            new_orphans = {}
            for pid, (ppid, ctime, cmd) in table.items():
                old = before.get(pid)
                if old is not None and abs(old[1] - ctime) < 0.05:
                    continue
                if pid in own or pid == os.getpid() or pid in left:
                    continue
                if any(bg.pid == ppid for bg in ctx.bg):
                    continue
                # orphans of this case: a pounder, a case-marked server, or a Ray worker, adopted by init
                # orphans of this case: adopted by init, and started in the case's directory (what
                # pounder starts inherits it) or carrying the case's mark; a pounder or a Ray process
                # of someone else's, elsewhere on the machine, is not this case's
                interesting = ctx.tag in cmd or (
                    ppid in (0, 1)
                    and re.search(r"pounder|ray::|raylet|gcs_server|dashboard|servers\.py", cmd) is not None
                    and _cwd_under(pid, ctx.dir)
                )
                if interesting and table.get(pid) and psutil.pid_exists(pid):
                    with contextlib.suppress(psutil.Error):
                        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                            continue
                    new_orphans[pid] = cmd
            if not left and not new_orphans:
                return []
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        why = []
        for pid, (_, cmd) in list(left.items())[:4]:
            why.append(f"process left {ctx.case.grace:g} s after pounder exited: {pid} {cmd[:110]}")
        for pid, cmd in list(new_orphans.items())[:4]:
            why.append(f"new orphan process left: {pid} {cmd[:110]}")
        for pid in list(left) + list(new_orphans):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return why

    def _files(
        self, ctx: Ctx, res: Result, before: dict[str, tuple[Any, ...]], after: dict[str, tuple[Any, ...]]
    ) -> list[str]:
        why = []
        for rel, state in before.items():
            if state[0] == "dir":
                continue
            if _allowed(rel, ctx.case.outputs):
                continue
            now = after.get(rel)
            if now is None:
                why.append(f"file {rel} that existed before was removed")
            elif now != state:
                why.append(f"file {rel} that existed before was changed (not a named output)")
        if res.rc is not None and res.rc >= 0:
            temps = [rel for rel in after if rel.endswith(".pounder-tmp") or ".pounder-tmp." in rel]
            temps = [t for t in temps if t not in before]
            if temps:
                why.append(f"temporary file left by a run that ended by itself: {temps[0]}")
        return why


# ------------------------------------------------------------------------------------------------
# Small helpers the cases use


def flock_holder(path: Path) -> subprocess.Popen[bytes]:
    """A process that holds an flock on ``path`` (its pid written in it) until killed."""
    code = (
        "import fcntl,os,sys,time\n"
        "f=open(sys.argv[1],'a+'); fcntl.flock(f, fcntl.LOCK_EX|fcntl.LOCK_NB)\n"
        "f.seek(0); f.truncate(); f.write(str(os.getpid())); f.flush(); print('LOCKED', flush=True)\n"
        "time.sleep(3600)\n"
    )
    return subprocess.Popen(
        [PY, "-c", code, str(path), HARNESS_MARK],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
