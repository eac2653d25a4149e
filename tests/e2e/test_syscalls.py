"""`pounder syscalls` on real Apache + mod_perl: THE STAT() EXPERIMENT of the classic mod_perl
guide ("Reducing the number of stat() calls made by Apache").

A mod_perl handler (PounderTest::Hello) answers the virtual URI /news/perl/mod_perl/summary,
which is no file. Three configurations of the same server:

* ``htaccess``: ``AllowOverride All`` from ``<Directory />`` down (Apache's compiled-in default
  before 2.3.9): Apache maps the URI under the DocumentRoot, stats the whole path (ENOENT),
  then walks it from / down, opening ``.htaccess`` in every directory (ENOENT) and lstat-ing
  each component until ``htdocs/news`` (ENOENT); the rest becomes PATH_INFO.
* ``alias``: ``AllowOverride None`` (pounder's default) and an ``Alias`` of the URI to a real
  file: one stat, which succeeds, and no walk.
* ``trans``: a ``PerlTransHandler`` (PounderTest::Trans) returning OK for /news/...: the URI is
  never mapped to a file name, so there is nothing to stat.

Each configuration is traced twice (the counts must be whole numbers per request and the same
both times); the request count is checked against the server's own (mod_status Total Accesses),
and the calls against ``strace -c``'s own summary of the same traffic (strace counting, not
pounder's parser). Traffic only to 127.0.0.1; every load is a fixed number of requests; every
server and strace started here is stopped at the end, also on failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import pounder
from pounder.servers import ApacheServer, apache_missing
from pounder.servers._apache import find_apache
from pounder.syscalls import SyscallReport, render_syscalls, trace_syscalls
from support.cliutil import run_pounder, with_pythonpath
from support.schemas import validate

URI = "/news/perl/mod_perl/summary"
REQUESTS = 300
WARMUP = 20
CONNECTIONS = 2
PERL_APPS = Path(__file__).resolve().parents[1] / "apps" / "perl"
STAT_CALLS = frozenset({"stat", "lstat", "newfstatat", "fstatat64", "statx", "stat64", "lstat64"})
OPEN_CALLS = frozenset({"open", "openat", "openat2"})
ATTACH_TIMEOUT_S = 10.0

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")


def extra_conf(config: str, modules: Path) -> str:
    if config == "htaccess":
        return "<Directory />\n    AllowOverride All\n</Directory>\n"
    if config == "alias":  # relative: against the ServerRoot, the server's workdir
        return (f'LoadModule alias_module "{modules / "mod_alias.so"}"\n'
                "<Directory />\n    AllowOverride None\n</Directory>\n"
                f"Alias {URI} htdocs/index.html\n")  # fmt: skip
    assert config == "trans"
    return "PerlTransHandler PounderTest::Trans\n"


@dataclass
class Measured:
    server: ApacheServer
    runs: list[SyscallReport]
    served: int  # requests the server counted (mod_status) during the first run, warm-up included


def total_accesses(server: ApacheServer) -> int:
    return int(server.status()["Total Accesses"])


def stat_and_open(report: SyscallReport) -> float:
    return sum(entry.per_request for entry in report.calls if entry.name in STAT_CALLS | OPEN_CALLS)


def stats(report: SyscallReport) -> float:
    return sum(entry.per_request for entry in report.calls if entry.name in STAT_CALLS)


def traced(server: ApacheServer) -> SyscallReport:
    return trace_syscalls(server.url + URI, server_pidfile=server.pidfile, requests=REQUESTS,
                          connections=CONNECTIONS, warmup=WARMUP, timeout=10, duration=60)  # fmt: skip


@pytest.fixture(scope="module")
def experiment() -> Iterator[dict[str, Measured]]:
    """The three servers, each traced twice. Two children that neither start nor exit during
    the runs (StartServers = MaxRequestWorkers = 2, 2 connections), keep-alive off."""
    missing = apache_missing(perl=True)
    if missing:
        pytest.skip(missing)
    found = find_apache()
    assert found is not None
    servers: list[ApacheServer] = []
    measured: dict[str, Measured] = {}
    try:
        for config in ("htaccess", "alias", "trans"):
            server = ApacheServer(
                startup_pl=(PERL_APPS / "startup.pl").read_text(), perl_lib=PERL_APPS / "lib",
                perl_handlers={URI: "PounderTest::Hello"}, extra_conf=extra_conf(config, found[1]),
                start_servers=2, min_spare=1, max_spare=2, max_request_workers=2,
            )  # fmt: skip
            servers.append(server)
            server.start()
            before = total_accesses(server)
            first = traced(server)
            served = total_accesses(server) - before
            measured[config] = Measured(server, [first, traced(server)], served)
        yield measured
    finally:
        errors = []
        for server in servers:
            try:
                server.stop()
            except Exception as error:  # stop the others all the same
                errors.append(error)
        if errors:
            raise errors[0]


def failures(report: SyscallReport) -> dict[tuple[str, str, str | None], float]:
    return {(f.name, f.errno, f.path): f.per_request for f in report.failures}


def looked_up(report: SyscallReport) -> list[str]:
    """Paths of failing calls that look for the URI or for .htaccess files."""
    return [f.path for f in report.failures if f.path is not None and ("news" in f.path or ".htaccess" in f.path)]


# -- the traces are sound --------------------------------------------------------------------


@pytest.mark.parametrize("config", ["htaccess", "alias", "trans"])
def test_every_request_traced_and_nothing_else(experiment: dict[str, Measured], config: str) -> None:
    for report in experiment[config].runs:
        assert report.requests == REQUESTS and report.non_2xx == 0
        # keep-alive off: one connection per request, and the children accepted only ours
        assert report.connections_opened == report.connections_accepted == REQUESTS
        assert report.per_request("accept4") + report.per_request("accept") == 1.0
        assert report.messages == () and report.started == () and report.exited == ()
        assert report.unparsed_lines == 0
        assert len(report.attached) == 2 and report.warmup_requests == WARMUP


def test_the_server_counted_the_same_requests(experiment: dict[str, Measured]) -> None:
    # mod_status counts each request once it is logged: the warm-up, the traced requests and the
    # status request read before them.
    for config, measured in experiment.items():
        assert measured.served == WARMUP + REQUESTS + 1, config


@pytest.mark.parametrize("config", ["htaccess", "alias", "trans"])
def test_counts_are_whole_per_request_and_repeat(experiment: dict[str, Measured], config: str) -> None:
    first, second = experiment[config].runs
    for report in (first, second):
        for entry in report.calls:
            assert entry.calls % REQUESTS == 0, (config, entry)
            assert entry.per_request == entry.calls // REQUESTS
        for failure in report.failures:
            assert failure.calls % REQUESTS == 0, (config, failure)
    assert [(c.name, c.calls, c.errors) for c in first.calls] == [(c.name, c.calls, c.errors) for c in second.calls]
    assert failures(first) == failures(second)


# -- the experiment --------------------------------------------------------------------------


def test_htaccess_walk_looks_for_htaccess_in_every_directory(experiment: dict[str, Measured]) -> None:
    measured = experiment["htaccess"]
    report = measured.runs[0]
    docroot = measured.server.workdir / "htdocs"
    directories = [*reversed(docroot.parents), docroot]  # /, /tmp, /tmp/pounder-apache-..., htdocs
    expected = {("openat", "ENOENT", os.path.join(str(d), ".htaccess")): 1.0 for d in directories}
    expected[("newfstatat", "ENOENT", f"{docroot}{URI}")] = 1.0  # the whole path first
    expected[("newfstatat", "ENOENT", f"{docroot}/news")] = 1.0  # the walk stops at the first missing one
    got = {key: value for key, value in failures(report).items() if key[2] is not None}
    assert got == expected, render_syscalls(report)
    # and lstat of each existing component below / on the way (/tmp, the workdir, htdocs)
    assert report.per_request("newfstatat") == 2 + len(directories) - 1
    assert report.per_request("openat") == len(directories)


def test_alias_makes_fewer_stat_calls_and_no_htaccess_lookups(experiment: dict[str, Measured]) -> None:
    htaccess, alias = experiment["htaccess"].runs[0], experiment["alias"].runs[0]
    assert stat_and_open(htaccess) > stat_and_open(alias)
    assert looked_up(alias) == []
    assert stats(alias) == 1.0  # the aliased file itself, which exists: no walk
    assert alias.per_request("openat") == 0.0


def test_trans_handler_makes_no_path_lookup_at_all(experiment: dict[str, Measured]) -> None:
    alias, trans = experiment["alias"].runs[0], experiment["trans"].runs[0]
    assert looked_up(trans) == []
    assert [f for f in trans.failures if f.path is not None] == []
    assert stats(trans) == 0.0 and stat_and_open(trans) == 0.0
    assert stat_and_open(alias) > stat_and_open(trans)
    # Everything else is the same request: the difference is exactly the stat of the alias.
    assert trans.total_per_request == alias.total_per_request - 1


def test_report_json_and_text(experiment: dict[str, Measured]) -> None:
    report = experiment["htaccess"].runs[0]
    validate(report.to_dict(), "syscalls")
    text = render_syscalls(report)
    assert f"{REQUESTS:,} requests GET" in text
    assert re.search(r"^\s+1\.00\s+300  ENOENT\s+openat\s+/\.htaccess$", text, re.MULTILINE), text


# -- an independent count: strace -c on the same traffic --------------------------------------


def strace_summary(path: Path) -> dict[str, tuple[int, int]]:
    """``strace -c`` table: {syscall: (calls, errors)}."""
    table: dict[str, tuple[int, int]] = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) not in (5, 6) or not re.fullmatch(r"[\d.]+", fields[0]) or fields[-1] == "total":
            continue
        errors = int(fields[4]) if len(fields) == 6 else 0
        table[fields[-1]] = (int(fields[3]), errors)
    return table


def wait_traced(pids: list[int], tracer: int) -> None:
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    while True:
        status = {pid: Path(f"/proc/{pid}/status").read_text() for pid in pids}
        if all(re.search(rf"^TracerPid:\s*{tracer}$", text, re.MULTILINE) for text in status.values()):
            return
        assert time.monotonic() < deadline, f"strace -c did not attach to {pids}"
        time.sleep(0.02)


def test_strace_c_counts_the_same_calls_per_request(experiment: dict[str, Measured], tmp_path: Path) -> None:
    measured = experiment["htaccess"]
    report = measured.runs[0]
    children = measured.server.children()
    assert sorted(children) == sorted(report.attached)  # the same two children, still there
    summary = tmp_path / "summary.txt"
    argv = ["strace", "-c", "-f", "-o", str(summary)] + [arg for pid in children for arg in ("-p", str(pid))]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    try:
        wait_traced(children, proc.pid)
        result = pounder.bench(measured.server.url + URI, requests=REQUESTS, connections=CONNECTIONS,
                               keepalive=False, timeout=10)  # fmt: skip
        time.sleep(0.5)  # the children finish closing the last connections
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
    assert result.requests.complete == REQUESTS and result.requests.failed == 0
    table = strace_summary(summary)
    assert table, summary.read_text()
    ours = {entry.name: (entry.calls, entry.errors) for entry in report.calls}
    assert table == ours, (table, ours)
    per_request = {name: calls / REQUESTS for name, (calls, _errors) in table.items()}
    assert per_request == {entry.name: entry.per_request for entry in report.calls}


# -- the command line ------------------------------------------------------------------------


def test_cli_prints_the_tables_and_writes_the_json(experiment: dict[str, Measured], tmp_path: Path) -> None:
    measured = experiment["htaccess"]
    out = tmp_path / "syscalls.json"
    proc = run_pounder("syscalls", measured.server.url + URI, "--server-pidfile", measured.server.pidfile, "-n", "100",
                       "-c", "2", "--warmup", "10", "--json", out, "--top", "3", stdin=subprocess.DEVNULL, timeout=120,
                       env=with_pythonpath())
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and "Traceback" not in proc.stdout
    document = json.loads(out.read_text())
    validate(document, "syscalls")
    assert document["load"]["requests"] == 100 and document["load"]["warmup_requests"] == 10
    # the same figures as the library's runs of 300 requests
    assert document["total"]["per_request"] == measured.runs[0].total_per_request
    assert {f["path"]: f["per_request"] for f in document["failures"]} == {
        f.path: f.per_request for f in measured.runs[0].failures}  # fmt: skip
    assert "         5.00          500        200  newfstatat" in proc.stdout
    assert "... 8 more system calls" in proc.stdout and "... 4 more" in proc.stdout


def test_keepalive_connections_are_counted_once(experiment: dict[str, Measured]) -> None:
    measured = experiment["trans"]
    report = trace_syscalls(measured.server.url + URI, server_pidfile=measured.server.pidfile, requests=REQUESTS,
                            connections=CONNECTIONS, keepalive=True, warmup=WARMUP, timeout=10)  # fmt: skip
    assert report.keepalive and report.requests == REQUESTS and report.messages == ()
    # MaxKeepAliveRequests 100: a connection every 100 requests per connection, not one per request
    assert report.connections_accepted == report.connections_opened < REQUESTS
    assert report.per_request("accept4") == report.connections_accepted / REQUESTS
    assert report.per_request("writev") == 1.0 and report.per_request("getpid") == 1.0


def test_other_traffic_during_the_trace_is_refused(experiment: dict[str, Measured]) -> None:
    # One request of our own, not pounder's, while strace is attached (from the progress
    # callback): the children accept one connection more than pounder opened.
    measured = experiment["trans"]
    sent: list[int] = []

    def intrude(progress: pounder.Progress) -> None:
        if not sent:
            with urllib.request.urlopen(measured.server.url + URI, timeout=10) as response:
                sent.append(response.status)

    with pytest.raises(pounder.PounderError, match="other traffic reached the server during the trace: its "
                       f"processes accepted {REQUESTS + 1} connections, pounder opened {REQUESTS}"):  # fmt: skip
        trace_syscalls(measured.server.url + URI, server_pidfile=measured.server.pidfile, requests=REQUESTS,
                       connections=CONNECTIONS, warmup=0, timeout=10, on_progress=intrude)  # fmt: skip
    assert sent == [200]
