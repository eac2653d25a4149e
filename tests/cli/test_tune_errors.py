"""Bad input to ``pounder tune``: exit status 2, one line ``pounder: error: ...`` on stderr, no
traceback, nothing on stdout, no server started and no results directory created. Through a real
``python -m pounder tune`` run in an empty working directory (where the default results directory
would appear)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pounder.pool import KINDS
from support.cliutil import pounder_command, run_pounder, with_pythonpath
from support.forkrun import run_forked
from support.recorded import recorded_copy

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIR = ROOT / "python"
PSGI = ROOT / "tests" / "apps" / "app.psgi"


def run_tune(cwd: Path, *args: str, real: bool = False) -> subprocess.CompletedProcess[str]:
    """``pounder tune ARGS`` in ``cwd``: forked from a process that imported pounder already
    (tests/support/forkrun.py: the same status and output, without 0.7 s of CPU per case), or a
    real ``python -m pounder`` (``real``: one case here keeps the import and the interpreter's exit)."""
    run = run_pounder if real else run_forked
    return run("tune", *args, cwd=cwd, env=with_pythonpath(), timeout=60)


def assert_usage_error(process: subprocess.CompletedProcess[str], fragment: str) -> str:
    assert "Traceback" not in process.stderr + process.stdout, process.stderr
    assert process.returncode == 2, (process.returncode, process.stdout, process.stderr)
    assert process.stdout == ""
    lines = process.stderr.splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith("pounder: error: "), lines[0]
    assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    """An empty working directory: the default results directory (./pounder-tune-DATE-TIME) would
    be created here."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    return folder


def check(cwd: Path, args: list[str], fragment: str) -> str:
    line = assert_usage_error(run_tune(cwd, *args), fragment)
    assert list(cwd.iterdir()) == [], "a results directory was created"
    return line


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "fragment"), [
    ([], "give SERVER TARGET (e.g. 'gunicorn app:app' or 'apache httpd.conf'), --demo or --resume DIR"),
    (["gunicorn"], "give SERVER TARGET"),
    (["--quick"], "give SERVER TARGET"),
    (["nginx", "nginx.conf"], f"unknown server 'nginx': use one of {', '.join(KINDS)}"),
    (["Gunicorn", "app:app"], "unknown server 'Gunicorn'"),
    (["gunicorn", "app:app", "--ram", "lots"], "invalid --ram 'lots': use e.g. 512M, 4G"),
    (["gunicorn", "app:app", "--ram", "4"], "--ram '4' is less than 1 MiB: give a unit"),
    (["gunicorn", "app:app", "--ram", "8M"], "--ram must be at least 16M"),
    (["gunicorn", "app:app", "--ram", "cgroup:"], "--ram cgroup: needs a cgroup after the colon"),
    (["gunicorn", "app:app", "--ram", "cgroup:/pounder-no-such-cgroup"], "--ram cgroup:/pounder-no-such-cgroup: "),
    (["gunicorn", "app:app", "--p99", "soon"], "invalid --p99 'soon'"),
    (["gunicorn", "app:app", "--p99", "0ms"], "--p99 must be more than 0 and at most 10m, got 0s"),
    (["gunicorn", "app:app", "--p99", "1h"], "--p99 must be more than 0 and at most 10m"),
    (["gunicorn", "app:app", "--mrpc", "0,ten"], "invalid --mrpc '0,ten': give whole numbers separated by commas"),
    (["gunicorn", "app:app", "--mrpc", "-1"], "--mrpc needs values >= 0 (0 = unlimited)"),
    (["gunicorn", "app:app", "--mrpc", ""], "invalid --mrpc ''"),
    (["gunicorn", "app:app", "--clients", "ten"], "invalid --clients 'ten': expected a whole number"),
    (["gunicorn", "app:app", "--clients", "0"], "--clients must be between 1 and 10000, got 0"),
    (["gunicorn", "app:app", "--max-children", "5k"], "--max-children must be between 1 and 4096, got 5000"),
    (["gunicorn", "app:app", "--measure-children", "0"], "--measure-children must be between 1 and 64"),
    (["gunicorn", "app:app", "--requests-per-child", "1.5"], "invalid --requests-per-child '1.5'"),
    (["gunicorn", "app:app", "--point-duration", "10ms"], "--point-duration must be between 500ms and 10m"),
    (["gunicorn", "app:app", "--path", "app"], "--path must start with / and hold no spaces, got 'app'"),
    (["gunicorn", "app:app", "--trials", "2"], "--trials must be between 3 and 20, got 2"),
    (["gunicorn", "app:app", "--peak-rate", "fast"], "invalid --peak-rate 'fast'"),
    (["gunicorn", "app:app", "--peak-rate", "100", "--clients", "8"], "give one target: --clients or --peak-rate"),
    (["gunicorn", "app:app", "--exclude-static"], "--exclude-static is for --access-log"),
    (["gunicorn", "app:app", "--throttle", "56kbit"], "--throttle (slow clients) needs --no-proxy"),
    (["gunicorn", "app:app", "--no-proxy"], "--no-proxy says slow or kept-alive clients hold the children"),
    (["gunicorn", "app:app", "--throttle", "slow", "--no-proxy"], "--throttle"),
    (["gunicorn", "app:app", "--server-cpus", "0", "--load-cpus", "0"], "must not share a CPU"),
    (["gunicorn", "app:app", "--server-cpus", "4096"], "--server-cpus"),
    (["gunicorn", "app:app", "--access-log", "/nonexistent/access.log"], "/nonexistent/access.log"),
    (["gunicorn", "app:app", "--urls", "/nonexistent/urls.txt"], "/nonexistent/urls.txt"),
    (["gunicorn", "app:app", "--access-log", "/"], "access log is a directory: /"),
    (["gunicorn", "app:app", "--stop-signal", "QUIT"], "--stop-signal is for the command server only"),
    (["starman", str(PSGI), "--stop-signal", "QUIT"], "--stop-signal is for the command server only"),
    (["starman", str(PSGI), "--pythonpath", "/srv"], "--pythonpath is for gunicorn and uwsgi only"),
    (["apache", "httpd.conf", "--preload"], "--preload is for gunicorn, starman, puma, unicorn and uwsgi only "
                                            "(Apache preloads with PerlRequire in its conf)"),
    (["apache", "httpd.conf", "--no-preload"], "--preload is for gunicorn, starman, puma, unicorn and uwsgi"),
    (["command", "server {port}", "--preload"], "--preload is for gunicorn, starman, puma, unicorn and uwsgi"),
    (["apache", "httpd.conf", "--env", "A=1"], "--env is for gunicorn, starman, php-fpm, puma, unicorn, uwsgi and the "
                                               "command server only (use SetEnv / PerlSetEnv in the conf)"),
    (["apache", "/no/such/httpd.conf"], "apache: no such configuration file /no/such/httpd.conf"),
    (["gunicorn", "app:app", "--threads", "4"], "--threads is for puma only"),
    (["unicorn", "config.ru", "--threads", "1"], "--threads is for puma only"),
    (["puma", "config.ru", "--threads", "0"], "puma: threads must be N or MIN,MAX with 0 <= MIN <= MAX and "
                                              "1 <= MAX <= 1024, not '0'"),
    (["puma", "config.ru", "--threads", "4,2"], "puma: threads must be N or MIN,MAX"),
    (["puma", "config.ru", "--threads", "many"], "puma: threads must be N or MIN,MAX"),
    (["puma", "/no/such/config.ru", "--threads", "4"], "puma: no such rackup file /no/such/config.ru"),
    (["--demo", "--threads", "4"], "--demo takes no server option"),
    (["gunicorn", "app:app", "--env", "FOO"], "invalid --env 'FOO': expected NAME=VALUE"),
    (["--demo", "--listen", "192.0.2.1"], "--listen 192.0.2.1 would open the server under test to the network: "
                                          "add --allow-remote"),
    (["--demo", "--listen", "192.0.2.1", "--allow-remote"], "--listen 192.0.2.1: not an address of this machine"),
    (["--demo", "--listen", "localhost"], "--listen must be an IPv4 address of this machine"),
    (["--demo", "--agents", "2"], "--agents and --agents-per-node need --ray"),
    (["--demo", "--ray", "nowhere"], "--ray must be local, auto or HOST:PORT"),
    (["gunicorn", "app:app", "--env", "=1"], "invalid --env '=1': expected NAME=VALUE"),
    (["gunicorn", "app:app", "--env", "A=1", "--env", "B"], "invalid --env 'B'"),
    (["gunicorn", "app:app", "--env", "A-B=1"], "invalid --env 'A-B=1'"),
    (["command", "server {port}", "--env", "NOVALUE"], "invalid --env 'NOVALUE'"),
    (["gunicorn", "app"], "gunicorn: the app must be given as module:callable, not 'app'"),
    (["gunicorn", "wsgi_app.py"], "gunicorn: the app must be given as module:callable"),
    (["starman", "/no/such/app.psgi"], "starman: no such PSGI file /no/such/app.psgi"),
    (["command", "server --workers {workers}"], "command: the command template must contain {port}"),
    (["command", "server {port} --threads {threads}"], "command: unknown placeholder {threads}"),
    (["command", "server {port"], "command: bad braces"),
    (["command", "server '{port}"], "command: cannot split the command template into words"),
    (["command", "server {port}", "--stop-signal", "NOPE"], "command: unknown stop signal 'NOPE'"),
    (["--demo", "gunicorn", "app:app"], "--demo takes no SERVER TARGET"),
    (["--demo", "gunicorn"], "--demo takes no SERVER TARGET"),
    (["--demo", "--ram", "8M"], "--ram must be at least 16M"),
    (["--demo", "--mrpc", "x"], "invalid --mrpc 'x'"),
    (["gunicorn", "app:app", "--bogus"], "No such option: --bogus"),
    (["gunicorn", "app:app", "extra"], "unexpected extra argument"),
    (["gunicorn", "app:app", "--ram"], "requires an argument"),
])
def test_bad_input(cwd: Path, args: list[str], fragment: str) -> None:
    check(cwd, args, fragment)


def test_bad_input_in_a_real_process(cwd: Path) -> None:
    """The cases above run forked; one runs as a real ``python -m pounder`` (import and exit too)."""
    assert_usage_error(run_tune(cwd, "gunicorn", "app:app", "--bogus", real=True), "No such option: --bogus")
    assert list(cwd.iterdir()) == []


def test_bad_input_names_the_server_file(cwd: Path, tmp_path: Path) -> None:
    psgi = tmp_path / "missing.psgi"
    line = check(cwd, ["starman", str(psgi)], "starman: no such PSGI file")
    assert str(psgi) in line


@pytest.mark.parametrize("extra", [
    ["--quick"], ["--demo"], ["--ram", "1G"], ["--clients", "5"], ["--p99", "300ms"], ["--mrpc", "0"],
    ["--path", "/x"], ["--no-preload"], ["--preload"], ["--env", "A=1"], ["--results", "elsewhere"],
    ["--point-duration", "3s"], ["--max-children", "4"], ["--stop-signal", "QUIT"], ["gunicorn", "app:app"],
    ["--threads", "4"],
    ["--listen", "127.0.0.2"], ["--allow-remote"],
])
def test_resume_takes_no_other_option(cwd: Path, tmp_path: Path, extra: list[str]) -> None:
    folder = tmp_path / "run"  # not a results directory: a resume that went ahead would fail on it
    check(cwd, ["--resume", str(folder), *extra],
          "--resume DIR takes no other option (but --ray, --agents, --agents-per-node): the run goes on with the "
          "settings stored in DIR")
    assert not folder.exists()
    assert not (cwd / "elsewhere").exists()


def test_results_in_a_file_path_is_refused_before_anything_starts(cwd: Path, tmp_path: Path) -> None:
    # bad options are found before the results directory is made
    results = tmp_path / "out"
    check(cwd, ["gunicorn", "app:app", "--results", str(results), "--mrpc", "x"], "invalid --mrpc 'x'")
    assert not results.exists()


def test_results_in_a_non_empty_directory(cwd: Path, tmp_path: Path) -> None:
    results = tmp_path / "out"
    results.mkdir()
    (results / "mine.txt").write_text("keep\n")
    check(cwd, ["gunicorn", "app:app", "--results", str(results)],
          f"the results directory {results} already exists and is not empty")


def test_results_that_is_a_file_is_called_a_file(cwd: Path, tmp_path: Path) -> None:
    results = tmp_path / "out"
    results.write_text("keep\n")
    line = check(cwd, ["gunicorn", "app:app", "--results", str(results)],
                 f"the results directory {results} is a file, not a directory (give another --results)")
    assert "not empty" not in line
    assert results.read_text() == "keep\n"


def test_results_in_a_non_empty_directory_is_refused(cwd: Path, tmp_path: Path) -> None:
    """What is right already (the one-line form is the xfail above): exit 2, the error as the last
    line, no traceback, the directory untouched."""
    results = tmp_path / "out"
    results.mkdir()
    (results / "mine.txt").write_text("keep\n")
    process = run_tune(cwd, "gunicorn", "app:app", "--results", str(results))
    assert process.returncode == 2 and process.stdout == "" and "Traceback" not in process.stderr
    assert process.stderr.splitlines()[-1] == (
        f"pounder: error: the results directory {results} already exists and is not empty (use --resume to "
        "continue a run there, or another --results)")
    assert sorted(p.name for p in results.iterdir()) == ["mine.txt"]
    assert list(cwd.iterdir()) == []


@pytest.mark.parametrize("exists", [True, False])
def test_resume_without_tune_json(cwd: Path, tmp_path: Path, exists: bool) -> None:
    folder = tmp_path / "run"
    if exists:
        folder.mkdir()
    check(cwd, ["--resume", str(folder)], f"{folder} is not a pounder tune results directory (no tune.json in it)")


def test_resume_without_tune_json_is_refused(cwd: Path, tmp_path: Path) -> None:
    """What is right already (the one-line form is the xfail above)."""
    folder = tmp_path / "run"
    folder.mkdir()
    process = run_tune(cwd, "--resume", str(folder))
    assert process.returncode == 2 and process.stdout == "" and "Traceback" not in process.stderr
    assert process.stderr.splitlines()[-1] == (
        f"pounder: error: {folder} is not a pounder tune results directory (no tune.json in it)")
    assert list(folder.iterdir()) == [] and list(cwd.iterdir()) == []


def _results_dir(folder: Path, manifest: object) -> Path:
    folder.mkdir()
    (folder / "tune.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    return folder


def test_resume_of_another_document(cwd: Path, tmp_path: Path) -> None:
    folder = _results_dir(tmp_path / "run", {"schema": "pounder/bench-result/1"})
    check(cwd, ["--resume", str(folder)], "tune.json is not a pounder/tune/2 document")


def test_resume_of_a_broken_tune_json(cwd: Path, tmp_path: Path) -> None:
    folder = _results_dir(tmp_path / "run", "{not json")
    line = check(cwd, ["--resume", str(folder)], "is not valid JSON")
    assert "continue with --resume" not in line


@pytest.mark.parametrize("options", [{"mrpc_values": None}, {"clients": "ten"}])
def test_resume_with_bad_stored_options(cwd: Path, tmp_path: Path, options: dict[str, object]) -> None:
    manifest = {"schema": "pounder/tune/1", "adapter": {"kind": "gunicorn", "app": "app:app"}, "options": options}
    folder = _results_dir(tmp_path / "run", manifest)
    assert_usage_error(run_tune(cwd, "--resume", str(folder)), "")
    assert sorted(p.name for p in folder.iterdir()) == ["tune.json"]


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--stop-signal", "QUIT"], "--stop-signal"),
    (["--env", "NOT-A-PAIR"], "--env"),
    (["--pythonpath", "/srv"], "--pythonpath"),
    (["--no-preload"], "--preload"),
])
def test_demo_refuses_server_options(cwd: Path, extra: list[str], fragment: str) -> None:
    # --ram 1M: should the option be ignored, the run still stops at the RAM check, before anything starts
    check(cwd, ["--demo", "--ram", "1M", *extra], fragment)


def test_apache_conf_that_is_not_utf8(cwd: Path, tmp_path: Path) -> None:
    conf = tmp_path / "app.conf"
    conf.write_bytes(b"# Configuration de l'\xe9quipe\nPerlModule My::App\n")
    # --ram 1M: once the conf is read, the run stops at the RAM check, before anything starts
    check(cwd, ["apache", str(conf), "--ram", "1M"], "--ram must be at least 16M")


# ---------------------------------------------------------------------------------------------
# issue 14, item 13: what the server needs (its program, the application, the paths it is given)
# is checked before anything starts


def _no_process_mentions(text: str) -> bool:
    import psutil

    return not any(text in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))


@pytest.mark.parametrize(("where", "fragment"), [
    ("/nonexistent", "gunicorn: --pythonpath /nonexistent is not a directory"),
    ("file", "gunicorn: --pythonpath {tmp}/app.py is not a directory"),
    ("empty", "gunicorn: cannot find the module '{module}' of {module}:app in --pythonpath {tmp}/empty, on "
              "PYTHONPATH or in site-packages"),
    (None, "gunicorn: cannot find the module '{module}' of {module}:app on PYTHONPATH or in site-packages (gunicorn "
           "runs in a directory of its own: give --pythonpath DIR for a module there)"),
])
def test_gunicorn_app_and_pythonpath_are_checked_first(cwd: Path, tmp_path: Path, where: str | None,
                                                        fragment: str) -> None:
    # no other test's process names it, nor the same case's on another xdist worker (same tmp name)
    module = f"pounder_item13_{os.getpid()}_{tmp_path.name.replace('-', '_')}"
    (tmp_path / "app.py").write_text("def app(environ, start_response): ...\n")
    (tmp_path / "empty").mkdir()
    (cwd / f"{module}.py").write_text("def app(environ, start_response): ...\n")  # gunicorn would not see it
    args = ["gunicorn", f"{module}:app"]
    if where is not None:
        args += ["--pythonpath", {"file": str(tmp_path / "app.py"), "empty": str(tmp_path / "empty")}.get(where, where)]
    line = assert_usage_error(run_tune(cwd, *args, "--quick"),
                              fragment.format(tmp=tmp_path, module=module))
    assert "--resume" not in line
    assert sorted(p.name for p in cwd.iterdir()) == [f"{module}.py"], "a results directory was created"
    assert _no_process_mentions(module), "a server was started"


def test_gunicorn_module_in_a_package_on_a_relative_pythonpath(cwd: Path) -> None:
    (cwd / "src" / "pkg").mkdir(parents=True)
    (cwd / "src" / "pkg" / "__init__.py").write_text("")
    (cwd / "src" / "pkg" / "wsgi.py").write_text("def app(environ, start_response): ...\n")
    line = assert_usage_error(run_tune(cwd, "gunicorn", "pkg.nowsgi:app", "--pythonpath", "src"),
                              "cannot find the module 'pkg.nowsgi'")
    assert f"--pythonpath {cwd / 'src'}" in line  # absolute: where it was looked for
    assert sorted(p.name for p in cwd.iterdir()) == ["src"]


@pytest.mark.parametrize(("command", "fragment"), [
    ("pounder-no-such-server --port {port}", "command: cannot find pounder-no-such-server on PATH"),
    ("/nonexistent/server --port {port}", "command: /nonexistent/server is not an executable file"),
])
def test_command_program_is_checked_first(cwd: Path, command: str, fragment: str) -> None:
    check(cwd, ["command", command], fragment)
    assert _no_process_mentions(command.split()[0])


def test_traffic_files_that_cannot_be_replayed(cwd: Path, tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("http://127.0.0.1:8000/a\nPOST http://127.0.0.1:8000/b\n")
    check(cwd, ["gunicorn", "app:app", "--urls", str(urls)], "POST is not replayed by tune")
    log = tmp_path / "access.log"
    log.write_text("not an access log line\n")
    check(cwd, ["gunicorn", "app:app", "--access-log", str(log)], str(log))
    check(cwd, ["gunicorn", "app:app", "--urls", str(urls), "--path", "/x"], "--path and --urls/--access-log")


def test_a_run_in_use_is_not_resumed_twice(tmp_path: Path) -> None:
    """Issue 25 item 7: two ``--resume DIR`` at once both ran, loaded each other and overwrote each
    other's points. The directory is held by the process writing it (a kernel lock, gone with the
    process, SIGKILL included): a second one is refused, naming the first."""
    run = recorded_copy("tune-noleak", tmp_path)
    for made in ("recommendation.json", "recommendation.txt"):
        (run / made).unlink()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pounder.tune import ResultsDir; ResultsDir(sys.argv[1]).hold(); "
        "print('held', flush=True); time.sleep(60)"), str(run)], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(PYTHON_DIR)})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        before = sorted(p.name for p in (run / "points").iterdir())
        refused = run_tune(tmp_path, "--resume", str(run))
        assert_usage_error(refused, f"the results directory {run} is in use by another pounder (pid {holder.pid}): "
                                    "let it end, or stop it, before resuming there")
        assert sorted(p.name for p in (run / "points").iterdir()) == before
        assert not (run / "recommendation.json").exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    time.sleep(0.1)
    done = run_tune(tmp_path, "--resume", str(run), real=True)  # the lock went with the killed process
    assert done.returncode == 0, done.stderr
    assert (run / "recommendation.json").is_file()


@pytest.mark.parametrize(("cpus", "fragment"), [
    ("0", "--cpus must be more than 0 (a number of CPUs: 0.5, 1.5, 4), got 0"),
    ("-1", "--cpus must be more than 0 (a number of CPUs: 0.5, 1.5, 4), got -1"),
    ("1.5x", "invalid --cpus '1.5x': give a number of CPUs (0.5, 1.5, 4), or cgroup / cgroup:PATH"),
    ("0.001", "--cpus must be at least 0.01"),
    ("cgroup:", "--cpus cgroup: needs a cgroup after the colon"),
    ("cgroup:/pounder-no-such-cgroup", "--cpus cgroup:/pounder-no-such-cgroup: no such cpu cgroup"),
])
def test_cpus_bad_values(cwd: Path, cpus: str, fragment: str) -> None:
    """Issue 38: ``--cpus`` is a decimal number of CPUs above 0, or cgroup[:PATH]; one line, exit 2."""
    check(cwd, ["--demo", f"--cpus={cpus}"], fragment)
    if cpus == "-1":  # as typed with a space too
        check(cwd, ["--demo", "--cpus", cpus], fragment)


def test_cpus_above_the_machine(cwd: Path) -> None:
    """A quota cannot give more CPU than the CPUs the server may run on: the count is named (the
    affinity of this process, or --server-cpus)."""
    here = len(os.sched_getaffinity(0))
    check(cwd, ["--demo", "--cpus", str(here + 1)],
          f"--cpus {here + 1} is more than the {here} CPU{'s' * (here != 1)} the server can run on here: a quota "
          "cannot give more CPU than there is")
    check(cwd, ["--demo", "--cpus", "1.5", "--server-cpus", "0"],
          "--cpus 1.5 is more than the 1 CPU the server can run on here")


def _own_cpu_quota() -> bool:
    """Whether the cgroup this process is in (or one above it) sets a CPU quota."""
    from pounder import UsageError
    from pounder.servers import cpu_quota
    try:
        cpu_quota()
    except UsageError:
        return False
    return True


def test_cpus_cgroup_without_a_quota(cwd: Path) -> None:
    """``--cpus cgroup`` where the cgroup pounder runs in (and those above it) sets no CPU quota."""
    if _own_cpu_quota():
        pytest.skip("this process's cgroup sets a CPU quota")
    check(cwd, ["--demo", "--cpus", "cgroup"], "sets no CPU quota (nor does any cgroup above it): give --cpus a "
                                               "number of CPUs")


def test_cpus_without_a_writable_cpu_cgroup(cwd: Path) -> None:
    """No cpu cgroup pounder can write to (the cgroup file systems read-only, as a container mounts
    them; a private mount namespace so that nothing else sees it): the sentence says what is needed."""
    if os.geteuid() != 0 or not Path("/usr/bin/unshare").exists():
        pytest.skip("needs root and unshare to make the cgroup file systems read-only in a private mount namespace")
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if " - cgroup" in line]
    remount = " && ".join(f"mount -o remount,bind,ro {m}" for m in mounts)
    process = subprocess.run(["/usr/bin/unshare", "-m", "sh", "-c", f"mount --make-rprivate / && {remount} && exec "
                              + pounder_command("tune", "--demo", "--cpus", "1")], cwd=cwd, capture_output=True,
                             text=True, env=with_pythonpath(), timeout=60, check=False)
    line = assert_usage_error(process, "--cpus needs a cpu cgroup pounder can write to (")
    assert "run pounder as root, or in a cgroup delegated to its user with the cpu controller" in line
    assert list(cwd.iterdir()) == []
