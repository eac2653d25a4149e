"""The server adapters without starting a server: their plain-data form (``to_dict`` /
``adapter_from_dict``), :class:`PoolParams` and each adapter's ``render``."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from pounder import UsageError
from pounder.pool import (
    KINDS,
    ApacheAdapter,
    CommandAdapter,
    GunicornAdapter,
    PoolParams,
    StarmanAdapter,
    adapter_from_dict,
    demo_adapter,
    make_adapter,
)
from pounder.tune._memory import (
    memory_bound,
)
from pounder.tune._mrpc import (
    choose_max_requests,
)

MIB = 1024 * 1024
TESTS = Path(__file__).resolve().parents[1]
APPS = TESTS / "apps"
PSGI = APPS / "app.psgi"
PERL = APPS / "perl"


# ---------------------------------------------------------------------------------------------
# Adapters as plain data


def _round_trip(adapter: Any) -> Any:
    plain = adapter.to_dict()
    again = adapter_from_dict(json.loads(json.dumps(plain)))
    assert type(again) is type(adapter)
    assert again.to_dict() == plain
    assert again.describe() == adapter.describe()
    assert again.preload == adapter.preload
    return again


def test_gunicorn_round_trip() -> None:
    adapter = GunicornAdapter("wsgi_app:app", pythonpath=str(APPS), preload=True, env={"APP_MB": "8"},
                              extra_args=("--timeout", "5"))
    assert adapter.to_dict() == {"kind": "gunicorn", "app": "wsgi_app:app", "pythonpath": str(APPS), "preload": True,
                                 "env": {"APP_MB": "8"}, "extra_args": ["--timeout", "5"]}
    again = _round_trip(adapter)
    assert again.extra_args == ("--timeout", "5")
    assert _round_trip(GunicornAdapter("wsgi_app:app")).to_dict() == {
        "kind": "gunicorn", "app": "wsgi_app:app", "pythonpath": None, "preload": False, "env": {}, "extra_args": []}


def test_starman_round_trip() -> None:
    adapter = StarmanAdapter(PSGI, preload=True, env={"APP_DATA_MB": "40"})
    assert adapter.to_dict() == {"kind": "starman", "psgi": str(PSGI), "preload": True, "env": {"APP_DATA_MB": "40"},
                                 "extra_args": []}
    _round_trip(adapter)


def test_starman_psgi_is_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(APPS)
    adapter = StarmanAdapter("app.psgi")
    assert adapter.psgi == PSGI and adapter.to_dict()["psgi"] == str(PSGI)


def test_apache_round_trip_with_handlers() -> None:
    adapter = ApacheAdapter(perl_handlers={"/hello": "PounderTest::Hello"}, startup_pl=PERL / "startup.pl",
                            perl_lib=PERL / "lib", extra_conf="LogLevel warn")
    assert adapter.preload  # a startup.pl is loaded in the parent
    assert adapter.to_dict() == {"kind": "apache", "conf": None, "perl_handlers": {"/hello": "PounderTest::Hello"},
                                 "startup_pl": str(PERL / "startup.pl"), "perl_lib": str(PERL / "lib"),
                                 "extra_conf": "LogLevel warn"}
    _round_trip(adapter)
    bare = ApacheAdapter(perl_handlers={"/hello": "PounderTest::Hello"})
    assert not bare.preload
    _round_trip(bare)


@pytest.mark.parametrize(("text", "preload"), [
    ("PerlRequire /srv/startup.pl\n", True),
    ("  perlmodule My::App\n", True),
    ("PerlPostConfigRequire /srv/startup.pl\n", True),
    ("<Location />\n  PerlResponseHandler My::App\n</Location>\n", False),
    ("# PerlRequire /srv/startup.pl\n", False),
    ("ServerName localhost\n", False),
])
def test_apache_round_trip_with_a_conf(tmp_path: Path, text: str, preload: bool) -> None:
    conf = tmp_path / "app.conf"
    conf.write_text(text)
    adapter = ApacheAdapter(conf)
    assert adapter.preload is preload
    assert adapter.to_dict() == {"kind": "apache", "conf": str(conf), "perl_handlers": {}, "startup_pl": None,
                                 "perl_lib": None, "extra_conf": ""}
    _round_trip(adapter)


def test_command_round_trip() -> None:
    adapter = CommandAdapter("server --listen {host}:{port} --processes {workers} --max {max_requests}",
                             env={"X": "1"}, stop_signal="quit")
    assert adapter.stop_signal is signal.SIGQUIT
    assert adapter.to_dict() == {"kind": "command",
                                 "command": "server --listen {host}:{port} --processes {workers} --max {max_requests}",
                                 "env": {"X": "1"}, "stop_signal": "SIGQUIT"}
    again = _round_trip(adapter)
    assert again.stop_signal is signal.SIGQUIT
    assert _round_trip(CommandAdapter("server {port}")).stop_signal is signal.SIGTERM


@pytest.mark.parametrize("name", ["TERM", "term", "SIGTERM", "sigint", "QUIT", "HUP"])
def test_command_stop_signals(name: str) -> None:
    expected = signal.Signals[f"SIG{name.upper().removeprefix('SIG')}"]
    assert CommandAdapter("server {port}", stop_signal=name).stop_signal is expected


@pytest.mark.parametrize(("data", "message"), [
    ({"kind": "nginx"}, "the results directory names an unknown server kind 'nginx'"),
    ({}, "unknown server kind None"),
    ({"kind": "gunicorn"}, "the results directory describes its gunicorn server badly"),
    ({"kind": "starman"}, "describes its starman server badly"),
    ({"kind": "command"}, "describes its command server badly"),
    ({"kind": "gunicorn", "app": "app"}, "gunicorn: the app must be given as module:callable, not 'app'"),
    ({"kind": "starman", "psgi": "/no/such/app.psgi"}, "starman: no such PSGI file /no/such/app.psgi"),
    ({"kind": "apache", "conf": "/no/such/httpd.conf"}, "apache: no such configuration file /no/such/httpd.conf"),
    ({"kind": "command", "command": "server"}, "command: the command template must contain {port}"),
    ({"kind": "command", "command": "server {port}", "stop_signal": "NOPE"}, "command: unknown stop signal 'NOPE'"),
])
def test_adapter_from_dict_errors(data: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        adapter_from_dict(data)
    assert message in str(caught.value)


@pytest.mark.parametrize("data", [
    {"kind": "gunicorn", "app": "a:b", "env": ["A=1"]},
    {"kind": "apache", "perl_handlers": "PounderTest::Hello"},
])
def test_adapter_from_dict_malformed_values(data: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        adapter_from_dict(data)


def test_constructor_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="module:callable"):
        GunicornAdapter("wsgi_app")
    with pytest.raises(UsageError, match="starman: no such PSGI file"):
        StarmanAdapter(tmp_path / "missing.psgi")
    with pytest.raises(UsageError, match="starman: no such PSGI file"):
        StarmanAdapter(tmp_path)  # a directory
    with pytest.raises(UsageError, match="command: unknown placeholder {threads}"):
        CommandAdapter("server {port} -t {threads}")
    with pytest.raises(UsageError, match="command: the command template is empty"):
        CommandAdapter("")


# ---------------------------------------------------------------------------------------------
# make_adapter: the one factory


def test_make_adapter_builds_each_kind() -> None:
    gunicorn = make_adapter("gunicorn", "wsgi_app:app", pythonpath=str(APPS), preload=True, env={"A": "1"})
    assert isinstance(gunicorn, GunicornAdapter) and gunicorn.preload and gunicorn.env == {"A": "1"}
    assert gunicorn.pythonpath == str(APPS)
    starman = make_adapter("starman", PSGI, extra_args=("--x",))
    assert isinstance(starman, StarmanAdapter) and starman.psgi == PSGI and starman.extra_args == ("--x",)
    apache = make_adapter("apache", None, perl_handlers={"/hello": "PounderTest::Hello"}, perl_lib=PERL,
                          extra_conf="KeepAlive Off", env={"IGNORED": "1"})
    assert isinstance(apache, ApacheAdapter) and apache.extra_conf == "KeepAlive Off"
    command = make_adapter("command", "true {port}", stop_signal="QUIT")  # a program on PATH
    assert isinstance(command, CommandAdapter) and command.stop_signal == signal.SIGQUIT


def test_make_adapter_errors() -> None:
    with pytest.raises(UsageError, match=f"unknown server kind 'nginx': use one of {', '.join(KINDS)}"):
        make_adapter("nginx", "nginx.conf")
    with pytest.raises(UsageError, match="gunicorn: no app given"):
        make_adapter("gunicorn", None)


# ---------------------------------------------------------------------------------------------
# PoolParams


@pytest.mark.parametrize(("params", "expected"), [
    (PoolParams(4), (4, 4, 5)),  # a fixed pool: every child started and kept
    (PoolParams(1), (1, 1, 2)),
    (PoolParams(12, start_servers=12, min_spare=3, max_spare=12), (12, 3, 12)),
    (PoolParams(8, start_servers=5, min_spare=5, max_spare=10), (5, 5, 10)),
    (PoolParams(8, start_servers=2, min_spare=3, max_spare=2), (2, 3, 4)),  # MaxSpare raised above MinSpare
    (PoolParams(8, start_servers=2, min_spare=3, max_spare=3), (2, 3, 4)),
    (PoolParams(4, min_spare=6), (4, 6, 7)),
    (PoolParams(4, start_servers=1), (1, 4, 5)),
    (PoolParams(4, max_spare=2), (4, 4, 5)),
])
def test_pool_params_fixed(params: PoolParams, expected: tuple[int, int, int]) -> None:
    assert params.fixed() == expected
    start, low, high = params.fixed()
    assert high > low


def test_pool_params_round_trip() -> None:
    params = PoolParams(12, max_requests=3400, start_servers=12, min_spare=3, max_spare=12, preload=True)
    plain = params.to_dict()
    assert plain == {"max_clients": 12, "max_requests": 3400, "start_servers": 12, "min_spare": 3, "max_spare": 12,
                     "preload": True}
    assert PoolParams.from_dict(json.loads(json.dumps(plain))) == params
    assert PoolParams.from_dict(PoolParams(3).to_dict()) == PoolParams(3)


# ---------------------------------------------------------------------------------------------
# render


def directives(text: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^\s+(\w+)\s+(\d+)$", text, re.MULTILINE)}


def test_apache_render() -> None:
    adapter = ApacheAdapter(perl_handlers={"/": "My::App"})
    text = adapter.render(PoolParams(12, max_requests=3400, start_servers=12, min_spare=3, max_spare=12))
    lines = text.splitlines()
    assert lines[0] == "<IfModule mpm_prefork_module>" and lines[7] == "</IfModule>"
    assert directives(text) == {"StartServers": 12, "MinSpareServers": 3, "MaxSpareServers": 12, "ServerLimit": 12,
                                "MaxRequestWorkers": 12, "MaxConnectionsPerChild": 3400}
    assert list(directives(text)) == ["StartServers", "MinSpareServers", "MaxSpareServers", "ServerLimit",
                                      "MaxRequestWorkers", "MaxConnectionsPerChild"]
    assert lines[1] == "    StartServers               12"
    assert "MaxConnectionsPerChild counts connections" in text
    assert all(line.startswith("#") for line in lines[8:]) and len(lines) > 8


def test_apache_render_fixed_pool_and_unlimited() -> None:
    text = ApacheAdapter(perl_handlers={"/": "My::App"}).render(PoolParams(6))
    assert directives(text) == {"StartServers": 6, "MinSpareServers": 6, "MaxSpareServers": 7, "ServerLimit": 6,
                                "MaxRequestWorkers": 6, "MaxConnectionsPerChild": 0}


def test_gunicorn_render() -> None:
    adapter = GunicornAdapter("wsgi_app:app", pythonpath=str(APPS))
    assert adapter.render(PoolParams(4, max_requests=1000, preload=True)) == "\n".join([
        "# gunicorn.conf.py",
        "workers = 4",
        "max_requests = 900",
        "max_requests_jitter = 100  # restarts spread over 900..1000",
        "preload_app = True",
        f"pythonpath = '{APPS}'",
        "# run with: gunicorn -c gunicorn.conf.py wsgi_app:app",
        "",
        "# or on the command line",
        f"gunicorn --workers 4 --max-requests 900 --max-requests-jitter 100 --preload --pythonpath {APPS} "
        "wsgi_app:app",
    ])


def test_gunicorn_render_carries_what_the_server_needs_to_start(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The recommendation, pasted, starts the server as it was measured (issue 14, item 17): the
    pythonpath (absolute, whatever was given), the environment and the extra arguments."""
    monkeypatch.chdir(tmp_path)
    adapter = GunicornAdapter("wsgi_app:app", pythonpath="apps", env={"APP_DATA_MB": "1", "MSG": "a b"},
                              extra_args=("--chdir", "/srv"))
    text = adapter.render(PoolParams(2))
    assert f"pythonpath = '{tmp_path / 'apps'}'" in text.splitlines()
    assert "raw_env = ['APP_DATA_MB=1', 'MSG=a b']" in text.splitlines()
    assert "# run with: gunicorn -c gunicorn.conf.py --chdir /srv wsgi_app:app" in text.splitlines()
    assert text.splitlines()[-1] == (f"gunicorn --workers 2 --max-requests 0 --pythonpath {tmp_path / 'apps'} "
                                     "--env APP_DATA_MB=1 --env 'MSG=a b' --chdir /srv wsgi_app:app")


def test_starman_and_command_render_carry_the_environment() -> None:
    starman = StarmanAdapter(PSGI, env={"PLACK_ENV": "deployment"}, extra_args=("-I", "/srv/lib"))
    assert starman.render(PoolParams(3, max_requests=10)) == (
        f"env PLACK_ENV=deployment starman --workers 3 --max-requests 10 -I /srv/lib {PSGI}")
    command = CommandAdapter("server --port {port} --workers {workers}", env={"A": "1 2"})
    assert command.render(PoolParams(3)) == "env 'A=1 2' server --port {port} --workers 3"


def test_gunicorn_render_unlimited_without_preload() -> None:
    text = GunicornAdapter("wsgi_app:app").render(PoolParams(8))
    assert "workers = 8" in text and "max_requests = 0" in text
    assert "jitter" not in text and "preload" not in text
    assert text.splitlines()[-1] == "gunicorn --workers 8 --max-requests 0 wsgi_app:app"


def test_gunicorn_render_preload_follows_the_adapter() -> None:
    adapter = GunicornAdapter("wsgi_app:app", preload=True)
    assert adapter.render(PoolParams(2, max_requests=5)).splitlines()[-1] == (
        "gunicorn --workers 2 --max-requests 5 --preload wsgi_app:app")  # 5 // 10 = 0: no jitter
    assert "--preload" not in adapter.render(PoolParams(2, preload=False))


def test_gunicorn_jitter_stays_within_a_leak_limit() -> None:
    # RAM 1024 MiB, 100 MiB shared, 4 children: 231 MiB each; a child starts at 31 MiB and grows
    # 19,973 B per request: 209,715,200 / 19,973 = 10,499 requests at most, rounded down to 10,000
    end = {"children": 4, "max_uss": 40 * MIB, "median_uss": 40 * MIB, "median_shared": 100 * MIB,
           "max_rss": 140 * MIB, "footprint": 300 * MIB}
    warm = {**end, "max_uss": 31 * MIB, "median_uss": 31 * MIB}
    measure = {"children": 4, "warmed": 4, "warm_requests": 8, "preload": False,
               "parent": {"rss": 120 * MIB, "uss": 0, "shared": 100 * MIB, "pss": 60 * MIB},
               "cold": warm, "warm": warm, "mid": end, "end": end, "requests_first": 1000, "requests_second": 1000,
               "failed": 0, "growth_first": 19973.0, "growth_second": 19973.0, "sharing": 0.9,
               "mem_available": 2048 * MIB}
    memory = memory_bound(measure, 1024 * MIB, 0)
    unlimited = {"children": 4, "max_requests": 0, "connections": 8, "warmed": 4, "complete": 6000, "failed": 0,
                 "non_2xx": 0, "errors": {}, "elapsed_s": 6.0, "rps": 1000.0, "p50_ms": 2.0, "p95_ms": 5.0,
                 "p99_ms": 9.0, "server_cpu_us": 900.0, "server_cores": 1.0, "client_cores": 0.2,
                 "children_seen_spawned": 0, "max_child_uss": 40 * MIB, "respawns": 0}
    choice = choose_max_requests([unlimited], measure, memory, 4, max_loss=0.02)
    assert choice.leak and choice.memory_limit == 10499 and choice.value == 10000
    text = GunicornAdapter("app:app").render(PoolParams(4, max_requests=choice.value))
    jitter = re.search(r"--max-requests-jitter (\d+)", text)
    base = re.search(r"--max-requests (\d+)", text)
    assert base is not None
    most = int(base[1]) + (int(jitter[1]) if jitter else 0)
    assert most == choice.value  # the restarts spread below the limit, never above
    assert choice.memory_limit is not None and most <= choice.memory_limit, text


def test_starman_render() -> None:
    adapter = StarmanAdapter(PSGI)
    assert adapter.render(PoolParams(5, max_requests=3400)) == f"starman --workers 5 --max-requests 3400 {PSGI}"
    assert adapter.render(PoolParams(5, max_requests=3400, preload=True)) == (
        f"starman --workers 5 --max-requests 3400 --preload-app {PSGI}")


def test_starman_render_unlimited() -> None:
    text = StarmanAdapter(PSGI, preload=True).render(PoolParams(3))
    assert text == (f"starman --workers 3 --max-requests 1000000000 --preload-app {PSGI}  # Starman reads 0 as its "
                    "default, 1000")


def test_starman_render_quotes_the_path(tmp_path: Path) -> None:
    psgi = tmp_path / "my app.psgi"
    psgi.write_text("sub { [200, [], ['']] }\n")
    assert StarmanAdapter(psgi).render(PoolParams(2, max_requests=10)).endswith(f" '{psgi}'")


def test_command_render() -> None:
    adapter = CommandAdapter("server --listen {host}:{port} --processes {workers} --max {max_requests}")
    assert adapter.render(PoolParams(6, max_requests=1200)) == (
        "server --listen {host}:{port} --processes 6 --max 1200")


def test_command_render_with_a_format_spec() -> None:
    adapter = CommandAdapter("server --port {port} --processes {workers:d} --max {max_requests:d}")
    assert adapter.render(PoolParams(6, max_requests=1200)) == "server --port {port} --processes 6 --max 1200"


def test_names() -> None:
    assert ApacheAdapter.names["max_clients"] == "MaxRequestWorkers"
    assert ApacheAdapter.names["max_requests"] == "MaxConnectionsPerChild"
    assert GunicornAdapter.names["max_requests"] == "--max-requests"
    assert StarmanAdapter.names["preload"] == "--preload-app"
    assert {ApacheAdapter.max_requests_counts, StarmanAdapter.max_requests_counts,
            GunicornAdapter.max_requests_counts} == {"connections", "requests"}
    assert ApacheAdapter.on_demand and not GunicornAdapter.on_demand and not StarmanAdapter.on_demand
    for cls in (ApacheAdapter, GunicornAdapter, StarmanAdapter, CommandAdapter):
        assert set(cls.names) == {"max_clients", "max_requests", "start_servers", "min_spare", "max_spare",
                                  "preload", "threads"}
    # a worker's threads by each server's own name, where it has them
    assert (GunicornAdapter.names["threads"], ApacheAdapter.names["threads"]) == ("--threads", "-")


@pytest.mark.parametrize("kind", [[], {}, None, 3, "nginx"])
def test_a_malformed_kind_in_a_results_directory_is_a_usage_error(kind: object) -> None:
    with pytest.raises(UsageError, match="unknown server kind"):
        adapter_from_dict({"kind": kind})


# ---------------------------------------------------------------------------------------------
# check: what the server needs is there, before anything starts (issue 14, item 13)


def test_check_finds_the_gunicorn_module_without_importing_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("raise SystemExit('imported')\n")
    (tmp_path / "src" / "pkg" / "wsgi.py").write_text("raise SystemExit('imported')\n")
    (tmp_path / "here.py").write_text("app = None\n")
    monkeypatch.chdir(tmp_path)
    make_adapter("gunicorn", "pkg.wsgi:app", pythonpath="src")  # relative to the working directory
    make_adapter("gunicorn", "pounder.demo.app:app")  # on this interpreter's path
    demo_adapter().check()
    with pytest.raises(UsageError, match="cannot find the module 'pkg.other' of pkg.other:app in --pythonpath "
                                         f"{tmp_path / 'src'}, on PYTHONPATH"):
        make_adapter("gunicorn", "pkg.other:app", pythonpath="src")
    with pytest.raises(UsageError, match="cannot find the module 'here'.*give --pythonpath DIR"):
        make_adapter("gunicorn", "here:app")  # gunicorn runs elsewhere: the current directory is not its path
    make_adapter("gunicorn", "here:app", env={"PYTHONPATH": str(tmp_path)})
    make_adapter("gunicorn", "wsgi:app", extra_args=("--chdir", str(tmp_path / "src" / "pkg")))
    with pytest.raises(UsageError, match="gunicorn: --chdir /nonexistent is not a directory"):
        make_adapter("gunicorn", "wsgi:app", extra_args=("--chdir=/nonexistent",))
    with pytest.raises(UsageError, match="gunicorn: --pythonpath /nonexistent is not a directory"):
        make_adapter("gunicorn", "pkg.wsgi:app", pythonpath="src,/nonexistent")


def test_check_of_each_kind(tmp_path: Path) -> None:
    psgi = tmp_path / "app.psgi"
    psgi.write_text("sub { [200, [], ['ok']] }\n")
    starman = make_adapter("starman", psgi)
    psgi.unlink()  # gone by the time a run starts
    with pytest.raises(UsageError, match=f"starman: no such PSGI file {psgi}"):
        starman.check()
    with pytest.raises(UsageError, match="apache: no such startup file /nonexistent/startup.pl"):
        make_adapter("apache", None, perl_handlers={"/": "My::App"}, startup_pl="/nonexistent/startup.pl")
    with pytest.raises(UsageError, match="apache: the Perl library /nonexistent is not a directory"):
        make_adapter("apache", None, perl_handlers={"/": "My::App"}, perl_lib="/nonexistent")
    with pytest.raises(UsageError, match="command: cannot find pounder-no-such-server on PATH"):
        make_adapter("command", "pounder-no-such-server {port}")
    make_adapter("command", "./server {port}")  # relative to the server's own directory: cannot tell
    make_adapter("command", "{workdir}/server {port}")


def test_stored_adapters_are_rebuilt_unchecked_unless_asked() -> None:
    data = {"kind": "gunicorn", "app": "gone:app", "pythonpath": "/nonexistent"}
    assert adapter_from_dict(data).describe().startswith("gunicorn")  # a report of an old run
    with pytest.raises(UsageError, match="--pythonpath /nonexistent is not a directory"):
        adapter_from_dict(data, check=True)


def test_tune_checks_before_the_results_directory(tmp_path: Path) -> None:
    from pounder.tune import tune

    with pytest.raises(UsageError, match="gunicorn: --pythonpath /nonexistent is not a directory"):
        tune(GunicornAdapter("app:app", pythonpath="/nonexistent"), results=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_every_adapter_passes_the_server_cpus_through(tmp_path: Path) -> None:
    """The CPUs reach the server (which applies them at start: tests/pool/test_runner.py)."""
    adapters = [GunicornAdapter("wsgi_app:app", pythonpath=str(APPS)), StarmanAdapter(PSGI),
                ApacheAdapter(perl_handlers={"/": "Hello"}), CommandAdapter("true {port} {workers} {max_requests}")]
    for adapter in adapters:
        assert adapter.server(PoolParams(2), tmp_path, cpus=[1, 0, 1]).cpus == (0, 1), adapter.kind
        assert adapter.server(PoolParams(2), tmp_path).cpus is None, adapter.kind


def test_make_adapter_takes_the_adapter_options_as_keywords() -> None:
    """make_adapter's keywords are AdapterOptions' fields (declared there once); another is
    refused in one line naming make_adapter, as @public refuses any function's unknown keyword."""
    adapter = make_adapter("gunicorn", "wsgi_app:app", pythonpath=str(APPS), preload=True, env={"A": "1"},
                           check=False)
    assert adapter.to_dict() == GunicornAdapter("wsgi_app:app", pythonpath=str(APPS), preload=True,
                                                env={"A": "1"}).to_dict()
    with pytest.raises(UsageError, match=r"^make_adapter: unexpected argument 'workers'$"):
        make_adapter("gunicorn", "wsgi_app:app", workers=3)
