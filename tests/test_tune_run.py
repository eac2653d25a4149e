"""A tuning run's target, offered load and confirmation read once into typed records
(pounder._tune_run, issue 40 item 2): every stored one reads and writes back as it was, and the
text and the page write them alike."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pounder._tune_point import MalformedTuneError
from pounder._tune_run import Confirmation, OfferedLoad, Target, TuneRun, target_text
from pounder._tune_summary import PointLine, TuneSummary

DATA = Path(__file__).resolve().parent / "data"
RESULTS = sorted(DATA.glob("tune-*/recommendation.json"))


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.parent.name)
def test_every_stored_confirmation_reads_as_a_record_and_back(path: Path) -> None:
    stored = json.loads(path.read_text()).get("confirmation")
    if stored is None:
        pytest.skip("run without a confirmation (--no-confirm)")
    record = Confirmation.from_dict(stored)
    assert record.to_dict() == stored
    assert record.attempted == stored["complete"] + stored["failed"]
    assert [check.name for check in record.checks] == [check["name"] for check in stored["checks"]]



def test_a_confirmation_without_its_rate_verdict_or_checks_reads_as_the_text_and_page_read_it_before() -> None:
    """As tune's text and report's page read a stored confirmation before the record (207dbb3):
    no rate is closed loop, no verdict is NOT MET, no checks none; written back as stored."""
    stored = {"rps": 120.0, "connections": 4, "complete": 600, "failed": 0}
    record = Confirmation.from_dict(stored)
    assert (record.rate, record.ok, record.checks) == (None, None, ())
    assert record.headline == "at 4 clients (120 req/s), 600 requests, every child warm: NOT MET"
    assert record.to_dict() == stored

def test_the_load_and_the_lowered_pool_in_words() -> None:
    closed = Confirmation.from_dict({"rps": 1234.4, "rate": None, "connections": 4, "complete": 1000,
                                     "failed": 2, "ok": True, "checks": [],
                                     "lowered_from": {"children": 5, "footprint": 300 * 2**20}})
    assert closed.headline == "at 4 clients (1,234 req/s), 1,002 requests, every child warm: every check met"
    assert closed.lowered_text == ("(of the pool lowered from 5 children, whose footprint 300.0 MiB was over the RAM "
                                   "budget: see Details)")
    opened = Confirmation.from_dict({"rps": 39.6, "rate": 40.0, "connections": 8, "complete": 10, "failed": 0,
                                     "ok": False, "checks": []})
    assert opened.headline == "at 40 req/s (open loop; 40 answered), 10 requests, every child warm: NOT MET"
    assert opened.lowered_text is None and opened.checks == ()


def test_a_malformed_confirmation_names_its_key() -> None:
    with pytest.raises(MalformedTuneError, match=r"confirmation\.checks\[0\]\.ok"):
        Confirmation.from_dict({"rps": 1.0, "rate": None, "connections": 1, "complete": 1, "failed": 0, "ok": True,
                                "checks": [{"name": "memory", "ok": "yes", "text": ""}]})


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.parent.name)
def test_every_stored_target_and_offered_load_reads_as_a_record_and_back(path: Path) -> None:
    document = json.loads(path.read_text())
    assert Target.from_dict(document["target"]).to_dict() == document["target"]
    if document.get("offered") is not None:
        assert OfferedLoad.from_dict(document["offered"]).to_dict() == document["offered"]


def test_a_target_stored_without_its_defaults_reads_them() -> None:
    assert Target.from_dict({"clients": 4}) == Target(clients=4)


def test_the_target_in_words() -> None:
    offered = OfferedLoad(connections=2, rate=None, source="no target given", held=False)
    assert target_text(Target(), offered, compared=True, trials=3) == (
        "none given (no --clients, --peak-rate or access log): the pools are compared at 2 clients, as many clients "
        "as the pool may have children; 3 interleaved trials per point")
    assert target_text(Target(), None, compared=False, trials=None) == (
        "none given (no --clients, --peak-rate or access log): the pool is sized by memory")
    assert target_text(Target(peak_rate=150.0, p99_s=0.25, proxy=False), None, compared=True, trials=1) == (
        "150 req/s at the peak (--peak-rate); p99 at most 250.0 ms; no buffering proxy in front (--no-proxy); "
        "1 interleaved trials per point")


# ---------------------------------------------------------------------------------------------
# recommendation.json as a whole (TuneRun)


TARGET_DEFAULTS = {"source": "--peak-rate", "keepalive": False, "proxy": True}
"""The members of a stored target that read as their documented defaults when absent (Target's
fields' defaults); TuneRun.to_dict writes them back: the only difference from the input."""


def _earlier(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` as an earlier pounder wrote it: none of the members added since (offered, pools,
    spare_choice, why, fleet, shapes, the points' p99 interval and other cores), a target without its
    defaults, a burst per spare setting."""
    older = copy.deepcopy(document)
    for key in ("offered", "pools", "spare_choice", "why", "fleet", "shapes"):
        older.pop(key, None)
    for point in [*older["sweep"], *older["mrpc"]]:
        for key in ("p99_low", "p99_high", "other_cores"):
            point.pop(key, None)
    older["target"] = {key: value for key, value in older["target"].items() if key not in TARGET_DEFAULTS}
    older["spare"] = [{"name": name, "children": 2, "start_servers": 1, "min_spare": 1, "max_spare": 2,
                       "connections": 4, "idle_children": 1, "rps": 40.0, "p99_ms": 2.0, "burst_s": 0,
                       "series": [{"second": 0, "complete": 10, "p99_us": 900}]} for name in ("before", "after")]
    return older


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.parent.name)
def test_every_stored_recommendation_reads_as_a_record_and_back(path: Path) -> None:
    """Every recorded run's recommendation.json through TuneRun: to_dict gives back the input, and
    the record's points are those stored."""
    document = json.loads(path.read_text())
    run = TuneRun.from_dict(document)
    assert run.to_dict() == document
    assert [p.children for p in run.sweep] == [p["children"] for p in document["sweep"]]
    assert run.params.max_clients == document["params"]["max_clients"]
    assert run.why == tuple(document["why"]) and run.advice == tuple(document["advice"])
    assert (run.pools is None) == (document["pools"] is None)
    if run.pools is not None:
        assert [p.to_dict() for p in run.pools.points] == document["pools"]["points"]
        assert (run.pools.chosen, run.pools.best) == (document["pools"]["chosen"], document["pools"]["best"])
    assert (run.shapes is None) == ("shapes" not in document)
    if run.shapes is not None:  # workers x threads compared: the shapes, the one chosen, its threads recommended
        shapes = document["shapes"]
        assert [p.to_dict() for p in run.shapes.points] == shapes["points"]
        assert (run.shapes.workers, run.shapes.threads, list(run.shapes.best)) == (
            shapes["workers"], shapes["threads"], shapes["best"])
        assert run.shapes.offered.to_dict() == shapes["offered"] and run.shapes.reasons == tuple(shapes["reasons"])
        assert run.params.threads == shapes["threads"] and run.shapes.point(*shapes["best"]) is not None
    pod = (document.get("fleet") or {}).get("pod")
    assert (run.fleet.pod is None) == (not pod)
    if pod:
        assert run.fleet.pod is not None and run.fleet.pod.notes == tuple(pod["notes"])


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.parent.name)
def test_a_recommendation_of_an_earlier_pounder_reads_and_back_with_the_targets_defaults(path: Path) -> None:
    """A document without the members added since reads with them None (or empty), and writes back
    as it was but for the target's documented defaults (TARGET_DEFAULTS), which it then holds."""
    older = _earlier(json.loads(path.read_text()))
    run = TuneRun.from_dict(older)
    assert (run.offered, run.pools, run.spare_choice, run.why, run.fleet.size, run.fleet.pod, run.shapes) == (
        None, None, None, None, None, None, None)
    assert len(run.spare) == 2 and run.spare_points == ()
    assert run.to_dict() == {**older, "target": {**older["target"], **TARGET_DEFAULTS}}


def test_a_recommendation_missing_what_every_version_holds_names_it() -> None:
    """The members every version holds are required, as the page required them (the key of the
    KeyError it reports); a point of another type is the MalformedTuneError naming its key."""
    document = json.loads(RESULTS[0].read_text())
    for key in ("measure", "memory", "sweep", "children", "mrpc", "max_requests", "params", "config"):
        with pytest.raises(KeyError, match=key):
            TuneRun.from_dict({k: v for k, v in document.items() if k != key})
    broken = {**document, "sweep": [{**document["sweep"][0], "rps": "fast"}]}
    with pytest.raises(MalformedTuneError, match=r"sweep\[0\]\.rps"):
        TuneRun.from_dict(broken)


def test_the_shapes_stored_are_read_whole_or_named() -> None:
    """recommendation.json's shapes (workers x threads compared) hold every member or none: one
    missing, or of another type, is the MalformedTuneError naming its key."""
    document = json.loads((DATA / "tune-gthread" / "recommendation.json").read_text())
    shapes = document["shapes"]
    for key in shapes:
        with pytest.raises(MalformedTuneError, match=rf"missing 'shapes\.{key}'"):
            TuneRun.from_dict({**document, "shapes": {k: v for k, v in shapes.items() if k != key}})
    big = [{**shapes["points"][0], "footprint": "big"}]
    for key, value, named in (("best", [1], r"shapes\.best"), ("best", [1, "x"], r"shapes\.best\[1\]"),
                              ("workers", "8", r"shapes\.workers"), ("per_thread", 1.5, r"shapes\.per_thread"),
                              ("points", big, r"shapes\.points\[0\]\.footprint"),
                              ("offered", {}, r"shapes\.offered"), ("reasons", [1], r"shapes\.reasons\[0\]")):
        with pytest.raises(MalformedTuneError, match=named):
            TuneRun.from_dict({**document, "shapes": {**shapes, key: value}})
    negative = TuneRun.from_dict({**document, "shapes": {**shapes, "per_thread": -4096}})  # a worker's USS may shrink
    assert negative.shapes is not None and negative.shapes.per_thread == -4096


@pytest.mark.parametrize("path", sorted(DATA.glob("tune-*/summary.json")), ids=lambda p: p.parent.name)
def test_every_stored_summary_reads_as_a_record_and_back(path: Path) -> None:
    """An unfinished run's summary.json (kept by every recorded run) through TuneSummary and back."""
    document = json.loads(path.read_text())
    summary = TuneSummary.from_dict(document)
    assert summary.to_dict() == document
    assert [line.row for line in summary.points] == [
        [p["key"], p["step"], p["finished_at"] or "-", p["described"]] for p in document["points"]]
    assert summary.spare_trials == int(document.get("spare_trials") or 0)


def test_an_empty_summary_reads_as_nothing_measured() -> None:
    """A run stopped before its first point has an empty (or no) summary: nothing to draw."""
    summary = TuneSummary.from_dict({})
    assert (summary.sweep, summary.mrpc, summary.pools, summary.points, summary.spare_trials) == ((), (), None, (), 0)
    assert summary.to_dict() == {}
    assert PointLine.read({"finished_at": None}).row == ["?", "?", "-", ""]
