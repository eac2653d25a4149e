"""A tuning run as JUnit XML (``pounder tune --junit FILE``, :mod:`pounder._junit`): the run's case,
then one case per check of the confirmation run (memory, failures, throughput, p99, rate, ...): a
check not met is a ``<failure>`` with its words as the text prints them (the figure measured
against its limit), a rate one server cannot carry but the fleet does is ``<skipped>`` (it fails
nothing, as the exit status says), and a run without confirmation (``--no-confirm``) has a skipped
``confirmation`` case; the recommendation's settings and the confirmation's figures are the
properties; :meth:`TuneResult.to_junit`."""

from __future__ import annotations

from pounder._junit import Case, Suite, figure, run_case
from pounder._tune_run import Confirmation
from pounder.tune._result import TuneResult

CLASSNAME = "pounder.tune"


def _properties(result: TuneResult, confirmation: Confirmation | None) -> list[tuple[str, str]]:
    stored = result.confirmation or {}
    params = result.params.to_dict()
    names = dict(result.adapter.names)
    props = [("server", result.adapter.describe()), ("results", result.results_dir),
             *((f"recommendation.{key}", "-" if value is None else str(value).lower() if isinstance(value, bool)
                else str(value)) for key, value in params.items()),
             *((f"recommendation.{key}.name", names[key]) for key in params if key in names),
             ("recommendation.config", result.config)]  # fmt: skip
    if confirmation is not None:
        props += [("confirmation.load", confirmation.load_text), ("confirmation.complete", str(confirmation.complete)),
                  ("confirmation.failed", str(confirmation.failed)),
                  ("confirmation.requests_per_s", figure(confirmation.rps, 2)),
                  ("confirmation.p99_ms", figure(confirmation.p99_ms)),
                  ("confirmation.elapsed_s", figure(float(stored.get("elapsed_s") or 0.0)))]  # fmt: skip
    return props


def tune_junit(result: TuneResult) -> Suite:
    """``result`` (a finished tuning run) as a JUnit suite (no times: the run's is not kept, the
    confirmation's is a property)."""
    stored = result.confirmation
    confirmation = None if stored is None else Confirmation.from_dict(stored)
    cases = [run_case(CLASSNAME, 0.0)]
    if confirmation is None:
        cases.append(Case("confirmation", CLASSNAME, 0.0, "skipped", "the confirmation did not run (--no-confirm)"))
    else:
        size = None if result.fleet is None else result.fleet.size
        for check in confirmation.checks:
            name = f"confirmation: {check.name}"
            if check.ok:
                cases.append(Case(name, CLASSNAME, output=check.text))
            elif result.carried_by_fleet(check.name) and size is not None:
                cases.append(Case(name, CLASSNAME, 0.0, "skipped",
                                  f"not met by one server, carried by the fleet: {check.text}; {size.text}"))
            else:
                cases.append(Case(name, CLASSNAME, 0.0, "failure", check.text, "not met"))
    return Suite(f"pounder tune {result.adapter.describe()}", tuple(cases), tuple(_properties(result, confirmation)))

