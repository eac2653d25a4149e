"""Apache2::SizeLimit made from the measured child sizes, live.

A mod_perl app that leaks 100 KB per request (PounderTest::Leak; its code and ~40 MB of data loaded
in the parent) runs in a pool of 3; a warmed child is measured as ``pounder tune`` measures it
(pounder's snapshot, :func:`pounder.pool.child_statm` right after it, the growth per request over
the next requests) and :meth:`ApacheAdapter.size_limit` prints the Apache2::SizeLimit lines for a
child limit of the warmed USS + 40 MiB. The lines are applied to the user's configuration, the pool
started again by pounder's adapter and loaded (count-limited requests, loopback): every child must
be replaced when its USS, read by this test from /proc/PID/smaps_rollup while the load runs,
reaches the limit (±10 %), and none may grow beyond it. pounder tune prints the same lines from its
own size measurement (its warm-up of a leaking app grows the children by hundreds of MB, too many
requests to reach its limit in a short test)."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from pounder.pool import ApacheAdapter, ChildLimit, PoolParams, child_sizes, child_statm, growth_per_request
from pounder.procs import read_statm, snapshot
from pounder.servers import apache_missing
from pounder.servers._apache import find_apache
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.srvutil import warm_every_child
from support.uss_watch import UssWatch

MIB = 1024 * 1024
PERL_APPS_DIR = Path(__file__).resolve().parents[1] / "apps" / "perl"
LEAK = 102400  # PounderTest::Leak keeps this much per request
CHILDREN = 3
ROOM = 40 * MIB  # the private memory a child may still gain: its share of a RAM budget
MEASURED = 150  # requests over which the growth is measured
TOLERANCE = 0.10
RATE = 900  # requests a second: a child grows 30 MB/s, 0.3 MB between two of this test's readings 10 ms apart
START_TIMEOUT_S = 60.0


def _size_limit_installed() -> bool:
    found = subprocess.run(["perl", "-e", 'print grep { -f "$_/Apache2/SizeLimit.pm" } @INC'],
                           capture_output=True, text=True, check=False)
    return bool(found.stdout)


def _leaking_conf(folder: Path) -> Path:
    """The user's side of an httpd.conf: /leak answered by PounderTest::Leak, the handlers and ~40 MB
    of data loaded in the parent (startup_preload.pl)."""
    found = find_apache()
    assert found is not None
    shutil.copytree(PERL_APPS_DIR / "lib", folder / "lib")
    shutil.copy(PERL_APPS_DIR / "startup_preload.pl", folder / "startup_preload.pl")
    conf = folder / "app.conf"
    conf.write_text("\n".join([
        f"LoadModule perl_module {found[1]}/mod_perl.so", f"PerlSwitches -I{folder}/lib",
        "PerlRequire startup_preload.pl",
        "<Location /leak>", "    SetHandler modperl", "    PerlResponseHandler PounderTest::Leak", "</Location>", ""]))
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return conf


def _status(pid: int, *keys: str) -> int:
    """The sum of the kB lines ``keys`` of /proc/PID/status, in bytes."""
    with open(f"/proc/{pid}/status") as file:
        return sum(int(line.split()[1]) * 1024 for line in file if line.split(":")[0] in keys)


def _load(url: str, requests: int) -> None:
    """``requests`` GETs, keep-alive off, at ``RATE`` a second: pounder's own load generator."""
    done = run_pounder("bench", url, "--rate", RATE, "--no-keepalive", "-n", requests, "--warmup", "0", timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]


def _measure(adapter: ApacheAdapter, workdir: Path) -> ChildLimit:
    """A warmed child's sizes as pounder tune reads them, and the limit ``ROOM`` above its USS."""
    with adapter.server(PoolParams(CHILDREN), workdir).start(START_TIMEOUT_S) as server:
        warm_every_child(server, "/leak")
        warm = snapshot(server.pid)
        statm = child_statm(warm)
        assert statm is not None
        pid = statm["pid"]
        # pounder's statm reading against the kernel's own words for the same process
        assert read_statm(pid).size == _status(pid, "VmSize")
        assert read_statm(pid).shared == _status(pid, "RssFile", "RssShmem")
        _load(server.url + "/leak", MEASURED)
        grown = growth_per_request(warm, snapshot(server.pid), MEASURED)
        sizes = child_sizes(warm)
    assert abs(grown - LEAK) <= 0.1 * LEAK, grown
    start = statm["uss"]
    assert start == sizes["max_uss"]
    print(f"\nwarmed child {pid}: VmSize {statm['vm_size'] / MIB:.1f} MiB, statm shared "
          f"{statm['statm_shared'] / MIB:.1f} MiB, USS {start / MIB:.1f} MiB; growth {grown:,.0f} B/request")
    return ChildLimit(children=CHILDREN, start=start, limit=start + ROOM, shared=sizes["median_shared"], requests=0,
                      growth=grown, vm_size=statm["vm_size"], statm_shared=statm["statm_shared"])


def test_children_are_replaced_at_the_printed_size(public_dir: Path) -> None:
    missing = apache_missing(perl=True)
    if missing:
        pytest.skip(missing)
    if not _size_limit_installed():
        pytest.skip("Apache2::SizeLimit is not installed (Debian: libapache2-mod-perl2)")
    conf = _leaking_conf(public_dir)
    measured = _measure(ApacheAdapter(conf), public_dir / "measured")
    printed = ApacheAdapter(conf).size_limit(measured)
    max_kb = int(re.findall(r"set_max_process_size\((\d+)\);", printed)[0])
    every = int(re.findall(r"set_check_interval\((\d+)\);", printed)[0])
    limit = measured.limit
    # the trap: statm's "unshared" (VmSize - file pages) of a warmed child already exceeds the USS limit
    assert measured.vm_size - measured.statm_shared > limit
    print(f"printed: max_process_size {max_kb} KB, check every {every}; USS limit {limit / MIB:.1f} MiB")

    # the lines applied to the user's configuration, the same pool started by pounder's adapter
    applied = public_dir / "applied.conf"
    applied.write_text(conf.read_text() + "\n".join(line[2:] for line in printed.splitlines()[1:]) + "\n")
    applied.chmod(0o644)
    requests = int(3 * CHILDREN * limit // LEAK)  # room for each child to be replaced twice and more
    with ApacheAdapter(applied).server(PoolParams(CHILDREN), public_dir / "applied").start(START_TIMEOUT_S) as server:
        watch = UssWatch(server.pid)
        watch.start()
        try:
            _load(server.url + "/leak", requests)
            time.sleep(0.2)
        finally:
            watch.done.set()
            watch.join()
        alive = set(server.children())
        log = (server.workdir / "logs" / "error.log").read_text()
    assert processes_mentioning(str(public_dir / "applied")) == []
    replaced = {pid: uss for pid, uss in watch.at_largest_rss.items() if pid not in alive}
    exits = {int(pid): int(size) for pid, size in
             re.findall(r"\((\d+)\) Apache2::SizeLimit httpd process too big, exiting at SIZE=(\d+) KB", log)}
    print(f"{requests:,} requests; replaced at USS (MiB) / statm SIZE at exit (KB): "
          f"{sorted((round(uss / MIB, 1), exits.get(pid)) for pid, uss in replaced.items())}")
    assert len(replaced) > CHILDREN, (watch.largest, alive, log[-2000:])
    assert set(replaced) <= set(exits), log[-2000:]  # every child replaced was Apache2::SizeLimit's doing
    for pid, uss in replaced.items():
        assert abs(uss - limit) <= TOLERANCE * limit, (pid, uss / MIB, limit / MIB)
        assert max_kb < exits[pid] <= max_kb + every * LEAK // 1024 + 1024, exits
    assert max(watch.at_largest_rss.values()) <= (1 + TOLERANCE) * limit
