"""perf on a real php-fpm pool behind nginx (pounder.servers.PhpFpmServer, tests/apps/php): the
children's CPU time is sampled, those forked during the window included (pm.max_requests makes
php-fpm replace its workers while the load runs); perf missing or not permitted is one line
before anything runs; nothing of perf outlives close() or a SIGKILLed pounder."""

from __future__ import annotations

import os
import shutil
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from pounder import UsageError
from pounder.procs import find_server
from pounder.profile import Perf, load_profile
from pounder.servers import PhpFpmServer, phpfpm_missing
from support.cliutil import run_pounder
from support.leftovers import kill_leftovers, processes_mentioning
from support.srvutil import REPO, start_then_sigkill, wait_not_running

PHP_APP = REPO / "tests" / "apps" / "php"
PERF = shutil.which("perf")
REQUESTS = 60
CPU_MS = 25
pytestmark = [
    pytest.mark.skipif(phpfpm_missing() is not None, reason=str(phpfpm_missing())),
    pytest.mark.skipif(PERF is None, reason="perf is not installed (apt-get install linux-perf)"),
]


@pytest.fixture(scope="module")
def fpm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhpFpmServer]:
    """Two php-fpm workers, each replaced after 20 requests."""
    where = tmp_path_factory.mktemp("perf-fpm")
    server = PhpFpmServer(where / "srv", PHP_APP / "pool.conf", root=PHP_APP, max_children=2, max_requests=20)
    try:
        yield server.start(timeout_s=60)
    finally:
        server.stop()
        left = processes_mentioning(str(where))
        kill_leftovers(str(where))
        assert left == []


def _served_by(url: str) -> Counter[int]:
    """``REQUESTS`` requests to cpu.php, one at a time (each burns ``CPU_MS`` ms of its worker's
    CPU time): how many each worker served, by the pid the page reports."""
    served: Counter[int] = Counter()
    for _ in range(REQUESTS):
        with urllib.request.urlopen(f"{url}/cpu.php?ms={CPU_MS}", timeout=20) as answer:
            body = answer.read().decode()
        served[int(body.split("pid=")[1].split()[0])] += 1
    return served


def test_the_workers_cpu_is_sampled_those_forked_during_the_window_too(fpm: PhpFpmServer, tmp_path: Path) -> None:
    perf = Perf(find_server(pid=fpm.pid))
    try:
        perf.check()
        before = set(fpm.children())
        workdir = tmp_path / "a,b:c"  # perf's --control and -p split on those
        workdir.mkdir()
        perf.resume(workdir)
        served = _served_by(fpm.url)
        perf.pause()
        sampled = perf.finish()
    finally:
        perf.close()
    assert not processes_mentioning(str(tmp_path))
    weights: Counter[int] = Counter()
    for (pid, _stack), weight in sampled.stacks.items():
        weights[pid] += weight
    forked = set(served) - before
    assert forked, f"no worker was replaced during the window: {served}"  # max_requests 20, 60 requests
    for pid in served:  # every worker that served, those forked during the window included, was sampled
        assert weights[pid] > 0, (pid, served, weights)
        assert pid in sampled.pids
    assert fpm.pid in sampled.pids and set(weights) <= set(served) | {fpm.pid}
    # cpu-clock samples at 99 per second of CPU time: the requests' CPU time, give or take the
    # sampling's own variance and what PHP spends around the loop
    workers = sum(weights[pid] for pid in served)
    expected = REQUESTS * CPU_MS / 1000 * 99
    assert 0.8 * expected <= workers <= 1.6 * expected, (workers, expected)
    assert workers >= 0.9 * sum(weights.values())
    assert sampled.unit == "samples" and any("interpreter" in note for note in sampled.notes)
    frames = Counter(frame for (_pid, stack), weight in sampled.stacks.items() for frame in stack.split(";"))
    assert any(name.startswith(("execute_ex", "zend_", "[php-fpm")) for name in frames), frames.most_common(10)


def test_missing_or_not_permitted_is_one_line_before_anything_runs(
    fpm: PhpFpmServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = find_server(pid=fpm.pid)
    with pytest.raises(UsageError, match=r"is not a program: profiling this server needs perf \(apt-get install"):
        Perf(target, binary=tmp_path / "no-perf").check()
    with pytest.raises(UsageError, match="must be 1..[0-9]+ samples per second, not 0"):
        Perf(target, frequency=0).check()
    with monkeypatch.context() as patched:
        patched.setenv("PATH", str(tmp_path))
        with pytest.raises(UsageError, match="^perf is not installed: "):
            Perf(target).check()
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return
    # the real perf, run as nobody: the kernel refuses to let it watch another user's processes
    nobody = tmp_path / "perf-as-nobody"
    nobody.write_text(f'#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups {PERF} "$@"\n')
    nobody.chmod(0o755)
    with pytest.raises(UsageError) as refused:
        Perf(target, binary=nobody).check()
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"perf cannot profile process {fpm.pid} "), message
    assert "perf_event_paranoid" in message


_STARTER = """
import json, sys, time
from pathlib import Path
from pounder.procs import find_server
from pounder.profile import Perf
from support.leftovers import processes_mentioning
perf = Perf(find_server(pid=int(sys.argv[1])))
perf.check()
perf.resume(Path(sys.argv[2]))
print(json.dumps([p.pid for p in processes_mentioning(sys.argv[2])]), flush=True)
time.sleep(60)
"""


def test_no_perf_is_left_after_close_or_after_pounder_is_killed(fpm: PhpFpmServer, tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    closed.mkdir()
    perf = Perf(find_server(pid=fpm.pid))
    perf.check()
    try:
        perf.resume(closed)
        assert processes_mentioning(str(closed))  # perf runs
    finally:
        perf.close()  # without pause(): as after Ctrl-C in a window
    perf.close()  # idempotent
    assert processes_mentioning(str(closed)) == []
    killed = tmp_path / "killed"
    killed.mkdir()
    try:
        pids = start_then_sigkill([sys.executable, "-c", _STARTER, str(fpm.pid), str(killed)])
        assert len(pids) == 1  # perf record
        assert wait_not_running(pids, 15) == []
        assert processes_mentioning(str(killed)) == []
    finally:
        kill_leftovers(str(killed))
    # the server still serves
    with urllib.request.urlopen(f"{fpm.url}/index.php", timeout=20) as answer:
        assert answer.status == 200


def test_pounder_profile_on_php_fpm_behind_nginx(fpm: PhpFpmServer, tmp_path: Path) -> None:
    """``pounder profile --behind-proxy`` on the php-fpm master (the URL is nginx's): perf is chosen
    for PHP, the workers' samples are there, and without --behind-proxy the pool is refused in one line."""
    profile = ["profile", f"{fpm.url}/cpu.php?ms={CPU_MS}", "--server-pid", fpm.pid, "--rounds", "2", "-n", "30",
               "-c", "2", "--warmup", "5"]
    refused = run_pounder(*profile, timeout=60)
    assert refused.returncode == 2 and "--behind-proxy" in refused.stderr, refused.stderr
    out = tmp_path / "p.json"
    done = run_pounder(*profile, "--behind-proxy", "--json", out, timeout=180)
    assert done.returncode == 0, done.stderr
    result = load_profile(out)
    assert result.profiler == "perf" and result.unit == "samples" and result.total_weight > 0
    assert result.profiled_requests == 60
    assert any("native frames" in note for note in result.notes)
    assert not processes_mentioning(str(tmp_path))
