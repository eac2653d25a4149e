"""Nothing succeeded and all-error answers: scenarios that never log in, error pages, --expect-status, gates.
(issue 39 items 1, 2, 10.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``.

The promise: a run that got nowhere (no request succeeded, no answer 2xx or 3xx or of
``--expect-status``, a scenario whose users never get past the login) writes what it measured,
then says so in one line and exits 1, in every command that loads; plain http:// to a TLS port is
named; a gate that can never fail or always fails is refused (exit 2, nothing sent)."""

from __future__ import annotations

import json
from collections.abc import Iterable

import run as R
from harness import Case, Ctx, Result

P = "@POUNDER@"
LOGIN = """\
[[login]]
name = "log in"
path = "/"
capture = [{ var = "token", body = 'token="([^"]+)"' }]

[[loop]]
name = "home"
path = "/"
"""


def one_line(ctx: Ctx, res: Result) -> Iterable[str]:
    lines = res.err.strip().splitlines()
    if len(lines) != 1 or not lines[0].startswith("pounder: error: ") or "Traceback" in res.err:
        yield f"expected one 'pounder: error:' line, got {res.err[-300:]!r}"


def trials_got_nowhere(rel: str = "c.json") -> R.Check:
    def check(ctx: Ctx, res: Result) -> Iterable[str]:
        doc = json.loads(ctx.path(rel).read_text())
        if not doc["trials"] or not all(t.get("nowhere") and t["not_counted"] == "failures" for t in doc["trials"]):
            yield f"{rel}: a trial that got nowhere is not marked so"
        if any(c["verdict"] != "unknown" for c in doc["comparisons"]):
            yield f"{rel}: a verdict from trials that got nowhere"

    return check


def tls_plain() -> R.Check:
    """Set-up: servers.py's tls mode (Python's ssl) as the main server: @URL@ is then plain http://
    to a TLS port."""
    import round3_https as H

    return H.tls_server("ec")  # type: ignore[no-any-return]


def fam_statuses() -> list[Case]:
    bench = [P, "bench", "-n", "20", "-c", "2"]
    compare = [P, "compare", "@URL@", "@URL@", "--label", "a", "--label", "b", "-n", "20", "-c", "2", "--trials", "3",
               "--no-warmup"]  # fmt: skip
    nowhere_500 = r"^pounder: error: no answer was 2xx or 3xx \(20 × 500\); give --expect-status CODE"
    written = (one_line, R.nonempty("out.json"))
    return [
        # item 2: every answer an error page
        Case("statuses", "bench-all-500", [*bench, "--json", "out.json", "@URL@"], rc=1, err=nowhere_500,
             server="status500", outputs=("out.json",), checks=written,
             note="all 500: one line, exit 1, the result written first"),
        Case("statuses", "bench-all-500-expected", [*bench, "-q", "--expect-status", "500", "@URL@"], rc=0,
             server="status500", note="--expect-status 500: the answers expected"),
        Case("statuses", "bench-all-500-expected-class", [*bench, "-q", "--expect-status", "404,5xx", "@URL@"], rc=0,
             server="status500"),
        Case("statuses", "bench-all-500-other-expected", [*bench, "-q", "--expect-status", "400-499", "@URL@"], rc=1,
             err=r"no answer had an expected status \(20 × 500; expected: 400-499\)", server="status500",
             checks=(one_line,)),
        Case("statuses", "bench-2xx-with-expect", [*bench, "-q", "--expect-status", "404", "@URL@"], rc=1,
             err=r"no answer had an expected status \(20 × 200; expected: 404\)", checks=(one_line,),
             note="--expect-status replaces 2xx and 3xx as the answers that count"),
        Case("statuses", "bench-expect-out-of-range", [*bench, "--expect-status", "600", "@URL@"], rc=2,
             err=r"--expect-status takes HTTP statuses from 100 to 599", contact=False, checks=(one_line,)),
        Case("statuses", "bench-expect-backwards", [*bench, "--expect-status", "499-400", "@URL@"], rc=2,
             err=r"--expect-status range 499-400 ends before it starts", contact=False),
        Case("statuses", "bench-expect-huge", [*bench, "--expect-status", "4" * 100000, "@URL@"], rc=2,
             err=r"^pounder: error: --expect-status takes .{0,200}…\([0-9,]+ characters\)…4+'?\n?$", contact=False,
             note="a huge value is cut in the message"),
        Case("statuses", "bench-expect-with-scenario",
             [*bench, "--scenario", "login.toml", "--expect-status", "404", "@URL@"], rc=2,
             err=r"--expect-status cannot go with --scenario: each step's expect", setup=R.files(login__toml=LOGIN),
             contact=False),
        Case("statuses", "bench-plain-http-to-tls", [*bench, "-q", "--timeout", "2s", "@URL@"], rc=1,
             err=r"no request succeeded \(20 failed.*: the server at 127\.0\.0\.1:\d+ speaks TLS: use https://$",
             server=None, setup=tls_plain(), checks=(one_line,), note="plain http:// to a TLS port is named"),
        Case("statuses", "bench-refused-port-not-called-tls", [*bench, "-q", "http://127.0.0.1:9/"], rc=1,
             err=r"^pounder: error: no request succeeded \(20 failed: refused 20\)\n$", server=None),
        # item 1: nothing succeeded, in every command
        Case("statuses", "bench-scenario-login-never-matches", [*bench, "-q", "--scenario", "login.toml", "@URL@"],
             rc=1, err=r"no virtual user got past the login steps: log in: [\d,]+ no capture",
             setup=R.files(login__toml=LOGIN), checks=(one_line,)),
        Case("statuses", "compare-scenario-login-never-matches",
             [P, "compare", "@URL@", "@URL@", "--label", "a", "--label", "b", "--scenario", "login.toml", "-d",
              "200ms", "-c", "2", "--trials", "3", "--no-warmup", "--json", "c.json"], rc=1,
             err=r"every trial of a got nowhere \(no virtual user got past the login steps.*every trial of b got "
                 r"nowhere", out=r"scenario login\.toml \(each step's method\), keep-alive",
             setup=R.files(login__toml=LOGIN), outputs=("c.json",), checks=(one_line, trials_got_nowhere()),
             note="no verdict from failed logins; the header names the scenario"),
        Case("statuses", "compare-all-500", [*compare, "--json", "c.json"], rc=1,
             err=r"every trial of a got nowhere \(no answer was 2xx or 3xx \(20 × 500\)", server="status500",
             outputs=("c.json",), checks=(one_line, trials_got_nowhere())),
        Case("statuses", "compare-all-500-expected", [*compare, "-q", "--expect-status", "500"], rc=0,
             server="status500"),
        Case("statuses", "run-all-500", [P, "run", "exp.toml", "--results", "res"], rc=1,
             err=r"load 1 .*every trial of a got nowhere \(no answer was 2xx or 3xx", server="status500",
             setup=R.experiment(duration="200ms"), outputs=("res", "res/*", "res/*/*")),
        # item 10: gates that tell nothing
        Case("statuses", "gate-slower-200-closed-loop",
             [*compare, "--trials", "5", "--fail-if", "slower>200%"], rc=2,
             err=r"in closed loop slower is how much lower the variant's requests/s is than the baseline's, from 0% "
                 r"to under 100%.*can never fail", contact=False, checks=(one_line,)),
        Case("statuses", "gate-slower-100-closed-loop", [*compare, "--trials", "5", "--fail-if", "slower>100%"],
             rc=2, err=r"can never fail; give a percentage below 100%", contact=False),
        Case("statuses", "gate-slower-200-open-loop",
             [P, "compare", "@URL@", "@URL@", "--rate", "100", "-n", "10", "--trials", "5", "--no-warmup", "-q",
              "--fail-if", "slower>200%"], rc=0, note="in open loop slower is the p99's rise: 200 % is a bound"),
        Case("statuses", "gate-run-slower-100", [P, "run", "exp.toml", "--fail-if", "slower>100%", "--results", "res"],
             rc=2, err=r"load 1 .*invalid --fail-if 'slower>100%': in closed loop", setup=R.experiment(trials=5),
             contact=False),
        Case("statuses", "gate-errors-over-100", [*bench, "--fail-if", "errors>100%", "@URL@"], rc=2,
             err=r"errors as a percentage is a share, from 0% to 100%, so errors>100% can never fail", contact=False),
        Case("statuses", "gate-errors-at-least-0", [*bench, "--fail-if", "errors>=0", "@URL@"], rc=2,
             err=r"errors>=0 always fails; to fail on any, use errors>0", contact=False),
        Case("statuses", "gate-rps-at-least-0", [*bench, "--fail-if", "rps>=0", "@URL@"], rc=2,
             err=r"rps is never below 0, so rps>=0 always fails", contact=False),
        Case("statuses", "gate-p99-below-0", [*bench, "--fail-if", "p99<0ms", "@URL@"], rc=2,
             err=r"p99 is never below 0 \(a latency\), so p99<0ms can never fail", contact=False),
        Case("statuses", "gate-non2xx-at-most-100", [*bench, "--fail-if", "non2xx<=100%", "@URL@"], rc=2,
             err=r"non2xx is a share, at most 100%, so non2xx<=100% always fails", contact=False),
        Case("statuses", "gate-errors-100-is-a-bound", [*bench, "-q", "--fail-if", "errors>=100%", "@URL@"], rc=0,
             note="errors>=100% fails when every request failed: a real bound"),
    ]  # fmt: skip


FAMILIES = {"statuses": fam_statuses}
