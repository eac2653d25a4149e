"""A tuning run's confirmation read once into a typed record (pounder._tune_run, issue 40 item 2):
every stored one reads and writes back as it was, and the text and the page write it alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pounder._tune_point import MalformedTuneError
from pounder._tune_run import Confirmation

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


def test_the_load_and_the_lowered_pool_in_words() -> None:
    closed = Confirmation.from_dict({"rps": 1234.4, "connections": 4, "complete": 1000, "failed": 2, "ok": True,
                                     "checks": [], "lowered_from": {"children": 5, "footprint": 300 * 2**20}})
    assert closed.headline == "at 4 clients (1,234 req/s), 1,002 requests, every child warm: every check met"
    assert closed.lowered_text == ("(of the pool lowered from 5 children, whose footprint 300.0 MiB was over the RAM "
                                   "budget: see Details)")
    opened = Confirmation.from_dict({"rps": 39.6, "rate": 40.0, "connections": 8, "complete": 10, "failed": 0,
                                     "ok": False})
    assert opened.headline == "at 40 req/s (open loop; 40 answered), 10 requests, every child warm: NOT MET"
    assert opened.lowered_text is None and opened.checks == ()


def test_a_malformed_confirmation_names_its_key() -> None:
    with pytest.raises(MalformedTuneError, match=r"confirmation\.checks\[0\]\.ok"):
        Confirmation.from_dict({"rps": 1.0, "connections": 1, "complete": 1, "failed": 0,
                                "checks": [{"name": "memory", "ok": "yes", "text": ""}]})
