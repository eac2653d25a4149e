"""``pounder tune apache`` on Debian's own apache2 package layout (issue 38, "the server as
deployed"): a copy of /etc/apache2 with mod_perl enabled by Debian's ``a2enmod perl`` and a
mod_perl site enabled by ``a2ensite``, tuned as given; and the system's own
/etc/apache2/apache2.conf. Nothing under /etc changes (checksums before and after) and no server
listens on the system's ports (80, 443) during the run or after it.

Debian's tools are pointed at the copy with their own variables: ``APACHE_CONFDIR`` (the
configuration directory, and the envvars in it) and ``APACHE_STATE_DIRECTORY`` (a2enmod's record
of what the admin enabled, /var/lib/apache2 by default).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from pounder.servers import apache_missing
from support.cliutil import pounder_argv, start_pounder
from support.interrupted import interrupted
from support.leftovers import kill_leftovers, processes_mentioning

ETC = Path("/etc/apache2")
PERL_APPS_DIR = Path(__file__).resolve().parents[1] / "apps" / "perl"
SYSTEM_PORTS = (80, 443)
HELLO = "hello from pid "  # PounderTest::Hello's answer, then the pid and a newline

pytestmark = [
    pytest.mark.skipif(apache_missing(perl=True) is not None, reason=str(apache_missing(perl=True))),
    pytest.mark.skipif(not (ETC / "apache2.conf").is_file() or shutil.which("a2enmod") is None,
                       reason="Debian's apache2 package (/etc/apache2, a2enmod) is not installed"),
]


def _checksums(root: Path) -> dict[str, str]:
    """Every file's SHA-256 and every symlink's target under ``root`` (a2enmod's links too)."""
    sums: dict[str, str] = {}
    for directory, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = Path(directory) / name
            if path.is_symlink():
                sums[str(path)] = "-> " + os.readlink(path)
            elif path.is_file():
                sums[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return sums


def _listening(ports: tuple[int, ...]) -> set[int]:
    """This test's own reading of /proc/net/tcp{,6}: which of ``ports`` a socket listens on."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as file:
            for line in file.readlines()[1:]:
                fields = line.split()
                port = int(fields[1].rsplit(":", 1)[1], 16)
                if fields[3] == "0A" and port in ports:
                    found.add(port)
    return found


def _debian_tool(tool: str, name: str, copy: Path, state: Path) -> None:
    env = {**os.environ, "APACHE_CONFDIR": str(copy), "APACHE_STATE_DIRECTORY": str(state)}
    done = subprocess.run([tool, name], env=env, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, (tool, name, done.stdout, done.stderr)


def _tune_watched(args: list[str], results: Path, untouched: list[Path]) -> tuple[subprocess.CompletedProcess[str],
                                                                                  set[int]]:
    """A real ``pounder tune`` (its output) and the system ports listened on while it ran (a
    server that was there before it, the system's own, is not counted); ``untouched`` hashed before
    and after: unchanged."""
    before = {str(root): _checksums(root) for root in untouched}
    already = _listening(SYSTEM_PORTS)
    proc = start_pounder("tune", *args, "--results", results)
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            seen |= _listening(SYSTEM_PORTS) - already
            time.sleep(0.1)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        kill_leftovers(str(results))
    seen |= _listening(SYSTEM_PORTS) - already
    assert not processes_mentioning(str(results))
    for root in untouched:
        assert _checksums(root) == before[str(root)], f"{root} changed"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), seen


@pytest.fixture
def debian_copy(public_dir: Path) -> Path:
    """/etc/apache2 copied, mod_perl enabled with a2enmod (disabled first if the package had
    enabled it), a site whose /hello is PounderTest::Hello enabled with a2ensite, and the stock
    000-default disabled with a2dissite (both serve *:80: Apache gives a Host no ServerName names
    to the first)."""
    copy = public_dir / "apache2"
    state = public_dir / "state"
    shutil.copytree(ETC, copy, symlinks=True)
    shutil.copytree(PERL_APPS_DIR, public_dir / "app")
    if (copy / "mods-enabled" / "perl.load").exists():
        _debian_tool("a2dismod", "perl", copy, state)
    assert not (copy / "mods-enabled" / "perl.load").exists()
    _debian_tool("a2enmod", "perl", copy, state)
    assert os.readlink(copy / "mods-enabled" / "perl.load") == "../mods-available/perl.load"
    (copy / "sites-available" / "pounder-app.conf").write_text("\n".join([
        "# a mod_perl application, as a Debian user adds a site",
        f"PerlSwitches -I{public_dir}/app/lib",
        f"PerlRequire {public_dir}/app/startup.pl",
        "<VirtualHost *:80>",
        "\tServerName app.example",
        "\tDocumentRoot /var/www/html",
        "\t<Location /hello>",
        "\t\tSetHandler modperl",
        "\t\tPerlResponseHandler PounderTest::Hello",
        "\t</Location>",
        "\tErrorLog ${APACHE_LOG_DIR}/app-error.log",
        "\tCustomLog ${APACHE_LOG_DIR}/app-access.log combined",
        "</VirtualHost>", ""]))
    _debian_tool("a2ensite", "pounder-app", copy, state)
    _debian_tool("a2dissite", "000-default", copy, state)
    assert sorted(os.listdir(copy / "sites-enabled")) == ["pounder-app.conf"]
    for path in public_dir.rglob("*"):  # the children (www-data) read the application
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    return copy / "apache2.conf"


def test_tune_on_a_copy_of_debians_layout_with_a2enmod_perl(debian_copy: Path, public_dir: Path) -> None:
    """The recommendation is printed as the lines of Debian's mods-available/mpm_prefork.conf
    (the copy's mpm_event switched off with a2dismod); every request of every point was answered
    by the site's mod_perl handler (its answer's length, a 200 for /hello). Each request waits 10 ms
    without CPU (``?ms=10``), so that the run leaves the CPUs to the tests beside it."""
    results = public_dir / "results"
    copy = debian_copy.parent
    done, seen = _tune_watched(["apache", str(debian_copy), "--path", "/hello?ms=10", "--quick",
                                "--point-duration", "1s", "--max-children", "1", "--clients", "2",
                                "--measure-children", "1", "--requests-per-child", "10", "--mrpc", "0",
                                "--no-confirm"], results, [ETC, copy])
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert not seen, f"a server listened on the system's port(s) {sorted(seen)}"
    assert done.stdout.splitlines()[0] == (
        f"pounder tune: Apache prefork + mod_perl with {debian_copy} (Debian's layout; mpm_event replaced by "
        "mpm_prefork, whose children pounder sizes)")
    text = [line.strip() for line in done.stdout[done.stdout.index("Configuration (apache)"):].splitlines()]
    recommendation = json.loads((results / "recommendation.json").read_text())
    workers = recommendation["params"]["max_clients"]
    assert text[1] == (f"# {copy}/mods-available/mpm_prefork.conf (Debian's layout), in place of its "
                       "<IfModule mpm_prefork_module> block:")
    assert text[2] == "<IfModule mpm_prefork_module>" and text[9] == "</IfModule>"
    assert text[7].split() == ["MaxRequestWorkers", str(workers)]
    assert text[12] == "# then: a2dismod mpm_event && a2enmod mpm_prefork && systemctl restart apache2"
    points = [json.loads(path.read_text()) for path in (results / "points").glob("children-*.json")]
    assert points
    for point in points:
        bench = point["bench"]
        assert set(bench["status"]) == {"200"} and bench["requests"]["failed"] == 0
        per_request = bench["bytes"]["body"] / bench["requests"]["complete"]
        assert len(HELLO) + 2 <= per_request <= len(HELLO) + 8, per_request  # "hello from pid N\n"


def test_tune_on_the_systems_own_apache2_conf(public_dir: Path) -> None:
    """/etc/apache2/apache2.conf as the package installed it, stopped once its size measurement
    is stored (the server started from it and served its own index page): /etc unchanged, no
    server on the system's ports. The decisions after it are tested on the copy above."""
    results = public_dir / "results"
    before = _checksums(ETC)
    already = _listening(SYSTEM_PORTS)
    seen: set[int] = set()

    def sized() -> bool:
        seen.update(_listening(SYSTEM_PORTS) - already)
        return (results / "summary.json").exists()

    err = interrupted(pounder_argv("tune", "apache", ETC / "apache2.conf", "--path", "/",
                       "--quick", "--point-duration", "1s", "--max-children", "2", "--results", results),
                      results, sized, limit_s=300)[1]
    assert "Traceback" not in err
    assert not seen and not (_listening(SYSTEM_PORTS) - already)
    assert _checksums(ETC) == before
    sizes = json.loads((results / "points" / "sizes.json").read_text())
    assert sizes["summary"]["children"] >= 1 and not sizes["summary"]["failed"], sizes["summary"]
