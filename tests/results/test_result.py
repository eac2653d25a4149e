"""Results: parsing the engine JSON, derived figures, JSON round trip and schema, text report, CSV."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import pounder
from pounder import BenchResult, BenchSpec, SecondSample, UsageError, load_result, render_csv, render_report
from pounder.results import MalformedResultError, format_ms
from pounder.results._measured import PERCENTILES
from pounder.results._result import reply_rate
from support.schemas import REGISTRY

DATA = Path(__file__).resolve().parents[1] / "data"
SCHEMA_PATH = Path(pounder.__file__).parent / "schemas" / "bench-result.schema.json"
STARTED = "2025-01-01T12:00:00.000Z"


def engine_json() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "engine_result.json").read_text())
    return data


def make_result(
    data: dict[str, Any] | None = None,
    interrupted: bool = False,
    url: str | None = "http://127.0.0.1:8080/",
    **options: Any,
) -> BenchResult:
    spec = BenchSpec.from_options(url, **(options or {"rate": "500", "duration": "10s"}))
    return BenchResult.from_engine(
        json.dumps(data or engine_json()),
        options=spec.run_options(),
        started_at=STARTED,
        interrupted=interrupted,
        tool_version="0.1.0",
    )


@pytest.fixture
def open_result() -> BenchResult:
    return make_result()


@pytest.fixture
def closed_result() -> BenchResult:
    return make_result(connections=50, threads=2, duration="10s")


@pytest.fixture
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def empty_engine_json() -> dict[str, Any]:
    data = engine_json()
    zero = {
        "count": 0,
        "min_us": 0,
        "max_us": 0,
        "mean_us": 0.0,
        "stdev_us": 0.0,
        "percentiles": dict.fromkeys(PERCENTILES, 0),
    }
    data.update(
        elapsed_s=0.4,
        series=[],
        status={},
        histogram="",
        requests={"complete": 0, "failed": 0, "non_2xx": 0, "unsent": 0, "late": 0},
        warmup={"complete": 0, "failed": 0, "elapsed_s": 0.0},
        bytes={"total": 0, "body": 0, "sent": 0},
        latency=dict.fromkeys(("corrected", "uncorrected", "schedule_lag"), zero),
        phases=dict.fromkeys(("connect", "waiting", "processing", "total"), zero),
    )
    return data


# ---------------------------------------------------------------------------------------------
# Parsing and derived figures


def test_from_engine(open_result: BenchResult) -> None:
    assert open_result.requests.complete == 4971
    assert open_result.errors.nonzero() == {"reset": 1, "timeout": 1, "aborted": 1}
    assert open_result.status == {"200": 4959, "404": 12}
    assert open_result.latency.corrected.percentiles["99.9"] == 83581
    assert open_result.histogram.startswith("HISTFAAA")
    assert open_result.options.load.kind == "open"
    assert len(open_result.series) == 11


def test_derived_closed(closed_result: BenchResult) -> None:
    derived = closed_result.derived
    assert derived.requests_per_s == pytest.approx(4971 / 10.0021)
    assert derived.time_per_request_ms == pytest.approx(50 * 10.0021 * 1000 / 4971)
    assert derived.time_per_request_all_ms == pytest.approx(10.0021 * 1000 / 4971)
    assert derived.received_kib_per_s == pytest.approx(21420039 / 1024 / 10.0021)
    assert derived.sent_kib_per_s == pytest.approx(457608 / 1024 / 10.0021)
    # per completed request, warm-up included: the 3 failed requests are not in the divisor
    assert derived.client_cpu_us_per_request == pytest.approx((0.412 + 0.633) * 1e6 / (4971 + 100))


def test_derived_open_has_no_ab_time_per_request(open_result: BenchResult) -> None:
    assert open_result.derived.time_per_request_ms is None
    assert open_result.derived.time_per_request_all_ms is not None


def test_reply_rate_ignores_final_partial_second(open_result: BenchResult) -> None:
    rate = open_result.derived.reply_rate
    assert rate is not None
    assert (rate.samples, rate.min, rate.max) == (10, 470.0, 500.0)
    assert rate.avg == pytest.approx(497.0)
    assert rate.stddev == pytest.approx(9.4868, abs=1e-3)


def sample(second: int, complete: int) -> SecondSample:
    return SecondSample(second, complete, 0, 0, 0, 0.0, 0, 0, 0)


def test_reply_rate_edges() -> None:
    assert reply_rate((sample(0, 5),), 0.9) is None
    one = reply_rate((sample(0, 5),), 1.0)
    assert one is not None and (one.samples, one.stddev) == (1, 0.0)
    gap = reply_rate((sample(0, 10), sample(2, 10)), 3.0)  # second 1 had no completion
    assert gap is not None and (gap.min, gap.samples) == (0.0, 3)


def test_no_completed_requests() -> None:
    result = make_result(empty_engine_json())
    derived = result.derived
    assert (derived.requests_per_s, derived.time_per_request_all_ms, derived.reply_rate) == (0.0, None, None)
    assert derived.client_cpu_us_per_request is None
    assert result.why_no_per_request() == "no request was sent"
    assert "no completed requests" in render_report(result)
    assert "none per request (no request was sent)" in render_report(result)
    assert render_csv(result) == "percent,latency_ms\n"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("requests"), "missing 'requests'"),
        (lambda d: d["requests"].update(complete="many"), "'requests.complete' must be a whole number"),
        (lambda d: d["latency"]["corrected"]["percentiles"].pop("99.9"), "missing '99.9'"),
        (lambda d: d.update(series={}), "'series' must be a list"),
        (lambda d: d["client_cpu"].update(user_s=True), "'client_cpu.user_s' must be a number"),
    ],
)
def test_malformed_engine_json(mutate: Any, message: str) -> None:
    data = engine_json()
    mutate(data)
    with pytest.raises(MalformedResultError, match=re.escape(message)):
        make_result(data)


# ---------------------------------------------------------------------------------------------
# JSON round trip and schema


@pytest.mark.parametrize("fixture", ["open_result", "closed_result"])
def test_round_trip(fixture: str, request: pytest.FixtureRequest) -> None:
    result: BenchResult = request.getfixturevalue(fixture)
    text = result.to_json()
    again = BenchResult.from_json(text)
    assert again == result
    assert again.to_json() == text
    assert again.derived == result.derived


def test_json_matches_schema(open_result: BenchResult, closed_result: BenchResult, schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker(), registry=REGISTRY)
    for result in (open_result, closed_result, make_result(empty_engine_json(), interrupted=True)):
        document = json.loads(result.to_json())
        validator.validate(document)
        assert document["schema"] == "pounder/bench-result/3"


def test_json_content(open_result: BenchResult) -> None:
    document = json.loads(open_result.to_json())
    assert document["options"]["targets"] == [
        {"url": "http://127.0.0.1:8080/", "weight": 1, "connect": "127.0.0.1:8080"}
    ]
    assert document["options"]["load"]["stages"] == [[10.0, 500.0, 500.0]]
    assert document["connections"] == {"opened": 212}
    assert document["derived"]["reply_rate"]["samples"] == 10
    assert document["started_at"] == STARTED


def test_schema_rejects_what_to_json_never_writes(open_result: BenchResult, schema: dict[str, Any]) -> None:
    document = json.loads(open_result.to_json())
    for broken in (
        {**document, "schema": "pounder/bench-result/4"},
        {**document, "extra": 1},
        {key: value for key, value in document.items() if key != "schema"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(schema, registry=REGISTRY).validate(broken)


def test_load_result(tmp_path: Path, open_result: BenchResult) -> None:
    path = tmp_path / "result.json"
    path.write_text(open_result.to_json())
    assert load_result(path) == open_result


def test_load_result_errors(tmp_path: Path, open_result: BenchResult) -> None:
    with pytest.raises(UsageError, match="result file not found"):
        load_result(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UsageError, match="is not a pounder bench result: not valid JSON"):
        load_result(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(open_result.to_json()), "schema": "something/else"}))
    with pytest.raises(UsageError, match="expected 'pounder/bench-result/3' \\(or an earlier 'pounder/bench-result/1', "
                       "'pounder/bench-result/2'\\)"):
        load_result(other)
    engine_only = tmp_path / "engine.json"
    engine_only.write_text(json.dumps(engine_json()))
    with pytest.raises(UsageError, match="is not a pounder bench result"):
        load_result(engine_only)


# ---------------------------------------------------------------------------------------------
# Text report


def report_value(report: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}:\s+(.*)$", report, re.MULTILINE)
    assert match, f"no {label!r} line"
    return match.group(1)


def table(report: str, title: str) -> dict[str, list[str]]:
    """Rows of the table under ``title``: first cell → the other cells."""
    block = report.split(title, 1)[1].split("\n\n", 1)[0]
    rows = [line.split() for line in block.splitlines() if line.strip()]
    return {row[0]: row[1:] for row in rows}


def test_report_open_loop(open_result: BenchResult) -> None:
    report = render_report(open_result)
    assert report.isascii()
    assert max(len(line) for line in report.splitlines()) <= 90
    assert report_value(report, "Target") == "http://127.0.0.1:8080/ (127.0.0.1:8080)"
    assert report_value(report, "Load model").startswith("open loop, 500 req/s, at most 1000 in flight")
    assert report_value(report, "Complete requests") == "4971"
    assert report_value(report, "Failed requests") == "3"
    assert "(refused 0, reset 1, timeout 1, bad response 0, other 0, aborted 1)" in report
    assert report_value(report, "Non-2xx responses") == "12"
    assert report_value(report, "Unsent requests").startswith("2 ")
    assert report_value(report, "Late sends").startswith("37 ")
    assert report_value(report, "Total transferred") == "21420039 bytes"
    assert report_value(report, "Body transferred") == "20361216 bytes"
    assert report_value(report, "Requests per second") == "497.00 [#/sec] (mean)"
    assert report_value(report, "Transfer rate") == "2091.36 [Kbytes/sec] received"
    assert "Time per request:         n/a (open loop" in report
    assert "corrected = from the intended send time" in report

    percentiles = table(report, "Latency percentiles (ms), open loop:\n")
    assert percentiles["50%"] == ["1.798", "1.781"]
    assert percentiles["99.9%"] == ["83.58", "60.35"]
    assert list(percentiles)[-10:] == [f"{p}%" for p in PERCENTILES]

    times = table(report, "Connection Times (ms)\n")
    assert times["min"] == ["mean", "[+/-sd]", "median", "max"]
    assert times["Connect:"] == ["0.045", "0.092", "0.029", "0.089", "0.196"]
    assert set(times) >= {"Waiting:", "Processing:", "Total:"}

    assert "  200: 4959\n  404: 12" in report
    assert report_value(report, "Reply rate [replies/s]") == "min 470.0 avg 497.0 max 500.0 stddev 9.5 (10 s)"
    assert report_value(report, "Client CPU") == "user 0.41 s, sys 0.63 s, 206.1 us per request"  # / 5071 completed
    assert "Interrupted" not in report


def test_report_closed_loop(closed_result: BenchResult) -> None:
    report = render_report(closed_result)
    assert report_value(report, "Load model") == "closed loop, 50 connections, 2 threads"
    assert "Unsent requests" not in report and "Late sends" not in report
    assert "closed loop: latency from actual send" in report
    assert re.search(r"^Time per request:\s+100\.6 \[ms\] \(mean\)$", report, re.MULTILINE)
    across = r"^Time per request:\s+2\.012 \[ms\] \(mean, across all concurrent requests\)$"
    assert re.search(across, report, re.MULTILINE)
    percentiles = table(report, "closed loop: latency from actual send\n")
    assert percentiles["latency"] == []
    assert percentiles["99%"] == ["6.255"]


def test_report_interrupted_and_many_targets(tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"http://127.0.0.1:{8000 + i}/\n" for i in range(7)))
    result = make_result(interrupted=True, url=None, url_file=urls, duration="10s")
    report = render_report(BenchResult.from_json(result.to_json()))
    assert report_value(report, "Interrupted") == "yes: partial result"
    assert report_value(report, "Targets") == "7, sequential order"
    assert "... and 2 more" in report


@pytest.mark.parametrize(
    ("us", "text"), [(391, "0.391"), (9999, "9.999"), (10_000, "10.00"), (123_456, "123.5"), (1_234_567, "1235")]
)
def test_format_ms(us: float, text: str) -> None:
    assert format_ms(us) == text


# ---------------------------------------------------------------------------------------------
# CSV


def test_csv(open_result: BenchResult) -> None:
    lines = render_csv(open_result).splitlines()
    assert lines[0] == "percent,latency_ms"
    rows = [line.split(",") for line in lines[1:]]
    assert [percent for percent, _ in rows] == ["0", "50", "66", "75", "80", "90", "95", "98", "99", "99.9", "100"]
    assert rows[0] == ["0", "0.391"]
    assert rows[-2] == ["99.9", "83.581"]
    assert rows[-1] == ["100", "90.847"]
    values = [float(ms) for _, ms in rows]
    assert values == sorted(values)


def test_result_is_immutable(open_result: BenchResult) -> None:
    with pytest.raises(AttributeError):
        open_result.elapsed_s = 1.0  # type: ignore[misc]
    assert copy.deepcopy(open_result) == open_result


def all_failed_engine_json() -> dict[str, Any]:
    data = empty_engine_json()
    data.update(requests={"complete": 0, "failed": 40, "non_2xx": 0, "unsent": 0, "late": 0},
                warmup={"complete": 0, "failed": 5, "elapsed_s": 0.1})  # fmt: skip
    return data


def test_no_per_request_figure_when_every_request_failed() -> None:
    # issue 14, item 7: the CPU was divided by the failed requests too
    result = make_result(all_failed_engine_json())
    assert result.completed_requests == 0
    assert result.derived.client_cpu_us_per_request is None
    assert result.why_no_per_request() == "no request completed"
    assert re.search(r"^Client CPU: +user [\d.]+ s, sys [\d.]+ s, none per request \(no request completed\)$",
                     render_report(result), re.MULTILINE), render_report(result)  # fmt: skip


def test_version_1_results_are_read(open_result: BenchResult, tmp_path: Path) -> None:
    # Version 1 has the same layout; its stored derived figures divided by the requests attempted.
    # Read back, derived is recomputed: per completed request.
    document = json.loads(open_result.to_json())
    document["schema"] = "pounder/bench-result/1"
    document["derived"]["client_cpu_us_per_request"] = 1.0
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    again = load_result(path)
    assert again == open_result
    assert again.derived.client_cpu_us_per_request == pytest.approx((0.412 + 0.633) * 1e6 / (4971 + 100))
