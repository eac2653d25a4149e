"""Shared pytest fixtures: misbehaving / known-latency HTTP test servers (tests/support/testserver.py)
run as subprocesses.

    def test_something(testserver):
        srv = testserver(mode="ok", delay_ms=20, body_size=100)
        ...  # hit srv.url (or srv.unix)
        assert srv.count() == 25

And real pre-forking servers (pounder.servers), each in its own directory on a free loopback port,
stopped at teardown: ``apache_server`` (Apache prefork + mod_perl with the handlers of
tests/apps/perl), ``gunicorn_server`` and ``uwsgi_server`` (tests/apps/wsgi_app.py),
``starman_server`` (tests/apps/app.psgi), ``puma_server`` and ``unicorn_server``
(tests/apps/rack_app.ru), each a ``ManagedServerPool`` (tests/support/srvutil.py); and
``prefork_server``, parametrised over the servers of a fixed pool of workers, for the contract
every one of them keeps (tests/servers/test_contract.py); see their docstrings.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pounder.servers import (
    ApacheServer,
    GunicornServer,
    ManagedServer,
    PumaServer,
    StarmanServer,
    UnicornServer,
    UwsgiServer,
    apache_missing,
    gunicorn_missing,
    puma_missing,
    starman_missing,
    unicorn_missing,
    uwsgi_missing,
    uwsgi_target_is_ini,
)
from support import forkrun
from support.leftovers import kill_leftovers
from support.signals import set_test_dispositions
from support.srvutil import ManagedServerPool


def pytest_configure(config: pytest.Config) -> None:
    """Whoever started the suite (a background job ignores SIGINT, nohup SIGHUP), its tests and the
    processes they start take signals as from an interactive shell (tests/support/signals.py)."""
    set_test_dispositions()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The fork server of the bad-input tests (tests/support/forkrun.py), if one was started here."""
    forkrun.stop_server()


SERVER_SCRIPT = Path(__file__).resolve().parent / "support" / "testserver.py"
READY_TIMEOUT_S = 10.0
UNIX_PATH_MAX = 100  # sun_path is 108 bytes including the NUL; keep a margin


class ServerHandle:
    """A running testserver subprocess."""

    def __init__(self, proc: subprocess.Popen[bytes], mode: str, port: int | None,
                 unix: str | None, count_file: Path, stderr_file: Path,
                 cleanup_dir: str | None) -> None:
        self.proc = proc
        self.mode = mode
        self.port = port        # None for a Unix socket server
        self.unix = unix        # socket path for a Unix socket server, else None
        self.count_file = count_file
        self.stderr_file = stderr_file
        self._cleanup_dir = cleanup_dir

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``http://localhost`` for a Unix socket server)."""
        return f"http://127.0.0.1:{self.port}" if self.port is not None else "http://localhost"

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def _read_stats(self) -> dict[str, int]:
        data = json.loads(self.count_file.read_text())  # replaced atomically: always whole
        return {"requests": int(data["requests"]), "connections": int(data["connections"])}

    def stats(self, settle_s: float = 0.2, timeout_s: float = 5.0) -> dict[str, int]:
        """``{"requests": n, "connections": n}`` once unchanged for ``settle_s`` (at most
        ``timeout_s``; then the latest value). Immediate when the server has exited."""
        current = self._read_stats()
        if not self.running:
            return current
        deadline = time.monotonic() + timeout_s
        stable_since = time.monotonic()
        while time.monotonic() - stable_since < settle_s and time.monotonic() < deadline:
            time.sleep(0.02)
            latest = self._read_stats()
            if latest != current:
                current, stable_since = latest, time.monotonic()
        return current

    def by_request(self, settle_s: float = 0.2, timeout_s: float = 5.0) -> dict[str, int]:
        """Complete requests received so far by ``"METHOD /target"`` (once the count settles, see
        ``stats``)."""
        self.stats(settle_s, timeout_s)
        return {str(key): int(value) for key, value in json.loads(self.count_file.read_text())["by_request"].items()}

    def count(self, settle_s: float = 0.2, timeout_s: float = 5.0) -> int:
        """Complete requests received so far (see ``stats``)."""
        return self.stats(settle_s, timeout_s)["requests"]

    def connections(self, settle_s: float = 0.2, timeout_s: float = 5.0) -> int:
        """Connections accepted so far (see ``stats``)."""
        return self.stats(settle_s, timeout_s)["connections"]

    def stderr(self) -> str:
        """Everything the server wrote to stderr so far (tracebacks of server bugs land here)."""
        try:
            return self.stderr_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, timeout_s: float = 5.0) -> int | None:
        """SIGTERM, wait up to ``timeout_s``, then SIGKILL. Idempotent; returns the exit code.
        The count file stays readable afterwards (final counts)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._cleanup_dir is not None:
            shutil.rmtree(self._cleanup_dir, ignore_errors=True)
            self._cleanup_dir = None
        return self.proc.returncode

    def __repr__(self) -> str:
        where = self.unix if self.unix is not None else self.port
        return f"<testserver {self.mode} at {where} pid={self.proc.pid}>"


def _read_ready_line(proc: subprocess.Popen[bytes], timeout_s: float) -> str:
    """The ``READY ...`` line, or raise with a reason (stdout is unbuffered: bufsize=0)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout_s
    buf = b""
    while b"\n" not in buf:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no READY line within {timeout_s} s (got {buf!r})")
        readable, _, _ = select.select([fd], [], [], remaining)
        if readable:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"server exited before READY (got {buf!r})")
            buf += chunk
    line = buf.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if not line.startswith("READY "):
        raise RuntimeError(f"unexpected first line {line!r}")
    return line[len("READY "):]


def start_server(workdir: Path, mode: str = "ok", *, unix: bool = False,
                 delay_ms: float | None = None, body_size: int | None = None,
                 freeze_ms: float | None = None, freeze_every_ms: float | None = None,
                 piece_delay_ms: float | None = None, max_lifetime_s: float | None = None,
                 extra_args: Sequence[str] = ()) -> ServerHandle:
    """Start a testserver with its files in ``workdir`` (created) and wait for READY.
    Options left None use the server's defaults. Raises RuntimeError (with the server's stderr)
    if it does not come up within READY_TIMEOUT_S."""
    workdir.mkdir(parents=True, exist_ok=True)
    count_file = workdir / "counts.json"
    stderr_file = workdir / "stderr.txt"
    cleanup_dir: str | None = None
    args = [sys.executable, str(SERVER_SCRIPT), "--mode", mode, "--count-file", str(count_file)]
    sock_path: str | None = None
    if unix:
        sock_path = str(workdir / "srv.sock")
        if len(os.fsencode(sock_path)) >= UNIX_PATH_MAX:
            cleanup_dir = tempfile.mkdtemp(prefix="pounder-", dir="/tmp")
            sock_path = os.path.join(cleanup_dir, "srv.sock")
        args += ["--unix", sock_path]
    else:
        args += ["--port", "0"]
    options = {"--delay-ms": delay_ms, "--body-size": body_size, "--freeze-ms": freeze_ms,
               "--freeze-every-ms": freeze_every_ms, "--piece-delay-ms": piece_delay_ms,
               "--max-lifetime": max_lifetime_s}
    for flag, value in options.items():
        if value is not None:
            args += [flag, str(value)]
    args += list(extra_args)

    with open(stderr_file, "wb") as err:  # a file, not a pipe: a chatty server can't block
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err, bufsize=0)
    try:
        where = _read_ready_line(proc, READY_TIMEOUT_S)
    except Exception as e:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
        if cleanup_dir is not None:
            shutil.rmtree(cleanup_dir, ignore_errors=True)
        stderr = stderr_file.read_text(errors="replace")
        raise RuntimeError(f"testserver failed to start ({' '.join(args[1:])}): {e}; "
                           f"exit code {proc.returncode}; stderr:\n{stderr}") from None
    port = None if unix else int(where)
    return ServerHandle(proc, mode, port, sock_path, count_file, stderr_file, cleanup_dir)


class ServerPool:
    """What the ``testserver`` fixture yields: call it to start a server; it remembers every
    server it started so the fixture can stop them all."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.servers: list[ServerHandle] = []

    def __call__(self, mode: str = "ok", *, unix: bool = False,
                 delay_ms: float | None = None, body_size: int | None = None,
                 freeze_ms: float | None = None, freeze_every_ms: float | None = None,
                 piece_delay_ms: float | None = None, max_lifetime_s: float | None = None,
                 extra_args: Sequence[str] = ()) -> ServerHandle:
        srv = start_server(
            self.workdir / f"testserver-{len(self.servers)}", mode, unix=unix,
            delay_ms=delay_ms, body_size=body_size, freeze_ms=freeze_ms,
            freeze_every_ms=freeze_every_ms, piece_delay_ms=piece_delay_ms,
            max_lifetime_s=max_lifetime_s, extra_args=extra_args)
        self.servers.append(srv)
        return srv

    def stop_all(self) -> None:
        for srv in self.servers:  # signal them all first so they shut down in parallel
            if srv.running:
                srv.proc.send_signal(signal.SIGTERM)
        for srv in self.servers:
            srv.stop()


@pytest.fixture
def testserver(tmp_path: Path) -> Iterator[ServerPool]:
    """Factory: ``srv = testserver(mode="ok", delay_ms=20, body_size=100)``. Any number of
    servers per test; all are stopped at teardown (also when the test fails)."""
    pool = ServerPool(tmp_path)
    try:
        yield pool
    finally:
        pool.stop_all()


def _uring_refused() -> str | None:
    """Why this kernel refuses the engine's io_uring path (None: it takes it)."""
    from pounder import _engine

    target = {"tcp": "127.0.0.1:9", "unix": None, "request": b"GET / HTTP/1.1\r\n\r\n", "head": False, "weight": 1}
    try:
        _engine.choose_io({"targets": [target], "connections": 1, "threads": 1, "requests": 1, "io": "uring"})
    except ValueError as error:
        return str(error)
    return None


@pytest.fixture(params=["uring", "epoll"])
def io_path(request: pytest.FixtureRequest) -> str:
    """The engine's I/O paths, one test each: ``run(url, io=io_path, ...)`` (``--io``). The
    uring case is skipped, saying why, on a kernel that refuses the ring."""
    if request.param == "uring" and (why := _uring_refused()) is not None:
        pytest.skip(why)
    path: str = request.param
    return path


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory under /tmp that servers' children (Apache's run as www-data when we are root)
    can read, unlike pytest's tmp_path; every process that names it is killed at teardown, also
    on failure, and it is removed."""
    path = Path(tempfile.mkdtemp(prefix="pounder-test-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        kill_leftovers(str(path))
        shutil.rmtree(path, ignore_errors=True)


# --- real pre-forking servers (pounder.servers) -----------------------------------------------------
#
#     def test_something(apache_server):
#         srv = apache_server(preload=True, start_servers=3)   # started; stopped at teardown
#         urllib.request.urlopen(srv.url + "/hello")

APPS_DIR = Path(__file__).resolve().parent / "apps"
PERL_APPS_DIR = APPS_DIR / "perl"
PERL_HANDLERS = {
    "/hello": "PounderTest::Hello",
    "/cpu": "PounderTest::Cpu",
    "/leak": "PounderTest::Leak",
    "/big": "PounderTest::Big",
    "/data": "PounderTest::Data",
    "/grow": "PounderTest::Grow",
}
"""The mod_perl test handlers of tests/apps/perl/lib, by location."""
RACK_START_S = 60.0  # Puma and Unicorn on a shared 2-core machine


def _make_apache(workdir: Path | None = None, preload: bool = False, **kwargs: Any) -> ApacheServer:
    """ApacheServer with the PounderTest handlers and tests/apps/perl/startup.pl (or
    startup_preload.pl: ~40 MB built in the parent), in its own temporary directory (its
    children run as www-data when we are root, and pytest's tmp_path is not reachable for them)."""
    kwargs.setdefault("startup_pl", (PERL_APPS_DIR / ("startup_preload.pl" if preload else "startup.pl")).read_text())
    kwargs.setdefault("perl_lib", PERL_APPS_DIR / "lib")
    kwargs.setdefault("perl_handlers", PERL_HANDLERS)
    return ApacheServer(workdir, **kwargs)


def _make_gunicorn(workdir: Path | None = None, app: str = "wsgi_app:app", **kwargs: Any) -> GunicornServer:
    kwargs.setdefault("pythonpath", str(APPS_DIR))
    return GunicornServer(workdir, app, **kwargs)


def _make_starman(workdir: Path | None = None, psgi: str | Path = APPS_DIR / "app.psgi",
                  **kwargs: Any) -> StarmanServer:
    return StarmanServer(workdir, psgi, **kwargs)


def _make_puma(workdir: Path, rackup: Path = APPS_DIR / "rack_app.ru", **kwargs: Any) -> PumaServer:
    return PumaServer(workdir, rackup, **kwargs)


def _make_unicorn(workdir: Path, rackup: Path = APPS_DIR / "rack_app.ru", **kwargs: Any) -> UnicornServer:
    return UnicornServer(workdir, rackup, **kwargs)


def _make_uwsgi(workdir: Path, target: str = "wsgi_app:app", **kwargs: Any) -> UwsgiServer:
    if not uwsgi_target_is_ini(target):
        kwargs.setdefault("pythonpath", str(APPS_DIR))
    return UwsgiServer(workdir, target, **kwargs)


def _server_pool(missing: str | None, make: Callable[..., ManagedServer],
                 **options: Any) -> Iterator[ManagedServerPool]:
    """For a fixture: a :class:`ManagedServerPool` of ``make`` (skipped with ``missing``), all of it
    stopped at teardown."""
    if missing:
        pytest.skip(missing)
    pool = ManagedServerPool(make, **options)
    try:
        yield pool
    finally:
        pool.stop_all()


@pytest.fixture
def apache_server() -> Iterator[ManagedServerPool]:
    """Factory: ``apache_server(preload=False, *, start=True, timeout_s=30, **ApacheServer kwargs)``
    returns an :class:`ApacheServer` with the PounderTest mod_perl handlers (``PERL_HANDLERS``);
    ``preload=True`` uses startup_preload.pl. Skips if Apache or mod_perl is missing."""
    yield from _server_pool(apache_missing(perl=True), _make_apache)


@pytest.fixture
def gunicorn_server(tmp_path: Path) -> Iterator[ManagedServerPool]:
    """Factory: ``gunicorn_server(app="wsgi_app:app", *, start=True, timeout_s=30, workers=2,
    preload=False, env=None, ...)`` returns a :class:`GunicornServer` serving tests/apps (workdir
    under tmp_path). Skips if gunicorn is missing."""
    yield from _server_pool(gunicorn_missing(), _make_gunicorn, folder=tmp_path, name="gunicorn")


@pytest.fixture
def starman_server(tmp_path: Path) -> Iterator[ManagedServerPool]:
    """Factory: ``starman_server(psgi=tests/apps/app.psgi, *, start=True, timeout_s=30, workers=2,
    preload_app=False, env=None, ...)`` returns a :class:`StarmanServer` (workdir under tmp_path).
    Skips if Starman is missing."""
    yield from _server_pool(starman_missing(), _make_starman, folder=tmp_path, name="starman")


@pytest.fixture
def puma_server(tmp_path: Path) -> Iterator[ManagedServerPool]:
    """Factory: ``puma_server(rackup=tests/apps/rack_app.ru, *, start=True, timeout_s=60, **PumaServer
    kwargs)`` returns a :class:`PumaServer` (workdir under tmp_path); at teardown nothing naming
    tmp_path may be left running. Skips if Puma is missing."""
    yield from _server_pool(puma_missing(), _make_puma, folder=tmp_path, name="puma", timeout_s=RACK_START_S,
                            check_left=True)


@pytest.fixture
def unicorn_server(tmp_path: Path) -> Iterator[ManagedServerPool]:
    """Factory: ``unicorn_server(rackup=tests/apps/rack_app.ru, *, start=True, timeout_s=60,
    **UnicornServer kwargs)`` returns a :class:`UnicornServer`, as ``puma_server``."""
    yield from _server_pool(unicorn_missing(), _make_unicorn, folder=tmp_path, name="unicorn",
                            timeout_s=RACK_START_S, check_left=True)


@pytest.fixture
def uwsgi_server(tmp_path: Path) -> Iterator[ManagedServerPool]:
    """Factory: ``uwsgi_server(target="wsgi_app:app", *, start=True, timeout_s=30, **UwsgiServer
    kwargs)`` (pythonpath tests/apps for a module), workdir under tmp_path; at teardown nothing
    naming tmp_path may be left running. Skips if uWSGI is missing."""
    yield from _server_pool(uwsgi_missing(), _make_uwsgi, folder=tmp_path, name="uwsgi", check_left=True)


PREFORK_KINDS = ("gunicorn", "starman", "puma", "unicorn", "uwsgi")
"""The servers whose parent forks a fixed pool of workers from one app: ``prefork_server``'s."""


class Prefork:
    """``prefork_server``'s factory: ``make(app=None, *, workers=2, preload=None, start=True, **kwargs)``
    with the same words for every server: ``workers`` its number of workers (uWSGI's processes),
    ``preload`` each one's own option (gunicorn's preload, Starman's, Puma's and Unicorn's
    preload_app, uWSGI's lazy-apps off), the server's default unless given. ``app`` is the server's
    own kind of target (a module:app, a .psgi, a .ru), the test app of tests/apps unless given."""

    def __init__(self, kind: str, pool: ManagedServerPool) -> None:
        self.kind, self.pool = kind, pool

    def __call__(self, app: str | Path | None = None, *, workers: int = 2, preload: bool | None = None,
                 **kwargs: Any) -> Any:
        args = () if app is None else (app,)
        if self.kind == "uwsgi":
            if preload is not None:
                kwargs["lazy_apps"] = not preload
            return self.pool(*args, processes=workers, **kwargs)
        if preload is not None:
            kwargs["preload" if self.kind == "gunicorn" else "preload_app"] = preload
        return self.pool(*args, workers=workers, **kwargs)


@pytest.fixture(params=PREFORK_KINDS)
def prefork_server(request: pytest.FixtureRequest) -> Prefork:
    """The one parametrised server fixture: each of ``PREFORK_KINDS`` in turn, as its own factory
    fixture makes it (``KIND_server``), through :class:`Prefork`. A test of some of them only says
    which: ``@pytest.mark.parametrize("prefork_server", ["gunicorn", "starman"], indirect=True)``."""
    kind: str = request.param
    return Prefork(kind, request.getfixturevalue(f"{kind}_server"))
