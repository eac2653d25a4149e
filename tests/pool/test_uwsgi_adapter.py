"""The uWSGI adapter without starting a server: its plain-data form (``to_dict`` /
``adapter_from_dict``), ``make_adapter``, ``render`` (checked by uWSGI itself where a test can),
``check`` and ``input_files``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pounder import UsageError
from pounder.pool import (
    ADAPTERS,
    TARGET_FIELDS,
    PoolParams,
    Runner,
    UwsgiAdapter,
    adapter_from_dict,
    make_adapter,
)
from pounder.servers import UWSGI_STATUS, UwsgiServer, uwsgi_missing
from pounder.tune._points import aggregate_trials
from support.leftovers import processes_mentioning

APPS = Path(__file__).resolve().parents[1] / "apps"
needs_uwsgi = pytest.mark.skipif(uwsgi_missing() is not None, reason=str(uwsgi_missing()))


def _round_trip(adapter: UwsgiAdapter) -> UwsgiAdapter:
    plain = adapter.to_dict()
    again = adapter_from_dict(json.loads(json.dumps(plain)))
    assert isinstance(again, UwsgiAdapter)
    assert again.to_dict() == plain and again.describe() == adapter.describe() and again.preload == adapter.preload
    return again


def test_registered() -> None:
    assert ADAPTERS["uwsgi"] is UwsgiAdapter and TARGET_FIELDS["uwsgi"] == "app"
    assert UwsgiAdapter.options == {"pythonpath", "preload", "env"} and UwsgiAdapter.preload_toggle
    assert UwsgiAdapter.names == {"max_clients": "processes", "max_requests": "max-requests",
                                  "start_servers": "cheaper-initial", "min_spare": "cheaper",
                                  "max_spare": "cheaper-step", "preload": "lazy-apps = false", "threads": "threads"}
    assert UwsgiAdapter.on_demand and UwsgiAdapter.request_limit


def test_module_round_trip() -> None:
    adapter = UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS), env={"APP_DATA_MB": "8"},
                           extra_args=("--harakiri", "30"))
    assert adapter.preload  # uWSGI's own default: the app loaded in the master
    assert adapter.to_dict() == {"kind": "uwsgi", "app": "wsgi_app:app", "pythonpath": str(APPS), "preload": True,
                                 "env": {"APP_DATA_MB": "8"}, "extra_args": ["--harakiri", "30"]}
    assert _round_trip(adapter).extra_args == ("--harakiri", "30")
    lazy = _round_trip(UwsgiAdapter("wsgi_app:app", preload=False))
    assert not lazy.preload and lazy.describe() == "uWSGI serving wsgi_app:app with lazy-apps"


def test_ini_round_trip_and_its_lazy_apps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ini = tmp_path / "site.ini"
    ini.write_text("[uwsgi]\nmodule = wsgi_app:app\nlazy-apps = true\n")
    monkeypatch.chdir(tmp_path)
    adapter = UwsgiAdapter("site.ini")
    assert adapter.ini == ini and adapter.to_dict()["app"] == str(ini)
    assert not adapter.preload  # the ini's own lazy-apps
    assert UwsgiAdapter("site.ini", preload=True).preload  # given: wins
    assert _round_trip(adapter).ini == ini
    assert adapter.input_files() == [("ini file", str(ini))]
    ini.write_text("[uwsgi]\nmodule = wsgi_app:app\n")
    assert UwsgiAdapter(str(ini)).preload


def test_make_adapter_and_preload_not_given() -> None:
    adapter = make_adapter("uwsgi", "wsgi_app:app", pythonpath=str(APPS), preload=None, check=False)
    assert isinstance(adapter, UwsgiAdapter) and adapter.preload
    assert not make_adapter("uwsgi", "wsgi_app:app", preload=False, check=False).preload


@pytest.mark.parametrize(("data", "message"), [
    ({"kind": "uwsgi"}, "describes its uwsgi server badly"),
    ({"kind": "uwsgi", "app": "wsgi_app"}, "uwsgi: give the app as module:callable or an .ini file, not 'wsgi_app'"),
    ({"kind": "uwsgi", "app": "/no/such/site.ini"}, "uwsgi: no such ini file /no/such/site.ini"),
    ({"kind": "uwsgi", "app": "a:b", "env": ["A=1"]}, "describes its uwsgi server badly"),
])
def test_adapter_from_dict_errors(data: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        adapter_from_dict(data)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@needs_uwsgi
def test_check(tmp_path: Path) -> None:
    UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS)).check()
    with pytest.raises(UsageError, match=r"^uwsgi: cannot find the module 'wsgi_app' of wsgi_app:app on PYTHONPATH "
                                         r"or in the path of /usr/bin/python3 \(uWSGI's python3 plugin runs the "
                                         r"system Python, not pounder's\)$"):
        UwsgiAdapter("wsgi_app:app").check()
    with pytest.raises(UsageError, match=f"^uwsgi: --pythonpath {tmp_path}/none is not a directory$"):
        UwsgiAdapter("wsgi_app:app", pythonpath=str(tmp_path / "none")).check()
    with pytest.raises(UsageError, match="cannot find the module 'pkg.missing'"):
        UwsgiAdapter("pkg.missing:app", pythonpath=str(APPS)).check()
    ini = tmp_path / "site.ini"
    ini.write_text("[uwsgi]\nmodule = wsgi_app:app\n")
    adapter = UwsgiAdapter(str(ini))
    adapter.check()
    ini.write_text("[uwsgi]\ninclude = other.ini\n")  # changed since: checked again
    with pytest.raises(UsageError, match="give pounder one self-contained file"):
        adapter.check()
    ini.unlink()
    with pytest.raises(UsageError, match="^uwsgi: no such ini file"):
        adapter.check()
    assert UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS)).input_files() == [
        ("app module wsgi_app:app", str(APPS / "wsgi_app.py"))]
    assert UwsgiAdapter("no_such_module:app").input_files() == []


def test_constructor_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "plain.ini").write_text("module = a:b\n")
    for target, message in (("app", "module:callable or an .ini file"), (str(tmp_path / "plain.ini"),
                                                                           "has no [uwsgi] section")):
        with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")) as caught:
            UwsgiAdapter(target)
        assert "\n" not in str(caught.value)
    with pytest.raises(UsageError, match="uwsgi: preload must be True or False"):
        UwsgiAdapter("a:b", preload="no")  # type: ignore[arg-type]


def test_render_module() -> None:
    adapter = UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS), env={"APP_DATA_MB": "40"})
    text = adapter.render(PoolParams(6, max_requests=2000))
    ini = text.split("\n\n")[0].splitlines()
    assert ini[:2] == ["# uwsgi.ini", "[uwsgi]"]
    settings = [line for line in ini if line and not line.startswith("#")]
    assert settings == ["[uwsgi]", "plugin = python3", "http-socket = 127.0.0.1:8000", "module = wsgi_app:app",
                        f"pythonpath = {APPS}", "env = APP_DATA_MB=40", "master = true", "processes = 6",
                        "max-requests = 2000", "lazy-apps = false", "min-worker-lifetime = 0", "need-app = true",
                        "die-on-term = true"]
    assert text.splitlines()[-1] == (
        f"uwsgi --plugin python3 --master --http-socket 127.0.0.1:8000 --processes 6 --max-requests 2000 "
        f"--pythonpath {APPS} --env APP_DATA_MB=40 --need-app --die-on-term --module wsgi_app:app")
    lazy = adapter.render(PoolParams(2, preload=False))
    assert "lazy-apps = true" in lazy and "--lazy-apps" in lazy and "min-worker-lifetime" not in lazy
    assert "# max-requests = 0: a worker is never replaced" in lazy


def test_render_ini(tmp_path: Path) -> None:
    ini = tmp_path / "site.ini"
    ini.write_text("[uwsgi]\nmodule = wsgi_app:app\nlazy-apps = true\n")
    text = UwsgiAdapter(str(ini)).render(PoolParams(3, max_requests=0))
    assert text.splitlines() == [f"# in the [uwsgi] section of {ini} (replacing these options there):", "[uwsgi]",
                                 "master = true", "processes = 3", "max-requests = 0", "lazy-apps = true",
                                 "# max-requests = 0: a worker is never replaced", f"# run with: uwsgi --ini {ini}"]


def test_reload_on_rss_is_the_rss_a_worker_has_at_its_share_of_the_budget() -> None:
    from pounder.pool import ChildLimit

    adapter = UwsgiAdapter("wsgi_app:app")
    mib = 1024 * 1024
    text = adapter.size_limit(ChildLimit(children=3, start=10 * mib, limit=60 * mib, shared=30 * mib, requests=0,
                                         growth=102400))
    assert text.endswith("\n  reload-on-rss = 90")  # 60 private + 30 shared, in MiB
    assert "after about 512 requests" in text  # (60 - 10) MiB / 100 KB
    assert "no leak was measured" in adapter.size_limit(ChildLimit(3, 10 * mib, 60 * mib, 30 * mib, 0))
    assert adapter.size_limit(ChildLimit(3, 60 * mib, 60 * mib, 30 * mib, 0)) == ""  # no room to grow


@pytest.mark.parametrize(("params", "spares"), [
    (PoolParams(4), (4, 4, 0)),  # a fixed pool: no cheaper, every worker started and kept
    # every child started, none stopped for idling (Apache's defaults on a small pool): uWSGI's fixed pool
    (PoolParams(4, start_servers=5, min_spare=5, max_spare=10), (4, 4, 0)),
    (PoolParams(4, start_servers=4, min_spare=1, max_spare=4), (4, 4, 0)),
    (PoolParams(8, start_servers=5, min_spare=5, max_spare=10), (5, 5, 3)),  # Apache's defaults, capped
    (PoolParams(4, start_servers=4, min_spare=1, max_spare=3), (4, 1, 3)),
    (PoolParams(8, start_servers=2, min_spare=2, max_spare=3), (2, 2, 3)),
    (PoolParams(1, start_servers=1, min_spare=1, max_spare=2), (1, 1, 0)),  # one process: cheaper impossible
])
def test_spares_are_what_uwsgi_runs(params: PoolParams, spares: tuple[int, int, int]) -> None:
    """(cheaper-initial, cheaper, cheaper-step) as run: the same again when tune feeds them back,
    and the server started with exactly them."""
    adapter = UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS))
    assert adapter.spares(params) == spares
    again = PoolParams(params.max_clients, start_servers=spares[0], min_spare=spares[1], max_spare=spares[2])
    assert adapter.spares(again) == spares
    server = adapter.server(again, Path("/tmp/unused"))
    assert isinstance(server, UwsgiServer)
    settings = server.settings
    if spares[2]:
        assert (settings.initial, settings.cheaper, settings.cheaper_step) == spares
        assert settings.cheaper_overload == 1
    else:
        assert settings.cheaper == 0 and settings.initial == params.max_clients


def test_render_cheaper() -> None:
    adapter = UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS))
    text = adapter.render(PoolParams(4, start_servers=4, min_spare=1, max_spare=3))
    settings = [line for line in text.split("\n\n")[0].splitlines() if line and not line.startswith("#")]
    assert settings[settings.index("lazy-apps = false") + 1:settings.index("need-app = true")] == [
        "cheaper-algo = spare", "cheaper = 1", "cheaper-initial = 4", "cheaper-step = 3", "cheaper-overload = 1"]
    assert ("--processes 4 --max-requests 0 --cheaper-algo spare --cheaper 1 --cheaper-initial 4 --cheaper-step 3 "
            "--cheaper-overload 1 ") in text.splitlines()[-1]
    assert "cheaper" not in adapter.render(PoolParams(4))
    assert "# one worker: no cheaper" in adapter.render(PoolParams(1, start_servers=1, min_spare=1, max_spare=0))
    kept = adapter.render(PoolParams(3, start_servers=3, min_spare=3, max_spare=0))
    assert "# no cheaper (uWSGI's default): every worker started and kept" in kept and "cheaper =" not in kept


def test_status_change_and_note_of_uwsgis_counters() -> None:
    before = {"requests": 40, "listen queue errors": 2, "workers": 2, "busy workers": 0}
    after = {"requests": 140, "listen queue errors": 5, "workers": 2, "busy workers": 1}
    assert UWSGI_STATUS.change(before, after) == {"requests": 100, "listen_queue_errors": 3, "workers": 2,
                                            "busy_workers": 1}

    def trial(children: int, errors: int, workers: int) -> dict[str, object]:
        return {"children": children, "max_requests": 0, "connections": 4, "complete": 100, "failed": 0,
                "rps": 100.0, "queued": 0.9, "server_status": {"requests": 100, "listen_queue_errors": errors,
                                                               "workers": workers, "busy_workers": 0}}

    calm = aggregate_trials([trial(2, 0, 2), trial(2, 0, 2)])
    assert calm["server_status"] == {"trials": 2, "requests": 200, "listen_queue_errors": 0, "listen_queue_full": 0,
                                     "workers": 2}
    assert UWSGI_STATUS.note([calm], "uwsgi", "processes") == ""  # nothing the tables do not say
    full = aggregate_trials([trial(1, 3, 1), trial(1, 0, 1)])
    short = aggregate_trials([trial(4, 0, 3), trial(4, 0, 4)])
    assert UWSGI_STATUS.note([full, short], "uwsgi", "processes") == (
        "uWSGI's stats server, read before and after each load: its once-a-second checks found its listen queue "
        "full (listen, 100 by default) in 1 of 2 trials (3 checks) of 1 child: connections beyond it were not taken "
        "at once (Linux drops them and the client retries a second later), so latency there includes that wait; "
        "fewer workers ran at a load's end than processes: 3 of 4 children")


@needs_uwsgi
def test_a_measured_load_is_counted_by_uwsgi_as_by_the_load(tmp_path: Path) -> None:
    """A trial as tune runs it (the queue watch reading uWSGI's stats right before and after the
    load): the requests uWSGI's workers counted are the load's complete + failed."""
    runner = Runner(UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS)), tmp_path / "servers", "/sleep?ms=5",
                    memory_floor=0, timeout_s=30.0)
    try:
        with runner.started(PoolParams(2)) as server:
            runner.warm(server, rounds=1)
            queue = runner.queue_watch(server)
            result = runner.bench(server, 3, requests=60, sample=False, queue=queue)
            status = queue.server_status
            assert status is not None, "uWSGI's stats server was not read"
            assert status["requests"] == result.requests.complete + result.requests.failed == 60
            assert status["workers"] == 2 and status["busy_workers"] == 0 and status["listen_queue_errors"] == 0
            timed = runner.queue_watch(server)  # a timed load, as tune's points are
            result = runner.bench(server, 3, duration=1.0, sample=False, queue=timed)
            assert timed.server_status is not None
            assert timed.server_status["requests"] == result.requests.complete + result.requests.failed
    finally:
        assert processes_mentioning(str(tmp_path)) == []
