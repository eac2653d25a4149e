#!/usr/bin/env python3
"""Issue 26's must-show, checked: a refactor changes no behaviour. Two revisions of this repository
are run side by side and everything a user sees is compared:

1. help: ``pounder --help`` and every subcommand's ``--help`` (the subcommands read from the
   top-level help of each side), exact text at a fixed terminal width;
2. errors: exit status, stdout and stderr of bad inputs across the subcommands (they fail before
   anything is sent: no server is needed), and the files each case left in its directory;
3. runs: short real runs against a small pre-forking HTTP server this script starts on 127.0.0.1
   (bench closed and open loop, with server sampling, compare, mem, run of a plain-URL
   experiment, and report of what they wrote): exit status and the set of JSON key paths (values
   differ from run to run), and the text with its numbers masked;
4. reports: ``pounder report`` of the stored tuning runs in tests/data/tune-*: the HTML, exact
   once the time it was made and the temporary paths are taken out;
5. resume: ``pounder tune --resume`` of the stored runs with their recommendation removed (made
   again from the stored points, nothing measured): the text and the recommendation files, exact.

::

    python3 tests/tools/same_behaviour.py BASE_REF [NEW_REF] [--section NAME[,NAME]] [--case SUBSTRING] [-v] [--keep]

NEW_REF defaults to the working tree of this repository as it is. Each ref is checked out with
``git worktree add --detach`` in a temporary directory (removed at the end, also on failure or
Ctrl-C) and run as ``python3 -m pounder`` with ``PYTHONPATH=<side>/python``; the Rust engine is not
in git, so this checkout's ``python/pounder/_engine.abi3.so`` is copied into each worktree.

Standalone: the standard library and psutil only; nothing of pounder is imported. Traffic goes to
127.0.0.1 only. Prints one line per check, then a summary; exits 0 only when everything is the
same (1 when something differs, 2 when the comparison could not be set up).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[2]
ENGINE_SO = REPO / "python" / "pounder" / "_engine.abi3.so"
SECTIONS = ("help", "errors", "runs", "reports", "resume")
FIXED_ENV = {"COLUMNS": "120", "LINES": "50", "TERM": "dumb", "NO_COLOR": "1", "LC_ALL": "C.UTF-8"}
DROPPED_ENV = ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS", "RAY_ADDRESS", "PYTHONSTARTUP", "PYTHONHOME",
               "PYTHONSAFEPATH", "_TYPER_FORCE_DISABLE_TERMINAL")
DIFF_LINES = 40
RECORDED_MARK = "@APPS@"

# ------------------------------------------------------------------------------------------------
# The two sides


@dataclass
class Side:
    """One revision: its checkout (``root``), where its cases run (``scratch``)."""

    label: str
    ref: str
    commit: str | None
    root: Path
    scratch: Path
    worktree: bool

    @property
    def python(self) -> Path:
        return self.root / "python"

    @property
    def apps(self) -> Path:
        return self.root / "tests" / "apps"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
        env.update(FIXED_ENV)
        env["PYTHONPATH"] = str(self.python)
        return env

    def normalize(self, text: str, *more: tuple[Path, str], root: bool = True) -> str:
        """``text`` with this side's paths replaced by placeholders (the longest first); its
        checkout's too unless not ``root``."""
        pairs = [*more, (self.scratch, "{TMP}")] + ([(self.root, "{ROOT}")] if root else [])
        pairs.sort(key=lambda pair: len(str(pair[0])), reverse=True)
        for path, mark in pairs:
            text = text.replace(str(path), mark)
        return text


@dataclass
class Outcome:
    """What one command did: exit status (None when it was killed after its time limit)."""

    rc: int | None
    out: str
    err: str
    seconds: float


def kill_tree(pid: int) -> None:
    """Kill ``pid``, its process group (it was started in a session of its own) and descendants."""
    procs: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        top = psutil.Process(pid)
        procs = [top, *top.children(recursive=True)]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def run_pounder(side: Side, args: Sequence[str], cwd: Path, timeout: float = 60.0) -> Outcome:
    """``python3 -m pounder ARGS`` of ``side`` in ``cwd``."""
    return run_python(side, ["-m", "pounder", *args], cwd, timeout)


def run_python(side: Side, args: Sequence[str], cwd: Path, timeout: float = 60.0) -> Outcome:
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=cwd, env=side.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        out, err = proc.communicate()
        rc = None
    except BaseException:
        kill_tree(proc.pid)
        proc.wait()
        raise
    return Outcome(rc, out, err, time.monotonic() - start)


def git(*args: str, check: bool = True) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise SetupError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


class SetupError(Exception):
    """The comparison could not be set up (a bad ref, no engine, a side importing the wrong code)."""


def make_side(label: str, ref: str | None, tmp: Path) -> Side:
    scratch = tmp / label
    scratch.mkdir()
    if ref is None:
        return Side(label, "working tree", None, REPO, scratch, worktree=False)
    commit = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    where = tmp / f"{label}-worktree"
    git("worktree", "add", "--detach", str(where), commit)
    side = Side(label, ref, commit, where, scratch, worktree=True)
    shutil.copy2(ENGINE_SO, side.python / "pounder" / ENGINE_SO.name)
    return side


def remove_side(side: Side) -> None:
    if side.worktree:
        git("worktree", "remove", "--force", str(side.root), check=False)
        if side.root.exists():
            shutil.rmtree(side.root, ignore_errors=True)
        git("worktree", "prune", check=False)


def check_imports(side: Side) -> str:
    """Which pounder (and engine) ``side`` runs: refused unless both are its own."""
    probe = "import pounder, pounder._engine; print(pounder.__file__); print(pounder._engine.__file__)"
    done = run_python(side, ["-c", probe], side.scratch)
    files = done.out.split()
    if done.rc != 0 or len(files) != 2 or not all(Path(f).is_relative_to(side.python) for f in files):
        raise SetupError(f"{side.label} side does not import its own pounder: rc {done.rc}, {done.out!r} {done.err!r}")
    return files[0]


# ------------------------------------------------------------------------------------------------
# Checks and the tally


@dataclass
class Check:
    section: str
    name: str
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differences


class Tally:
    def __init__(self, verbose: bool) -> None:
        self.checks: list[Check] = []
        self.verbose = verbose

    def add(self, check: Check) -> None:
        self.checks.append(check)
        mark = "same     " if check.same else "DIFFERENT"
        print(f"  {mark}  {check.section}/{check.name}", flush=True)
        if not check.same or self.verbose:
            for line in [*check.differences, *check.notes]:
                print(textwrap.indent(line, "      "), flush=True)

    def summary(self) -> int:
        different = [c for c in self.checks if not c.same]
        print(f"\n{len(self.checks)} checks, {len(self.checks) - len(different)} identical, {len(different)} different")
        for check in different:
            print(f"\n--- {check.section}/{check.name}")
            for line in check.differences:
                print(textwrap.indent(line, "    "))
        return 0 if not different else 1


def text_diff(old: str, new: str, what: str, limit: int = DIFF_LINES) -> str:
    """A unified diff of ``old`` and ``new``, at most ``limit`` changed lines (each cut at 240)."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"old {what}", f"new {what}", lineterm="",
                                      n=1))
    changed = 0
    kept: list[str] = []
    for line in lines:
        is_change = line[:1] in "+-" and not line.startswith(("+++", "---"))
        if is_change:
            changed += 1
            if changed > limit:
                continue
        kept.append(line if len(line) <= 240 else line[:240] + " [...]")
    total = sum(1 for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---")))
    if total > limit:
        kept.append(f"[... {total - limit} more changed lines]")
    return "\n".join(kept)


def compare_text(check: Check, what: str, old: str, new: str) -> None:
    if old != new:
        check.differences.append(f"{what} differs:\n{text_diff(old, new, what)}")


def compare_outcomes(check: Check, old: Outcome, new: Outcome, old_side: Side, new_side: Side, *, out: bool = True,
                     more: tuple[tuple[Path, Path, str], ...] = (), root: bool = True) -> None:
    """Exit status, stderr (and stdout) of one command on both sides, their paths normalized.
    ``more``: (old path, new path, placeholder) replaced too; ``root``: each side's checkout too."""
    if old.rc != new.rc:
        check.differences.append(f"exit status: old {rc_text(old.rc)}, new {rc_text(new.rc)}")
    streams = [("stderr", old.err, new.err)] + ([("stdout", old.out, new.out)] if out else [])
    for name, old_text, new_text in streams:
        compare_text(check, name, old_side.normalize(old_text, *[(o, m) for o, _, m in more], root=root),
                     new_side.normalize(new_text, *[(n, m) for _, n, m in more], root=root))


def rc_text(rc: int | None) -> str:
    return "killed after its time limit" if rc is None else str(rc)


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON value: ``requests.complete``, list items collapsed to ``[]``."""
    paths: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            paths.add(path)
            paths |= key_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            paths |= key_paths(item, f"{prefix}[]")
    return paths


def compare_json_keys(check: Check, what: str, old_file: Path, new_file: Path) -> None:
    loaded: list[set[str]] = []
    for side, path in (("old", old_file), ("new", new_file)):
        try:
            loaded.append(key_paths(json.loads(path.read_text())))
        except (OSError, ValueError) as error:
            loaded.append({f"<{what} unreadable on the {side} side: {type(error).__name__}>"})
    only_old, only_new = sorted(loaded[0] - loaded[1]), sorted(loaded[1] - loaded[0])
    if only_old or only_new:
        lines = [f"{what}: JSON key paths differ"]
        lines += [f"- only old: {p}" for p in only_old[:DIFF_LINES]]
        lines += [f"+ only new: {p}" for p in only_new[:DIFF_LINES]]
        check.differences.append("\n".join(lines))
    else:
        check.notes.append(f"{what}: {len(loaded[0])} key paths, the same")


def listing(folder: Path) -> str:
    """Every file and directory under ``folder``, relative, one a line (digits of dates masked)."""
    if not folder.exists():
        return ""
    names = sorted(str(p.relative_to(folder)) + ("/" if p.is_dir() else "") for p in folder.rglob("*"))
    return "\n".join(re.sub(r"\d{8}-\d{6}", "{DATE-TIME}", name) for name in names)


NUMBER = re.compile(r"\d[\d,.:]*(?:e[+-]?\d+)?")
VERDICTS = (  # compare's verdict follows the measured values: its words are masked like numbers
    (re.compile(r"^(\s*\S+) is (?:faster|slower) than (\S+): "), r"\1 vs \2: {VERDICT}, "),
    (re.compile(r"^(\s*\S+) vs (\S+): no clear difference, "), r"\1 vs \2: {VERDICT}, "),
    (re.compile(r"; within the \S+ minimum effect"), ""),
    (re.compile(r"\b(?:faster|slower|no clear difference)(\s*)$"), r"{VERDICT}\1"),
)


def shape(text: str) -> str:
    """``text`` with every number (and compare's verdict) masked and runs of spaces squeezed: its
    form, not its values."""
    lines = []
    for line in text.splitlines():
        for pattern, mask in VERDICTS:
            line = pattern.sub(mask, line)
        lines.append(re.sub(r" {2,}", " ", NUMBER.sub("#", line)).rstrip())
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# 1. help


def top_commands(help_text: str) -> list[str]:
    """The subcommands listed in the Commands box of ``pounder --help``."""
    commands: list[str] = []
    inside = False
    for line in help_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("╭") and "Commands" in stripped:
            inside = True
        elif inside and stripped.startswith("╰"):
            break
        elif inside and (match := re.match(r"│ (\S+)\s", stripped)):
            commands.append(match.group(1))
    return commands


def section_help(tally: Tally, old: Side, new: Side) -> None:
    tops = {side.label: run_pounder(side, ["--help"], side.scratch) for side in (old, new)}
    check = Check("help", "pounder --help")
    compare_outcomes(check, tops["old"], tops["new"], old, new)
    tally.add(check)
    listed = {label: top_commands(outcome.out) for label, outcome in tops.items()}
    if not listed["old"] or not listed["new"]:
        tally.add(Check("help", "subcommands", [f"no subcommand found in --help: {listed}"]))
    commands = listed["new"] + [c for c in listed["old"] if c not in listed["new"]]
    for command in commands:
        check = Check("help", f"pounder {command} --help")
        outcomes = [run_pounder(side, [command, "--help"], side.scratch) for side in (old, new)]
        compare_outcomes(check, outcomes[0], outcomes[1], old, new)
        tally.add(check)
    for args in (["--version"], ["--help", "--version"]):
        check = Check("help", "pounder " + " ".join(args))
        outcomes = [run_pounder(side, args, side.scratch) for side in (old, new)]
        compare_outcomes(check, outcomes[0], outcomes[1], old, new)
        tally.add(check)


# ------------------------------------------------------------------------------------------------
# 2. bad inputs


@dataclass(frozen=True)
class Case:
    """A bad input: ``args`` (placeholders: @DEAD@ a URL nothing listens at, @URL@ the test
    server, @PID@ its pid), the files and directories made first, the recorded runs copied in."""

    name: str
    args: tuple[str, ...]
    files: tuple[tuple[str, str], ...] = ()
    dirs: tuple[str, ...] = ()
    recorded: tuple[str, ...] = ()
    timeout: float = 60.0


def case(name: str, *args: str, files: dict[str, str] | None = None, dirs: Sequence[str] = (),
         recorded: Sequence[str] = (), timeout: float = 60.0) -> Case:
    return Case(name, args, tuple((files or {}).items()), tuple(dirs), tuple(recorded), timeout)


EXPERIMENT = """\
title = "same behaviour"

[server]
adapter = "url"

[[load]]
connections = 2
duration = "300ms"
trials = 3

[[variant]]
label = "a"
url = "@BASE@/"

[[variant]]
label = "b"
url = "@BASE@/x"
"""
DEAD_EXPERIMENT = EXPERIMENT.replace("@BASE@", "@DEAD@")
COMMAND_EXPERIMENT = (
    DEAD_EXPERIMENT.replace('adapter = "url"', 'adapter = "command"\ncommand = "srv {port}"\nworkers = 2')
    .replace('url = "@DEAD@/"', 'path = "/"').replace('url = "@DEAD@/x"', 'path = "/x"')
)
GUNICORN_EXPERIMENT = COMMAND_EXPERIMENT.replace('adapter = "command"\ncommand = "srv {port}"',
                                                 'adapter = "gunicorn"\napp = "wsgi_app:app"')


def bad_cases() -> list[Case]:
    dead = "@DEAD@/"
    b = ("bench", dead, "-n", "5")
    two = ("compare", dead, "@DEAD@/x", "-d", "300ms")
    return [
        # the command line itself
        case("no-arguments"),
        case("unknown-command", "frobnicate"),
        case("unknown-top-option", "--frobnicate"),
        # bench: URLs
        case("bench-no-url", "bench"),
        case("bench-ftp-url", "bench", "ftp://x/", "-n", "5"),
        case("bench-https-url", "bench", "https://127.0.0.1:1/", "-n", "5"),
        case("bench-garbage-url", "bench", "http://", "-n", "5"),
        case("bench-bad-port", "bench", "http://127.0.0.1:99999/", "-n", "5"),
        case("bench-non-loopback", "bench", "http://10.1.2.3/", "-n", "5"),
        case("bench-non-loopback-port", "bench", "http://192.168.0.1:8080/x", "-n", "5"),
        case("bench-url-and-url-file", *b, "-f", "u.txt", files={"u.txt": "@DEAD@/a\n"}),
        case("bench-url-file-missing", "bench", "-f", "missing.txt", "-n", "5"),
        case("bench-url-file-empty", "bench", "-f", "u.txt", "-n", "5", files={"u.txt": ""}),
        case("bench-url-file-non-loopback", "bench", "-f", "u.txt", "-n", "5", files={"u.txt": "http://10.1.2.3/\n"}),
        case("bench-url-file-bad-weight", "bench", "-f", "u.txt", "-n", "5", files={"u.txt": "-3 @DEAD@/\n"}),
        case("bench-access-log-missing", "bench", dead, "--access-log", "nope.log", "-n", "5"),
        case("bench-log-methods-without-log", *b, "--log-methods", "GET"),
        # bench: options
        case("bench-unknown-option", *b, "--bogus"),
        case("bench-bad-duration", "bench", dead, "-d", "5q"),
        case("bench-zero-duration", "bench", dead, "-d", "0"),
        case("bench-negative-requests", "bench", dead, "-n", "-5"),
        case("bench-requests-not-a-number", "bench", dead, "-n", "lots"),
        case("bench-zero-connections", *b, "-c", "0"),
        case("bench-zero-threads", *b, "-t", "0"),
        case("bench-zero-rate", *b, "--rate", "0"),
        case("bench-bad-ramp", *b, "--rate", "500..50..5"),
        case("bench-rate-and-stages", "bench", dead, "--rate", "10", "--stages", "1s@10"),
        case("bench-bad-stages", "bench", dead, "--stages", "bogus"),
        case("bench-stages-and-duration", "bench", dead, "--stages", "1s@10", "-d", "1s"),
        case("bench-bad-throttle", *b, "--throttle", "fast"),
        case("bench-bad-timeout", *b, "--timeout", "never"),
        case("bench-bad-warmup", *b, "--warmup", "soon"),
        case("bench-bad-order", *b, "--order", "sideways"),
        case("bench-header-without-colon", *b, "-H", "nocolon"),
        case("bench-header-content-length", *b, "-H", "Content-Length: 5"),
        case("bench-header-control-character", *b, "-H", "X-A: b\x01c"),
        case("bench-cookie-without-equals", *b, "--cookie", "bad"),
        case("bench-body-file-missing", *b, "-b", "@nope.bin"),
        case("bench-calls-per-conn-negative", *b, "--calls-per-conn", "-1"),
        case("bench-max-in-flight-closed-loop", *b, "--max-in-flight", "5"),
        # bench: outputs and server sampling
        case("bench-json-is-directory", *b, "--json", "d", dirs=["d"]),
        case("bench-json-in-missing-directory", *b, "--json", "nodir/x.json"),
        case("bench-json-and-csv-same-file", *b, "--json", "o.out", "--csv", "o.out"),
        case("bench-report-is-url-file", "bench", "-f", "u.txt", "-n", "5", "--report", "u.txt",
             files={"u.txt": "@DEAD@/a\n"}),
        case("bench-server-pid-not-a-number", *b, "--server-pid", "notanumber"),
        case("bench-server-pid-and-name", *b, "--server-pid", "1", "--server-name", "x"),
        case("bench-server-pidfile-missing", *b, "--server-pidfile", "nope.pid"),
        case("bench-server-pidfile-negative", *b, "--server-pidfile", "p.pid", files={"p.pid": "-5\n"}),
        case("bench-bad-sample-interval", *b, "--server-pid", "1", "--sample-interval", "often"),
        # bench: agents
        case("bench-ray-bogus", *b, "--ray", "bogus"),
        case("bench-ray-client-address", *b, "--ray", "ray://127.0.0.1:10001"),
        case("bench-ray-bad-port", *b, "--ray", "127.0.0.1:0"),
        case("bench-agents-without-ray", *b, "--agents", "3"),
        case("bench-agents-per-node-without-ray", *b, "--agents-per-node", "2"),
        case("bench-zero-agents", *b, "--agents", "0", "--ray", "local"),
        case("bench-too-many-agents", *b, "--agents", "5000", "--ray", "local"),
        case("bench-zero-agents-per-node", *b, "--agents-per-node", "0", "--ray", "local"),
        case("bench-agents-not-a-number", *b, "--agents", "many", "--ray", "local"),
        case("bench-more-agents-than-connections", "bench", dead, "-c", "2", "-n", "100", "--ray", "127.0.0.1:1",
             "--agents", "3"),
        case("bench-ray-and-unix-socket", *b, "--ray", "127.0.0.1:1", "--unix-socket", "s.sock"),
        case("bench-ray-unreachable-head", *b, "--ray", "127.0.0.1:1", timeout=90),
        # compare
        case("compare-one-url", "compare", dead),
        case("compare-two-trials", *two, "--trials", "2"),
        case("compare-bad-min-effect", *two, "--min-effect", "lots"),
        case("compare-unknown-baseline", *two, "--baseline", "nope"),
        case("compare-one-label-for-two-urls", *two, "--label", "a"),
        case("compare-non-loopback", "compare", "http://10.1.2.3/", "@DEAD@/x"),
        case("compare-chart-bad-suffix", *two, "--chart", "c.txt"),
        case("compare-unknown-option", *two, "--bogus"),
        case("compare-ray-bogus", *two, "--ray", "bogus"),
        case("compare-agents-without-ray", *two, "--agents", "2"),
        case("compare-more-agents-than-connections", *two, "-c", "2", "--ray", "127.0.0.1:1", "--agents", "3"),
        case("compare-ray-unreachable-head", *two, "--ray", "127.0.0.1:1", timeout=90),
        # mem
        case("mem-no-server", "mem"),
        case("mem-pid-not-a-number", "mem", "--server-pid", "x"),
        case("mem-pid-zero", "mem", "--server-pid", "0"),
        case("mem-bad-ram", "mem", "--server-pid", "@PID@", "--ram", "lots"),
        case("mem-count-without-watch", "mem", "--server-pid", "@PID@", "--count", "3"),
        case("mem-bad-watch", "mem", "--server-pid", "@PID@", "--watch", "often"),
        case("mem-pidfile-missing", "mem", "--server-pidfile", "nope.pid"),
        case("mem-pidfile-is-directory", "mem", "--server-pidfile", "d", dirs=["d"]),
        # syscalls
        case("syscalls-no-server", "syscalls", dead),
        case("syscalls-https", "syscalls", "https://127.0.0.1:1/", "--server-pid", "1"),
        case("syscalls-too-many-requests", "syscalls", dead, "--server-pid", "1", "-n", "200k"),
        case("syscalls-non-loopback", "syscalls", "http://10.1.2.3/", "--server-pid", "1"),
        # tune
        case("tune-nothing", "tune"),
        case("tune-unknown-server", "tune", "nginx", "x"),
        case("tune-gunicorn-without-target", "tune", "gunicorn"),
        case("tune-resume-missing", "tune", "--resume", "nodir"),
        case("tune-resume-not-a-run", "tune", "--resume", "d", dirs=["d"]),
        case("tune-resume-and-server", "tune", "gunicorn", "wsgi_app:app", "--resume", "tune-noleak",
             recorded=["tune-noleak"]),
        case("tune-resume-with-ray", "tune", "--resume", "tune-noleak", "--ray", "local", recorded=["tune-noleak"]),
        case("tune-demo-and-server", "tune", "gunicorn", "wsgi_app:app", "--demo"),
        case("tune-bad-ram", "tune", "gunicorn", "wsgi_app:app", "--pythonpath", "@APPS@", "--ram", "lots"),
        case("tune-two-trials", "tune", "gunicorn", "wsgi_app:app", "--pythonpath", "@APPS@", "--trials", "2"),
        case("tune-bad-mrpc", "tune", "gunicorn", "wsgi_app:app", "--pythonpath", "@APPS@", "--mrpc", "a,b"),
        case("tune-listen-non-loopback", "tune", "gunicorn", "wsgi_app:app", "--pythonpath", "@APPS@", "--listen",
             "10.1.2.3"),
        case("tune-results-not-empty", "tune", "gunicorn", "wsgi_app:app", "--pythonpath", "@APPS@", "--results",
             "r", files={"r/x": "x\n"}),
        case("tune-srvopt-preload-for-apache", "tune", "apache", "httpd.conf", "--preload"),
        case("tune-srvopt-no-preload-for-apache", "tune", "apache", "httpd.conf", "--no-preload"),
        case("tune-srvopt-preload-for-command", "tune", "command", "srv {port}", "--preload"),
        case("tune-srvopt-env-for-apache", "tune", "apache", "httpd.conf", "--env", "A=1"),
        case("tune-srvopt-stop-signal-for-gunicorn", "tune", "gunicorn", "wsgi_app:app", "--stop-signal", "QUIT"),
        case("tune-srvopt-stop-signal-for-starman", "tune", "starman", "@APPS@/app.psgi", "--stop-signal", "QUIT"),
        case("tune-srvopt-pythonpath-for-starman", "tune", "starman", "@APPS@/app.psgi", "--pythonpath", "/srv"),
        case("tune-srvopt-pythonpath-for-command", "tune", "command", "srv {port}", "--pythonpath", "/srv"),
        case("tune-srvopt-env-without-equals", "tune", "gunicorn", "wsgi_app:app", "--env", "FOO"),
        case("tune-srvopt-bad-stop-signal", "tune", "command", "srv {port}", "--stop-signal", "NOSUCH"),
        case("tune-apache-missing-conf", "tune", "apache", "/no/such/httpd.conf"),
        case("tune-ray-bogus", "tune", "--demo", "--ray", "bogus"),
        case("tune-agents-without-ray", "tune", "--demo", "--agents", "2"),
        case("tune-ray-unreachable-head", "tune", "--demo", "--results", "r", "--ray", "127.0.0.1:1", timeout=90),
        # run
        case("run-missing-file", "run", "missing.toml"),
        case("run-bad-toml", "run", "e.toml", files={"e.toml": "title = \n[server\n"}),
        case("run-unknown-adapter", "run", "e.toml",
             files={"e.toml": DEAD_EXPERIMENT.replace('adapter = "url"', 'adapter = "nginx"')}),
        case("run-one-variant", "run", "e.toml",
             files={"e.toml": DEAD_EXPERIMENT[: DEAD_EXPERIMENT.index('[[variant]]\nlabel = "b"')]}),
        case("run-zero-duration", "run", "e.toml",
             files={"e.toml": DEAD_EXPERIMENT.replace('duration = "300ms"', 'duration = "0s"')}),
        case("run-results-not-empty", "run", "e.toml", "--results", "r", files={"e.toml": DEAD_EXPERIMENT,
                                                                                  "r/x": "x\n"}),
        case("run-srvopt-command-preload", "run", "e.toml", "--results", "r",
             files={"e.toml": COMMAND_EXPERIMENT.replace("workers = 2", "workers = 2\npreload = true")}),
        case("run-srvopt-command-pythonpath", "run", "e.toml", "--results", "r",
             files={"e.toml": COMMAND_EXPERIMENT.replace("workers = 2", 'workers = 2\npythonpath = "x"')}),
        case("run-srvopt-command-variant-preload", "run", "e.toml", "--results", "r",
             files={"e.toml": COMMAND_EXPERIMENT.replace('label = "b"', 'label = "b"\npreload = false')}),
        case("run-srvopt-gunicorn-stop-signal", "run", "e.toml", "--results", "r",
             files={"e.toml": GUNICORN_EXPERIMENT.replace("workers = 2", 'workers = 2\nstop_signal = "INT"')}),
        case("run-srvopt-url-variant-env", "run", "e.toml", "--results", "r",
             files={"e.toml": DEAD_EXPERIMENT.replace('label = "b"', 'label = "b"\nenv = { A = "1" }')}),
        case("run-ray-bogus", "run", "e.toml", "--ray", "bogus", files={"e.toml": DEAD_EXPERIMENT}),
        case("run-agents-without-ray", "run", "e.toml", "--agents", "2", files={"e.toml": DEAD_EXPERIMENT}),
        case("run-more-agents-than-connections", "run", "e.toml", "--results", "r", "--ray", "127.0.0.1:1",
             "--agents", "3", files={"e.toml": DEAD_EXPERIMENT}),
        # report
        case("report-nothing", "report"),
        case("report-missing-file", "report", "missing.json", "-o", "r.html"),
        case("report-empty-file", "report", "r.json", "-o", "r.html", files={"r.json": ""}),
        case("report-json-list", "report", "r.json", "-o", "r.html", files={"r.json": "[]"}),
        case("report-not-a-result", "report", "r.json", "-o", "r.html", files={"r.json": '{"a": 1}'}),
        case("report-empty-directory", "report", "d", "-o", "r.html", dirs=["d"]),
        case("report-output-is-directory", "report", "tune-noleak", "-o", "d", dirs=["d"], recorded=["tune-noleak"]),
    ]


class Places:
    """What the placeholders of the cases stand for (the same on both sides)."""

    def __init__(self, dead_port: int, server: TestServer | None) -> None:
        self.dead = f"http://127.0.0.1:{dead_port}"
        self.url = server.url if server else self.dead
        self.pid = str(server.pid) if server else "1"

    def fill(self, text: str, side: Side) -> str:
        return (text.replace("@DEAD@", self.dead).replace("@URL@", self.url).replace("@PID@", self.pid)
                .replace("@BASE@", self.url).replace("@APPS@", str(side.apps)))


def recorded_copy(data: Path, name: str, folder: Path) -> Path:
    """A copy of the recorded run ``name`` in ``folder``, with this checkout's apps folder in its
    tune.json, as tests/support/recorded.py makes them: the same folder for both sides (the stored
    recommendations name this checkout's, /work/main/tests/apps, too), so that the pages and
    texts of the two sides are compared with no path replaced but the copies' own."""
    run = Path(shutil.copytree(data / name, folder / name))
    manifest = run / "tune.json"
    manifest.write_text(manifest.read_text().replace(RECORDED_MARK, str(REPO / "tests" / "apps")))
    return run


def prepare_case(one: Case, side: Side, places: Places, data: Path) -> Path:
    folder = side.scratch / "errors" / one.name
    folder.mkdir(parents=True)
    for name in one.dirs:
        (folder / name).mkdir(parents=True, exist_ok=True)
    for name, content in one.files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(places.fill(content, side))
    for name in one.recorded:
        recorded_copy(data, name, folder)
    return folder


def run_case(one: Case, side: Side, places: Places, data: Path) -> tuple[Outcome, str, Path]:
    folder = prepare_case(one, side, places, data)
    outcome = run_pounder(side, [places.fill(arg, side) for arg in one.args], folder, one.timeout)
    return outcome, listing(folder), folder


def section_errors(tally: Tally, old: Side, new: Side, places: Places, data: Path, only: str | None) -> None:
    cases = [c for c in bad_cases() if only is None or only in c.name]
    print(f"  ({len(cases)} cases)", flush=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [(c, pool.submit(run_case, c, old, places, data), pool.submit(run_case, c, new, places, data))
                   for c in cases]
        for one, old_future, new_future in futures:
            (old_out, old_files, old_dir), (new_out, new_files, new_dir) = old_future.result(), new_future.result()
            check = Check("errors", one.name)
            compare_outcomes(check, old_out, new_out, old, new, more=((old_dir, new_dir, "{CASE}"),))
            compare_text(check, "files left in the case's directory", old_files, new_files)
            check.notes.append(f"exit {rc_text(old_out.rc)} / {rc_text(new_out.rc)}, "
                               f"{old_out.seconds:.1f} s / {new_out.seconds:.1f} s: {new_out.err.strip()[:200]}")
            tally.add(check)


# ------------------------------------------------------------------------------------------------
# 3. real runs against a local server

SERVER_SCRIPT = """\
import http.server, os, signal, sys

class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

os.chdir(sys.argv[1])
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
children = []
for _ in range(2):  # pre-forked children sharing the listening socket, as Apache's prefork does
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            server.serve_forever()
        finally:
            os._exit(0)
    children.append(pid)

def stop(signum, frame):
    for child in children:
        try:
            os.kill(child, signal.SIGTERM)
        except ProcessLookupError:
            pass
    sys.exit(0)

signal.signal(signal.SIGTERM, stop)
print(server.server_address[1], flush=True)
while children:
    try:
        os.wait()
    except ChildProcessError:
        break
"""


class TestServer:
    """A small pre-forking HTTP server (a parent and two children) on a free 127.0.0.1 port."""

    def __init__(self, folder: Path) -> None:
        www = folder / "www"
        www.mkdir(parents=True)
        (www / "index.html").write_text("<p>hello</p>\n")
        (www / "x").write_text("x" * 2000 + "\n")
        script = folder / "server.py"
        script.write_text(SERVER_SCRIPT)
        self.proc = subprocess.Popen([sys.executable, str(script), str(www)], stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise SetupError("the test server did not start")
        self.port = int(line)
        self.pid = self.proc.pid
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            time.sleep(0.1)
        self.stop()
        raise SetupError("the test server does not accept connections")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                kill_tree(self.proc.pid)
                self.proc.wait()
        kill_tree(self.proc.pid)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class RealRun:
    """A real run: ``args`` (placeholders as the cases'), the JSON files it writes, the files or
    directories it must produce."""

    name: str
    args: tuple[str, ...]
    json_files: tuple[str, ...] = ()
    produces: tuple[str, ...] = ()
    results_dir: str | None = None
    timeout: float = 120.0


def real_runs() -> list[RealRun]:
    url = "@URL@/"
    return [
        RealRun("bench closed loop", ("bench", url, "-n", "200", "-c", "2", "--json", "out.json"), ("out.json",)),
        RealRun("bench open loop", ("bench", url, "-d", "1s", "--rate", "50", "--json", "rate.json"), ("rate.json",)),
        RealRun("bench sampling the server", ("bench", url, "-n", "100", "-c", "2", "--server-pid", "@PID@",
                                              "--sample-interval", "200ms", "--json", "sampled.json"),
                ("sampled.json",)),
        RealRun("bench --json -", ("bench", url, "-n", "50", "-c", "2", "--json", "-")),
        RealRun("compare", ("compare", url, "@URL@/x", "--trials", "3", "-d", "300ms", "--no-warmup", "--json",
                            "c.json"), ("c.json",)),
        RealRun("mem", ("mem", "--server-pid", "@PID@", "--json", "m.json"), ("m.json",)),
        RealRun("run of a plain-URL experiment", ("run", "e.toml", "--quick", "--results", "runres"),
                results_dir="runres", timeout=180),
        RealRun("report of bench", ("report", "out.json", "-o", "r-bench.html"), produces=("r-bench.html",)),
        RealRun("report of two bench results", ("report", "out.json", "rate.json", "sampled.json", "-o",
                                                "r-benches.html"), produces=("r-benches.html",)),
        RealRun("report of compare", ("report", "c.json", "-o", "r-compare.html"), produces=("r-compare.html",)),
        RealRun("report of mem", ("report", "m.json", "-o", "r-mem.html"), produces=("r-mem.html",)),
        RealRun("report of the run", ("report", "runres", "-o", "r-run.html"), produces=("r-run.html",)),
    ]


def section_runs(tally: Tally, old: Side, new: Side, places: Places, only: str | None) -> None:
    folders: dict[str, Path] = {}
    for side in (old, new):
        folders[side.label] = side.scratch / "runs"
        folders[side.label].mkdir()
        (folders[side.label] / "e.toml").write_text(places.fill(EXPERIMENT, side))
    for job in real_runs():
        if only is not None and only not in job.name:
            continue
        outcomes: dict[str, Outcome] = {}
        for side in (old, new):  # one after the other: the two loads do not share the CPUs
            outcomes[side.label] = run_pounder(side, [places.fill(a, side) for a in job.args], folders[side.label],
                                               job.timeout)
        o, n = outcomes["old"], outcomes["new"]
        check = Check("runs", job.name)
        if o.rc != n.rc:
            check.differences.append(f"exit status: old {rc_text(o.rc)}, new {rc_text(n.rc)}\n"
                                     f"old stderr: {old.normalize(o.err).strip()[-600:]}\n"
                                     f"new stderr: {new.normalize(n.err).strip()[-600:]}")
        check.notes.append(f"exit {rc_text(o.rc)} / {rc_text(n.rc)}, {o.seconds:.1f} s / {n.seconds:.1f} s")
        if o.rc not in (0, None) or n.rc not in (0, None):
            check.notes.append(f"new stderr: {new.normalize(n.err).strip()[-400:]}")
        old_dir, new_dir = folders["old"], folders["new"]
        if job.json_files == () and "--json" in job.args and "-" in job.args:  # JSON on stdout
            tmp_old, tmp_new = old_dir / "stdout.json", new_dir / "stdout.json"
            tmp_old.write_text(o.out)
            tmp_new.write_text(n.out)
            compare_json_keys(check, "JSON on stdout", tmp_old, tmp_new)
        else:
            compare_text(check, "stdout (numbers masked)", shape(old.normalize(o.out, (old_dir, "{RUN}"))),
                         shape(new.normalize(n.out, (new_dir, "{RUN}"))))
        compare_text(check, "stderr (numbers masked)", shape(old.normalize(o.err, (old_dir, "{RUN}"))),
                     shape(new.normalize(n.err, (new_dir, "{RUN}"))))
        for name in job.json_files:
            compare_json_keys(check, name, old_dir / name, new_dir / name)
        for name in job.produces:
            made = [(side, (folders[side] / name).is_file() and (folders[side] / name).stat().st_size > 0)
                    for side in ("old", "new")]
            if not all(ok for _, ok in made):
                check.differences.append(f"{name} written: " + ", ".join(f"{s} {ok}" for s, ok in made))
            else:
                check.notes.append(f"{name} written on both sides")
        if job.results_dir is not None:
            compare_results_dirs(check, old_dir / job.results_dir, new_dir / job.results_dir)
        tally.add(check)


def compare_results_dirs(check: Check, old_dir: Path, new_dir: Path) -> None:
    """The files of two results directories, and the key paths of each JSON file in both."""
    compare_text(check, "files in the results directory", listing(old_dir), listing(new_dir))
    if not old_dir.is_dir() or not new_dir.is_dir():
        return
    for path in sorted(old_dir.rglob("*.json")):
        twin = new_dir / path.relative_to(old_dir)
        if twin.is_file():
            compare_json_keys(check, str(path.relative_to(old_dir)), path, twin)


# ------------------------------------------------------------------------------------------------
# 4. reports of the stored tuning runs, 5. their recommendations made again

MADE = re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d UTC\b")
SVG_DATE = re.compile(r"<dc:date>[^<]*</dc:date>")
SVG_ID = re.compile(r"""(id="|url\(#|href="#)[A-Za-z_][\w.-]*""")
BASE64 = re.compile(r"base64,[A-Za-z0-9+/=]+")


def html_lines(html: str) -> str:
    """HTML cut after every tag, so that a diff shows the element that changed."""
    return re.sub(r">", ">\n", html)


def compare_html(check: Check, what: str, old_html: str, new_html: str) -> None:
    old_html, new_html = (SVG_DATE.sub("{DC-DATE}", MADE.sub("{MADE}", h)) for h in (old_html, new_html))
    if old_html == new_html:
        check.notes.append(f"{what}: identical ({len(new_html):,} characters)")
        return
    strip = [SVG_ID.sub(r"\1{ID}", BASE64.sub("base64,{DATA}", h)) for h in (old_html, new_html)]
    if strip[0] == strip[1]:
        check.notes.append(f"{what}: identical once the SVG ids and base64 data are taken out")
        return
    check.differences.append(f"{what} differs (made-time and paths removed; diff on the SVG-id-less text):\n"
                             + text_diff(html_lines(strip[0]), html_lines(strip[1]), what))


def recorded_runs(data: Path) -> list[str]:
    return sorted(p.name for p in data.iterdir() if p.is_dir() and p.name.startswith("tune-"))


def section_reports(tally: Tally, old: Side, new: Side, data: Path, only: str | None) -> None:
    names = recorded_runs(data)
    jobs: list[tuple[str, list[str]]] = [(name, [name]) for name in names]
    jobs.append(("several on one page", [n for n in ("tune-demo", "tune-cpu") if n in names]))
    interrupted = [n for n in ("tune-demo", "tune-noleak") if n in names]
    jobs += [(f"{name} interrupted", [f"{name}-interrupted"]) for name in interrupted]
    jobs += [(f"{name} interrupted early", [f"{name}-early"]) for name in interrupted[:1]]
    folders: dict[str, Path] = {}
    for side in (old, new):
        folders[side.label] = side.scratch / "reports"
        folders[side.label].mkdir()
        for name in names:
            recorded_copy(data, name, folders[side.label])
        for name in interrupted:  # stored by a run that was stopped: no recommendation (yet)
            for suffix, keep in (("interrupted", None), ("early", ("children-1-t1", "children-2-t1"))):
                copy = Path(shutil.copytree(folders[side.label] / name, folders[side.label] / f"{name}-{suffix}"))
                for made in ("recommendation.json", "recommendation.txt"):
                    (copy / made).unlink(missing_ok=True)
                for point in (copy / "points").glob("*.json"):
                    if keep is not None and point.stem not in keep:
                        point.unlink()
    for label, runs in jobs:
        if only is not None and only not in label:
            continue
        page = re.sub(r"\W+", "-", label) + ".html"
        outcomes = [run_pounder(side, ["report", *runs, "-o", page], folders[side.label]) for side in (old, new)]
        check = Check("reports", f"report {' '.join(runs)}")
        compare_outcomes(check, outcomes[0], outcomes[1], old, new,
                         more=((folders["old"], folders["new"], "{RUN}"),), root=False)
        htmls = []
        for side in (old, new):
            path = folders[side.label] / page
            text = path.read_text(errors="replace") if path.is_file() else ""
            htmls.append(side.normalize(text, (folders[side.label], "{RUN}"), root=False))
        if htmls[0] and htmls[1]:
            compare_html(check, page, htmls[0], htmls[1])
        elif htmls[0] or htmls[1]:
            which, size = ("old", len(htmls[0])) if htmls[0] else ("new", len(htmls[1]))
            check.differences.append(f"{page} written by the {which} side only ({size:,} characters)")
        else:
            check.notes.append("no page written on either side")
        tally.add(check)


def section_resume(tally: Tally, old: Side, new: Side, data: Path, only: str | None) -> None:
    folders: dict[str, Path] = {}
    for side in (old, new):
        folders[side.label] = side.scratch / "resume"
        folders[side.label].mkdir()
    for name in recorded_runs(data):
        if only is not None and only not in name:
            continue
        outcomes: list[Outcome] = []
        for side in (old, new):
            run = recorded_copy(data, name, folders[side.label])
            for made in ("recommendation.json", "recommendation.txt"):
                (run / made).unlink(missing_ok=True)
            outcomes.append(run_pounder(side, ["tune", "--resume", name], folders[side.label], timeout=120))
        check = Check("resume", f"tune --resume {name}")
        pair = (folders["old"] / name, folders["new"] / name)
        compare_outcomes(check, outcomes[0], outcomes[1], old, new, more=((folders["old"], folders["new"], "{RUN}"),),
                         root=False)
        compare_text(check, "files in the run", listing(pair[0]), listing(pair[1]))
        for made in ("recommendation.txt", "recommendation.json", "tune.json"):
            texts = [side.normalize(p.read_text(), (folders[side.label], "{RUN}"), root=False) if p.is_file()
                     else "<missing>"
                     for side, p in ((old, pair[0] / made), (new, pair[1] / made))]
            if made.endswith(".json"):
                texts = [pretty_json(t) for t in texts]
            compare_text(check, made, texts[0], texts[1])
        check.notes.append(f"exit {rc_text(outcomes[0].rc)} / {rc_text(outcomes[1].rc)}")
        tally.add(check)


def pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=1, sort_keys=True)
    except ValueError:
        return text


# ------------------------------------------------------------------------------------------------


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sides(base: str, new_ref: str | None, keep: bool) -> Iterator[tuple[Side, Side, Path]]:
    tmp = Path(tempfile.mkdtemp(prefix="pounder-same-"))
    made: list[Side] = []
    try:
        made.append(make_side("old", base, tmp))
        made.append(make_side("new", new_ref, tmp))
        yield made[0], made[1], tmp
    finally:
        for side in made:
            remove_side(side)
        if keep:
            print(f"(kept the cases' directories in {tmp})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def describe(side: Side, imported: str) -> str:
    what = f"{side.ref} ({side.commit[:10]})" if side.commit else f"the working tree of {REPO}"
    extra = ""
    if not side.worktree:
        changed = git("status", "--short", "--", "python", check=False).splitlines()
        extra = f"; {len(changed)} file(s) under python/ differ from HEAD" if changed else "; clean"
    return f"{side.label}: {what}, runs {imported}{extra}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("base", metavar="BASE_REF")
    parser.add_argument("new", metavar="NEW_REF", nargs="?", help="default: the working tree as it is")
    parser.add_argument("--section", default=",".join(SECTIONS), help=f"among {', '.join(SECTIONS)}")
    parser.add_argument("--case", help="only the checks whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print what the same checks saw")
    parser.add_argument("--keep", action="store_true", help="keep the cases' directories (not the worktrees)")
    options = parser.parse_args(argv)
    wanted = [s.strip() for s in options.section.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {', '.join(unknown)}: use {', '.join(SECTIONS)}")
    if not ENGINE_SO.is_file():
        print(f"same_behaviour: error: no engine at {ENGINE_SO} (build it first)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, on_sigterm)
    started = time.monotonic()
    tally = Tally(options.verbose)
    server: TestServer | None = None
    try:
        with sides(options.base, options.new, options.keep) as (old, new, tmp):
            for side in (old, new):
                print(describe(side, check_imports(side)), flush=True)
            data = new.root / "tests" / "data"
            if old.commit:
                changed = git("diff", "--stat", old.commit, *([new.commit] if new.commit else []), "--", "tests/data",
                              check=False)
                if changed:
                    print(f"note: tests/data differs between the two sides; the new side's is used:\n{changed}")
            if {"errors", "runs"} & set(wanted):
                server = TestServer(tmp / "server")
                print(f"test server: {server.url} (pid {server.pid}, 2 children)", flush=True)
            places = Places(free_port(), server)
            steps: list[tuple[str, Callable[[], None]]] = [
                ("help", lambda: section_help(tally, old, new)),
                ("errors", lambda: section_errors(tally, old, new, places, data, options.case)),
                ("runs", lambda: section_runs(tally, old, new, places, options.case)),
                ("reports", lambda: section_reports(tally, old, new, data, options.case)),
                ("resume", lambda: section_resume(tally, old, new, data, options.case)),
            ]
            for name, step in steps:
                if name in wanted:
                    print(f"\n== {name}", flush=True)
                    step()
            if server is not None:
                server.stop()
                server = None
    except SetupError as error:
        print(f"same_behaviour: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("same_behaviour: interrupted; worktrees and temporary files removed", file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()
    status = tally.summary()
    print(f"({time.monotonic() - started:.0f} s)")
    return status


if __name__ == "__main__":
    sys.exit(main())
