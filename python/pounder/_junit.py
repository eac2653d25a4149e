"""A run's verdicts as JUnit XML (``--junit FILE`` of bench, compare, run and tune), the file CI
systems show as tests: one ``<testsuite>`` root (what Maven Surefire writes and Jenkins, GitLab,
GitHub Actions' reporters and Azure read; valid under Surefire's ``surefire-test-report.xsd`` and
Jenkins' ``junit-10.xsd``, both in tests/data/junit, checked by tests/test_junit.py), its
``<properties>`` the run's figures, then its test cases.

Every file holds a case for the run itself (:func:`run_case`: ``run completed``, an ``<error>``
when the command exits 1 or was interrupted), so that a run without gates still counts one test
(a report of none fails Jenkins' ``junit`` step) and the file fails exactly when the exit status is
not 0; then one case per gate, or per confirmation check of a tuning run, each a ``<failure>``
with the words the text report prints. This module only writes: what each command's cases and
figures are is said by the package that measured them (``pounder.results``, ``pounder.compare``,
``pounder.experiment``, ``pounder.tune``: each result's ``to_junit``); the command writes the
file with the other outputs (:func:`pounder._files.write_atomic`)."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["passed", "failure", "error", "skipped"]
RUN_CASE = "run completed"
"""The name of the case for the run itself."""

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: str) -> str:
    """``value`` without the characters XML 1.0 cannot hold (control characters), each a ``?``."""
    return _NOT_XML.sub("?", value)


def seconds(value: float) -> str:
    """A duration as both schemas take it: ``12.345`` (Jenkins' ``SUREFIRE_TIME``: at most three decimals)."""
    return f"{max(0.0, value if math.isfinite(value) else 0.0):.3f}"


@dataclass(frozen=True)
class Case:
    """One ``<testcase>``: its ``name`` and ``classname`` (``pounder.bench``: how CI groups the
    cases), its ``time_s``, its ``outcome`` and, unless passed, the ``message`` (the
    ``message`` attribute and the element's text) and ``kind`` (the ``type`` attribute: a gate's
    verdict, ``interrupted``...); ``output``: a line for ``<system-out>`` (a passed gate's measured
    figure)."""

    name: str
    classname: str
    time_s: float = 0.0
    outcome: Outcome = "passed"
    message: str = ""
    kind: str = ""
    output: str = ""


@dataclass(frozen=True)
class Suite:
    """The ``<testsuite>``: ``name`` (the command and what it loaded), ``cases``, ``properties``
    (name, value) in order, the run's ``time_s`` and its start, ``timestamp`` (ISO 8601 UTC)."""

    name: str
    cases: tuple[Case, ...]
    properties: tuple[tuple[str, str], ...] = ()
    time_s: float = 0.0
    timestamp: str | None = None

    def count(self, outcome: Outcome) -> int:
        return sum(case.outcome == outcome for case in self.cases)

    def render(self) -> str:
        """The XML document (UTF-8, with its declaration)."""
        suite = ET.Element("testsuite", {
            "name": _text(self.name), "tests": str(len(self.cases)), "failures": str(self.count("failure")),
            "errors": str(self.count("error")), "skipped": str(self.count("skipped")), "time": seconds(self.time_s),
            **({"timestamp": self.timestamp} if self.timestamp else {}),
        })  # fmt: skip
        if self.properties:
            listed = ET.SubElement(suite, "properties")
            for name, value in self.properties:
                ET.SubElement(listed, "property", {"name": _text(name), "value": _text(value)})
        for case in self.cases:
            element = ET.SubElement(suite, "testcase", {"name": _text(case.name), "classname": _text(case.classname),
                                                        "time": seconds(case.time_s)})  # fmt: skip
            if case.outcome != "passed":
                attributes = {"message": _text(case.message)}
                if case.kind and case.outcome != "skipped":
                    attributes["type"] = _text(case.kind)
                ET.SubElement(element, case.outcome, attributes).text = _text(case.message)
            if case.output:
                ET.SubElement(element, "system-out").text = _text(case.output)
        ET.indent(suite)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def run_case(classname: str, time_s: float, problems: Iterable[str] = (), interrupted: str | None = None,
             name: str = RUN_CASE) -> Case:
    """The case for the run itself (``name``): an ``<error>`` when it was ``interrupted`` (what
    stopped it and what the figures are, in words) or has ``problems`` (the lines the command
    exits 1 with), else passed."""
    if interrupted is not None:
        return Case(name, classname, time_s, "error", interrupted, "interrupted")
    said = "; ".join(problems)
    return Case(name, classname, time_s, "error", said, "failed") if said else Case(name, classname, time_s)


def interrupted_text(elapsed_s: float) -> str:
    """What an interrupted run's case says: what stopped it (:func:`pounder._interrupt.cause`), and
    that its figures are a part."""
    from pounder import _interrupt

    return f"interrupted by {_interrupt.cause()}: the figures are of the {elapsed_s:.1f} s measured until then"


def stopped_suite(name: str, classname: str, message: str, *, failed: bool = False) -> Suite:
    """A run a signal stopped before it had a result (or that ``failed``: a server that did not
    start, a measurement that failed): its one case, an error saying ``message`` (what stopped it,
    where what was measured is, how to go on; or the error line)."""
    return Suite(name, (run_case(classname, 0.0, [message]) if failed else
                        run_case(classname, 0.0, interrupted=message),))  # fmt: skip


def figure(value: float | int | None, digits: int = 3) -> str:
    """A property's value: an integer as it is, a float with ``digits`` decimals at most (trailing
    zeros dropped), ``-`` for none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".")

