"""A message names only options the command has: the hints of shared code (the results
directory, the loopback rule, finding the server) are in each command's own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import cliutil
from support.cliutil import assert_usage_error

URL = "http://127.0.0.1:9/"


def _experiment(folder: Path, url: str) -> Path:
    path = folder / "e.toml"
    path.write_text(f'title = "t"\n[server]\nadapter = "url"\n[[load]]\nrequests = 10\n'
                    f'[[variant]]\nlabel = "a"\nurl = "{url}"\n[[variant]]\nlabel = "b"\nurl = "{URL}"\n')
    return path


def test_run_into_an_existing_results_directory_does_not_suggest_resume(tmp_path: Path) -> None:
    results = tmp_path / "r"
    results.mkdir()
    (results / "x").write_text("kept")
    line = assert_usage_error(*cliutil.run_cli("run", str(_experiment(tmp_path, URL)), "--results", str(results)),
                              "already exists and is not empty (give another --results)")  # fmt: skip
    assert "--resume" not in line


def test_a_remote_url_in_an_experiment_names_its_line_before_anything_starts(tmp_path: Path) -> None:
    path = _experiment(tmp_path, "http://10.1.2.3/")
    results = tmp_path / "r"
    line = assert_usage_error(*cliutil.run_cli("run", str(path), "--results", str(results)),
                              f"{path}:8: variant[0].url: 10.1.2.3 is not a loopback address (127.0.0.0/8 or ::1): "
                              "experiments load this machine only")  # fmt: skip
    assert "--allow-remote" not in line
    assert not results.exists()


def test_a_bad_url_in_an_experiment_names_its_line(tmp_path: Path) -> None:
    path = _experiment(tmp_path, "ftp://127.0.0.1/")
    assert_usage_error(*cliutil.run_cli("run", str(path)), f"{path}:8: variant[0].url: invalid URL 'ftp://127.0.0.1/'")


@pytest.mark.parametrize(("args", "fragment"), [
    (["bench", "--server-pid", "0", URL], "--server-pid must be a positive process id, got 0"),
    (["compare", "--server-pid", "0", URL, URL + "b"], "--server-pid must be a positive process id, got 0"),
    (["bench", "--server-name", "pounder-no-such-process-4711", URL], "no process matches --server-name"),
    (["compare", "--server-name", "pounder-no-such-process-4711", URL, URL + "b"], "no process matches --server-name"),
])  # fmt: skip
def test_finding_the_server_speaks_of_the_server_options(args: list[str], fragment: str) -> None:
    line = assert_usage_error(*cliutil.run_cli(*args), fragment)
    assert "--pid " not in line and "--name " not in line
