"""Unit tests of the pure configuration / command-line rendering of pounder.servers (no process)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pounder import UsageError
from pounder.servers import free_port
from pounder.servers._apache import apache_command
from pounder.servers._apache_conf import ApacheSettings, render_apache_conf, strip_owned_directives
from pounder.servers._gunicorn import GunicornSettings, gunicorn_command
from pounder.servers._starman import UNLIMITED_REQUESTS, StarmanSettings, starman_command

W = Path("/srv/w")
MODS = Path("/usr/lib/apache2/modules")


def conf_lines(settings: ApacheSettings, **kwargs: object) -> list[str]:
    text = render_apache_conf(settings, workdir=W, port=8123, modules_dir=MODS, **kwargs)  # type: ignore[arg-type]
    return [line.strip() for line in text.splitlines()]


def test_apache_conf_is_private_and_prefork() -> None:
    lines = conf_lines(ApacheSettings(start_servers=3, min_spare=2, max_spare=5, max_request_workers=12,
                                      max_connections_per_child=100, keepalive=False))
    for expected in ['ServerRoot "/srv/w"', 'PidFile "/srv/w/run/apache.pid"', 'ErrorLog "/srv/w/logs/error.log"',
                     'DefaultRuntimeDir "/srv/w/run"', "Listen 127.0.0.1:8123", "ServerName localhost",
                     'LoadModule mpm_prefork_module "/usr/lib/apache2/modules/mod_mpm_prefork.so"',
                     'LoadModule authz_core_module "/usr/lib/apache2/modules/mod_authz_core.so"',
                     "TypesConfig /etc/mime.types", "StartServers 3", "MinSpareServers 2", "MaxSpareServers 5",
                     "ServerLimit 12", "MaxRequestWorkers 12", "MaxConnectionsPerChild 100", "KeepAlive Off",
                     "ExtendedStatus On", "<Location /server-status>", "SetHandler server-status"]:
        assert expected in lines
    assert not any(line.startswith(("User", "Group", "Perl")) for line in lines)
    assert not any("mod_perl.so" in line for line in lines)
    assert not any("/etc/apache2" in line or "${" in line for line in lines)


def test_apache_conf_perl() -> None:
    settings = ApacheSettings(perl_handlers={"/hello": "PounderTest::Hello", "/cpu": "PounderTest::Cpu"},
                              server_status=False, user="www-data", group="www-data", extra_conf="# extra\n")
    lines = conf_lines(settings, startup_pl=True)
    assert 'LoadModule perl_module "/usr/lib/apache2/modules/mod_perl.so"' in lines
    assert "PerlSwitches -I/srv/w/lib" in lines
    assert 'PerlRequire "/srv/w/startup.pl"' in lines
    assert lines.index("PerlSwitches -I/srv/w/lib") < lines.index('PerlRequire "/srv/w/startup.pl"')
    at = lines.index("<Location /hello>")
    assert lines[at:at + 4] == ["<Location /hello>", "SetHandler modperl", "PerlResponseHandler PounderTest::Hello",
                                "</Location>"]
    assert "PerlResponseHandler PounderTest::Cpu" in lines
    assert "User www-data" in lines and "Group www-data" in lines
    assert "ExtendedStatus On" not in lines and not any("mod_status" in line for line in lines)
    assert lines[-1] == "# extra"
    # startup.pl alone is enough to load mod_perl
    assert 'PerlRequire "/srv/w/startup.pl"' in conf_lines(ApacheSettings(), startup_pl=True)


@pytest.mark.parametrize("settings", [
    ApacheSettings(min_spare=3, max_spare=3),
    ApacheSettings(start_servers=0),
    ApacheSettings(start_servers=9, max_request_workers=8),
    ApacheSettings(max_request_workers=0),
    ApacheSettings(max_connections_per_child=-1),
    ApacheSettings(perl_handlers={"hello": "PounderTest::Hello"}),
    ApacheSettings(perl_handlers={"/hello": "Pounder Test"}),
])
def test_apache_settings_refused(settings: ApacheSettings) -> None:
    with pytest.raises(UsageError, match="apache"):
        render_apache_conf(settings, workdir=W, port=1, modules_dir=MODS)


def test_apache_command_foreground() -> None:
    assert apache_command(W / "httpd.conf", "/usr/sbin/apache2") == [
        "/usr/sbin/apache2", "-f", "/srv/w/httpd.conf", "-k", "start", "-D", "FOREGROUND"]


def test_gunicorn_command() -> None:
    argv = gunicorn_command(GunicornSettings(workers=3, max_requests=50, preload=True, extra_args=("--x",)),
                            app="wsgi_app:app", port=8123, pidfile=W / "run/g.pid", error_log=W / "logs/e.log",
                            pythonpath="/apps", python="/py", no_control_socket=True)
    assert argv[:3] == ["/py", "-m", "gunicorn"]
    assert argv[-2:] == ["--x", "wsgi_app:app"]
    pairs = dict(zip(argv[3:-2], argv[4:-1], strict=False))
    assert pairs["--bind"] == "127.0.0.1:8123"
    assert pairs["--workers"] == "3"
    assert pairs["--worker-class"] == "sync"
    assert pairs["--pid"] == "/srv/w/run/g.pid"
    assert pairs["--error-logfile"] == "/srv/w/logs/e.log"
    assert pairs["--max-requests"] == "50"
    assert pairs["--pythonpath"] == "/apps"
    assert "--preload" in argv and "--no-control-socket" in argv
    plain = gunicorn_command(GunicornSettings(), app="m:a", port=1, pidfile=W, error_log=W)
    assert "--preload" not in plain and "--no-control-socket" not in plain and "--pythonpath" not in plain
    with pytest.raises(UsageError):
        gunicorn_command(GunicornSettings(), app="no_callable", port=1, pidfile=W, error_log=W)
    with pytest.raises(UsageError):
        gunicorn_command(GunicornSettings(workers=0), app="m:a", port=1, pidfile=W, error_log=W)


@pytest.mark.parametrize(("threads", "worker_class", "given"), [(None, "sync", []), (1, "sync", ["--threads", "1"]),
                                                               (4, "gthread", ["--threads", "4"])])
def test_gunicorn_command_threads(threads: int | None, worker_class: str, given: list[str]) -> None:
    """More than one thread: gthread workers, written out (gunicorn would switch to them by itself)."""
    argv = gunicorn_command(GunicornSettings(threads=threads), app="m:a", port=1, pidfile=W, error_log=W)
    assert argv[argv.index("--worker-class") + 1] == worker_class
    assert argv[argv.index("--threads"):argv.index("--threads") + 2] == given if given else "--threads" not in argv
    with pytest.raises(UsageError, match="gunicorn: threads must be at least 1, not 0"):
        gunicorn_command(GunicornSettings(threads=0), app="m:a", port=1, pidfile=W, error_log=W)


def test_starman_command() -> None:
    argv = starman_command(StarmanSettings(workers=4, max_requests=10, preload_app=True, keepalive=False),
                           psgi=W / "app.psgi", port=8123, pidfile=W / "run/s.pid", error_log=W / "logs/e.log",
                           binary="/usr/bin/starman")
    assert argv[0] == "/usr/bin/starman" and argv[-1] == "/srv/w/app.psgi"
    pairs = dict(zip(argv[1:-1], argv[2:], strict=False))
    assert pairs["--listen"] == "127.0.0.1:8123"
    assert pairs["--workers"] == "4"
    assert pairs["--pid"] == "/srv/w/run/s.pid"
    assert pairs["--error-log"] == "/srv/w/logs/e.log"
    assert pairs["--max-requests"] == "10"
    assert "--preload-app" in argv and "--disable-keepalive" in argv
    plain = starman_command(StarmanSettings(), psgi=W, port=1, pidfile=W, error_log=W)
    assert plain[plain.index("--max-requests") + 1] == str(UNLIMITED_REQUESTS)  # 0 would mean Starman's 1000
    assert "--preload-app" not in plain and "--disable-keepalive" not in plain


def test_free_port_is_bindable() -> None:
    port = free_port()
    assert 1024 <= port < 65536
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


USER_CONF = """\
# my mod_perl application
LoadModule perl_module /usr/lib/apache2/modules/mod_perl.so
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
Listen 80
  listen 127.0.0.1:8080
PidFile /var/run/apache2.pid
ServerRoot /etc/apache2
User nobody
Group nogroup
StartServers 7
<IfModule mpm_prefork_module>
    MinSpareServers 5
    MaxSpareServers 10
    MaxRequestWorkers \\
        150
    MaxClients 150
    ServerLimit 150
    MaxConnectionsPerChild 0
    MaxRequestsPerChild 0
</IfModule>
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
Timeout 300
ErrorLog logs/error.log
DefaultRuntimeDir run
ServerName www.example.com
PerlSwitches -Ilib
PerlRequire startup.pl
#Listen 9000
TimeOut2 3
<Location /hello>
    SetHandler modperl
    PerlResponseHandler My::Hello
</Location>
"""


def test_strip_owned_directives() -> None:
    text, removed = strip_owned_directives(USER_CONF)
    assert removed == [
        "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so", "Listen 80",
        "listen 127.0.0.1:8080", "PidFile /var/run/apache2.pid", "ServerRoot /etc/apache2", "User nobody",
        "Group nogroup", "StartServers 7", "MinSpareServers 5", "MaxSpareServers 10", "MaxRequestWorkers 150",
        "MaxClients 150", "ServerLimit 150", "MaxConnectionsPerChild 0", "MaxRequestsPerChild 0", "KeepAlive On",
        "MaxKeepAliveRequests 100", "KeepAliveTimeout 5", "Timeout 300", "ErrorLog logs/error.log",
        "DefaultRuntimeDir run", "ServerName www.example.com"]
    assert text == """\
# my mod_perl application
LoadModule perl_module /usr/lib/apache2/modules/mod_perl.so
<IfModule mpm_prefork_module>
</IfModule>
PerlSwitches -Ilib
PerlRequire startup.pl
#Listen 9000
TimeOut2 3
<Location /hello>
    SetHandler modperl
    PerlResponseHandler My::Hello
</Location>
"""
    assert strip_owned_directives(text) == (text, [])  # idempotent
    assert strip_owned_directives("") == ("", [])
    # a continued comment line swallows the next line, as in Apache
    assert strip_owned_directives("# note \\\nListen 80\nListen 81") == ("# note \\\nListen 80\n", ["Listen 81"])


@pytest.mark.parametrize("line", ["Include conf.d/*.conf", "  IncludeOptional /etc/apache2/mods-enabled/*.load",
                                  "include other.conf"])
def test_strip_owned_directives_refuses_includes(line: str) -> None:
    with pytest.raises(UsageError, match=r"apache: /srv/app.conf uses \S+ \S+: give pounder one self-contained file"):
        strip_owned_directives(f"PerlRequire x.pl\n{line}\n", source="/srv/app.conf")


def test_apache_conf_with_the_users_file() -> None:
    settings = ApacheSettings(start_servers=2, max_request_workers=4, extra_conf="# extra")
    text = render_apache_conf(settings, workdir=W, port=8123, modules_dir=MODS, server_root=Path("/srv/app"),
                              user_conf=USER_CONF, user_conf_name="/srv/app/app.conf")
    lines = [line.strip() for line in text.splitlines()]
    assert 'ServerRoot "/srv/app"' in lines and lines.count("ServerRoot \"/srv/app\"") == 1
    assert not any(line.startswith("ServerRoot") and "/srv/w" in line for line in lines)
    for owned in ("Listen 80", "StartServers 7", "MaxRequestWorkers 150", "Timeout 300", "mpm_event", "nobody",
                  "/var/run/apache2.pid", "www.example.com"):
        assert owned not in text
    assert [line for line in lines if line.startswith(("Listen", "StartServers", "MaxRequestWorkers"))] == [
        "Listen 127.0.0.1:8123", "StartServers 2", "MaxRequestWorkers 4"]
    # the user's file loads mod_perl; pounder does not (no handlers or startup.pl of its own)
    assert [line for line in lines if "mod_perl.so" in line] == [
        "LoadModule perl_module /usr/lib/apache2/modules/mod_perl.so"]
    at = lines.index("# From /srv/app/app.conf (without the directives set above by pounder):")
    assert lines[at + 1] == "# my mod_perl application"
    assert lines.index("PerlRequire startup.pl") > lines.index("Listen 127.0.0.1:8123")
    assert lines.index("PerlRequire startup.pl") > lines.index("</Location>")  # after /server-status
    assert lines[-1] == "# extra"
    # every path pounder writes is absolute, so a ServerRoot elsewhere changes none of them
    for line in lines[:at]:
        words = line.split()
        if words and words[0] in ("DefaultRuntimeDir", "PidFile", "ErrorLog", "DocumentRoot", "TypesConfig",
                                  "LoadModule", "<Directory"):
            assert words[-1].strip('">').startswith("/"), line
    assert text.replace('ServerRoot "/srv/app"', 'ServerRoot "/srv/w"') == render_apache_conf(
        settings, workdir=W, port=8123, modules_dir=MODS, user_conf=USER_CONF,
        user_conf_name="/srv/app/app.conf")


def test_apache_conf_refuses_a_users_file_with_include() -> None:
    with pytest.raises(UsageError, match="Include"):
        render_apache_conf(ApacheSettings(), workdir=W, port=1, modules_dir=MODS, user_conf="Include x.conf\n")
