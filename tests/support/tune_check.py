"""The reasons of a tuning run never contradict its tables: checked on every tune run of the suite.

``check_consistent(stdout, data)`` takes what ``pounder tune`` printed and its
``recommendation.json``, and checks, independently of pounder's own wording rules:

* every requests/s and millisecond figure quoted in "Why", "Advice" and "Confirmation" is a figure
  of the tables printed above (a median or an interval bound, formatted as the tables format it),
  or of the confirmation run;
* every signed percentage quoted for a MaxRequestsPerChild value is that value's measured
  "RPS vs unlimited" in the table, and "within N%" is said of it only when its whole interval is;
* the statements with a direction agree with the numbers: "no leak" / "leak" with the leak
  verdict; "every value ... costs more than" only when every finite value measured lost more
  than that; "more children will not help" only when a larger count was measured and was not
  faster; the recommended pool and MaxRequestsPerChild are the ones in the configuration; the
  confirmation's "every check met" only when every check was met; a busy time is called the time
  itself ("every child was busy") only when the table's accept-queue share is 90 % or more.
"""

from __future__ import annotations

import re
from typing import Any

_RPS = re.compile(r"([\d,]+(?:\.\d+)?) req/s")
_MS = re.compile(r"([\d,]+\.\d) ms")
_SIGNED = re.compile(r"([+-]\d+\.\d)% vs unlimited|([+-]\d+\.\d)% to ([+-]\d+\.\d)%")


def _sections(stdout: str) -> tuple[str, str]:
    """(the tables: everything before "Recommendation", the narrative: from it on)."""
    head, sep, tail = stdout.partition("\nRecommendation\n")
    assert sep, "no Recommendation section in the output"
    return head, tail.split("\nConfiguration (")[0]


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"[\d,]+(?:\.\d+)?", text))


def _table_rows(head: str, title: str) -> list[list[str]]:
    """The rows (cells split on 2+ spaces) of the table under the numbered heading ``title``."""
    lines = head.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("  ") or not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def check_consistent(stdout: str, data: dict[str, Any]) -> None:
    head, narrative = _sections(stdout)
    known = _numbers(head)
    confirmation = data.get("confirmation") or {}
    for pattern in (_RPS, _MS):
        for figure in pattern.findall(narrative):
            assert figure in known or figure in _numbers(narrative.split("Confirmation")[-1]), (
                f"{figure} quoted in the reasons is in no table:\n{narrative}")
    # every signed percentage quoted (a MaxRequestsPerChild value against unlimited, its interval)
    # is one of the MaxRequestsPerChild table's, and that table's are the measured ratios
    table = head.split("\n5. ")[1].split("\n\n")[0] if "\n5. " in head else ""
    pools_table = head.split("\n4. ")[1].split("\n\n")[0] if "\n4. " in head else ""
    shapes_table = head.split("\n4b. ")[1].split("\n\n")[0] if "\n4b. " in head else ""  # workers x threads
    printed = set(re.findall(r"[+-]\d+\.\d", table))
    printed_pools = set(re.findall(r"[+-]\d+\.\d", pools_table + shapes_table))
    for point in data["mrpc"]:
        vs = point.get("vs_unlimited") or {}
        for key in ("ratio", "low", "high"):
            if vs.get(key) is not None:
                assert f"{(float(vs[key]) - 1) * 100:+.1f}" in printed, (key, vs, table)
    for signed in (value for found in _SIGNED.findall(narrative) for value in found if value):
        assert signed in printed | printed_pools, (
            f"{signed}% quoted in the reasons is in no table of MaxRequestsPerChild, pools or shapes:\n{table}")
    # the pools' (and the shapes') ratios to the best quoted with "against the best" are their table's
    for signed in re.findall(r"([+-]\d+\.\d)% (?:\([+-]\d+\.\d% to [+-]\d+\.\d%\) )?against the best", narrative):
        assert signed in printed_pools, f"{signed}% against the best is not in the pools table:\n{pools_table}"
    # "within N%" of a value whose interval is quoted: the whole interval is (the median alone is
    # "its median within")
    for low, limit in re.findall(r"\(([+-]\d+\.\d)% to [+-]\d+\.\d%\), within (\d+(?:\.\d+)?)%", narrative):
        assert float(low) >= -float(limit), f"within {limit}% said of an interval reaching {low}%:\n{narrative}"
    # the accept queue's share quoted for a busy time is the children table's, and "every child was
    # busy" is said only from QUEUED_BUSY (90 %) up, "an upper bound" only below
    for share, verdict in re.findall(r"waited for a free child in (?:only )?(\d+)% of the accept queue's samples"
                                     r"(: every child|, under)", narrative):
        assert re.search(rf"\s{share}%\s", head), f"{share}% of queued samples is in no table"
        assert (int(share) >= 90) == (verdict == ": every child"), f"{share}% called{verdict}:\n{narrative}"
    choice = data["max_requests"]
    if re.search(r"\bno leak\b", narrative):
        assert not choice["leak"], "the reasons say no leak, the verdict is a leak"
    if re.search(r"^\s+- leak\b", narrative, re.MULTILINE):
        assert choice["leak"], "the reasons call a leak the verdict did not"
    costs = re.search(r"every (?:value|limit) (?:swept|measured) costs more than (\d+)%", narrative)
    if costs:
        limit = int(costs[1]) / 100
        for point in data["mrpc"]:
            ratio = (point.get("vs_unlimited") or {}).get("ratio")
            if int(point["max_requests"]) > 0 and ratio is not None:
                assert 1 - float(ratio) > limit, (
                    f"every value costs more than {costs[1]}%, but {point['max_requests']} lost {1 - float(ratio):.1%}")
    if "more children will not help" in narrative:
        knee = int(data["children"]["throughput"])
        bigger = [p for p in data["sweep"] if int(p["children"]) > knee]
        assert bigger, "'more children will not help' with no larger count measured"
        at = next(p for p in data["sweep"] if int(p["children"]) == knee)
        for point in bigger:
            low = point.get("rps_low")
            assert low is None or at.get("rps_high") is None or float(low) <= float(at["rps_high"]) * 1.05, (
                f"'more children will not help' but {point['children']} children were faster")
    _check_pools(head, narrative, data)
    _check_spare(narrative, data)
    check_platform(*platform_text(head), data["measure"])
    params = data["params"]
    names = data["names"]
    config_lines = stdout.split("\nRecommendation\n")[1].split("\nWhy")[0]
    assert re.search(rf"{re.escape(names['max_clients'])}\s+{params['max_clients']}\b", config_lines), config_lines
    if confirmation:
        met = "every check met" in narrative
        assert met == bool(confirmation["ok"]), "the confirmation line disagrees with its checks"
        for check in confirmation["checks"]:
            assert check["text"] in narrative


def platform_text(text: str) -> tuple[str | None, list[list[str]], list[str]]:
    """From recommendation.txt's sizes section: the line on memory as the platform counts it (None
    when there is none), its table's rows (cells split on 2+ spaces) and its notes (each bullet
    joined into one line)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("  memory as the platform counts it:")), None)
    if start is None:
        return None, [], []
    rows: list[list[str]] = []
    notes: list[str] = []
    for line in lines[start + 1:]:
        if line.startswith("  - "):
            notes.append(line[4:])
        elif line.startswith("    ") and notes:
            notes[-1] += " " + line.strip()
        elif line.startswith("    ") and not notes:
            rows.append(re.split(r"\s{2,}", line.strip()))
        else:
            break
    return lines[start].strip(), rows[1:], notes  # rows[0]: the header


_MIB = 1024 * 1024


def _mib(value: float) -> str:
    return f"{value / _MIB:,.1f}"


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def check_platform(heading: str | None, rows: list[list[str]], notes: list[str], measure: dict[str, Any]) -> None:
    """The cgroup's figures shown next to the sum of PSS are the stored ones, and no sentence about
    them contradicts the table: each figure quoted is the end row's, each difference quoted is the
    difference of the cells it names, "more" / "less" as the cells say."""
    cgroup = measure.get("cgroup")
    if cgroup is None:  # a run of a version that did not read it
        assert heading is None and not rows and not notes
        return
    assert heading is not None, "the sizes point has cgroup figures and the report shows none"
    if cgroup["end"] is None:
        assert "not read" in heading and not rows and not notes, (heading, rows, notes)
        if cgroup["note"]:
            assert cgroup["note"] in heading
        return
    assert f"cgroup v{cgroup['end']['version']}" in heading, heading
    by_name = {row[0]: row for row in rows}
    for name, stage in (("warmed", "warm"), ("end", "end")):
        charged = cgroup[stage]
        if charged is None:
            assert name not in by_name
            continue
        row = by_name[name]
        expected = [_mib(measure[stage]["footprint"]), _mib(charged["pss_anon"]), None,
                    *(_mib(charged[k]) for k in ("current", "anon", "file", "shmem")), None]
        for cell, want in zip(row[1:], expected, strict=True):
            assert want is None or cell == want, (name, row, expected)
        pss, pss_anon, files, current, anon, file, _shmem, other = (_num(c) for c in row[1:])
        assert abs(files - (pss - pss_anon)) < 0.051 and abs(other - (current - anon - file)) < 0.051, row
    pss, pss_anon, files, current, anon, file, shmem, other = (_num(c) for c in by_name["end"][1:])
    text = " ".join(notes)
    quoted = {_num(v) for v in re.findall(r"([\d,]+\.\d) MiB", text)}
    cells = {pss, pss_anon, files, current, anon, file, shmem, abs(other)}
    differences = {round(abs(a - b), 1) for a in cells for b in cells}
    assert quoted <= cells | differences, (quoted - cells - differences, text)

    def said(subject: str, value: float, reference: str, than: float) -> None:
        found = re.search(rf"{subject} (?:is )?(?:([\d,]+\.\d) MiB (more|less) than|the same as) {reference}", text)
        assert found, (subject, reference, text)
        assert _num(re.findall(r"[\d,]+\.\d", found[0])[0]) == value, (found[0], value)
        difference = round(value - than, 1)
        if found[1] is None:
            assert abs(difference) < 0.051, (subject, value, reference, than)
        else:
            assert abs(_num(found[1]) - abs(difference)) < 0.051 and (found[2] == "more") == (difference > 0), (
                found[0], value, than)

    said(r"the sum of PSS, [\d,.]+ MiB,", pss, "anon", anon)
    said(r"Pss_Anon, their shares of it, add up to [\d,.]+ MiB,", pss_anon, "anon", anon)
    if other >= 0.05 or other <= -0.05:
        said(r"current, [\d,.]+ MiB,", current, r"anon \+ file", anon + file)
    assert re.search(rf"\banon {re.escape(f'{anon:,.1f}')} MiB\b", text), text
    assert (shmem >= 0.05) == ("shmem, " in text), text


def _check_pools(head: str, narrative: str, data: dict[str, Any]) -> None:
    """The pools compared at the offered load: the table holds every candidate with its figures;
    "the smallest pool as good as the best" only of a pool that is not distinguishably slower than
    the best, with no smaller one that is as good; a pool the CPU floor raised to the children that
    use the cores is said to be that ("the fewest children that keep the server's N cores busy", or
    "toward the M children that keep ..." when none that large was as good, with the floor's figures),
    never "the smallest pool"; the chosen pool is the recommendation
    (unless a leak or the confirmation lowered it, and then the reasons say so)."""
    pools = data.get("pools")
    if not pools:
        return
    table = head.split("\n4. Pools at the offered load")[1].split("\n\n")[0]
    rows = {int(cells[0]): cells for cells in (re.split(r"\s{2,}", line.strip()) for line in table.splitlines()[2:])
            if cells[0].isdigit()}  # the lines under the table (php-fpm's status page) are no rows
    for point in pools["points"]:
        cells = rows[int(point["children"])]
        assert f"{float(point['rps']):,.0f}" in cells and f"{float(point['p99_ms']):,.1f}" in cells, (point, cells)
    chosen = next(p for p in pools["points"] if p["children"] == pools["chosen"])
    assert not chosen["vs_best"]["worse"], "the chosen pool is distinguishably slower than the best"
    smaller = [p for p in pools["points"] if p["children"] < pools["chosen"]]
    floor = pools.get("cpu_floor")
    raised = bool(floor) and any(r.startswith("the children are CPU-bound") and "rather than" in r
                                 for r in pools["reasons"])
    if raised:
        # raised to the CPU floor (issue 38): the children that use the cores, said with its arithmetic
        assert any(f"= {float(floor['cores']) / float(floor['share']):.1f}, " in r for r in pools["reasons"]), pools
        smaller = []
    if pools.get("p99_met") is not False:
        for point in smaller:
            assert point["vs_best"]["worse"] or point["p99_vs_lowest"]["worse"] or pools.get("p99_met"), (
                f"{point['children']} children were as good as the chosen {pools['chosen']}")
    said = " ".join(narrative.split())  # the lines are wrapped
    if raised:
        # the floor decided, and the deciding fact says so (not "the smallest pool": a smaller one was as good),
        # with the floor's own figures: raised to the floor, or toward it (no candidate that large as good)
        rule = ("the fewest children" if pools["chosen"] >= int(floor["children"]) else
                f"toward the {int(floor['children']):,} children")
        assert (f"{pools['chosen']}: {rule} that keep the server's {float(floor['cores']):g} cores busy "
                f"({float(floor['share']):.2f} of a core each), as good as the best at ") in said, narrative
        assert "the smallest pool as " not in said, narrative
    elif len(pools["points"]) > 1:
        assert "the smallest pool as " in narrative, narrative
    else:
        assert "the only candidate" in narrative, narrative
    shapes = data.get("shapes")
    if shapes is not None and data["params"]["max_clients"] == shapes["workers"]:
        # the workers of the shape chosen at the offered load (workers x threads), its threads recommended too
        assert data["params"]["threads"] == shapes["threads"] and f"threads {shapes['threads']}: " in said, narrative
    elif data["params"]["max_clients"] != pools["chosen"]:
        assert data["children"]["decided_by"] in ("memory", "confirmation"), data["children"]["decided_by"]


def _check_spare(narrative: str, data: dict[str, Any]) -> None:
    """The spare setting recommended is the one the burst trials measured no worse than the
    defaults, and the configuration holds it."""
    choice = data.get("spare_choice")
    if not choice:
        return
    points = {p["name"]: p for p in data["spare"]}
    chosen = points[choice["name"]]
    assert chosen.get("chosen"), chosen
    if choice["name"] == "after":
        before = points["before"]
        assert float(chosen["p99_ms"]) <= float(before["p99_ms"]), (chosen["p99_ms"], before["p99_ms"])
        assert "the defaults are kept" not in narrative
    params = data["params"]
    if params.get("start_servers") is not None:
        assert params["start_servers"] == chosen["start_servers"], (params, chosen)
