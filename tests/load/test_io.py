"""The engine's I/O path (``--io auto|uring|epoll``): the choice the result and the report state,
the pre-flight refusal of ``--io uring`` where it cannot be (one line, exit 2, nothing sent), the
saved JSON (schema, older results without ``io``), a merged run's path (an experiment file's
``io``: tests/experiment/test_file.py). Real engine, real test servers on loopback; each run is a
few dozen requests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import pounder
from pounder import UsageError, bench
from pounder.agents._report import merged_io
from pounder.cli import app
from pounder.results import IoInfo
from support.schemas import validate

URING_REFUSED = re.compile(r"^pounder: error: --io uring: (.+); use --io auto or epoll$")


def run_cli(*args: str) -> Any:
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg,unused-ignore]
    except TypeError:  # click >= 8.2: always separate
        runner = CliRunner()
    return runner.invoke(app, ["bench", *args])


@pytest.mark.parametrize("io", ["uring", "epoll"])
def test_asked_for_path_is_the_one_stated(testserver: Any, io: str) -> None:
    srv = testserver()
    result = bench(srv.url + "/", connections=2, requests=40, io=io)
    assert result.io == IoInfo(path=io, reason="asked for")  # type: ignore[arg-type]
    assert result.requests.complete == 40 and result.requests.failed == 0
    assert srv.count() == 40


def test_auto_takes_io_uring_on_this_machine(testserver: Any) -> None:
    # the machines pounder is built and tested on run Linux 6.1 or later with io_uring on (as the
    # engine's own test this_kernel_takes_the_uring_path says)
    srv = testserver()
    result = bench(srv.url + "/", connections=1, requests=10)
    assert result.io is not None and result.io.path == "uring", result.io
    assert re.fullmatch(r"auto: the kernel \(\S+\) allows it", result.io.reason), result.io.reason
    assert srv.count() == 10


def test_auto_takes_epoll_for_a_throttle(testserver: Any) -> None:
    srv = testserver()
    result = bench(srv.url + "/", connections=1, requests=5, throttle="1MB/s")
    assert result.io == IoInfo(path="epoll", reason="auto: a throttled receive runs on the epoll path only")
    assert srv.count() == 5


@pytest.mark.parametrize(
    ("scheme", "extra", "why"),
    [
        pytest.param("https", [], "HTTPS runs on the epoll path only", id="https"),
        pytest.param("http", ["--throttle", "1MB/s"], "a throttled receive runs on the epoll path only", id="throttle"),
    ],
)
def test_uring_where_it_cannot_be_is_one_line_exit_2_nothing_sent(
    testserver: Any, scheme: str, extra: list[str], why: str
) -> None:
    srv = testserver()
    url = srv.url.replace("http://", f"{scheme}://") + "/"
    result = run_cli("--io", "uring", "-n", "10", *extra, url)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    match = URING_REFUSED.match(lines[0])
    assert match and match.group(1) == why, lines[0]
    stats = srv.stats()
    assert (stats["requests"], stats["connections"]) == (0, 0), stats  # not even the TLS probe


def test_uring_refused_by_the_library_before_anything_is_sent(testserver: Any) -> None:
    srv = testserver()
    with pytest.raises(UsageError, match=r"^--io uring: a throttled receive runs on the epoll path only; use"):
        bench(srv.url + "/", requests=5, throttle="1MB/s", io="uring")
    assert srv.count() == 0


@pytest.mark.parametrize("value", ["io_uring", "", "EPOLL"])
def test_bad_io_value(testserver: Any, value: str) -> None:
    srv = testserver()
    result = run_cli("--io", value, "-n", "5", srv.url + "/")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"pounder: error: --io must be auto, uring or epoll, got {value!r}"
    assert srv.count() == 0


def test_report_line_and_json(testserver: Any, tmp_path: Path) -> None:
    srv = testserver()
    path = tmp_path / "r.json"
    result = run_cli("--io", "epoll", "-c", "2", "-n", "20", "--json", str(path), srv.url + "/")
    assert result.exit_code == 0, result.stderr
    assert "\nI/O:                      epoll (asked for)\n" in result.stdout, result.stdout
    document = json.loads(path.read_text())
    assert document["io"] == {"path": "epoll", "reason": "asked for"}
    validate(document, "bench-result")
    assert pounder.load_result(path).io == IoInfo(path="epoll", reason="asked for")
    # a result from before the io_uring path: no io, read as None and written again without it
    del document["io"]
    path.write_text(json.dumps(document))
    old = pounder.load_result(path)
    assert old.io is None
    assert "io" not in old.to_dict() and "I/O:" not in pounder.render_report(old)
    validate(old.to_dict(), "bench-result")
    # an io that is not the engine's
    path.write_text(json.dumps({**document, "io": {"path": "kqueue", "reason": "x"}}))
    with pytest.raises(UsageError, match=r"'io.path' must be one of uring, epoll, mixed; got 'kqueue'"):
        pounder.load_result(path)


def _share(path: str, reason: str) -> dict[str, Any]:
    return {"io": {"path": path, "reason": reason}}


def test_merged_io_of_agents() -> None:
    auto = "auto: the kernel (6.8.0) allows it"
    assert merged_io([(0, _share("uring", auto)), (1, _share("uring", auto))]) == IoInfo("uring", auto)
    assert merged_io([(0, {}), (1, {})]) is None  # agents of a pounder from before the io_uring path
    other = "auto: the kernel (6.1.0) allows it"
    assert merged_io([(0, _share("uring", auto)), (1, _share("uring", other))]) == IoInfo(
        "uring", f"agent 0: io_uring ({auto}); agent 1: io_uring ({other})"
    )
    mixed = merged_io([(0, _share("uring", auto)), (1, _share("epoll", "auto: x")), (2, _share("uring", auto))])
    assert mixed == IoInfo("mixed", f"agents 0, 2: io_uring ({auto}); agent 1: epoll (auto: x)")
    assert mixed.describe().startswith("mixed (agents 0, 2: io_uring")
    with pytest.raises(pounder.results.MalformedResultError, match="agent 1: 'io'"):
        merged_io([(0, _share("uring", auto)), (1, {"io": "uring"})])
