"""A bench result as JUnit XML (``pounder bench --junit FILE``, :mod:`pounder._junit`): the run's
case (an error when it was interrupted, lost an agent or got nowhere: the lines bench exits 1 or
130 with), a case per ``--fail-if`` gate (:meth:`GateReport.junit_cases`, shared with the
comparison's), and the result's headline figures as properties; :meth:`BenchResult.to_junit`."""

from __future__ import annotations

from pounder._junit import Suite, figure, interrupted_text, run_case
from pounder.results._outcome import load_failure
from pounder.results._report import describe_load
from pounder.results._result import BenchResult

LATENCIES = ("50", "90", "99", "99.9")
"""The corrected latency's percentiles among a bench's properties (with its mean and max)."""


def bench_properties(result: BenchResult) -> list[tuple[str, str]]:
    """The headline figures of a bench: requests, rate, corrected latency (ms), errors by category."""
    requests, corrected = result.requests, result.latency.corrected
    load = result.options.load
    props = [("pounder.version", result.tool_version),
             *((f"target.{index}", target.url) for index, target in enumerate(result.options.targets, start=1)),
             ("load", describe_load(load)), ("elapsed_s", figure(result.elapsed_s)),
             ("requests.complete", str(requests.complete)), ("requests.failed", str(requests.failed)),
             ("requests.non_2xx", str(requests.non_2xx))]  # fmt: skip
    if load.is_open:
        props += [("requests.late", str(requests.late)), ("requests.unsent", str(requests.unsent))]
    props.append(("requests_per_s", figure(result.derived.requests_per_s)))
    if corrected.count:
        props += [(f"latency.p{p}_ms", figure(corrected.percentiles[p] / 1000)) for p in LATENCIES]
        props += [("latency.mean_ms", figure(corrected.mean_us / 1000)),
                  ("latency.max_ms", figure(corrected.max_us / 1000))]  # fmt: skip
    props += [(f"errors.{name}", str(count)) for name, count in result.errors.nonzero().items()]
    return props


def bench_junit(result: BenchResult) -> Suite:
    """``result`` (a fresh one or one read back) as a JUnit suite: the run, then its gates."""
    classname = "pounder.bench"
    problems = [line for line in (None if result.agents is None else result.agents.partial_line(),
                                  load_failure(result)) if line is not None]  # fmt: skip
    run = run_case(classname, result.elapsed_s, problems,
                   interrupted_text(result.elapsed_s) if result.interrupted else None)  # fmt: skip
    targets = result.options.targets
    name = f"pounder bench {targets[0].url}" + (f" (+{len(targets) - 1} more)" if len(targets) > 1 else "")
    gates = [] if result.gates is None else result.gates.junit_cases(classname)
    return Suite(name, (run, *gates), tuple(bench_properties(result)), result.elapsed_s, result.started_at)
