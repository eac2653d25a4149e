"""A stored comparison read once into typed records (pounder._compare_run, issue 40 item 2): every
stored one reads and writes back as it was, its records hold the figures the document holds, and
a comparison the page cannot draw is refused in the words it was before."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pounder._compare_run import CompareRun, MalformedCompareError
from support.schemas import validate

DATA = Path(__file__).resolve().parent / "data"
STORED = sorted(DATA.glob("compare-*.json"))


def test_the_stored_comparisons_are_there() -> None:
    assert len(STORED) >= 4


@pytest.mark.parametrize("path", STORED, ids=lambda p: p.stem)
def test_every_stored_comparison_reads_as_a_record_and_back(path: Path) -> None:
    stored = json.loads(path.read_text())
    validate(stored, "compare")
    run = CompareRun.from_dict(stored)
    assert run.to_dict() == stored
    assert [variant.to_dict() for variant in run.variants] == stored["variants"]
    assert [versus.to_dict() for versus in run.comparisons] == stored["comparisons"]
    assert [trial.to_dict() for trial in run.trials] == stored["trials"]
    assert run.rounds == stored["options"]["trials"] and run.interrupted == stored["interrupted"]
    for variant, doc in zip(run.variants, stored["variants"], strict=True):
        assert variant.label == doc["label"] and variant.trials == doc["trials"]
        rps = variant.requests_per_s
        assert (rps is None) == (doc["requests_per_s"] is None)
        if rps is not None:
            assert (rps.median, rps.low, rps.high) == tuple(doc["requests_per_s"][k] for k in ("median", "low", "high"))
    for versus, doc in zip(run.comparisons, stored["comparisons"], strict=True):
        assert versus.title == f"{doc['label']} vs {doc['baseline']}" and versus.verdict == doc["verdict"]
        assert versus.ratios[0].ratio == doc["requests_per_s"]["ratio"]


@pytest.mark.parametrize("path", STORED, ids=lambda p: p.stem)
def test_why_a_trial_is_not_counted_reads_the_same_without_not_counted(path: Path) -> None:
    """A file written before trials stored ``not_counted``: round 0 the warm-up, then interrupted,
    then failed requests, as the stored reason says."""
    stored = json.loads(path.read_text())
    if "not_counted" not in stored["trials"][0]:
        pytest.skip("written before not_counted")
    for trial in CompareRun.from_dict(stored).trials:
        expected = trial.stored.get("not_counted")
        old = {key: value for key, value in trial.stored.items() if key != "not_counted"}
        assert type(trial).read(old).why == expected == trial.why


def _refused(document: Any, *words: str) -> None:
    with pytest.raises(MalformedCompareError) as caught:
        CompareRun.from_dict(document)
    assert all(word in str(caught.value) for word in words), str(caught.value)


def test_a_comparison_the_page_cannot_draw_is_refused_naming_the_key() -> None:
    good = json.loads((DATA / "compare-fast-slow.json").read_text())
    for variants, got in (([], "got 0"), (None, "got none"), ("none", "got no list"), (good["variants"][:1], "got 1")):
        _refused({**good, "variants": variants}, "'variants' must list 2 to 20 variants", got)
    _refused({**good, "variants": [{"trials": 3}, {"trials": 3}]}, "'variants[0].label' is missing")
    _refused({**good, "options": {"trials": 10**9}}, "'options.trials' must be from 1 to 100, got 1000000000")
    _refused({key: value for key, value in good.items() if key != "trials"}, "'trials' must list", "it is missing")
    _refused({**good, "trials": good["trials"] * 40}, "'trials' must list at most 101 trials per variant")
    edited = copy.deepcopy(good)
    del edited["comparisons"][0]["label"]
    with pytest.raises(KeyError, match="label"):  # the page: "'label' is missing"
        _ = CompareRun.from_dict(edited).comparisons[0].title


@pytest.mark.parametrize("path", STORED, ids=lambda p: p.stem)
def test_the_page_of_every_stored_comparison_draws_its_records(path: Path) -> None:
    """The page reads the records: each variant's row, each comparison's verdict, the trials not
    counted and why (the same from a file written before ``not_counted``)."""
    from pounder.report import render_report

    stored = json.loads(path.read_text())
    page = render_report([path])
    run = CompareRun.from_dict(stored)
    if not any(variant.requests_per_s for variant in run.variants):
        assert "No trial was counted" in page
    for versus in run.comparisons:
        assert f"{versus.title}" in page and (f"{versus.verdict}</td>" in page or "No trial was counted" in page)
    if any(trial.why == "failures" for trial in run.trials):
        assert "requests failed</td>" in page or "got nowhere" in page
    if any(versus.verdict == "unknown" for versus in run.comparisons):
        assert ": unknown, " in page
