"""``pounder tune php-fpm`` end to end, once and short: the pool file tests/apps/php/pool.conf,
the scripts of tests/apps/php behind pounder's nginx front. The recommendation it prints (php-fpm's
syntax) is applied to a copy of the pool file, which the test then runs as a user would: php-fpm
with its own php-fpm.conf, an nginx of its own passing PHP to it; it must answer, as printed."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from pounder.servers import phpfpm_missing
from pounder.servers._nginx import find_nginx
from pounder.servers._phpfpm import find_php_fpm
from support.cliutil import pounder_argv, run_pounder
from support.interrupted import interrupted
from support.leftovers import kill_leftovers, processes_mentioning
from support.schemas import validate_results_dir

PHP_APP = Path(__file__).resolve().parents[1] / "apps" / "php"
POOL_CONF = PHP_APP / "pool.conf"
TUNE_LIMIT_S = 400
pytestmark = pytest.mark.skipif(phpfpm_missing() is not None, reason=str(phpfpm_missing()))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _printed_settings(stdout: str) -> dict[str, str]:
    """The php-fpm settings of the printed configuration block."""
    block = stdout.split("Configuration (php-fpm)\n", 1)[1]
    return dict(re.findall(r"^\s+(pm[\w.]*) = (\S+)", block, re.MULTILINE))


def _applied(text: str, settings: dict[str, str], listen: str) -> str:
    """The pool file with ``settings`` (and ``listen``) written over its own lines, as a user
    edits it; the ones it does not have added at its end."""
    wanted = {**settings, "listen": listen}
    out = []
    for line in text.splitlines():
        key = line.split("=", 1)[0].strip() if "=" in line and not line.lstrip().startswith(";") else None
        out.append(f"{key} = {wanted.pop(key)}" if key in wanted else line)
    return "\n".join(out + [f"{key} = {value}" for key, value in wanted.items()]) + "\n"


def _run_as_a_user_would(folder: Path, pool_text: str) -> dict[str, object]:
    """php-fpm with the applied pool file and an nginx in front, both started by hand; the status
    page read through nginx, then both stopped. Returns the status."""
    fpm_port, http_port = _free_port(), _free_port()
    (folder / "pool.d").mkdir(parents=True)
    (folder / "pool.d" / "www.conf").write_text(pool_text.replace("listen = FPM", f"listen = 127.0.0.1:{fpm_port}"))
    (folder / "php-fpm.conf").write_text(f"[global]\npid = {folder}/php-fpm.pid\nerror_log = {folder}/php-fpm.log\n"
                                         f"include = {folder}/pool.d/*.conf\n")
    user = "user www-data;\n" if os.geteuid() == 0 else ""
    (folder / "nginx.conf").write_text(
        f"{user}pid {folder}/nginx.pid;\nerror_log {folder}/nginx-error.log;\nevents {{}}\nhttp {{\n"
        f"  access_log off;\n  client_body_temp_path {folder}/body;\n  fastcgi_temp_path {folder}/fastcgi;\n"
        f"  server {{\n    listen 127.0.0.1:{http_port};\n    root {PHP_APP};\n    index index.php;\n"
        "    location ~ \\.php$ { include /etc/nginx/fastcgi_params;\n"
        "      fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;\n"
        f"      fastcgi_pass 127.0.0.1:{fpm_port}; }}\n"
        "    location = /fpm-status { include /etc/nginx/fastcgi_params;\n"
        "      fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;\n"
        f"      fastcgi_pass 127.0.0.1:{fpm_port}; }}\n  }}\n}}\n")
    started = []
    try:
        for argv in ([find_php_fpm(), "-F", "-y", str(folder / "php-fpm.conf")],
                     [find_nginx(), "-p", f"{folder}/", "-c", str(folder / "nginx.conf"), "-e",
                      str(folder / "nginx-error.log"), "-g", "daemon off;"]):
            started.append(subprocess.Popen([str(word) for word in argv], cwd=folder, start_new_session=True,
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/", timeout=5) as response:
                    assert response.read() == b"hello\n"
                break
            except OSError:
                assert time.monotonic() < deadline, (folder / "php-fpm.log").read_text()
                time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/fpm-status?json", timeout=5) as response:
            status: dict[str, object] = json.loads(response.read())
        return status
    finally:
        for proc in started:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in started:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        left = processes_mentioning(str(folder))
        kill_leftovers(str(folder))
        assert left == []


def test_tune_php_fpm_quick(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = run_pounder(
        "tune", "php-fpm", str(POOL_CONF), "--root", str(PHP_APP),
         "--path", "/sleep.php?ms=10", "--quick", "--point-duration", "1s", "--mrpc", "0", "--max-children", "1",
         "--clients", "2", "--measure-children", "1", "--requests-per-child", "50", "--no-confirm", "--results",
         str(results),
        timeout=TUNE_LIMIT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not processes_mentioning(str(results)), "a server process outlived pounder tune"
    validate_results_dir(results)
    assert f"php-fpm pool [www] of {POOL_CONF} serving {PHP_APP}" in done.stdout
    printed = _printed_settings(done.stdout)
    recommendation = json.loads((results / "recommendation.json").read_text())
    assert recommendation["config"].rstrip("\n") in done.stdout.replace("\n  ", "\n")
    assert printed["pm.max_children"] == str(recommendation["params"]["max_clients"]) in {"1", "2"}
    assert printed["pm"] in {"static", "dynamic"} and printed["pm.max_requests"] == "0"
    if printed["pm"] == "dynamic":
        low, start, high = (int(printed[k]) for k in ("pm.min_spare_servers", "pm.start_servers",
                                                      "pm.max_spare_servers"))
        assert 1 <= low <= start <= high <= int(printed["pm.max_children"])
    status = _run_as_a_user_would(tmp_path / "user", _applied(POOL_CONF.read_text(), printed, "FPM"))
    assert status["process manager"] == printed["pm"]
    expected = printed["pm.max_children"] if printed["pm"] == "static" else printed["pm.start_servers"]
    assert status["total processes"] == int(expected)
    # php-fpm's own view of every load, read before and after it, stored with each trial and said
    trials = [json.loads(path.read_text())["summary"] for path in (results / "points").glob("children-*-t*.json")]
    assert trials and all(t["server_status"] is not None for t in trials), trials
    assert all(t["server_status"]["accepted"] >= t["complete"] + t["failed"] for t in trials), trials
    assert "php-fpm's status page, read before and after each load:" in done.stdout.replace("\n    ", " ")
    # the load goes to the front, which passes it to the pool: the pool's CPU per request is known,
    # and the front's CPU is counted apart from the others'
    assert all(t["server_cpu_us"] is not None and t["front_cores"] is not None for t in trials), trials
    # the spare settings are shown as php-fpm runs them (no MaxSpare above the children)
    for point in recommendation["spare"]:
        assert point["max_spare"] <= recommendation["params"]["max_clients"], point


def test_the_size_measurement_finds_leak_php_keeping_100_kb(tmp_path: Path) -> None:
    """leak.php keeps 100 KB per request: a real run stopped once its size measurement is stored
    finds the growth (100 KB per request, ±25 %) and calls it a leak. What follows (a finite
    pm.max_requests with the leak named, the memory bound) is decided again on the recorded run
    tests/data/tune-phpfpm-leak (tests/tune/test_recorded.py)."""
    results = tmp_path / "leak"
    interrupted(pounder_argv("tune", "php-fpm", POOL_CONF, "--root", PHP_APP, "--path",
                 "/leak.php", "--quick", "--ram", "1G", "--point-duration", "1s", "--max-children", "2", "--results",
                 results), results, results / "summary.json", limit_s=TUNE_LIMIT_S)
    validate_results_dir(results, finished=False)
    summary = json.loads((results / "summary.json").read_text())
    measure = summary["measure"]
    assert summary["leak"] is True, measure
    for half in ("growth_first", "growth_second"):
        assert 0.75 * 100 * 1024 <= measure[half] <= 1.25 * 100 * 1024, measure
