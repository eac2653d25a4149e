"""A ``pounder mem --json`` document read back: the current version and the one before it (no
``own_process_excluded``: pounder's own process was never taken out then)."""

from __future__ import annotations

import os

from pounder.procs import MEM_SCHEMA, mem_from_dict, snapshot


def test_both_versions_are_read_and_say_whether_pounders_own_process_was_taken_out() -> None:
    taken = snapshot(os.getpid())  # this process: a parent without children is a snapshot too
    current = taken.to_dict()
    assert current["schema"] == MEM_SCHEMA == "pounder/mem/2"
    read = mem_from_dict(current)
    assert read.snapshot.own_excluded is taken.own_excluded
    assert [p.private for p in read.snapshot.processes] == [p.private for p in taken.processes]

    older = {key: value for key, value in current.items() if key != "own_process_excluded"}
    older["schema"] = "pounder/mem/1"
    assert mem_from_dict(older).snapshot.own_excluded is False
