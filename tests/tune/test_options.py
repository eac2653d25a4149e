"""``pounder tune``'s inputs, without starting a server: :func:`make_options` /
:class:`TuneOptions`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pounder import UsageError
from pounder.tune import TuneOptions, _options, make_options

MIB = 1024 * 1024
GIB = 1024 * MIB


# ---------------------------------------------------------------------------------------------
# make_options / TuneOptions


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 64 GiB, 2-CPU machine: the defaults that depend on the machine are known."""
    monkeypatch.setattr(_options, "mem_total", lambda: 64 * GIB)
    monkeypatch.setattr(_options, "available_cpus", lambda: 2)


@pytest.mark.usefixtures("machine")
def test_defaults() -> None:
    options = make_options()
    assert options == TuneOptions(
        path="/", ram=None, clients=None, p99_s=None, quick=False, point_s=6.0, requests_per_child=200,
        measure_children=4, max_children=64, mrpc_values=(0, 10000, 1000, 100, 10), max_loss=0.02, tolerance=0.05,
        safety_margin=64 * GIB // 20, memory_floor=64 * GIB // 50, compare_preload=True, timeout_s=30.0, life=2000)


@pytest.mark.usefixtures("machine")
def test_the_life_is_ten_times_the_requests_per_child_off_with_quick_and_off_in_a_stored_run() -> None:
    assert make_options(requests_per_child=50).life == 500
    assert make_options(quick=True).life == 0
    assert make_options(quick=True, life=300).life == 300
    assert make_options(life=0).life == 0
    stored = make_options().to_dict()
    del stored["life"]  # a run stored by an earlier pounder
    assert TuneOptions.from_dict(stored).life == 0
    with pytest.raises(UsageError, match=r"^--life must be 0 \(off\) or between 10 and 1000000 requests per child, "
                                         r"got 5$"):
        make_options(life=5)


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
    assert options.life == 0  # the life measurement is off: quick is short


@pytest.mark.usefixtures("machine")
def test_quick_with_explicit_values() -> None:
    options = make_options(quick=True, point_duration="5s", requests_per_child=50, mrpc="0,500",
                           compare_preload=True)
    assert (options.point_s, options.requests_per_child, options.mrpc_values, options.compare_preload) == (
        5.0, 50, (0, 500), True)


def test_small_machine_margins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_options, "mem_total", lambda: 2 * GIB)
    monkeypatch.setattr(_options, "available_cpus", lambda: 1)  # the affinity mask holds one CPU at least
    options = make_options()
    assert options.safety_margin == 256 * MIB and options.memory_floor == 256 * MIB  # the floors
    assert options.max_children == 32  # 32 per CPU, one CPU when unknown


def test_max_children_default_at_least_16(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_options, "available_cpus", lambda: 1)
    assert make_options().max_children == 32
    monkeypatch.setattr(_options, "available_cpus", lambda: 8)
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
    ({"point_duration": "1h"}, "--point-duration must be between 500ms and 10m, got 3,600s"),
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
        "path", "ram", "ram_source", "clients", "p99_s", "quick", "point_s", "requests_per_child", "measure_children",
        "max_children", "mrpc_values", "max_loss", "tolerance", "safety_margin", "memory_floor", "compare_preload",
        "timeout_s", "trials", "targets", "traffic", "keepalive", "throttle", "proxy", "peak_rate", "peak_source",
        "server_cpus", "load_cpus", "confirm", "listen", "allow_remote", "profile", "cpus", "cpus_source",
        "sweep_threads", "life"}
    again = TuneOptions.from_dict(json.loads(json.dumps(plain)))
    assert again == options
    assert isinstance(again.mrpc_values, tuple)
    assert TuneOptions.from_dict(TuneOptions().to_dict()) == TuneOptions()
    assert options.sweep_threads and not make_options(sweep_threads=False).sweep_threads
    # a run stored before tune compared workers x threads: measured with one thread per worker
    plain.pop("sweep_threads")
    assert TuneOptions.from_dict(plain).sweep_threads is False


@pytest.mark.usefixtures("machine")
def test_listen() -> None:
    assert make_options().listen == "127.0.0.1"
    options = make_options(listen="127.0.0.2")
    assert (options.listen, options.allow_remote) == ("127.0.0.2", False)
    assert TuneOptions.from_dict(json.loads(json.dumps(options.to_dict()))) == options
    older = {k: v for k, v in options.to_dict().items() if k not in ("listen", "allow_remote")}
    assert TuneOptions.from_dict(older).listen == "127.0.0.1"  # a manifest written before --listen
    with pytest.raises(UsageError, match="--listen 192.0.2.1 would open the server under test to the network"):
        make_options(listen="192.0.2.1")
    with pytest.raises(UsageError, match="--listen 192.0.2.1: not an address of this machine"):
        make_options(listen="192.0.2.1", allow_remote=True)
    with pytest.raises(UsageError, match="would open the server under test"):
        TuneOptions(listen="192.0.2.1").validate()
    with pytest.raises(UsageError, match="listen must be an IPv4 address, not int"):
        TuneOptions(listen=1).validate()  # type: ignore[arg-type]


@pytest.mark.usefixtures("machine")
def test_traffic_and_target_options_round_trip(tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("3 http://example.test:80/a?x=1\nHEAD http://127.0.0.1/b\n")
    options = make_options(urls=urls, keepalive=True, throttle="56kbit", proxy=False, peak_rate="200/s",
                           trials=4, server_cpus=[0], load_cpus=[1], confirm=False)
    assert options.targets == ((3, "GET", "/a?x=1"), (1, "HEAD", "/b"))
    assert options.peak_rate == 200.0 and options.peak_source == "--peak-rate"
    assert TuneOptions.from_dict(json.loads(json.dumps(options.to_dict()))) == options


@pytest.mark.usefixtures("machine")
def test_an_access_log_gives_the_mix_and_its_busiest_second_as_the_target(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    lines = []
    for second, count in ((0, 3), (1, 7), (2, 2)):
        for i in range(count):
            path = "/a" if i % 2 == 0 else "/b?q=1"
            lines.append(f'127.0.0.1 - - [23/Nov/2026:10:00:0{second} +0000] "GET {path} HTTP/1.1" 200 5 "-" "t"')
    log.write_text("\n".join(lines) + "\n")
    options = make_options(access_log=log)
    assert options.peak_rate == 7.0 and "busiest second" in (options.peak_source or "")
    assert dict(((m, p), w) for w, m, p in options.targets) == {("GET", "/a"): 7, ("GET", "/b?q=1"): 5}
    assert options.traffic
    # a target given outright wins over the log's peak
    assert make_options(access_log=log, clients=8).peak_rate is None


@pytest.mark.usefixtures("machine")
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"exclude_static": True}, "--exclude-static is for --access-log"),
    ({"clients": 4, "peak_rate": 100.0}, "give one target"),
    ({"proxy": False}, "--no-proxy says slow or kept-alive clients"),
    ({"server_cpus": "0", "load_cpus": "0"}, "must not share a CPU"),
    ({"trials": 2}, "--trials must be between 3 and 20"),
    ({"throttle": "fast", "proxy": False}, "--throttle"),
    ({"throttle": "56kbit"}, "--throttle (slow clients) needs --no-proxy"),
    ({"peak_rate": "lots"}, "--peak-rate"),
])
def test_bad_traffic_options(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        make_options(**kwargs)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_from_dict_ignores_unknown_keys_and_fills_defaults() -> None:
    got = TuneOptions.from_dict({"clients": 8, "from_a_newer_version": True})
    assert got == TuneOptions(clients=8, sweep_threads=False)  # stored before shapes: none were compared
    assert TuneOptions.from_dict({}) == TuneOptions(sweep_threads=False)


def test_from_dict_validates() -> None:
    with pytest.raises(UsageError, match="--clients must be between 1 and 10000, got 0"):
        TuneOptions.from_dict({"clients": 0})
    with pytest.raises(UsageError, match="--mrpc needs values"):
        TuneOptions.from_dict({"mrpc_values": []})


@pytest.mark.parametrize("data", [{"mrpc_values": None}, {"clients": "ten"}, {"p99_s": "300ms"}])
def test_from_dict_wrong_types_are_usage_errors(data: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        TuneOptions.from_dict(data)


def test_a_load_that_sets_what_tune_chooses_is_refused() -> None:
    """TuneOptions holds a LoadOptions for the three load options tune takes (keepalive, throttle,
    allow_remote); any other field set there would be dropped from tune.json and never used."""
    from pounder.load import LoadOptions

    TuneOptions(load=LoadOptions(keepalive=True, allow_remote=True)).validate()
    options = TuneOptions(load=LoadOptions(keepalive=True, throttle="56kbit"), proxy=False)
    options.validate()
    assert TuneOptions.from_dict(json.loads(json.dumps(options.to_dict()))) == options
    with pytest.raises(UsageError, match=r"^load: tune takes only keepalive, throttle and allow_remote .*; "
                                         r"not connections, duration$"):
        TuneOptions(load=LoadOptions(connections=50, duration="30s")).validate()
