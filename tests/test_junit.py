"""``--junit FILE`` (issue 43): a run's verdicts as JUnit XML for CI.

Every file validates against both schemas CI systems read (Maven Surefire's and the Jenkins xUnit
plugin's, tests/data/junit); a gate (or a tuning run's confirmation check) that fails is a
``<failure>`` naming the gate, the figure measured and its limit in the words the text report
prints; the run itself is a case of its own (an error exactly when the command exits 1 or is
stopped), so that a run without gates still counts one test; the figures are properties equal to
the result's. Built on recorded and constructed results; one short live run per command checks
the option end to end with its exit status unchanged."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from pounder import BenchResult, BenchSpec
from pounder._junit import Case, Suite, stopped_suite
from pounder.compare import (
    CompareOptions,
    CompareResult,
    Trial,
    Variant,
    evaluate_compare_gates,
    parse_compare_gates,
)
from pounder.results import (
    HttpOptions,
    LoadModel,
    evaluate_gates,
    load_failure,
    parse_gates,
    render_report,
)
from pounder.servers import apache_missing
from pounder.tune import resume
from support import cliutil
from support.recorded import recorded_copy

DATA = Path(__file__).resolve().parent / "data"
SCHEMAS = [xmlschema.XMLSchema(str(DATA / "junit" / name)) for name in ("surefire-test-report.xsd", "junit-10.xsd")]
RECORDED: dict[str, Any] = json.loads((DATA / "engine_result.json").read_text())
# 4,971 complete, 3 failed, 12 non-2xx in 10.0021 s; corrected p50 1.798 ms, p99 6.255 ms


def validated(text: str) -> ET.Element:
    """The document, valid under both schemas, parsed."""
    for schema in SCHEMAS:
        schema.validate(text)
    return ET.fromstring(text)


def cases(root: ET.Element) -> dict[str, tuple[str, str, str]]:
    """Each case's name: (outcome, its message, its type); ("passed", system-out, "") when passed."""
    found = {}
    for case in root.iter("testcase"):
        verdict = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        if verdict is None:
            found[case.get("name", "")] = ("passed", case.findtext("system-out") or "", "")
        else:
            found[case.get("name", "")] = (verdict.tag, verdict.get("message", ""), verdict.get("type", ""))
    return found


def properties(root: ET.Element) -> dict[str, str]:
    return {prop.get("name", ""): prop.get("value", "") for prop in root.iter("property")}


def counts(root: ET.Element) -> tuple[int, ...]:
    return tuple(int(root.get(name, "-1")) for name in ("tests", "failures", "errors", "skipped"))


def bench_result(data: dict[str, Any] | None = None, interrupted: bool = False) -> BenchResult:
    spec = BenchSpec.from_options("http://127.0.0.1:8080/", rate="500", duration="10s")
    return BenchResult.from_engine(json.dumps(data or RECORDED), options=spec.run_options(),
                                   started_at="2025-01-01T12:00:00.000Z", interrupted=interrupted,
                                   tool_version="0.1.0")  # fmt: skip


def compare_result(fast: list[float], slow: list[float], labels: tuple[str, str] = ("fast", "slow")) -> CompareResult:
    """Interleaved trials of 200 requests each; p99 4001..4005 µs on both sides."""
    load = LoadModel(kind="closed", connections=4, threads=2, requests=200, duration_s=None, stages=None,
                     warmup_requests=0, warmup_s=0.0)  # fmt: skip
    http = HttpOptions(method="GET", keepalive=True, calls_per_conn=0, timeout_s=30.0, throttle_bps=None,
                       body_bytes=0, headers=())  # fmt: skip
    trials = []
    for index, rates in enumerate(zip(fast, slow, strict=True)):
        for offset, (label, rate) in enumerate(zip(labels, rates, strict=True), start=1):
            trials.append(Trial(seq=2 * index + offset, round=index + 1, label=label,
                                started_at="2025-01-01T12:00:00.000Z", interrupted=False, elapsed_s=200 / rate,
                                complete=200, failed=0, non_2xx=0, unsent=0, late=0, errors={}, requests_per_s=rate,
                                p50_us=2000 + index, p99_us=4001 + index, server_cpu_us_per_request=None))  # fmt: skip
    return CompareResult(tool_version="0.1.0", started_at="2025-01-01T12:00:00.000Z",
                         finished_at="2025-01-01T12:00:30.000Z", interrupted=False,
                         options=CompareOptions(trials=len(fast), warmup=False, baseline=labels[0], load=load,
                                                http=http),
                         variants=(Variant(labels[0], "http://127.0.0.1:8080/"),
                                   Variant(labels[1], "http://127.0.0.1:8081/")),
                         connect=("127.0.0.1:8080", "127.0.0.1:8081"), trials=tuple(trials))  # fmt: skip


# ---------------------------------------------------------------------------------------------
# bench


def test_bench_gates_are_cases_named_with_figure_and_limit() -> None:
    result = bench_result()
    gated = replace(result, gates=evaluate_gates(parse_gates(["p99>6ms", "rps<100", "errors>0"]), result))
    root = validated(gated.to_junit())
    assert root.tag == "testsuite" and root.get("name") == "pounder bench http://127.0.0.1:8080/"
    assert counts(root) == (4, 2, 0, 0)
    assert cases(root) == {
        "run completed": ("passed", "", ""),
        "p99>6ms": ("failure", "p99>6ms: 6.255 ms, above 6 ms", "fail"),
        "rps<100": ("passed", "rps<100: 497.00 req/s", ""),
        "errors>0": ("failure", "errors>0: 3, above 0", "fail"),
    }
    # the same words as the line bench exits 3 with, and the table of the text report
    failure_line = gated.gates.failure_line() if gated.gates else None
    assert failure_line == "2 of 3 gates failed: p99>6ms: 6.255 ms, above 6 ms; errors>0: 3, above 0"
    assert "  p99>6ms   6.255 ms      FAIL  (above 6 ms)" in render_report(gated)
    props = properties(root)
    corrected = result.latency.corrected
    assert props["requests.complete"] == "4971" == str(result.requests.complete)
    assert props["requests.failed"] == "3" and props["requests.non_2xx"] == "12" and props["requests.late"] == "37"
    assert float(props["latency.p99_ms"]) == corrected.percentiles["99"] / 1000 == 6.255
    assert float(props["latency.p50_ms"]) * 1000 == corrected.percentiles["50"]
    assert float(props["requests_per_s"]) == pytest.approx(result.derived.requests_per_s, abs=0.001)
    assert float(props["elapsed_s"]) == pytest.approx(result.elapsed_s, abs=0.001)
    assert {name: int(value) for name, value in props.items() if name.startswith("errors.")} == {
        f"errors.{name}": count for name, count in result.errors.nonzero().items()}
    assert root.get("timestamp") == "2025-01-01T12:00:00.000Z" and root.get("time") == "10.002"


def test_a_run_without_gates_counts_one_test_and_fails_as_its_exit_status() -> None:
    """No gate: one case, the run; it is an error when bench exits 1 (nowhere) or was stopped."""
    root = validated(bench_result().to_junit())
    assert counts(root) == (1, 0, 0, 0) and cases(root) == {"run completed": ("passed", "", "")}
    stopped = validated(bench_result(interrupted=True).to_junit())
    (outcome, message, kind), = cases(stopped).values()
    assert (outcome, kind) == ("error", "interrupted") and message.startswith("interrupted by Ctrl-C: the figures "
                                                                              "are of the 10.0 s measured")
    nothing = {**RECORDED, "requests": {**RECORDED["requests"], "complete": 0}, "status": {}}
    nowhere = bench_result(nothing)
    gated = replace(nowhere, gates=evaluate_gates(parse_gates(["non2xx>0"]), nowhere))
    root = validated(gated.to_junit())
    assert counts(root) == (2, 1, 1, 0)
    assert cases(root)["run completed"] == ("error", load_failure(nowhere), "failed")
    assert cases(root)["non2xx>0"] == ("failure", "non2xx>0: -, no response", "unmeasurable")


# ---------------------------------------------------------------------------------------------
# compare


def test_compare_gates_per_variant_with_the_interval() -> None:
    result = compare_result([1000, 1010, 990, 1005, 995], [800, 810, 790, 805, 795])
    gated = replace(result, gates=evaluate_compare_gates(parse_compare_gates(["slower>5%", "rps<900"]), result))
    root = validated(gated.to_junit())
    assert counts(root) == (4, 2, 0, 0)
    found = cases(root)
    assert found["slower>5% for slow vs fast"][0] == "failure"
    message = found["slower>5% for slow vs fast"][1]
    assert message.startswith("slower>5% for slow vs fast: requests/s 0.800x (0.") and \
        message.endswith("the whole 95 % interval is more than 5% slower")  # fmt: skip
    assert message in (gated.gates.failure_line() if gated.gates else "")
    assert found["rps<900 for slow"] == ("failure", "rps<900 for slow: 800 req/s (median of 5), below 900 req/s",
                                         "fail")
    assert found["rps<900 for fast"] == ("passed", "rps<900 for fast: 1,000 req/s (median of 5)", "")
    props = properties(root)
    ratio = result.comparison("slow").requests_per_s
    assert (props["slow.requests_per_s"], props["fast.requests_per_s"], props["slow.trials_counted"]) == \
        ("800", "1000", "5")  # fmt: skip
    assert float(props["slow vs fast.requests_per_s_ratio"]) == pytest.approx(ratio.ratio, abs=1e-4)
    assert float(props["slow vs fast.requests_per_s_ratio.high"]) == pytest.approx(ratio.high, abs=1e-4)
    assert props["slow vs fast.verdict"] == "slower" and props["slow.p99_ms"] == "4.003"


def test_labels_and_messages_of_any_text_stay_valid_xml() -> None:
    """A label is the user's text: markup and control characters are escaped or replaced."""
    result = compare_result([1000] * 3, [800] * 3, labels=("<a & \"b\">", "c\x01\x1bd"))
    gated = replace(result, gates=evaluate_compare_gates(parse_compare_gates(["p99>1ms"]), result))
    root = validated(gated.to_junit())
    assert "p99>1ms for <a & \"b\">" in cases(root) and "p99>1ms for c??d" in cases(root)
    suite = Suite("s", (Case("n", "c", float("nan"), "skipped", "\x00"),), (("k", "v\x7f"),), float("inf"))
    root = validated(suite.render())
    assert root.get("time") == "0.000" and counts(root) == (1, 0, 0, 1)
    root = validated(stopped_suite("pounder tune", "pounder.tune", "interrupted by SIGHUP before ...").render())
    assert counts(root) == (1, 0, 1, 0) and cases(root) == {
        "run completed": ("error", "interrupted by SIGHUP before ...", "interrupted")}
    root = validated(stopped_suite("pounder run t", "pounder.run", "the server did not start: ...", failed=True)
                     .render())
    assert cases(root) == {"run completed": ("error", "the server did not start: ...", "failed")}


# ---------------------------------------------------------------------------------------------
# tune: one case per confirmation check, decided again from recorded runs


def _tune_again(name: str, tmp_path: Path) -> Any:
    run = recorded_copy(name, tmp_path)
    for made in ("recommendation.json", "recommendation.txt"):
        (run / made).unlink()
    return resume(run)


def test_tune_confirmation_checks_are_cases(tmp_path: Path) -> None:
    fleet = _tune_again("tune-fleet", tmp_path)  # one server cannot carry the peak rate; the fleet does
    root = validated(fleet.to_junit())
    assert counts(root) == (5, 0, 0, 1) and fleet.unmet_checks() == []  # pounder tune exits 0
    found = cases(root)
    assert [name for name in found] == ["run completed", "confirmation: failures", "confirmation: throughput",
                                        "confirmation: rate", "confirmation: memory"]  # fmt: skip
    checks = {check["name"]: check["text"] for check in fleet.confirmation["checks"]}
    assert found["confirmation: rate"][0] == "skipped"
    assert found["confirmation: rate"][1] == f"not met by one server, carried by the fleet: {checks['rate']}; " \
        f"{fleet.fleet.size.text}"  # fmt: skip
    assert found["confirmation: memory"] == ("passed", checks["memory"], "")
    props = properties(root)
    assert props["recommendation.max_clients"] == str(fleet.params.max_clients) == "2"
    assert props["recommendation.max_clients.name"] == "--workers"
    assert props["confirmation.complete"] == str(fleet.confirmation["complete"])
    assert float(props["confirmation.p99_ms"]) == fleet.confirmation["p99_ms"]
    unconfirmed = _tune_again("tune-outputs", tmp_path)  # --no-confirm
    root = validated(unconfirmed.to_junit())
    assert cases(root)["confirmation"] == ("skipped", "the confirmation did not run (--no-confirm)", "")


@pytest.mark.skipif(bool(apache_missing(perl=True)), reason=str(apache_missing(perl=True)))
def test_tune_whose_confirmation_failed_exits_1_with_the_check_failed(tmp_path: Path) -> None:
    """``pounder tune --resume`` on a recorded run whose recommendation fell short of the best
    measured (no server is started: the confirmation is stored)."""
    run = recorded_copy("tune-apache", tmp_path)
    for made in ("recommendation.json", "recommendation.txt"):
        (run / made).unlink()
    out = tmp_path / "tune.xml"
    code, stdout, stderr = cliutil.run_cli("tune", "--resume", str(run), "--junit", str(out))
    assert code == 1, (stdout, stderr)
    root = validated(out.read_text())
    checks = {check["name"]: check for check in json.loads((run / "recommendation.json").read_text())
              ["confirmation"]["checks"]}  # fmt: skip
    assert not checks["throughput"]["ok"]
    text = checks["throughput"]["text"]  # "10,572 req/s against the best ... (... at least 12,554 needed)"
    assert cases(root)["confirmation: throughput"] == ("failure", text, "not met")
    assert f"NOT MET  {text}" in stdout and text in stderr
    assert counts(root) == (4, 1, 0, 0)


# ---------------------------------------------------------------------------------------------
# the option, live: exit statuses unchanged


@pytest.fixture
def slow_server(testserver: Any) -> Any:
    return testserver(mode="ok", delay_ms=20)


def test_bench_gate_failed_writes_the_file_and_exits_3(slow_server: Any, tmp_path: Path) -> None:
    out, junit = tmp_path / "r.json", tmp_path / "junit.xml"
    code, stdout, stderr = cliutil.run_cli("bench", f"{slow_server.url}/", "-n", "20", "-c", "2", "--fail-if",
                                           "p99>1ms", "--fail-if", "rps<1", "--json", str(out), "--junit", str(junit))
    assert code == 3, (stdout, stderr)
    root = validated(junit.read_text())
    result = json.loads(out.read_text())
    (failed,) = [gate for gate in result["gates"] if gate["verdict"] == "fail"]
    message = f"p99>1ms: {failed['measured_text']}, above 1 ms"
    assert cases(root)["p99>1ms"] == ("failure", message, "fail") and message in stderr
    assert float(properties(root)["latency.p99_ms"]) * 1000 == result["latency"]["corrected"]["percentiles"]["99"]
    assert properties(root)["requests.complete"] == "20" and counts(root) == (3, 1, 0, 0)


def test_compare_and_run_gate_failed_write_the_file_and_exit_3(slow_server: Any, tmp_path: Path) -> None:
    junit = tmp_path / "compare.xml"
    code, stdout, stderr = cliutil.run_cli("compare", f"{slow_server.url}/a", f"{slow_server.url}/b", "--trials", "3",
                                           "--no-warmup", "-n", "6", "-c", "2", "--fail-if", "p99>1ms", "--junit",
                                           str(junit))  # fmt: skip
    assert code == 3, (stdout, stderr)
    root = validated(junit.read_text())
    assert counts(root) == (3, 2, 0, 0)
    outcome, message, kind = cases(root)["p99>1ms for /b"]
    assert (outcome, kind) == ("failure", "fail") and message.endswith(" ms (median of 3), above 1 ms")
    assert message in stderr
    experiment = tmp_path / "e.toml"
    experiment.write_text(EXPERIMENT.format(url=slow_server.url))
    junit = tmp_path / "run.xml"
    code, stdout, stderr = cliutil.run_cli("run", str(experiment), "--results", str(tmp_path / "results"),
                                           "--fail-if", "rps<1", "--junit", str(junit))  # fmt: skip
    assert code == 3, (stdout, stderr)
    root = validated(junit.read_text())
    found = cases(root)
    assert list(found) == ["run completed", "load 1 (NC 2, NR 6): run completed", "load 1 (NC 2, NR 6): p99>1ms for a",
                           "load 1 (NC 2, NR 6): p99>1ms for b", "load 1 (NC 2, NR 6): rps<1 for a",
                           "load 1 (NC 2, NR 6): rps<1 for b"]  # fmt: skip
    outcome, message, _ = found["load 1 (NC 2, NR 6): p99>1ms for b"]
    assert outcome == "failure" and message.startswith("p99>1ms for b: ") and message.endswith(", above 1 ms")
    assert stderr.splitlines()[-1].startswith("pounder: error: load 1 (NC 2, NR 6): 2 of 4 gates failed: ")
    assert message in stderr
    assert found["load 1 (NC 2, NR 6): rps<1 for a"][0] == "passed" and counts(root) == (6, 2, 0, 0)
    stored = json.loads((tmp_path / "results" / "load-1.json").read_text())
    props = properties(root)
    for variant in stored["variants"]:
        at = f"load 1.{variant['label']}."
        assert props[f"{at}trials_counted"] == str(variant["trials"]) == "3"
        assert props[f"{at}requests.complete"] == str(variant["complete"]) == "18"
        assert float(props[f"{at}p99_ms"]) == pytest.approx(variant["p99_us"]["median"] / 1000, abs=0.0005)
        assert float(props[f"{at}requests_per_s"]) == pytest.approx(variant["requests_per_s"]["median"], abs=0.0005)


EXPERIMENT = """\
title = "junit"
fail_if = ["p99>1ms"]

[server]
adapter = "url"

[[load]]
connections = 2
requests = 6
trials = 3

[[variant]]
label = "a"
url = "{url}/a"

[[variant]]
label = "b"
url = "{url}/b"
"""


@pytest.mark.parametrize("args", [
    ["bench", "http://127.0.0.1:9/", "--junit", "-"],
    ["bench", "http://127.0.0.1:9/", "--json", "{d}/same", "--junit", "{d}/same"],
    ["compare", "http://127.0.0.1:9/a", "http://127.0.0.1:9/b", "--junit", "{d}/nope/x.xml"],
    ["run", "{d}/missing.toml", "--junit", "{d}/x.json"],
])  # fmt: skip
def test_a_bad_junit_file_is_refused_first(tmp_path: Path, args: list[str]) -> None:
    filled = [arg.replace("{d}", str(tmp_path)) for arg in args]
    cliutil.assert_usage_error(*cliutil.run_cli(*filled), "--junit")
    assert list(tmp_path.iterdir()) == []
    shutil.rmtree(tmp_path, ignore_errors=True)
