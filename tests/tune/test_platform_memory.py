"""Memory as the platform counts it, as ``pounder tune``'s text and ``pounder report``'s page show
it (issue 27): the sizes point's ``cgroup`` figures (hand-built here, in a copy of the recorded demo
run, which predates them) next to the sum of PSS, and the sentences that explain the difference.
The run is decided again from its points (nothing is measured); the text and the page are held to
the stored figures and to each other by :func:`support.tune_check.check_platform`, independently
of pounder's wording: every figure quoted is a cell of the table, every difference is the cells'
difference, "more" / "less" as the cells say.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pounder.report._html import page
from pounder.report._tune import tune_sections
from pounder.tune import render_tune, resume
from support.recorded import recorded_copy
from support.schemas import validate_results_dir
from support.tune_check import check_consistent, check_platform, platform_text

MIB = 1024 * 1024
DEMO_FOOTPRINT = 119845444  # the demo's end snapshot: sum of PSS


def _reading(version: int, current: int, anon: int, file: int, shmem: int, pss_anon: int) -> dict[str, Any]:
    return {"version": version, "current": current, "anon": anon, "file": file, "shmem": shmem,
            "pss_anon": pss_anon, "pss_file": 3 * MIB, "pss_shmem": shmem // 2}


# like the live gunicorn pool (tests/e2e/test_tune_cgroup.py): anon = Pss_Anon, a little kernel memory
QUIET = _reading(1, 110 * MIB, 108 * MIB + 500_000, 8192, 0, 108 * MIB + 496_000)
QUIET_WARM = _reading(1, 104 * MIB, 102 * MIB, 8192, 0, 102 * MIB - 3000)  # the demo's warm sum of PSS: 108.0
# a pool with shared memory (as php-fpm's OPcache), memory.current read below anon + file (v2)
SHMEM = _reading(2, 100 * MIB, 80 * MIB, 20 * MIB + 300_000, 12 * MIB, 80 * MIB - 200_000)
NOTE = ("no memory cgroup for the server: cgroup v1: cannot make a cgroup under /x: Permission denied (pounder is "
        "not root)")

CASES = {
    "quiet": {"warm": QUIET_WARM, "end": QUIET, "note": ""},
    "shmem": {"warm": None, "end": {**SHMEM, "current": 100 * MIB - 700_000}, "note": ""},
    "none": {"warm": None, "end": None, "note": NOTE},
}


def _run(tmp_path: Path, cgroup: dict[str, Any] | None) -> tuple[Path, str, dict[str, Any]]:
    """A copy of the demo run with ``cgroup`` in its sizes point, decided again: the directory,
    the text and recommendation.json."""
    run = recorded_copy("tune-demo", tmp_path)
    for made in ("recommendation.json", "recommendation.txt"):
        (run / made).unlink()
    sizes = run / "points" / "sizes.json"
    point = json.loads(sizes.read_text())
    assert point["summary"]["end"]["footprint"] == DEMO_FOOTPRINT
    if cgroup is not None:
        point["summary"]["cgroup"] = cgroup
    sizes.write_text(json.dumps(point))
    text = render_tune(resume(run))
    validate_results_dir(run)
    data: dict[str, Any] = json.loads((run / "recommendation.json").read_text())
    return run, text, data


def _page_platform(text: str) -> tuple[str | None, list[list[str]], list[str]]:
    """The page's paragraph on memory as the platform counts it, its table's rows and its notes."""
    sizes = text[text.index("1. Child sizes"):text.index("2. Memory bound")]
    found = re.search(r"<p>(Memory as the platform counts it:.*?)</p>(.*)", sizes, flags=re.S)
    if found is None:
        return None, [], []
    heading, rest = html.unescape(found[1]), found[2].lstrip()
    heading = heading[0].lower() + heading[1:]
    table, rest = rest.split("</table>", 1) if rest.startswith("<table>") else ("", rest)
    rows = [[html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row, flags=re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)]
    rest = rest.lstrip()
    notes = [html.unescape(n) for n in re.findall(r"<li>(.*?)</li>", rest.split("</ul>")[0], flags=re.S)] \
        if rest.startswith("<ul") else []
    return heading, [r for r in rows if r], notes


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_text_and_the_page_show_the_stored_figures_and_agree(tmp_path: Path, case: str) -> None:
    run, text, data = _run(tmp_path, CASES[case])
    measure = data["measure"]
    assert measure["cgroup"] == CASES[case]
    check_consistent(text, data)  # check_platform on the text among the rest
    shown = platform_text(text.split("\nRecommendation\n")[0])
    drawn = _page_platform(page("run", "test", tune_sections(run)))
    check_platform(*drawn, measure)
    assert drawn == shown, (drawn, shown)  # the page says what the text says


def test_the_quiet_pool_reads_as_a_user_sees_it(tmp_path: Path) -> None:
    heading, rows, notes = platform_text(_run(tmp_path, CASES["quiet"])[1])
    assert heading == ("memory as the platform counts it: the server ran in a memory cgroup of its own (cgroup v1), "
                       "read right after the snapshots; MiB")
    assert rows == [["warmed", "108.0", "102.0", "6.0", "104.0", "102.0", "0.0", "0.0", "2.0"],
                    ["end", "114.3", "108.5", "5.8", "110.0", "108.5", "0.0", "0.0", "1.5"]]
    assert notes[1].startswith("the sum of PSS, 114.3 MiB, is 5.8 MiB more than anon: beyond its anonymous part "
                               "(108.5 MiB) it counts 5.8 MiB of shares of the file and shmem pages"), notes
    assert notes[2].startswith("current, 110.0 MiB, is 1.5 MiB more than anon + file: the kernel's own memory"), notes
    assert len(notes) == 3


def test_shared_memory_and_a_fuzzy_current_are_named(tmp_path: Path) -> None:
    _, rows, notes = platform_text(_run(tmp_path, CASES["shmem"])[1])
    assert [row[0] for row in rows] == ["end"]  # the warm reading is missing: no row
    assert any(n.startswith("current, 99.3 MiB, is 1.0 MiB less than anon + file: memory.current and memory.stat")
               for n in notes), notes
    assert any(n.startswith("shmem, 12.0 MiB of file, is shared memory or tmpfs") for n in notes), notes


def test_no_cgroup_says_why_once_and_an_older_result_shows_nothing(tmp_path: Path) -> None:
    heading, rows, notes = platform_text(_run(tmp_path / "none", CASES["none"])[1])
    assert heading == f"memory as the platform counts it: not read ({NOTE})" and rows == [] and notes == []
    run, text, data = _run(tmp_path / "older", None)
    assert "cgroup" not in data["measure"] and "memory as the platform" not in text
    assert "emory as the platform" not in page("run", "test", tune_sections(run))
