"""``pounder report`` on tuning results directories, from real runs (``demo_run`` and ``apache_run``
in conftest.py): the gunicorn demo (a fixed pool, a leak) and Apache prefork + mod_perl (spare
servers, so the burst chart too). The runs are only read: the tests that change a directory work
on a copy.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pounder.report import render_report
from pounder.report._html import ReportError, page
from pounder.report._tune import tune_sections
from support.tune_check import check_consistent

PERL = Path(__file__).resolve().parents[1] / "apps" / "perl"
CHARTS = ("tune-leak", "tune-memory", "tune-children", "tune-max-requests")
SPARE = "tune-spare"


def _render(path: Path) -> str:
    return page(f"pounder tune: {path.name}", "test", tune_sections(path))


def _recommendation(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "recommendation.json").read_text())
    return data


def _chart_ids(text: str) -> list[str]:
    """The ids of the charts that hold an inline SVG right away."""
    return re.findall(r'<figure class="chart" id="([^"]+)"><svg[ >]', text)


def _cells(cells: list[str]) -> str:
    return "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"


def _html_rows(text: str) -> list[list[str]]:
    """Every table row of the page, its cells' text split at white space (as ``_text_table``)."""
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", text, flags=re.S):
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row, flags=re.S)]
        rows.append(" ".join(cells).split())
    return rows


def _text_table(text: str, heading: str) -> list[list[str]]:
    """The body rows of the table under the line starting with ``heading`` in recommendation.txt."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start + 2:]:  # the heading, then the table's header row
        if not line.strip() or not line.startswith("  ") or line.startswith(("  parent:", "  CPUs:")):
            break
        rows.append(line.split())
    return rows


def _self_contained(text: str) -> None:
    """Nothing is fetched when the page is viewed: no script, stylesheet link, image, frame or
    import, every href / src / url() points inside the page (SVG namespaces are names, not fetched)."""
    for tag in ("<script", "<link", "<img", "<iframe", "<object", "<embed", "@import"):
        assert tag not in text.lower(), tag
    for value in re.findall(r'(?:href|src)\s*=\s*"([^"]*)"', text):
        assert value.startswith("#"), value
    for value in re.findall(r"url\(\s*([^)]*)\)", text):
        assert value.strip("'\"").startswith("#"), value


def test_demo_run_has_every_chart_but_the_burst(demo_run: Path) -> None:
    text = _render(demo_run)
    ids = _chart_ids(text)
    assert sorted(ids) == sorted(CHARTS), ids  # each once, each an inline SVG
    assert SPARE not in text
    assert "gunicorn starts all its workers at once (a fixed pool)" in text
    assert "no burst chart" in text
    _self_contained(text)


def test_pounder_report_takes_the_directory_or_its_recommendation(demo_run: Path) -> None:
    for given in (demo_run, demo_run / "recommendation.json"):
        text = render_report([given])
        assert sorted(_chart_ids(text)) == sorted(CHARTS)
        _self_contained(text)


def test_recommendation_is_on_top_in_the_servers_names(demo_run: Path) -> None:
    data = _recommendation(demo_run)
    text = _render(demo_run)
    top = text[:text.index('<figure class="chart"')]  # before the first chart
    names, params = data["names"], data["params"]
    assert _cells(["children (MaxClients)", names["max_clients"], str(params["max_clients"])]) in top
    limit = str(params["max_requests"]) if params["max_requests"] else "0 (unlimited)"
    assert f"<td>{html.escape(names['max_requests'])}</td><td>{limit}</td>" in top
    assert f"<pre>{html.escape(data['config'].rstrip())}</pre>" in top
    for sentence in [*data["children"]["reasons"], *data["max_requests"]["reasons"], *data["advice"]]:
        assert f"<li>{html.escape(sentence)}</li>" in top, sentence


def test_tables_mirror_the_text_report(demo_run: Path) -> None:
    text = _render(demo_run)
    report = (demo_run / "recommendation.txt").read_text()
    sizes = _text_table(report, "1. Child sizes")
    sweep = _text_table(report, "3. Children")
    mrpc = _text_table(report, "4. ")
    data = _recommendation(demo_run)
    assert len(sizes) == 4 and len(sweep) == len(data["sweep"]) and len(mrpc) == len(data["mrpc"])
    rows = _html_rows(text)
    for row in [*sizes, *sweep, *mrpc]:
        assert row in rows, row
    assert any(row[5] != "-" for row in sweep)  # the intervals are shown (3 trials per point)


def test_target_traffic_and_confirmation_are_shown(demo_run: Path, tmp_path: Path) -> None:
    data = _recommendation(demo_run)
    text = _render(demo_run)
    top = text[:text.index('<figure class="chart"')]
    assert "target: none given (no --clients, --peak-rate or access log): the pool is sized by memory; 3 interleaved " \
           "trials per point" in top
    assert f"traffic: {html.escape(data['workload'])}" in top
    assert "<h3>Confirmation</h3>" in top
    for check in data["confirmation"]["checks"]:
        assert _cells([check["name"], "met" if check["ok"] else "NOT MET", check["text"]]) in top
    copy = Path(shutil.copytree(demo_run, tmp_path / "unconfirmed"))
    data["confirmation"] = None
    (copy / "recommendation.json").write_text(json.dumps(data))
    assert "not run (--no-confirm)" in _render(copy)
    data["confirmation"] = {**_recommendation(demo_run)["confirmation"], "ok": False}
    data["confirmation"]["checks"][0]["ok"] = False
    (copy / "recommendation.json").write_text(json.dumps(data))
    assert f"<td>{data['confirmation']['checks'][0]['name']}</td><td>NOT MET</td>" in _render(copy)


def test_leak_chart_is_drawn_from_the_size_measurement(demo_run: Path) -> None:
    measure = _recommendation(demo_run)["measure"]
    text = _render(demo_run)
    figure = text[text.index('id="tune-leak"'):]
    caption = figure[figure.index("<figcaption>"):figure.index("</figcaption>")]
    total = measure["requests_first"] + measure["requests_second"]
    assert f"{measure['children']} children" in caption and f"{total:,} requests" in caption
    assert "a leak" in caption  # the demo leaks 16 KB per request


def test_interrupted_run_shows_the_points_measured(demo_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "interrupted"
    shutil.copytree(demo_run, copy)
    (copy / "recommendation.json").unlink()
    keys = sorted(p.stem for p in (copy / "points").glob("*.json"))
    text = _render(copy)
    assert "recommendation.json is missing" in text
    assert "gunicorn (sync workers) serving pounder.demo.app:app" in text  # described from tune.json
    assert f"the {len(keys)} points measured so far" in text
    for key in keys:
        assert f"<td>{key}</td>" in text, key
    assert sorted(_chart_ids(text)) == sorted(CHARTS)  # every step's points are there
    assert "<h3>Why</h3>" not in text  # nothing was decided
    _self_contained(text)

    # each sweep point is aggregated from its trials, as the finished run did
    rows = _html_rows(text)
    report = (demo_run / "recommendation.txt").read_text()
    for row in [*_text_table(report, "3. Children"), *_text_table(report, "4. ")]:
        assert row in rows, row

    # interrupted during the children sweep: the steps not reached have no part
    for point in (copy / "points").glob("*.json"):
        if point.stem not in ("sizes", "children-1-t1", "children-2-t1", "children-1-t2"):
            point.unlink()
    text = _render(copy)
    assert sorted(_chart_ids(text)) == ["tune-children", "tune-leak", "tune-memory"]
    assert "the 4 points measured so far" in text
    assert "trial 2" in text  # the point lines name the trial


def test_run_without_any_point_says_so(demo_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "started"
    copy.mkdir()
    shutil.copy(demo_run / "tune.json", copy / "tune.json")
    text = _render(copy)
    assert "No point was measured." in text
    assert _chart_ids(text) == []


def test_a_document_of_another_kind_is_refused(demo_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "bad"
    shutil.copytree(demo_run, copy)
    data = _recommendation(copy)
    (copy / "recommendation.json").write_text(json.dumps({**data, "schema": "pounder/other/1"}))
    with pytest.raises(ReportError, match="pounder/tune-result/2"):
        render_report([copy])
    del data["sweep"]
    (copy / "recommendation.json").write_text(json.dumps(data))
    with pytest.raises(ReportError, match="sweep"):
        render_report([copy])


def test_apache_run_has_the_burst_chart(apache_run: Path) -> None:
    data = _recommendation(apache_run)
    assert data["spare"], "the spare-server step did not run"
    text = _render(apache_run)
    assert sorted(_chart_ids(text)) == sorted([*CHARTS, SPARE])
    names, params = data["names"], data["params"]
    for key in ("max_clients", "start_servers", "min_spare", "max_spare"):
        assert f"<td>{names[key]}</td><td>{params[key]}</td>" in text, key
    report = (apache_run / "recommendation.txt").read_text()
    spare = _text_table(report, "5. Spare servers")
    assert [row[0] for row in spare] == ["before", "after"]
    rows = _html_rows(text)
    for row in [*spare, *_text_table(report, "3. Children"), *_text_table(report, "4. ")]:
        assert row in rows, row
    figure = text[text.index(f'id="{SPARE}"'):]
    caption = figure[figure.index("<figcaption>"):figure.index("</figcaption>")]
    assert f"{data['spare'][0]['reference_p99_ms']:,.1f} ms" in caption
    _self_contained(text)


@pytest.mark.parametrize("run", ["demo_run", "apache_run"])
def test_the_recorded_runs_reasons_agree_with_their_tables(run: str, request: pytest.FixtureRequest) -> None:
    """Like every tune run of the suite, the two the report reads: their printed text never
    contradicts their tables (:func:`support.tune_check.check_consistent`)."""
    path: Path = request.getfixturevalue(run)
    check_consistent((path / "recommendation.txt").read_text(), _recommendation(path))
