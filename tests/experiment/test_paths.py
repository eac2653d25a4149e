"""Every path in an experiment file is read relative to the file (issue 39, item 13): a uWSGI
``app = "x.ini"`` was read from the current directory; what a server's adapter refuses is named with
the file, the line and the key; its hints name the file's keys (``pythonpath = "DIR"``), never a
command-line flag. The ini is served by a real uWSGI; the hints come from the real module search."""

from __future__ import annotations

from pathlib import Path

import pytest

from pounder.experiment import ExperimentError, load_experiment
from pounder.experiment._file import server_adapter
from pounder.pool import PoolParams
from pounder.servers import gunicorn_missing, uwsgi_missing
from support.cliutil import run_pounder
from support.srvutil import get

APPS = Path(__file__).resolve().parents[1] / "apps"
TEXT = """\
title = "t"

[server]
adapter = "ADAPTER"
TARGET
workers = 1

[[load]]
connections = 2
duration = "1s"

[[variant]]
label = "a"
path = "/"

[[variant]]
label = "b"
path = "/cpu?ms=1"
"""


def _experiment(tmp_path: Path, adapter: str, target: str) -> Path:
    """``tmp_path/exp/e.toml`` (with a wsgi_app.py beside it) naming ``target`` in [server] (line 5)."""
    folder = tmp_path / "exp"
    folder.mkdir(exist_ok=True)
    (folder / "wsgi_app.py").write_text((APPS / "wsgi_app.py").read_text())
    path = folder / "e.toml"
    path.write_text(TEXT.replace("ADAPTER", adapter).replace("TARGET", target))
    return path


def _run(path: Path, cwd: Path) -> tuple[int, str]:
    done = run_pounder("run", path, timeout=120, cwd=cwd)
    return done.returncode, done.stderr


@pytest.mark.skipif(uwsgi_missing() is not None, reason=str(uwsgi_missing()))
def test_a_uwsgi_ini_is_read_beside_the_experiment_and_served(tmp_path: Path) -> None:
    """``app = "site.ini"`` from another directory: the ini beside the file is the one uWSGI serves."""
    path = _experiment(tmp_path, "uwsgi", 'app = "site.ini"')
    (path.parent / "site.ini").write_text("[uwsgi]\npythonpath = %d\nmodule = wsgi_app:app\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "site.ini").write_text("[uwsgi]\nmodule = not_this_one:app\n")  # the current directory's
    exp = load_experiment(path)
    assert exp.server.app == str(path.parent / "site.ini")
    adapter = server_adapter(exp, exp.variants[0])
    assert adapter.input_files() == [("ini file", str(path.parent / "site.ini"))]
    server = adapter.server(PoolParams(1), tmp_path / "workdir")
    try:
        server.start(timeout_s=30)
        assert get(server.url + "/") == "hello\n"
    finally:
        server.stop()
    # a missing ini is named with its line
    path.with_name("missing.toml").write_text(path.read_text().replace("site.ini", "gone.ini"))
    code, err = _run(path.with_name("missing.toml"), elsewhere)
    assert code == 2 and err == (f"pounder: error: {path.with_name('missing.toml')}:5: server.app: no such file "
                                 f"gone.ini (paths are relative to the experiment file, {path.parent})\n")
    assert list(elsewhere.iterdir()) == [elsewhere / "site.ini"]  # no results directory


@pytest.mark.skipif(uwsgi_missing() is not None, reason=str(uwsgi_missing()))
def test_what_the_adapter_refuses_names_file_line_and_key_in_the_files_words(tmp_path: Path) -> None:
    """A module uWSGI cannot find (the real search on the system Python's path): FILE:LINE: KEY,
    the pythonpath named as the file writes it, before anything is created."""
    path = _experiment(tmp_path, "uwsgi", 'app = "no_such_module:app"\npythonpath = "."')
    code, err = _run(path, tmp_path)
    assert code == 2, err
    assert err.startswith(f"pounder: error: {path}:6: server.pythonpath: uwsgi: cannot find the module "
                          f"'no_such_module' of no_such_module:app in pythonpath = \"{path.parent}\", "), err
    assert "--" not in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp"]
    path.write_text(path.read_text().replace('pythonpath = "."', 'pythonpath = "nowhere"'))
    with pytest.raises(ExperimentError, match=r"e\.toml:6: server\.pythonpath: no such directory nowhere "):
        load_experiment(path)


@pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))
def test_the_missing_module_hint_names_the_key_in_a_file_and_the_flag_on_the_command_line(tmp_path: Path) -> None:
    path = _experiment(tmp_path, "gunicorn", 'app = "no_such_module:app"')
    code, err = _run(path, tmp_path)
    assert code == 2
    assert err == (f"pounder: error: {path}:5: server.app: gunicorn: cannot find the module 'no_such_module' of "
                   "no_such_module:app on PYTHONPATH or in site-packages (gunicorn runs in a directory of its own: "
                   "give pythonpath = \"DIR\" for a module there)\n")
    done = run_pounder("tune", "gunicorn", "no_such_module:app", timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and "give --pythonpath DIR for a module there" in done.stderr, done.stderr


@pytest.mark.parametrize("value", ["a\\u0000b", "x" * 5000])
def test_a_path_the_system_cannot_use_is_one_line(tmp_path: Path, value: str) -> None:
    path = _experiment(tmp_path, "starman", f'psgi = "{value}"')
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert str(caught.value).startswith(f"{path}:5: server.psgi: ") and "\n" not in str(caught.value)
