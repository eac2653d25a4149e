"""Experiment files and server configurations: paths, FILE:LINE, RAM budgets, advice that agrees.
(issue 39 items 13, 18, 19, 21.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``.

What is promised: every path of an experiment file is read relative to the file (a uWSGI ini
given as ``app`` too), whatever the current directory, and served by a real uWSGI; what a
server's adapter refuses is one line ``FILE:LINE: KEY: ...`` naming the file's keys (never a
command-line flag), exit 2 before anything starts; a uWSGI ini option uWSGI does not know is a
warning with its line and the run goes on; ``--ram cgroup[:PATH]`` is one budget for tune and mem
(the kernel's own limit of a cgroup made here); the configuration tune prints agrees with its
advice (a real Puma run without preloading); a count of one is singular."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

import run as R
from harness import HERE, Case, Ctx, Result

P = R.P
APPS = HERE.parent / "apps"
MIB = 1 << 20
EXPERIMENT = """\
title = "configs"
record = ["rps", "latency"]

[server]
adapter = "ADAPTER"
TARGET
workers = 1

[[load]]
connections = 1
duration = "500ms"
trials = 3

[[variant]]
label = "a"
path = "/"

[[variant]]
label = "b"
path = "/cpu?ms=1"
"""
"""A [server] whose TARGET line is line 6 (and the line after it 7)."""


def _experiment(adapter: str, target: str, *, ini: str | None = None, rel: str = "exp/e.toml"):
    """The experiment ``rel`` (in a directory of its own, with tests/apps/wsgi_app.py beside it, and
    ``ini`` as site.ini there), and a decoy site.ini in the case's directory (where pounder runs)."""

    def setup(ctx: Ctx) -> None:
        folder = Path(rel).parent
        ctx.write(str(folder / "wsgi_app.py"), (APPS / "wsgi_app.py").read_text())
        ctx.write(rel, EXPERIMENT.replace("ADAPTER", adapter).replace("TARGET", target))
        if ini is not None:
            ctx.write(str(folder / "site.ini"), ini)
        ctx.write("site.ini", "[uwsgi]\nmodule = not_this_one:app\n")  # the current directory's: never read

    return setup


def _no_flag(ctx: Ctx, res: Result) -> Iterable[str]:
    """A message about a file names its keys, not command-line flags."""
    if re.search(r"(?<![\w-])--\w", res.err):
        yield f"a flag named in an error about a file: {res.err.strip()[:200]}"


def _served_from_beside(ctx: Ctx, res: Result) -> Iterable[str]:
    """experiment.json names the ini beside the experiment, and both variants were measured."""
    stored = ctx.json("out/experiment.json")["experiment"]["server"]["app"]
    if stored != str(ctx.path("exp/site.ini")):
        yield f"the server ran {stored}, not the ini beside the experiment"
    load = ctx.json("out/load-1.json")
    for variant in load.get("variants", []):
        if not variant.get("trials"):
            yield f"variant {variant.get('label')}: no trial measured"


def _no_warning(ctx: Ctx, res: Result) -> Iterable[str]:
    if "warning" in res.err:
        yield f"a warning for an ini uWSGI knows: {res.err.strip()[:200]}"


def _cgroup(limit: int):
    """A memory cgroup made under pounder's own (this runner's) with ``limit`` bytes; its name and
    directory as @CG@ and @CGDIR@; removed by :func:`_cgroup_gone` (and at exit in any case)."""

    def setup(ctx: Ctx) -> None:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        v1 = next((line.split(":", 2)[2] for line in lines if line.split(":")[1] == "memory"), None)
        mount, name = (Path("/sys/fs/cgroup/memory"), v1) if v1 is not None else \
            (Path("/sys/fs/cgroup"), next(line.split(":", 2)[2] for line in lines if line.startswith("0::")))
        directory = mount / name.lstrip("/") / f"pounder-fam-{ctx.tag}"
        directory.mkdir()
        atexit.register(lambda: contextlib.suppress(OSError)(os.rmdir)(directory) if directory.exists() else None)
        (directory / ("memory.limit_in_bytes" if v1 is not None else "memory.max")).write_text(str(limit))
        ctx.vars["CGDIR"] = str(directory)
        ctx.vars["CG"] = f"{name.rstrip('/')}/{directory.name}"
        ctx.vars["CGLIMIT"] = int((directory / ("memory.limit_in_bytes" if v1 is not None else "memory.max"))
                                  .read_text())

    return setup


def _cgroup_budget(ctx: Ctx, res: Result) -> Iterable[str]:
    """mem's MaxClients budget is the cgroup's limit as the kernel reads it, named as its source."""
    data = json.loads(res.out)
    budget = data["max_clients"]
    if budget is None:
        yield "no MaxClients computed"
        return
    if budget["ram"] != ctx.vars["CGLIMIT"]:
        yield f"budget {budget['ram']} bytes, the cgroup's limit is {ctx.vars['CGLIMIT']}"
    if budget["ram_source"] != f"--ram cgroup:{ctx.vars['CG']}: the cgroup's memory limit":
        yield f"ram_source {budget['ram_source']!r}"


def _cgroup_gone(ctx: Ctx, res: Result) -> Iterable[str]:
    with contextlib.suppress(KeyError, OSError):
        os.rmdir(ctx.vars["CGDIR"])
    return ()


def _config_agrees(ctx: Ctx, res: Result) -> Iterable[str]:
    """The advice tells the Puma pool to preload; the configuration keeps preload_app! false as
    measured, with the comment pointing at the advice right above it."""
    flat = " ".join(res.out.split())
    if "add preload_app! to puma.rb" not in flat:
        yield "the advice does not tell this pool (64 MB built in every worker) to preload"
    lines = [line.strip() for line in res.out.splitlines()]
    if "preload_app! false" not in lines:
        yield "no preload_app! false in the configuration"
        return
    at = lines.index("preload_app! false")
    if "the advice recommends it" not in lines[at - 2]:
        yield f"preload_app! false printed beside the advice to add it, with no word: {lines[at - 2:at + 1]}"


def _singular(ctx: Ctx, res: Result) -> Iterable[str]:
    found = re.search(r"(?<![\d.,/])1 (lines|entries|requests|children|rounds|processes|options)\b", res.out + res.err)
    if found:
        yield f"'{found.group(0)}' printed"


INI_OK = "[uwsgi]\npythonpath = %d\nmodule = wsgi_app:app\n"
INI_TYPO = ("[uwsgi]\npythonpath = %d\nmodule = wsgi_app:app\nproccesses = 4\napp_dir = %d\n"
            "chdir = %(app_dir)\nhttp_socket = 127.0.0.1:1\n")
LOG = '127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 31 "-" "x"\n'


def _har(ctx: Ctx) -> None:
    entry = {"startedDateTime": "2026-11-23T10:00:00.000Z", "time": 5,
             "request": {"method": "GET", "url": ctx.url, "httpVersion": "HTTP/1.1", "headers": [],
                         "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
             "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": [],
                          "cookies": [], "content": {"size": 0, "mimeType": "text/plain"}, "redirectURL": "",
                          "headersSize": -1, "bodySize": 0},
             "cache": {}, "timings": {"send": 0, "wait": 5, "receive": 0}}
    ctx.write("one.har", json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
                                             "entries": [entry]}}))


def _paths() -> list[Case]:
    """Item 13: the paths of an experiment file, its FILE:LINE, its hints."""
    e = "exp/e\\.toml"
    return [
        Case("configs", "uwsgi-ini-beside-the-experiment", [P, "run", "exp/e.toml", "--quick", "--results", "out"],
             rc=0, setup=_experiment("uwsgi", 'app = "site.ini"', ini=INI_OK), server=None, outputs=("out*",),
             timeout=90, checks=(_served_from_beside, _no_warning),
             note="app = \"site.ini\" is the ini beside the experiment (a decoy in the current directory), served by "
                  "a real uWSGI; no warning for an ini uWSGI knows"),
        Case("configs", "uwsgi-ini-missing", [P, "run", "exp/e.toml"], rc=2, server=None, no_start=True,
             setup=_experiment("uwsgi", 'app = "gone.ini"'),
             err=rf"^pounder: error: {e}:6: server\.app: no such file gone\.ini \(paths are relative to the "
                 r"experiment file, \S+/exp\)\n$",
             note="an ini missing beside the experiment is named with its line, though the cwd has one by that name"),
        Case("configs", "uwsgi-module-not-found-names-the-key", [P, "run", "exp/e.toml"], rc=2, server=None,
             no_start=True, setup=_experiment("uwsgi", 'app = "no_such_module:app"\npythonpath = "."'),
             err=rf"^pounder: error: {e}:7: server\.pythonpath: uwsgi: cannot find the module 'no_such_module' of "
                 r"no_such_module:app in pythonpath = \"\S+/exp\", ", checks=(_no_flag,),
             note="the adapter's refusal (the real module search) with FILE:LINE: KEY, in the file's words"),
        Case("configs", "gunicorn-hint-names-the-toml-key", [P, "run", "exp/e.toml"], rc=2, server=None,
             no_start=True, setup=_experiment("gunicorn", 'app = "no_such_module:app"'),
             err=rf"^pounder: error: {e}:6: server\.app: gunicorn: cannot find the module .*give pythonpath = "
                 r"\"DIR\" for a module there\)\n$", checks=(_no_flag,),
             note="the missing-module hint names pythonpath = \"DIR\", not --pythonpath, for a file"),
        Case("configs", "tune-hint-names-the-flag", [P, "tune", "gunicorn", "no_such_module:app"], rc=2, server=None,
             no_start=True, err=r"give --pythonpath DIR for a module there\)\n$",
             note="the same hint on the command line names the flag"),
        Case("configs", "pythonpath-relative-to-the-file", [P, "run", "exp/e.toml"], rc=2, server=None,
             no_start=True, setup=_experiment("uwsgi", 'app = "wsgi_app:app"\npythonpath = ".,nowhere"'),
             err=rf"^pounder: error: {e}:7: server\.pythonpath: no such directory nowhere \(paths are relative to "
                 r"the experiment file, \S+/exp\)\n$",
             note="each pythonpath directory is read beside the file and checked, with its line"),
        Case("configs", "root-relative-to-the-file", [P, "run", "exp/e.toml"], rc=2, server=None, no_start=True,
             setup=R.chain(_experiment("php-fpm", 'conf = "pool.conf"\nroot = "www"'),
                           lambda c: c.write("exp/pool.conf", "[www]\npm = static\npm.max_children = 1\n"),
                           R.mkdir("www")),
             err=rf"^pounder: error: {e}:7: server\.root: no such directory www ",
             note="root is read beside the file, not in the current directory (which has www/)"),
        Case("configs", "psgi-path-with-a-nul", [P, "run", "exp/e.toml"], rc=2, server=None, no_start=True,
             setup=_experiment("starman", 'psgi = "a\\u0000b.psgi"'), err=rf"^pounder: error: {e}:6: server\.psgi: ",
             note="a path the system cannot use is one line with its key, no traceback"),
        Case("configs", "uwsgi-unknown-option-warns-and-runs",
             [P, "run", "exp/e.toml", "--quick", "--results", "out"], rc=0, server=None, outputs=("out*",),
             timeout=90, setup=_experiment("uwsgi", 'app = "site.ini"', ini=INI_TYPO),
             err=r"pounder: warning: \S+/exp/site\.ini: line 4: uwsgi does not know option 'proccesses' \(it ignores "
                 r"it\)\npounder: warning: \S+/exp/site\.ini: line 7: uwsgi does not know option 'http_socket' "
                 r"\(it ignores it\)\n", checks=(_served_from_beside, _singular),
             note="uWSGI ignores unknown ini options silently: each is a warning with its line (a placeholder the "
                  "file uses is not), and the run goes on"),
    ]


def _ram() -> list[Case]:
    """Item 18: one parser for a RAM budget."""
    mem = [P, "mem", "--server-pid", "@SERVERPID@"]

    def pid(ctx: Ctx) -> None:
        ctx.vars["SERVERPID"] = ctx.server().proc.pid

    return [
        Case("configs", "mem-ram-cgroup-path", [*mem, "--ram", "cgroup:@CG@", "--json", "-"], rc=0,
             setup=R.chain(pid, _cgroup(300 * MIB)), checks=(_cgroup_budget, _cgroup_gone), contact=False,
             server="prefork", server_extra=("--workers", "2"),
             note="mem --ram cgroup:PATH: the budget is the kernel's limit of a cgroup made here, named as its source"),
        Case("configs", "mem-ram-cgroup-dir", [*mem, "--ram", "cgroup:@CGDIR@"], rc=0, contact=False,
             server="prefork", server_extra=("--workers", "2"),
             setup=R.chain(pid, _cgroup(200 * MIB)), checks=(_cgroup_gone,),
             out=r"RAM budget:\s+200\.0 MiB \(--ram cgroup:/sys/fs/cgroup/\S+: the cgroup's memory limit\)",
             note="its directory works too, in the table"),
        Case("configs", "mem-ram-cgroup-colon-only", [*mem, "--ram", "cgroup:"], rc=2, setup=pid, contact=False,
             err=r"^pounder: error: --ram cgroup: needs a cgroup after the colon",
             note="the same refusal as tune's"),
        Case("configs", "mem-ram-cgroup-missing", [*mem, "--ram", "cgroup:/pounder-no-such-cgroup"], rc=2,
             setup=pid, contact=False,
             err=r"^pounder: error: --ram cgroup:/pounder-no-such-cgroup: no such memory cgroup \(looked for ",
             note="a cgroup that does not exist is named"),
        Case("configs", "tune-ram-cgroup-missing", [P, "tune", "gunicorn", "wsgi_app:app", "--pythonpath",
                                                    str(APPS), "--ram", "cgroup:/pounder-no-such-cgroup"],
             rc=2, server=None, no_start=True,
             err=r"^pounder: error: --ram cgroup:/pounder-no-such-cgroup: no such memory cgroup \(looked for ",
             note="tune says it in the same words (one parser)"),
    ]


def fam_configs() -> list[Case]:
    return [
        *_paths(),
        *_ram(),
        Case("configs", "tune-puma-config-agrees-with-advice",
             [P, "tune", "puma", "app.ru", "--env", "APP_DATA_MB=64", "--quick", "--ram", "1G", "--max-children", "2",
              "--measure-children", "2", "--mrpc", "0", "--point-duration", "1s", "--no-confirm", "--results", "out"],
             rc=0, server=None, outputs=("out*",), timeout=180,
             setup=R.files(app__ru=(APPS / "rack_app.ru").read_text()),
             checks=(_config_agrees,),
             note="a real Puma without preload_app!, 64 MB built in every worker: the printed configuration says "
                  "preload_app! false as measured, with a comment pointing at the advice to add it"),
        Case("configs", "one-line-log-is-singular", [P, "bench", "@URL@", "--access-log", "one.log", "-n", "3", "-c",
                                                    "1"], rc=0, setup=R.files(one__log=LOG), checks=(_singular,),
             out=r"1 line, 1 request in the mix", note="a one-line access log: 1 line, 1 request"),
        Case("configs", "one-entry-har-replay-is-singular", [P, "bench", "@URL@", "--replay", "one.har"], rc=0,
             setup=_har, checks=(_singular,), out=r"1 entry read, 1 request kept",
             note="a one-entry HAR replayed: 1 entry, 1 request"),
    ]


FAMILIES = {"configs": fam_configs}
