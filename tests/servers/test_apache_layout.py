"""Apache's configuration as Debian lays it out, read and made private (pounder.servers'
``_apache_layout`` and ``_apache_private``; no server started): includes, globs, envvars,
${VAR} and Define, cycles, bounds, and errors naming the file and line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import pounder.servers._apache_layout as layout_module
from pounder import UsageError
from pounder.pool import PoolParams
from pounder.pool._apache import ApacheAdapter
from pounder.servers._apache import user_layout
from pounder.servers._apache_conf import strip_owned_directives
from pounder.servers._apache_layout import envvars_suffix, read_envvars, read_layout, substitute
from pounder.servers._apache_private import private_copy, private_env

MODULES = Path("/usr/lib/apache2/modules")
ENVVARS = """# envvars - default environment variables for apache2ctl
unset HOME
if [ "${APACHE_CONFDIR##/etc/apache2-}" != "${APACHE_CONFDIR}" ] ; then
\tSUFFIX="-${APACHE_CONFDIR##/etc/apache2-}"
else
\tSUFFIX=
fi
export APACHE_RUN_USER=www-data
export APACHE_RUN_GROUP=www-data
export APACHE_PID_FILE=/var/run/apache2$SUFFIX/apache2.pid
export APACHE_RUN_DIR=/var/run/apache2$SUFFIX
export APACHE_LOCK_DIR=/var/lock/apache2$SUFFIX
export APACHE_LOG_DIR=/var/log/apache2$SUFFIX
export LANG=C
export QUOTED="a b"'c d'
export RUNS=$(touch {marker})
#export APACHE_ARGUMENTS=''
"""


def _files(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _debian(root: Path, marker: Path) -> Path:
    """A small copy of Debian's layout: apache2.conf, envvars, ports.conf, mods-, conf- and
    sites-available with their -enabled symlinks."""
    _files(root, {
        "envvars": ENVVARS.replace("{marker}", str(marker)),
        "apache2.conf": "\n".join([
            "DefaultRuntimeDir ${APACHE_RUN_DIR}", "PidFile ${APACHE_PID_FILE}", "User ${APACHE_RUN_USER}",
            "Group ${APACHE_RUN_GROUP}", "ErrorLog ${APACHE_LOG_DIR}/error.log", "DirectoryIndex index.html index.pl",
            "IncludeOptional mods-enabled/*.load", "IncludeOptional mods-enabled/*.conf", "Include ports.conf",
            "IncludeOptional conf-enabled/*.conf", "IncludeOptional sites-enabled/*.conf", ""]),
        "ports.conf": "Listen 80\n\n<IfModule ssl_module>\n\tListen 443\n</IfModule>\n",
        "mods-available/mpm_event.load": f"LoadModule mpm_event_module {MODULES}/mod_mpm_event.so\n",
        "mods-available/mpm_event.conf": "StartServers 2\nMinSpareThreads 25\nThreadsPerChild 25\n",
        "mods-available/mime.load": f"LoadModule mime_module {MODULES}/mod_mime.so\n",
        "mods-available/ssl.load": f"LoadModule ssl_module {MODULES}/mod_ssl.so\n",
        "conf-available/app.conf": "Define APP_ROOT /srv/app\nPerlSwitches -I${APP_ROOT}/lib\n",
        "sites-available/000-default.conf": "<VirtualHost *:80>\n\tServerName www.example\n"
                                            "\tDocumentRoot /var/www/html\n"
                                            "\tErrorLog ${APACHE_LOG_DIR}/error.log\n"
                                            "\tCustomLog ${APACHE_LOG_DIR}/access.log combined\n</VirtualHost>\n",
        "sites-available/default-ssl.conf": "<VirtualHost _default_:443>\n\tSSLEngine on\n"
                                            "\tSSLCertificateFile /nonexistent/snakeoil.pem\n</VirtualHost>\n",
    })
    for kind, names in (("mods", ["mpm_event.load", "mpm_event.conf", "mime.load"]), ("conf", ["app.conf"]),
                        ("sites", ["000-default.conf"])):
        (root / f"{kind}-enabled").mkdir()
        for name in names:
            (root / f"{kind}-enabled" / name).symlink_to(f"../{kind}-available/{name}")
    return root / "apache2.conf"


def _where(layout: layout_module.Layout, text: str) -> str:
    line = next(line for line in layout.lines if line.text.strip() == text)
    return f"{line.file.name}:{line.number}"


def test_debians_layout_is_read_in_apaches_order_with_envvars(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    conf = _debian(tmp_path / "apache2", marker)
    layout = read_layout(conf)
    assert layout.server_root == conf.parent and layout.debian
    assert [path.name for path in layout.files] == [
        "apache2.conf", "mime.load", "mpm_event.load", "mpm_event.conf", "ports.conf", "app.conf",
        "000-default.conf"]
    texts = [line.text.strip() for line in layout.lines]
    assert "PidFile /var/run/apache2/apache2.pid" in texts and "User www-data" in texts
    assert "ErrorLog /var/log/apache2/error.log" in texts
    assert "PerlSwitches -I/srv/app/lib" in texts  # a Define's value, read before
    assert "# pounder followed: Include ports.conf" in texts
    # each line names where it was read
    assert _where(layout, "Listen 80") == "ports.conf:1" and _where(layout, "MinSpareThreads 25") == "mpm_event.conf:2"
    # ssl is not loaded: the Listen inside its <IfModule> is not active
    assert [line.active for line in layout.lines if line.text.strip() == "Listen 443"] == [False]
    assert not marker.exists()  # envvars is read, never run
    # the private copy's run-time places instead of /var
    private = read_layout(conf, overrides=private_env(Path("/w")))
    assert "PidFile /w/run/apache.pid" in private.text and "ErrorLog /w/logs/error.log" in private.text
    assert "/var/" not in private.text.replace("/var/www", "")


def test_envvars_is_read_as_text() -> None:
    marker = Path("/nonexistent/marker")
    path = Path("/tmp") / f"pounder-envvars-{os.getpid()}"
    path.write_text(ENVVARS.replace("{marker}", str(marker)))
    try:
        env = read_envvars(path, "/etc/apache2-second")
        assert env["APACHE_RUN_DIR"] == "/var/run/apache2-second"
        assert env["APACHE_LOG_DIR"] == "/var/log/apache2-second" and env["APACHE_RUN_USER"] == "www-data"
        assert env["QUOTED"] == "a bc d" and "RUNS" not in env and "APACHE_ARGUMENTS" not in env
        assert read_envvars(path, "/etc/apache2")["APACHE_PID_FILE"] == "/var/run/apache2/apache2.pid"
    finally:
        path.unlink()
    assert envvars_suffix("/etc/apache2") == "" and envvars_suffix("/tmp/copy/apache2") == ""


def test_substitution_is_apaches() -> None:
    assert substitute("A ${X} ${Y} ${Z}", {"X": "d"}, {"X": "e", "Y": "f"}) == "A d f ${Z}"  # undefined: kept
    assert substitute("no vars", {}, {}) == "no vars"


def test_includes_globs_directories_and_serverroot(tmp_path: Path) -> None:
    _files(tmp_path, {"root/conf.d/b.conf": "B\n", "root/conf.d/a.conf": "A\n", "root/conf.d/sub/c.conf": "C\n",
                      "root/conf.d/.hidden.conf": "H\n", "other/x.conf": "X\n"})
    conf = tmp_path / "main.conf"
    conf.write_text(f"ServerRoot {tmp_path / 'root'}\nInclude conf.d/*.conf\nInclude conf.d\n"
                    f"IncludeOptional {tmp_path}/other/*.conf\nIncludeOptional missing/*.conf\n"
                    "IncludeOptional missing.conf\n<IfModule ssl_module>\n  Include not-there.conf\n</IfModule>\n"
                    "<IfDefine !NOPE>\n<IfDefine NOPE>\n  Include not-there-either.conf\n</IfDefine>\n</IfDefine>\n"
                    "Define NOPE\n<IfDefine NOPE>\n  Include conf.d/a.conf\n</IfDefine>\n")
    layout = read_layout(conf)
    assert layout.server_root == tmp_path / "root"
    body = [line.text for line in layout.lines if not line.text.startswith(("#", " ", "<", "ServerRoot", "Define"))]
    # a wildcard matches in alphabetical order, no hidden files; a directory is all its files, hidden
    # ones too, its subdirectories' too (Apache's order)
    assert body == ["A", "B", "H", "A", "B", "C", "X", "A"]
    assert [line.text.startswith("# pounder: not followed") for line in layout.lines if "not-there" in line.text] == [
        True, True]


@pytest.mark.parametrize(("line", "error"), [
    ("Include missing.conf", "{conf}:2: Include missing.conf: no such file or directory"),
    ("Include conf.d/*.nothing", "{conf}:2: Include conf.d/*.nothing: no matches for the wildcard"),
    ("Include", "{conf}:2: Include needs a file name"),
    ("ServerRoot /nonexistent/root", "{conf}:2: ServerRoot /nonexistent/root is not a directory"),
])
def test_what_apache_refuses_is_named_with_its_file_and_line(tmp_path: Path, line: str, error: str) -> None:
    (tmp_path / "conf.d").mkdir()
    conf = tmp_path / "main.conf"
    conf.write_text(f"# first\n{line}\n")
    with pytest.raises(UsageError, match="^apache: " + error.format(conf=conf).replace("*", r"\*")):
        read_layout(conf)


def test_a_cycle_is_refused_with_its_chain(tmp_path: Path) -> None:
    _files(tmp_path, {"a.conf": "Include b.conf\n", "b.conf": "# b\nInclude a.conf\n"})
    conf = tmp_path / "a.conf"
    with pytest.raises(UsageError) as refused:
        read_layout(conf)
    message = str(refused.value)
    assert message.startswith(f"apache: {tmp_path}/b.conf:2: Include a.conf includes a file")
    assert f"(a cycle: {tmp_path}/a.conf -> {tmp_path}/b.conf -> {tmp_path}/a.conf)" in message
    assert "\n" not in message
    # the same file twice, not within itself, is no cycle (Debian's *.load and *.conf of a module)
    _files(tmp_path, {"twice.conf": "Include b2.conf\nInclude b2.conf\n", "b2.conf": "B\n"})
    assert [line.text for line in read_layout(tmp_path / "twice.conf").lines].count("B") == 2


def test_every_size_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    depth = layout_module.MAX_DEPTH
    for i in range(depth + 1):
        (tmp_path / f"{i}.conf").write_text(f"Include {i + 1}.conf\n" if i < depth else "End\n")
    with pytest.raises(UsageError, match=f"includes nested deeper than {depth} levels"):
        read_layout(tmp_path / "0.conf")
    (tmp_path / "big.conf").write_text("# " + "x" * 200 + "\n")
    monkeypatch.setattr(layout_module, "MAX_FILE_BYTES", 100)
    with pytest.raises(UsageError, match=r"^apache: the configuration file .*big.conf is larger than 0 KiB"):
        read_layout(tmp_path / "big.conf")
    monkeypatch.setattr(layout_module, "MAX_FILE_BYTES", 4096)
    (tmp_path / "many.conf").write_text("Include big.conf\n" * 5)
    monkeypatch.setattr(layout_module, "MAX_TOTAL_BYTES", 500)
    with pytest.raises(UsageError, match=r"many.conf:3: the configuration and its includes are larger than"):
        read_layout(tmp_path / "many.conf")
    monkeypatch.setattr(layout_module, "MAX_TOTAL_BYTES", 10**6)
    monkeypatch.setattr(layout_module, "MAX_LINES", 6)
    with pytest.raises(UsageError, match=r"many.conf:2: the configuration and its includes have more than 6 lines"):
        read_layout(tmp_path / "many.conf")
    monkeypatch.setattr(layout_module, "MAX_LINES", 10**6)
    monkeypatch.setattr(layout_module, "MAX_FILES", 3)
    with pytest.raises(UsageError, match=r"many.conf:3: more than 3 configuration files"):
        read_layout(tmp_path / "many.conf")
    (tmp_path / "envvars").write_text("#" * (layout_module.MAX_ENVVARS_BYTES + 1))
    with pytest.raises(UsageError, match="the envvars file .* is larger than"):
        read_layout(tmp_path / "big.conf")


def test_the_private_copy_serves_the_sites_on_pounders_port(tmp_path: Path) -> None:
    conf = _debian(tmp_path / "apache2", tmp_path / "ran")
    (tmp_path / "apache2/sites-enabled/default-ssl.conf").symlink_to("../sites-available/default-ssl.conf")
    _files(tmp_path / "apache2", {"sites-enabled/app.conf": "<VirtualHost 192.0.2.1:80 *:8080>\n"
                                                            "  CustomLog \"|/usr/bin/logger -t app\" combined\n"
                                                            "</VirtualHost>\n"})
    layout = read_layout(conf, overrides=private_env(Path("/w")))
    copy = private_copy(layout, port=8123, logs=Path("/w/logs"))
    texts = [line.text.strip() for line in copy.lines]
    assert texts.count("<VirtualHost *:8123>") == 2  # *:80 and 192.0.2.1:80 alike; 8080 is not listened on
    assert 'CustomLog "/w/logs/custom-access.log" combined' in texts
    assert 'CustomLog "/w/logs/piped-2.log" combined' in texts  # the logger is not run
    # the HTTPS site cannot get pounder's plain requests: left out, its certificate not needed
    assert "# left out by pounder: SSLCertificateFile /nonexistent/snakeoil.pem" in texts
    assert copy.other_mpm == "mpm_event" and (copy.user, copy.group) == ("www-data", "www-data")
    (note,) = [note for note in copy.notes if note.startswith("<VirtualHost")]
    assert note.startswith("<VirtualHost _default_:443> (") and "default-ssl.conf:1) left out" in note
    assert any(note.startswith("2 sites on port 80: pounder's requests (Host 127.0.0.1) are served by the first, ")
               and "000-default.conf:1" in note for note in copy.notes)
    assert len(copy.lines) == len(layout.lines)  # line for line: Apache's messages are mapped back
    # what pounder owns goes later, line for line: no Listen, PidFile, User, threaded MPM directive
    kept, removed = strip_owned_directives(copy.text, keep_lines=True)
    assert {"Listen 80", "PidFile /w/run/apache.pid", "User www-data", "MinSpareThreads 25",
            "ThreadsPerChild 25", "StartServers 2", "ErrorLog /w/logs/error.log"} <= set(removed)
    assert "Listen" not in kept.replace("# set by pounder: Listen", "")
    assert "\tServerName www.example\n" in kept  # a site's own name is kept: name-based sites still work


@pytest.mark.parametrize(("text", "error"), [
    ("LoadModule foo_module /nonexistent/mod_foo.so\n",
     ":1: LoadModule foo_module: no such file (/nonexistent/mod_foo.so; the private copy cannot load it)"),
    ("Listen 80\n<VirtualHost *:80>\n  SSLCertificateFile /nonexistent/cert.pem\n</VirtualHost>\n",
     ":3: SSLCertificateFile /nonexistent/cert.pem: no such file (/nonexistent/cert.pem; the site needs it"),
])
def test_what_cannot_run_privately_is_named_with_its_file_and_line(tmp_path: Path, text: str, error: str) -> None:
    conf = tmp_path / "app.conf"
    conf.write_text(text)
    with pytest.raises(UsageError) as refused:
        user_layout(conf)
    assert str(refused.value).startswith(f"apache: {conf}{error}"), refused.value


def test_debians_recommendation_is_its_mpm_prefork_conf(tmp_path: Path) -> None:
    conf = _debian(tmp_path / "apache2", tmp_path / "ran")
    for name in ("mpm_event.load", "mpm_event.conf"):
        (tmp_path / "apache2/mods-enabled" / name).unlink()  # prefork already: no a2dismod
    (tmp_path / "apache2/mods-available/mpm_prefork.load").write_text("# prefork\n")
    params = PoolParams(max_clients=6, max_requests=1000, start_servers=2, min_spare=1, max_spare=3)
    text = ApacheAdapter(conf).render(params)
    assert text.splitlines()[0] == (f"# {tmp_path}/apache2/mods-available/mpm_prefork.conf (Debian's layout), in "
                                    "place of its <IfModule mpm_prefork_module> block:")
    assert "    MaxRequestWorkers           6" in text.splitlines()
    assert text.splitlines()[-1] == "# then: a2enmod mpm_prefork && systemctl restart apache2"
    (tmp_path / "apache2/mods-enabled/mpm_event.load").symlink_to("../mods-available/mpm_event.load")
    adapter = ApacheAdapter(conf)
    assert adapter.render(params).splitlines()[-1] == (
        "# then: a2dismod mpm_event && a2enmod mpm_prefork && systemctl restart apache2")
    assert adapter.mod_perl  # conf-enabled/app.conf's PerlSwitches
    (tmp_path / "apache2/conf-enabled/app.conf").unlink()
    assert not ApacheAdapter(conf).mod_perl  # index.pl in DirectoryIndex is no mod_perl: no Apache2::SizeLimit
    assert adapter.describe().startswith(f"Apache prefork + mod_perl with {conf} (Debian's layout; mpm_event ")
    # not Debian's layout: the block alone, as before
    plain = tmp_path / "plain.conf"
    plain.write_text("PerlModule Foo\n")
    assert ApacheAdapter(plain).render(params).splitlines()[0] == "<IfModule mpm_prefork_module>"


@pytest.mark.skipif(not Path("/etc/apache2/apache2.conf").is_file(), reason="Debian's apache2 is not installed")
def test_the_systems_own_layout_is_read() -> None:
    layout, copy = user_layout(Path("/etc/apache2/apache2.conf"), Path("/w"), 8123)
    assert layout.debian and layout.server_root == Path("/etc/apache2")
    assert any(path.name == "ports.conf" for path in layout.files)
    assert all("/var/run" not in line.text and "/var/log" not in line.text for line in copy.lines if
               not line.text.lstrip().startswith("#"))


def test_an_included_directory_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a directory that holds a link to itself: its files are not read again and again down the loop
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.conf").write_text("A\n")
    (tmp_path / "d" / "loop").symlink_to(".")
    (tmp_path / "top.conf").write_text("# the sites\nIncludeOptional d/\n")
    with pytest.raises(UsageError, match=rf"^apache: .*top.conf:2: directories nested deeper than "
                                         rf"{layout_module.MAX_DEPTH} levels under .*loop: not read$"):
        read_layout(tmp_path / "top.conf")
    (tmp_path / "d" / "loop").unlink()
    (tmp_path / "d" / "b.conf").write_text("B\n")
    monkeypatch.setattr(layout_module, "MAX_FILES", 1)
    with pytest.raises(UsageError, match=r"top.conf:2: the directory .*d has more than 1 entries: not read"):
        read_layout(tmp_path / "top.conf")


def test_a_fifo_is_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.conf")  # opening it to read would wait for a writer forever
    (tmp_path / "top.conf").write_text("Include pipe.conf\n")
    with pytest.raises(UsageError, match=r"pipe.conf is not a regular file: not read"):
        read_layout(tmp_path / "top.conf")
