"""The ``--fail-if`` gates of a bench or a comparison on the page: a table of gate, measured, verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pounder.report._html import Section, paragraph, table


def gates_section(title: str, gates: Sequence[Mapping[str, Any]]) -> Section:
    """``gates``: the ``"gates"`` list of a result's JSON (bench-result.schema.json ``$defs/gates``)."""
    failed = sum(gate.get("verdict") != "pass" for gate in gates)
    section = Section(title)
    section.add(paragraph(f"{failed} of {len(gates)} gates failed (the run exited with status 3)." if failed
                          else f"All {len(gates)} gates passed."))  # fmt: skip
    subjects = any(gate.get("subject") for gate in gates)
    rows = [[*([gate.get("subject") or ""] if subjects else []), gate.get("expression", "-"),
             gate.get("measured_text", "-"), str(gate.get("verdict", "-")).upper() if gate.get("verdict") != "pass"
             else "pass", gate.get("why", "")] for gate in gates]  # fmt: skip
    section.add(table([*(["subject"] if subjects else []), "gate", "measured", "verdict", "why"], rows))
    return section
