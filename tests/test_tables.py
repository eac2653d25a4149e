"""pounder._table and the tuning run's tables (issue 40 item 2): a tuning run's point is read once
into a typed record (pounder._tune_point), and each table is declared once (pounder._tune_tables),
drawn as the text ``pounder tune`` prints and as the page's HTML from the same columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pounder._table import Column, Table, ratio, share
from pounder._tune_point import MalformedTuneError, TunePoint, present
from pounder._tune_tables import children_table, mrpc_table, pool_rows, pools_table

DATA = Path(__file__).resolve().parent / "data"
RESULTS = sorted(DATA.glob("tune-*/recommendation.json")) + sorted(DATA.glob("tune-*/summary.json"))


def _points(document: dict[str, Any]) -> list[dict[str, Any]]:
    pools, shapes = document.get("pools") or {}, document.get("shapes") or {}
    return [*(document.get("sweep") or []), *(document.get("mrpc") or []), *pools.get("points", []),
            *shapes.get("points", [])]


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_stored_point_reads_as_a_record_and_back(path: Path) -> None:
    points = _points(json.loads(path.read_text()))
    for index, point in enumerate(points):
        record = TunePoint.from_dict(point, f"points[{index}]")
        assert record.to_dict() == point
        assert record.attempted == int(point.get("complete") or 0) + int(point.get("failed") or 0)


def test_a_point_of_an_earlier_pounder_reads_its_missing_figures_as_none() -> None:
    record = TunePoint.from_dict({"children": 4, "connections": 8, "rps": 100.0})
    assert (record.rps_low, record.p99_ms, record.vs_best, record.trials, record.trials_text) == (None, None, None,
                                                                                                   (), "0/0")
    assert record.to_dict() == {"children": 4, "connections": 8, "rps": 100.0}
    unknown = {"children": 4, "connections": 8, "rps": 1.0, "vs_best": {"ratio": None, "low": None, "verdict": "?"}}
    assert TunePoint.from_dict(unknown).to_dict() == unknown  # a null stored stays, an absent key stays out


@pytest.mark.parametrize(("point", "message"), [
    ({"connections": 8, "rps": 1.0}, "missing 'p.children'"),
    ({"children": 4, "connections": 8, "rps": -1.0}, "'p.rps' must be a number >= 0, got -1.0"),
    ({"children": 4, "connections": 8, "rps": 1.0, "failed": "x"}, "'p.failed' must be a whole number >= 0, got 'x'"),
    ({"children": 4, "connections": 8, "rps": 1.0, "vs_best": {"ratio": "x"}}, "'p.vs_best.ratio'"),
])
def test_a_malformed_point_names_its_key(point: dict[str, Any], message: str) -> None:
    with pytest.raises(MalformedTuneError, match=message.replace(".", r"\.").replace("(", r"\(")):
        TunePoint.from_dict(point, "p")


def test_one_declaration_draws_the_text_and_the_page() -> None:
    table: Table[int] = Table([Column("n", lambda n: n), Column("twice", lambda n: f"{2 * n:,}"),
                               Column("", lambda n: "chosen" if n == 2 else "", mark=True)])
    assert table.text([2, 500]) == ["    n  twice        ", "    2      4  chosen", "  500  1,000        "]
    assert table.html([2]) == ("<table><thead><tr><th>n</th><th></th><th>twice</th></tr></thead>"
                               "<tbody><tr><td>2</td><td>chosen</td><td>4</td></tr></tbody></table>")


def test_the_tables_of_a_recorded_run_have_their_columns_in_both() -> None:
    document = json.loads((DATA / "tune-demo" / "recommendation.json").read_text())
    sweep = [TunePoint.from_dict(p) for p in document["sweep"]]
    pools = [TunePoint.from_dict(p) for p in document["pools"]["points"]]
    rows = pool_rows(pools, sweep, document["pools"]["chosen"], document["pools"]["best"])
    text, page = pools_table("2xMC").text(rows), pools_table("2xMC").html(rows)
    assert len(text) == len(pools) + 1 and text[0].split()[:3] == ["MC", "RPS", "2xMC"]
    assert page.count("<tr>") == len(pools) + 1 and page.count("<th>") == 18
    assert "chosen" in text[1 + [p.children for p in pools].index(document["pools"]["chosen"])]
    assert children_table(queued=True).text(sweep)[0].split()[-3:] == ["USS", "MiB", "failed"]
    assert "other cores" in mrpc_table(other_cores=True).html([]) and "other" not in mrpc_table().html([])


def test_a_ratio_reads_as_a_change_with_its_interval() -> None:
    assert (ratio(None, 0.9, 1.1), ratio(0.955, None, None), ratio(0.955, 0.93, 0.979)) == (
        "-", "-4.5%", "-4.5% (-7.0..-2.1)")


def test_a_share_reads_as_a_whole_percentage_and_a_missing_figure_is_an_error() -> None:
    assert (share(None), share(0.974), share(1)) == ("-", "97%", "100%")
    assert present(0.0) == 0.0
    with pytest.raises(TypeError):  # the page's "a field is missing" (as float(None) was)
        present(None)
