"""pounder._records, issue 25 item 17: a count is a whole number >= 0 and a duration a number
>= 0 wherever a result is read (the typed reader, or a plain document against its schema); the
few numbers that are differences may be negative."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pounder import PounderError, UsageError, load_result
from pounder._records import Reader, decode_json, number_problem

DEMO = Path(__file__).resolve().parent / "data" / "tune-demo"


class _Malformed(PounderError):
    pass


READ = Reader(_Malformed)


@dataclass(frozen=True)
class _Child:
    pid: int
    cpu_s: float
    private_growth_bytes: int | None
    offset_ms: float


def test_counts_and_durations_are_not_negative_but_differences_may_be() -> None:
    child = READ.record(_Child, {"pid": 7, "cpu_s": 0.5, "private_growth_bytes": -4096, "offset_ms": -1.5}, "c")
    assert child == _Child(7, 0.5, -4096, -1.5)
    for data, message in (({"pid": -7}, "'c.pid' must be a whole number >= 0, got -7"),
                          ({"pid": 7.5}, "'c.pid' must be a whole number >= 0, got 7.5"),
                          ({"cpu_s": -0.1}, "'c.cpu_s' must be a number >= 0, got -0.1"),
                          ({"private_growth_bytes": 1.5}, "'c.private_growth_bytes' must be a whole number, got 1.5"),
                          ({"offset_ms": float("inf")}, "'c.offset_ms' must be a number, got inf")):
        good: dict[str, Any] = {"pid": 7, "cpu_s": 0.5, "private_growth_bytes": None, "offset_ms": 0.0}
        with pytest.raises(_Malformed, match=f"^{re.escape(message)}$"):
            READ.record(_Child, {**good, **data}, "c")
    assert READ.as_int(5.0, "k") == 5 and isinstance(READ.as_int(5.0, "k"), int)
    assert READ.as_int(2**63 - 1, "k") == 2**63 - 1  # the largest a pounder document holds (issue 39)
    with pytest.raises(_Malformed, match=r"^'k' is larger than any pounder result holds \(at most 2\*\*63 - 1\), "
                                         r"got a number of 31 digits$"):
        READ.as_int(10**30, "k")
    with pytest.raises(_Malformed, match=r"'k\[1\]' must be a whole number >= 0, got -1"):
        READ.list_of(READ.as_int)([1, -1], "k")


def test_an_integer_too_long_for_python_is_not_json_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(json.JSONDecodeError):
        decode_json('{"requests": ' + "9" * 5000 + "}")
    path = tmp_path / "long.json"
    path.write_text('{"schema": "pounder/bench-result/3", "requests": ' + "9" * 5000 + "}")
    with pytest.raises(UsageError, match="is not a pounder bench result: not valid JSON"):
        load_result(path)


def test_number_problem_follows_the_schema_to_every_count() -> None:
    point: dict[str, Any] = json.loads(sorted((DEMO / "points").glob("children-*.json"))[0].read_text())
    result: dict[str, Any] = json.loads((DEMO / "recommendation.json").read_text())
    manifest: dict[str, Any] = json.loads((DEMO / "tune.json").read_text())
    assert (number_problem(point, "tune-point"), number_problem(result, "tune-result"),
            number_problem(manifest, "tune")) == (None, None, None)
    # under an if/then of the point's step, under oneOf null-or-object, under additionalProperties
    edited = copy.deepcopy(point)
    edited["summary"]["complete"] = -1
    assert number_problem(edited, "tune-point") == "'summary.complete' must be a whole number >= 0, got -1"
    edited = copy.deepcopy(result)
    edited["sweep"][0]["p99_ms"] = -2.5
    assert number_problem(edited, "tune-result") == "'sweep[0].p99_ms' must be a number >= 0, got -2.5"
    if result.get("confirmation"):
        edited = copy.deepcopy(result)
        edited["confirmation"]["failed"] = 0.5
        assert number_problem(edited, "tune-result") == "'confirmation.failed' must be a whole number >= 0, got 0.5"
    edited = copy.deepcopy(point)
    edited["summary"]["errors"] = {"refused": -3}  # only the categories that happened: at least 1
    assert number_problem(edited, "tune-point") == "'summary.errors.refused' must be a whole number >= 1, got -3"
    # a difference stays free: growth may be negative, a median of a ratio too
    compare = {"schema": "pounder/compare/1", "variants": [{"label": "a", "complete": 5, "requests_per_s": {
        "median": -1.0, "low": None, "high": None, "samples": 3}}]}
    assert number_problem(compare, "compare") is None
    compare["variants"][0]["requests_per_s"]["samples"] = 0
    assert number_problem(compare, "compare") == (
        "'variants[0].requests_per_s.samples' must be a whole number >= 1, got 0")


def test_number_problem_answers_a_document_seen_before_as_it_did() -> None:
    """The answer kept for a document (by its JSON text) is the one for that document only: the same
    document edited in place is checked again, and a document JSON would write as another's (a tuple
    for a list) is checked as it is."""
    point: dict[str, Any] = json.loads(sorted((DEMO / "points").glob("children-*.json"))[0].read_text())
    assert number_problem(point, "tune-point") is None
    point["summary"]["complete"] = 2.5
    assert number_problem(point, "tune-point") == "'summary.complete' must be a whole number >= 0, got 2.5"
    point["summary"]["complete"] = 2.0  # a whole number written as a float is still a count
    assert number_problem(point, "tune-point") == number_problem(copy.deepcopy(point), "tune-point")
    point["summary"]["complete"] = -1
    assert number_problem(point, "tune-point") == "'summary.complete' must be a whole number >= 0, got -1"
    point["summary"]["complete"] = 7
    assert number_problem(point, "tune-point") is None
    compare = {"schema": "pounder/compare/1", "variants": [{"label": "a", "complete": 5, "requests_per_s": {
        "median": 1.0, "low": None, "high": None, "samples": 0}}]}
    assert number_problem(compare, "compare") is not None
    # the same JSON text from a tuple, which the schema does not read as an array: not the list's answer
    assert number_problem({**compare, "variants": ({**compare["variants"][0]},)}, "compare") is None
