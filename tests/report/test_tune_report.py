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
from support.recorded import decided_again, write_summary
from support.tune_check import check_consistent

PERL = Path(__file__).resolve().parents[1] / "apps" / "perl"
CHARTS = ("tune-leak", "tune-memory", "tune-children", "tune-max-requests")
SPARE = "tune-spare"
POOLS = "tune-pools"
MRPC = r"\d\. \S+ \(MRPC\)"
"""The heading of the MaxRequestsPerChild table in recommendation.txt (section 4, or 5 after the
pools at the offered load)."""


def _charts(path: Path) -> list[str]:
    """The charts of the page for a finished run: the pools chart when the run compared pools at
    the offered load (``pools`` in recommendation.json; runs of earlier versions have none)."""
    return sorted([*CHARTS, *([POOLS] if _recommendation(path).get("pools") else [])])


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


def _has_row(rows: list[list[str]], row: list[str]) -> bool:
    """Whether ``rows`` hold ``row``, or ``row`` with one more cell (the page's "other cores" in the
    MaxRequestsPerChild table, which the text report leaves out)."""
    return row in rows or any(len(r) == len(row) + 1 and any(r[:i] + r[i + 1:] == row for i in range(len(r)))
                              for r in rows)


def _text_table(text: str, heading: str) -> list[list[str]]:
    """The body rows of the table under the line matching ``heading`` (a regular expression, from
    the line's start) in recommendation.txt."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(heading, line))
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
    assert sorted(ids) == _charts(demo_run), ids  # each once, each an inline SVG
    assert SPARE not in text
    assert "gunicorn starts all its workers at once (a fixed pool)" in text
    assert "no burst chart" in text
    _self_contained(text)


def test_pounder_report_takes_the_directory_or_its_recommendation(demo_run: Path) -> None:
    for given in (demo_run, demo_run / "recommendation.json"):
        text = render_report([given])
        assert sorted(_chart_ids(text)) == _charts(demo_run)
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
    mrpc = _text_table(report, MRPC)
    data = _recommendation(demo_run)
    assert len(sizes) == 4 and len(sweep) == len(data["sweep"]) and len(mrpc) == len(data["mrpc"])
    rows = _html_rows(text)
    for row in [*sizes, *sweep]:
        assert row in rows, row
    for row in mrpc:
        assert _has_row(rows, row), row
    assert any(row[5] != "-" for row in sweep)  # the intervals are shown (3 trials per point)
    if data.get("pools"):  # the pools at the offered load: the same cells, the mark next to the children
        pools = _text_table(report, r"4\. Pools at the offered load")
        assert len(pools) == len(data["pools"]["points"])
        for row in pools:
            assert sorted(row) in [sorted(r) for r in rows], row


def test_target_traffic_and_confirmation_are_shown(demo_run: Path, tmp_path: Path) -> None:
    data = _recommendation(demo_run)
    text = _render(demo_run)
    top = text[:text.index('<figure class="chart"')]
    report = (demo_run / "recommendation.txt").read_text()
    target = next(line for line in report.splitlines() if line.startswith("target: "))
    assert target.startswith("target: none given (no --clients, --peak-rate or access log)")
    assert target.endswith("; 3 interleaved trials per point")
    assert f"<p>{html.escape(target)}</p>" in top  # as the text says it
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
    write_summary(copy)
    text = _render(copy)
    assert "recommendation.json is missing" in text
    assert "gunicorn (sync workers) serving pounder.demo.app:app" in text  # described from tune.json
    assert f"the {len(keys)} points measured so far" in text
    for key in keys:
        assert f"<td>{key}</td>" in text, key
    assert sorted(_chart_ids(text)) == _charts(demo_run)  # every step's points are there
    assert "<h3>Why</h3>" not in text  # nothing was decided
    _self_contained(text)

    # each sweep point is aggregated from its trials, as the finished run did
    rows = _html_rows(text)
    # the text this pounder decides from the same points (the stored one predates the paired
    # intervals of the MaxRequestsPerChild table)
    _, report = decided_again("tune-demo", tmp_path / "decided")
    for row in _text_table(report, "3. Children"):
        assert row in rows, row
    for row in _text_table(report, MRPC):
        assert _has_row(rows, row), row

    # interrupted during the children sweep: the steps not reached have no part
    for point in (copy / "points").glob("*.json"):
        if point.stem not in ("sizes", "children-1-t1", "children-2-t1", "children-1-t2"):
            point.unlink()
    write_summary(copy)
    text = _render(copy)
    assert sorted(_chart_ids(text)) == ["tune-children", "tune-leak", "tune-memory"]
    assert "the 4 points measured so far" in text
    assert "trial 2" in text  # the point lines name the trial


def test_an_unfinished_run_without_its_summary_is_refused_with_what_to_do(demo_run: Path, tmp_path: Path) -> None:
    """The page of an unfinished run draws what the run derived from its points (summary.json),
    never decides again; a run of an earlier pounder stored none (issue 26)."""
    copy = Path(shutil.copytree(demo_run, tmp_path / "earlier"))
    (copy / "recommendation.json").unlink()
    with pytest.raises(ReportError, match=r"did not finish and holds no summary.json .*pounder tune --resume"):
        render_report([copy])
    write_summary(copy)
    later = json.loads((copy / "points" / "children-1-t1.json").read_text())  # stored after the summary
    (copy / "points" / "children-64-t9.json").write_text(json.dumps({**later, "key": "children-64-t9"}))
    assert "(1 more stored after its summary.json was written)" in _render(copy)


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
    assert sorted(_chart_ids(text)) == sorted([*_charts(apache_run), SPARE])
    names, params = data["names"], data["params"]
    for key in ("max_clients", "start_servers", "min_spare", "max_spare"):
        assert f"<td>{names[key]}</td><td>{params[key]}</td>" in text, key
    report = (apache_run / "recommendation.txt").read_text()
    spare = _text_table(report, r"\d\. Spare servers")
    # the defaults, then the setting the method calls for (measured only when it differs from them)
    assert [row[0] for row in spare] == [p["name"] for p in data["spare"]] and spare[0][0] == "before"
    rows = _html_rows(text)
    for row in [*spare, *_text_table(report, "3. Children")]:
        assert row in rows, row
    for row in _text_table(report, MRPC):
        assert _has_row(rows, row), row
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


# ---------------------------------------------------------------------------------------------
# the pools at the offered load, Why and Details (results of this version), and results without
# them (earlier versions)

NEW_KEYS = ("offered", "pools", "spare_choice", "why")


def _numbers(line: str) -> list[str]:
    """The figures of a line as it prints them: 91, 72-110, 1,017.9, 26,000, 16.0, ..."""
    return re.findall(r"\d[\d,]*(?:\.\d+)?", line)


def _page_text(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def _details(text: str) -> str:
    """The one collapsed Details element of the page (its HTML)."""
    found = re.findall(r"<details><summary>Details</summary>(.*?)</details>", text, flags=re.S)
    assert len(found) == 1, found
    return found[0]


def _check_new_sections(path: Path) -> str:
    """The page of a run that compared pools at the offered load: the Why list holds exactly the
    deciding facts, every figure of theirs on the page; the long reasons collapsed under Details;
    the pools table holds every candidate with its figures, the chosen and the best marked."""
    data = _recommendation(path)
    text = _render(path)
    assert data["why"], "recommendation.json holds no deciding facts"
    why = text[text.index("<h3>Why</h3>"):]
    listed = re.search(r'<ul class="reasons">(.*?)</ul>', why, flags=re.S)
    assert listed is not None
    assert re.findall(r"<li>(.*?)</li>", listed.group(1), flags=re.S) == [html.escape(line) for line in data["why"]]
    words = _page_text(text)
    for line in data["why"]:
        for number in _numbers(line):
            assert number in words, (number, line)
    details = _details(text)
    assert why.index("<details>") < why.index("<h3>Confirmation</h3>")  # in the recommendation, after Why
    reasons = [*data["children"]["reasons"], *data["max_requests"]["reasons"],
               *(data.get("spare_choice") or {}).get("reasons", [])]
    assert reasons
    for reason in reasons:
        assert f"<li>{html.escape(reason)}</li>" in details, reason
    for line in data["why"]:
        assert html.escape(line) not in details, line  # the short list is not repeated

    section = text[text.index("<h2>4. Pools at the offered load</h2>"):text.index("<h2>5. ")]
    assert '<figure class="chart" id="tune-pools"><svg' in section
    pools = data["pools"]
    rows = {row[0]: row for row in _html_rows(section) if row}
    assert sorted(rows) == sorted(str(p["children"]) for p in pools["points"])
    for point in pools["points"]:
        row = rows[str(point["children"])]
        assert f"{point['rps']:,.0f}" in row, (point["children"], row)
        if point.get("rps_low") is not None:
            assert f"{point['rps_low']:,.0f}-{point['rps_high']:,.0f}" in row
        if point.get("p99_low") is not None:
            assert f"{point['p99_low']:,.1f}-{point['p99_high']:,.1f}" in row
        ratio = point["vs_best"]["ratio"]
        assert f"{(ratio - 1) * 100:+.1f}%" in row
        assert (f"{point['other_cores']:.2f}" if point.get("other_cores") is not None else "-") in row
        mark = "chosen" if point["children"] == pools["chosen"] else "best" if point["children"] == pools["best"] \
            else None
        assert row[1] == mark if mark else row[1] != "chosen" and row[1] != "best", row
    assert "<h2>5. " in text and "(MaxRequestsPerChild)" in text[text.index("<h2>5. "):]
    assert "<h2>6. Spare servers</h2>" in text
    assert "<th>other cores</th>" in text[text.index("<h2>3. "):text.index("<h2>4. ")]
    _self_contained(text)
    return text


def test_pools_why_and_details_of_the_recorded_run(demo_run: Path) -> None:
    data = _recommendation(demo_run)
    assert all(key in data for key in NEW_KEYS), "tests/data/tune-demo predates the pools at the offered load"
    text = _check_new_sections(demo_run)
    offered = data["offered"]
    assert f"offered load: {offered['connections']} clients ({html.escape(offered['source'])})" in text


def _with_spare(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with two spare settings measured in interleaved trials and the one chosen, as a
    server that spawns children with the load stores them (the demo keeps a fixed pool)."""
    series = [{"second": s, "complete": 40 - 10 * (s == 1), "p99_us": 9000 if s == 1 else 2000} for s in (1, 2, 3)]

    def point(name: str, start: int, p99: float) -> dict[str, Any]:
        trials = [{"complete": 120, "failed": 0, "p99_ms": p99 + d, "rps": 40.0 + d, "steady_p99_ms": 2.0,
                   "series": series, "idle_children": start, "burst_s": 1} for d in (-0.5, 0.0, 0.5)]
        return {"name": name, "children": 8, "start_servers": start, "min_spare": start, "max_spare": start + 2,
                "connections": 8, "trials": trials, "counted": 3, "series": series, "reference_p99_ms": 2.0,
                "rps": 40.0, "rps_low": 39.5, "rps_high": 40.5, "p99_ms": p99, "p99_low": p99 - 0.5,
                "p99_high": p99 + 0.5, "first_p99_ms": 9.0, "steady_p99_ms": 2.0, "burst_s": 1,
                "idle_children": start, "complete": 360, "failed": 0, "chosen": name == "after"}

    spare = [point("before", 2, 7.25), point("after", 8, 3.75)]
    choice = {"name": "after", "why": "spare servers raised, StartServers 8: burst p99 3.8 ms against the defaults' "
                                      "7.2 ms",
              "reasons": ["spare servers, from idle to 8 clients at once: the defaults (StartServers 2): p99 7.2 ms; "
                          "StartServers 8: p99 3.8 ms: measured no worse than the defaults"]}
    params = {**data["params"], "start_servers": 8, "min_spare": 8, "max_spare": 10}
    return {**data, "spare": spare, "spare_choice": choice, "why": [*data["why"], choice["why"]], "params": params}


def test_spare_settings_from_interleaved_trials(demo_run: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(demo_run, tmp_path / "spare"))
    data = _with_spare(_recommendation(demo_run))
    (copy / "recommendation.json").write_text(json.dumps(data))
    text = _check_new_sections(copy)
    assert sorted(_chart_ids(text)) == sorted([*_charts(copy), SPARE])
    section = text[text.index("<h2>6. Spare servers</h2>"):]
    assert "<th>trials</th>" in section and "<th>p99 95% CI</th>" in section
    rows = _html_rows(section)
    assert ["before", "2", "2", "4", "3/3", "2", "8", "40", "9.0", "7.2", "6.8-7.8", "2.0", "1"] in rows
    assert ["after", "8", "8", "10", "3/3", "8", "8", "40", "9.0", "3.8", "3.2-4.2", "2.0", "1", "chosen"] in rows
    assert "after (chosen): StartServers 8" in section  # the chart's legend
    assert "spare servers, from idle to 8 clients at once" in _details(text)


def test_results_without_the_new_keys_render_as_before(demo_run: Path, tmp_path: Path) -> None:
    """A result of an earlier version (no pools at the offered load, no deciding facts): the
    reasons themselves under Why, nothing collapsed, MaxRequestsPerChild and the spare servers
    numbered 4 and 5."""
    copy = Path(shutil.copytree(demo_run, tmp_path / "earlier"))
    data = {key: value for key, value in _recommendation(demo_run).items() if key not in NEW_KEYS}
    (copy / "recommendation.json").write_text(json.dumps(data))
    text = _render(copy)
    assert sorted(_chart_ids(text)) == sorted(CHARTS)
    assert "<details>" not in text and "Pools at the offered load" not in text and "offered load:" not in text
    assert "the pool is sized by memory" in text
    why = text[text.index("<h3>Why</h3>"):text.index("<h3>Confirmation</h3>")]
    assert re.findall(r"<li>(.*?)</li>", why, flags=re.S) == [
        html.escape(r) for r in [*data["children"]["reasons"], *data["max_requests"]["reasons"]]]
    assert "<h2>4. " in text and "(MaxRequestsPerChild)" in text[text.index("<h2>4. "):]
    assert "<h2>5. Spare servers</h2>" in text


def test_a_run_that_compared_no_pools_says_why(demo_run: Path, tmp_path: Path) -> None:
    """Every connection holds a child (no buffering proxy in front): the run compared no pools."""
    copy = Path(shutil.copytree(demo_run, tmp_path / "held"))
    data = _recommendation(demo_run)
    data["pools"] = None
    data["offered"] = {**data["offered"], "held": True}
    (copy / "recommendation.json").write_text(json.dumps(data))
    text = _render(copy)
    assert sorted(_chart_ids(text)) == sorted(CHARTS)
    section = text[text.index("<h2>4. Pools at the offered load</h2>"):text.index("<h2>5. ")]
    assert "Not compared: every connection holds a child (no buffering proxy in front)" in section
    assert "<table>" not in section


def test_interrupted_run_shows_the_pools_measured_so_far(demo_run: Path, tmp_path: Path) -> None:
    """Without recommendation.json the candidates' trials are aggregated as the run does; nothing is
    marked chosen or best (nothing was chosen yet)."""
    copy = Path(shutil.copytree(demo_run, tmp_path / "interrupted-pools"))
    (copy / "recommendation.json").unlink()
    for point in (copy / "points").glob("*.json"):
        if point.stem.startswith(("mrpc-", "confirm")):
            point.unlink()
    write_summary(copy)
    text = _render(copy)
    assert sorted(_chart_ids(text)) == ["tune-children", "tune-leak", "tune-memory", "tune-pools"]
    section = text[text.index("<h2>4. Pools at the offered load</h2>"):]
    assert "nothing chosen yet" in section
    rows = [row for row in _html_rows(section) if row]
    report = (demo_run / "recommendation.txt").read_text()
    expected = _text_table(report, r"4\. Pools at the offered load")
    assert len(rows) == len(expected)
    for row, text_row in zip(rows, expected, strict=True):
        assert row[0] == text_row[0] and "chosen" not in row and "best" not in row
        assert row[:8] == text_row[:8]  # MC, the sweep, NC, trials, NR, RPS, 95% CI: aggregated as the run does



def test_php_fpms_status_page_is_said_under_its_tables(tmp_path: Path) -> None:
    """The recorded php-fpm run (tests/data/tune-phpfpm-leak): what php-fpm's status page said of
    the loads is on the page under the children and pools tables, as in recommendation.txt."""
    from support.recorded import recorded_copy

    run = recorded_copy("tune-phpfpm-leak", tmp_path)
    text = html.unescape(_render(run))
    said = "php-fpm's status page, read before and after each load: its listen queue held connections in "
    assert text.count(said) == 2, text[:2000]
    assert "pm.max_children smaller than the clients there, as the queued column says" in text
    stored = " ".join((run / "recommendation.txt").read_text().split())
    assert "php-fpm's status page, read before and after each load: its listen queue held connections in " in stored


def test_workers_x_threads_drawn_as_the_text_prints_them(gthread_run: Path) -> None:
    """A run that compared workers x threads (tune-gthread): its page has section 4b with the table
    the text prints (every shape's row, the same cells: the shape, its trials, requests/s and p99 with
    their intervals, its memory after the load), the chosen and the best marked as stored, the
    deciding fact and the reasons; the recommendation's threads beside the workers; the spare servers
    keep their number (6; MaxRequestsPerChild, 5, was not swept: --mrpc 0)."""
    data = _recommendation(gthread_run)
    shapes = data["shapes"]
    text = _render(gthread_run)
    section = text[text.index("<h2>4b. Workers x threads at the offered load</h2>"):text.index("<h2>6. ")]
    assert "<table>" in section and "<th>footprint MiB</th><th>worker USS MiB</th>" in section
    printed = _text_table((gthread_run / "recommendation.txt").read_text(), r"4b\. Workers x threads")
    assert len(printed) == len(shapes["points"]) >= 2
    rows = [row for row in _html_rows(section) if row]
    assert len(rows) == len(printed)
    for html_row, text_row in zip(rows, printed, strict=True):  # the page puts the mark after the first cell
        assert sorted(html_row) == sorted(text_row), (html_row, text_row)
    marks = {(int(row[0]), int(row[2] if row[1] in ("chosen", "best") else row[1])): row[1] for row in rows}
    assert marks[(shapes["workers"], shapes["threads"])] == "chosen"
    if tuple(shapes["best"]) != (shapes["workers"], shapes["threads"]):
        assert marks[tuple(shapes["best"])] == "best"
    assert sum(mark in ("chosen", "best") for mark in marks.values()) == 1 + (
        tuple(shapes["best"]) != (shapes["workers"], shapes["threads"]))
    for point in shapes["points"]:
        row = next(r for r in rows if r[0] == str(point["children"]) and str(point["threads"]) in r[1:3])
        assert f"{point['footprint'] / 2**20:,.1f}" in row and f"{point['rps']:,.0f}" in row, (point, row)
    words = _page_text(section)
    assert shapes["why"] in words
    for reason in shapes["reasons"]:
        assert f"<li>{html.escape(reason)}</li>" in section, reason
    assert f"shapes serving up to {shapes['slots']} requests at once".lower() in words.lower()
    top = text[:text.index("<h2>1. ")]
    assert ["threads", "of", "each", "child", "--threads", str(shapes["threads"])] in _html_rows(top)  # gunicorn's name
    assert "<h2>6. Spare servers</h2>" in text
    _self_contained(text)


def test_a_run_without_shapes_has_no_threads_section(demo_run: Path, gthread_run: Path, tmp_path: Path) -> None:
    """The demo (gunicorn, stored before shapes were compared): no section 4b, no threads row. A run
    whose threads were given (Puma's --threads, sweep_threads on): 4b says they were not compared."""
    text = _render(demo_run)
    assert "4b. " not in text and "threads of each child" not in text
    copy = Path(shutil.copytree(gthread_run, tmp_path / "given"))
    data = _recommendation(copy)
    del data["shapes"]
    (copy / "recommendation.json").write_text(json.dumps(data))
    assert "4b. " not in _render(copy)  # gunicorn: the threads are never given (no --threads)
    manifest = json.loads((copy / "tune.json").read_text())
    puma = {"kind": "puma", "rackup": str(PERL.parent / "rack_app.ru"), "preload": False, "env": {}, "extra_args": [],
            "threads": [4, 4]}
    (copy / "tune.json").write_text(json.dumps({**manifest, "adapter": puma}))
    (copy / "recommendation.json").write_text(json.dumps({**data, "server": puma}))
    section = _render(copy)
    assert "<h2>4b. Workers x threads</h2>\n<p>Not compared: the threads of each worker were given (--threads).</p>" \
        in section


def test_an_interrupted_run_counts_the_threads_trials_measured(gthread_run: Path, tmp_path: Path) -> None:
    """A run stopped during the threads step: 4b counts the trials stored (each in the list of points
    above), nothing chosen yet; before the step, no 4b."""
    copy = Path(shutil.copytree(gthread_run, tmp_path / "interrupted-threads"))
    (copy / "recommendation.json").unlink()
    for point in (copy / "points").glob("*.json"):
        if point.stem.startswith("confirm") or point.stem.startswith("threads-") and "-t3" in point.stem:
            point.unlink()
    write_summary(copy)
    trials = len(list((copy / "points").glob("threads-*.json")))
    assert trials >= 4
    text = _render(copy)
    said = f"{trials} trials of the workers x threads step were measured (listed above); nothing was chosen: the " \
        "run did not finish. The shapes measured so far, medians of their trials (RPS and p99 with their 95% " \
        "intervals; memory after the load):"
    assert f"<h2>4b. Workers x threads</h2>\n<p>{html.escape(said)}</p>" in text
    # a row per shape measured, its requests those of its trials' files, nothing marked
    start = text.index("<h2>4b. ")
    section = text[start:text.index("<h2>", start + 1)]
    rows = _html_rows(section)
    stored: dict[tuple[int, int], int] = {}
    for point in (copy / "points").glob("threads-*.json"):
        summary = json.loads(point.read_text())["summary"]
        shape = (summary["children"], summary["threads"])
        stored[shape] = stored.get(shape, 0) + summary["complete"] + summary["failed"]
    assert len(rows) - 1 == len(stored)
    for (workers, threads), requests in stored.items():
        row = next(r for r in rows if r[:2] == [str(workers), str(threads)])
        assert f"{requests:,}" in row and "chosen" not in row and "best" not in row, (row, requests)
    assert "<h2>6. Spare servers</h2>" in text  # numbered as the finished run's (4b at the offered load)
    for point in (copy / "points").glob("threads-*.json"):
        point.unlink()
    write_summary(copy)
    assert "4b. " not in _render(copy)


# ---------------------------------------------------------------------------------------------
# a child's life (--life)


def test_the_life_is_drawn_with_its_table_and_verdict(tmp_path: Path) -> None:
    """tests/data/tune-unsharing (gunicorn --preload, its preloaded objects read by every request):
    the chart of shared and private memory against requests served, after the sizes; its table the
    snapshots as stored (the text report's 1b); the unsharing's verdict. Runs without --life have no
    such chart (the demo's page above)."""
    from support.recorded import recorded_copy

    path = recorded_copy("tune-unsharing", tmp_path)
    text = _render(path)
    data = _recommendation(path)
    ids = _chart_ids(text)
    assert "tune-life" in ids and ids.index("tune-life") == ids.index("tune-leak") + 1
    rows = _html_rows(text)
    for snapshot in data["life"]["snapshots"]:
        row = [f"{snapshot['requests']:,.0f}", *(f"{snapshot[k] / 2**20:,.1f}" for k in
                                                 ("private", "shared", "pss", "max_private")),
               str(snapshot["children"])]
        assert row in rows, row
    # the same figures as the text report's table
    printed = [line.split() for line in (path / "recommendation.txt").read_text().splitlines()]
    for snapshot in data["life"]["snapshots"]:
        assert [f"{snapshot['requests']:,.0f}", *(f"{snapshot[k] / 2**20:.1f}" for k in ("private", "shared", "pss"))] \
            in printed, snapshot
    assert html.escape(data["max_requests"]["unsharing"]["reason"]) in text
    figure = text[text.index('id="tune-life"'):]
    caption = html.unescape(figure[figure.index("<figcaption>"):figure.index("</figcaption>")])
    assert data["life"]["shared"]["fit"] + " fit" in caption and "per tenfold requests" in caption
    _self_contained(text)


def test_a_run_without_the_life_has_no_life_chart(demo_run: Path) -> None:
    assert "tune-life" not in _chart_ids(_render(demo_run))
