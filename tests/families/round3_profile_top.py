"""profile and top: a server that dies, identity checks first, output suffixes, closed pipes.
(issue 39 items 7, 9, 12, 14, 17.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterable

import run as R  # noqa: F401
from harness import Case, Ctx, Result

P = "@POUNDER@"
F = "profile_top"
PROFILE = ["--rounds", "1", "-d", "300ms", "-c", "2", "--warmup", "10"]


def _server_pid(ctx: Ctx) -> None:
    """@SPID@: the pid of the harness's pre-forking server (its parent, which listens)."""
    ctx.vars["SPID"] = ctx.server().proc.pid


def _not_a_server(ctx: Ctx) -> None:
    """@SH@: a shell with two sleeping children, listening nowhere."""
    shell = ctx.spawn(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    ctx.vars["SH"] = shell.pid
    time.sleep(0.2)


def _kill_server_after(seconds: float):
    """The harness's server killed (SIGKILL) ``seconds`` after the set-up: it dies during the run."""

    def setup(ctx: Ctx) -> None:
        _server_pid(ctx)
        proc = ctx.server().proc
        threading.Timer(seconds, lambda: proc.poll() is None and proc.send_signal(signal.SIGKILL)).start()

    return setup


def _written_interrupted(rel: str, *words: str):
    def written_interrupted(ctx: Ctx, res: Result) -> Iterable[str]:
        try:
            doc = json.loads(ctx.path(rel).read_text())
        except (OSError, ValueError) as error:
            yield f"{rel} was not written whole: {error}"
            return
        if doc.get("interrupted") is not True:
            yield f"{rel} is not marked interrupted"
        notes = " ".join(doc.get("notes", []))
        for word in words:
            if word not in notes:
                yield f"{rel}'s notes do not say {word!r}"

    return written_interrupted


def _stdout_has(*words: str):
    def stdout_has(ctx: Ctx, res: Result) -> Iterable[str]:
        for word in words:
            if word not in res.out:
                yield f"stdout does not show {word!r} (the figures must still be printed)"

    return stdout_has


def _closed_pipe(command: str) -> list[str]:
    """``pounder ... | head -1`` with pipefail: pounder's own exit status is the pipe's."""
    return ["bash", "-c", f"set -o pipefail; {command} | head -1 >/dev/null"]


def _pipe_cases() -> list[Case]:
    quiet = r"\A\Z"  # nothing on stderr at all
    cases = [Case(F, f"closed-pipe{name}", _closed_pipe(f"{P} {args}"), rc=0, err=quiet, server=None,
                  note="a closed stdout pipe ends quietly, exit 0")
             for name, args in (("-help", "--help"), ("-version", "--version"), ("-profile-help", "profile --help"),
                                ("-top-help", "top --help"), ("-report-help", "report --help"))]  # fmt: skip
    cases.append(Case(F, "closed-pipe-bench-still-writes", _closed_pipe(f"{P} bench @URL@ -n 50 -c 1 --json out.json"),
                      rc=0, err=quiet, outputs=("out.json",), contact=True, checks=(R.nonempty("out.json"),),
                      note="bench | head: the figures go nowhere quietly, --json is written"))  # fmt: skip
    return cases


def _identity_cases() -> list[Case]:
    who = r"process 1 \(\S+\) (cannot be looked at|is not a server)"
    cases = [
        Case(F, "top-pid-1", [P, "top", "--pid", "1", "--once"], rc=2, err=who, server=None,
             note="pid 1 is refused as no server, never 'run as root' while root"),
        Case(F, "mem-pid-1", [P, "mem", "--server-pid", "1"], rc=2, err=who, server=None),
        Case(F, "profile-pid-1", [P, "profile", "@URL@", "--server-pid", "1", *PROFILE], rc=2,
             err=r"process 1 \(\S+\) (cannot be looked at|is not a server|does not listen)", contact=False,
             checks=(lambda c, r: ["perf was named"] if "perf" in r.err else [],),
             note="refused before perf or py-spy is started"),
    ]
    for name, argv in (("top", ["top", "--pid", "@SH@", "--once"]), ("mem", ["mem", "--server-pid", "@SH@"]),
                       ("bench", ["bench", "@URL@", "-n", "5", "--server-pid", "@SH@"]),
                       ("compare", ["compare", "@URL@", "@URL@x", "--server-pid", "@SH@"]),
                       ("syscalls", ["syscalls", "@URL@", "--server-pid", "@SH@"]),
                       ("profile", ["profile", "@URL@", "--server-pid", "@SH@"])):  # fmt: skip
        cases.append(Case(F, f"{name}-shell-no-server", [P, *argv], rc=2, setup=_not_a_server, contact=False,
                          err=r"process \d+ \(sh\) is not a server: neither it nor its children listen",
                          note="a parent listening nowhere is no server: one line, nothing sent"))  # fmt: skip
    return cases


def _name_cases() -> list[Case]:
    wrong = {
        "profile-flamegraph-png": ["profile", "@URL@", "--server-pid", "@SPID@", "--flamegraph", "out.png"],
        "profile-json-svg": ["profile", "@URL@", "--server-pid", "@SPID@", "--json", "p.svg"],
        "top-json-html": ["top", "--pid", "@SPID@", "--once", "--json", "t.html"],
        "mem-json-csv": ["mem", "--server-pid", "@SPID@", "--json", "m.csv"],
        "bench-json-png": ["bench", "@URL@", "-n", "5", "--json", "r.png"],
        "syscalls-log-json": ["syscalls", "@URL@", "--server-pid", "@SPID@", "--log", "s.json"],
    }
    return [Case(F, f"name-{name}", [P, *argv], rc=2, server="prefork", setup=_server_pid, contact=False,
                 err=r"the file is \S+, not \.\w+: give a name ending in", no_start=True,
                 note="an output named as another format: one line, exit 2, nothing sent")
            for name, argv in wrong.items()]  # fmt: skip


def _write_cases() -> list[Case]:
    def ro(ctx: Ctx) -> None:
        _server_pid(ctx)
        ctx.mount_tmpfs("ro", "64k", ro=True)

    full = r"^pounder: error: cannot write --json /dev/full: No space left on device\n\Z"
    return [
        Case(F, "profile-read-only-dir-before", [P, "profile", "@URL@", "--server-pid", "@SPID@", *PROFILE, "--json",
                                                 "ro/p.json"], rc=2, server="prefork", setup=ro, contact=False,
             err="--json:? .*cannot write", note="a directory that takes no file is bad input before anything: 2"),
        Case(F, "top-read-only-dir-before", [P, "top", "--pid", "@SPID@", "--once", "--json", "ro/t.json"], rc=2,
             server="prefork", setup=ro, err="--json:? .*cannot write"),
        Case(F, "top-dev-full-after", [P, "top", "--pid", "@SPID@", "--once", "--interval", "100ms", "--json",
                                       "/dev/full"], rc=1, server="prefork", setup=_server_pid, err=full,
             checks=(_stdout_has("children", "PSS"),), note="a write that fails after: 1, one line, figures printed"),
        Case(F, "mem-dev-full-after", [P, "mem", "--server-pid", "@SPID@", "--json", "/dev/full"], rc=1,
             server="prefork", setup=_server_pid, err=full, checks=(_stdout_has("MaxClients"),)),
        Case(F, "profile-dev-full-after", [P, "profile", "@URL@", "--server-pid", "@SPID@", *PROFILE, "--json",
                                           "/dev/full"], rc=1, server="prefork", setup=_server_pid, err=full,
             timeout=60, checks=(_stdout_has("Profile of process", "Profiler's cost"),)),
    ]


def _dies_cases() -> list[Case]:
    return [
        Case(F, "profile-server-killed", [P, "profile", "@URL@", "--server-pid", "@SPID@", "--rounds", "4", "-d", "1s",
                                          "-c", "2", "--warmup", "10", "--json", "p.json"],
             rc=1, server="prefork", setup=_kill_server_after(3.0), outputs=("p.json",), timeout=90,
             err=r"pounder: error: the server process \d+ \(\S+\) (was killed by SIGKILL|exited) during the profile: "
                 r"the profile holds what was sampled until then, written to p\.json",
             checks=(_written_interrupted("p.json", "during the profile"),
                     lambda c, r: ["py-spy blamed"] if "py-spy ended" in r.err else []),
             note="the server's exit is the cause named; what was measured is written; exit 1"),
    ]


def fam_profile_top() -> list[Case]:
    return [*_pipe_cases(), *_identity_cases(), *_name_cases(), *_write_cases(), *_dies_cases()]


FAMILIES = {"profile_top": fam_profile_top}

