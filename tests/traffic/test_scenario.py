"""Scenario files (pounder.traffic._scenario): the reader's checks, each one line naming the file, the
step and the key, and the engine's pieces it builds (form and JSON encodings, {{var}} slots)."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from pounder import BenchSpec, UsageError, __version__
from pounder.load import LoadOptions
from pounder.results import BenchResult, Histogram, StepStats, render_report
from pounder.results._steps import scenario_failure
from pounder.traffic import read_scenario
from support.cliutil import run_cli

LOGIN = """
[vars]
user = "admin"
password = "pa ss&word"

[[login]]
name = "form"
path = "/admin/login/"
capture = [{ var = "csrf", body = 'name="csrfmiddlewaretoken" value="([^"]+)"' }]

[[login]]
name = "log in"
path = "/admin/login/?next=/admin/"
form = { csrfmiddlewaretoken = "{{csrf}}", username = "{{user}}", password = "{{ password }}" }
expect = [302]
capture = [{ var = "sid", cookie = "sessionid" }, { var = "loc", header = "Location", regex = '^(/.*)$' }]

[[loop]]
name = "index"
path = "/admin/"
expect = 200
think = "250ms"
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def text_of(pieces: list[Any]) -> str:
    """The pieces as text, a slot as <var:enc>."""
    return "".join(
        piece["text"].decode() if "text" in piece else f"<{piece['var']}:{piece['enc']}>" for piece in pieces
    )


def built(tmp_path: Path, text: str, **kwargs: Any) -> dict[str, Any]:
    scenario = read_scenario(write(tmp_path, text))
    return dict(scenario.engine_scenario("127.0.0.1:8000", keepalive=True, **kwargs))


def test_a_login_scenario_is_built_into_heads_bodies_and_slots(tmp_path: Path) -> None:
    scenario = read_scenario(write(tmp_path, LOGIN))
    assert scenario.variables == ("csrf", "sid", "loc")
    assert (scenario.login, scenario.loop) == (2, 1)
    assert scenario.describe().endswith("s.toml: 2 login steps, 1 loop step")
    engine = scenario.engine_scenario("127.0.0.1:8000", keepalive=True)
    assert engine["vars"] == ["csrf", "sid", "loc"] and engine["login"] == 2
    form, login, index = engine["steps"]
    ua = f"User-Agent: pounder/{__version__}\r\nAccept: */*\r\n"
    assert text_of(form["head"]) == f"GET /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n{ua}"
    assert form["body"] is None and form["expect"] is None and form["think_s"] == 0.0
    assert form["captures"] == [
        {"var": 0, "from": "body", "name": None, "regex": 'name="csrfmiddlewaretoken" value="([^"]+)"'}
    ]
    assert text_of(login["head"]) == (
        f"POST /admin/login/?next=/admin/ HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n{ua}"
        "Content-Type: application/x-www-form-urlencoded\r\n"
    )
    # [vars] values are encoded when read; the captured token is a form-encoded slot
    assert text_of(login["body"]) == "csrfmiddlewaretoken=<0:form>&username=admin&password=pa+ss%26word"
    assert login["expect"] == [302] and not login["is_head"]
    assert login["captures"][1] == {"var": 2, "from": "header", "name": "Location", "regex": "^(/.*)$"}
    assert index["expect"] == [200] and index["think_s"] == 0.25 and index["target"] == 0


def test_json_bodies_escape_text_and_take_slots_inside_strings(tmp_path: Path) -> None:
    engine = built(
        tmp_path,
        """
[vars]
quote = "say \\"hi\\"\\n"
[[login]]
path = "/token"
capture = [{ var = "tok", body = '"token":"([^"]*)"' }]
[[loop]]
path = "/api/items/{{tok}}?q={{quote}}"
json = { token = "Bearer {{tok}}", n = 3, ok = true, list = [1.5, "{{quote}}"], inner = { "{{tok}}" = "x" } }
""",
    )
    step = engine["steps"][1]
    assert step["name"] == "POST /api/items/{{tok}}?q={{quote}}"
    # a captured value in the path: the path encoding; a [vars] value in the query: a form value
    assert text_of(step["head"]).startswith("POST /api/items/<0:path>?q=say+%22hi%22%0A HTTP/1.1\r\n")
    assert "Content-Type: application/json\r\n" in text_of(step["head"])
    assert text_of(step["body"]) == (
        '{"token":"Bearer <0:json>","n":3,"ok":true,"list":[1.5,"say \\"hi\\"\\n"],"inner":{"<0:json>":"x"}}'
    )
    template = text_of(step["body"]).replace("<0:json>", "abc")
    assert json.loads(template)["list"][1] == 'say "hi"\n'


def test_a_text_body_headers_and_bench_options_in_the_head(tmp_path: Path) -> None:
    engine = built(
        tmp_path,
        """
[[login]]
path = "/session"
method = "put"
body = "id={{ sid_x }}"
capture = [{ var = "sid_x", header = "X-Id" }]
[[loop]]
path = "/a"
method = "HEAD"
headers = { "X-Token" = "{{sid_x}}", Accept = "text/html", Host = "example.test" }
[[loop]]
path = "/b"
method = "POST"
""".replace("{{ sid_x }}", "x"),
        headers=[("X-Global", "1"), ("X-Token", "global")],
        generated=[("Authorization", "Basic eDp5")],
    )
    put, head, post = engine["steps"]
    assert put["name"] == "PUT /session" and text_of(put["body"]) == "id=x"
    assert "Content-Type" not in text_of(put["head"])
    assert head["is_head"] and head["body"] is None
    # the step's own headers replace bench's (Host, Accept) and -H of the same name, in place
    assert text_of(head["head"]) == (
        "HEAD /a HTTP/1.1\r\nHost: example.test\r\nUser-Agent: "
        f"pounder/{__version__}\r\nAccept: text/html\r\nX-Token: <0:raw>\r\n"
        "X-Global: 1\r\nAuthorization: Basic eDp5\r\n"
    )
    assert post["body"] == []  # a POST without a body: the engine sends Content-Length: 0


def test_no_keepalive_closes_every_step(tmp_path: Path) -> None:
    scenario = read_scenario(write(tmp_path, '[[loop]]\npath = "/"\n'))
    step = scenario.engine_scenario("h:1", keepalive=False)["steps"][0]
    assert text_of(step["head"]).endswith("Connection: close\r\n")


@pytest.mark.parametrize(("text", "message"), [
    ('[[login]]\npath = "/"\n', r"s\.toml: no \[\[loop\]\] step"),
    ('[[loop]]\npath = "/"\nfoo = 1\n', r"s\.toml: loop step 1: foo: unknown key \(a step has name, method"),
    ('steps = 1\n[[loop]]\npath = "/"\n', r"s\.toml: steps: unknown key \(a scenario file has vars, login, loop\)"),
    ('[[loop]]\nname = "x"\n', r"loop step 1: path: needed: the path .* starting with /"),
    ('[[loop]]\npath = "http://a/"\n', r"loop step 1: path: must start with / .*got 'http://a/'"),
    ('[[loop]]\npath = "x"\n', r"loop step 1: path: must start with /"),
    ('[[loop]]\npath = "/{{x"\n', r"loop step 1: path: an unclosed \{\{: a variable is \{\{name\}\}"),
    ('[vars]\nx = "1"\n[[loop]]\npath = "/{{x}}/{{y"\n', r"path: an unclosed \{\{"),
    ('[[loop]]\npath = "/"\nbody = "a {{ b"\n', r"loop step 1: body: an unclosed \{\{"),
    ('[[loop]]\npath = "/"\njson = 5\n', r"loop step 1: json: must be a table or a list"),
    ('[[loop]]\npath = "/"\njson = "x"\n', r"loop step 1: json: must be a table or a list"),
    ('[vars]\nevil = "a\\r\\nX-Injected: 1"\n[[loop]]\npath = "/"\nheaders = { X-Test = "{{evil}}" }\n',
     r"loop step 1: headers\.X-Test: holds a CR, LF or NUL \(from a \[vars\] value\): a header value is one line"),
    ('[vars]\nevil = "a\\u0000"\n[[loop]]\npath = "/"\nheaders = { X-Test = "x{{evil}}" }\n',
     r"headers\.X-Test: holds a CR, LF or NUL"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", body = \'x(\\d+)\\Z\'}]\n',
     r"capture\[0\]\.body: invalid regular expression \(the engine's Rust syntax\): regex parse error"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", body = "(a)(?#c)"}]\n',
     r"capture\[0\]\.body: invalid regular expression"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", body = \'(a)\\1\'}]\n', r"capture\[0\]\.body: invalid regular"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", body = "(a"}]\n', r"capture\[0\]\.body: invalid regular"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "a b", body = "(a)"}]\n',
     r"capture\[0\]\.var: a variable's name is letters, digits and _, not starting with a digit, got 'a b'"),
    ('[[loop]]\npath = "/{{nope}}"\n', r"loop step 1: path: unknown variable \{\{nope\}\}: define it in \[vars\]"),
    ('[[loop]]\npath = "/{{a-b}}"\n', r"loop step 1: path: invalid variable '\{\{a-b\}\}'"),
    ('[[loop]]\npath = "/{{t}}"\n[[loop]]\npath = "/"\ncapture = [{var = "t", header = "X"}]\n',
     r"loop step 1: path: \{\{t\}\} is used before any step captures it \(the first to capture it is loop step 2\)"),
    ('[[loop]]\npath = "/{{t}}"\ncapture = [{var = "t", header = "X"}]\n',
     r"loop step 1: path: \{\{t\}\} is used before any step captures it"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", body = "no group"}]\n',
     r"loop step 1: capture\[0\]\.body: the regular expression must have exactly one group .* it has 0"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", body = "(a)(b)"}]\n', r"capture\[0\]\.body: .* it has 2"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", header = "X", regex = "("}]\n',
     r"capture\[0\]\.regex: invalid regular expression"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", body = "(?=a)(b)"}]\n',
     r"capture\[0\]\.body: invalid regular expression .*look-around"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", cookie = "a", header = "b"}]\n',
     r"capture\[0\]: only one of header, cookie or body: header or cookie, not both"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t"}]\n',
     r"capture\[0\]: needs one of header = NAME, cookie = NAME or body = 'REGEX'"),
    ('[[loop]]\npath = "/"\ncapture = [{var = "t", cookie = "a", from = "b"}]\n', r"capture\[0\]\.from: unknown key"),
    ('[[loop]]\npath = "/"\ncapture = [{cookie = "a"}]\n', r"capture\[0\]\.var: needed"),
    ('[vars]\nt = "1"\n[[loop]]\npath = "/"\ncapture = [{var = "t", cookie = "a"}]\n',
     r"capture\[0\]\.var: 't' is a \[vars\] value"),
    ('[[loop]]\npath = "/"\nform = {a = "1"}\njson = {b = 2}\n',
     r"loop step 1: json: a step has one body: form or json"),
    ('[[loop]]\npath = "/"\nmethod = "HEAD"\nbody = "x"\n', r"body: a HEAD request cannot have a body"),
    ('[[loop]]\npath = "/"\nmethod = "GE T"\n', r"loop step 1: method: invalid method"),
    ('[[loop]]\npath = "/"\nexpect = [200, 700]\n', r"loop step 1: expect: must be statuses from 100 to 599"),
    ('[[loop]]\npath = "/"\nexpect = []\n', r"expect: must be statuses"),
    ('[[loop]]\npath = "/"\nthink = "5 parsecs"\n', r"loop step 1: think: .*5 parsecs"),
    ('[[loop]]\npath = "/"\nthink = "2h"\n', r"think: must be between 0 and 1h"),
    ('[[loop]]\npath = "/"\nheaders = { Cookie = "a=1" }\n', r"headers\.Cookie: the virtual user's cookie jar"),
    ('[[loop]]\npath = "/"\nheaders = { "Content-Length" = "1" }\n', r"headers\.Content-Length: not allowed"),
    ('[[loop]]\npath = "/"\nheaders = { "Bad Name" = "1" }\n', r"headers\.Bad Name: invalid header name"),
    ('[[loop]]\npath = "/"\nheaders = { X = "a\\nb" }\n', r"headers\.X: invalid header: control characters"),
    ('[[loop]]\npath = "/"\nform = { a = {b = 1} }\n', r"form\.a: must be text, a number"),
    ('[[loop]]\npath = "/"\njson = { a = 1979-05-27 }\n', r"json\.a: date has no JSON form"),
    ('[[loop]]\npath = "/"\nbody = 3\n', r"body: must be text"),
    ('[[loop]]\nname = "a"\npath = "/"\n[[loop]]\nname = "a"\npath = "/b"\n',
     r"loop step 2: name: 'a' is also the name of loop step 1"),
    ('[vars]\n"a b" = "1"\n[[loop]]\npath = "/"\n', r"vars\.a b: a variable's name is letters"),
    ('[vars]\na = [1]\n[[loop]]\npath = "/"\n', r"vars\.a: must be text, a number or true/false"),
    ('login = 3\n[[loop]]\npath = "/"\n', r"s\.toml: login: must be steps, each a \[\[login\]\] table"),
    ('[[loop]\npath = "/"\n', r"s\.toml:1: invalid TOML"),
])  # fmt: skip
def test_every_mistake_is_one_line_naming_the_file_step_and_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        read_scenario(write(tmp_path, text))
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / "s.toml"))


def test_regexes_are_the_engines_and_python_says_nothing_of_them(tmp_path: Path) -> None:
    """[[:alpha:]] is an ASCII class to the engine (Python's re would warn of a nested set)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scenario = read_scenario(
            write(tmp_path, '[[loop]]\npath = "/"\ncapture = [{var = "t", body = "[[:alpha:]](a)"}]\n')
        )
    assert scenario.steps[0].captures[0].regex == "[[:alpha:]](a)"


def test_paths_and_queries_are_encoded_as_the_engine_encodes_a_slot_there(tmp_path: Path) -> None:
    engine = built(
        tmp_path,
        """
[vars]
dir = "a b/c~d*%2F%zz"
q = "x&y=z/ é"
[[login]]
path = "/"
capture = [{ var = "loc", header = "Location" }]
[[loop]]
path = "/{{loc}}/{{dir}}/é x?{{loc}}&q={{q}}&r={{loc}}#frag"
""",
    )
    head = text_of(engine["steps"][1]["head"])
    # the path: a [vars] value and the text as the engine's path encoding (unreserved, sub-delims,
    # :@/?, %XX kept; a lone % and the rest escaped); the query's slots and [vars]: form values
    assert head.startswith(
        "GET /<0:path>/a%20b/c~d*%2F%25zz/%C3%A9%20x?<0:form>&q=x%26y%3Dz%2F+%C3%A9&r=<0:form> HTTP/1.1\r\n"
    )


def test_a_cookie_header_from_bench_cannot_go_with_a_scenario(tmp_path: Path) -> None:
    path = write(tmp_path, '[[loop]]\npath = "/"\n')
    with pytest.raises(UsageError, match=r"^-H 'Cookie: \.\.\.' cannot go with --scenario: each virtual user's"):
        BenchSpec.from_options(URL, scenario=path, headers=["cookie: a=1"], requests=5)


def test_the_file_must_be_a_small_regular_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="scenario file not found"):
        read_scenario(tmp_path / "none.toml")
    with pytest.raises(UsageError, match="is a directory"):
        read_scenario(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="scenario file .*fifo is not a regular file"):
        read_scenario(fifo)
    big = write(tmp_path, "# " + "x" * (1 << 20) + "\n", "big.toml")
    with pytest.raises(UsageError, match="larger than the limit of 1 MiB"):
        read_scenario(big)


URL = "http://127.0.0.1:8000"


@pytest.mark.parametrize(("options", "message"), [
    ({"method": "POST"}, "-m/--method cannot go with --scenario"),
    ({"body": "x"}, "-b/--body cannot go with --scenario"),
    ({"content_type": "text/plain"}, "-T/--content-type cannot go with --scenario"),
    ({"cookies": ["a=1"]}, "--cookie cannot go with --scenario"),
    ({"calls_per_conn": 5}, "--calls-per-conn cannot go with --scenario"),
    ({"url_file": "urls.txt"}, "-f/--url-file cannot go with --scenario"),
    ({"access_log": "access.log"}, "--access-log cannot go with --scenario"),
    ({"order": "random"}, "--order cannot go with --scenario"),
])  # fmt: skip
def test_bench_options_that_cannot_go_with_a_scenario(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    path = write(tmp_path, '[[loop]]\npath = "/"\n')
    load = {key: value for key, value in options.items() if key not in ("url_file", "access_log", "order")}
    other = {key: value for key, value in options.items() if key in ("url_file", "access_log", "order")}
    with pytest.raises(UsageError, match=message):
        BenchSpec.from_options(URL, options=LoadOptions(scenario=path, **load), requests=5, **other)


def test_the_url_is_the_servers_base(tmp_path: Path) -> None:
    path = write(tmp_path, '[[loop]]\npath = "/"\n')
    with pytest.raises(UsageError, match="with --scenario the URL is the server's base"):
        BenchSpec.from_options(URL + "/admin/", scenario=path, requests=5)
    with pytest.raises(UsageError, match="--scenario needs the server's base URL"):
        BenchSpec.from_options(None, scenario=path, requests=5)


def test_the_bench_spec_carries_the_scenario_to_the_engine_and_every_share(tmp_path: Path) -> None:
    path = write(tmp_path, LOGIN)
    spec = BenchSpec.from_options(
        URL + "/", scenario=str(path), connections=4, requests=100, headers=["X-Run: 7"], auth="u:p"
    )
    engine = spec.engine_spec()
    assert engine["scenario"] is not None and [step["name"] for step in engine["scenario"]["steps"]] == [
        "form",
        "log in",
        "index",
    ]
    assert "X-Run: 7\r\nAuthorization: Basic dTpw\r\n" in text_of(engine["scenario"]["steps"][2]["head"])
    assert len(engine["targets"]) == 1 and engine["targets"][0]["tcp"] == "127.0.0.1:8000"
    share = spec.share_spec(1, 2)
    assert share["scenario"] == engine["scenario"] and share["connections"] == 2
    assert spec.run_options().scenario == str(path)
    assert BenchSpec.from_options(URL, requests=5).engine_spec()["scenario"] is None
    assert ("--scenario", str(path)) in LoadOptions(scenario=path).input_files()


def _histogram(count: int, us: int) -> dict[str, Any]:
    return {
        "count": count,
        "min_us": us,
        "max_us": us,
        "mean_us": float(us),
        "stdev_us": 0.0,
        "percentiles": {p: us for p in ("50", "66", "75", "80", "90", "95", "98", "99", "99.9", "100")},
    }


def test_step_figures_are_read_written_and_reported(tmp_path: Path) -> None:
    spec = BenchSpec.from_options(URL, scenario=write(tmp_path, LOGIN), connections=2, requests=10)
    engine = {
        "elapsed_s": 1.0,
        "warmup": {"complete": 0, "failed": 0, "elapsed_s": 0.0},
        "requests": {"complete": 10, "failed": 0, "non_2xx": 2, "unsent": 0, "late": 0},
        "bytes": {"total": 1, "body": 1, "sent": 1},
        "connections": {"opened": 2},
        "status": {"200": 8, "302": 2},
        "errors": dict.fromkeys(("refused", "reset", "timeout", "bad_response", "other", "aborted"), 0),
        "latency": {name: _histogram(10, 1500) for name in ("corrected", "uncorrected", "schedule_lag")},
        "phases": {name: _histogram(10, 1500) for name in ("connect", "waiting", "processing", "total")},
        "series": [],
        "client_cpu": {"user_s": 0.0, "sys_s": 0.0},
        "histogram": "",
        "steps": [
            {
                "name": "form",
                "part": "login",
                "complete": 2,
                "failed": 0,
                "unexpected_status": 0,
                "capture_missed": 0,
                "latency": _histogram(2, 2000),
            },
            {
                "name": "log in",
                "part": "login",
                "complete": 2,
                "failed": 0,
                "unexpected_status": 0,
                "capture_missed": 0,
                "latency": _histogram(2, 9000),
            },
            {
                "name": "index",
                "part": "loop",
                "complete": 6,
                "failed": 0,
                "unexpected_status": 1,
                "capture_missed": 0,
                "latency": _histogram(6, 1200),
            },
        ],
    }
    result = BenchResult.from_engine(
        json.dumps(engine), options=spec.run_options(), started_at="now", interrupted=False, tool_version=__version__
    )
    assert result.steps is not None and [s.requests for s in result.steps] == [2, 2, 6]
    again = BenchResult.from_json(result.to_json())
    assert again == result and again.to_dict()["options"]["scenario"] == str(tmp_path / "s.toml")
    text = render_report(result)
    assert "Scenario:" in text and "2 login, 1 loop step" in text
    lines = text.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("Steps")))
    assert lines[at + 1].split() == [
        "step",
        "part",
        "requests",
        "failed",
        "unexpected",
        "no",
        "capture",
        "p50",
        "ms",
        "p90",
        "ms",
        "p99",
        "ms",
    ]
    assert lines[at + 2].split() == ["form", "login", "2", "0", "0", "0", "2.000", "2.000", "2.000"]
    assert lines[at + 4].split() == ["index", "loop", "6", "0", "1", "0", "1.200", "1.200", "1.200"]
    plain = BenchSpec.from_options(URL, requests=5)
    without = BenchResult.from_engine(
        json.dumps({**engine, "steps": None}),
        options=plain.run_options(),
        started_at="now",
        interrupted=False,
        tool_version=__version__,
    )
    assert "steps" not in without.to_dict() and "scenario" not in without.to_dict()["options"]
    assert "Steps" not in render_report(without)


def _steps(*rows: tuple[str, str, int, int, int, int]) -> tuple[StepStats, ...]:
    return tuple(
        StepStats(name=name, part=part, complete=complete, failed=failed, unexpected_status=unexpected,  # type: ignore[arg-type]
                  capture_missed=missed, latency=Histogram.from_dict(_histogram(complete, 1000), "latency"))
        for name, part, complete, failed, unexpected, missed in rows
    )  # fmt: skip


def test_a_scenario_whose_users_never_get_through_says_so_in_one_line() -> None:
    assert scenario_failure(None) is None
    assert scenario_failure(_steps(("form", "login", 4, 0, 0, 0), ("index", "loop", 5, 0, 4, 0))) is None
    assert scenario_failure(
        _steps(("form", "login", 8, 1, 0, 0), ("log in", "login", 8, 0, 6, 2), ("index", "loop", 0, 0, 0, 0))
    ) == (  # fmt: skip
        "no virtual user got past the login steps: form: 1 failed; log in: 6 unexpected status, 2 no capture"
    )
    assert scenario_failure(_steps(("index", "loop", 3, 0, 1, 2))) == (
        "no loop step succeeded: index: 1 unexpected status, 2 no capture"
    )
    assert scenario_failure(_steps(("form", "login", 2, 0, 0, 0), ("index", "loop", 0, 0, 0, 0))) == (
        "no virtual user got past the login steps: the run ended first (give it more requests or time)"
    )


def test_the_help_shows_the_steps_tables() -> None:
    for command in ("bench", "compare"):
        code, stdout, _ = run_cli(command, "--help")
        assert code == 0
        assert "[[login]]" in stdout and "[[loop]]" in stdout, stdout  # rich markup would eat [login]


@pytest.mark.parametrize("io_path", ["epoll"])  # a scenario runs on the epoll path only
def test_a_capture_that_matched_a_line_break_is_named_not_a_bare_no_capture(
        testserver: Any, tmp_path: Path, io_path: str) -> None:
    """Issue 39 (21): a body capture matches "hello, world\\n"; its variable goes raw into a
    header, which cannot hold the line break. The engine starts the session over, as for a
    capture that found nothing, and counts it apart (``capture_unsafe``): the one line and the
    report name the cause (it said "no capture" although the capture matched)."""
    from pounder import bench

    scenario = tmp_path / "s.toml"
    scenario.write_text('[[login]]\npath = "/"\ncapture = [{ var = "t", body = "(?s)(hello.*)" }]\n'
                        '[[loop]]\npath = "/x"\nheaders = { X-T = "{{t}}" }\n')  # fmt: skip
    srv = testserver(mode="ok")
    result = bench(srv.url, scenario=str(scenario), requests=6, connections=1, io=io_path)
    assert result.steps is not None
    login = result.steps[0]
    assert (login.complete, login.capture_missed, login.capture_unsafe) == (6, 6, 6) and srv.count() == 6
    assert scenario_failure(result.steps) == (
        "no virtual user got past the login steps: GET /: 6 no capture (6 matched a value holding a line break or "
        "NUL, which a header cannot carry)")  # fmt: skip
    assert ("GET /: 6 of its 6 no capture matched a value holding a line break or NUL, which a header cannot carry"
            in render_report(result))  # fmt: skip
    document = json.loads(result.to_json())
    assert document["steps"][0]["capture_unsafe"] == 6
    assert BenchResult.from_json(result.to_json()).steps == result.steps
    del document["steps"][0]["capture_unsafe"]  # a result from before it: none
    assert BenchResult.from_json(json.dumps(document)).steps[0].capture_unsafe == 0  # type: ignore[index]
