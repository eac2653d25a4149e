"""Helpers for the tests of the Ruby servers (Puma, Unicorn) serving tests/apps/rack_app.ru: a
factory of servers in a test's directory that leaves nothing running, the sizes of a pool's
workers read by pounder and again from /proc, and a server whose starting process is killed."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import urllib.request
from pathlib import Path

from pounder.procs import snapshot
from pounder.servers import ManagedServer
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.printed import serving
from support.srvutil import MB, fields, smaps_kb, start_then_sigkill, wait_not_running, warm_every_child

RACK_APP = Path(__file__).resolve().parents[1] / "apps" / "rack_app.ru"
START_TIMEOUT_S = 60.0  # a shared 2-core machine


def worker_sizes(server: ManagedServer, data_mb: int, preload: bool) -> dict[int, tuple[float, float]]:
    """Every worker answers /data, then ``{pid: (shared MB, USS MB)}`` as pounder reads them
    (:func:`pounder.procs.snapshot`), each checked against a read of /proc/PID/smaps_rollup of
    this test's own (within 1 MB) and against where the data was built (the master with
    ``preload``, the worker itself without)."""
    answers = warm_every_child(server, "/data")
    snap = snapshot(server.pid)
    assert sorted(child.pid for child in snap.children) == server.children()
    sizes = {}
    for child in snap.children:
        kb = smaps_kb(child.pid)
        shared = (kb["Shared_Clean"] + kb["Shared_Dirty"]) / 1024
        uss = (kb["Private_Clean"] + kb["Private_Dirty"]) / 1024
        assert abs(child.shared / MB - shared) < 1.0, (child, kb)
        assert abs(child.uss / MB - uss) < 1.0, (child, kb)
        data = fields(answers[child.pid])
        assert data["bytes"] == str(data_mb * MB)
        assert data["built_in"] == str(server.pid if preload else child.pid)
        sizes[child.pid] = (child.shared / MB, child.uss / MB)
    return sizes


_STARTER = """
import json, sys, time
from pathlib import Path
import pounder.servers
cls = getattr(pounder.servers, sys.argv[1])
server = cls(Path(sys.argv[2]), sys.argv[3], workers=2).start(timeout_s=60)
print(json.dumps([server.pid, *server.children()]), flush=True)
time.sleep(60)
"""


def kill_starter_and_check(cls: type[ManagedServer], workdir: Path, timeout_s: float = 15.0) -> None:
    """A separate Python process starts a ``cls`` server and is SIGKILLed: the master and its
    workers must go away by themselves (the kernel sends the master its stop signal)."""
    pids = start_then_sigkill([sys.executable, "-c", _STARTER, cls.__name__, str(workdir), str(RACK_APP)])
    assert len(pids) == 3
    left = wait_not_running(pids, timeout_s)
    for pid in left:  # do not leave them behind even when failing
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"still running after the starting process was killed: {left}"


TUNE_ARGS = ("--path", "/sleep?ms=10", "--quick", "--point-duration", "1s", "--mrpc", "0", "--max-children", "1",
             "--clients", "2", "--measure-children", "1", "--no-confirm")
"""The shortest ``pounder tune`` of a Ruby server (under 60 s on a shared 2-core machine): one child,
its sweep at the 2 clients offered, so that its points are the pool compared (none measured again);
requests that wait 10 ms without CPU (``/sleep``), so that its loads leave the machine's CPUs to the
tests beside it."""


def printed_configuration(stdout: str, kind: str) -> tuple[str, str]:
    """(the configuration file, the command line) a ``pounder tune`` printed for ``kind``."""
    block = stdout.split(f"Configuration ({kind})\n", 1)[1]
    lines = [line[2:] for line in block.splitlines()]
    blank = lines.index("")
    assert lines[blank + 1] == "# run with", block
    return "\n".join(lines[1:blank]) + "\n", lines[blank + 2]


def tune_then_run_printed(kind: str, tmp_path: Path, file_name: str, listen: list[str],
                          stop: signal.Signals) -> str:
    """``pounder tune KIND tests/apps/rack_app.ru`` (:data:`TUNE_ARGS`) must exit 0 with a
    configuration in the server's syntax; the configuration file it printed is written to
    ``file_name`` and its command line run as a user would (plus ``listen``: the address flag with
    a free port, ``{port}`` in it), and must answer; stopped with ``stop``, nothing of either may
    be left. Returns what tune printed."""
    from pounder.servers import free_port

    results = tmp_path / "results"
    done = run_pounder("tune", kind, RACK_APP, *TUNE_ARGS, "--results", results, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert processes_mentioning(str(results)) == [], "a server outlived pounder tune"
    assert (results / "recommendation.json").is_file()
    config, command = printed_configuration(done.stdout, kind)
    user = tmp_path / "user"
    user.mkdir()
    (user / file_name).write_text(config)
    port = free_port()
    argv = [*shlex.split(command), *(arg.format(port=port) for arg in listen)]
    with serving(argv, user, port, stop, timeout_s=START_TIMEOUT_S) as url, \
            urllib.request.urlopen(url + "/", timeout=10) as answer:
        assert answer.read() == b"hello\n"
    return done.stdout
