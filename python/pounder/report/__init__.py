"""``pounder report``: any result pounder wrote (bench results, a tune or experiment results
directory, a comparison, a ``pounder mem --json`` snapshot) as one self-contained HTML page:
inline CSS, charts as inline SVG drawn by matplotlib, nothing fetched when it is viewed,
printable.

::

    from pounder.report import write_report

    write_report(["tune-out"], "tune.html")
    write_report(["before.json", "after.json"], "bench.html")   # curves overlaid, labelled
"""

from pounder.report._html import ReportError, Section
from pounder.report._report import check_page_name, render_report, write_report

__all__ = ["ReportError", "Section", "check_page_name", "render_report", "write_report"]
