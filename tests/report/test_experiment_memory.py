"""The children's memory of an experiment on the report page: the requests sent to each variant's
server beside the figures (issue 41), "-" for a run written before they were recorded."""

from __future__ import annotations

import json
from pathlib import Path

from pounder.report import render_report

MIB = 1 << 20


def _sizes(uss_mib: float, shared_mib: float, footprint_mib: float, requests: int | None) -> dict[str, object]:
    sizes: dict[str, object] = {
        "children": 4, "max_child_uss": int(uss_mib * MIB), "median_child_shared": int(shared_mib * MIB),
        "max_child_rss": int((uss_mib + shared_mib) * MIB), "footprint": int(footprint_mib * MIB),
        "parent_rss": 30 * MIB}
    return sizes if requests is None else {**sizes, "requests": requests}


def _results(tmp_path: Path, with_requests: bool) -> Path:
    folder = tmp_path / ("new" if with_requests else "old")
    folder.mkdir()
    (folder / "experiment.json").write_text(json.dumps({
        "schema": "pounder/experiment/1", "tool_version": "0.1.0", "started_at": "2026-11-29T05:00:00Z",
        "quick": False, "experiment": {"title": "remedy", "server": {"adapter": "gunicorn", "app": "wsgi_app:app"},
                                       "variants": [{"label": "collector"}, {"label": "gc.freeze()"}]}}))
    (folder / "memory.json").write_text(json.dumps({"schema": "pounder/experiment-memory/1", "variants": {
        "collector": {"warm": _sizes(20.8, 29.5, 130.3, 1828 if with_requests else None),
                      "after": _sizes(20.8, 29.4, 130.7, 9828 if with_requests else None)},
        "gc.freeze()": {"warm": _sizes(4.4, 45.5, 64.8, 943 if with_requests else None),
                        "after": _sizes(4.6, 45.4, 65.4, 8943 if with_requests else None)}}}))
    return folder


def test_the_requests_sent_stand_beside_the_memory(tmp_path: Path) -> None:
    page = render_report([_results(tmp_path, with_requests=True)])
    assert "requests sent" in page
    assert ">9,828<" in page and ">8,943<" in page and ">45.4<" in page and ">65.4<" in page
    old = render_report([_results(tmp_path, with_requests=False)])
    assert "requests sent" in old and ">9,828<" not in old and ">45.4<" in old
