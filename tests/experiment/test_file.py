"""Experiment files: the shipped examples load; every mistake is one line naming file, line and key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pounder.experiment import ExperimentError, load_experiment

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


def test_one_variant_is_not_a_comparison(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD[: GOOD.index('[[variant]]\nlabel = "b"')])
    with pytest.raises(ExperimentError, match=r":12: variant: at least two"):
        load_experiment(path)


def test_cli_bad_file_is_one_line_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(GOOD.replace("workers = 2", 'workers = "two"'))
    done = subprocess.run([sys.executable, "-m", "pounder", "run", str(path)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr == f"pounder: error: {path}:6: server.workers: expected a whole number, got 'two'\n"
    assert not list(tmp_path.glob("pounder-run-*"))
