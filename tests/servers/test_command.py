"""pounder.servers.CommandServer: any pre-forking server from a command template (render_command is
pure; the real test runs gunicorn through it)."""

from __future__ import annotations

import re
import shlex
import signal
import socket
import sys
from pathlib import Path

import psutil
import pytest

from pounder import UsageError
from pounder.servers import CommandServer, ServerStartError, gunicorn_missing, render_command
from pounder.servers._command import command_placeholders
from pounder.servers._gunicorn import _has_control_socket
from support.srvutil import get, stop_and_check

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"


def test_render_substitutes_every_placeholder() -> None:
    argv = render_command("srv --listen {host}:{port} -w {workers} --max {max_requests} --dir {workdir} "
                          "--pid={pidfile} --log {error_log}",
                          port=8123, workers=3, max_requests=0, workdir=Path("/w"), pidfile=Path("/w/run/c.pid"),
                          error_log="/w/logs/error.log")
    assert argv == ["srv", "--listen", "127.0.0.1:8123", "-w", "3", "--max", "0", "--dir", "/w",
                    "--pid=/w/run/c.pid", "--log", "/w/logs/error.log"]
    assert render_command("srv {host}:{port}", port=1, host="::1") == ["srv", "::1:1"]
    assert render_command("srv --port={port:05d}", port=80) == ["srv", "--port=00080"]
    assert render_command("srv {port:>{workers}}", port=80, workers=4) == ["srv", "  80"]


def test_render_splits_like_a_shell_then_substitutes_in_each_word() -> None:
    argv = render_command("'/opt/my server/bin/srv' --opt \"a b\" --dir {workdir} --bind=\"{host} {port}\" x\\ y",
                          port=9, workdir="/tmp/with space")
    assert argv == ["/opt/my server/bin/srv", "--opt", "a b", "--dir", "/tmp/with space", "--bind=127.0.0.1 9",
                    "x y"]
    template = f"{shlex.quote('/py thon')} -m srv --port {{port}}"
    assert render_command(template, port=5)[0] == "/py thon"
    # a value is never split nor interpreted by a shell
    assert render_command("srv {workdir} {port}", port=1, workdir="a; rm -rf b") == ["srv", "a; rm -rf b", "1"]


def test_render_literal_braces() -> None:
    assert render_command("srv --json {{\"port\":{port}}} {{}}", port=7) == ["srv", "--json", '{port:7}', "{}"]
    assert render_command("srv '{{{port}}}'", port=7) == ["srv", "{7}"]


@pytest.mark.parametrize(("template", "message"), [
    ("srv --listen {host}", r"must contain \{port\}"),
    ("srv {port} --python {python}", r"unknown placeholder \{python\}.*allowed: \{error_log\}, \{host\}"),
    ("srv {port} {}", r"unknown placeholder \{\}"),
    ("srv {port} {0}", r"unknown placeholder \{0\}"),
    ("srv {port} {workdir.name}", r"unknown placeholder \{workdir.name\}"),
    ("srv {port} {Port}", r"unknown placeholder \{Port\}"),
    ("srv {port} {workers", "bad braces.*literal braces"),
    ("srv {port} workers}", "bad braces"),
    ("srv {port} {port!z}", "cannot substitute"),
    ("srv {port:{nope}}", r"unknown placeholder \{nope\}"),
    ("srv {port} 'unclosed", "cannot split"),
    ("", "empty"),
])
def test_render_refuses(template: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        render_command(template, port=1, workers=2, max_requests=0, workdir="/w", pidfile="/p", error_log="/e")
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("command: ")


def test_render_needs_a_value_for_each_used_placeholder() -> None:
    with pytest.raises(UsageError, match=r"no value for \{workers\}"):
        render_command("srv {port} -w {workers}", port=1)
    with pytest.raises(TypeError):
        render_command("srv {port}", port=1, python="/py")


def test_placeholders() -> None:
    assert command_placeholders("srv {host}:{port} -w {workers} {{workers}}") == {"host", "port", "workers"}
    assert command_placeholders("srv") == set()
    with pytest.raises(UsageError, match="unknown placeholder"):
        command_placeholders("srv {nope}")


def test_command_server_settings(tmp_path: Path) -> None:
    srv = CommandServer(tmp_path / "w", "srv --port {port}", workers=5, stop_signal=signal.SIGQUIT)
    assert srv.stop_signal == signal.SIGQUIT and CommandServer.stop_signal == signal.SIGTERM
    assert srv._expected_children() == 0  # the template does not say how many workers
    assert CommandServer(tmp_path / "w", "srv {port} -w {workers}", workers=5)._expected_children() == 5
    assert srv._prepare(8000) == ["srv", "--port", "8000"]
    with pytest.raises(UsageError, match=r"\{port\}"):
        CommandServer(tmp_path / "w", "srv --workers {workers}")
    with pytest.raises(UsageError, match="workers"):
        CommandServer(tmp_path / "w", "srv {port}", workers=0)
    with pytest.raises(UsageError, match="max_requests"):
        CommandServer(tmp_path / "w", "srv {port}", max_requests=-1)


def test_command_not_found(tmp_path: Path) -> None:
    srv = CommandServer(tmp_path / "w", "pounder-no-such-server --port {port}")
    with pytest.raises(ServerStartError, match="command: cannot find pounder-no-such-server on PATH"):
        srv.start()
    srv = CommandServer(tmp_path / "w", "{workdir}/bin/srv --port {port}")
    with pytest.raises(ServerStartError, match=f"cannot find {tmp_path}/w/bin/srv"):
        srv.start()
    assert not srv.running


def test_gunicorn_through_a_command_template(tmp_path: Path) -> None:
    missing = gunicorn_missing()
    if missing:
        pytest.skip(missing)
    template = (f"{shlex.quote(sys.executable)} -m gunicorn --bind {{host}}:{{port}} --workers {{workers}} "
                f"--max-requests {{max_requests}} --pid {{pidfile}} --error-logfile {{error_log}} "
                f"--chdir {shlex.quote(str(APPS_DIR))} wsgi_app:app")
    if _has_control_socket():  # else it goes to ~/.gunicorn, shared by every instance
        template += " --no-control-socket"
    srv = CommandServer(tmp_path / "w", template, workers=3, env={"PYTHONUNBUFFERED": "1"})
    try:
        srv.start()
        assert get(srv.url + "/") == "hello\n"
        assert srv.read_pidfile() == srv.pid
        workers = srv.children()
        assert len(workers) == 3
        assert sorted(p.pid for p in psutil.Process(srv.pid).children()) == workers
        assert int(get(srv.url + "/pid")) in workers
        assert srv.error_log.exists()
        stop_and_check(srv)
    finally:
        srv.stop()


def test_a_fixed_port_of_the_command_in_use_is_not_blamed_on_pounders_port(tmp_path: Path) -> None:
    """Issue 25 item 16: a command that also binds a fixed port, in use, was reported as "port N
    was taken before the server could bind it, twice" (pounder's free port, which was free)."""
    missing = gunicorn_missing()
    if missing:
        pytest.skip(missing)
    with socket.socket() as fixed:
        fixed.bind(("127.0.0.1", 0))
        fixed.listen()
        fixed_port = fixed.getsockname()[1]
        template = (f"{shlex.quote(sys.executable)} -m gunicorn --bind {{host}}:{{port}} --bind 127.0.0.1:{fixed_port} "
                    f"--workers 1 --chdir {shlex.quote(str(APPS_DIR))} wsgi_app:app")
        if _has_control_socket():
            template += " --no-control-socket"
        srv = CommandServer(tmp_path / "w", template, workers=1)
        try:
            with pytest.raises(ServerStartError) as failed:
                srv.start(timeout_s=20)
        finally:
            srv.stop()
    assert "twice" not in failed.value.reason
    assert re.fullmatch(r"command exited with status \d+ while starting on http://127\.0\.0\.1:(\d+): an address it "
                        r"binds was in use, not port \1 \(pounder chose it and it is free\): does it listen on a "
                        r"fixed port too\?", failed.value.reason), failed.value.reason
    assert f"127.0.0.1', {fixed_port})" in failed.value.log_tail  # gunicorn's own words name the fixed port
