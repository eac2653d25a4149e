"""The decisions of ``pounder tune`` made again from real runs' recorded points (tests/data, recorded
by tests/data/record.py on this project's 2-core machine): no server is started, so each of these
runs in a second where the real run took a minute. What each real run was for, and what must hold
of its answer, is checked here as the end-to-end tests checked it live; every answer's printed
reasons are checked against its tables. The figures the decisions read were checked against
independent measurements by the end-to-end tests that still run for real (tests/e2e)."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

from pounder import PounderError
from pounder._units import MIB
from pounder.servers import apache_missing, phpfpm_missing
from pounder.tune import resume
from support.recorded import decided_again, recorded_copy
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

BUSY = ["tune-busy-1", "tune-busy-2", "tune-busy-3"]
RUNS = ["tune-demo", "tune-noleak", "tune-cpu", "tune-twice", "tune-apache", "tune-accesslog", "tune-io",
        "tune-outgrow", "tune-phpfpm-leak", "tune-busy-quiet", "tune-unsharing", *BUSY]


def _decided(name: str, tmp_path: Path) -> dict[str, Any]:
    return _decided_with_text(name, tmp_path)[0]


def _decided_with_text(name: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    if name == "tune-apache" and apache_missing(perl=True):
        pytest.skip(str(apache_missing(perl=True)))
    if name == "tune-phpfpm-leak" and phpfpm_missing():
        pytest.skip(str(phpfpm_missing()))
    data, text = decided_again(name, tmp_path)
    validate_results_dir(tmp_path / name)
    check_consistent(text, data)
    return data, text


@pytest.mark.parametrize("name", RUNS)
def test_every_recorded_run_is_decided_again_without_a_server(tmp_path: Path, name: str) -> None:
    data = _decided(name, tmp_path)
    assert 1 <= data["params"]["max_clients"] <= data["memory"]["max_clients"]
    # MaxRequestsPerChild is measured on the recommended pool, at the offered load
    if data["mrpc"]:
        assert {p["connections"] for p in data["mrpc"]} == {data["offered"]["connections"]}
        assert {p["children"] for p in data["mrpc"]} == {data["params"]["max_clients"]} or (
            data["children"]["decided_by"] in ("memory", "confirmation")), (data["mrpc"], data["children"])
    # the answer is never a pool its own figures show slower than the best at the offered load
    if data["pools"] is not None:
        chosen = next(p for p in data["pools"]["points"] if p["children"] == data["pools"]["chosen"])
        assert not (chosen["vs_best"] or {}).get("worse"), chosen
        assert not (chosen["p99_vs_lowest"] or {}).get("worse") or data["pools"]["p99_met"], chosen


def test_an_app_that_keeps_nothing_gets_unlimited_with_the_reason(tmp_path: Path) -> None:
    data = _decided("tune-noleak", tmp_path)
    choice = data["max_requests"]
    assert choice["leak"] is False
    assert data["params"]["max_requests"] == 0, choice["reasons"]
    assert any(r.startswith("no leak measured: MaxRequestsPerChild as large as possible") for r in choice["reasons"])
    # only unlimited and the largest value are measured (the cost reported, not deciding)
    assert sorted({p["max_requests"] for p in data["mrpc"]}) == [0, 1000]


def test_children_that_unshare_get_max_requests_from_the_curve_with_its_figure(tmp_path: Path) -> None:
    """gunicorn --preload whose 200,000 preloaded objects are read 80 a request (APP_OBJECTS): the
    children's shared memory falls logarithmically over their life, and in a budget of 124 MiB
    MaxRequestsPerChild is where their fitted private memory reaches their share of it."""
    data, text = _decided_with_text("tune-unsharing", tmp_path)
    life, choice = data["life"], data["max_requests"]
    snapshots = life["snapshots"]
    assert [round(s["requests"]) for s in snapshots] == [0, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]
    assert life["shared"]["fit"] == life["private"]["fit"] == "log"
    assert life["shared"]["log_r2"] > 0.95 > life["shared"]["linear_r2"]
    assert life["fall"] > 0.3 and not life["shared"]["stable"]
    # the figures stated are the snapshots' own: the measured change, and the fit through them
    loaded = snapshots[1:]
    assert life["shared"]["change"] == loaded[-1]["shared"] - loaded[0]["shared"]
    assert life["fall"] == pytest.approx((loaded[0]["shared"] - loaded[-1]["shared"]) / loaded[0]["shared"])
    tenfold = (loaded[-1]["shared"] - loaded[0]["shared"]) / math.log10(loaded[-1]["requests"] / loaded[0]["requests"])
    assert life["shared"]["log_slope"] * math.log(10) == pytest.approx(tenfold, rel=0.1)
    # MaxRequestsPerChild from the unsharing: where the log fit of private memory reaches the child's share
    assert not choice["leak"] and choice["decided_by"] == "unsharing"
    judged = choice["unsharing"]
    assert judged["decides"] and judged["limit"] == choice["child_limit_bytes"]
    fit = life["private"]
    reaches = math.exp((judged["limit"] - fit["log_intercept"]) / fit["log_slope"])
    assert judged["requests"] == int(reaches) == choice["memory_limit"]
    assert data["params"]["max_requests"] == int(str(judged["requests"])[:2]) * 10 ** (len(str(judged["requests"])) - 2)
    assert snapshots[-1]["requests"] < data["params"]["max_requests"]  # an extrapolation, and it says so
    assert f"reaches it at {judged['requests']:,} requests (extrapolated)" in judged["reason"]
    # every value was measured (as with a leak), and the trials' costs were read
    assert sorted({p["max_requests"] for p in data["mrpc"]}) == [0, 1000, 10000]
    # the text shows the curve, the figure and the remedy in Python's terms
    assert "1b. A child's life (2 children followed to 5,000 requests each" in text
    assert f"--max-requests          {data['params']['max_requests']}" in text
    assert "the children unshare" in text and "gc.freeze()" in text
    assert any(line.startswith(f"--max-requests {data['params']['max_requests']:,}: the children unshare")
               for line in data["why"]), data["why"]


def test_the_collectors_copies_stop_early_and_gc_freeze_keeps_the_pages_shared(tmp_path: Path) -> None:
    """tune-gc-collector and tune-gc-freeze: the same preloaded app (100,000 records the collector
    tracks; requests that build and drop 2,000 more) without and with gc.freeze() before the fork,
    followed to 4,000 requests per child. Without: the first full collection copies the pages, then
    the shared memory holds, so no MaxRequestsPerChild follows from it and the remedy is named; with:
    the shared memory holds from the start, higher after the same requests, and the memory bound
    fits more children."""
    collector, text = _decided_with_text("tune-gc-collector", tmp_path)
    frozen = _decided("tune-gc-freeze", tmp_path)
    dropped, held = collector["life"], frozen["life"]
    assert dropped["target"] == held["target"] == 4000
    assert dropped["fall"] > 0.25 and not dropped["shared"]["stable"]
    assert held["shared"]["stable"] and abs(held["fall"]) < 0.02
    # after the same requests, a frozen child shares more and keeps less to itself
    assert held["snapshots"][-1]["shared"] > dropped["snapshots"][-1]["shared"] + 10 * MIB
    assert held["snapshots"][-1]["private"] * 3 < dropped["snapshots"][-1]["private"]
    # the fall happened in the children's first requests and stopped: no limit from it
    judged = collector["max_requests"]["unsharing"]
    assert judged["decides"] and judged["requests"] is None and "replacing children does not help" in judged["reason"]
    assert collector["params"]["max_requests"] == frozen["params"]["max_requests"] == 0
    assert "gc.freeze() in the parent just" in " ".join(text.split())
    assert not frozen["max_requests"]["unsharing"]["decides"]
    assert frozen["memory"]["max_clients"] > 2 * collector["memory"]["max_clients"]


def test_the_leaking_demo_gets_a_finite_value_with_the_leak_named(tmp_path: Path) -> None:
    data = _decided("tune-demo", tmp_path)
    choice = data["max_requests"]
    assert choice["leak"] is True and data["params"]["max_requests"] > 0
    # the demo keeps 16 KB per request
    assert 15 * 1024 <= choice["growth_bytes_per_request"] <= 18 * 1024
    headroom = choice["child_limit_bytes"] - choice["child_start_bytes"]
    assert data["params"]["max_requests"] <= headroom / (15 * 1024)
    assert any("a leak of" in line for line in data["why"]), data["why"]


def test_a_php_script_keeping_100_kb_per_request_gets_a_finite_pm_max_requests(tmp_path: Path) -> None:
    """php-fpm running tests/apps/php/leak.php, which keeps 100 KB per request (recorded with a 1G
    budget and 4 children at most): the leak is measured (±25 %) and named, pm.max_requests is
    finite and keeps a child within its share of the budget; the memory bound is the formula's value
    from the stored sizes (±1); php-fpm's status page was read at every load and the text says so."""
    data, text = _decided_with_text("tune-phpfpm-leak", tmp_path)
    choice, memory = data["max_requests"], data["memory"]
    assert choice["leak"] is True and data["params"]["max_requests"] > 0
    assert 0.75 * 100 * 1024 <= choice["growth_bytes_per_request"] <= 1.25 * 100 * 1024, choice
    headroom = choice["child_limit_bytes"] - choice["child_start_bytes"]
    assert data["params"]["max_requests"] <= headroom / choice["growth_bytes_per_request"]
    assert any(line.startswith("pm.max_requests ") and "a leak of" in line for line in data["why"]), data["why"]
    assert "pm.max_requests = " + str(data["params"]["max_requests"]) in data["config"]
    # the memory bound: (RAM - parent USS - shared) / child USS from the stored sizes
    end = data["measure"]["end"]
    formula = (memory["ram"] - data["measure"]["parent"]["uss"] - end["median_shared"]) / end["max_uss"]
    assert abs(memory["max_clients"] - formula) <= 1, (memory, formula)
    assert memory["max_clients"] == math.floor(formula)
    # php-fpm's own view of every load of the sweep, said under the children table
    assert all(p["server_status"] is not None and p["server_status"]["trials"] == len(p["trials"])
               for p in data["sweep"])
    assert "php-fpm's status page, read before and after each load:" in text.replace("\n    ", " ")
    # php-fpm's listen queue and pounder's accept-queue share agree in direction
    for point in [*data["sweep"], *data["pools"]["points"]]:
        if point["server_status"]["listen_queue"]:
            assert point["queued"] > 0, point


def test_with_no_target_the_offered_load_is_as_many_clients_as_the_pool_may_have_children(tmp_path: Path) -> None:
    """tune-twice: no --clients, no --peak-rate, --max-children 3: the pools are compared at 3
    clients, closed loop, and the recommendation is the pool chosen there."""
    data = _decided("tune-twice", tmp_path)
    offered = data["offered"]
    assert offered["connections"] == min(3, data["memory"]["max_clients"]) and offered["rate"] is None
    assert {p["connections"] for p in data["pools"]["points"]} == {3}
    chosen = data["params"]["max_clients"]
    assert chosen == data["pools"]["chosen"] or data["children"]["decided_by"] == "confirmation"
    assert data["why"][0].startswith(f"--workers {data['pools']['chosen']}: the "), data["why"]


def test_a_cpu_bound_app_gets_fewer_children_than_the_bound(tmp_path: Path) -> None:
    data = _decided("tune-cpu", tmp_path)
    cores = data["cores"]
    assert data["memory"]["max_clients"] > 8 * cores  # memory would allow far more
    # throughput stops growing near the core count (the knee), and the CPU tables say so
    assert 1 <= data["children"]["throughput"] <= 2 * cores
    # the pools compared at 16 clients (--max-children): 16 children serve no more than a few, so a
    # smaller pool is chosen (issue 24: the recommended pool was slower than the knee at its load)
    assert data["offered"]["connections"] == 16 and data["children"]["decided_by"] == "offered-load"
    assert data["params"]["max_clients"] < 16, data["pools"]["reasons"]
    assert len(data["sweep"]) >= 3
    assert any("CPU-bound" in line for line in data["advice"]), data["advice"]


def _trials(data: dict[str, Any]) -> list[dict[str, Any]]:
    points = [*data["sweep"], *(data["pools"] or {}).get("points", [])]
    return [t for p in points for t in p["trials"]]


def test_a_busy_machine_gives_the_quiet_machines_answer(tmp_path: Path) -> None:
    """Issue 38: the CPU-bound app (5 ms of CPU per request, 2 cores) tuned on a quiet machine and
    three times while tests/support/burner.py burned 0.5-1 core in bursts (tests/data/record.py):
    each busy run recommends the quiet run's pool within one sweep step (1, 2, 4, 8), never fewer
    children than it takes to use the cores; every trial during which other processes took more
    than a quarter of the cores was measured again in its round, left out of the figures and named,
    and the advice names the neighbour's share."""
    quiet = _decided("tune-busy-quiet", tmp_path / "quiet")
    quiet_n, cores = quiet["params"]["max_clients"], quiet["cores"]
    assert cores == 2 and quiet_n >= cores
    for name in BUSY:
        data, text = _decided_with_text(name, tmp_path / name)
        n = data["params"]["max_clients"]
        assert max(n, quiet_n) <= 2 * min(n, quiet_n), (name, n, quiet_n, data["pools"]["reasons"])
        assert n >= cores, (name, data["pools"]["reasons"])
        trials = _trials(data)
        # the neighbour was there: other processes took 0.5-1 core in the median trial
        others = sorted(float(t["other_cores"]) for t in trials)
        assert 0.3 <= others[len(others) // 2] <= 1.2, (name, others)
        first = [t for t in trials if t.get("neighbour") and not t.get("again")]
        assert first, name
        for point in [*data["sweep"], *data["pools"]["points"]]:
            rounds = [t["trial"] for t in point["trials"] if t.get("neighbour") and not t.get("again")]
            assert point.get("neighbours", []) == sorted(set(rounds)), point
            assert point["counted"] == len(point["trials"]) - len(rounds)
            assert all(any(t.get("again") and t["trial"] == r for t in point["trials"]) for r in rounds)
            assert all(float(t["other_cores"]) > 0.25 * cores for t in point["trials"] if t["trial"] in rounds
                       and not t.get("again"))
        assert any("measured again" in line and "a neighbour's share of the CPU, not the application's" in line
                   for line in data["advice"]) or not any(
            "other processes" in line for line in data["advice"]), data["advice"]
        # "tune again" only names pools that a quieter run would have to tell apart
        for reason in data["pools"]["reasons"]:
            if "tune again" in reason:
                assert "to decide between" in reason, reason


def test_the_cpu_floor_decides_at_the_sweeps_own_points_and_says_so(tmp_path: Path) -> None:
    """tests/e2e/test_tune_busy.py's run (2 clients, the burner on): the sweep ran at the offered load,
    so its points are the pools; 1 child was not distinguishably slower than 2 in the noise, and the
    CPU floor (a child uses 0.95 of a core: 2 children for 2 cores) raised the pool to 2. The deciding
    fact names that rule, not "the smallest pool as good as the best", which 1 child would be
    (check_consistent holds it to the floor's own figures)."""
    data, text = _decided_with_text("tune-busy-floor", tmp_path)
    pools = data["pools"]
    assert pools["reasons"][0].startswith("the children sweep measured these pools at the offered load, 2 clients")
    assert data["params"]["max_clients"] == pools["chosen"] == pools["cpu_floor"]["children"] == 2
    one = next(p for p in pools["points"] if p["children"] == 1)
    assert not one["vs_best"]["worse"], one
    assert pools["why"].startswith("2: the fewest children that keep the server's 2 cores busy (0.95 of a core each)")
    assert "the smallest pool as " not in " ".join(text.split())


def test_the_spare_setting_is_never_one_measured_worse_than_the_defaults(tmp_path: Path) -> None:
    data = _decided("tune-apache", tmp_path)
    points = {p["name"]: p for p in data["spare"]}
    assert all(len(p["trials"]) >= 3 for p in points.values())
    chosen = data["spare_choice"]["name"]
    assert points[chosen]["chosen"] and sum(p["chosen"] for p in points.values()) == 1
    if chosen == "after":
        before, after = points["before"], points["after"]
        assert after["p99_ms"] < before["p99_ms"], (before, after)
        assert after["p99_low"] <= before["p99_high"], (before, after)  # not distinguishably worse
    assert "StartServers" in data["config"]
    # the snippet in Apache's own names, with the numbers decided
    for name, value in (("MaxRequestWorkers", data["params"]["max_clients"]),
                        ("MaxConnectionsPerChild", data["params"]["max_requests"])):
        found = re.search(rf"^\s+{name}\s+(\d+)$", data["config"], re.MULTILINE)
        assert found is not None and int(found[1]) == value, (name, data["config"])
    # the pools compared at the clients given (4), never above the memory bound
    chosen, bound = data["params"]["max_clients"], data["memory"]["max_clients"]
    assert data["offered"]["connections"] == 4 and chosen <= bound
    assert any(line.startswith("the memory bound: at most") for line in data["why"]), data["why"]


def test_a_run_is_decided_with_the_cpus_it_was_measured_on(tmp_path: Path) -> None:
    """Its points were measured with the server on the CPUs tune.json records: the decisions count
    those, wherever the run is resumed; a point still to measure on a machine that gives the server
    another number is refused (it could not be compared with the stored ones)."""
    here = len(os.sched_getaffinity(0))
    here = here if here < 4 else here - max(1, here // 4)  # the server's share here (pounder.pool.split_cpus)
    cpus, server = (8, 6) if here != 6 else (16, 12)  # the load generator had the last quarter
    run = recorded_copy("tune-noleak", tmp_path)
    manifest = json.loads((run / "tune.json").read_text())
    manifest["machine"]["cpus"] = cpus
    (run / "tune.json").write_text(json.dumps(manifest))
    for made in ("recommendation.json", "recommendation.txt"):
        (run / made).unlink()
    assert resume(run).cores == server
    (run / "points" / "children-2-t1.json").unlink()
    with pytest.raises(PounderError, match=rf"was measured with {server} CPUs for the server and this machine gives "
                                           rf"it {here}: children-2-t1 cannot be measured here"):
        resume(run)
    assert not (run / "servers").exists()


def test_an_access_log_is_the_target_and_its_mix_the_load(tmp_path: Path) -> None:
    """The recorded run tuned from a 60 s access log (tests/data/record.py: 70 % /sleep?ms=20, 30 %
    /sleep?ms=40; 200 requests in its busiest second): the target is that second, exactly; the mix
    is replayed in its proportions in every trial; Little's law sizes on the measured busy time,
    which is the app's known mean wait (26 ms) plus a little; the pools are compared open loop at
    the peak rate."""
    data = _decided("tune-accesslog", tmp_path)
    target = data["target"]
    assert target["peak_rate"] == 200  # the busiest second, found exactly
    assert target["source"].startswith("the access log's busiest second (200 requests at "), target
    for point in (tmp_path / "tune-accesslog" / "points").glob("children-*-t*.json"):
        targets = json.loads(point.read_text())["bench"]["options"]["targets"]
        weights = {t["url"].split("/", 3)[3]: t["weight"] for t in targets}
        assert set(weights) == {"sleep?ms=20", "sleep?ms=40"}
        assert weights["sleep?ms=20"] * 3 == weights["sleep?ms=40"] * 7, weights
    children = data["children"]
    busy = float(children["busy_s"])
    assert children["needed"] == math.ceil(200 * busy + 2 * math.sqrt(200 * busy) - 1e-9), children
    little = next(r for r in children["reasons"] if "Little's law" in r)
    assert little.endswith(f"for random arrivals: {children['needed']}"), little
    assert 0.026 <= busy <= 0.026 * 1.5, busy
    at = next(p for p in data["sweep"] if p["children"] == children["throughput"])
    if at["connections"] >= 2 * at["children"] and at["queued"] >= 0.9:
        assert "every child was busy" in little
    pools = data["pools"]
    assert data["offered"]["rate"] == 200 and children["decided_by"] == "offered-load"
    sizes = sorted(p["children"] for p in pools["points"])
    assert sizes[0] <= children["needed"] and sizes[-1] == 16, sizes
    assert data["params"]["max_clients"] == pools["chosen"]


def test_an_io_bound_app_gets_a_child_per_client_and_the_concurrency_arithmetic(tmp_path: Path) -> None:
    """Every request waits 30 ms without CPU: 32 clients need 32 children, whatever the cores (the
    throughput = children / 30 ms that this rests on is measured live in tests/pool/test_runner.py)."""
    data, text = _decided_with_text("tune-io", tmp_path)
    assert 28 <= data["params"]["max_clients"] <= 36, data["children"]
    reasons = " ".join(data["children"]["reasons"] + data["advice"])
    # the concurrency arithmetic: throughput = children / the time a child is held per request
    # (32 clients for 32 children: none waits for a free child, so the busy time is an upper bound)
    assert "throughput is concurrency" in reasons and "32 children serve at least 32 / " in reasons, reasons
    assert "so this is an upper bound" in reasons, reasons
    assert "because the load offered 32 concurrent clients" in reasons, reasons
    assert "waits on something else" not in text and "wait on something else" not in text
    at16 = next(p for p in data["sweep"] if p["children"] == 16)
    assert 0.6 * 16 / 0.030 <= at16["rps"] <= 16 / 0.030 * 1.05, at16["rps"]
    confirmation = data["confirmation"]
    assert confirmation["connections"] == 32 and confirmation["ok"], confirmation
    # the sweep ran at the offered load (32 clients): its points are the pools, none measured twice
    assert data["pools"]["reasons"][0].startswith("the children sweep measured these pools at the offered load")
    assert not list((tmp_path / "tune-io" / "points").glob("pool-*")), "a pool was measured again"
    assert {p["connections"] for p in data["pools"]["points"]} == {32}


def test_a_pool_that_outgrows_its_budget_is_caught_by_the_confirmation_and_lowered(tmp_path: Path) -> None:
    """Each child allocates 48 MiB once it is 6 s old: after the size measurement, before the
    confirmation. Kept-alive clients with no proxy hold a child each: the pool covers the 4
    connections (the memory bound, here), as large as the sizes step allows."""
    data = _decided("tune-outgrow", tmp_path)
    points = tmp_path / "tune-outgrow" / "points"
    first = json.loads((points / "confirm.json").read_text())["summary"]
    # the first confirmation measured the pool over the budget (the sizes step could not see it)
    assert first["footprint"] > data["memory"]["ram"], first
    # so the pool is lowered by the measured footprint and confirmed again
    confirmation = data["confirmation"]
    assert confirmation["lowered_from"] == {"children": first["children"], "footprint": first["footprint"]}
    fewer = min(first["children"] - 1, first["children"] * data["memory"]["ram"] // first["footprint"])
    assert confirmation["children"] == data["params"]["max_clients"] == max(1, fewer), (confirmation, first)
    assert data["children"]["decided_by"] == "confirmation"
    assert "the measurement beats the sizes' prediction" in data["children"]["reasons"][-1]
    again = json.loads((points / "confirm-lowered.json").read_text())["summary"]
    assert again["children"] == confirmation["children"] and again["footprint"] == confirmation["footprint"]


def test_an_io_bound_app_on_gthread_workers_gets_threads_for_workers(tmp_path: Path) -> None:
    """tune-gthread: gunicorn, 40 ms waits at 16 clients, workers x threads compared at the offered
    load (tests/data/record.py). Resumed without a server, the recording's decisions again; every
    shape serves the pool's 16 requests at once; the shape chosen is as fast as the best and has the
    smallest footprint (within 5 %) of those as fast, fewer workers than the one-thread pool; the
    recommendation and its configuration are that shape; the confirmation, another server start of
    it, measured the same footprint after its load as the threads step did."""
    data, text = decided_again("tune-gthread", tmp_path)
    validate_results_dir(tmp_path / "tune-gthread", finished=True)
    recorded = json.loads((recorded_copy("tune-gthread", tmp_path / "again") / "recommendation.json").read_text())
    where = ("tool_version", "server", "config")  # the pounder and the checkout it was recorded with
    assert {k: v for k, v in data.items() if k not in where} == {k: v for k, v in recorded.items() if k not in where}
    shapes = data["shapes"]
    points = shapes["points"]
    assert (points[0]["children"], points[0]["threads"]) == (data["pools"]["chosen"], 1) == (16, 1)
    for point in points:  # workers rounded up: never fewer requests at once, never a worker too many
        workers, threads = point["children"], point["threads"]
        assert workers * threads >= shapes["slots"] > (workers - 1) * threads, point
        assert {"footprint", "child_uss", "child_shared"} <= set(point) and point["footprint"] > 0
    chosen = next(p for p in points if (p["children"], p["threads"]) == (shapes["workers"], shapes["threads"]))
    fast = [p for p in points if not p["vs_best"]["worse"]]
    assert chosen in fast and chosen["footprint"] <= 1.05 * min(p["footprint"] for p in fast)
    assert shapes["threads"] > 1 and chosen["footprint"] < points[0]["footprint"], shapes["why"]
    assert (data["params"]["max_clients"], data["params"]["threads"]) == (shapes["workers"], shapes["threads"])
    assert 'worker_class = "gthread"' in data["config"] and f"threads = {shapes['threads']}" in data["config"]
    assert f"--workers {shapes['workers']} " in data["config"] and f"--threads {shapes['threads']} " in data["config"]
    confirmation = data["confirmation"]
    assert confirmation["ok"] and confirmation["children"] == shapes["workers"]
    assert abs(confirmation["footprint"] - chosen["footprint"]) <= 0.1 * chosen["footprint"], (confirmation, chosen)
    assert "\n4b. Workers x threads at the offered load, 16 clients (--clients)" in text


def test_the_gthread_runs_reasons_quote_only_figures_of_its_tables(tmp_path: Path) -> None:
    data, text = decided_again("tune-gthread", tmp_path)
    check_consistent(text, data)


@pytest.mark.parametrize(("name", "lock"), [("tune-gunicorn-cpu", "Python's GIL"), ("tune-puma-cpu", "Ruby's GVL")])
def test_cpu_bound_workers_keep_one_thread_with_the_lock_named(tmp_path: Path, name: str, lock: str) -> None:
    """tune-gunicorn-cpu, tune-puma-cpu: 10 ms of CPU per request at 8 clients on 2 cores (tests/data/record.py).
    Threads add nothing in the table: the one-thread pool is the best or as good, every shape with
    fewer workers is distinguishably slower or held back by the CPU floor; the recommendation is 1
    thread, and the reasons name the runtime's lock and the CPU a request used, as the table prints it."""
    data, text = decided_again(name, tmp_path)
    check_consistent(text, data)
    shapes = data["shapes"]
    points = {(p["children"], p["threads"]): p for p in shapes["points"]}
    reference = shapes["points"][0]
    assert reference["threads"] == 1 and (shapes["workers"], shapes["threads"]) == (reference["children"], 1)
    assert data["params"]["threads"] == 1 and not reference["vs_best"]["worse"]
    said = " ".join(" ".join(shapes["reasons"]).split())
    assert lock in said and "CPU-bound" in said, said
    assert f"used {reference['server_cpu_us']:,.0f} us of the server's CPU (srv CPU us/req)" in said, said
    for (workers, threads), point in points.items():
        if threads > 1:
            assert point["vs_best"]["worse"] or f"{workers} worker" in said, point


def test_puma_waiting_on_io_serves_the_clients_with_a_third_of_the_memory(tmp_path: Path) -> None:
    """tune-puma-io: issue 41's I/O-bound app on Puma (64 MB built in every worker, requests that
    wait 40 ms) at 32 clients (tests/data/record.py). The shape recommended is not distinguishably
    slower than the best measured, and its footprint, measured, is at most a third of the
    one-thread pool's that serves the same load; the reasons say threads replaced workers, under
    Ruby's GVL."""
    data, text = decided_again("tune-puma-io", tmp_path)
    check_consistent(text, data)
    shapes = data["shapes"]
    points = {(p["children"], p["threads"]): p for p in shapes["points"]}
    reference, chosen = shapes["points"][0], points[(shapes["workers"], shapes["threads"])]
    assert (reference["children"], reference["threads"]) == (32, 1) and shapes["threads"] > 1
    assert not chosen["vs_best"]["worse"]
    assert chosen["footprint"] * 3 <= reference["footprint"], (chosen["footprint"], reference["footprint"])
    said = " ".join(" ".join(shapes["reasons"]).split())
    assert "threads replaced workers" in said and "Ruby's GVL" in said
    assert f"threads {shapes['threads']}, {shapes['threads']}" in data["config"]
    # the leak's limit counts what the threads add to a worker: the chosen shape's USS against one thread's
    single = next(p for p in shapes["points"] if p["threads"] == 1)
    added = chosen["child_uss"] - single["child_uss"]
    assert added > 0 and data["max_requests"]["child_start_bytes"] == data["measure"]["warm"]["max_uss"] + added
