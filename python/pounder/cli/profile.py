"""``pounder profile``: where each child of a pre-forking server spends its time under load, with the
profiler's own cost measured in the same run.

The command maps flags to :func:`pounder.profile.profile`; the rules and the text live in
``pounder.profile``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from pounder import _interrupt
from pounder._errors import PounderError, UsageError
from pounder._files import check_distinct, check_output_path, write_outputs
from pounder.cli._bridge import given
from pounder.cli._common import interrupted, json_option, option, print_warning, whole_number
from pounder.cli._load_options import (
    LOCAL_URL,
    SharedOptions,
    io_parameter,
    load_parameter,
    size_parameters,
    takes_local_load,
)
from pounder.cli._progress import live_progress
from pounder.load import LoadOptions
from pounder.profile import (
    DEFAULT_ROUNDS,
    DEFAULT_TOP,
    DEFAULT_WARMUP,
    MAX_ROUNDS,
    PROFILERS,
    ProfileResult,
    ProfileTrial,
    ServerExitedError,
    flame_svg,
    profile,
    render_profile,
)

_WHICH = "Which server"
_HOW = "Profiler"
_LOAD = "Load"
_OUT = "Output"
_MAX_TOP = 100_000
_MAX_SAMPLE_RATE = 1000

PROFILE_HELP = "\n\n".join(
    [
        "Profile every child of a pre-forking server while pounder loads it: which functions the time goes to, "
        "by self share (the function itself) and inclusive share (it and what it calls), with the profiler's own "
        "cost measured in the same run.",
        "pounder sends the warm-up requests unprofiled, then --rounds rounds of two trials of the same load, one "
        "unprofiled and one profiled, in alternating order (off on, on off, ...). The profiler samples only during "
        "the profiled trials' loads; children forked meanwhile (MaxRequestsPerChild) are followed. The cost is each "
        "round's ratio, profiled / unprofiled, of requests/s and p50 latency: their median and range; a cost is "
        "said only when the rounds tell it (a one-sided sign test, p < 0.05: 5 of 5 rounds dearer, 7 of 8, 9 of "
        "10), else 'no cost these "
        "rounds can tell'. A round with a failed request or cut short is left out, and named.",
        "The profiler follows what the children run (--profiler auto): py-spy for Python (gunicorn, uWSGI; pip "
        "install py-spy), Devel::NYTProf for Perl (mod_perl, Starman; apt-get install libdevel-nytprof-perl; the "
        "server must load it: pounder says which lines to add, and pounder tune --profile does it), perf for "
        "anything else (php-fpm, Ruby: native frames; needs perf and permission). py-spy and perf sample "
        "(--sample-rate per second); NYTProf times every call and counts calls.",
        "The server named must be the one behind the URL (checked before anything is sent; --behind-proxy for a "
        "backend such as php-fpm behind nginx). Its parent's own "
        "samples are kept apart: they are not the requests' work.",
        "Exit status: 0 done, 1 nothing sampled, every profiled trial got nowhere (no request succeeded, or no "
        "answer was 2xx or 3xx or of --expect-status; still written), a profiler failed, the server exited during "
        "the run (named; what was sampled until then is still written) or an output could not be written, 2 bad "
        "input or something to fix first (found before anything is sent), 130 interrupted (what was sampled is "
        "still written).",
    ]
)

Text = str | None


# fmt: off
URL_ARG = LOCAL_URL
BEHIND_PROXY = typer.Option("--behind-proxy", rich_help_panel=_WHICH, help=(
    "The server is a backend the URL reaches through a proxy (php-fpm behind nginx): it need not listen on the "
    "URL's port itself."))
PROFILER = option("--profiler", panel=_HOW, metavar="|".join(PROFILERS), help=(
    "The profiler (default auto: py-spy for Python, nytprof for Perl, perf for anything else)."))
SAMPLE_RATE = option("--sample-rate", panel=_HOW, metavar="N", help=(
    "Samples per second per process for py-spy and perf (default 100 and 99)."))
NATIVE = typer.Option("--native", rich_help_panel=_HOW, help="py-spy: include native (C) frames.")
ROUNDS = option("--rounds", panel=_HOW, metavar="N", help=(
    f"Rounds of an unprofiled and a profiled trial (default {DEFAULT_ROUNDS}; 5 or more can tell a cost)."))
WARMUP = option("--warmup", panel=_LOAD, metavar="N", help=(
    f"Requests sent before the first trial, not profiled (default {DEFAULT_WARMUP}; 0 for none)."))
JSON = json_option(_OUT, "pounder/profile/1", "text")
FLAME = option("--flamegraph", panel=_OUT, metavar="PATH", help=(
    "Write the children's stacks as a flame graph (SVG; open it in a browser: click to zoom, Ctrl-F to search)."))
KEEP = option("--keep", panel=_OUT, metavar="DIR", help=(
    "Keep the profiler's own files in this new (or empty) directory: NYTProf's merged nytprof.out (for "
    "nytprofhtml) and each child's, py-spy's raw stacks, perf's data."))
TOP = option("--top", panel=_OUT, metavar="N", help=f"Functions shown in each table (default {DEFAULT_TOP}).")
PER_CHILD = typer.Option("--per-child", rich_help_panel=_OUT, help=(
    "Also show each process: its share and its own top function (a child unlike the others shows here)."))
# fmt: on


def _trial_line(trial: ProfileTrial) -> None:
    what = "profiled  " if trial.profiled else "unprofiled"
    sys.stderr.write(f"pounder: round {trial.round} {what}: {trial.complete:,} requests, "
                     f"{trial.requests_per_s:,.0f} req/s, p50 {trial.p50_us / 1000:.2f} ms"
                     + (f", {trial.failed:,} failed" if trial.failed else "")
                     + (f", {trial.non_2xx:,} not 2xx" if trial.non_2xx else "")
                     + ("" if trial.whole else ", cut short") + "\n")  # fmt: skip


@contextmanager
def _before_sampling() -> Iterator[None]:
    """A signal before the first profiled trial (the warm-up) leaves nothing to write: say so."""
    try:
        yield
    except KeyboardInterrupt:
        raise interrupted("nothing was profiled yet, so nothing was written") from None


def _write(result: ProfileResult, json_out: str | None, flame_out: str | None, rows: int, per_child: bool) -> None:
    """The files, then the text (a file that cannot be written leaves the text printed: exit 1)."""
    if flame_out is not None and not result.stacks:
        print_warning("no flame graph written: nothing was sampled")
    title = f"{result.server_name} (pid {result.server_pid}): {result.url}"
    write_outputs([(flame_out if result.stacks else None, "--flamegraph",
                    lambda: flame_svg(result.stacks, title=title, unit=result.unit)),
                   (json_out, "--json", lambda: json.dumps(result.to_dict(), indent=2) + "\n")],
                  None if json_out == "-" else lambda: render_profile(result, top=rows, per_child=per_child))


@takes_local_load(
    _WHICH, _LOAD,
    *size_parameters(_LOAD, requests="A trial's requests.",
                     duration="A trial's length; default 3s when neither -n nor -d is given.",
                     rate="Then the cost shows in the latency, not in requests/s."),
    io_parameter(_LOAD),
    load_parameter("keepalive", _LOAD, "Default: on.", value=True),
    *(load_parameter(name, _LOAD) for name in ("method", "body", "content_type", "header", "cookie", "auth",
                                               "timeout")),
    before="behind_proxy",
)  # fmt: skip
def profile_command(
    ctx: typer.Context,
    url: Annotated[str, URL_ARG],
    *,
    behind_proxy: Annotated[bool, BEHIND_PROXY] = False,
    profiler: Annotated[str, PROFILER] = "auto",
    sample_rate: Annotated[Text, SAMPLE_RATE] = None,
    native: Annotated[bool, NATIVE] = False,
    rounds: Annotated[str, ROUNDS] = str(DEFAULT_ROUNDS),
    warmup: Annotated[str, WARMUP] = str(DEFAULT_WARMUP),
    json_path: Annotated[Text, JSON] = None,
    flamegraph: Annotated[Text, FLAME] = None,
    keep: Annotated[Text, KEEP] = None,
    top: Annotated[Text, TOP] = None,
    per_child: Annotated[bool, PER_CHILD] = False,
) -> None:
    """Profile a server's children under load (help: PROFILE_HELP)."""
    load, which = given(ctx, LoadOptions), given(ctx, SharedOptions)
    json_out = check_output_path(json_path, "--json", "JSON")
    flame_out = check_output_path(flamegraph, "--flamegraph", "SVG")
    if flame_out == "-":
        raise UsageError("--flamegraph needs a file, not '-'")
    check_distinct([("--json", json_out), ("--flamegraph", flame_out)],
                   [("--server-pidfile", which.server_pidfile), *load.input_files()])  # fmt: skip
    rows = DEFAULT_TOP if top is None else whole_number(top, "--top", _MAX_TOP)
    rate = None if sample_rate is None else whole_number(sample_rate, "--sample-rate", _MAX_SAMPLE_RATE)
    whole_number(rounds, "--rounds", MAX_ROUNDS)
    server = which.server()
    server_exited: ServerExitedError | None = None
    with live_progress(enabled=sys.stderr.isatty()) as on_progress, _before_sampling():
        try:
            result = profile(url, **server, profiler=profiler, rounds=rounds, warmup=warmup, rate=rate, native=native,
                             workdir=keep, behind_proxy=behind_proxy, on_progress=on_progress, on_trial=_trial_line,
                             options=load)  # fmt: skip
        except ServerExitedError as error:  # what was measured is written, as after a signal
            server_exited, result = error, error.result
    with _interrupt.deferred():  # a signal now waits until the outputs are whole
        _write(result, json_out, flame_out, rows, per_child)
    kept = [path for path in (json_out, flame_out if result.stacks else None) if path not in (None, "-")]
    if server_exited is not None:
        raise PounderError(f"{server_exited.cause} during the profile: the profile holds what was sampled until "
                           "then" + (f", written to {', '.join(kept)}" if kept else ""))  # fmt: skip
    profiled = [trial for trial in result.trials if trial.profiled]
    nowhere = [trial.nowhere for trial in profiled if trial.nowhere is not None]
    if profiled and not result.interrupted and len(nowhere) == len(profiled):  # the one rule of every load
        raise PounderError(f"every profiled trial got nowhere ({nowhere[-1]}): the profile is of the error "
                           "handling, not of the page (check the URL with pounder bench)")  # fmt: skip
    if result.interrupted:
        raise interrupted("the profile holds what was sampled until then" + (f", written to {', '.join(kept)}"
                                                                             if kept else ""))  # fmt: skip
