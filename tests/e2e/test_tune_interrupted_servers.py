"""Ctrl-C while ``pounder tune`` has a php-fpm (and its nginx front), uWSGI, Puma or Unicorn
running: exit 130, the run says how to go on, and no process of the server is left."""

from __future__ import annotations

from pathlib import Path

import pytest

from pounder.servers import phpfpm_missing, puma_missing, unicorn_missing, uwsgi_missing
from support.cliutil import pounder_argv
from support.interrupted import interrupted
from support.leftovers import processes_mentioning

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
    argv = pounder_argv("tune", *args, "--quick", "--mrpc", "0", "--max-children", "1",
                        "--no-confirm", "--results", results)
    # Ctrl-C once the server's parent and a child run
    _, err = interrupted(argv, results, lambda: len(processes_mentioning(str(results))) >= 2, after_s=0.5,
                         limit_s=120)
    assert "Traceback" not in err and f"pounder tune --resume {results}" in err
