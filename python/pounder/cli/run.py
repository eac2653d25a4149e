"""``pounder run EXPERIMENT.toml``: run an experiment file (see :mod:`pounder.experiment`)."""

from __future__ import annotations

import dataclasses
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from pounder import _interrupt
from pounder._errors import PounderError
from pounder._files import check_distinct
from pounder._junit import stopped_suite
from pounder.cli._bridge import Use, given, takes
from pounder.cli._common import (
    COMPARE_GATES,
    Measured,
    check_junit_path,
    check_report_path,
    fail_if_option,
    gates_exit,
    interrupted,
    junit_option,
    measured_run,
    option,
    report_option,
    write_html_report,
    write_junit_file,
)
from pounder.cli._load_options import AgentFlags, load_parameter, takes_load_options, tls_parameters
from pounder.cli._metrics_out import metrics_option, metrics_out
from pounder.compare import parse_compare_gates
from pounder.experiment import load_experiment, run_experiment
from pounder.load import LoadOptions
from pounder.pool import ResultsDir

RUN_HELP = "\n\n".join([
    "Run an experiment file: a server (apache, gunicorn, starman, command, or plain URLs), its variants "
    "(paths, config lines, pool settings) and one or more loads. Each distinct server setting gets its own server, "
    "all side by side on loopback ports; the variants are compared with interleaved trials (pounder compare) "
    "and the children's memory is recorded.",
    "The classic experiments ship in examples/experiments/. Everything is written to the results directory as it "
    "is measured; every refusal (a bad file, a certificate the engine would refuse) comes before anything is "
    "printed or written.",
    "https:// variant URLs (adapter url) are trusted as the file's \\[tls] table says (cacert, insecure, cert, key, "
    "resume: pounder bench's --cacert, --insecure, --cert, --key, --no-tls-resume), each flag given here over its "
    "key.",
    "Exit status: 0 done, 1 a server or a measurement failed (also when a server's warm-up got nowhere) or a "
    "variant's trials got nowhere (no request succeeded, no answer was 2xx or 3xx, written first), "
    "2 bad input (a bad file names its line and key), 3 a gate failed (--fail-if or the file's fail_if), "
    "130 interrupted.",
])

EXPERIMENT = typer.Argument(metavar="EXPERIMENT.toml", show_default=False, help=(
    "The experiment file (TOML; examples in examples/experiments/)."))
RESULTS = option("--results", panel="Output", metavar="DIR", help=(
    "Where to write the results (default ./pounder-run-NAME-DATE-TIME); must not exist or be empty."))
REPORT = report_option("Output", "results")
QUICK = option("--quick", panel="Run", help=(
    "At most 3 trials of 1 s per variant and load (too few for a slower>N% gate, which is then refused)."))
FAIL_IF = fail_if_option("Output", COMPARE_GATES, (
    "Evaluated on every load's comparison, after the experiment file's own fail_if = [\"slower>5%\", ...]."))


JUNIT = junit_option("Output", "for each load its own and one per gate of its comparison (the file's fail_if, then "
                     "--fail-if) and URL, named after the load")


@takes(Use(Measured, "junit", "Output", help=JUNIT.help))
@takes_load_options(*tls_parameters(), load_parameter("allow_remote", "Output", help=(
    "Let --metrics-out send to another machine (the experiment's servers and loads stay on this machine's loopback).")))
@takes(AgentFlags, metrics_option("Output"), before="fail_if")
def run_command(
    ctx: typer.Context,
    experiment: Annotated[str, EXPERIMENT],
    results: Annotated[str | None, RESULTS] = None,
    quick: Annotated[bool, QUICK] = False,
    report: Annotated[str | None, REPORT] = None,
    fail_if: Annotated[list[str] | None, FAIL_IF] = None,
) -> None:
    load, junit = given(ctx, LoadOptions), given(ctx, Measured).junit
    check_junit_path(junit)
    gates = parse_compare_gates(fail_if)  # before anything is started
    sender = given(ctx, AgentFlags).sender()
    exp = load_experiment(experiment)
    exp = dataclasses.replace(exp, tls=exp.tls.over(load))  # the flags over the file's [tls]
    where = results if results is not None else f"pounder-run-{exp.path.stem}-{datetime.now():%Y%m%d-%H%M%S}"
    ResultsDir.check_new(where, resumable=False)
    check_report_path(report)
    check_distinct([("--results", where), ("--report", report), ("--junit", junit)], [("experiment", experiment)])

    def log(line: str) -> None:
        sys.stderr.write(f"pounder: {line}\n")
        sys.stderr.flush()

    def keep() -> None:
        if report is not None and Path(where, "experiment.json").is_file():
            write_html_report([where], report)

    def failed(message: str) -> None:  # exit 1: the JUnit file says why
        write_junit_file(lambda: stopped_suite(f"pounder run {exp.title}", "pounder.run", message,
                                               failed=True).render(), junit)  # fmt: skip

    measured = f"what was measured is in {where}"
    with metrics_out(ctx, "run", allow_remote=load.allow_remote), \
            measured_run(measured, keep, failed):
        outcome = run_experiment(exp, where, quick=quick, log=log, sender=sender,
                                 gates=[gate.text for gate in gates] if fail_if else None)
    with _interrupt.deferred():  # a signal now waits until the summary and the page are out
        try:
            write_junit_file(outcome.to_junit, junit)
        finally:  # a file that cannot be written after all is said once the summary is out
            sys.stdout.write(outcome.render())
            keep()
    if outcome.interrupted:
        raise interrupted(f"every server was stopped; {measured}")
    failures = outcome.failures()
    if failures:  # written and printed; still no comparison with them (as pounder compare)
        raise PounderError("; ".join(failures))
    gate_failures = outcome.gate_failures()
    gates_exit("; ".join(gate_failures) if gate_failures else None)
