"""A saved bench result as a baseline (``pounder bench --baseline OLD.json``).

Decisions on two recorded runs of the same spec (tests/data/baseline-old.json and baseline-new.json:
pair 13 of the false-alarm benchmark, benchmarks/baseline_false_alarms.py, where the new run met a
busier machine): the figures against medians worked out here from the files' own series, the
whole runs' p99 against the HDR histogram decoded apart from the engine (tests/support/hdr.py);
the gates with compare's rule; the JSON, its schema and both reports. Refusals of another spec,
a corrupt, foreign or oversized file, one line and exit 2 with the server having received nothing.
One live run of 5 s against the test server (answers after 10 ms, without CPU)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pounder import UsageError, load_result, render_report
from pounder.results import (
    BASELINE_METRICS,
    FALSE_ALARMS,
    Baseline,
    BenchResult,
    SecondSample,
    compare_with_baseline,
    evaluate_gates,
    parse_gate,
    parse_gates,
)
from support.cliutil import assert_usage_error, run_cli, run_pounder
from support.hdr import decode_hdr
from support.schemas import validate

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
OLD, NEW = DATA / "baseline-old.json", DATA / "baseline-new.json"


def _seconds(raw: dict[str, Any]) -> tuple[list[float], list[float]]:
    """Requests completed in each full second (0 for a second with no entry) and each full second's
    p99 (those that completed a request), read from the JSON as written."""
    full = math.floor(raw["elapsed_s"] + 0.001)
    rates = [0.0] * full
    p99s = []
    for entry in sorted(raw["series"], key=lambda e: e["second"]):
        if entry["second"] < full:
            rates[entry["second"]] = float(entry["complete"])
            if entry["complete"]:
                p99s.append(float(entry["p99_us"]))
    return rates, p99s


def _hdr_p99(raw: dict[str, Any]) -> tuple[int, int]:
    """The value range of the bucket holding the 99th percentile of the run's histogram."""
    buckets = sorted(decode_hdr(raw["histogram"]).buckets.items())
    total = sum(count for _, count in buckets)
    seen = 0
    for (low, high), count in buckets:
        seen += count
        if seen >= math.ceil(0.99 * total):
            return low, high
    raise AssertionError("no p99")


def _compared(new: Path = NEW, old: Path = OLD) -> tuple[BenchResult, Baseline]:
    result = load_result(new)
    baseline = compare_with_baseline(result, load_result(old), old.name)
    return replace(result, baseline=baseline), baseline


def test_the_figures_are_the_medians_of_each_runs_seconds() -> None:
    new_raw, old_raw = json.loads(NEW.read_text()), json.loads(OLD.read_text())
    _, baseline = _compared()
    (new_rates, new_p99s), (old_rates, old_p99s) = _seconds(new_raw), _seconds(old_raw)
    assert len(new_rates) == len(old_rates) == 5
    rate, p99 = baseline.requests_per_s, baseline.p99_us
    assert (rate.new, rate.old) == (statistics.median(new_rates), statistics.median(old_rates))
    assert (p99.new, p99.old) == (statistics.median(new_p99s), statistics.median(old_p99s))
    assert rate.ratio == pytest.approx(statistics.median(new_rates) / statistics.median(old_rates))
    assert p99.ratio == pytest.approx(statistics.median(new_p99s) / statistics.median(old_p99s))
    for figure in (rate, p99):
        assert figure.low is not None and figure.high is not None and figure.ratio is not None
        assert figure.low <= figure.ratio <= figure.high
        assert (figure.new_samples, figure.old_samples) == (5, 5)
    # the whole runs: requests/s over the measured phase, the p99 of each run's HDR histogram
    assert rate.new_whole == pytest.approx(new_raw["requests"]["complete"] / new_raw["elapsed_s"])
    assert rate.old_whole == pytest.approx(old_raw["requests"]["complete"] / old_raw["elapsed_s"])
    for whole, raw in ((p99.new_whole, new_raw), (p99.old_whole, old_raw)):
        low, high = _hdr_p99(raw)
        assert whole is not None and low <= whole <= high + 1
    # this pair: the new run met a busier machine, slower on both figures
    assert baseline.by == "requests_per_s" and baseline.block_s == 1
    assert (rate.verdict, p99.verdict, baseline.verdict) == ("slower", "slower", "slower")
    assert (baseline.file, baseline.started_at) == ("baseline-old.json", old_raw["started_at"])


def test_gates_fail_only_when_the_whole_interval_is_beyond_the_limit() -> None:
    result, baseline = _compared()
    rate, p99 = baseline.requests_per_s, baseline.p99_us
    assert rate.high is not None and p99.low is not None
    rate_least, p99_least = (1 - rate.high) * 100, (p99.low - 1) * 100
    gates = parse_gates(["slower>5%", f"slower>{math.ceil(rate_least)}%", "p99-slower>5%",
                         f"p99-slower>{math.ceil(p99_least)}%", "p99>1s"], metrics=BASELINE_METRICS)
    report = evaluate_gates(gates, result)
    assert [r.verdict for r in report.results] == ["fail", "pass", "fail", "pass", "pass"]
    assert [r.measured for r in report.results[:4]] == pytest.approx([rate_least, rate_least, p99_least, p99_least])
    assert report.results[0].subject == "new vs baseline-old.json"
    assert "the whole 95 % interval is more than 5% slower" in report.results[0].why
    assert report.results[0].measured_text.startswith(f"requests/s {rate.ratio:.3f}x (")
    # the same run against itself: no clear difference, no gate fails
    same, itself = _compared(OLD, OLD)
    assert itself.requests_per_s.ratio == itself.p99_us.ratio == 1.0
    assert itself.verdict == "no clear difference"
    assert evaluate_gates(gates, same).passed


def test_a_run_too_short_for_an_interval_is_unmeasurable() -> None:
    new = load_result(NEW)
    short = replace(new, elapsed_s=3.0, series=tuple(s for s in new.series if s.second < 3))
    baseline = compare_with_baseline(short, load_result(OLD), "old.json")
    assert baseline.requests_per_s.ratio is None and baseline.requests_per_s.verdict == "unknown"
    assert (baseline.requests_per_s.new_samples, baseline.requests_per_s.old_samples) == (3, 5)
    (verdict,) = evaluate_gates(parse_gates("slower>5%", metrics=BASELINE_METRICS),
                                replace(short, baseline=baseline)).results
    assert verdict.verdict == "unmeasurable"
    assert "3 and 5 samples" in verdict.why
    # without a baseline section the ratio gates are unmeasurable too (a result read back)
    (alone,) = evaluate_gates(parse_gates("p99-slower>5%", metrics=BASELINE_METRICS), new).results
    assert alone.verdict == "unmeasurable" and "--baseline" in alone.why


def test_a_long_run_is_taken_in_blocks_of_seconds() -> None:
    """210 full seconds a side: blocks of 2 seconds (at most 200 samples), each the mean of its seconds."""
    old = load_result(OLD)
    counts = [700 + (second * 37) % 101 for second in range(210)]
    series = tuple(SecondSample(second=s, complete=c, non_2xx=0, failed=0, bytes=0, mean_us=1.0, p50_us=1,
                                p99_us=5000 + s % 7, max_us=9000) for s, c in enumerate(counts))
    long = replace(old, elapsed_s=210.2, series=series)
    baseline = compare_with_baseline(long, long, "old.json")
    blocks = [sum(counts[i:i + 2]) / 2 for i in range(0, 210, 2)]
    assert baseline.block_s == 2
    assert baseline.requests_per_s.new_samples == 105
    assert baseline.requests_per_s.new == pytest.approx(statistics.median(blocks))


def test_json_schema_and_reading_back() -> None:
    result, baseline = _compared()
    document = json.loads(result.to_json())
    validate(document, "bench-result")
    assert document["baseline"]["requests_per_s"]["verdict"] == "slower"
    assert document["baseline"]["false_alarms"]["pairs"] == FALSE_ALARMS.pairs
    assert BenchResult.from_json(result.to_json()).baseline == baseline
    assert "baseline" not in json.loads(load_result(NEW).to_json())  # only with --baseline


@pytest.mark.parametrize(("change", "fragment"), [
    (lambda b: {**b, "by": "rps"}, "'baseline.by' must be one of requests_per_s, p99_us"),
    (lambda b: {k: v for k, v in b.items() if k != "p99_us"}, "missing 'baseline.p99_us'"),
    (lambda b: {**b, "requests_per_s": {**b["requests_per_s"], "verdict": "quicker"}}, "verdict"),
    (lambda b: {**b, "p99_us": b["requests_per_s"]}, "'baseline.p99_us.name' must be 'p99_us'"),
])  # fmt: skip
def test_a_malformed_section_is_named(tmp_path: Path, change: Any, fragment: str) -> None:
    result, _ = _compared()
    document = json.loads(result.to_json())
    document["baseline"] = change(document["baseline"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(UsageError, match="is not a pounder bench result") as caught:
        load_result(path)
    assert fragment in str(caught.value)


def test_the_reports_show_the_comparison_and_the_false_alarms(tmp_path: Path) -> None:
    result, baseline = _compared()
    result = replace(result, gates=evaluate_gates(parse_gates(["slower>5%"], metrics=BASELINE_METRICS), result))
    text = render_report(result)
    rate = baseline.requests_per_s
    assert "Baseline: baseline-old.json (started " in text
    row = next(line for line in text.splitlines() if line.strip().startswith("requests/s "))
    assert f"{rate.new:,.1f}" in row and f"{rate.old:,.1f}" in row and "slower" in row
    assert f"{(rate.ratio - 1) * 100:+.1f}%" in row  # type: ignore[operator]
    flat = " ".join(text.split())
    assert FALSE_ALARMS.sentence() in flat
    assert "weaker evidence than interleaved trials" in flat
    saved = tmp_path / "new.json"
    saved.write_text(result.to_json())
    page = tmp_path / "page.html"
    code, _, stderr = run_cli("report", str(saved), "-o", str(page))
    assert code == 0, stderr
    body = page.read_text()
    assert "Baseline: baseline-old.json" in body and "new/baseline (95 % interval)" in body
    assert "slower&gt;5%" in body and "not read" not in body  # the gate is read with the baseline's metrics


def test_the_false_alarm_rates_are_the_measured_ones() -> None:
    measured = json.loads((ROOT / "benchmarks" / "results" / "baseline_false_alarms.json").read_text())
    assert (FALSE_ALARMS.date, FALSE_ALARMS.pairs, dict(FALSE_ALARMS.fired), FALSE_ALARMS.different) == \
        (measured["date"], measured["pairs"], measured["fired"], measured["different"])  # fmt: skip
    assert (FALSE_ALARMS.low, FALSE_ALARMS.high, FALSE_ALARMS.command) == \
        (measured["low"], measured["high"], measured["command"])  # fmt: skip
    interleaved = measured["interleaved"]
    assert (FALSE_ALARMS.compare_rounds, FALSE_ALARMS.compare_fired, FALSE_ALARMS.compare_different) == \
        (interleaved["rounds"], interleaved["fired"], interleaved["different"])  # fmt: skip
    readme = " ".join((ROOT / "README.md").read_text().split())
    for gate, count in FALSE_ALARMS.fired.items():
        assert f"`{gate}` fired in {count} of {FALSE_ALARMS.pairs}" in readme


def test_the_ratio_gates_are_read_with_a_baseline_only() -> None:
    gate = parse_gate("p99-slower>10%", metrics=BASELINE_METRICS)
    assert (gate.metric, gate.threshold, gate.unit) == ("p99-slower", 10.0, "percent")
    with pytest.raises(UsageError, match="unknown metric 'slower'.*pounder bench --baseline"):
        parse_gate("slower>5%")
    with pytest.raises(UsageError, match="takes > or >="):
        parse_gate("p99-slower<5%", metrics=BASELINE_METRICS)


# ---------------------------------------------------------------------------------------------
# The command line


def _like(path: Path, server: Any, folder: Path, **load: Any) -> Path:
    """The recorded baseline as if it had been run against ``server`` (its address), its load
    changed by ``load``, written in ``folder``."""
    document = json.loads(path.read_text())
    port = server.url.rsplit(":", 1)[1]
    document["options"]["targets"] = [{"url": f"{server.url}/", "weight": 1, "connect": f"127.0.0.1:{port}"}]
    document["options"]["load"].update(load)
    out = folder / f"like-{len(list(folder.iterdir()))}.json"
    out.write_text(json.dumps(document))
    return out


def test_another_spec_or_a_bad_file_is_refused_before_anything_is_sent(testserver: Any, tmp_path: Path) -> None:
    server = testserver()
    base = _like(OLD, server, tmp_path)
    url = f"{server.url}/"
    same = [url, "-c", "4", "-t", "2", "-d", "5s", "--warmup", "1s"]
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"schema": "pounder/bench-result/3", "requests": ')
    huge = tmp_path / "huge.json"
    with huge.open("wb") as out:
        out.truncate(257 * 1024 * 1024)  # sparse: larger than a result may be, nothing written
    other_body = json.loads(base.read_text())
    other_body["options"]["http"].update(method="POST", body_bytes=3, body_sha256=hashlib.sha256(b"abd").hexdigest())
    (tmp_path / "other-body.json").write_text(json.dumps(other_body))
    interrupted = json.loads(base.read_text())
    interrupted["interrupted"] = True
    (tmp_path / "interrupted.json").write_text(json.dumps(interrupted))
    cases = [
        ([*same, "--baseline", str(OLD)], "the target (where the requests go) is ['127.0.0.1:"),
        ([url, "-c", "8", "-t", "2", "-d", "5s", "--warmup", "1s", "--baseline", str(base)],
         "load.connections is 8 here and 4 in the baseline"),
        ([url, "-c", "4", "-t", "1", "-d", "5s", "--warmup", "1s", "--baseline", str(base)],
         "load.threads is 1 here and 2 in the baseline; give -t 2 to run as it did"),
        ([url, "--rate", "100", "-c", "4", "-t", "2", "-d", "5s", "--warmup", "1s", "--baseline", str(base)],
         "load.kind is 'open' here and 'closed' in the baseline"),
        ([url, "-c", "4", "-t", "2", "-n", "4000", "--warmup", "1s", "--baseline", str(base)],
         "bound the load by time (-d 30s), not by a count (-n 4000)"),
        ([*same, "-m", "POST", "--baseline", str(base)], "the request's method is 'POST' here and 'GET'"),
        ([*same, "--expect-status", "404", "--baseline", str(base)],
         "the statuses that count as answers (--expect-status) is ((404, 404),) here and None"),
        ([*same, "-H", "X-Flavour: new", "--baseline", str(base)], "the request's headers is (('X-Flavour', 'new'),)"),
        ([f"{server.url}/other", *same[1:], "--baseline", str(base)], "the URL set (URL, weight, own method) is"),
        ([*same, "-m", "POST", "-b", "abc", "--baseline", str(tmp_path / "other-body.json")],
         f"the request's body_sha256 is '{hashlib.sha256(b'abc').hexdigest()}' here"),
        ([*same, "--baseline", str(corrupt)], f"--baseline: {corrupt} is not a pounder bench result: not valid JSON"),
        ([*same, "--baseline", str(DATA / "compare-fast-slow.json")],
         "is not a pounder bench result: 'schema' is 'pounder/compare/1'"),
        ([*same, "--baseline", str(huge)], "is larger than the limit"),
        ([*same, "--baseline", str(tmp_path / "interrupted.json")], "was interrupted: a partial run is no baseline"),
        ([*same, "--baseline", str(_like(OLD, server, tmp_path, duration_s=3.0))], "load.duration_s"),
        ([*same, "--fail-if", "slower>5%"], "unknown metric 'slower'"),
        ([*same, "--baseline", str(base), "--json", str(base)], "would overwrite the --baseline input"),
    ]
    for args, fragment in cases:
        line = assert_usage_error(*run_cli("bench", *args), fragment)
        assert "another spec" in line or "--baseline" in line or "--fail-if" in line, line
    short = json.loads(base.read_text())
    short["elapsed_s"] = 3.2
    (tmp_path / "short.json").write_text(json.dumps(short))
    assert_usage_error(*run_cli("bench", *same, "--baseline", str(tmp_path / "short.json")),
                       "measured 3 full seconds: a baseline needs at least 5")
    assert server.count() == 0  # nothing was sent


def test_a_live_run_against_a_saved_baseline(testserver: Any, tmp_path: Path) -> None:
    """5 s against the test server (each answer after 10 ms without CPU: the load leaves the cores to
    the tests beside it), compared with the recorded baseline moved to its address: the section's
    figures are those of the two files' seconds, the gates' verdicts set the exit status."""
    server = testserver(delay_ms=10)
    base = _like(OLD, server, tmp_path, warmup_s=0.0)
    out = tmp_path / "new.json"
    done = run_pounder("bench", f"{server.url}/", "-c", "4", "-t", "2", "-d", "5s", "--baseline", base,
                       "--fail-if", "slower>5%", "--fail-if", "p99-slower>10%", "--json", out, timeout=60)
    document = json.loads(out.read_text())
    validate(document, "bench-result")
    section = document["baseline"]
    (new_rates, new_p99s), (old_rates, _) = _seconds(document), _seconds(json.loads(base.read_text()))
    assert section["file"] == str(base) and section["block_s"] == 1
    assert section["requests_per_s"]["new"] == statistics.median(new_rates)
    assert section["requests_per_s"]["old"] == statistics.median(old_rates)
    assert section["p99_us"]["new"] == statistics.median(new_p99s)
    assert section["requests_per_s"]["new_whole"] == pytest.approx(document["requests"]["complete"] /
                                                                  document["elapsed_s"])
    assert sum(new_rates) <= server.count()  # every request counted was received
    failed = [gate for gate in document["gates"] if gate["verdict"] != "pass"]
    assert done.returncode == (3 if failed else 0), done.stderr
    assert "Baseline: " in done.stdout and "weaker evidence than interleaved trials" in done.stdout
    assert os.path.exists(base)
