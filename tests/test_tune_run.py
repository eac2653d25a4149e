"""A tuning run's target, offered load and confirmation read once into typed records
(pounder._tune_run, issue 40 item 2): every stored one reads and writes back as it was, and the
text and the page write them alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pounder._tune_point import MalformedTuneError
from pounder._tune_run import Confirmation, OfferedLoad, Target, target_text

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
