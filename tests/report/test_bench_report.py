"""The HTML page of bench results (pounder.report._bench), rendered from real runs: against the
testserver (closed and open loop) and gunicorn sampled with ``server_pid``. Each bench loads a
server for at most 1.5 s."""

from __future__ import annotations

import dataclasses
import html
import re
from typing import Any

import pounder
from pounder import BenchResult
from pounder.procs._status import StatusPoint
from pounder.report._bench import bench_sections
from pounder.report._html import page
from pounder.servers._base import free_port

CHARTS = {"bench-percentiles", "bench-latency-time", "bench-throughput", "bench-errors", "bench-phases"}


def render(*results: tuple[str, BenchResult]) -> str:
    return page("bench", "test", bench_sections(results))


def saved(result: BenchResult) -> BenchResult:
    """The result as `pounder report` gets it: written with --json, read back."""
    return BenchResult.from_json(result.to_json())


def figures(page_html: str) -> dict[str, str]:
    """Chart id -> the figure's content."""
    found = re.findall(r'<figure class="chart" id="([^"]+)">(.*?)</figure>', page_html, re.S)
    ids = [chart_id for chart_id, _ in found]
    assert len(ids) == len(set(ids)), ids
    return dict(found)


def svg_texts(figure: str) -> list[str]:
    return [html.unescape(text) for text in re.findall(r"<text[^>]*>([^<]*)</text>", figure)]


def tables(page_html: str) -> list[list[list[str]]]:
    """Every table as rows of cell texts (the header row first)."""
    return [[[html.unescape(cell) for cell in re.findall(r"<t[hd]>(.*?)</t[hd]>", row)]
             for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
            for body in re.findall(r"<table>(.*?)</table>", page_html, re.S)]


def table_starting(page_html: str, first_header: str) -> list[dict[str, str]]:
    """The rows of the table whose first header is ``first_header``, as header -> cell."""
    for rows in tables(page_html):
        if rows[0][0] == first_header:
            return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    raise AssertionError(f"no table starting with {first_header!r}")


def number(cell: str) -> float:
    return float(cell.replace(",", ""))


def assert_self_contained(page_html: str) -> None:
    for needle in ("<script", "<link", "<img", "<iframe", "@import"):
        assert needle not in page_html.lower(), needle
    references = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"|url\(([^)]*)\)', page_html)
    references = [href or url for href, url in references]
    assert references and all(ref.startswith("#") for ref in references), set(references)
    # Outside the SVG metadata (RDF vocabulary names, not fetched) only the SVG namespaces.
    text = re.sub(r"<metadata>.*?</metadata>", "", page_html, flags=re.S)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", text))
    assert urls and all(url.startswith("http://www.w3.org/") for url in urls), urls


def check_summary(page_html: str, label: str, result: BenchResult) -> None:
    row = next(r for r in table_starting(page_html, "result") if r["result"] == label)
    assert number(row["req/s"]) == round(result.derived.requests_per_s, 1)
    assert round(number(row["p99 ms"]) * 1000) == result.latency.corrected.percentiles["99"]
    assert round(number(row["max ms"]) * 1000) == result.latency.corrected.max_us
    assert number(row["requests"]) == result.requests.complete + result.requests.failed
    assert row["complete / failed"] == f"{result.requests.complete:,} / {result.requests.failed:,}"


def test_gunicorn_with_server_sampling(gunicorn_server: Any) -> None:
    srv = gunicorn_server(workers=2)
    result = saved(pounder.bench(srv.url + "/", connections=4, duration=1.5, server_pid=srv.pid,
                                 sample_interval="200ms"))
    server = result.server
    assert server is not None and result.requests.complete > 0 and result.series
    page_html = render(("gunicorn", result))

    charts = figures(page_html)
    assert set(charts) == CHARTS | {"bench-memory-1"}
    assert all("<svg" in figure for figure in charts.values())
    assert_self_contained(page_html)
    check_summary(page_html, "gunicorn", result)
    row = table_starting(page_html, "result")[0]
    assert row["load"].startswith("closed loop, 4 connections")
    assert number(row["server CPU us/req"]) == round(result.derived.server_cpu_us_per_request or -1, 1)
    # Closed loop: one curve, no uncorrected one.
    assert "gunicorn" in svg_texts(charts["bench-percentiles"])
    assert not any("uncorrected" in text for text in svg_texts(charts["bench-percentiles"]))
    # A USS line per process, the parent's included.
    memory = svg_texts(charts["bench-memory-1"])
    assert f"parent {srv.pid}" in memory
    assert {f"child {child.pid}" for child in server.children} <= set(memory)
    facts = {row["server"]: row["gunicorn"] for row in table_starting(page_html, "server")}
    assert facts["children seen / spawned / exited"] == (
        f"{server.children_seen} / {server.children_spawned} / {server.children_exited}")
    assert server.children_seen >= 2
    assert facts["max child USS"] == f"{(server.max_child_uss or 0) / 1024 / 1024:,.1f} MiB"

    # Apache's mod_status readings, when there are some, get their own chart.
    points = (StatusPoint(0.0, 1, 4, 10), StatusPoint(0.2, 3, 2, 60))
    apache = dataclasses.replace(result, server=dataclasses.replace(server, status=points))
    charts = figures(render(("apache", apache)))
    assert "bench-workers-1" in charts and {"busy", "idle"} <= set(svg_texts(charts["bench-workers-1"]))


def test_two_results_overlay(testserver: Any) -> None:
    srv = testserver(delay_ms=20)
    closed = saved(pounder.bench(srv.url + "/", connections=4, duration=1))
    # 200 requests/s for a server that answers 2 x 50 a second: requests queue for a connection,
    # so the corrected latency (from the intended send time) is well above the uncorrected one.
    opened = saved(pounder.bench(srv.url + "/", rate=200, max_in_flight=2, duration=1))
    assert opened.latency.corrected.percentiles["99"] > opened.latency.uncorrected.percentiles["99"]
    page_html = render(("closed loop", closed), ("open loop", opened))

    charts = figures(page_html)
    assert set(charts) == CHARTS
    assert all("<svg" in figure for figure in charts.values())
    assert_self_contained(page_html)
    check_summary(page_html, "closed loop", closed)
    check_summary(page_html, "open loop", opened)
    rows = table_starting(page_html, "result")
    assert [row["result"] for row in rows] == ["closed loop", "open loop"]
    assert rows[1]["load"].startswith("open loop, 200 req/s, at most 2 in flight")
    percentiles = svg_texts(charts["bench-percentiles"])
    assert {"closed loop", "open loop corrected", "open loop uncorrected"} <= set(percentiles)
    for chart_id in ("bench-throughput", "bench-phases"):
        assert {"closed loop", "open loop"} <= set(svg_texts(charts[chart_id])), chart_id
    assert {f"{label} {line}" for label in ("closed loop", "open loop") for line in ("failed", "non-2xx")} <= set(
        svg_texts(charts["bench-errors"]))
    assert {"closed loop p99", "open loop p99"} <= set(svg_texts(charts["bench-latency-time"]))
    statuses = table_starting(page_html, "")
    assert statuses == [{"": "status 200", "closed loop": f"{closed.status['200']:,}",
                         "open loop": f"{opened.status['200']:,}"}]


def test_missing_data_gives_notes_not_failures(testserver: Any) -> None:
    # Nothing listens on the port: every request is refused, no latency, no phases.
    refused = saved(pounder.bench(f"http://127.0.0.1:{free_port()}/", connections=2, duration=0.5))
    assert refused.requests.complete == 0 and refused.errors.refused > 0
    # A label matplotlib would read as mathtext ($...$) or hide from the legend (leading _).
    page_html = render(("_nobody $x$", refused))
    charts = figures(page_html)
    assert set(charts) == {"bench-throughput", "bench-errors"}
    assert "_nobody $x$" in " ".join(svg_texts(charts["bench-errors"]))
    assert "No latency percentiles: no request completed." in page_html
    assert "No connection phases: no request completed." in page_html
    assert "No latency over time: no request completed." in page_html
    assert {"": "failed: refused", "_nobody $x$": f"{refused.errors.refused:,}"} in table_starting(page_html, "")
    row = table_starting(page_html, "result")[0]
    assert row["p99 ms"] == "-" and row["server CPU us/req"] == "-"

    # A result without its per-second series (next to one with): the time charts keep the other.
    srv = testserver()
    ok = saved(pounder.bench(srv.url + "/", connections=2, duration=0.5))
    page_html = render(("ok", ok), ("no series", dataclasses.replace(ok, series=())))
    assert "No throughput over time for no series: no per-second series in the result." in html.unescape(page_html)
    charts = figures(page_html)
    assert set(charts) == CHARTS
    assert "no series" not in svg_texts(charts["bench-throughput"])
    assert "no series" in svg_texts(charts["bench-percentiles"])
    page_html = render(("no series", dataclasses.replace(ok, series=())))
    assert set(figures(page_html)) == {"bench-percentiles", "bench-phases"}
