"""pounder.profile's Devel::NYTProf profiler against real Perl servers: Apache + mod_perl (children
replaced during the windows by MaxConnectionsPerChild included, the hot sub's calls against the
access log) and Starman; a server not prepared for it is told what to add."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import pounder
from pounder import UsageError
from pounder.procs import find_server
from pounder.profile import NYTProf, Sampled, load_profile
from pounder.servers import ApacheServer, StarmanServer, apache_missing, starman_missing
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning

APPS = Path(__file__).resolve().parents[1] / "apps"
PERL_APPS = APPS / "perl"
HOT = "PounderTest::Hot::work"


def _nytprof_missing() -> str | None:
    import shutil

    return None if shutil.which("nytprofmerge") else "nytprofmerge is not installed (libdevel-nytprof-perl)"


def _by_self(sampled: Sampled) -> list[tuple[str, int]]:
    """Functions by exclusive time (the leaf of each stack), all children together, largest first."""
    totals: Counter[str] = Counter()
    for (_pid, stack), weight in sampled.stacks.items():
        totals[stack.rsplit(";", 1)[-1]] += weight
    return totals.most_common()


def _load(url: str, requests: int) -> int:
    """A bounded load, one connection per request; the requests completed (all must succeed)."""
    result = pounder.bench(url, requests=requests, connections=2, keepalive=False, duration=60)
    assert result.requests.failed == 0 and result.requests.non_2xx == 0
    return result.requests.complete


def _apache(public_dir: Path, **kwargs: Any) -> ApacheServer:
    startup = (PERL_APPS / "startup.pl").read_text().replace("\n1;\n", "\nuse PounderTest::Hot ();\n1;\n")
    log = public_dir / "access.log"
    return ApacheServer(None, startup_pl=startup, perl_lib=PERL_APPS / "lib",
                        perl_handlers={"/hot": "PounderTest::Hot"}, keepalive=False,
                        extra_conf=f'LogFormat "%P %r" pid\nCustomLog "{log}" pid\n', **kwargs)


def test_apache_windows_respawned_children_and_calls(public_dir: Path, tmp_path: Path) -> None:
    if apache_missing(perl=True) or _nytprof_missing():
        pytest.skip(str(apache_missing(perl=True) or _nytprof_missing()))
    srv = _apache(public_dir, start_servers=2, min_spare=1, max_spare=3, max_request_workers=3,
                  max_connections_per_child=50, profile_dir=public_dir / "nytprof")
    srv.start(timeout_s=30)
    profiler = None
    try:
        profiler = NYTProf(find_server(pidfile=srv.pidfile))
        stale = public_dir / "nytprof" / "pounder-profile-window.on"
        stale.touch()  # a window left open by a pounder killed while profiling
        profiler.check()
        assert profiler.directory == public_dir / "nytprof" and not stale.exists()
        _load(f"{srv.url}/hot?w=0", 60)  # the warm-up: not profiled
        sent = 0
        for window in (1, 2):
            profiler.resume(tmp_path / "work")
            sent += _load(f"{srv.url}/hot?w={window}", 150)
            profiler.pause()
            _load(f"{srv.url}/hot?w=0", 60)  # an unprofiled trial between (and after) the windows
        sampled = profiler.finish()
    finally:
        if profiler is not None:
            profiler.close()
        srv.stop()
    assert processes_mentioning(str(srv.workdir)) == []
    assert not (public_dir / "nytprof" / "pounder-profile-window.on").exists()

    lines = (public_dir / "access.log").read_text().splitlines()
    in_windows = [line for line in lines if re.search(r"GET /hot\?w=[12] ", line)]
    assert len(in_windows) == sent == 300
    assert sampled.unit == "ns" and sampled.notes
    assert any("left open by an earlier pounder" in note for note in sampled.notes)
    assert any("loaded but off" in note for note in sampled.notes)
    assert _by_self(sampled)[0][0] == HOT, _by_self(sampled)[:5]
    calls = sampled.calls[HOT]
    assert abs(calls - len(in_windows)) <= 0.05 * len(in_windows), (calls, len(in_windows))
    assert sampled.calls["PounderTest::Hot::handler"] == calls
    # every child that served a window's request wrote its profile, those replaced during it too
    served_by = {int(line.split()[0]) for line in in_windows}
    assert set(sampled.pids) == served_by
    assert len(sampled.pids) > 3  # more than the pool: children were replaced (50 connections each)
    assert {pid for pid, _ in sampled.stacks} == set(sampled.pids)
    assert Path(sampled.files["nytprof.out"]).stat().st_size > 0



def test_starman_hot_sub_first(tmp_path: Path) -> None:
    if starman_missing() or _nytprof_missing():
        pytest.skip(str(starman_missing() or _nytprof_missing()))
    srv = StarmanServer(tmp_path / "starman", APPS / "hot.psgi", workers=2, keepalive=False,
                        profile_dir=tmp_path / "nytprof")
    srv.start(timeout_s=30)
    try:
        profiler = NYTProf(find_server(pidfile=srv.pidfile))
        try:
            profiler.check()
            _load(srv.url + "/", 20)
            profiler.resume(tmp_path / "work")
            sent = _load(srv.url + "/", 80)
            profiler.pause()
            sampled = profiler.finish()
        finally:
            profiler.close()
    finally:
        srv.stop()
    assert processes_mentioning(str(tmp_path)) == []
    assert _by_self(sampled)[0][0] == "PounderTest::HotPSGI::work", _by_self(sampled)[:5]
    assert sampled.calls["PounderTest::HotPSGI::work"] == sent
    assert 1 <= len(sampled.pids) <= 2


def test_check_names_the_lines_to_add(apache_server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if _nytprof_missing():
        pytest.skip(str(_nytprof_missing()))
    srv = apache_server(start_servers=1, min_spare=1, max_spare=2)
    profiler = NYTProf(find_server(pidfile=srv.pidfile))
    with pytest.raises(UsageError) as caught:
        profiler.check()
    message = str(caught.value)
    assert "\n" not in message
    for line in ("PerlSetEnv NYTPROF start=no:", "PerlLoadModule Devel::NYTProf::Apache",
                 "PerlLoadModule Pounder::ProfileWindow", "PerlSwitches -I"):
        assert line in message, message
    profiler.close()
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match="^nytprofmerge is not installed"):
        profiler.check()
    srv.stop()
    assert processes_mentioning(str(srv.workdir)) == []


def test_pounder_profile_on_apache_counts_every_profiled_request(public_dir: Path, tmp_path: Path) -> None:
    """``pounder profile`` (auto: NYTProf on a mod_perl server prepared for it): the hot sub first,
    its calls equal to the profiled trials' requests, and the access log holding every request sent."""
    if apache_missing(perl=True) or _nytprof_missing():
        pytest.skip(str(apache_missing(perl=True) or _nytprof_missing()))
    srv = _apache(public_dir, start_servers=2, min_spare=1, max_spare=3, max_request_workers=3,
                  max_connections_per_child=50, profile_dir=public_dir / "nytprof")
    srv.start(timeout_s=30)
    out = tmp_path / "p.json"
    try:
        done = run_pounder("profile", f"{srv.url}/hot", "--server-pidfile", srv.pidfile, "--rounds", "2", "-n", "120",
                           "-c", "2", "--no-keepalive", "--warmup", "40", "--json", out, timeout=180)
    finally:
        srv.stop()
    assert processes_mentioning(str(srv.workdir)) == []
    assert done.returncode == 0, done.stderr
    result = load_profile(out)
    assert result.profiler == "nytprof" and result.unit == "ns"
    top = result.by_self[0]
    assert top.name == HOT, done.stdout
    logged = len([line for line in (public_dir / "access.log").read_text().splitlines() if "GET /hot" in line])
    assert logged == 40 + sum(trial.complete for trial in result.trials)
    assert top.calls is not None and abs(top.calls - result.profiled_requests) <= 0.05 * result.profiled_requests
    assert "calls" in done.stdout and HOT in done.stdout
