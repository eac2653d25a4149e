"""bench --scenario against a real Django admin (issue 29): the skeleton of ``django-admin
startproject``, migrated on SQLite, a superuser made with ``createsuperuser --noinput``, served by
gunicorn (2 sync workers) on a free loopback port. Each virtual user GETs the login form (the CSRF
token captured from it, the csrftoken cookie kept in its jar), POSTs the login (302 and a
sessionid cookie), then loops on GET /admin/, which answers 200 only to a logged-in user (else a
302 to the login), its path the login's Location (a captured link goes into the path as it is:
/admin/, not /admin%2F). The counts are checked against gunicorn's own access log."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pounder.servers import GunicornServer, gunicorn_missing
from support.cliutil import assert_usage_error, run_cli
from support.schemas import validate

django = pytest.importorskip("django", reason="Django is not installed (pip install django)")

PASSWORD = "pounder-S3cret pass&word"
SCENARIO = """\
[vars]
user = "admin"
password = "PASSWORD"

[[login]]
name = "login form"
path = "/admin/login/"
capture = [{ var = "csrf", body = 'name="csrfmiddlewaretoken" value="([^"]+)"' }]

[[login]]
name = "log in"
path = "/admin/login/?next=/admin/"
form = { csrfmiddlewaretoken = "{{csrf}}", username = "{{user}}", password = "{{password}}" }
expect = [302]
capture = [{ var = "session", cookie = "sessionid" }, { var = "to", header = "Location", regex = '^/(.*)$' }]

[[loop]]
name = "admin index"
path = "/{{to}}"
expect = [200]
capture = [{ var = "title", body = '<title>(Site administration)' }]
"""
USERS = 4
REQUESTS = 200
# "127.0.0.1 - - [date] "GET /admin/ HTTP/1.1" 200 ..." (gunicorn's default access log format)
_LOG_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/1\.1" (?P<status>\d{3}) ')


@dataclass
class Admin:
    server: GunicornServer
    access_log: Path
    scenario: Path

    def log_lines(self) -> list[re.Match[str]]:
        text = self.access_log.read_text()
        found = [_LOG_LINE.search(line) for line in text.splitlines()]
        assert all(found), text
        return [match for match in found if match is not None]

    def lines_after(self, before: int, expected: int) -> list[re.Match[str]]:
        """The lines logged after the first ``before``, once there are ``expected`` of them (gunicorn
        logs a request after it has answered: the last line may come a moment after the answer; at
        most 5 s): exactly what was logged, more or fewer than expected included."""
        deadline = time.monotonic() + 5
        while len(self.log_lines()) - before < expected and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.log_lines()[before:]

    def settled_count(self) -> int:
        """The log's lines once it has stopped growing for a second (a request the run aborted
        may still be logged, or never; at most 15 s)."""
        count, since, deadline = len(self.log_lines()), time.monotonic(), time.monotonic() + 15
        while time.monotonic() - since < 1.0 and time.monotonic() < deadline:
            time.sleep(0.1)
            now = len(self.log_lines())
            if now != count:
                count, since = now, time.monotonic()
        return count


def _django_admin(*args: str, cwd: Path, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "django", *args], cwd=cwd, env=env, check=True, capture_output=True,
                   timeout=120)  # fmt: skip


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Admin]:
    missing = gunicorn_missing()
    if missing:
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("django")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mysite.settings", "PYTHONPATH": str(root / "mysite"),
           "DJANGO_SUPERUSER_PASSWORD": PASSWORD}  # fmt: skip
    _django_admin("startproject", "mysite", cwd=root, env={**env, "DJANGO_SETTINGS_MODULE": ""})
    project = root / "mysite"
    _django_admin("migrate", "--noinput", cwd=project, env=env)
    _django_admin("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.test",
                  cwd=project, env=env)  # fmt: skip
    access_log = root / "access.log"
    server = GunicornServer(root / "gunicorn", "mysite.wsgi:application", pythonpath=str(project), workers=2,
                            env={"DJANGO_SETTINGS_MODULE": "mysite.settings"}, ready_path="/admin/login/",
                            extra_args=["--access-logfile", str(access_log)])  # fmt: skip
    scenario = root / "admin.toml"
    scenario.write_text(SCENARIO.replace('"PASSWORD"', json.dumps(PASSWORD)))
    try:
        server.start(timeout_s=60)
        yield Admin(server, access_log, scenario)
    finally:
        server.stop()


def test_every_virtual_user_logs_into_the_django_admin_once(admin: Admin, tmp_path: Path) -> None:
    before = len(admin.log_lines())
    out = tmp_path / "run.json"
    code, stdout, stderr = run_cli("bench", "--scenario", str(admin.scenario), admin.server.url, "-c", str(USERS),
                                   "-t", "2", "-n", str(REQUESTS), "--json", str(out))  # fmt: skip
    print(stdout)
    assert code == 0, stderr
    result = json.loads(out.read_text())
    validate(result, "bench-result")
    form, login, index = result["steps"]
    assert [step["name"] for step in result["steps"]] == ["login form", "log in", "admin index"]
    assert [step["part"] for step in result["steps"]] == ["login", "login", "loop"]
    for step in (form, login, index):  # no session ended: every user logged in once, then looped
        assert (step["failed"], step["unexpected_status"], step["capture_missed"]) == (0, 0, 0), step
        assert step["latency"]["count"] == step["complete"]
        assert 0 < step["latency"]["percentiles"]["50"] <= step["latency"]["percentiles"]["99"]
    assert form["complete"] == login["complete"] == USERS
    assert index["complete"] == REQUESTS - 2 * USERS
    assert result["requests"]["complete"] == REQUESTS and result["requests"]["failed"] == 0
    assert result["status"] == {"200": REQUESTS - USERS, "302": USERS}
    assert result["options"]["scenario"] == str(admin.scenario)

    # the server saw exactly these requests: the login POSTs answered 302, every GET /admin/ 200
    seen = admin.lines_after(before, REQUESTS)
    assert len(seen) == REQUESTS
    by_kind: dict[tuple[str, str, str], int] = {}
    for match in seen:
        key = (match["method"], match["path"], match["status"])
        by_kind[key] = by_kind.get(key, 0) + 1
    assert by_kind == {("GET", "/admin/login/", "200"): USERS, ("POST", "/admin/login/?next=/admin/", "302"): USERS,
                       ("GET", "/admin/", "200"): REQUESTS - 2 * USERS}  # fmt: skip

    # the text report: the scenario and a row per step with its percentiles
    assert f"Scenario:                 {admin.scenario} (2 login, 1 loop step" in stdout
    rows = {line.split()[0] + " " + line.split()[1]: line.split() for line in stdout.splitlines()
            if line.startswith(("login form", "log in", "admin index"))}  # fmt: skip
    assert rows["log in"][2:7] == ["login", str(USERS), "0", "0", "0"]
    assert rows["admin index"][2:7] == ["loop", str(REQUESTS - 2 * USERS), "0", "0", "0"]
    # latencies as the table prints them: two decimals below 100 ms, whole ms from 1,000 ms (a busy machine)
    assert all(re.fullmatch(r"\d+(\.\d+)?", cell) for cell in rows["admin index"][7:10]), rows["admin index"]


def test_a_scenario_mistake_is_one_line_before_anything_is_sent(admin: Admin, tmp_path: Path) -> None:
    before = len(admin.log_lines())
    bad = tmp_path / "bad.toml"
    bad.write_text(admin.scenario.read_text().replace("{{csrf}}", "{{token}}"))
    code, stdout, stderr = run_cli("bench", "--scenario", str(bad), admin.server.url, "-n", "10")
    assert_usage_error(code, stdout, stderr, f"{bad}: login step 2: form.csrfmiddlewaretoken: unknown variable "
                                             "{{token}}")  # fmt: skip
    code, stdout, stderr = run_cli("bench", "--scenario", str(admin.scenario), admin.server.url, "-n", "10",
                                   "-m", "POST")  # fmt: skip
    assert_usage_error(code, stdout, stderr, "-m/--method cannot go with --scenario")
    assert len(admin.log_lines()) == before


def test_shares_of_the_virtual_users_merge_into_the_whole_run(admin: Admin) -> None:
    """What agents do with --ray (pounder.agents): each share of the spec (its share of the users,
    every other request slot) run with export_histograms, the results merged by the engine."""
    from pounder import BenchSpec, __version__
    from pounder.load import load_engine
    from pounder.results import BenchResult

    spec = BenchSpec.from_options(admin.server.url, scenario=admin.scenario, connections=USERS, requests=60)
    engine = load_engine()
    before = len(admin.log_lines())
    runs = [engine.start({**spec.share_spec(index, 2), "export_histograms": True}) for index in range(2)]
    for run in runs:
        assert run.wait(60.0)
    shares = [json.loads(run.result()) for run in runs]
    merged = BenchResult.from_engine(engine.merge([json.dumps(share) for share in shares]),
                                     options=spec.run_options(), started_at="now", interrupted=False,
                                     tool_version=__version__)  # fmt: skip
    assert merged.steps is not None
    for index, step in enumerate(merged.steps):
        assert step.complete == sum(share["steps"][index]["complete"] for share in shares)
        assert step.latency.count == step.complete
        assert (step.failed, step.unexpected_status, step.capture_missed) == (0, 0, 0)
    assert [step.complete for step in merged.steps[:2]] == [USERS, USERS]  # 2 users in each share
    assert merged.requests.complete == sum(step.complete for step in merged.steps) == 60
    assert len(admin.lines_after(before, 60)) == 60


def test_open_loop_users_log_in_once_each(admin: Admin, tmp_path: Path) -> None:
    """Open loop: a virtual user per connection the schedule needs (at most -c), each logged in once;
    a request due while every user is busy (the logins are slow: PBKDF2) is unsent, not sent."""
    before = len(admin.log_lines())
    out = tmp_path / "open.json"
    code, _, stderr = run_cli("bench", "--scenario", str(admin.scenario), admin.server.url, "--rate", "50", "-d", "3s",
                              "-c", str(USERS), "--json", str(out), "--quiet")  # fmt: skip
    assert code == 0, stderr
    result = json.loads(out.read_text())
    form, login, index = result["steps"]
    assert 1 <= login["complete"] <= form["complete"] <= USERS  # the run may end between a user's two logins
    assert index["complete"] > 0
    assert all((step["unexpected_status"], step["capture_missed"]) == (0, 0) for step in result["steps"])
    # at most a request still in flight when the run ended (aborted after the drain); nothing else failed
    failed = sum(step["failed"] for step in result["steps"])
    assert failed == result["requests"]["failed"] == result["errors"]["aborted"]
    sent = result["requests"]["complete"] + result["requests"]["failed"]
    assert form["complete"] + login["complete"] + index["complete"] == result["requests"]["complete"]
    assert result["status"] == {"200": result["requests"]["complete"] - login["complete"], "302": login["complete"]}
    # every complete request was logged; one aborted in flight may have been, later, or not at all
    assert result["requests"]["complete"] <= admin.settled_count() - before <= sent


def test_users_that_never_get_past_the_login_fail_the_run_in_one_line(admin: Admin, tmp_path: Path) -> None:
    """A wrong password: Django answers the login POST 200 (the form again, with an error), not the
    302 the step expects; no user reaches the loop, the run exits 1 after its report and files."""
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(admin.scenario.read_text().replace(json.dumps(PASSWORD), '"not the password"'))
    out = tmp_path / "wrong.json"
    code, stdout, stderr = run_cli("bench", "--scenario", str(wrong), admin.server.url, "-c", "1", "-n", "8",
                                   "--json", str(out))  # fmt: skip
    assert code == 1, (stdout, stderr)
    assert stderr.splitlines() == [
        "pounder: error: no virtual user got past the login steps: log in: 4 unexpected status"
    ], stderr
    assert "Steps" in stdout and "Traceback" not in stderr
    result = json.loads(out.read_text())
    assert [step["complete"] for step in result["steps"]] == [4, 4, 0]
    assert result["status"] == {"200": 8}
