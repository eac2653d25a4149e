"""The ``--fail-if`` gates of a bench or a comparison on the page: a table of gate, measured, verdict.

A gate is read back by the parser of the command that evaluated it (``parse``: the bench's or the
comparison's): a stored expression that parser refuses was not evaluated by it, so its verdict is
no verdict. Such a gate is listed as not read, with the parser's reason, and not counted as passed
or failed."""

from __future__ import annotations

from collections.abc import Callable

from pounder._errors import UsageError
from pounder._units import count_text
from pounder.report._html import Section, paragraph, table
from pounder.results import GateReport


def gates_section(title: str, gates: GateReport, parse: Callable[[str], object]) -> Section:
    """``gates``: a result's ``"gates"``, read; ``parse``: the command's parser of one expression."""
    unread: dict[int, str] = {}
    for index, result in enumerate(gates.results):
        try:
            parse(result.gate.text)
        except UsageError as error:
            unread[index] = str(error)
    read = [result for index, result in enumerate(gates.results) if index not in unread]
    failed = sum(not result.passed for result in read)
    section = Section(title)
    if failed:
        which = "The gate" if len(read) == 1 else f"{failed} of {len(read)} gates"  # as the bench's line words it
        section.add(paragraph(f"{which} failed (the run exited with status 3)."))
    elif read:
        section.add(paragraph("The gate passed." if len(read) == 1 else f"All {len(read)} gates passed."))
    if unread:
        them = "it" if len(unread) == 1 else "them"
        section.add(paragraph(f"{count_text(len(unread), 'gate', 'gates')} cannot be read by this pounder's "
                              f"--fail-if parser (why: in the table; a result written by an older pounder may "
                              f"hold a gate that is refused now): no verdict is shown for {them}, and none is "
                              "counted."))
    subjects = any(result.subject for result in gates.results)
    rows = []
    for index, result in enumerate(gates.results):
        verdict = "not read" if index in unread else "pass" if result.passed else result.verdict.upper()
        rows.append([*([result.subject or ""] if subjects else []), result.gate.text,
                     "-" if index in unread else result.measured_text, verdict, unread.get(index, result.why)])
    section.add(table([*(["subject"] if subjects else []), "gate", "measured", "verdict", "why"], rows))
    return section
