"""Records the real tuning runs that the decision tests read (tests/tune/test_recorded.py and the
report tests), into tests/data/tune-NAME: every point file as measured, tune.json and the
recommendation. The servers' logs are left out; the apps' folder in tune.json is written as
``@APPS@`` (the tests put their own checkout's back).

Record again when what a point stores changes, on a quiet machine, one run at a time:

    python tests/data/record.py             # every run (each takes one to three minutes)
    python tests/data/record.py tune-apache # one

The busy-machine runs (``tune-busy-*``) are the same CPU-bound app tuned on a quiet machine and three
times while tests/support/burner.py burns 0.5-1 core in bursts (started before the run, killed after it,
also on failure); record them together, the quiet one first, holding the machine for yourself.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pounder.pool import PhpFpmAdapter, PumaAdapter
from pounder.tune import Adapter, ApacheAdapter, GunicornAdapter, TuneOptions, demo_adapter, make_options, tune

DATA = Path(__file__).resolve().parent
sys.path.insert(0, str(DATA.parent))
from support.burner import burning  # noqa: E402  (tests/support, run as a script from anywhere)

APPS = DATA.parent / "apps"
PERL = APPS / "perl"
APPS_MARK = "@APPS@"


def _gunicorn() -> Adapter:
    return GunicornAdapter("wsgi_app:app", pythonpath=str(APPS))


def _gunicorn_env() -> Adapter:
    return GunicornAdapter("wsgi_app:app", pythonpath=str(APPS), env={"APP_DATA_MB": "1"})


def _gunicorn_objects() -> Adapter:
    return GunicornAdapter("wsgi_app:app", pythonpath=str(APPS), preload=True, env={"APP_OBJECTS": "200000"})


def _gunicorn_gc(freeze: str) -> Callable[[], Adapter]:
    """gunicorn --preload with 100,000 records the cycle collector tracks (tests/apps/wsgi_app.py),
    ``gc.freeze()`` at the end of the import or not (``APP_GC_FREEZE``)."""
    env = {"APP_GC_OBJECTS": "100000", "APP_GC_FREEZE": freeze}
    return lambda: GunicornAdapter("wsgi_app:app", pythonpath=str(APPS), preload=True, env=env)


def _phpfpm() -> Adapter:
    return PhpFpmAdapter(APPS / "php" / "pool.conf", root=APPS / "php")


def _puma() -> Adapter:
    return PumaAdapter(APPS / "rack_app.ru", env={"APP_DATA_MB": "64"})


def _apache() -> Adapter:
    return ApacheAdapter(perl_handlers={"/hello": "PounderTest::Hello"}, startup_pl=PERL / "startup.pl",
                         perl_lib=PERL / "lib")


def _apache_cpu() -> Adapter:
    return ApacheAdapter(perl_handlers={"/cpu": "PounderTest::Cpu"}, startup_pl=PERL / "startup_preload.pl",
                         perl_lib=PERL / "lib")


QUICK = {"quick": True, "point_duration": "1s"}
ONE_THREAD = {"sweep_threads": False}
"""The runs recorded before tune compared workers x threads, about something else: recorded again as they were."""
ACCESS_LOG = Path(tempfile.gettempdir()) / "pounder-record-access.log"


def access_log() -> Path:
    """60 s of a combined log: 70 % /sleep?ms=20, 30 % /sleep?ms=40 each second; 200 requests in
    second 41, 60 or fewer in the others. The mean wait: 0.7 x 20 + 0.3 x 40 = 26 ms."""
    t0 = datetime(2026, 11, 23, 10, 0, 0, tzinfo=timezone.utc)
    lines = []
    for second in range(60):
        count = 200 if second == 41 else 10 * (3 + second % 4)
        moment = (t0 + timedelta(seconds=second)).strftime("%d/%b/%Y:%H:%M:%S %z")
        for index in range(count):
            target = "/sleep?ms=20" if index % 10 < 7 else "/sleep?ms=40"
            lines.append(f'10.0.0.{index % 7} - - [{moment}] "GET {target} HTTP/1.1" 200 31 "-" "browser"\n')
    ACCESS_LOG.write_text("".join(lines))
    return ACCESS_LOG

def _busy_options() -> TuneOptions:
    return make_options(path="/cpu?ms=5", ram="2G", mrpc="0", max_children=8, **QUICK, **ONE_THREAD)


BUSY_SEEDS = {"tune-busy-1": 1, "tune-busy-2": 2, "tune-busy-3": 3, "tune-busy-floor": 7}
"""The busy runs and the burner's seed in each (tests/support/burner.py)."""

# name: (the server, the options, what the run is for)
RUNS: dict[str, tuple[Callable[[], Adapter], Callable[[], TuneOptions], str]] = {
    "tune-demo": (demo_adapter, lambda: make_options(ram="512M", quick=True, point_duration="2s", mrpc="0,1000,100"),
                  "pounder tune --demo: a fixed pool, 16 KB leaked per request; the report's page"),
    "tune-apache": (_apache, lambda: make_options(path="/hello", ram="256M", clients=4, mrpc="0,1000",
                                                  max_children=4, **QUICK),
                    "Apache + mod_perl answering /hello at 4 clients: the spare-server bursts, the report's page"),
    "tune-apache-cpu": (_apache_cpu, lambda: make_options(path="/cpu?ms=4", ram="256M", mrpc="0", max_children=4,
                                                          clients=4, measure_children=2, confirm=False, **QUICK),
                        "Apache + mod_perl burning 4 ms of CPU per request at 4 clients, no confirmation: the pool "
                        "tests/e2e/test_tune_offered_load.py checks with `pounder run` against another size"),
    "tune-noleak": (_gunicorn, lambda: make_options(path="/", ram="1G", mrpc="0,1000,100", max_children=2, **QUICK,
                                                    **ONE_THREAD),
                    "an app that keeps nothing per request: MaxRequestsPerChild unlimited"),
    "tune-cpu": (_gunicorn, lambda: make_options(path="/cpu?ms=10", mrpc="0", max_children=16, **QUICK,
                                                 **ONE_THREAD),
                 "10 ms of CPU per request: the knee near the cores, a smaller pool than the bound"),
    "tune-accesslog": (_gunicorn, lambda: make_options(access_log=access_log(), ram="2G", max_children=16, mrpc="0",
                                                       **QUICK, **ONE_THREAD),
                       "an access log as the target: its busiest second (200 requests) and its mix (7 : 3)"),
    "tune-twice": (_gunicorn, lambda: make_options(path="/cpu?ms=4", ram="1G", max_children=3, mrpc="0", **QUICK,
                                                   **ONE_THREAD),
                   "the run tests/e2e/test_tune_method.py makes again and compares with this one"),
    "tune-outputs": (_gunicorn_env, lambda: make_options(path="/", mrpc="0", max_children=2, measure_children=1,
                                                         requests_per_child=20, confirm=False, quick=True,
                                                         point_duration="500ms", **ONE_THREAD),
                     "what a finished run leaves (the recommended command line and gunicorn.conf.py, resume): "
                     "tests/e2e/test_tune_outputs.py"),
    "tune-io": (_gunicorn, lambda: make_options(path="/sleep?ms=30", clients=32, ram="4G", mrpc="0", max_children=48,
                                                **QUICK, **ONE_THREAD),
                "an I/O-bound app (30 ms waits) at 32 clients: a child per client, the concurrency arithmetic"),
    "tune-fleet": (_gunicorn, lambda: make_options(path="/sleep?ms=30", peak_rate="150/s", ram="256M", mrpc="0",
                                                   max_children=2, measure_children=2, **QUICK, **ONE_THREAD),
                   "a peak (150 req/s) beyond what one server of 2 workers serves (at most 67 req/s): the fleet's "
                   "arithmetic and the container's resources from the confirmation's cgroup peak"),
    "tune-outgrow": (_gunicorn, lambda: make_options(path="/age?after_s=6&mib=48", ram="160M", mrpc="0",
                                                     max_children=4, measure_children=2, clients=4, keepalive=True,
                                                     proxy=False, **QUICK, **ONE_THREAD),
                     "children that grow 48 MiB once 6 s old: the confirmation catches the pool over budget"),
    "tune-phpfpm-leak": (_phpfpm, lambda: make_options(path="/leak.php", ram="1G", mrpc="0,1000,200", max_children=4,
                                                       measure_children=2, **QUICK),
                         "php-fpm running leak.php (100 KB kept per request): a finite pm.max_requests with the "
                         "leak named, the memory bound from the sizes, php-fpm's status page read at every load"),
    "tune-pod": (demo_adapter, lambda: make_options(ram="512M", cpus="1", quick=True, point_duration="1s",
                                                   max_children=2, mrpc="0"),
                 "the demo in a pod of 1 CPU and 512 MiB (--cpus 1): every load in a cgroup with that quota, the "
                 "decisions sized for 1 CPU, the pod line, tests/report's pods compared"),
    "tune-puma": (_puma, lambda: make_options(path="/", ram="1G", mrpc="0", max_children=2, measure_children=2,
                                              **QUICK, **ONE_THREAD),
                  "Puma without preload_app! (its default), 64 MB built at load in every worker, --quick (no run "
                  "with preloading): the advice estimates what preload_app! would allow, and the configuration "
                  "printed beside it must not contradict it"),
    "tune-unsharing": (_gunicorn_objects, lambda: make_options(path="/touch", ram="124M", mrpc="0,10000,1000",
                                                               max_children=2, measure_children=2, life=5000,
                                                               confirm=False, **QUICK),
                       "gunicorn --preload with 200,000 small objects built at import, 80 of them read per request "
                       "(/touch): reference counts copy their pages, the children's shared memory falls about "
                       "logarithmically over their life (--life 5000), and in a budget of 124 MiB "
                       "MaxRequestsPerChild follows from it (no confirmation: not what this run is for)"),
    **{name: (_gunicorn_gc(freeze), lambda: make_options(path="/gc/build", ram="2G", mrpc="0,2000,500", max_children=2,
                                                         measure_children=2, life=4000, confirm=False, **QUICK,
                                                         **ONE_THREAD), why)
       for name, freeze, why in (
           ("tune-gc-collector", "0", "gunicorn --preload, 100,000 records the collector tracks, requests that build "
            "and "
            "drop 2,000 more (/gc/build): the full collections write to every preloaded record, the children's "
            "shared memory falls over their life (--life 4000) and MaxRequestsPerChild follows from it"),
           ("tune-gc-freeze", "1", "the same app with gc.freeze() at the end of the import: the same requests leave "
            "the shared memory where it was"))},
    "tune-busy-quiet": (_gunicorn, _busy_options,
                        "5 ms of CPU per request on a quiet machine: the answer the busy runs must give"),
    **{name: (_gunicorn, _busy_options, f"the same app while a neighbour burns 0.5-1 core in bursts (seed {seed})")
       for name, seed in BUSY_SEEDS.items() if name != "tune-busy-floor"},
    "tune-gthread": (_gunicorn, lambda: make_options(path="/sleep?ms=40", clients=16, ram="2G", mrpc="0",
                                                     max_children=16, measure_children=2, **QUICK),
                     "gunicorn, requests that wait 40 ms at 16 clients: workers x threads compared, gthread workers "
                     "with fewer of them serve as fast with less memory"),
    "tune-gunicorn-cpu": (_gunicorn, lambda: make_options(path="/cpu?ms=10", clients=8, ram="2G", mrpc="0",
                                                          max_children=8, measure_children=2, confirm=False, **QUICK),
                          "gunicorn, 10 ms of CPU per request at 8 clients: threads add nothing (the GIL)"),
    "tune-puma-io": (_puma, lambda: make_options(path="/sleep?ms=40", clients=32, ram="4G", mrpc="0", max_children=32,
                                                 measure_children=2, **QUICK),
                     "Puma, 64 MB built in every worker (no preload_app!), requests that wait 40 ms at 32 clients "
                     "(issue 41: an I/O-bound app): fewer workers with threads serve as fast with less memory"),
    "tune-puma-cpu": (_puma, lambda: make_options(path="/cpu?ms=10", clients=8, ram="4G", mrpc="0", max_children=8,
                                                  measure_children=2, confirm=False, **QUICK),
                      "Puma, 10 ms of CPU per request at 8 clients: threads add nothing (the GVL)"),
    "tune-busy-floor": (_gunicorn, lambda: make_options(path="/cpu?ms=5", ram="2G", mrpc="0", clients=2, max_children=2,
                                                        measure_children=2, confirm=False, **QUICK, **ONE_THREAD),
                        "tests/e2e/test_tune_busy.py's run (seed 7): 2 clients, the sweep's points are the pools, "
                        "1 child not distinguishably slower, the CPU floor raises it to 2 (its own wording)"),
}


def record(name: str) -> Path:
    """Runs ``name`` for real (loopback only) and writes it to tests/data/NAME."""
    adapter, options, _ = RUNS[name]
    with tempfile.TemporaryDirectory(prefix="pounder-record-", dir="/tmp") as folder:
        Path(folder).chmod(0o755)  # Apache's children (www-data when we are root) write their logs here
        run = Path(folder) / name
        with burning(BUSY_SEEDS[name]) if name in BUSY_SEEDS else nullcontext():
            tune(adapter(), options(), results=run, log=lambda line: print(f"{name}: {line}", file=sys.stderr))
        shutil.rmtree(run / "servers", ignore_errors=True)
        (run / ".pounder.lock").unlink(missing_ok=True)
        manifest = run / "tune.json"
        stored = json.loads(manifest.read_text())
        stored["adapter"] = json.loads(json.dumps(stored["adapter"]).replace(str(APPS), APPS_MARK))
        manifest.write_text(json.dumps(stored, separators=(",", ":")))
        target = DATA / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(run, target)
    return target


if __name__ == "__main__":
    for chosen in sys.argv[1:] or list(RUNS):
        print(record(chosen))
