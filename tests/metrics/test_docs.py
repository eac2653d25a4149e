"""docs/metrics.md and the Grafana dashboard name the series pounder exports, and only those."""

from __future__ import annotations

import re

from pounder.metrics import SERIES
from support.prometheus import DOCS, dashboard_queries

NAMES = {series.name for series in SERIES}


def test_the_docs_table_is_the_declared_series() -> None:
    rows = re.findall(r"^\| `(pounder_\w+)` \| (counter|gauge) \|", (DOCS / "metrics.md").read_text(), re.MULTILINE)
    assert [(name, kind) for name, kind in rows] == [(series.name, series.kind) for series in SERIES]


def test_the_dashboard_queries_only_exported_series_and_shows_every_one() -> None:
    used = {name for query in dashboard_queries() for name in re.findall(r"\bpounder_\w+", query)}
    assert used <= NAMES, used - NAMES
    assert used == NAMES
