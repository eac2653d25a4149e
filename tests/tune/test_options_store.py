"""``pounder tune``'s inputs and files, without starting a server: :func:`make_options` /
:class:`TuneOptions`, the results directory (:class:`ResultsDir`), the server adapters' plain-data
form (``to_dict`` / ``adapter_from_dict``), :class:`PoolParams` and each adapter's ``render``."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from pounder import UsageError
from pounder._errors import PounderError
from pounder.tune import (
    POINT_SCHEMA,
    RESULT_SCHEMA,
    TUNE_SCHEMA,
    ApacheAdapter,
    CommandAdapter,
    GunicornAdapter,
    PoolParams,
    ResultsDir,
    StarmanAdapter,
    TuneOptions,
    _options,
    adapter_from_dict,
    make_options,
)
from pounder.tune._analysis import choose_max_requests, memory_bound

MIB = 1024 * 1024
GIB = 1024 * MIB
TESTS = Path(__file__).resolve().parents[1]
APPS = TESTS / "apps"
PSGI = APPS / "app.psgi"
PERL = APPS / "perl"


# ---------------------------------------------------------------------------------------------
# make_options / TuneOptions


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 64 GiB, 2-CPU machine: the defaults that depend on the machine are known."""
    monkeypatch.setattr(_options, "_mem_total", lambda: 64 * GIB)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


@pytest.mark.usefixtures("machine")
def test_defaults() -> None:
    options = make_options()
    assert options == TuneOptions(
        path="/", ram=None, clients=None, p99_s=None, quick=False, point_s=6.0, requests_per_child=200,
        measure_children=4, max_children=64, mrpc_values=(0, 10000, 1000, 100, 10), max_loss=0.02, tolerance=0.05,
        safety_margin=64 * GIB // 20, memory_floor=64 * GIB // 50, compare_preload=True, timeout_s=30.0)


@pytest.mark.usefixtures("machine")
def test_quick_defaults() -> None:
    options = make_options(quick=True)
    assert options.quick
    assert options.point_s == 3.0
    assert options.requests_per_child == 100
    assert options.mrpc_values == (0, 1000, 100, 10)
    assert options.compare_preload is False
    # what quick does not change
    assert (options.measure_children, options.max_children, options.max_loss, options.tolerance) == (4, 64, 0.02, 0.05)


@pytest.mark.usefixtures("machine")
def test_quick_with_explicit_values() -> None:
    options = make_options(quick=True, point_duration="5s", requests_per_child=50, mrpc="0,500",
                           compare_preload=True)
    assert (options.point_s, options.requests_per_child, options.mrpc_values, options.compare_preload) == (
        5.0, 50, (0, 500), True)


def test_small_machine_margins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_options, "_mem_total", lambda: 2 * GIB)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    options = make_options()
    assert options.safety_margin == 256 * MIB and options.memory_floor == 256 * MIB  # the floors
    assert options.max_children == 32  # 32 per CPU, one CPU when unknown


def test_max_children_default_at_least_16(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 0)
    assert make_options().max_children == 32
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert make_options().max_children == 256
    assert make_options(max_children=3).max_children == 3


@pytest.mark.parametrize(("ram", "expected"), [
    ("256M", 256 * MIB), ("256m", 256 * MIB), ("4G", 4 * GIB), ("1.5GiB", 3 * GIB // 2), ("16M", 16 * MIB),
    ("20480k", 20 * MIB), (512 * MIB, 512 * MIB), (None, None)])
def test_ram(ram: str | int | None, expected: int | None) -> None:
    assert make_options(ram=ram).ram == expected


@pytest.mark.parametrize(("p99", "expected"), [
    ("300ms", 0.3), ("1s", 1.0), ("1.5s", 1.5), ("2", 2.0), ("1m", 60.0), (0.25, 0.25), ("10m", 600.0)])
def test_p99(p99: str | float, expected: float) -> None:
    assert make_options(p99=p99).p99_s == pytest.approx(expected)


@pytest.mark.parametrize(("mrpc", "expected"), [
    ("0,10k,100", (0, 10000, 100)),
    ("0, 10K , 1000", (0, 10000, 1000)),
    ("0", (0,)),
    ("500", (500,)),
    ([0, 20, 5], (0, 20, 5)),
    ((100,), (100,)),
])
def test_mrpc(mrpc: str | list[int] | tuple[int, ...], expected: tuple[int, ...]) -> None:
    options = make_options(mrpc=mrpc)
    assert options.mrpc_values == expected
    assert isinstance(options.mrpc_values, tuple)


def test_point_duration_and_counts() -> None:
    options = make_options(point_duration="500ms", requests_per_child=10, measure_children=64, max_children=4096,
                           clients=10000, path="/app?x=1")
    assert (options.point_s, options.requests_per_child, options.measure_children, options.max_children) == (
        0.5, 10, 64, 4096)
    assert (options.clients, options.path) == (10000, "/app?x=1")
    assert make_options(point_duration=2).point_s == 2.0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"ram": "lots"}, "invalid --ram 'lots': use e.g. 512M, 4G"),
    ({"ram": "4"}, "--ram '4' is less than 1 MiB: give a unit, e.g. 4G or 512M"),
    ({"ram": "8M"}, "--ram must be at least 16M, got 8388608 bytes"),
    ({"ram": 1000}, "--ram must be at least 16M"),
    ({"ram": "-1G"}, "invalid --ram '-1G'"),
    ({"p99": "soon"}, "invalid --p99 'soon'"),
    ({"p99": "0"}, "--p99 must be more than 0 and at most 10m, got 0s"),
    ({"p99": "0ms"}, "--p99 must be more than 0"),
    ({"p99": "11m"}, "--p99 must be more than 0 and at most 10m, got 660s"),
    ({"p99": -1.0}, "--p99 must be more than 0"),
    ({"mrpc": "0,ten"}, "invalid --mrpc '0,ten': give whole numbers separated by commas"),
    ({"mrpc": ""}, "invalid --mrpc '': give whole numbers"),
    ({"mrpc": "0,,10"}, "invalid --mrpc '0,,10'"),
    ({"mrpc": "1.5"}, "invalid --mrpc '1.5'"),
    ({"mrpc": "-5"}, "--mrpc needs values >= 0 (0 = unlimited)"),
    ({"mrpc": []}, "--mrpc needs values >= 0"),
    ({"point_duration": "100ms"}, "--point-duration must be between 500ms and 10m, got 0.1s"),
    ({"point_duration": "1h"}, "--point-duration must be between 500ms and 10m, got 3600s"),
    ({"point_duration": "later"}, "invalid --point-duration 'later'"),
    ({"clients": 0}, "--clients must be between 1 and 10000, got 0"),
    ({"clients": 10001}, "--clients must be between 1 and 10000, got 10001"),
    ({"requests_per_child": 9}, "--requests-per-child must be between 10 and 100000, got 9"),
    ({"measure_children": 0}, "--measure-children must be between 1 and 64, got 0"),
    ({"measure_children": 65}, "--measure-children must be between 1 and 64, got 65"),
    ({"max_children": 0}, "--max-children must be between 1 and 4096, got 0"),
    ({"max_children": 4097}, "--max-children must be between 1 and 4096"),
    ({"path": "app"}, "--path must start with / and hold no spaces, got 'app'"),
    ({"path": "/a b"}, "--path must start with / and hold no spaces, got '/a b'"),
    ({"path": ""}, "--path must start with /"),
])
def test_bad_values(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        make_options(**kwargs)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_bad_fractions() -> None:
    for options in (TuneOptions(max_loss=0.0), TuneOptions(max_loss=1.0), TuneOptions(tolerance=0.0),
                    TuneOptions(tolerance=1.5)):
        with pytest.raises(UsageError, match="--max-loss and --tolerance are fractions between 0 and 1"):
            options.validate()


@pytest.mark.usefixtures("machine")
def test_to_dict_from_dict_round_trip() -> None:
    options = make_options(path="/cpu?ms=5", ram="2G", clients=50, p99="300ms", quick=True, mrpc="0,10k,100",
                           max_children=24)
    plain = options.to_dict()
    assert plain["mrpc_values"] == [0, 10000, 100]
    assert plain["ram"] == 2 * GIB and plain["p99_s"] == 0.3 and plain["clients"] == 50
    assert set(plain) == {
        "path", "ram", "clients", "p99_s", "quick", "point_s", "requests_per_child", "measure_children",
        "max_children", "mrpc_values", "max_loss", "tolerance", "safety_margin", "memory_floor", "compare_preload",
        "timeout_s"}
    again = TuneOptions.from_dict(json.loads(json.dumps(plain)))
    assert again == options
    assert isinstance(again.mrpc_values, tuple)
    assert TuneOptions.from_dict(TuneOptions().to_dict()) == TuneOptions()


def test_from_dict_ignores_unknown_keys_and_fills_defaults() -> None:
    got = TuneOptions.from_dict({"clients": 8, "from_a_newer_version": True})
    assert got == TuneOptions(clients=8)
    assert TuneOptions.from_dict({}) == TuneOptions()


def test_from_dict_validates() -> None:
    with pytest.raises(UsageError, match="--clients must be between 1 and 10000, got 0"):
        TuneOptions.from_dict({"clients": 0})
    with pytest.raises(UsageError, match="--mrpc needs values"):
        TuneOptions.from_dict({"mrpc_values": []})


@pytest.mark.parametrize("data", [{"mrpc_values": None}, {"clients": "ten"}, {"p99_s": "300ms"}])
def test_from_dict_wrong_types_are_usage_errors(data: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        TuneOptions.from_dict(data)


# ---------------------------------------------------------------------------------------------
# ResultsDir

MANIFEST = {"tool_version": "0", "started_at": "2024-01-01T00:00:00.000Z", "adapter": {"kind": "gunicorn"},
            "options": {"clients": 4}}


def test_create(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "run"
    results = ResultsDir.create(target, MANIFEST)
    assert results.path == target.resolve()
    assert json.loads((target / "tune.json").read_text()) == {"schema": TUNE_SCHEMA, **MANIFEST}
    assert sorted(p.name for p in target.iterdir()) == ["tune.json"]
    assert results.manifest_path == target / "tune.json"
    assert results.result_path == target / "recommendation.json"
    assert results.servers_dir == target / "servers"


def test_create_in_an_empty_directory(tmp_path: Path) -> None:
    ResultsDir.create(tmp_path, MANIFEST)
    assert (tmp_path / "tune.json").is_file()


def test_create_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    with pytest.raises(UsageError) as caught:
        ResultsDir.create(tmp_path, MANIFEST)
    assert str(caught.value) == (f"the results directory {tmp_path} already exists and is not empty (use --resume "
                                 "to continue a run there, or another --results)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_create_refuses_a_finished_run(tmp_path: Path) -> None:
    ResultsDir.create(tmp_path / "run", MANIFEST)
    before = (tmp_path / "run" / "tune.json").read_text()
    with pytest.raises(UsageError, match="already exists and is not empty"):
        ResultsDir.create(tmp_path / "run", {**MANIFEST, "tool_version": "1"})
    assert (tmp_path / "run" / "tune.json").read_text() == before


def test_create_refuses_a_file(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(UsageError, match="already exists"):
        ResultsDir.create(path, MANIFEST)
    assert path.read_text() == "x"


def test_create_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="cannot create the results directory"):
        ResultsDir.create(tmp_path / "file" / "run", MANIFEST)


def test_open(tmp_path: Path) -> None:
    ResultsDir.create(tmp_path / "run", MANIFEST)
    results, manifest = ResultsDir.open(tmp_path / "run")
    assert results.path == (tmp_path / "run").resolve()
    assert manifest == {"schema": TUNE_SCHEMA, **MANIFEST}


def test_open_without_tune_json(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        ResultsDir.open(tmp_path)
    assert str(caught.value) == f"{tmp_path} is not a pounder tune results directory (no tune.json in it)"
    with pytest.raises(UsageError, match="no tune.json in it"):
        ResultsDir.open(tmp_path / "missing")
    (tmp_path / "tune.json").mkdir()  # not a file
    with pytest.raises(UsageError, match="no tune.json in it"):
        ResultsDir.open(tmp_path)


def test_open_another_document(tmp_path: Path) -> None:
    (tmp_path / "tune.json").write_text(json.dumps({"schema": "pounder/bench-result/1"}))
    with pytest.raises(UsageError, match=re.escape("tune.json is not a pounder/tune/1 document")):
        ResultsDir.open(tmp_path)
    (tmp_path / "tune.json").write_text("[1, 2]")
    with pytest.raises(PounderError, match="does not hold a JSON object"):
        ResultsDir.open(tmp_path)
    (tmp_path / "tune.json").write_text("{")
    with pytest.raises(PounderError, match="is not valid JSON"):
        ResultsDir.open(tmp_path)


POINT = {"step": "children", "params": PoolParams(4).to_dict(), "started_at": "2024-01-01T00:00:01.000Z",
         "finished_at": "2024-01-01T00:00:07.000Z", "summary": {"children": 4, "rps": 1234.5, "p99_ms": 9.75},
         "bench": {"anything": [1, 2, 3]}}


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_save_and_load_point(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    assert results.load_point("children-4") is None
    results.save_point("children-4", POINT)
    loaded = results.load_point("children-4")
    assert loaded == {"schema": POINT_SCHEMA, "key": "children-4", **POINT}
    assert _names(tmp_path / "run" / "points") == ["children-4.json"]  # no temporary file left
    assert (tmp_path / "run" / "points" / "children-4.json").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    assert (tmp_path / "run" / "tune.json").stat().st_mode & 0o777 == 0o644
    assert results.point_path("children-4") == tmp_path / "run" / "points" / "children-4.json"
    # a second save replaces the point whole
    results.save_point("children-4", {**POINT, "summary": {"rps": 1.0}})
    assert results.load_point("children-4")["summary"] == {"rps": 1.0}  # type: ignore[index]
    assert _names(tmp_path / "run" / "points") == ["children-4.json"]


def test_point_keys(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    for key in ("sizes", "sizes-preload-on", "mrpc-4-10000", "spare-before", "children-16"):
        results.point_path(key)
    for bad in ("", "../escape", "Sizes", "-x", "a/b", "a b", "a.json"):
        with pytest.raises(ValueError, match="bad point key"):
            results.point_path(bad)


def test_load_point_checks_its_key_and_schema(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    results.save_point("children-2", POINT)
    (tmp_path / "run" / "points" / "children-2.json").rename(tmp_path / "run" / "points" / "children-8.json")
    with pytest.raises(PounderError, match="is not the pounder/tune-point/1 document of point 'children-8'"):
        results.load_point("children-8")
    (tmp_path / "run" / "points" / "children-1.json").write_text(json.dumps({"key": "children-1"}))
    with pytest.raises(PounderError, match="is not the pounder/tune-point/1 document"):
        results.load_point("children-1")


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    results.save_point("sizes", POINT)
    before = (tmp_path / "run" / "points" / "sizes.json").read_bytes()

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pounder.tune._store.os.replace", fail)
    with pytest.raises(OSError, match="No space left"):
        results.save_point("sizes", {**POINT, "summary": {"rps": 0.0}})
    # the old point is whole, and the temporary file is gone
    assert (tmp_path / "run" / "points" / "sizes.json").read_bytes() == before
    assert _names(tmp_path / "run" / "points") == ["sizes.json"]
    with pytest.raises(OSError):
        results.save_point("children-1", POINT)
    assert _names(tmp_path / "run" / "points") == ["sizes.json"]


def test_write_interrupted_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)

    def interrupt(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("pounder.tune._store.os.fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        results.save_point("sizes", POINT)
    assert _names(tmp_path / "run" / "points") == []
    assert results.load_point("sizes") is None


def test_points_in_run_order(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    assert results.points() == []
    for key, finished in (("sizes", "2024-01-01T00:00:03.000Z"), ("children-1", "2024-01-01T00:00:09.000Z"),
                          ("children-2", "2024-01-01T00:00:05.000Z")):
        results.save_point(key, {**POINT, "finished_at": finished})
    assert [p["key"] for p in results.points()] == ["sizes", "children-2", "children-1"]


def test_save_result(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    results.save_result({"params": {"max_clients": 4}}, "pounder tune: text\n")
    assert json.loads(results.result_path.read_text()) == {"schema": RESULT_SCHEMA, "params": {"max_clients": 4}}
    assert (tmp_path / "run" / "recommendation.txt").read_text() == "pounder tune: text\n"
    assert _names(tmp_path / "run") == ["recommendation.json", "recommendation.txt", "tune.json"]


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
        "",
        "# or on the command line",
        "gunicorn --workers 4 --max-requests 900 --max-requests-jitter 100 --preload wsgi_app:app",
    ])


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
               "parent": {"rss": 120 * MIB, "uss": 20 * MIB, "shared": 100 * MIB, "pss": 60 * MIB},
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
                                  "preload"}
