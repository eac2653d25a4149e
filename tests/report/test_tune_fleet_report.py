"""The page shows the fleet and the container's resources as the run decided them
(recommendation.json's ``fleet``, pounder.tune._fleet): the same sentences and block as the text,
nothing decided again."""

from __future__ import annotations

import html
import json
from pathlib import Path

from pounder.report._html import page
from pounder.report._tune import TuneResults, _top, tune_sections
from support.recorded import decided_again


def test_the_page_shows_the_fleet_and_the_container_block_as_stored(tmp_path: Path) -> None:
    data, text = decided_again("tune-accesslog", tmp_path)  # a peak rate (the log's busiest second), --ram 2G
    run = tmp_path / "tune-accesslog"
    fleet = data["fleet"]
    assert fleet["size"]["servers"] >= 2 and fleet["pod"] is not None
    shown = page("fleet", "test", tune_sections(run))
    assert "<h3>Fleet</h3>" in shown and html.escape(fleet["size"]["text"]) in shown
    assert "<h3>Container resources</h3>" in shown and html.escape(fleet["pod"]["yaml"]) in shown
    assert html.escape(fleet["pod"]["docker"]) in shown
    for note in fleet["pod"]["notes"]:
        assert html.escape(note) in shown
    # the text says the same, in its own sections
    assert "\nFleet\n" in text and "\nContainer resources (Kubernetes)\n" in text
    assert fleet["pod"]["docker"] in text
    # the page only reads: another stored figure is shown as stored
    fleet["size"]["text"] = "ceil(1 req/s / 1 req/s) + 1 = 2 servers, as stored"
    (run / "recommendation.json").write_text(json.dumps({**json.loads((run / "recommendation.json").read_text()),
                                                          "fleet": fleet}))
    assert "as stored" in "".join(_top(TuneResults(run)).body)
    # a result of an earlier version has no fleet: no section
    older = json.loads((run / "recommendation.json").read_text())
    del older["fleet"]
    (run / "recommendation.json").write_text(json.dumps(older))
    shown = "".join(_top(TuneResults(run)).body)
    assert "<h3>Fleet</h3>" not in shown and "<h3>Container resources</h3>" not in shown
