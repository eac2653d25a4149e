"""Threads as a pool parameter (``PoolParams.threads``, issue 41): stored only when given, each
threaded server's configuration in its own syntax (Puma ``threads N, N``, gunicorn ``worker_class =
"gthread"`` + ``threads = N``, uWSGI ``threads = N`` + ``enable-threads = true``) and nothing else
changed without it; the servers without threads refuse more than one in one line.

Live, one short test per threaded server: one worker with 4 threads serves 4 requests at once
(the test apps' ``/hold`` counts the requests in flight in the worker's own process: counted, not
timed), with 1 thread at most 1; and the configuration printed for 4 threads, started as a user
would, does the same."""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from pounder import UsageError
from pounder.pool import (
    REGISTRY,
    Adapter,
    GunicornAdapter,
    PoolParams,
    PumaAdapter,
    UwsgiAdapter,
    make_adapter,
)
from pounder.servers import free_port, gunicorn_missing, puma_missing, uwsgi_missing
from pounder.servers._gunicorn import _has_control_socket
from pounder.servers._uwsgi import find_uwsgi
from support.leftovers import processes_mentioning
from support.printed import serving
from support.schemas import schema
from support.threads import in_flight

APPS = Path(__file__).resolve().parents[1] / "apps"
RACK_APP = APPS / "rack_app.ru"
START_S = 60.0  # a shared 2-core machine

THREADED: dict[str, tuple[Callable[[], str | None], Callable[[], Adapter]]] = {
    "gunicorn": (gunicorn_missing, lambda: GunicornAdapter("wsgi_app:app", pythonpath=str(APPS))),
    "puma": (puma_missing, lambda: PumaAdapter(RACK_APP)),
    "uwsgi": (uwsgi_missing, lambda: UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS))),
}
"""The servers with threads: why one cannot run here, and its adapter serving the test app."""


def _unthreaded(kind: str, tmp_path: Path) -> Adapter:
    targets = {"apache": None, "starman": APPS / "app.psgi", "unicorn": RACK_APP, "command": "server {port}"}
    if kind == "php-fpm":
        conf = tmp_path / "www.conf"
        conf.write_text("[www]\npm = static\npm.max_children = 2\n")
        return make_adapter(kind, conf, root=tmp_path, check=False)
    extra = {"perl_handlers": {"/": "My::App"}} if kind == "apache" else {}
    return make_adapter(kind, targets[kind], check=False, **extra)


# ---------------------------------------------------------------------------------------------
# Without a server


def test_pool_params_store_threads_only_when_given() -> None:
    plain = PoolParams(3, max_requests=500).to_dict()
    assert plain == {"max_clients": 3, "max_requests": 500, "start_servers": None, "min_spare": None,
                     "max_spare": None, "preload": None}  # as every stored run before threads
    assert PoolParams.from_dict(plain) == PoolParams(3, max_requests=500) and PoolParams(3).threads is None
    threaded = PoolParams(3, max_requests=500, threads=4)
    assert threaded.to_dict() == {**plain, "threads": 4}
    assert PoolParams.from_dict(json.loads(json.dumps(threaded.to_dict()))) == threaded


def test_the_stored_params_follow_the_schema_with_and_without_threads() -> None:
    contents = schema("tune")
    params = jsonschema.validators.validator_for(contents)({**contents["$defs"]["params"], "$defs": contents["$defs"]})
    params.validate(PoolParams(3).to_dict())
    params.validate(PoolParams(3, threads=4).to_dict())
    with pytest.raises(jsonschema.ValidationError):
        params.validate({**PoolParams(3).to_dict(), "threads": 0})


def test_the_threaded_servers_are_declared_once() -> None:
    assert sorted(adapter.kind for adapter in REGISTRY if adapter.threaded) == sorted(THREADED)


def test_puma_renders_threads_n_n(tmp_path: Path) -> None:
    adapter = PumaAdapter(RACK_APP)
    today = adapter.render(PoolParams(2))
    assert "threads 1, 1" in today.splitlines()
    assert adapter.render(PoolParams(2, threads=None)) == today
    four = adapter.render(PoolParams(2, threads=4))
    assert four == today.replace("threads 1, 1", "threads 4, 4").replace(
        "one request per worker at a time", "up to 4 requests per worker at a time")
    # params.threads overrides the adapter's --threads for that start; None keeps it
    own = PumaAdapter(RACK_APP, threads="2,8")
    assert "threads 2, 8" in own.render(PoolParams(2)).splitlines()
    assert "threads 4, 4" in own.render(PoolParams(2, threads=4)).splitlines()
    assert own.server(PoolParams(2, threads=4), tmp_path).settings.threads == (4, 4)  # type: ignore[attr-defined]
    assert own.server(PoolParams(2), tmp_path).settings.threads == (2, 8)  # type: ignore[attr-defined]


def test_gunicorn_starts_gthread_workers_for_threads(tmp_path: Path) -> None:
    adapter = GunicornAdapter("wsgi_app:app", pythonpath=str(APPS))
    argv = adapter.server(PoolParams(2, threads=4), tmp_path)._prepare(1)  # type: ignore[attr-defined]
    pairs = dict(zip(argv, argv[1:], strict=False))
    assert pairs["--worker-class"] == "gthread" and pairs["--threads"] == "4"
    today = adapter.server(PoolParams(2), tmp_path)._prepare(1)  # type: ignore[attr-defined]
    assert dict(zip(today, today[1:], strict=False))["--worker-class"] == "sync" and "--threads" not in today


@pytest.mark.parametrize(("kind", "after", "lines", "flags"), [
    ("gunicorn", "# restarts spread over 900..1000\n", 'worker_class = "gthread"\nthreads = 4\n'
     "worker_connections = 4  # gunicorn's 1000 lets one worker take the clients while the others idle\n",
     "--worker-class gthread --threads 4 --worker-connections 4 "),
    ("uwsgi", "lazy-apps = false\n", "threads = 4\nenable-threads = true\n", "--threads 4 --enable-threads "),
])
def test_python_servers_render_threads(kind: str, after: str, lines: str, flags: str) -> None:
    """Their lines after ``after`` and their flags after the request limit's; nothing without threads."""
    adapter = THREADED[kind][1]()
    today = adapter.render(PoolParams(4, max_requests=1000))
    assert adapter.render(PoolParams(4, max_requests=1000, threads=None)) == today and "thread" not in today
    limit = "--max-requests-jitter 100 " if kind == "gunicorn" else "--max-requests 1000 "
    assert adapter.render(PoolParams(4, max_requests=1000, threads=4)) == today.replace(
        after, after + lines).replace(limit, limit + flags)


def test_gunicorn_renders_one_thread_as_sync_workers() -> None:
    one = THREADED["gunicorn"][1]().render(PoolParams(4, threads=1))
    assert "threads = 1" in one.splitlines() and "gthread" not in one and "--threads 1 " in one


def test_uwsgi_threads_replace_those_of_the_users_ini_in_print(tmp_path: Path) -> None:
    ini = tmp_path / "site.ini"
    ini.write_text("[uwsgi]\nmodule = wsgi_app:app\nthreads = 8\n")
    lines = UwsgiAdapter(str(ini)).render(PoolParams(3, threads=2)).splitlines()
    assert "threads = 2" in lines and "enable-threads = true" in lines  # replacing the ini's own


@pytest.mark.parametrize("kind", [adapter.kind for adapter in REGISTRY if not adapter.threaded])
def test_a_server_without_threads_refuses_more_than_one(kind: str, tmp_path: Path) -> None:
    adapter = _unthreaded(kind, tmp_path)
    message = f"threads 4 is for gunicorn, puma and uwsgi only, not {adapter.who}"
    for call in (lambda: adapter.render(PoolParams(2, threads=4)),
                 lambda: adapter.server(PoolParams(2, threads=4), tmp_path / "w")):
        with pytest.raises(UsageError) as caught:
            call()
        assert str(caught.value) == message
    assert adapter.render(PoolParams(2, threads=1)) == adapter.render(PoolParams(2))
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("threads", [0, -1, 1025, True, 2.5])
def test_threads_out_of_range_are_one_line(threads: object) -> None:
    with pytest.raises(UsageError, match=r"^gunicorn: threads must be from 1 to 1024, not ") as caught:
        GunicornAdapter("wsgi_app:app").render(PoolParams(2, threads=threads))  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


# ---------------------------------------------------------------------------------------------
# Live: one worker, its threads counted in flight


def _adapter(kind: str) -> Adapter:
    missing, make = THREADED[kind]
    why = missing()
    if why is not None:
        pytest.skip(why)
    return make()


@pytest.mark.parametrize("threads", [4, 1])
@pytest.mark.parametrize("kind", list(THREADED))
def test_one_worker_serves_its_threads_at_once(kind: str, threads: int, tmp_path: Path) -> None:
    server = _adapter(kind).server(PoolParams(1, threads=threads), tmp_path / "server")
    try:
        server.start(timeout_s=START_S)
        [worker] = server.children()
        pids, most = in_flight(server.url)
    finally:
        server.stop()
    assert pids == {worker}
    assert most == threads
    assert processes_mentioning(str(tmp_path)) == []


def _printed(kind: str, params: PoolParams, folder: Path, port: int) -> list[str]:
    """The configuration ``render`` prints for ``params``, written to ``folder`` as its comment says,
    and the command line that starts it there on ``port`` (a user's own address)."""
    text = _adapter(kind).render(params)
    if kind == "gunicorn":
        conf = text.split("\n\n")[0]
        (folder / "gunicorn.conf.py").write_text(conf + "\n")
        run = next(line for line in conf.splitlines() if line.startswith("# run with: gunicorn "))
        # this interpreter's gunicorn (the one on PATH may be another Python's), on our port
        return [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}",
                *(["--no-control-socket"] if _has_control_socket() else []),
                *shlex.split(run.removeprefix("# run with: gunicorn "))]
    if kind == "puma":
        conf, command = text.split("\n\n# run with\n")
        (folder / "puma.rb").write_text(conf + "\n")
        return [*shlex.split(command), "-b", f"tcp://127.0.0.1:{port}"]
    ini, found = re.subn(r"^http-socket = .*$", f"http-socket = 127.0.0.1:{port}", text.split("\n\n")[0], flags=re.M)
    assert found == 1, ini
    (folder / "uwsgi.ini").write_text(ini + "\n")
    return [find_uwsgi() or "uwsgi", "--ini", "uwsgi.ini"]


@pytest.mark.parametrize("kind", list(THREADED))
def test_the_configuration_printed_for_threads_runs_them(kind: str, tmp_path: Path) -> None:
    port = free_port()
    argv = _printed(kind, PoolParams(1, threads=4), tmp_path, port)
    with serving(argv, tmp_path, port) as url:
        pids, most = in_flight(url)
    assert len(pids) == 1 and most == 4


@pytest.mark.parametrize(("threads", "most"), [(None, 4), (2, 2)])
def test_uwsgi_threads_replace_those_of_the_users_ini(threads: int | None, most: int, tmp_path: Path) -> None:
    """The user's ini keeps its own ``threads`` unless the pool sets them (``--threads`` after ``--ini``)."""
    if uwsgi_missing() is not None:
        pytest.skip(str(uwsgi_missing()))
    ini = tmp_path / "site.ini"
    ini.write_text(f"[uwsgi]\npythonpath = {APPS}\nmodule = wsgi_app:app\nthreads = 4\n")
    server = UwsgiAdapter(str(ini)).server(PoolParams(1, threads=threads), tmp_path / "server")
    try:
        server.start(timeout_s=START_S)
        assert in_flight(server.url) == ({server.children()[0]}, most)
    finally:
        server.stop()
