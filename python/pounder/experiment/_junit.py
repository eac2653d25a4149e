"""An experiment's run as JUnit XML (``pounder run --junit FILE``, :mod:`pounder._junit`): a case for
the experiment (an error when it was interrupted), then each load's comparison as ``pounder compare
--junit`` writes it (its run, its gates: the file's ``fail_if`` and ``--fail-if``), each case named
after its load as the failure lines name it (``load 1 (LABEL): slower>5% for b vs a``), and each
load's figures as properties (``load 1.a.requests_per_s``); :meth:`ExperimentResult.to_junit`."""

from __future__ import annotations

from pounder import _interrupt
from pounder._junit import Case, Suite, run_case
from pounder.experiment._run import ExperimentResult

CLASSNAME = "pounder.run"


def experiment_junit(outcome: ExperimentResult) -> Suite:
    """``outcome`` (a finished or interrupted run) as a JUnit suite."""
    exp = outcome.experiment
    elapsed = sum(trial.elapsed_s for _, result in outcome.comparisons for trial in result.trials)
    stopped = outcome.stopped_line()
    if stopped is not None:
        stopped = f"{stopped} (by {_interrupt.cause()}); what was measured is in {outcome.results_dir}"
    cases: list[Case] = [run_case(CLASSNAME, 0.0, interrupted=stopped)]  # each load's case has its time
    props = [("experiment", exp.title), ("file", str(exp.path)), ("results", str(outcome.results_dir)),
             ("loads", str(len(exp.loads)))]  # fmt: skip
    for index, (load, result) in enumerate(outcome.comparisons, start=1):
        cases += result.junit_cases(CLASSNAME, f"load {index} ({load.label}): ")
        props += result.junit_properties(f"load {index}.")
    started = outcome.comparisons[0][1].started_at if outcome.comparisons else None
    return Suite(f"pounder run {exp.title}", tuple(cases), tuple(props), elapsed, started)
