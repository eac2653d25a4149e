"""Memory as the platform counts it (issue 27): a server started with ``cgroup=True`` runs in a memory
cgroup of its own (pounder.servers.make_cgroup: cgroup v2 when its memory controller can be given to
a child, else v1), and ``cgroup_limit`` reads a cgroup's limit for ``--ram cgroup``. On the real
kernel, with a real gunicorn; every figure is read again here, independently of pounder, from
/proc/PID/cgroup, /proc/PID/smaps_rollup and the cgroup's own files. Skipped (with the reason) when
not root or when no memory cgroup can be made here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pounder import UsageError
from pounder.servers import ManagedServer, ServerStartError, make_cgroup
from pounder.servers._cgroup import cgroup_limit
from support.leftovers import kill_leftovers, processes_mentioning
from support.srvutil import MB, REPO, cgroup_probe, fields, smaps_kb, tree, wait_not_running, warm_every_child

PROBE, WHY = cgroup_probe()
pytestmark = pytest.mark.skipif(PROBE is None, reason=WHY)
PARENT = PROBE.path.parent if PROBE is not None else Path("/")
VERSION = PROBE.version if PROBE is not None else 0


def _cgroup_of(pid: int) -> str:
    """The memory cgroup of ``pid`` as /proc/PID/cgroup says it (v2: the unified line; v1: the
    line of the memory controller)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        hid, controllers, path = line.split(":", 2)
        if (VERSION == 2 and hid == "0" and controllers == "") or \
                (VERSION == 1 and "memory" in controllers.split(",")):
            return path
    raise AssertionError(f"no memory cgroup line for {pid}")


def _ours() -> set[str]:
    """This test process's pounder-PID-N cgroups now under our cgroup."""
    return {p.name for p in PARENT.iterdir() if p.name.startswith(f"pounder-{os.getpid()}-")}


def _within(value: int, reference: int, share: float) -> bool:
    return abs(value - reference) <= share * reference


def test_a_pool_in_its_cgroup_is_charged_its_pss(gunicorn_server) -> None:
    """gunicorn, 2 sync workers, no --preload, 40 MB built at import in each worker: a pool with no
    page-cache activity (it reads and writes no files once started; its code was read at import).

    What is compared: the cgroup's ``memory.current`` (v1 ``usage_in_bytes``) and its ``anon``
    (v1 ``total_rss``) with the sum of PSS of the server's processes (smaps_rollup). The anonymous
    memory is charged to the cgroup in full - the server ran in it from exec on - and the anonymous
    parts of the processes' PSS add up to each anonymous page once (a page shared by n processes
    counts 1/n in each), so ``anon`` equals the sum of ``Pss_Anon`` (checked to 2 %). The sum of
    PSS is more by the processes' shares of mapped files (the interpreter, libraries, compiled
    modules: in the page cache already, charged to whoever read them first, not here), and
    ``memory.current`` is more than ``anon`` by the kernel memory the processes caused (page
    tables, kernel stacks, slab) and the few file pages first read here; both differences are a
    few MB against ~100 MB, within 10 %."""
    srv = gunicorn_server(workers=2, env={"APP_DATA_MB": "40"}, start=False)
    srv.use_cgroup = True
    srv.start(timeout_s=60)
    cgroup = srv.cgroup
    assert cgroup is not None, srv.cgroup_note
    assert srv.cgroup_note == "" and cgroup.version == VERSION and cgroup.path.is_dir()
    assert cgroup.path.name.startswith(f"pounder-{os.getpid()}-")
    for pid, body in warm_every_child(srv, "/data").items():
        assert fields(body)["bytes"] == str(40 * MB) and fields(body)["built_in"] == str(pid)

    pids = tree(srv.pid)
    assert len(pids) == 3, pids
    assert sorted(int(p) for p in (cgroup.path / "cgroup.procs").read_text().split()) == sorted(pids)
    assert {pid: _cgroup_of(pid) for pid in pids} == {pid: cgroup.name for pid in pids}

    before = [smaps_kb(pid) for pid in pids]
    memory = cgroup.memory()
    after = [smaps_kb(pid) for pid in pids]
    pss = sum(m["Pss"] for m in before) * 1024
    pss_anon = sum(m["Pss_Anon"] for m in before) * 1024
    pss_file = sum(m["Pss_File"] for m in before) * 1024
    assert _within(sum(m["Pss"] for m in after) * 1024, pss, 0.01), "the pool's memory moved while it was read"
    figures = (f"v{memory.version}: current {memory.current / MB:.2f} MB, anon {memory.anon / MB:.2f} MB, "
               f"file {memory.file / MB:.2f} MB, shmem {memory.shmem / MB:.2f} MB, other {memory.other / MB:.2f} MB;"
               f" sum of PSS {pss / MB:.2f} MB (anon {pss_anon / MB:.2f}, file {pss_file / MB:.2f})")
    print(figures)
    assert memory.anon >= 80 * MB, figures  # two copies of the 40 MB
    assert _within(memory.anon, pss_anon, 0.02), figures
    assert _within(memory.current, pss, 0.10), figures
    assert _within(memory.anon, pss, 0.10), figures
    assert memory.shmem == 0 and memory.file < pss_file + 2 * MB, figures
    # the cgroup's own files, read here
    if VERSION == 2:
        assert memory.current == pytest.approx(int((cgroup.path / "memory.current").read_text()), rel=0.01)
    else:
        assert memory.current == pytest.approx(int((cgroup.path / "memory.usage_in_bytes").read_text()), rel=0.01)

    workdir = srv.workdir
    srv.stop()
    assert srv.cgroup is None and not cgroup.path.exists()
    assert [p for p in pids if psutil.pid_exists(p)] == []
    assert processes_mentioning(str(workdir)) == []
    assert cgroup.remove()  # idempotent


class _NoSuchProgram(ManagedServer):
    """A server whose program is not on PATH (found missing after its cgroup was made)."""

    def _prepare(self, port: int) -> list[str]:
        return ["pounder-no-such-program", "--port", str(port)]


def test_a_start_that_fails_removes_its_cgroup(gunicorn_server, tmp_path: Path) -> None:
    (tmp_path / "broken_app.py").write_text('raise RuntimeError("pounder-test: import failed on purpose")\n')
    srv = gunicorn_server("broken_app:app", start=False, pythonpath=str(tmp_path))
    srv.use_cgroup = True
    before = _ours()
    with pytest.raises(ServerStartError, match="pounder-test: import failed on purpose"):
        srv.start(timeout_s=30)
    assert srv.cgroup is None and _ours() == before
    assert not psutil.pid_exists(srv.pid)

    missing = _NoSuchProgram(tmp_path / "none", cgroup=True)
    with pytest.raises(ServerStartError, match="cannot run pounder-no-such-program: No such file or directory"):
        missing.start(timeout_s=10)
    assert missing.cgroup is None and _ours() == before


def test_cgroup_limit_reads_the_limit_set() -> None:
    made, why = make_cgroup()
    assert made is not None, why
    below = made.path / "below"
    try:
        limit = 300 * MB
        (made.path / ("memory.max" if made.version == 2 else "memory.limit_in_bytes")).write_text(str(limit))
        assert cgroup_limit(made.name) == limit
        assert cgroup_limit(str(made.path)) == limit
        below.mkdir()  # no limit of its own: its parent's applies
        assert cgroup_limit(made.name + "/below") == limit
        with pytest.raises(UsageError, match=r"^--ram cgroup:/pounder-no-such-cgroup: no such memory cgroup [^\n]*$"):
            cgroup_limit("/pounder-no-such-cgroup")
    finally:
        if below.exists():
            below.rmdir()
        assert made.remove()

    fresh, why = make_cgroup()
    assert fresh is not None, why
    try:
        try:
            own: int | None = cgroup_limit()
        except UsageError:
            own = None
        if own is None:  # nothing above sets a limit: neither does the fresh cgroup
            with pytest.raises(UsageError, match=rf"^cgroup {fresh.name} sets no memory limit"):
                cgroup_limit(fresh.name)
        else:
            assert cgroup_limit(fresh.name) == own
    finally:
        assert fresh.remove()


def _dead_pid() -> int:
    """The pid of a process that has ended (and was reaped), not reused since."""
    while True:
        proc = subprocess.Popen(["true"])
        proc.wait()
        if not psutil.pid_exists(proc.pid):
            return proc.pid


STARTER = """
import sys, time
from pounder.servers import GunicornServer
server = GunicornServer(sys.argv[1], "wsgi_app:app", pythonpath=sys.argv[2], workers=2)
server.use_cgroup = True
server.start(timeout_s=60)
print(server.cgroup.path, flush=True)
time.sleep(120)
"""


def test_a_killed_pounder_leaves_no_cgroup(tmp_path: Path) -> None:
    """A Python process starts a gunicorn in a cgroup and is SIGKILLed: the guard stops the server
    and removes the cgroup. A leftover of a process that is gone is swept by the next make_cgroup."""
    work = tmp_path / "work"
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(work), str(REPO / "tests" / "apps")],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert starter.stdout is not None
        path = Path(starter.stdout.readline().strip())
        assert path.name.startswith(f"pounder-{starter.pid}-") and path.is_dir()
        pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        assert len(pids) == 3
        starter.send_signal(signal.SIGKILL)
        starter.wait(timeout=10)
        assert wait_not_running(pids, 10) == []
        deadline = time.monotonic() + 10
        while path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not path.exists()
        assert processes_mentioning(str(work)) == []
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
        kill_leftovers(str(work))

    stale = PARENT / f"pounder-{_dead_pid()}-7"
    stale.mkdir()
    made, why = make_cgroup()
    try:
        assert made is not None, why
        assert not stale.exists()
    finally:
        if stale.exists():
            stale.rmdir()
        if made is not None:
            made.remove()
