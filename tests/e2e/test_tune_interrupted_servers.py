"""Ctrl-C while ``pounder tune`` has a php-fpm (and its nginx front), uWSGI, Puma or Unicorn
running: exit 130, the run says how to go on, and no process of the server is left."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pounder.servers import phpfpm_missing, puma_missing, unicorn_missing, uwsgi_missing
from support.leftovers import kill_leftovers, processes_mentioning

APPS = Path(__file__).resolve().parents[1] / "apps"
SERVERS = {
    "php-fpm": (phpfpm_missing, ["php-fpm", str(APPS / "php" / "pool.conf"), "--root", str(APPS / "php"),
                                 "--path", "/index.php"]),
    "uwsgi": (uwsgi_missing, ["uwsgi", "wsgi_app:app", "--pythonpath", str(APPS)]),
    "puma": (puma_missing, ["puma", str(APPS / "rack_app.ru")]),
    "unicorn": (unicorn_missing, ["unicorn", str(APPS / "rack_app.ru")]),
}


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_ctrl_c_with_the_server_running_leaves_nothing(kind: str, tmp_path: Path) -> None:
    missing, args = SERVERS[kind]
    if missing() is not None:
        pytest.skip(str(missing()))
    results = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "pounder", "tune", *args, "--quick", "--mrpc", "0",
                             "--max-children", "1", "--no-confirm", "--results", str(results)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(processes_mentioning(str(results))) < 2:  # the server's parent and a child run
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the server did not start in time"
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        left = processes_mentioning(str(results))
        kill_leftovers(str(results))
    assert proc.returncode == 130, err
    assert "Traceback" not in err and f"pounder tune --resume {results}" in err
    assert not left, f"left running: {[p.cmdline() for p in left]}"
