"""pounder report on hostile results: meaningless figures, magnitudes, every JSON pounder writes.
(issue 39 items 4, 5, 6, 15, 21.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``.

The documents are real: the fixtures' bench, comparison and mem results, the recorded tuning run
of tests/data/tune-demo, and ``pounder top --json`` / ``pounder syscalls --json`` of the case's own
pre-forking server, each edited the way a hostile or broken file would be."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import run as R
from harness import POUNDER, Case, Ctx, Result

P = "@POUNDER@"
DEMO = Path(__file__).resolve().parents[1] / "data" / "tune-demo"
BOUND = r"is larger than any pounder result holds \(at most 2\*\*63 - 1\)"


def edited(name: str, rel: str, mutate: Callable[[Any], None], text: Callable[[str], str] | None = None):
    """The fixture ``name`` (bench, compare, mem) as ``rel``, after ``mutate`` (and ``text`` on its JSON text)."""

    def setup(ctx: Ctx) -> None:
        document = json.loads(R.FIXTURES[name].read_text())
        mutate(document)
        written = json.dumps(document)
        ctx.write(rel, text(written) if text else written)

    return setup


def put(*path: Any, value: Any) -> Callable[[Any], None]:
    def mutate(document: Any) -> None:
        for part in path[:-1]:
            document = document[part]
        if value is DELETE:
            del document[path[-1]]
        else:
            document[path[-1]] = value

    return mutate


DELETE = object()


def page_has(rel: str, *texts: str, lacks: Iterable[str] = ()) -> Callable[[Ctx, Result], Iterable[str]]:
    """The page ``rel`` (its words, without tags and charts) holds every one of ``texts`` and none of ``lacks``."""

    def page_has(ctx: Ctx, res: Result) -> Iterable[str]:
        try:
            page = ctx.path(rel).read_text()
        except OSError:
            yield f"no page {rel}"
            return
        page = re.sub(r"<svg.*?</svg>", " ", page, flags=re.S)
        words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)).replace("&#x27;", "'")
        for text in texts:
            if text not in words:
                yield f"the page does not say {text!r}"
        for text in lacks:
            if text in words:
                yield f"the page says {text!r}"

    return page_has


def no_python(ctx: Ctx, res: Result) -> Iterable[str]:
    """No exception class, no Python words in the error line."""
    line = " ".join(res.error_lines())
    for word in ("KeyError", "TypeError", "ValueError", "OverflowError", "Traceback", "object has no attribute"):
        if word in line:
            yield f"the error line has Python's words ({word}): {line[:160]!r}"


def report(name: str, setup: Callable[[Ctx], None], rc: int = 2, err: str | None = None, *,
           what: str = "r.json", checks: tuple[Any, ...] = (), server: str | None = None, note: str = "",
           max_rss_mb: float | None = 600, max_time: float | None = 60) -> Case:
    page = "r.html"
    return Case("report", name, [P, "report", what, "-o", page], rc=rc, err=err, setup=setup, server=server,
                outputs=(page,), checks=(*checks, no_python) if rc == 2 else checks, timeout=90,
                max_rss_mb=max_rss_mb, max_time=max_time, note=note)


def tune_copy(mutate: Callable[[Path], None] | None = None):
    def setup(ctx: Ctx) -> None:
        shutil.copytree(DEMO, ctx.path("run"))
        if mutate:
            mutate(ctx.path("run"))

    return setup


def tune_json(text: str):
    """A results directory holding only ``tune.json``, with ``text``."""

    def setup(ctx: Ctx) -> None:
        ctx.path("run").mkdir()
        ctx.write("run/tune.json", text)

    return setup


def recommendation(mutate: Callable[[Any], None]) -> Callable[[Path], None]:
    def change(run: Path) -> None:
        document = json.loads((run / "recommendation.json").read_text())
        mutate(document)
        (run / "recommendation.json").write_text(json.dumps(document))

    return change


def live_json(command: str, rel: str, mutate: Callable[[Any], None] | None = None):
    """``pounder top`` / ``pounder syscalls`` of the case's pre-forking server, written to ``rel``."""

    def setup(ctx: Ctx) -> None:
        pid = str(ctx.server().proc.pid)
        argv = ([POUNDER, "top", "--server-pid", pid, "--once", "--json", str(ctx.path(rel))] if command == "top" else
                [POUNDER, "syscalls", ctx.url, "--server-pid", pid, "-n", "20", "-c", "1", "--warmup", "0", "--json",
                 str(ctx.path(rel))])  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"pounder {command}: {done.stderr.strip()[-300:]}")
        document = json.loads(ctx.path(rel).read_text())
        ctx.vars["children"] = [child["pid"] for child in document.get("children", [])]
        if mutate:
            mutate(document)
            ctx.write(rel, json.dumps(document))

    return setup


def top_rows(ctx: Ctx, res: Result) -> Iterable[str]:
    """The page lists every child ``pounder top`` saw, by pid, each in a row of its own."""
    page = ctx.path("r.html").read_text()
    rows = {int(pid) for pid in re.findall(r"<tr><td>(\d+)</td>", page)}
    children = set(ctx.vars.get("children") or [])
    if not children:
        yield "pounder top saw no child of the pre-forking server"
    if rows != children:
        yield f"the page's rows {sorted(rows)} are not the children {sorted(children)}"


def child_of_no_size(document: Any) -> None:
    """A child of 0 bytes of private memory beside the parent, and the MaxClients divided by it."""
    parent = document["processes"][0]
    document["processes"].append({**parent, "pid": parent["pid"] + 1, "role": "child", "private": 0})
    document["max_clients"] = {"ram": 1 << 30, "ram_source": "given", "mem_available": None, "footprint": 1 << 20,
                               "shared": 0, "shared_basis": "median child shared", "max_child_uss": 0,
                               "max_child_rss": parent["rss"], "children": 1, "max_clients": 262144,
                               "max_clients_no_sharing": 1}


def _gate(expression: str, verdict: str = "fail") -> dict[str, Any]:
    return {"expression": expression, "metric": "p99", "operator": ">", "threshold": 1000.0, "unit": "us",
            "subject": None, "measured": 2000.0, "measured_text": "2 ms", "verdict": verdict, "why": ""}


def fam_report() -> list[Case]:
    bench, compare, mem = "bench", "compare", "mem"
    return [
        # item 5: a size taken from the input is bounded before anything is sized by it
        report("duration-1e308", edited(bench, "r.json", put("elapsed_s", value=1e308)), err=r"'elapsed_s' " + BOUND,
               max_rss_mb=300, max_time=30, note="refused in one line, no per-second list of 1e308 entries"),
        report("duration-1e7", edited(bench, "r.json", put("elapsed_s", value=1e7)), rc=0,
               checks=(page_has("r.html", "Bench result"),), max_rss_mb=400, max_time=45,
               note="116 days of which one second was measured: read in the time of its series"),
        report("series-second-2**62", edited(bench, "r.json", put("series", 0, "second", value=2**62)), rc=0,
               max_rss_mb=400, max_time=45),
        # item 6: magnitudes
        report("complete-10**400", edited(bench, "r.json", put("requests", "complete", value=10**400)),
               err=r"'requests\.complete' " + BOUND + r", got a number of 401 digits"),
        report("bytes-10**30", edited(bench, "r.json", put("bytes", "total", value=10**30)), err=r"'bytes\.total' "),
        report("cpu-1e300", edited(bench, "r.json", put("client_cpu", "user_s", value=1e300)),
               err=r"'client_cpu\.user_s' " + BOUND),
        report("mem-rss-10**400", edited(mem, "r.json", put("processes", 0, "rss", value=10**400)),
               err=r"'processes\[0\]\.rss' " + BOUND),
        report("compare-10**400", edited(compare, "r.json", put("variants", 0, "complete", value=10**400)),
               err=r"'variants\[0\]\.complete' " + BOUND),
        report("compare-nan", edited(compare, "r.json", put("variants", 0, "p99_us", "median", value=float("nan"))),
               err=r"NaN, which is no number"),
        report("bench-infinity", edited(bench, "r.json", lambda d: None,
                                        text=lambda t: re.sub(r'"elapsed_s": [0-9.e+-]+', '"elapsed_s": Infinity', t)),
               err=r"Infinity, which is no number"),
        # item 4: figures the input makes meaningless
        report("zero-duration", edited(bench, "r.json", put("elapsed_s", value=0.0)), rc=0,
               checks=(page_has("r.html", "no requests per second, the measured phase lasted 0 s"),)),
        report("mem-child-of-no-size", edited(mem, "r.json", child_of_no_size), rc=0,
               checks=(page_has("r.html", "MaxClients is not shown: the largest child measured USS 0 bytes",
                                lacks=("(RAM - shared) / max child USS",)),)),
        report("mem-no-children", edited(mem, "r.json", lambda d: d.update(processes=d["processes"][:1])), rc=0,
               checks=(page_has("r.html", "MaxClients is not shown: the server has no child processes to measure",
                                lacks=("(RAM - shared) / max child USS",)),)),
        report("tune-child-of-no-size", tune_copy(recommendation(put("memory", "child_uss", value=0))), rc=0,
               what="run", checks=(page_has("r.html", "MaxClients is not shown: the largest child measured USS 0",
                                            lacks=("MaxClients = (RAM",)),)),
        report("gate-unparsable", edited(bench, "r.json", put("gates", value=[_gate("p99>>zz"), _gate("p99>1ms")])),
               rc=0, checks=(page_has("r.html", "The gate failed", "1 gate cannot be read", "not read",
                                      lacks=("of 2 gates failed",)),)),
        report("compare-gate-unparsable", edited(compare, "r.json", put("gates", value=[_gate("what?")])), rc=0,
               checks=(page_has("r.html", "1 gate cannot be read", lacks=("gate failed", "gates failed")),)),
        # a document missing what its command always writes: one line, exit 2
        report("compare-no-variants", edited(compare, "r.json", put("variants", value=[])),
               err=r"'variants' must list 2 to 20 variants, as pounder compare measures them; got 0"),
        report("compare-variants-missing", edited(compare, "r.json", put("variants", value=DELETE)),
               err=r"'variants' must list 2 to 20 variants.*got none"),
        report("compare-trials-1e9", edited(compare, "r.json", put("options", "trials", value=10**9)),
               err=r"'options\.trials' must be from 1 to 100"),
        report("compare-label-missing", edited(compare, "r.json", put("comparisons", 0, "label", value=DELETE)),
               err=r"does not hold a complete pounder compare result: 'label' is missing"),
        report("gate-without-verdict", edited(bench, "r.json", put("gates", value=[
            {k: v for k, v in _gate("p99>1ms").items() if k != "verdict"}])), err=r"'verdict'"),
        report("tune-json-empty", tune_json("{}"), what="run",
               err=r"tune\.json is not a pounder/tune/2 document \(it holds no field\)"),
        report("tune-json-bare", tune_json('{"schema": "pounder/tune/2"}'), what="run",
               err=r"tune\.json: missing 'tool_version'"),
        # item 15: every JSON pounder writes is read
        report("top-json", live_json("top", "r.json"), rc=0, server="prefork", checks=(top_rows,)),
        report("top-json-child-without-state", live_json("top", "r.json", put("children", value=[{"pid": 7}])),
               server="prefork", err=r"'children\[0\]\.state'"),
        report("syscalls-json", live_json("syscalls", "r.json"), rc=0, server="prefork",
               checks=(page_has("r.html", "System calls:", "20 requests", "Failing calls per request"),)),
        report("syscalls-json-no-request", live_json("syscalls", "r.json", put("load", "requests", value=0)),
               server="prefork", err=r"'load\.requests' must be from 1 to 100,000"),
        report("tune-point-file", tune_copy(), rc=0, what="run/points/children-1-t1.json",
               checks=(page_has("r.html", "2. Memory bound"),)),
    ]


FAMILIES = {"report": fam_report}
