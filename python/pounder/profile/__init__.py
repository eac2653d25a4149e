"""``pounder profile``: where each child of a pre-forking server spends its time under load.

::

    from pounder.profile import profile, render_profile

    result = profile("http://127.0.0.1:8000/", server_pidfile="gunicorn.pid", rounds=3, duration="5s")
    print(render_profile(result, per_child=True))
    print(result.by_self[0].name, result.by_self[0].self_share)
    print(result.cost.throughput.ratio, result.cost.throughput.told)  # requests/s profiled / not, by round

The profiler follows the runtime the children run (:func:`make_profiler`): py-spy for Python
(:mod:`pounder.profile._pyspy`), Devel::NYTProf for Perl (``_nytprof``), perf for anything else
(``_perf``); each implements :class:`Profiler` (``_profiler``). The run is in ``_run``, the shares
in ``_stacks``, the result and its JSON form (``pounder/profile/1``) in ``_result``, the text in
``_render``.
"""

from pounder.profile._choose import PROFILERS, make_profiler, runtime
from pounder.profile._cost import CostFigure, ProfilerCost, profiler_cost, sign_test
from pounder.profile._embedded import (
    check_profiler,
    moved_rows,
    profiler_for,
    render_moved,
    save_profile,
    summary_lines,
)
from pounder.profile._flame import flame_svg
from pounder.profile._nytprof import NYTProf, is_perl_server, read_nytprof
from pounder.profile._perf import Perf, find_perf
from pounder.profile._profiler import UNITS, Profiler, Sampled
from pounder.profile._pyspy import PySpy, find_py_spy, parse_raw
from pounder.profile._render import DEFAULT_TOP, cost_lines, inclusive_rows, render_profile, trunk_note, weight_text
from pounder.profile._result import (
    PROFILE_SCHEMA,
    ChildProfile,
    MalformedProfileError,
    ProfileResult,
    ProfileTrial,
    load_profile,
    profile_from_dict,
)
from pounder.profile._run import DEFAULT_LOAD, DEFAULT_ROUNDS, DEFAULT_WARMUP, MAX_ROUNDS, ServerExitedError, profile
from pounder.profile._stacks import (
    FunctionShare,
    by_inclusive,
    folded_text,
    function_table,
    merged,
    parse_folded,
    per_process,
)

__all__ = [
    "ServerExitedError",
    "DEFAULT_LOAD",
    "DEFAULT_ROUNDS",
    "DEFAULT_TOP",
    "DEFAULT_WARMUP",
    "MAX_ROUNDS",
    "PROFILERS",
    "PROFILE_SCHEMA",
    "UNITS",
    "ChildProfile",
    "CostFigure",
    "FunctionShare",
    "MalformedProfileError",
    "NYTProf",
    "Perf",
    "ProfileResult",
    "ProfileTrial",
    "Profiler",
    "ProfilerCost",
    "PySpy",
    "Sampled",
    "by_inclusive",
    "check_profiler",
    "cost_lines",
    "find_perf",
    "find_py_spy",
    "flame_svg",
    "folded_text",
    "function_table",
    "inclusive_rows",
    "is_perl_server",
    "load_profile",
    "make_profiler",
    "merged",
    "moved_rows",
    "parse_folded",
    "parse_raw",
    "per_process",
    "profile",
    "profile_from_dict",
    "profiler_cost",
    "profiler_for",
    "read_nytprof",
    "render_moved",
    "render_profile",
    "runtime",
    "sign_test",
    "save_profile",
    "summary_lines",
    "trunk_note",
    "weight_text",
]
