"""``pounder report``: results as one self-contained HTML page (see :mod:`pounder.report`)."""

from __future__ import annotations

import sys
import webbrowser
from typing import Annotated

import typer

from pounder._errors import UsageError
from pounder._files import check_output_path
from pounder.cli._common import option

REPORT_HELP = "\n\n".join([
    "Make one self-contained HTML page (inline SVG charts and CSS, nothing fetched when viewed) from results "
    "pounder wrote: bench --json files (several are overlaid, labelled), a pounder tune or pounder run results "
    "directory, a pounder compare --json file, a pounder mem --json file, a pounder profile --json file (with its "
    "flame graph).",
    "Exit status: 0 written, 1 could not write (or matplotlib is missing), 2 bad input (a path that is no "
    "pounder result, or a result that is incomplete or malformed).",
])

RESULTS = typer.Argument(metavar="RESULT...", show_default=False, help=(
    "A bench or compare --json file, or a tune or run results directory; several are put on one page."))
OUT = option("-o", "--output", panel="Output", metavar="PATH", help=(
    "The HTML file to write (default report.html); '-' for stdout."))
TITLE = option("--title", panel="Output", metavar="TEXT", help="The page's title.")
OPEN = option("--open", panel="Output", help="Open the page in the default browser once written.")


def report_command(
    paths: Annotated[list[str], RESULTS],
    output: Annotated[str, OUT] = "report.html",
    title: Annotated[str | None, TITLE] = None,
    open_page: Annotated[bool, OPEN] = False,
) -> int:
    from pounder.report import check_page_name, render_report, write_report

    if output == "-":
        if open_page:
            raise UsageError("--open needs a file to open: give -o PATH")
        sys.stdout.write(render_report(paths, title))
        return 0
    check_output_path(output, "--output", None)
    check_page_name(output, "--output")
    written = write_report(paths, output, title).resolve()
    sys.stdout.write(f"report: {written}\n")
    if open_page:
        webbrowser.open(written.as_uri())
    return 0
