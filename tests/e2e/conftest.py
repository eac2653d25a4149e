"""Helpers for the end-to-end tests: the real engine (``pounder.bench`` / ``python -m pounder bench``)
against the real test servers of ``tests/support/testserver.py`` (fixture ``testserver`` from
``tests/conftest.py``), loopback only, every run a few seconds at most.

    def test_something(testserver, run, assert_accounted):
        srv = testserver(mode="ok")
        result = run(srv.url + "/", connections=4, requests=100)
        assert_accounted(srv, result)   # what the server received == what pounder attempted
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import pounder
from pounder import BenchResult
from support.cliutil import run_pounder, with_pythonpath

TESTS_DIR = Path(__file__).resolve().parents[1]
RUN_LIMIT_S = 30.0
"""A run that has not returned after this long is reported as hung (every run here is planned to
last a few seconds; the limit only keeps a hung engine from hanging the suite)."""
DEFAULT_TIMEOUT_S = 10.0
"""Per-request timeout used unless a test sets one, so a misbehaving server cannot hold a run for
the engine's default 30 s."""


class Runner:
    """``run(url, **options)``: :func:`pounder.bench` with the given options, quiet (no progress
    callback), in a watchdog thread. Returns the :class:`BenchResult`; ``run.wall_s`` is the wall
    time of the last call."""

    def __init__(self) -> None:
        self.wall_s = 0.0

    def __call__(self, url: str | None = None, *, limit_s: float = RUN_LIMIT_S, **options: Any) -> BenchResult:
        options.setdefault("timeout", DEFAULT_TIMEOUT_S)
        outcome: dict[str, Any] = {}

        def target() -> None:
            try:
                outcome["result"] = pounder.bench(url, **options)
            except BaseException as error:  # re-raised in the test's thread
                outcome["error"] = error

        thread = threading.Thread(target=target, name="pounder-bench", daemon=True)
        started = time.monotonic()
        thread.start()
        thread.join(limit_s)
        self.wall_s = time.monotonic() - started
        if thread.is_alive():
            pytest.fail(f"pounder.bench({url!r}, **{options!r}) still running after {limit_s} s: the run does not end")
        if "error" in outcome:
            raise outcome["error"]
        result: BenchResult = outcome["result"]
        if options.get("io") in ("uring", "epoll"):  # the path asked for is the one taken (and stated)
            assert result.io is not None and result.io.path == options["io"], result.io
        return result


@pytest.fixture
def run() -> Runner:
    return Runner()


def attempted(result: BenchResult) -> int:
    """Requests pounder attempted, warmup included (each one reached the server or failed)."""
    return result.requests.complete + result.requests.failed + result.warmup.complete + result.warmup.failed


def check_accounted(srv: Any, result: BenchResult) -> dict[str, int]:
    """The server received exactly the requests pounder attempted; returns the server's stats."""
    stats: dict[str, int] = srv.stats()
    assert stats["requests"] == attempted(result), (
        f"server received {stats['requests']} requests, pounder attempted {attempted(result)} "
        f"(requests {result.requests}, warmup {result.warmup}, errors {result.errors.nonzero()})"
    )
    return stats


@pytest.fixture(scope="session")
def assert_accounted() -> Callable[[Any, BenchResult], dict[str, int]]:
    """``assert_accounted(srv, result)``: server's request count == complete + failed (+ warmup)."""
    return check_accounted


@pytest.fixture
def free_port() -> int:
    """A loopback TCP port with nothing listening on it (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def run_cli(*args: str, timeout_s: float = 60.0, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m pounder bench ARGS`` in a subprocess: stdin closed, stdout and stderr captured
    (so neither is a terminal)."""
    env = with_pythonpath()
    for name in ("FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE"):
        env.pop(name, None)
    return run_pounder("bench", *args, stdin=subprocess.DEVNULL, timeout=timeout_s, env=env, cwd=cwd)


@pytest.fixture(scope="session")
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``cli("http://...", "-n", "10")`` runs ``python -m pounder bench`` (see :func:`run_cli`)."""
    return run_cli


def assert_clean_exit(proc: subprocess.CompletedProcess[str]) -> None:
    """Exit status 0, a report on stdout, nothing on stderr (not a terminal: no progress), no traceback."""
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert proc.stderr == "", f"stderr is not empty:\n{proc.stderr}"
    assert "Complete requests:" in proc.stdout, proc.stdout


@pytest.fixture(scope="session")
def assert_cli_ok() -> Callable[[subprocess.CompletedProcess[str]], None]:
    return assert_clean_exit


def _load_root_conftest() -> Any:
    """``tests/conftest.py`` as a module of its own name (``import conftest`` is ambiguous between
    the two conftest files), for servers that outlive one test (module-scoped fixtures)."""
    spec = importlib.util.spec_from_file_location("_pounder_tests_root_conftest", TESTS_DIR / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def module_testserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Like ``testserver`` but for the whole module: servers shared by the tests of one file."""
    pool = _load_root_conftest().ServerPool(tmp_path_factory.mktemp("module-servers"))
    try:
        yield pool
    finally:
        pool.stop_all()


# Which end-to-end files may share the machine (issue 39, CI time): these check what was sent,
# counted, written or refused against a live server, with bounds of seconds, or what a short tuning
# run printed and wrote (its server's syntax, its files, the memory it read: none of its timing;
# a busy machine makes it measure a trial once more, not decide otherwise), and run on the
# workers of the rest of the suite (`pytest -n 3 --dist worksteal -m "not alone" tests`). Every
# other file here is marked ``alone`` and runs one test at a time, alone on the machine (`pytest -m alone tests/e2e`):
# it measures time, rates or CPU, holds a fixed address (the resolver of test_name_resolution.py)
# or looks at every Ray process on the machine (test_bench_ray.py: --ray local).
# A Ray cluster of its own that looks only at its own processes may share it
# (test_bench_ray_outputs.py). A timed test in a listed file says so itself
# (``@pytest.mark.alone``). A new file is ``alone`` until listed here.
SHARES_THE_MACHINE = frozenset({
    "test_bench_access_log.py",
    "test_bench_https.py",
    "test_bench_misbehaviour.py",
    "test_bench_outputs.py",
    "test_bench_ray_nodes.py",
    "test_bench_ray_outputs.py",
    "test_bench_requests.py",
    "test_bench_scenario.py",
    "test_bench_shares.py",
    "test_compare.py",
    "test_descriptor_limit.py",
    "test_https_reasons.py",
    "test_mem_report.py",
    "test_run_experiment.py",
    "test_server_measurements.py",
    "test_signals.py",
    "test_stream_outputs.py",
    "test_syscalls_server_check.py",
    "test_tune.py",
    "test_tune_cgroup.py",
    "test_tune_debian.py",
    "test_tune_interrupted_servers.py",
    "test_tune_outputs.py",
    "test_tune_phpfpm.py",
    "test_tune_puma.py",
    "test_tune_threads.py",
    "test_tune_unicorn.py",
    "test_tune_uwsgi.py",
    "test_url_file_methods.py",
    "test_wheel.py",
})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "alone: an end-to-end test that measures time, rates or CPU: run with "
                                       "nothing else on the machine (tests/e2e/conftest.py)")


@pytest.hookimpl(tryfirst=True)  # before -m selects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        path = Path(str(item.path)).resolve()
        if path.parent == here and path.name not in SHARES_THE_MACHINE:
            item.add_marker(pytest.mark.alone)
