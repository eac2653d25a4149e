"""uWSGI ignores an ini option it does not know without a word (issue 39, item 21): pounder names
each one, with its line, as a warning on stderr, and the run goes on as uWSGI runs it. The options
known are what the real binary's ``uwsgi --help`` lists with the plugins the ini loads."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pounder.pool import UwsgiAdapter
from pounder.servers import uwsgi_missing, uwsgi_unknown_options
from support.cliutil import start_pounder
from support.leftovers import kill_leftovers, processes_mentioning

APPS = Path(__file__).resolve().parents[1] / "apps"
pytestmark = pytest.mark.skipif(uwsgi_missing() is not None, reason=str(uwsgi_missing()))
INI = """\
[uwsgi]
pythonpath = %d
module = wsgi_app:app
proccesses = 4
http_socket = 127.0.0.1:1
app_root = /srv
declare-option = myopt=processes=%%(_)
myopt = 2
greeting = hello %(app_root)
need-app = true
[other]
whatever = 1
"""


def test_each_unknown_option_is_named_with_its_line(tmp_path: Path) -> None:
    """A misspelling (proccesses), an underscore uWSGI does not read as a dash (http_socket); not a
    placeholder the file uses (app_root), an option it declares (myopt), a known one, another section."""
    ini = tmp_path / "site.ini"
    ini.write_text(INI)
    assert uwsgi_unknown_options(ini, INI) == [
        f"{ini}: line 4: uwsgi does not know option 'proccesses' (it ignores it)",
        f"{ini}: line 5: uwsgi does not know option 'http_socket' (it ignores it)",
        f"{ini}: line 9: uwsgi does not know option 'greeting' (it ignores it)"]
    assert uwsgi_unknown_options(ini, "[uwsgi]\nmodule = a:b\nprocesses = 2\nlazy-apps = true\n") == []
    many = "[uwsgi]\n" + "".join(f"typo{n} = 1\n" for n in range(7))
    said = uwsgi_unknown_options(ini, many)
    assert len(said) == 6 and said[-1] == f"{ini}: 2 more options uwsgi does not know (it ignores them)"
    assert uwsgi_unknown_options(ini, many[: many.index("typo6")])[-1].endswith(
        ": 1 more option uwsgi does not know (it ignores them)")
    assert UwsgiAdapter(str(ini)).warnings() == uwsgi_unknown_options(ini, INI)
    assert UwsgiAdapter("wsgi_app:app", pythonpath=str(APPS)).warnings() == []


def test_tune_warns_and_goes_on(tmp_path: Path) -> None:
    """``pounder tune uwsgi site.ini``: the warning on stderr, then the run starts (stopped by Ctrl-C
    once it has; exit 130, nothing left running)."""
    (tmp_path / "wsgi_app.py").write_text((APPS / "wsgi_app.py").read_text())
    ini = tmp_path / "site.ini"
    ini.write_text("[uwsgi]\npythonpath = %d\nmodule = wsgi_app:app\nproccesses = 4\n")
    process = start_pounder("tune", "uwsgi", ini, "--no-thread-sweep", "--quick", "--ram", "1G", "--results",
                            tmp_path / "run",
                            stdout=subprocess.DEVNULL, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 60
        for line in process.stderr:
            lines.append(line)
            if line.startswith("pounder: tuning uWSGI") or time.monotonic() > deadline:
                break
        os.kill(process.pid, signal.SIGINT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        kill_leftovers(str(tmp_path))
    assert lines[0] == f"pounder: warning: {ini}: line 4: uwsgi does not know option 'proccesses' (it ignores it)\n"
    assert any(line.startswith("pounder: tuning uWSGI") for line in lines), lines
    assert process.returncode == 130
    assert processes_mentioning(str(tmp_path)) == []
