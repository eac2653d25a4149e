"""A count of one is singular in what pounder prints (issue 39, item 21: "1 entries", "1 children",
"1 rounds"): each place that printed one counted through pounder._units.count_text / children_text,
read here with a count of one from the real readers and commands."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from pounder.load import BenchSpec
from pounder.pool import Warmed
from pounder.results import describe_replay
from pounder.traffic import read_access_log
from pounder.tune import render_tune, resume
from support import cliutil
from support.proctree import TreeFactory
from support.recorded import recorded_copy

ONE_PLURAL = re.compile(r"(?<![\d.,/])1 (children|entries|rounds|lines|processes|requests|samples|trials|options|"
                        r"workers|nodes|functions)\b")
LINE = '127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 31 "-" "x"\n'
HAR = {"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [{
    "startedDateTime": "2026-11-23T10:00:00.000Z", "time": 5,
    "request": {"method": "GET", "url": "http://127.0.0.1:9/a", "httpVersion": "HTTP/1.1", "headers": [],
                "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
    "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": [], "cookies": [],
                 "content": {"size": 0, "mimeType": "text/plain"}, "redirectURL": "", "headersSize": -1,
                 "bodySize": 0},
    "cache": {}, "timings": {"send": 0, "wait": 5, "receive": 0}}]}}


def _singular(text: str) -> None:
    assert ONE_PLURAL.search(text) is None, text


def test_one_line_and_one_entry_read_from_a_log_and_a_har(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text(LINE)
    har = tmp_path / "x.har"
    har.write_text(json.dumps(HAR))
    mix = read_access_log(log).describe()[0]
    assert mix == f"Access log {log}: 1 line, 1 request in the mix"
    assert read_access_log(har).describe()[0] == f"HAR file {har}: 1 entry, 1 request in the mix"
    _singular("\n".join([*read_access_log(log).describe(), *read_access_log(har).describe()]))
    for path, read in ((log, "1 line read"), (har, "1 entry read")):
        spec = BenchSpec.from_options("http://127.0.0.1:9", replay=str(path))
        assert spec.replay is not None
        described = describe_replay(spec.replay.info)
        assert described[1].startswith(f"{read}, 1 request kept"), described
        _singular("\n".join(described))


def test_mem_of_a_lone_process() -> None:
    factory = TreeFactory()
    try:
        with socket.socket() as listening:  # a server listens: pounder mem checks it is one
            listening.bind(("127.0.0.1", 0))
            listening.listen()
            tree = factory.start(pass_fds=(listening.fileno(),))
            code, out, err = cliutil.run_cli("mem", "--server-pid", str(tree.pid), "--ram", "1G")
    finally:
        factory.stop_all()
    assert code == 0, err
    assert " MiB for 1 process " in out, out
    _singular(out)


def test_one_child_warmed_and_one_round() -> None:
    warmed = Warmed(children=1, warmed=1, requests=10, settled=False, rounds=1, rps=None, uss=None, failing=False)
    assert warmed.describe() == "warm: 1/1 child served after 1 round"


def test_a_tune_text_with_one_warm_up_round(tmp_path: Path) -> None:
    run = recorded_copy("tune-outputs", tmp_path)
    result = resume(run)
    result.measure["warm_rounds"] = 1
    text = render_tune(result)
    assert "  warm-up: 1 round, " in text, text
    _singular(text)
