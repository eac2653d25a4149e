"""Experiment files: the shipped examples load; every mistake is one line naming file, line and key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pounder import UsageError
from pounder.agents import Cluster
from pounder.experiment import ExperimentError, ExperimentResult, LoadSpec, load_experiment, run_experiment
from pounder.experiment._file import server_adapter
from pounder.experiment._profiles import params_of
from pounder.pool import PoolParams
from support.cliutil import run_pounder
from support.forkrun import run_forked
from support.schemas import validate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "experiments"
GOOD = """\
title = "t"

[server]
adapter = "gunicorn"
app = "wsgi_app:app"
workers = 2

[[load]]
connections = 4
duration = "1s"

[[variant]]
label = "a"
path = "/"

[[variant]]
label = "b"
path = "/cpu?ms=1"
"""


def _with_io(value: str) -> str:
    """GOOD with ``io = value`` after its load's duration (line 11)."""
    return GOOD.replace('duration = "1s"\n', f'duration = "1s"\nio = "{value}"\n')


def test_a_load_takes_the_io_path(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD)
    assert load_experiment(path).loads[0].options().io == "auto"
    path.write_text(_with_io("epoll"))
    assert load_experiment(path).loads[0].options().io == "epoll"
    path.write_text(_with_io("kqueue"))
    with pytest.raises(ExperimentError, match=r":11: load\[0\]\.io: expected auto, uring or epoll, got 'kqueue'$"):
        load_experiment(path)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_shipped_experiments_load(path: Path) -> None:
    exp = load_experiment(path)
    assert exp.title and len(exp.variants) >= 2 and exp.loads
    assert exp.server.conf is None or exp.server.conf.is_file()


def test_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD)
    exp = load_experiment(path)
    assert [v.label for v in exp.variants] == ["a", "b"] and exp.baseline == "a"
    assert exp.server.workers == 2 and exp.loads[0].duration == "1s" and exp.loads[0].trials == 5
    assert exp.record == ("rps", "latency", "cpu", "memory")


@pytest.mark.parametrize(("old", "new", "line", "fragment"), [
    ('adapter = "gunicorn"', 'adapter = "nginx"', 4, "server.adapter: unknown adapter 'nginx'"),
    ('app = "wsgi_app:app"\n', "", 3, "server: missing key 'app'"),
    ("workers = 2", 'workers = "two"', 6, "server.workers: expected a whole number, got 'two'"),
    ("workers = 2", "workers = true", 6, "server.workers: expected a whole number, got True"),
    ("workers = 2", "workers = 0", 6, "server.workers: must be between 1 and 1024, got 0"),
    ("connections = 4", "connections = 4\nthreads = 2", 10, "load[0].threads: unknown key"),
    ('duration = "1s"\n', "", 8, "load[0]: give 'requests' or 'duration'"),
    ('label = "b"', "label = 7", 17, "variant[1].label: expected a string, got 7"),
    ('label = "b"', 'label = "a"', 17, "variant[1].label: the label 'a' is used twice"),
    ('path = "/cpu?ms=1"', 'path = "cpu"', 18, "variant[1].path: must start with /"),
    ('path = "/cpu?ms=1"', 'path = "/x"\nconfig = "Foo 1"', 19, "variant[1].config: config lines are for the apache"),
    ('title = "t"', 'title = "t"\nbaseline = "zz"', 2, "baseline: no variant is labelled 'zz'"),
    ('title = "t"', "title = 5", 1, "title: expected a string, got 5"),
    ('title = "t"\n', "", 1, "missing key 'title'"),
    ('[server]', '[server', 3, "invalid TOML"),
])
def test_mistakes_name_file_line_and_key(tmp_path: Path, old: str, new: str, line: int, fragment: str) -> None:
    path = tmp_path / "e.toml"
    assert old in GOOD
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message and "\n" not in message


RATE = 'duration = "1s"\nrate = '
BAD_LOADS_AND_VARIANTS = [  # (old, new, line, the message after "FILE:LINE: ")
    ('duration = "1s"', 'duration = "abc"', 10, "load[0].duration: invalid duration 'abc' (use e.g. 30s"),
    ('duration = "1s"', 'duration = "-3s"', 10, "load[0].duration: invalid duration '-3s'"),
    ('duration = "1s"', 'duration = "0s"', 10, "load[0].duration: duration must be more than 0 and at most 24h, "
                                             "got 0s"),
    ('duration = "1s"', 'duration = "100000h"', 10, "load[0].duration: duration must be more than 0 and at most 24h"),
    ('duration = "1s"', 'duration = 5', 10, "load[0].duration: expected a string, got 5"),
    ('duration = "1s"', RATE + "-5", 11, "load[0].rate: rate must be between 0 and 10,000,000 req/s, got -5"),
    ('duration = "1s"', RATE + "0", 11, "load[0].rate: rate must be more than 0"),
    ('duration = "1s"', RATE + "nan", 11, "load[0].rate: rate must be between 0 and 10,000,000 req/s, got nan"),
    ('duration = "1s"', RATE + "inf", 11, "load[0].rate: rate must be between 0 and 10,000,000 req/s, got inf"),
    ('duration = "1s"', RATE + "2e7", 11, "load[0].rate: rate must be between 0 and 10,000,000 req/s"),
    ('duration = "1s"', RATE + '"fast"', 11, "load[0].rate: expected a whole number or a number, got 'fast'"),
    ('duration = "1s"', "requests = 100000000\nrate = 1", 8, "load[0]: rate stage length must be more than 0 and "
                                                            "at most 24h"),
    ("connections = 4", "connections = 0", 9, "load[0].connections: must be between 1 and 10000, got 0"),
    ("connections = 4", "connections = -1", 9, "load[0].connections: must be between 1 and 10000, got -1"),
    ("connections = 4", "connections = 99999999999", 9, "load[0].connections: must be between 1 and 10000"),
    ('duration = "1s"', "requests = 0", 10, "load[0].requests: must be between 1 and 100000000, got 0"),
    ("connections = 4", "connections = 4\ntrials = 2", 10, "load[0].trials: must be between 3 and 100, got 2"),
    ("connections = 4", "connections = 4\ntrials = 101", 10, "load[0].trials: must be between 3 and 100, got 101"),
    ("connections = 4", 'connections = 4\nkeepalive = "yes"', 10, "load[0].keepalive: expected true or false"),
    ('label = "a"', 'label = ""', 13, "variant[0].label: invalid label '': it must be printable text"),
    ('label = "a"', 'label = " a"', 13, "variant[0].label: invalid label ' a'"),
    ('label = "a"', 'label = "tab\\there"', 13, "variant[0].label: invalid label 'tab\\there'"),
    ('label = "a"', f'label = "{"x" * 61}"', 13, "variant[0].label: label 'xxx"),
    ('path = "/"', 'path = ""', 14, "variant[0].path: must start with /, got ''"),
    ('path = "/"', 'path = "cpu"', 14, "variant[0].path: must start with /, got 'cpu'"),
    ('label = "b"', 'label = "a"', 17, "variant[1].label: the label 'a' is used twice"),
    ('title = "t"', 'title = "t"\nbaseline = "c"', 2, "baseline: no variant is labelled 'c'"),
]


@pytest.mark.parametrize(("old", "new", "line", "message"), BAD_LOADS_AND_VARIANTS)
def test_bad_loads_and_variants_are_one_line_with_file_line_and_key(tmp_path: Path, old: str, new: str, line: int,
                                                                      message: str) -> None:
    """The loads are checked as bench checks its options (pounder.LoadOptions), named by their keys."""
    path = tmp_path / "e.toml"
    assert old in GOOD
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    text = str(caught.value)
    assert text.startswith(f"{path}:{line}: {message}"), text
    assert "\n" not in text and "--" not in text and "-d" not in text


def test_too_many_variants(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD + "".join(f'\n[[variant]]\nlabel = "v{n}"\npath = "/"\n' for n in range(19)))
    with pytest.raises(ExperimentError, match=r":12: variant: at most 20 \[\[variant\]\] tables .* got 21"):
        load_experiment(path)


@pytest.mark.parametrize(("old", "new", "expected"), [
    ('duration = "1s"', 'duration = "abc"', ":10: load[0].duration: invalid duration 'abc'"),
    ('duration = "1s"', RATE + "nan", ":11: load[0].rate: rate must be between 0 and 10,000,000 req/s, got nan"),
    ('duration = "1s"', 'duration = "0s"', ":10: load[0].duration: duration must be more than 0"),
    ('label = "a"', 'label = ""', ":13: variant[0].label: invalid label ''"),
])
def test_cli_bad_load_or_label_is_one_line_before_any_directory(tmp_path: Path, old: str, new: str,
                                                                expected: str) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD.replace(old, new, 1))
    done = run_forked("run", path, timeout=60, cwd=tmp_path)  # as python -m pounder (tests/support/forkrun.py)
    assert done.returncode == 2
    assert done.stderr.startswith(f"pounder: error: {path}{expected}") and done.stderr.count("\n") == 1, done.stderr
    assert done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.toml"]  # no pounder-run-* directory


def test_run_experiment_checks_a_hand_built_load_before_any_directory(tmp_path: Path) -> None:
    """An Experiment built in code (not by load_experiment) is checked too, before its results directory."""
    path = tmp_path / "e.toml"
    path.write_text(GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"\nworkers = 2\n', 'adapter = "url"\n')
                    .replace('path = "/"', 'url = "http://127.0.0.1:1/a"')
                    .replace('path = "/cpu?ms=1"', 'url = "http://127.0.0.1:1/b"'))
    exp = dataclasses.replace(load_experiment(path), loads=(LoadSpec(duration="0s"),))
    with pytest.raises(UsageError, match="-d/--duration must be more than 0"):
        run_experiment(exp, tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_one_variant_is_not_a_comparison(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD[: GOOD.index('[[variant]]\nlabel = "b"')])
    with pytest.raises(ExperimentError, match=r":12: variant: at least two"):
        load_experiment(path)


def test_cli_bad_file_is_one_line_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD.replace("workers = 2", 'workers = "two"'))
    done = run_pounder("run", path, timeout=60, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"pounder: error: {path}:6: server.workers: expected a whole number, got 'two'\n"
    assert not list(tmp_path.glob("pounder-run-*"))


def test_run_experiment_with_more_agents_than_a_load_has_connections_stops_before_anything(tmp_path: Path) -> None:
    """Each agent needs a connection of its own: refused before a server starts or a cluster is
    contacted (there is none at 127.0.0.1:1)."""
    path = tmp_path / "e.toml"
    path.write_text(GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"\nworkers = 2\n', 'adapter = "url"\n')
                    .replace('path = "/"', 'url = "http://127.0.0.1:1/a"')
                    .replace('path = "/cpu?ms=1"', 'url = "http://127.0.0.1:1/b"'))
    exp = dataclasses.replace(load_experiment(path), loads=(LoadSpec(connections=2, requests=100),))
    with pytest.raises(UsageError, match=r"^load 1 \(NC 2, NR 100\): 3 agents need at least 3 connections"):
        run_experiment(exp, tmp_path / "results", sender=Cluster("127.0.0.1:1", agents=3))
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("value", ["[" * 5000 + "]" * 5000, "{a=" * 5000 + "1" + "}" * 5000])
def test_a_file_nested_too_deeply_is_bad_input(tmp_path: Path, value: str) -> None:
    """tomllib recurses once per level: a RecursionError was a traceback (issue 25's families)."""
    path = tmp_path / "e.toml"
    path.write_text(f'title = "t"\nx = {value}\n')
    with pytest.raises(ExperimentError, match="nested too deeply") as caught:
        load_experiment(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


COMMAND = GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"\n', 'adapter = "command"\ncommand = "srv {port}"\n')


@pytest.mark.parametrize(("text", "old", "new", "line", "message"), [
    (COMMAND, "workers = 2", "workers = 2\npreload = true", 7,
     "server.preload: preload is for gunicorn, starman, puma, unicorn and uwsgi only"),
    (COMMAND, "workers = 2", "workers = 2\npythonpath = \"x\"", 7,
     "server.pythonpath: pythonpath is for gunicorn and uwsgi only"),
    (COMMAND, 'label = "b"', 'label = "b"\npreload = false', 18, "variant[1].preload: preload is for gunicorn, "
                                                                  "starman, puma, unicorn and uwsgi only"),
    (GOOD, "workers = 2", "workers = 2\nstop_signal = \"INT\"", 7, "server.stop_signal: unknown key"),
    (GOOD, "workers = 2", "workers = 2\nthreads = 4", 7, "server.threads: threads is for puma only"),
    (GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"\n', 'adapter = "url"\n'), "workers = 2",
     "preload = true", 5, "server.preload: with adapter 'url' pounder starts no server: preload would change nothing"),
])
def test_server_options_follow_what_each_adapter_declares(tmp_path: Path, text: str, old: str, new: str, line: int,
                                                          message: str) -> None:
    """[server] and [[variant]] take the options the adapter declares (pounder.pool.SERVER_OPTIONS,
    Adapter.options), as the command line does; a setting it would ignore is refused (issue 26)."""
    path = tmp_path / "e.toml"
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert str(caught.value).startswith(f"{path}:{line}: {message}"), str(caught.value)


APPS = Path(__file__).resolve().parents[1] / "apps"


@pytest.mark.parametrize(("server", "field", "value"), [
    ('adapter = "puma"\nrackup = "RACK"', "rackup", APPS / "rack_app.ru"),
    ('adapter = "unicorn"\nrackup = "RACK"\npreload = true', "rackup", APPS / "rack_app.ru"),
    ('adapter = "uwsgi"\napp = "wsgi_app:app"\npythonpath = "APPS"', "app", "wsgi_app:app"),
    ('adapter = "php-fpm"\nconf = "POOL"\nroot = "PHP"', "conf", APPS / "php" / "pool.conf"),
])
def test_every_server_takes_its_target_from_the_file(tmp_path: Path, server: str, field: str, value: object) -> None:
    """Each server's target by its TARGET_FIELDS name, files relative to the experiment file;
    preload not given is the server's own default (None)."""
    text = (server.replace("RACK", str(APPS / "rack_app.ru")).replace("APPS", str(APPS))
            .replace("POOL", str(APPS / "php" / "pool.conf")).replace("PHP", str(APPS / "php")))
    path = tmp_path / "e.toml"
    path.write_text(GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"', text))
    spec = load_experiment(path).server
    assert getattr(spec, field) == value
    assert spec.preload is (True if "preload = true" in server else None)
    assert spec.root == (APPS / "php" if "root" in server else None)
    assert spec.threads is None


@pytest.mark.parametrize(("given", "stored"), [("4", "4,4"), ('"1,4"', "1,4"), ('"2:2"', "2,2")])
def test_puma_threads_from_the_file(tmp_path: Path, given: str, stored: str) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"',
                                 f'adapter = "puma"\nrackup = "{APPS / "rack_app.ru"}"\nthreads = {given}'))
    assert load_experiment(path).server.threads == stored


def test_puma_variants_compare_threads_each_on_its_own_server(tmp_path: Path) -> None:
    """threads in a [[variant]] (a server of its own: threads 1 against 4, interleaved); another
    server's variant may not give it."""
    path = tmp_path / "e.toml"
    text = GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"',
                        f'adapter = "puma"\nrackup = "{APPS / "rack_app.ru"}"\nthreads = 1')
    text = text.replace('label = "b"', 'label = "b"\nthreads = "4"', 1)
    path.write_text(text)
    experiment = load_experiment(path)
    assert experiment.server.threads == "1,1"
    first, second = experiment.variants
    assert (first.threads, second.threads) == (None, "4,4") and first.server_key() != second.server_key()
    assert experiment.to_dict()["variants"][1]["threads"] == "4,4"
    path.write_text(GOOD.replace('label = "b"', 'label = "b"\nthreads = 4', 1))
    with pytest.raises(ExperimentError, match=r"e.toml:\d+: variant\[1\].threads: threads is for puma only"):
        load_experiment(path)


def test_puma_fork_worker_from_the_file_each_variant_on_its_own_server(tmp_path: Path) -> None:
    """fork_worker in [server] and in a [[variant]] (a server of its own), handed to Puma's adapter;
    refused for another server and out of range, with the file's line."""
    path = tmp_path / "e.toml"
    text = GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"',
                        f'adapter = "puma"\nrackup = "{APPS / "rack_app.ru"}"\nfork_worker = 0')
    path.write_text(text.replace('label = "b"', 'label = "b"\nfork_worker = 300', 1))
    experiment = load_experiment(path)
    assert experiment.server.fork_worker == 0
    first, second = experiment.variants
    assert (first.fork_worker, second.fork_worker) == (None, 300) and first.server_key() != second.server_key()
    assert experiment.to_dict()["server"]["fork_worker"] == 0
    assert experiment.to_dict()["variants"][1]["fork_worker"] == 300
    adapters = [server_adapter(experiment, variant) for variant in experiment.variants]
    assert [adapter.fork_worker for adapter in adapters] == [0, 300]  # type: ignore[attr-defined]
    path.write_text(GOOD.replace('label = "b"', 'label = "b"\nfork_worker = 300', 1))
    with pytest.raises(ExperimentError, match=r"e.toml:\d+: variant\[1\].fork_worker: fork_worker is for puma only"):
        load_experiment(path)
    path.write_text(text.replace("fork_worker = 0", "fork_worker = -1"))
    with pytest.raises(ExperimentError, match=r"e.toml:6: server.fork_worker: must be between 0 and 1000000000"):
        load_experiment(path)


@pytest.mark.parametrize("given", ['"4,1"', "0", "true", "[1, 4]"])
def test_bad_puma_threads_in_the_file_are_named(tmp_path: Path, given: str) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"',
                                 f'adapter = "puma"\nrackup = "{APPS / "rack_app.ru"}"\nthreads = {given}'))
    with pytest.raises(ExperimentError, match=r"e.toml:\d+: server.threads: "):
        load_experiment(path)


def test_a_root_that_is_not_a_directory_is_named(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"',
                                 f'adapter = "php-fpm"\nconf = "{APPS / "php" / "pool.conf"}"\nroot = "nowhere"'))
    with pytest.raises(ExperimentError, match=r"e.toml:\d+: server.root: no such directory nowhere"):
        load_experiment(path)


def test_spare_settings_for_servers_that_start_children_on_demand(tmp_path: Path) -> None:
    """start_servers, min_spare, max_spare in [server] and [[variant]] (php-fpm's stock pm = dynamic
    against a fixed pool, each on its own server); the pool each server runs takes the variant's,
    else the server's; stored in experiment.json as the schema says; refused for a server that
    starts every child at once, and min_spare above max_spare is named."""
    path = tmp_path / "e.toml"
    php = f'adapter = "php-fpm"\nconf = "{APPS / "php" / "pool.conf"}"\nroot = "{APPS / "php"}"\nmin_spare = 1'
    text = GOOD.replace('adapter = "gunicorn"\napp = "wsgi_app:app"', php)
    text = text.replace('label = "b"', 'label = "b"\nworkers = 40\nstart_servers = 2\nmax_spare = 3', 1)
    path.write_text(text.replace('"/cpu?ms=1"', '"/cpu.php"'))
    exp = load_experiment(path)
    first, second = exp.variants
    assert (exp.server.start_servers, exp.server.min_spare, exp.server.max_spare) == (None, 1, None)
    assert (second.start_servers, second.min_spare, second.max_spare) == (2, None, 3)
    assert first.server_key() != second.server_key()
    assert params_of(exp, first) == PoolParams(2, min_spare=1)
    assert params_of(exp, second) == PoolParams(40, start_servers=2, min_spare=1, max_spare=3)
    validate({"schema": "pounder/experiment/1", "tool_version": "0", "started_at": "2026-01-01T00:00:00Z",
              "quick": False, "experiment": exp.to_dict()}, "experiment")
    path.write_text(GOOD.replace('label = "b"', 'label = "b"\nstart_servers = 2', 1))
    with pytest.raises(ExperimentError, match=r"e.toml:18: variant\[1\].start_servers: gunicorn starts every child "
                                              r"at once: spare settings are for the servers that start them on "
                                              r"demand \(apache, php-fpm, uwsgi\)$"):
        load_experiment(path)
    path.write_text(text.replace("max_spare = 3", "min_spare = 5\nmax_spare = 3"))
    with pytest.raises(ExperimentError, match=r"e.toml:\d+: variant\[1\].max_spare: must be at least min_spare"):
        load_experiment(path)


def test_the_memory_table_says_the_requests_sent(tmp_path: Path) -> None:
    """``pounder run``'s children's memory: the requests sent to each variant's server after the
    warm-up and after the loads beside the figures; "-" for a run written before they were."""
    path = tmp_path / "e.toml"
    path.write_text(GOOD)
    mib = 1 << 20

    def sizes(uss: int, requests: int | None) -> dict[str, int]:
        figures = {"children": 2, "max_child_uss": uss * mib, "median_child_shared": 40 * mib,
                   "max_child_rss": (uss + 40) * mib, "footprint": 100 * mib, "parent_rss": 30 * mib}
        return figures if requests is None else {**figures, "requests": requests}

    memory = {"a": {"warm": sizes(5, 1828), "after": sizes(20, 9828)},
              "b": {"warm": sizes(5, None), "after": sizes(6, None)}}
    text = ExperimentResult(load_experiment(path), [], memory, tmp_path).render()
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.startswith(("  a ", "  b "))}
    assert rows["a"] == ["2", "1,828", "->", "9,828", "5.0", "->", "20.0", "40.0", "->", "40.0", "100.0", "->",
                         "100.0"]
    assert rows["b"] == ["2", "-", "5.0", "->", "6.0", "40.0", "->", "40.0", "100.0", "->", "100.0"]
