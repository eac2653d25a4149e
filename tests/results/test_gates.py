"""Pass/fail gates (``--fail-if``): parsing, evaluation on recorded and constructed results (bench and
compare), the JSON round trip, and the CLI against a real 20 ms server: exit 0 when met, 3 when
missed (the gate printed), 2 for a bad expression before anything is sent."""

from __future__ import annotations

import copy
import html
import json
import re
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pounder import BenchResult, BenchSpec, UsageError, load_result, render_report
from pounder.compare import (
    CompareOptions,
    CompareResult,
    Trial,
    Variant,
    evaluate_compare_gates,
    parse_compare_gates,
    render_compare,
)
from pounder.results import (
    Gate,
    GateReport,
    HttpOptions,
    LoadModel,
    check_gates,
    evaluate_gates,
    parse_gate,
    parse_gates,
)
from support import cliutil
from support.cliutil import pounder_argv, start_pounder
from support.interrupted import interrupted
from support.schemas import validate

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDED: dict[str, Any] = json.loads((DATA / "engine_result.json").read_text())
# the recording: 4,971 complete, 3 failed, 12 non-2xx, 2 unsent, 37 late in 10.0021 s;
# corrected p50 1.798 ms, p90 3.245 ms, p99 6.255 ms, p99.9 83.581 ms, max 90.847 ms


def result_of(data: dict[str, Any] | None = None, **options: Any) -> BenchResult:
    spec = BenchSpec.from_options("http://127.0.0.1:8080/", **(options or {"rate": "500", "duration": "10s"}))
    return BenchResult.from_engine(
        json.dumps(data or RECORDED),
        options=spec.run_options(),
        started_at="2025-01-01T12:00:00.000Z",
        interrupted=False,
        tool_version="0.1.0",
    )


def verdicts(report: GateReport) -> list[tuple[str, str]]:
    return [(result.gate.text, result.verdict) for result in report.results]


# ---------------------------------------------------------------------------------------------
# Parsing


@pytest.mark.parametrize(
    ("text", "metric", "operator", "threshold", "unit"),
    [
        ("p99>300ms", "p99", ">", 300_000, "us"),
        (" p50 >= 1.5s ", "p50", ">=", 1_500_000, "us"),
        ("P99.9<2m", "p99.9", "<", 120_000_000, "us"),
        ("max>1m30s", "max", ">", 90_000_000, "us"),
        ("p50>500us", "p50", ">", 500, "us"),  # the unit the JSON writes latencies in
        ("p50>500\u00b5s", "p50", ">", 500, "us"),
        ("p99>1ms500us", "p99", ">", 1500, "us"),
        ("errors>1%", "errors", ">", 1.0, "percent"),
        ("errors>0", "errors", ">", 0, "count"),
        ("non2xx>=10k", "non2xx", ">=", 10_000, "count"),
        ("rps<2.5k", "rps", "<", 2500, "req/s"),
        ("rps<=500/s", "rps", "<=", 500, "req/s"),
        ("late>0.5%", "late", ">", 0.5, "percent"),
    ],
)
def test_parse(text: str, metric: str, operator: str, threshold: float, unit: str) -> None:
    assert parse_gate(text) == Gate(metric, operator, threshold, unit, text.strip())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("p99>300", "give p99 a unit, e.g. p99>300ms"),
        ("p42>1ms", "unknown metric 'p42' (one of: p50,"),
        ("p99=1ms", "unknown operator '=' (one of: > >= < <="),
        ("p99", "expected METRIC OP VALUE"),
        ("", "expected METRIC OP VALUE"),
        ("rps<fast", "'fast' is not a rate"),
        ("errors>101%", "a share, from 0% to 100%, so errors>101% can never fail"),
        ("errors>1.5", "neither a count"),
        ("slower>5%", "a ratio gate of pounder compare, pounder run and pounder bench --baseline"),
        ("p99>1 ms", "is not a duration"),
    ],
)
def test_parse_errors_are_one_line_naming_the_expression(text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_gates([text])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"invalid --fail-if {text!r}: ")
    assert fragment in message, message


def test_late_is_refused_up_front_for_a_closed_loop() -> None:
    late = parse_gates(["late>1%"])
    check_gates(late, BenchSpec.from_options("http://127.0.0.1:1/", rate=100, duration="1s").load)
    with pytest.raises(UsageError, match="late is measured in open loop only"):
        check_gates(late, BenchSpec.from_options("http://127.0.0.1:1/", duration="1s").load)


# ---------------------------------------------------------------------------------------------
# Evaluation on a bench result


def test_recorded_open_loop_result() -> None:
    result = result_of()
    gates = parse_gates(["p99>6ms", "p99>6.3ms", "p99.9>=83.581ms", "p50<1.8ms", "max>90ms", "mean>1s",
                         "errors>3", "errors>=3", "errors>0.05%", "non2xx>0", "non2xx>0.3%", "rps<500", "rps<496",
                         "late>38", "late>0.8%"])  # fmt: skip
    report = evaluate_gates(gates, result)
    assert verdicts(report) == [
        ("p99>6ms", "fail"), ("p99>6.3ms", "pass"), ("p99.9>=83.581ms", "fail"), ("p50<1.8ms", "fail"),
        ("max>90ms", "fail"), ("mean>1s", "pass"), ("errors>3", "pass"), ("errors>=3", "fail"),
        ("errors>0.05%", "fail"), ("non2xx>0", "fail"), ("non2xx>0.3%", "pass"), ("rps<500", "fail"),
        ("rps<496", "pass"), ("late>38", "fail"), ("late>0.8%", "pass"),
    ]  # fmt: skip
    measured = {r.gate.text: r.measured for r in report.results}
    assert measured["p99>6ms"] == 6255
    assert measured["errors>0.05%"] == pytest.approx(3 * 100 / 4974)
    assert measured["non2xx>0.3%"] == pytest.approx(12 * 100 / 4971)
    assert measured["rps<500"] == pytest.approx(4971 / 10.0021)
    assert measured["late>38"] == 39  # 37 late + 2 unsent
    assert measured["late>0.8%"] == pytest.approx(39 * 100 / 4976)
    assert report.results[0].measured_text == "6.255 ms" and report.results[0].why == "above 6 ms"
    assert not report.passed and len(report.failed) == 9


def test_nothing_completed_never_passes() -> None:
    data = copy.deepcopy(RECORDED)
    zero = {"count": 0, "min_us": 0, "max_us": 0, "mean_us": 0.0, "stdev_us": 0.0,
            "percentiles": dict.fromkeys(data["latency"]["corrected"]["percentiles"], 0)}  # fmt: skip
    data.update(requests={"complete": 0, "failed": 5, "non_2xx": 0, "unsent": 0, "late": 0}, status={}, series=[],
                latency=dict.fromkeys(("corrected", "uncorrected", "schedule_lag"), zero))  # fmt: skip
    report = evaluate_gates(parse_gates(["p99>1s", "mean>1s", "non2xx>1%", "non2xx>0", "errors>50%", "errors>10"]),
                            result_of(data))  # fmt: skip
    assert [(r.verdict, r.measured_text, r.why) for r in report.results] == [
        ("unmeasurable", "-", "no request completed"), ("unmeasurable", "-", "no request completed"),
        ("unmeasurable", "-", "no response"), ("unmeasurable", "-", "no response"),  # the count form too
        ("fail", "100%", "above 50%"), ("pass", "5", ""),  # 5 requests attempted: measured
    ]  # fmt: skip
    assert report.failure_line() == (
        "5 of 6 gates failed: p99>1s: -, no request completed; mean>1s: -, no request completed; "
        "non2xx>1%: -, no response; non2xx>0: -, no response; errors>50%: 100%, above 50%"
    )


def test_nothing_sent_never_passes_a_count() -> None:
    """A count of nothing is no measurement: errors>0, non2xx>0, late>0 with no request sent or scheduled."""
    data = copy.deepcopy(RECORDED)
    zero = {"count": 0, "min_us": 0, "max_us": 0, "mean_us": 0.0, "stdev_us": 0.0,
            "percentiles": dict.fromkeys(data["latency"]["corrected"]["percentiles"], 0)}  # fmt: skip
    data.update(requests={"complete": 0, "failed": 0, "non_2xx": 0, "unsent": 0, "late": 0}, status={}, series=[],
                latency=dict.fromkeys(("corrected", "uncorrected", "schedule_lag"), zero))  # fmt: skip
    report = evaluate_gates(parse_gates(["errors>0", "errors>1%", "non2xx>0", "late>0", "p50>1s"]), result_of(data))
    assert [(r.verdict, r.measured, r.why) for r in report.results] == [
        ("unmeasurable", None, "no request was sent"), ("unmeasurable", None, "no request was sent"),
        ("unmeasurable", None, "no request was sent"), ("unmeasurable", None, "no request was scheduled"),
        ("unmeasurable", None, "no request was sent"),
    ]  # fmt: skip


def test_late_on_a_closed_loop_result_is_unmeasurable() -> None:
    closed = result_of(connections=10, duration="10s")
    (late,) = evaluate_gates(parse_gates(["late>1%"]), closed).results
    assert (late.verdict, late.measured, late.why) == (
        "unmeasurable",
        None,
        "closed loop: no request has a scheduled time",
    )


def test_json_round_trip_report_and_schema(tmp_path: Path) -> None:
    result = result_of()
    gated = replace(result, gates=evaluate_gates(parse_gates(["p99>6ms", "rps<100"]), result))
    document = json.loads(gated.to_json())
    validate(document, "bench-result")
    assert [(g["expression"], g["verdict"], g["measured"]) for g in document["gates"]] == [
        ("p99>6ms", "fail", 6255),
        ("rps<100", "pass", pytest.approx(496.99563)),  # unrounded in the JSON
    ]
    assert "gates" not in json.loads(result.to_json())  # only when gates were given
    path = tmp_path / "result.json"
    path.write_text(gated.to_json())
    read = load_result(path)
    assert read.gates == gated.gates
    assert evaluate_gates(parse_gates(["p99>6ms", "rps<100"]), read) == gated.gates  # on a result read back
    report = render_report(read)
    assert report.endswith(
        "\n\nGates (--fail-if): 1 of 2 failed\n"
        "  gate     measured      verdict\n"
        "  p99>6ms  6.255 ms      FAIL  (above 6 ms)\n"
        "  rps<100  497.00 req/s  pass\n"
    )
    assert "Requests per second:      497.00 [#/sec] (mean)\n" in report  # the same figure as the report's


# ---------------------------------------------------------------------------------------------
# Compare: ratio gates on the interval, absolute gates on each variant


def trial(seq: int, label: str, rps: float, p99_us: int, failed: int = 0) -> Trial:
    """A measured trial of 200 requests (round = its place in the variant's turn)."""
    return Trial(seq=seq, round=(seq + 1) // 2, label=label, started_at="2025-01-01T12:00:00.000Z", interrupted=False,
                 elapsed_s=200 / rps, complete=200, failed=failed, non_2xx=0, unsent=0, late=0,
                 errors={"reset": failed} if failed else {}, requests_per_s=rps, p50_us=p99_us // 2, p99_us=p99_us,
                 server_cpu_us_per_request=None)  # fmt: skip


def compare_result(fast: list[float], slow: list[float], *, open_loop: bool = False) -> CompareResult:
    """Interleaved rounds (one per rate given); fast's p99 4001..4005 µs, slow's the same; slow's
    first trial had a reset."""
    load = LoadModel(kind="open" if open_loop else "closed", connections=4, threads=2, requests=200, duration_s=None,
                     stages=None, warmup_requests=0, warmup_s=0.0)  # fmt: skip
    http = HttpOptions(method="GET", keepalive=True, calls_per_conn=0, timeout_s=30.0, throttle_bps=None,
                       body_bytes=0, headers=())  # fmt: skip
    trials = []
    for index in range(len(fast)):
        trials.append(trial(2 * index + 1, "fast", fast[index], 4001 + index))
        trials.append(trial(2 * index + 2, "slow", slow[index], 4001 + index, failed=int(index == 0)))
    return CompareResult(tool_version="0.1.0", started_at="2025-01-01T12:00:00.000Z",
                         finished_at="2025-01-01T12:00:30.000Z", interrupted=False,
                         options=CompareOptions(trials=len(fast), warmup=False, baseline="fast", load=load, http=http),
                         variants=(Variant("fast", "http://127.0.0.1:8080/"), Variant("slow", "http://127.0.0.1:8081/")),
                         connect=("127.0.0.1:8080", "127.0.0.1:8081"), trials=tuple(trials))  # fmt: skip


def test_slower_fails_only_when_the_whole_interval_is_beyond() -> None:
    gates = parse_compare_gates(["slower>5%", "slower>=15%", "p99>4.002ms", "p99>4.003ms", "rps<1000", "errors>0"])
    clear = compare_result([1000, 1010, 990, 1005, 995], [800, 810, 790, 805, 795])  # about 20 % slower
    report = evaluate_compare_gates(gates, clear)
    assert [(r.subject, r.gate.text, r.verdict) for r in report.results] == [
        ("slow vs fast", "slower>5%", "fail"),
        ("slow vs fast", "slower>=15%", "fail"),
        ("fast", "p99>4.002ms", "fail"),
        ("slow", "p99>4.002ms", "fail"),  # medians of 4001..4005 µs: 4003
        ("fast", "p99>4.003ms", "pass"),
        ("slow", "p99>4.003ms", "pass"),
        ("fast", "rps<1000", "pass"),
        ("slow", "rps<1000", "fail"),
        ("fast", "errors>0", "pass"),
        ("slow", "errors>0", "fail"),  # one reset in its first trial
    ]
    assert report.results[7].measured_text == "800 req/s (median of 5)"  # as the comparison's report writes it
    slower = report.results[0]
    ratio = clear.comparison("slow").requests_per_s
    assert slower.measured == pytest.approx((1 - ratio.high) * 100) and slower.measured > 15  # type: ignore[operator]
    assert slower.measured_text.startswith("requests/s 0.80")
    # a noisy 3 % difference whose interval reaches past 5 %: no failure
    noisy = compare_result([1000, 1060, 940, 1030, 970], [970, 1030, 910, 1000, 940])
    (noise,) = evaluate_compare_gates(parse_compare_gates(["slower>5%"]), noisy).results
    assert noise.verdict == "pass"
    # open loop: the verdict is about p99 latency, and so is the gate
    (latency,) = evaluate_compare_gates(parse_compare_gates(["slower>5%"]), compare_result(
        [1000] * 5, [800] * 5, open_loop=True)).results  # fmt: skip
    assert latency.verdict == "pass" and latency.measured_text.startswith("p99 1.000x")


def test_slower_needs_five_counted_trials_on_each_side() -> None:
    """With 4 trials the bootstrap interval is about the range of the ratios: no verdict from it."""
    four = compare_result([1000, 1010, 990, 1005], [800, 810, 790, 805])  # clearly slower, 4 rounds
    (gate,) = evaluate_compare_gates(parse_compare_gates(["slower>5%"]), four).results
    assert (gate.verdict, gate.measured) == ("unmeasurable", None)
    assert gate.why == "4 and 4 counted trials: slower needs 5 on each side"
    assert gate.measured_text.startswith("requests/s 0.80")
    # 5 rounds, but one of slow's trials left out for its failures (2 % failed): 4 counted
    five = compare_result([1000, 1010, 990, 1005, 995], [800, 810, 790, 805, 795])
    trials = [replace(t, failed=4) if (t.label, t.round) == ("slow", 2) else t for t in five.trials]
    (left_out,) = evaluate_compare_gates(
        parse_compare_gates(["slower>5%"]), replace(five, trials=tuple(trials))
    ).results
    assert (left_out.verdict, left_out.why) == ("unmeasurable", "4 and 5 counted trials: slower needs 5 on each side")


def test_slower_with_fewer_than_five_trials_is_refused_up_front() -> None:
    from pounder.compare import check_slower_trials

    gates = parse_compare_gates(["p99>1s", "slower>5%"])
    check_slower_trials(gates, 5)
    check_slower_trials(gates[:1], 3)  # the other gates need no interval
    with pytest.raises(UsageError) as caught:
        check_slower_trials(gates, 4)
    assert str(caught.value) == (
        "invalid --fail-if 'slower>5%': slower needs at least 5 trials per variant, this run has 4 (with fewer the 95 "
        "% interval is about the range of the ratios, so noise could fail the build); give --trials 5 or more"
    )


def test_a_variant_with_nothing_measured_never_passes() -> None:
    """errors>0 / non2xx>0 on a variant with no measured trial, or none that got an answer."""
    result = compare_result([1000] * 5, [800] * 5)
    unmeasured = tuple(replace(t, interrupted=True) if t.label == "slow" else t for t in result.trials)
    gates = parse_compare_gates(["errors>0", "non2xx>0"])
    report = evaluate_compare_gates(gates, replace(result, trials=unmeasured))
    assert [(r.subject, r.gate.text, r.verdict, r.why) for r in report.results] == [
        ("fast", "errors>0", "pass", ""), ("slow", "errors>0", "unmeasurable", "no measured trial"),
        ("fast", "non2xx>0", "pass", ""), ("slow", "non2xx>0", "unmeasurable", "no measured trial"),
    ]  # fmt: skip
    reset = tuple(replace(t, complete=0, failed=200) if t.label == "slow" else t for t in result.trials)
    report = evaluate_compare_gates(gates, replace(result, trials=reset))
    assert [(r.subject, r.verdict, r.measured, r.why) for r in report.results] == [
        ("fast", "pass", 0, ""), ("slow", "fail", 1000, "above 0"),
        ("fast", "pass", 0, ""), ("slow", "unmeasurable", None, "no response"),
    ]  # fmt: skip


def test_compare_gates_in_json_and_report() -> None:
    result = compare_result([1000, 1010, 990, 1005, 995], [800, 810, 790, 805, 795])
    gated = replace(result, gates=evaluate_compare_gates(parse_compare_gates(["slower>5%"]), result))
    validate(json.loads(gated.to_json()), "compare")
    assert "Gates (--fail-if): 1 of 1 failed" in render_compare(gated)
    assert "slow vs fast  slower>5%" in render_compare(gated)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("p90>1ms", "a comparison keeps no p90 of its trials; it takes slower>N%"),
        ("late>1%", "a comparison keeps no late of its trials"),
        ("slower<5%", "slower takes > or >="),
        ("slower>5", "slower takes a percentage"),
        ("faster>5%", "unknown metric 'faster' (one of: slower, p50, p99, rps, errors, non2xx)"),
    ],
)
def test_compare_refuses(text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_compare_gates([text])
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


# ---------------------------------------------------------------------------------------------
# The CLI against a real server answering in 20 ms


@pytest.fixture
def slow_server(testserver: Any) -> Any:
    return testserver(mode="ok", delay_ms=20)


def test_bench_gate_met_exits_0(slow_server: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    gates = ("--fail-if", "p99>1s", "--fail-if", "errors>0")
    code, stdout, stderr = cliutil.run_cli(
        "bench", f"{slow_server.url}/", "-n", "20", "-c", "2", *gates, "--json", str(out)
    )
    assert code == 0, (stdout, stderr)
    assert "Gates (--fail-if): all 2 passed" in stdout
    assert [g["verdict"] for g in json.loads(out.read_text())["gates"]] == ["pass", "pass"]
    assert slow_server.count() == 20


def test_bench_gate_missed_exits_3(slow_server: Any) -> None:
    code, stdout, stderr = cliutil.run_cli("bench", f"{slow_server.url}/", "-n", "20", "-c", "2",
                                           "--fail-if", "p99>1ms", "--fail-if", "rps<1")  # fmt: skip
    assert code == 3, (stdout, stderr)
    assert "Gates (--fail-if): 1 of 2 failed" in stdout
    row = next(line for line in stdout.splitlines() if line.startswith("  p99>1ms"))
    assert "FAIL  (above 1 ms)" in row
    assert float(row.split()[1]) >= 20  # the 20 ms server's p99, in ms
    assert stderr.startswith("pounder: error: 1 of 2 gates failed: p99>1ms: ") and stderr.count("\n") == 1


def test_bench_bad_expression_exits_2_before_sending(slow_server: Any) -> None:
    code, stdout, stderr = cliutil.run_cli("bench", f"{slow_server.url}/", "-n", "20", "--fail-if", "p99>300")
    cliutil.assert_usage_error(code, stdout, stderr, "invalid --fail-if 'p99>300': give p99 a unit")
    code, stdout, stderr = cliutil.run_cli("bench", f"{slow_server.url}/", "-n", "20", "--fail-if", "late>1%")
    cliutil.assert_usage_error(code, stdout, stderr, "late is measured in open loop only")
    code, stdout, stderr = cliutil.run_cli("compare", f"{slow_server.url}/a", f"{slow_server.url}/b",
                                           "--fail-if", "p90>1ms")  # fmt: skip
    cliutil.assert_usage_error(code, stdout, stderr, "a comparison keeps no p90")
    assert slow_server.count() == 0


def test_compare_slower_on_identical_targets_passes(slow_server: Any, tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    code, stdout, stderr = cliutil.run_cli(
        "compare", f"{slow_server.url}/a", f"{slow_server.url}/b", "--trials", "5", "--no-warmup", "-n", "10",
        "-c", "2", "--fail-if", "slower>5%", "--json", str(out))  # fmt: skip
    assert code == 0, (stdout, stderr)
    (gate,) = json.loads(out.read_text())["gates"]
    assert (gate["subject"], gate["verdict"]) == ("/b vs /a", "pass")
    assert slow_server.count() == 100


def test_slower_with_too_few_trials_exits_2_before_sending(slow_server: Any, tmp_path: Path) -> None:
    code, stdout, stderr = cliutil.run_cli("compare", f"{slow_server.url}/a", f"{slow_server.url}/b", "--trials", "3",
                                           "-n", "10", "--fail-if", "slower>5%")  # fmt: skip
    cliutil.assert_usage_error(code, stdout, stderr, "invalid --fail-if 'slower>5%': slower needs at least 5 trials "
                               "per variant, this run has 3", "give --trials 5 or more")  # fmt: skip
    experiment = tmp_path / "e.toml"
    experiment.write_text(EXPERIMENT.format(url=slow_server.url, duration="1s", trials=5, fail_if='"slower>5%"'))
    results = tmp_path / "results"
    code, stdout, stderr = cliutil.run_cli("run", str(experiment), "--quick", "--results", str(results))
    cliutil.assert_usage_error(code, stdout, stderr, "load 1 (", "invalid fail_if 'slower>5%': slower needs at least "
                               "5 trials per variant, this run has 3", "run without --quick")  # fmt: skip
    experiment.write_text(EXPERIMENT.format(url=slow_server.url, duration="1s", trials=3, fail_if=""))
    code, stdout, stderr = cliutil.run_cli("run", str(experiment), "--fail-if", "slower>1%", "--results", str(results))
    cliutil.assert_usage_error(code, stdout, stderr, "invalid --fail-if 'slower>1%'", "this run has 3",
                               "set trials = 5 or more in this load")  # fmt: skip
    assert slow_server.count() == 0 and not results.exists()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("errors>=0", "errors is never below 0, so errors>=0 always fails; to fail on any, use errors>0"),
        ("non2xx>=0%", "non2xx is never below 0, so non2xx>=0% always fails"),
        ("rps>=0", "rps is never below 0, so rps>=0 always fails"),
        ("p99>=0ms", "p99 is never below 0, so p99>=0ms always fails"),
        ("errors<0", "errors is never below 0 (a count), so errors<0 can never fail"),
        ("late<0%", "late is never below 0 (a share), so late<0% can never fail"),
        ("errors>100%", "from 0% to 100%, so errors>100% can never fail"),
        ("non2xx>200%", "from 0% to 100%, so non2xx>200% can never fail"),
        ("errors<=100%", "errors is a share, at most 100%, so errors<=100% always fails"),
    ],
)
def test_a_gate_that_can_never_fail_or_always_fails_is_refused(text: str, fragment: str) -> None:
    """Every figure is 0 or more and a share at most 100 %: a bound outside says nothing."""
    for parse in (parse_gates, parse_compare_gates):
        if text.startswith("late") and parse is parse_compare_gates:
            continue
        with pytest.raises(UsageError) as caught:
            parse([text])
        assert fragment in str(caught.value) and "\n" not in str(caught.value), caught.value
    for meaningful in ("errors>=100%", "errors>0", "rps<=0", "non2xx<100%", "p99>0ms"):
        parse_gates([meaningful])


def test_slower_takes_the_range_its_figure_can_reach(slow_server: Any) -> None:
    """slower is requests/s lower by N % in closed loop (N < 100: 100 % lower is no answer at all),
    p99 higher by N % in open loop (any N): slower>200% is read, and refused only in closed loop."""
    closed = BenchSpec.from_options("http://127.0.0.1:9/", requests=1).load
    opened = BenchSpec.from_options("http://127.0.0.1:9/", rate=10, duration=1).load
    for text in ("slower>200%", "slower>=100%", "slower>100%"):
        gates = parse_compare_gates([text])
        check_gates(gates, opened)
        with pytest.raises(UsageError, match="in closed loop slower is how much lower the variant's requests/s is "
                           "than the baseline's, from 0% to under 100%"):  # fmt: skip
            check_gates(gates, closed)
    check_gates(parse_compare_gates(["slower>99.5%"]), closed)
    code, stdout, stderr = cliutil.run_cli("compare", f"{slow_server.url}/a", f"{slow_server.url}/b", "-n", "10",
                                           "--fail-if", "slower>200%")  # fmt: skip
    cliutil.assert_usage_error(code, stdout, stderr, "invalid --fail-if 'slower>200%': in closed loop",
                               "so this gate can never fail; give a percentage below 100%")  # fmt: skip
    assert slow_server.count() == 0


EXPERIMENT = """\
title = "gates"
fail_if = [{fail_if}]

[server]
adapter = "url"

[[load]]
connections = 1
duration = "{duration}"
trials = {trials}

[[variant]]
label = "a"
url = "{url}/a"

[[variant]]
label = "b"
url = "{url}/b"
"""


def test_nothing_answered_fails_the_count_gates_and_exits_1(testserver: Any) -> None:
    """Against a server that resets every connection: non2xx>0 is unmeasurable (no response), not
    'pass' above the 'no request succeeded' line; the run did not work, so the exit is 1, not 3."""
    server = testserver(mode="reset")
    code, stdout, stderr = cliutil.run_cli("bench", f"{server.url}/", "-n", "5", "-c", "1", "--fail-if", "non2xx>0",
                                           "--fail-if", "errors>10")  # fmt: skip
    assert code == 1, (stdout, stderr)
    table = stdout[stdout.index("Gates (--fail-if)") :].splitlines()
    assert table[0] == "Gates (--fail-if): 1 of 2 failed"
    assert table[2].split() == ["non2xx>0", "-", "UNMEASURABLE", "(no", "response)"]
    assert table[3].split() == ["errors>10", "5", "pass"]  # 5 attempted, 5 failed: measured, not above 10
    assert stderr.startswith("pounder: error: no request succeeded (5 failed")


@pytest.mark.parametrize(("command", "signum", "code"), [("bench", signal.SIGTERM, 143),
                                                          ("compare", signal.SIGINT, 130)])  # fmt: skip
def test_an_interrupted_run_whose_gates_failed_exits_as_interrupted(slow_server: Any, command: str, signum: int,
                                                                     code: int, tmp_path: Path) -> None:  # fmt: skip
    """The signal's status (130, 143) comes before the gates' 3: the run was stopped, its gates are on a part,
    and the JUnit file says both (the run an error, the gates failures)."""
    urls = [f"{slow_server.url}/"] if command == "bench" else [f"{slow_server.url}/a", f"{slow_server.url}/b"]
    junit = tmp_path / "junit.xml"
    proc = start_pounder(command, *urls, "-d", "20s", "-c", "1", "--fail-if", "p99>1ms", "--junit", junit)
    try:
        deadline = time.monotonic() + 60
        while slow_server.count(settle_s=0) < 3:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, (stdout, stderr)
    assert "Gates (--fail-if): 1 of 1 failed" in stdout or "Gates (--fail-if): 2 of 2 failed" in stdout, stdout
    assert stderr.splitlines()[-1].startswith("pounder: error: interrupted by "), stderr
    assert str(junit) in stderr.splitlines()[-1]  # among the outputs kept
    suite = ElementTree.fromstring(junit.read_text())
    verdicts = [(case.get("name"), [(child.tag, child.get("type")) for child in case if child.tag != "system-out"])
                for case in suite.iter("testcase")]  # fmt: skip
    cause = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
    assert verdicts[0] == ("run completed", [("error", "interrupted")])
    assert suite.find("testcase/error").get("message", "").startswith(f"interrupted by {cause}: ")  # type: ignore[union-attr]
    gates = {kind for _, outcome in verdicts[1:] for kind in outcome}
    assert gates and gates <= {("failure", "fail"), ("failure", "unmeasurable")}


def test_an_interrupted_experiment_whose_gates_failed_exits_130(slow_server: Any, tmp_path: Path) -> None:
    experiment = tmp_path / "e.toml"
    experiment.write_text(EXPERIMENT.format(url=slow_server.url, duration="2s", trials=5, fail_if='"p99>1ms"'))
    results = tmp_path / "results"
    junit = tmp_path / "junit.xml"
    argv = pounder_argv("run", experiment, "--results", results, "--junit", junit)
    _, stderr = interrupted(argv, results, lambda: slow_server.count(settle_s=0) >= 3, limit_s=60)
    assert "interrupted by Ctrl-C" in stderr
    gates = json.loads((results / "load-1.json").read_text())["gates"]
    assert {gate["verdict"] for gate in gates} <= {"fail", "unmeasurable"} and len(gates) == 2
    suite = ElementTree.fromstring(junit.read_text())
    errors = {case.get("name"): case.find("error") for case in suite.iter("testcase") if case.find("error") is not None}
    assert set(errors) == {"run completed", "load 1 (NC 1, 2s): run completed"}
    assert errors["run completed"].get("message", "").startswith(  # type: ignore[union-attr]
        "interrupted after 1 of 1 loads (the last one partly): partial result (by Ctrl-C); what was measured is in ")
    assert suite.get("failures") == "2"


def test_the_html_page_shows_the_gates(tmp_path: Path) -> None:
    """``pounder report`` on a bench result with gates: a Gates section with the table (gate, measured, verdict)."""
    result = result_of()
    gated = replace(result, gates=evaluate_gates(parse_gates(["p99>6ms", "rps<100", "p50>500us"]), result))
    path = tmp_path / "gated.json"
    path.write_text(gated.to_json())
    code, page, stderr = cliutil.run_cli("report", str(path), "-o", "-")
    assert (code, stderr) == (0, "")
    section = page[page.index("Gates (--fail-if)") :]
    assert "2 of 3 gates failed (the run exited with status 3)." in section
    table = re.search(r"<table>(.*?)</table>", section, re.S)
    assert table is not None
    rows = [[html.unescape(cell) for cell in re.findall(r"<t[hd]>(.*?)</t[hd]>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", table[1])]  # fmt: skip
    assert rows == [
        ["gate", "measured", "verdict", "why"],
        ["p99>6ms", "6.255 ms", "FAIL", "above 6 ms"],
        ["rps<100", "497.00 req/s", "pass", ""],
        ["p50>500us", "1.798 ms", "FAIL", "above 0.5 ms"],
    ]
    assert page.count("Gates (--fail-if)") == 1
