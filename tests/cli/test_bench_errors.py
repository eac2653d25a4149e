"""Bad input to ``pounder bench``: exit status 2, one line ``pounder: error: ...`` on stderr, no
traceback, nothing on stdout. Through typer's CliRunner and through a real ``python -m pounder``."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import pounder
from pounder.cli import app
from support import cliutil
from support.cliutil import assert_usage_error, run_pounder, runner, with_pythonpath

URL = "http://127.0.0.1:8080/"


def run_cli(*args: str) -> tuple[int, str, str]:
    return cliutil.run_cli("bench", *args)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["http://127.0.0.1/", "--insecure"], "--insecure applies to https:// targets, and no target is https://"),
        (["https://127.0.0.1/", "--cacert", "/nonexistent/ca.pem"], "--cacert not found: /nonexistent/ca.pem"),
        (["https://127.0.0.1/", "--cert", "/nonexistent/c.pem"], "--cert and --key go together"),
        (["https://127.0.0.1/", "--unix-socket", "/nonexistent"], "no such file"),
        (["not-a-url"], "expected http://HOST[:PORT]/PATH"),
        (["ftp://127.0.0.1/"], "expected http://"),
        (["http://127.0.0.1:70000/"], "invalid URL"),
        (["http://10.1.2.3/"], "--allow-remote"),
        ([], "no URL given"),
        (["-c", "0", URL], "-c/--connections must be between 1 and 100,000, got 0"),
        (["-c", "-5", URL], "invalid -c/--connections '-5'"),
        (["-c", "200k", URL], "-c/--connections must be between 1 and 100,000"),
        (["-c", "ten", URL], "invalid -c/--connections 'ten'"),
        (["-n", "0", URL], "-n/--requests must be between 1"),
        (["-d", "0", URL], "-d/--duration must be more than 0"),
        (["-d", "25h", URL], "at most 24h"),
        (["-d", "soon", URL], "invalid -d/--duration 'soon'"),
        (["--timeout", "0", URL], "--timeout must be more than 0"),
        (["--rate", "20M", URL], "--rate must be between 0 and 10,000,000"),
        (["-t", "0", URL], "-t/--threads must be between 1"),
        (["--throttle", "56k", URL], "invalid --throttle '56k'"),
        (["--rate", "100", "--stages", "10s@100", URL], "--rate and --stages cannot be combined"),
        (["-n", "100", "--stages", "10s@100", URL], "-n/--requests cannot be combined with --stages"),
        (["--calls-per-conn", "10", "--no-keepalive", URL], "--calls-per-conn needs keep-alive"),
        (["--max-in-flight", "10", URL], "--max-in-flight only applies to open loop"),
        (["--order", "shuffle", URL], "--order must be 'sequential' or 'random'"),
        (["-H", "NoColonHere", URL], "invalid -H 'NoColonHere': expected 'Name: value'"),
        (["-A", "justuser", URL], "user:password"),
        (["--json", "-", "--csv", "-", URL], "cannot both write to stdout"),
        (["--json", "/no/such/dir/out.json", URL], "--json: directory /no/such/dir does not exist"),
        (["--bogus", URL], "No such option: --bogus"),
        (["-c"], "requires an argument"),
        ([URL, "extra"], "unexpected extra argument"),
    ],
)
def test_bad_input(args: list[str], fragment: str) -> None:
    assert_usage_error(*run_cli(*args), fragment)


def test_a_name_that_is_not_this_machine() -> None:
    """Refused before it is looked up (tests/e2e/test_name_resolution.py shows that no DNS query
    leaves, and the lookup with --allow-remote)."""
    assert_usage_error(*run_cli("http://no-such-host.invalid/"),
                       "no-such-host.invalid is not in /etc/hosts nor a loopback address, and no DNS query was sent")


def test_url_file_errors(tmp_path: Path) -> None:
    assert_usage_error(*run_cli("-f", str(tmp_path / "missing.txt")), "URL file not found")
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n")
    assert_usage_error(*run_cli("-f", str(empty)), "has no URLs")
    malformed = tmp_path / "urls.txt"
    malformed.write_text(f"{URL}\n# comment\nzero {URL}\n")
    assert_usage_error(*run_cli("-f", str(malformed)), f"{malformed}:3: expected '[WEIGHT] [METHOD] URL'")
    bad_url = tmp_path / "bad-url.txt"
    bad_url.write_text(f"{URL}\n2 ftp://127.0.0.1/\n")
    assert_usage_error(*run_cli("-f", str(bad_url)), f"{bad_url}:2: invalid URL 'ftp://127.0.0.1/'")
    assert_usage_error(*run_cli("-f", str(malformed), URL), "not both")


def test_access_log_errors_send_nothing(testserver: Any, tmp_path: Path) -> None:
    srv = testserver("ok")
    log = tmp_path / "access.log"
    log.write_text('127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 5\n')
    txt_log = tmp_path / "access.txt"
    txt_log.write_text(log.read_text())
    garbage = tmp_path / "garbage.log"
    garbage.write_text("\nnot a log line\n")
    empty = tmp_path / "empty.log"
    empty.write_text("")
    cases = [
        (["--access-log", str(tmp_path / "missing.log"), srv.url], "access log not found"),
        (["--access-log", str(tmp_path), srv.url], "access log is a directory"),
        (["--access-log", str(garbage), srv.url], f"access log {garbage}: no line is in the common or combined log "
                                                  "format (line 2 is not)"),
        (["--access-log", str(empty), srv.url], f"access log {empty} has no lines"),
        (["--exclude-static", srv.url], "--exclude-static and --log-methods need --access-log"),
        (["--log-methods", "GET", srv.url], "--exclude-static and --log-methods need --access-log"),
        (["--access-log", str(log), "--order", "sequential", srv.url], "--order sequential cannot go with it"),
        (["--access-log", str(log), srv.url + "/app"], "must be scheme://host[:port] only"),
        (["--access-log", str(log), "--log-methods", "GET,FETCH", srv.url], "invalid log method 'FETCH'"),
        # an output naming the input: --hdr-log may end in .log; --csv may not (the rule for output
        # names refuses it first), so its case reads a log named .txt
        (["--access-log", str(log), "--hdr-log", str(log), srv.url], "would overwrite the --access-log input"),
        (["--access-log", str(txt_log), "--csv", str(txt_log), srv.url], "would overwrite the --access-log input"),
        (["--access-log", str(log), "--csv", str(log), srv.url], "the file is CSV, not .log"),
        (["--access-log", str(log), "-f", str(log), srv.url], "either -f/--url-file or --access-log"),
    ]
    for args, fragment in cases:
        assert_usage_error(*run_cli("-n", "20", *args), fragment)
    assert srv.count() == 0 and srv.connections() == 0, "a request was sent"


def test_missing_body_file(tmp_path: Path) -> None:
    assert_usage_error(*run_cli("-b", f"@{tmp_path / 'body.json'}", URL), "--body file not found")


def test_unknown_command() -> None:
    result = runner().invoke(app, ["bnch"])
    assert_usage_error(result.exit_code, result.stdout, result.stderr, "No such command 'bnch'")


# ---------------------------------------------------------------------------------------------
# A real process


def run_process(*args: str) -> subprocess.CompletedProcess[str]:
    return run_pounder("bench", *args, env=with_pythonpath(), timeout=60)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["http://127.0.0.1:8080/", "--no-tls-resume"], "--no-tls-resume applies to https:// targets"),
        (["-c", "0", URL], "-c/--connections must be between 1"),
        (["--no-such-flag", URL], "No such option: --no-such-flag"),
        (["http://10.1.2.3:8080/"], "not a loopback address (127.0.0.0/8 or ::1); pass --allow-remote"),
    ],
)
def test_bad_input_in_a_real_process(args: list[str], fragment: str) -> None:
    process = run_process(*args)
    assert_usage_error(process.returncode, process.stdout, process.stderr, fragment)


# ---------------------------------------------------------------------------------------------
# Issue 14, item B (QA): the method and the headers pounder sets itself, refused before anything
# is sent (a real test server must see no request at all).

REQUEST_ERRORS = [
    (["-m", ""], "-m/--method must not be empty"),
    (["-m", "GE T"], "invalid -m/--method 'GE T'"),
    (["-m", "GET\r\nX-Evil: 1"], "invalid -m/--method"),
    (["-H", "Content-Length: abc"], "-H Content-Length is not allowed: pounder sets Content-Length from the body"),
    (["-b", "hi", "-H", "content-length: 2"], "-H content-length is not allowed"),
    (["-H", "Transfer-Encoding: chunked"], "-H Transfer-Encoding is not allowed"),
    (["-H", "Connection: close"], "-H Connection is not allowed: keep-alive is set with --no-keepalive"),
    (["-H", "Host: a b"], "invalid -H 'Host: a b': expected HOST or HOST:PORT"),
    (["-H", "Host:"], "invalid -H 'Host: ': expected HOST or HOST:PORT"),
    (["-H", "Host: a", "-H", "host: b"], "-H Host is given more than once"),
]


def test_bad_method_or_header_sends_nothing(testserver: Any) -> None:
    srv = testserver("ok")
    for args, fragment in REQUEST_ERRORS:
        assert_usage_error(*run_cli("-n", "20", *args, srv.url + "/"), fragment)
    assert srv.count() == 0 and srv.connections() == 0, "a request was sent"


def test_host_header_replaces_the_url_host(testserver: Any, tmp_path: Path) -> None:
    """-H Host is allowed (virtual hosts, like wrk, hey -host, oha, vegeta): every request answered."""
    srv = testserver("ok")
    out = tmp_path / "host.json"
    code, _, stderr = run_cli("-n", "20", "-c", "2", "-H", "Host: example.test:8080", "--json", str(out),
                              srv.url + "/")
    assert code == 0, stderr
    result = pounder.load_result(out)
    assert (result.requests.complete, result.requests.failed, result.requests.non_2xx) == (20, 0, 0)
    assert ("Host", "example.test:8080") in result.options.http.headers
    assert srv.count() == 20
