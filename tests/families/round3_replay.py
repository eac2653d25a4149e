"""Replay and HAR: overload counted one way, deep or wrong files, kept headers.
(issue 39 items 3, 6, 16, 21.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``.

Overload: servers.py's ``ok`` mode with ``--delay-ms 100`` and a log of 30 requests 10 ms apart,
replayed with ``-c 2 -t 1``: most arrivals find both connections busy. The one rule
(docs/reference/engine-contract.md, "Overload"): they wait (late) until the replay's end (its last request's
time, or ``-d``), what still waits then is unsent; every arrival is counted once
(``complete + failed + unsent`` = the arrivals, the server's own count = those sent) and the run
ends at its length plus the drain, on both I/O paths."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import run as R
from harness import Case, Ctx, Result

P = "@POUNDER@"
T0 = datetime(2026, 11, 23, 9, 0, 0, tzinfo=timezone(timedelta(hours=1)))


def _line(ms: int, request: str = "GET / HTTP/1.1", rest: str = "") -> str:
    moment = T0 + timedelta(milliseconds=ms)
    stamp = f"{moment.strftime('%d/%b/%Y:%H:%M:%S')}.{moment.microsecond // 1000:03d} {moment.strftime('%z')}"
    return f'127.0.0.1 - - [{stamp}] "{request}" 200 512 "-" "curl/8"{rest}\n'


BURST = "".join(_line(10 * i, f"GET /r{i} HTTP/1.1") for i in range(30))
"""30 requests 10 ms apart: the last at 290 ms."""
MOMENT = _line(0, "GET /a HTTP/1.1") * 5


def _har(entries: list[tuple[str, str, dict[str, str]]]) -> str:
    """A HAR: (startedDateTime, URL, headers) per entry."""
    return json.dumps({"log": {"version": "1.2", "entries": [
        {"startedDateTime": when, "request": {"method": "GET", "url": url, "httpVersion": "HTTP/1.1",
                                              "headers": [{"name": k, "value": v} for k, v in headers.items()]},
         "response": {"status": 200}, "timings": {}}
        for when, url, headers in entries]}})  # fmt: skip


SHOP = _har([("2026-11-23T08:00:00.000Z", "https://shop.example/", {"Cookie": "session=stale", "User-Agent": "ff"}),
             ("2026-11-23T08:00:00.040Z", "https://shop.example/cart", {"Cookie": "session=stale"})])  # fmt: skip
AGES = _har([("0001-01-01T00:00:00.000Z", "http://x.example/a", {}),
             ("9999-12-31T23:59:59.999Z", "http://x.example/b", {})])  # fmt: skip
DEEP_HAR = '{"log": {"entries": [' + "[" * 100_000 + "]" * 100_000 + "]}}"


def overload(arrivals: int, length_s: float) -> Callable[[Ctx, Result], Iterable[str]]:
    """Every arrival sent or unsent once, the server saw exactly those sent, some waited (late)
    and most are unsent, the measured time is the replay's length plus what was in flight."""

    def overload(ctx: Ctx, res: Result) -> Iterable[str]:
        d = ctx.json("out.json")
        q = d["requests"]
        if q["complete"] + q["failed"] + q["unsent"] != arrivals:
            yield f"complete {q['complete']} + failed {q['failed']} + unsent {q['unsent']} != {arrivals} arrivals"
        seen = ctx.vars.get("counts", {}).get("requests", -1)
        if seen != q["complete"]:
            yield f"the server read {seen} requests, pounder counts {q['complete']} complete"
        if q["unsent"] < arrivals // 2 or q["late"] < 1:
            yield f"an overload of 10x: expected most unsent and some late, got {q}"
        if not length_s <= d["elapsed_s"] <= length_s + 0.25:
            yield f"measured {d['elapsed_s']:.3f} s for a replay of {length_s} s (+0.1 s in flight)"
        if d["options"]["load"]["duration_s"] != length_s:
            yield f"planned {d['options']['load']['duration_s']} s, not {length_s} s"

    return overload


def short_error(limit: int = 300) -> Callable[[Ctx, Result], Iterable[str]]:
    def short_error(ctx: Ctx, res: Result) -> Iterable[str]:
        if len(res.err) > limit:
            yield f"an error of {len(res.err):,} characters (at most {limit}): {res.err[:120]!r}"

    return short_error


def head_has(*wanted: bytes, absent: tuple[bytes, ...] = ()) -> Callable[[Ctx, Result], Iterable[str]]:
    """The first request head the server read (``--record-file @REC@``, without its blank line)
    holds ``wanted``, once each, and none of ``absent``."""

    def head_has(ctx: Ctx, res: Result) -> Iterable[str]:
        head = Path(ctx.vars["REC"]).read_bytes()
        for text in wanted:
            if head.count(text) != 1:
                yield f"the request did not hold {text!r}: {head[:200]!r}"
        for text in absent:
            if text in head:
                yield f"the request held {text!r}: {head[:200]!r}"

    return head_has


def fam_replay() -> list[Case]:
    cases = []
    run = [P, "bench", "--replay", "burst.log", "-c", "2", "-t", "1", "--json", "out.json", "@URL@"]
    for io in ("epoll", "uring"):
        for name, cut, arrivals, length in (("no-d", [], 30, 0.29), ("d-longer", ["-d", "1s"], 30, 0.29),
                                            ("d-cuts", ["-d", "150ms"], 15, 0.15)):  # fmt: skip
            cases.append(Case(
                "replay", f"overload-{name}-{io}", [*run, "--io", io, *cut], rc=0,
                setup=R.files(burst__log=BURST), server_extra=("--delay-ms", "100"), outputs=("out.json",),
                max_time=length + 3.0, checks=(overload(arrivals, length), R.counts_add_up()),
                note="overload counted once (late until the end, then unsent); ends at length + drain"))  # fmt: skip
    cases += [
        Case("replay", "one-moment-no-planned-time", [P, "bench", "--replay", "m.log", "-c", "10", "@URL@"], rc=0,
             setup=R.files(m__log=MOMENT), out=r"Measured time: +[0-9.]+ s \(the replayed requests share one moment: "
             r"no planned length\)", note="no 'planned 0 s' for a replay of one timestamp"),  # fmt: skip
        Case("replay", "deep-har-replay", [P, "bench", "--replay", "deep.har", "@URL@"], rc=2,
             setup=R.files(deep__har=DEEP_HAR), err=r"nested too deeply to be a HAR", checks=(short_error(),)),
        Case("replay", "deep-har-access-log", [P, "bench", "--access-log", "deep.har", "-n", "1", "@URL@"], rc=2,
             setup=R.files(deep__har=DEEP_HAR), err=r"nested too deeply to be a HAR", checks=(short_error(),)),
        Case("replay", "deep-json-array", [P, "bench", "--replay", "deep.json", "@URL@"], rc=2,
             setup=R.files(deep__json=R.DEEP), err=r"nested too deeply to be a HAR"),
        Case("replay", "json-array-har", [P, "bench", "--replay", "x.har", "@URL@"], rc=2,
             setup=R.files(x__har="[1, 2, 3]\n"),
             err=r"x\.har is JSON but not a HAR: an array, not an object with log\.entries"),
        Case("replay", "json-array-har-access-log", [P, "bench", "--access-log", "x.har", "-n", "1", "@URL@"], rc=2,
             setup=R.files(x__har="[]"), err=r"x\.har is JSON but not a HAR: an array"),
        Case("replay", "har-without-entries", [P, "bench", "--replay", "x.har", "@URL@"], rc=2,
             setup=R.files(x__har='{"log": {"pages": []}}'), err=r"x\.har is JSON but not a HAR: no log\.entries"),
        Case("replay", "har-neither-json-nor-log", [P, "bench", "--replay", "x.har", "@URL@"], rc=2,
             setup=R.files(x__har="hello\n"), err=r"neither JSON \(a HAR is a JSON object with log\.entries\) nor "
             r"an access log \(line 1 is not"),  # fmt: skip
        Case("replay", "har-huge-integer", [P, "bench", "--replay", "big.har", "@URL@"], rc=2,
             setup=R.files(big__har='{"log": {"entries": [], "n": ' + "9" * 5000 + "}}"),
             err=r"big\.har: not valid JSON \(Exceeds the limit", checks=(short_error(),)),
        Case("replay", "har-100kb-time", [P, "bench", "--replay", "t.har", "@URL@"], rc=2,
             setup=R.files(t__har=_har([("x" * 100_000, "http://x.example/", {})])),
             err=r"startedDateTime '.*…\(100,000 characters\)….*' is not an ISO 8601 time", checks=(short_error(),)),
        Case("replay", "har-years-apart-cut", [P, "bench", "--replay", "ages.har", "--speed", "0.001x", "-d", "300ms",
                                               "--json", "out.json", "@URL@"], rc=0,  # fmt: skip
             setup=R.files(ages__har=AGES), outputs=("out.json",), checks=(R.counts_add_up(),),
             note="a send time past 2^64 us after the cut is not handed to the engine"),
        Case("replay", "har-years-apart-uncut", [P, "bench", "--replay", "ages.har", "@URL@"], rc=2,
             setup=R.files(ages__har=AGES), err=r"lasts 87,649,416\.0h at 1x, more than the limit of 24h"),
        Case("replay", "har-cookie-kept", [P, "bench", "--replay", "shop.har", "--speed", "10x", "@URL@"], rc=0,
             setup=R.files(shop__har=SHOP), server_extra=("--record-file", "@REC@"),
             checks=(head_has(b"\r\nCookie: session=stale", b"\r\nUser-Agent: ff"),),
             note="docs/guide/bench.md: a HAR's headers are kept, the recorded Cookie too"),
        Case("replay", "har-cookie-replaced", [P, "bench", "--replay", "shop.har", "--speed", "10x", "--cookie",
                                               "session=mine", "@URL@"], rc=0,  # fmt: skip
             setup=R.files(shop__har=SHOP), server_extra=("--record-file", "@REC@"),
             checks=(head_has(b"\r\nCookie: session=mine", absent=(b"stale",)),)),
        Case("replay", "log-service-time-5000-digits", [P, "bench", "--access-log", "s.log", "-n", "2", "@URL@"],
             rc=0, setup=R.files(s__log=_line(0, rest=" " + "9" * 5000) + _line(5, rest=" 0.25"))),
        Case("replay", "capture-with-a-line-break-named", [P, "bench", "--scenario", "s.toml", "-n", "4", "-c", "1",
                                                          "--json", "out.json", "@URL@"], rc=1,  # fmt: skip
             setup=R.files(s__toml='[[login]]\npath = "/"\ncapture = [{ var = "t", body = "(?s)(a.*)" }]\n'
                                   '[[loop]]\npath = "/x"\nheaders = { X-T = "{{t}}" }\n'),
             server_extra=("--body", "a\\r\\nX-Injected: 1"), outputs=("out.json",),
             err=r"GET /: 4 no capture \(4 matched a value holding a line break or NUL, which a header cannot carry\)",
             out=r"GET /: 4 of its 4 no capture matched a value holding a line break",
             note="a capture that matched but cannot go into a header is named, not a bare 'no capture'"),
        Case("replay", "scenario-200kb-path", [P, "bench", "--scenario", "s.toml", "-n", "2", "@URL@"], rc=2,
             setup=R.files(s__toml=('[[loop]]\npath = "/' + "a" * 200_000 + '"\n') * 2),
             err=r"…\(200,001 characters\)…", checks=(short_error(),),
             note="a 200 KB path is no 200 KB step name or error line"),
    ]
    return cases


FAMILIES = {"replay": fam_replay}
