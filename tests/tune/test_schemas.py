"""The JSON schemas of a ``pounder tune`` results directory: tune.json (``pounder/tune/2``),
points/<key>.json (``pounder/tune-point/2``) and recommendation.json (``pounder/tune-result/2``).

No server is started. The directory checked is a real run's, kept in tests/data/tune-demo
(``pounder tune --demo``: gunicorn, quick, a 512M budget, 3 interleaved trials per point, the
pools at the offered load, the confirmation; only the server sampler's per-child list of each
bench is cut to its first entry, to keep it small); a run with the threads step is tests/data/tune-gthread
(gunicorn's gthread workers: workers x threads compared at the offered load). ``validate_results_dir``
(tests/support/schemas.py) checks every file; the end-to-end tests call it on fresh runs (every
adapter, spare servers too). The aggregated points of recommendation.json (sweep, pools, mrpc,
spare) are checked against the trial files with the package's own functions. Documents of earlier
/2 versions (without the fields added since) stay valid.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pounder._figures import WIDE
from pounder.pool import POINT_SCHEMA, SUMMARY_SCHEMA
from pounder.tune import RESULT_SCHEMA, TUNE_SCHEMA, MemoryBound, Target, TuneOptions
from pounder.tune._mrpc import mrpc_losses
from pounder.tune._points import aggregate_trials, counts, replaced, trials_by
from pounder.tune._pools import OfferedLoad, choose_pool, offered_load
from pounder.tune._shapes import choose_shape
from pounder.tune._spare import aggregate_spare, reference_us
from support.recorded import write_summary
from support.schemas import schema, validate, validate_results_dir

DATA = Path(__file__).resolve().parents[1] / "data"
DEMO = DATA / "tune-demo"
GTHREAD = DATA / "tune-gthread"
TUNE_SCHEMAS = ("tune", "tune-point", "tune-result")


@pytest.fixture
def demo_dir(tmp_path: Path) -> Path:
    """A copy of the real run (a test may change it)."""
    return Path(shutil.copytree(DEMO, tmp_path / "demo"))


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


# ---------------------------------------------------------------------------------------------
# The schemas themselves


@pytest.mark.parametrize("name", TUNE_SCHEMAS)
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    contents = schema(name)
    jsonschema.Draft202012Validator.check_schema(contents)
    assert contents["$id"].endswith(f"/{name}.schema.json")
    expected = {"tune": TUNE_SCHEMA, "tune-point": POINT_SCHEMA, "tune-result": RESULT_SCHEMA}[name]
    assert contents["properties"]["schema"]["const"] == expected


def test_schemas_are_packaged() -> None:
    """Every schema file matches an include rule of [tool.maturin] (so wheels carry them)."""
    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parents[2]
    include = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["maturin"]["include"]
    for path in (root / "python" / "pounder" / "schemas").glob("*.schema.json"):
        relative = str(path.relative_to(root))
        assert any(fnmatch.fnmatch(relative, rule) for rule in include), relative


# ---------------------------------------------------------------------------------------------
# Documents written by the real code


def test_results_dir_follows_the_schemas() -> None:
    files = validate_results_dir(DEMO, finished=True)
    keys = {path.stem for path in files if path.parent.name == "points"}
    assert {"sizes", "children-1-t1", "children-1-t3", "confirm"} <= keys
    for step in ("pool", "mrpc"):
        assert any(key.startswith(f"{step}-") for key in keys), step
    assert all(re.fullmatch(r"mrpc-\d+-\d+-at-\d+-t\d+", key) for key in keys if key.startswith("mrpc-"))
    for path in files:
        validate(load(path), {"tune.json": "tune", "recommendation.json": "tune-result"}.get(path.name, "tune-point"))
    manifest = load(DEMO / "tune.json")
    back = TuneOptions.from_dict(manifest["options"]).to_dict()
    assert {key: back[key] for key in manifest["options"]} == manifest["options"]  # every option is read
    # an option added since this run was stored reads as its default, but the threads: a run stored before
    # tune compared workers x threads was measured with one thread per worker
    defaults = TuneOptions(sweep_threads=False).to_dict()
    assert {key: back[key] for key in set(back) - set(manifest["options"])} == \
        {key: defaults[key] for key in set(back) - set(manifest["options"])}


_SCHEMA_NAMES = {TUNE_SCHEMA: "tune", POINT_SCHEMA: "tune-point", RESULT_SCHEMA: "tune-result",
                 SUMMARY_SCHEMA: "tune-summary"}


def test_every_tune_document_in_the_test_data_is_valid() -> None:
    """Whatever tests/data holds of pounder tune (documents of older schema versions aside) follows
    the schemas, and every results directory is whole. A document of a results directory is
    validated once, by ``validate_results_dir`` (formats too), the rest here (each validation of a
    recorded run's ~500 documents takes seconds)."""
    whole = {file for manifest in sorted(DATA.rglob("tune.json")) for file in validate_results_dir(manifest.parent)}
    checked = []
    for path in sorted(DATA.rglob("*.json")):
        document = load(path)
        name = _SCHEMA_NAMES.get(document.get("schema")) if isinstance(document, dict) else None
        if name is not None:
            if path not in whole:
                validate(document, name)
            checked.append(path)
    assert DEMO / "recommendation.json" in checked and len(checked) > 10


def test_an_interrupted_run_is_valid_without_a_recommendation(demo_dir: Path) -> None:
    (demo_dir / "recommendation.json").unlink()
    (demo_dir / "recommendation.txt").unlink()
    for point in (demo_dir / "points").glob("mrpc-*"):
        point.unlink()
    write_summary(demo_dir)
    files = validate_results_dir(demo_dir, finished=False)
    assert demo_dir / "summary.json" in files
    assert [p.name for p in files][0] == "tune.json" and len(files) > 3
    with pytest.raises(AssertionError, match="recommendation.json: missing"):
        validate_results_dir(demo_dir, finished=True)


def _older(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of a recommendation.json as an earlier /2 version wrote it: none of the fields
    added since (offered, pools, spare_choice, why; the points' p99 interval and other_cores, the
    trials' rate and other_cores; the throughput check)."""
    older = copy.deepcopy(document)
    for key in ("offered", "pools", "spare_choice", "why"):
        older.pop(key)
    for point in [*older["sweep"], *older["mrpc"]]:
        for key in ("p99_low", "p99_high", "other_cores"):
            point.pop(key)
        for trial in point["trials"]:
            trial.pop("rate")
            trial.pop("other_cores")
    if older["children"]["decided_by"] == "offered-load":
        older["children"]["decided_by"] = "memory"
    if older["confirmation"] is not None:
        older["confirmation"].pop("other_cores")
        older["confirmation"]["checks"] = [c for c in older["confirmation"]["checks"] if c["name"] != "throughput"]
    older["spare"] = []
    return older


def test_documents_of_earlier_versions_stay_valid() -> None:
    """The fields added to /2 since (offered, pools, ...) are optional: older runs still read."""
    validate(_older(load(DEMO / "recommendation.json")), "tune-result")
    trial = load(next((DEMO / "points").glob("mrpc-*-t1.json")))
    summary = trial["summary"]
    summary.pop("rate")
    summary.pop("other_cores")
    trial["key"] = f"mrpc-{summary['children']}-{summary['max_requests']}-t1"  # the key before -at-CONNECTIONS
    validate(trial, "tune-point")
    # a spare point of an earlier version: one burst, no trial number, a single point in the result
    bench_figures = {key: summary[key] for key in schema("tune-point")["$defs"]["bench_figures"]["required"]}
    burst = {"children": 2, "start_servers": 1, "min_spare": 1, "max_spare": 2, "connections": 4, "idle_children": 1,
             "series": [{"second": 0, "complete": 10, "p99_us": 900}], "steady_p99_ms": 0.9, "first_p99_ms": 0.9,
             **bench_figures}
    validate({**trial, "key": "spare-before", "step": "spare", "summary": burst}, "tune-point")
    older = _older(load(DEMO / "recommendation.json"))
    older["spare"] = [{**burst, "name": "before", "reference_p99_ms": 0.9, "burst_s": 0}]
    validate(older, "tune-result")
    with pytest.raises(jsonschema.ValidationError):  # a spare trial file names its trial
        validate({**trial, "key": "spare-before-t1", "step": "spare", "summary": burst}, "tune-point")
    validate({**trial, "key": "spare-before-t1", "step": "spare", "summary": {**burst, "trial": 1}}, "tune-point")


def _recorded(stored: dict[str, Any], again: dict[str, Any]) -> dict[str, Any]:
    """``again`` (aggregated now) as a point recorded before the accept queue was sampled holds it."""
    for key in ("queued", "front_cores"):  # sampled since issues 17 and 27
        if key not in stored:
            assert again.pop(key) is None
    return again


def _aggregated(trials: list[dict[str, Any]], rounds: int) -> dict[str, Any]:
    """A sweep-like point as the session stores it: aggregated, ``remeasured`` after more rounds."""
    point = aggregate_trials(trials)
    if any(int(t["trial"]) > rounds for t in trials):  # not a round measured again for a busy neighbour
        point["remeasured"] = True
    return point


def check_documents(root: Path) -> None:
    """The aggregated points of ``root``'s recommendation.json are the trial files' aggregate; the
    rest as the documentation says (docs/reference/results.md)."""
    points = {p.stem: load(p) for p in (root / "points").glob("*.json")}
    result = load(root / "recommendation.json")
    options = load(root / "tune.json")["options"]
    offered = result["offered"]
    for key, document in points.items():
        assert document["key"] == key
        assert document["started_at"] <= document["finished_at"]
        summary = document["summary"]
        base = key.removesuffix("-again") if summary.get("again") else key  # a round measured once more
        if document["step"] in ("children", "pools", "threads", "max-requests"):
            assert base.endswith(f"-t{summary['trial']}")
            assert summary["children"] == document["params"]["max_clients"]
            assert summary["max_requests"] == document["params"]["max_requests"]
            assert summary["connections"] == document["bench"]["options"]["load"]["connections"]
            assert "other_cores" in summary and "rate" in summary
        if document["step"] == "pools":
            assert base == f"pool-{summary['children']}-t{summary['trial']}"
            assert (summary["connections"], summary["rate"]) == (offered["connections"], offered["rate"])
        if document["step"] == "threads":
            assert base == f"threads-{summary['children']}x{summary['threads']}-t{summary['trial']}"
            assert summary["threads"] == document["params"]["threads"]
            assert (summary["connections"], summary["rate"]) == (offered["connections"], offered["rate"])
        if "threads" in summary:  # measured with the threads of each worker: the memory after the load too
            assert {"footprint", "child_uss", "child_shared"} <= set(summary)
        if document["step"] == "max-requests":
            shape = f"x{summary['threads']}" if "threads" in summary else ""
            assert base == f"mrpc-{summary['children']}{shape}-{summary['max_requests']}-at-" \
                          f"{summary['connections']}-t{summary['trial']}"
            assert (summary["connections"], summary["rate"]) == (offered["connections"], offered["rate"])
        if document["step"] == "spare":
            assert re.fullmatch(rf"spare-(before|after)-t{summary['trial']}", key)
    sizes = points["sizes"]
    assert result["measure"] == sizes["summary"]
    assert sizes["summary"]["requests_first"] == sum(sizes["bench"][0]["requests"][k] for k in ("complete", "failed"))
    by_step: dict[str, list[dict[str, Any]]] = {}
    for document in sorted(points.values(), key=lambda d: bool(d["summary"].get("again"))):  # each after its first
        by_step.setdefault(document["step"], []).append(document["summary"])
    rounds = int(options["trials"])

    children = trials_by(by_step["children"], "children")
    assert [p["children"] for p in result["sweep"]] == sorted(children)
    for point in result["sweep"]:
        again = _recorded(point, _aggregated(list(children[point["children"]]), rounds))
        assert point == again
        assert point["counted"] <= len(point["trials"]) and point["rps_low"] <= point["rps"] <= point["rps_high"]
        assert point["p99_low"] <= point["p99_ms"] <= point["p99_high"]

    # the pools: the offered load as the target and the memory bound make it, the candidates
    # aggregated from their trials and compared by choose_pool
    target = Target(**result["target"])
    memory = MemoryBound(**result["memory"])
    assert offered == offered_load(target, memory, int(options["max_children"])).to_dict()
    pools = result["pools"]
    if offered["held"]:
        assert pools is None and "pools" not in by_step
    else:
        if "pools" in by_step:
            candidates = trials_by(by_step["pools"], "children")
            aggregated = [_recorded(stored, _aggregated(list(candidates[n]), rounds))
                          for stored, n in zip(pools["points"], sorted(candidates), strict=True)]
        else:  # the children sweep ran at the offered load: its points are the candidates, as its reasons say
            assert pools["reasons"][0].startswith("the children sweep measured these pools at the offered load")
            swept = {p["children"]: p for p in result["sweep"]}
            aggregated = [swept[p["children"]] for p in pools["points"]]
            candidates = {p["children"]: p["trials"] for p in aggregated}
        again = choose_pool(aggregated, OfferedLoad(**offered), target, tolerance=float(options["tolerance"]),
                            cores=float(result["cores"]), sweep=result["sweep"])
        # the decisions as stored (the wording of the reasons may have changed since the run); a run
        # stored before the comparisons were paired (no vs_best pairs) and the CPU floor: its choice
        text = ("why", "reasons") if "cpu_floor" in pools else ("why", "reasons", "points", "cpu_floor")
        assert {k: v for k, v in pools.items() if k not in text} == {
            k: v for k, v in again.to_dict().items() if k not in text}
        assert [p["children"] for p in pools["points"]] == sorted(candidates)
        assert pools["offered"] == offered
        if result["children"]["decided_by"] not in ("memory", "confirmation"):
            assert result["children"]["decided_by"] == "offered-load"
            # the shapes start from the pool chosen with one thread per worker, and choose its workers
            assert pools["chosen"] == (result["shapes"]["points"][0]["children"] if "shapes" in result
                                       else result["children"]["chosen"])
            pool_line = f"{result['names']['max_clients']} {pools['why']}"
            assert result["why"][0 if "shapes" not in result else 1] == (
                pool_line if "shapes" not in result else f"with one thread per worker, {pool_line}")

    mrpc = trials_by(by_step.get("max-requests", []), "max_requests")
    again_mrpc = mrpc_losses([_aggregated(list(mrpc[p["max_requests"]]), rounds) for p in result["mrpc"]])
    expected = [_recorded(p, again.to_dict()) for p, again in zip(result["mrpc"], again_mrpc, strict=True)]
    paired = any("pairs" in (p["vs_unlimited"] or {}) for p in result["mrpc"])
    if result["mrpc"] and not paired:  # stored before the comparisons were paired: the points as aggregated
        expected = [{**p, "vs_unlimited": stored["vs_unlimited"]} for p, stored in zip(expected, result["mrpc"],
                                                                                       strict=True)]
    assert result["mrpc"] == expected
    assert [p["vs_unlimited"] is None for p in result["mrpc"]] == [p["max_requests"] == 0 for p in result["mrpc"]]
    assert {p["children"] for p in result["mrpc"]} <= {result["children"]["chosen"], pools and pools["chosen"]}

    # the spare settings: every trial of both against the same reference
    spare = by_step.get("spare", [])
    named: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(k for k in points if k.startswith("spare-")):
        named.setdefault(key.split("-")[1], []).append(points[key]["summary"])
    reference = reference_us([t for group in named.values() for t in group])
    assert [p["name"] for p in result["spare"]] == [n for n in ("before", "after") if n in named]
    for point in result["spare"]:
        trials = sorted(named[point["name"]], key=lambda t: int(t["trial"]))
        assert point == {**aggregate_spare(point["name"], trials, reference).to_dict(),
                         "chosen": point["name"] == result["spare_choice"]["name"]}
    assert (result["spare_choice"] is None) == (not spare)
    if spare:
        chosen = next(p for p in result["spare"] if p["chosen"])
        assert (result["params"]["start_servers"], result["params"]["min_spare"], result["params"]["max_spare"]) == \
            (chosen["start_servers"], chosen["min_spare"], chosen["max_spare"])
        assert result["spare_choice"]["why"] in result["why"]

    confirm = result["confirmation"]
    stored = points["confirm-lowered" if "lowered_from" in confirm else "confirm"]["summary"]
    assert {k: v for k, v in confirm.items() if k not in ("checks", "ok", "lowered_from")} == stored
    assert confirm["ok"] == all(check["ok"] for check in confirm["checks"])
    assert (confirm["connections"], confirm["rate"]) == (offered["connections"], offered["rate"])
    names = [check["name"] for check in confirm["checks"]]
    assert ("throughput" in names) == (pools is not None)
    if pools is not None:
        best = next(p for p in pools["points"] if p["children"] == pools["best"])
        shapes = result.get("shapes")
        if shapes is not None:  # held against the best shape at the offered load
            best = next(p for p in shapes["points"] if [p["children"], p["threads"]] == list(shapes["best"]))
        check = confirm["checks"][names.index("throughput")]
        skipped = replaced(best["trials"])  # the trials that count: a round measured again counts its second
        slowest = min(t["rps"] for t in best["trials"] if counts(t, skipped))
        assert check["limit"] == pytest.approx((1 - max(float(options["tolerance"]), WIDE)) * slowest)
        assert check["measured"] == confirm["rps"] and check["ok"] == (check["measured"] >= check["limit"])
    assert confirm["children"] == result["params"]["max_clients"] == result["children"]["chosen"]
    assert result["params"]["max_requests"] == result["max_requests"]["value"]
    assert len(result["why"]) == 3 + bool(spare) + ("shapes" in result)
    assert all(isinstance(line, str) for line in result["why"])

    # the shapes: each aggregated from its trials (the first round's first, in the order measured),
    # the choice as choose_shape makes it from them; the recommendation takes its workers and threads
    shapes = result.get("shapes")
    assert (shapes is None) == ("threads" not in by_step) == ("threads" not in result["params"])
    if shapes is not None:
        by_shape: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for trial in sorted(by_step["threads"], key=lambda t: (int(t["trial"]), bool(t.get("again")))):
            by_shape.setdefault((trial["children"], trial["threads"]), []).append(trial)
        stored = [(p["children"], p["threads"]) for p in shapes["points"]]
        assert sorted(stored) == sorted(by_shape)
        aggregated = [_recorded(p, _aggregated(by_shape[shape], rounds)) for p, shape in zip(shapes["points"], stored,
                                                                                              strict=True)]
        assert [{k: v for k, v in p.items() if k not in ("vs_best", "p99_vs_lowest")} for p in shapes["points"]] \
            == aggregated
        again = choose_shape(aggregated, OfferedLoad(**offered), target, tolerance=float(options["tolerance"]),
                             slots=shapes["slots"], lock="the lock", cores=float(result["cores"])).to_dict()
        assert {k: v for k, v in shapes.items() if k not in ("why", "reasons")} == {
            k: v for k, v in again.items() if k not in ("why", "reasons")}
        assert shapes["offered"] == offered and stored[0] == (stored[0][0], 1)
        assert (result["params"]["max_clients"], result["params"]["threads"]) == (shapes["workers"],
                                                                                 shapes["threads"])
        assert result["why"][0] == (f"{result['names']['max_clients']} {shapes['workers']}, "
                                    f"{result['names']['threads']} {shapes['threads']}: {shapes['why']}")
        assert all(p["threads"] == shapes["threads"] for p in result["mrpc"])  # measured on the shape chosen


def test_the_documents_hold_what_the_schemas_describe() -> None:
    """The aggregated points are the trial files' aggregate; the rest as the documentation says."""
    check_documents(DEMO)
    assert (DEMO / "recommendation.txt").read_text().startswith("pounder tune: gunicorn")


def test_a_run_with_a_threads_step_follows_the_schemas() -> None:
    """A real run that compared workers x threads (gunicorn's gthread workers): its threads-WxT-tK
    points, their memory after the load, the shapes and the threads chosen in recommendation.json
    and its manifest's sweep_threads follow the schemas and say what the documentation says."""
    files = validate_results_dir(GTHREAD, finished=True)
    keys = {path.stem for path in files if path.parent.name == "points"}
    shapes = {key.split("-")[1] for key in keys if key.startswith("threads-")}
    assert len(shapes) >= 2 and f"{load(GTHREAD / 'recommendation.json')['shapes']['points'][0]['children']}x1" \
        in shapes, keys
    assert load(GTHREAD / "tune.json")["options"]["sweep_threads"] is True
    check_documents(GTHREAD)
    assert "\n4b. Workers x threads at the offered load" in (GTHREAD / "recommendation.txt").read_text()


# ---------------------------------------------------------------------------------------------
# What the code never writes is rejected


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda document: document.pop(key)


POINT_BREAKS: list[tuple[str, str, Callable[[dict[str, Any]], None]]] = [
    ("children-1-t1", "an older schema id", lambda d: d.update(schema="pounder/tune-point/1")),
    ("children-1-t1", "missing key", _drop("finished_at")),
    ("children-1-t1", "missing summary figure", lambda d: d["summary"].pop("p99_ms")),
    ("children-1-t1", "trial without its number", lambda d: d["summary"].pop("trial")),
    ("children-1-t1", "trial without settled", lambda d: d["summary"].pop("settled")),
    ("children-1-t1", "unknown summary figure", lambda d: d["summary"].update(p98_ms=1.0)),
    ("children-1-t1", "aggregate figure in a trial", lambda d: d["summary"].update(rps_low=1.0)),
    ("children-1-t1", "negative count", lambda d: d["summary"].update(complete=-1)),
    ("children-1-t1", "key without its trial", lambda d: d.update(key="children-1")),
    ("children-1-t1", "key of another step", lambda d: d.update(key="mrpc-1-0-t1")),
    ("children-1-t1", "sizes summary under children", lambda d: d.update(step="sizes")),
    ("children-1-t1", "zero error count listed", lambda d: d["summary"]["errors"].update(reset=0)),
    ("children-1-t1", "snapshots on a load point", lambda d: d.update(snapshots={})),
    ("children-1-t1", "snapshot on a load point", lambda d: d.update(snapshot={})),
    ("children-1-t1", "bench not a bench result", lambda d: d["bench"].pop("latency")),
    ("children-1-t1", "params with an unknown knob", lambda d: d["params"].update(workers=2)),
    ("children-1-t1", "params with no thread", lambda d: d["params"].update(threads=0)),
    ("sizes", "one bench instead of two", lambda d: d.update(bench=d["bench"][0])),
    ("sizes", "a snapshot missing", lambda d: d["snapshots"].pop("mid")),
    ("sizes", "a snapshot that is not a mem document", lambda d: d["snapshots"]["end"].pop("totals")),
    ("sizes", "sizes without footprint", lambda d: d["summary"]["end"].pop("footprint")),
    ("sizes", "sizes without child_start_s", lambda d: d["summary"].pop("child_start_s")),
    ("sizes", "sizes without settled", lambda d: d["summary"].pop("settled")),
    ("confirm", "confirm without its snapshot", _drop("snapshot")),
    ("confirm", "confirm without footprint", lambda d: d["summary"].pop("footprint")),
    ("confirm", "checks stored in the point", lambda d: d["summary"].update(checks=[])),
    ("confirm", "confirm under another key", lambda d: d.update(key="confirm-2")),
    ("confirm", "other_cores as text", lambda d: d["summary"].update(other_cores="0.1")),
    ("children-1-t1", "negative other_cores", lambda d: d["summary"].update(other_cores=-0.5)),
    ("children-1-t1", "rate of zero", lambda d: d["summary"].update(rate=0)),
    ("pool-*-t1", "pools trial without its rate", lambda d: d["summary"].pop("rate")),
    ("pool-*-t1", "pools trial without other_cores", lambda d: d["summary"].pop("other_cores")),
    ("pool-*-t1", "rate as text", lambda d: d["summary"].update(rate="64/s")),
    ("pool-*-t1", "pools key without its trial", lambda d: d.update(key="pool-2")),
    ("pool-*-t1", "pools key of the children step", lambda d: d.update(key="children-2-t1")),
    ("mrpc-*-t1", "mrpc key with a load that is not a number", lambda d: d.update(key="mrpc-2-0-at-x-t1")),
    ("mrpc-*-t1", "mrpc key of a shape without its threads", lambda d: d.update(key="mrpc-2x2-0-at-4-t1")),
    ("mrpc-*-t1", "mrpc trial with threads under a key without", lambda d: d["summary"].update(
        threads=2, footprint=1, child_uss=1, child_shared=1)),
    ("children-1-t1", "children trial with threads", lambda d: d["summary"].update(
        threads=1, footprint=1, child_uss=1, child_shared=1)),
    ("children-1-t1", "children trial with a footprint alone", lambda d: d["summary"].update(footprint=1)),
    ("pool-*-t1", "pools trial with threads", lambda d: d["summary"].update(
        threads=1, footprint=1, child_uss=1, child_shared=1)),
    ("children-1-t1", "threads step under a children key", lambda d: d.update(step="threads")),
]

_MEMORY = {"threads": 2, "footprint": 1, "child_uss": 1, "child_shared": None}


def test_a_max_requests_point_of_a_shape_is_valid() -> None:
    """Once the threads step chose T threads per worker, the max-requests points are of that shape:
    key mrpc-NxT-..., params.threads and the trials' memory after the load."""
    document = load(min((DEMO / "points").glob("mrpc-*-t1.json")))
    summary = document["summary"]
    document["key"] = f"mrpc-{summary['children']}x2-{summary['max_requests']}-at-{summary['connections']}-t1"
    document["params"]["threads"] = 2
    summary.update(_MEMORY)
    validate(document, "tune-point")
    with pytest.raises(jsonschema.ValidationError):  # the old key without -at-: never with a shape
        validate({**document, "key": f"mrpc-{summary['children']}x2-{summary['max_requests']}-t1"}, "tune-point")


THREADS_BREAKS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("without its threads", lambda d: d["summary"].pop("threads")),
    ("without its footprint", lambda d: d["summary"].pop("footprint")),
    ("without a worker's USS", lambda d: d["summary"].pop("child_uss")),
    ("footprint as text", lambda d: d["summary"].update(footprint="60 MiB")),
    ("negative child_shared", lambda d: d["summary"].update(child_shared=-1)),
    ("no thread", lambda d: d["summary"].update(threads=0)),
    ("params without threads", lambda d: d["params"].pop("threads")),
    ("key without the threads", lambda d: d.update(key="threads-8-t1")),
    ("key without its trial", lambda d: d.update(key="threads-8x2")),
    ("key of the pools step", lambda d: d.update(key="pool-8-t1")),
    ("without its rate", lambda d: d["summary"].pop("rate")),
    ("an unknown memory figure", lambda d: d["summary"].update(child_pss=1)),
]


@pytest.mark.parametrize(("what", "mutate"), THREADS_BREAKS, ids=[what for what, _ in THREADS_BREAKS])
def test_threads_point_schema_rejects(what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(min((GTHREAD / "points").glob("threads-*-t1.json")))
    validate(document, "tune-point")
    mutate(document)
    with pytest.raises(jsonschema.ValidationError):
        validate(document, "tune-point")


@pytest.mark.parametrize(("key", "what", "mutate"), POINT_BREAKS, ids=[what for _, what, _ in POINT_BREAKS])
def test_point_schema_rejects(key: str, what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(min((DEMO / "points").glob(f"{key}.json")))  # a pattern: the first such point
    validate(document, "tune-point")
    mutate(document)
    with pytest.raises(jsonschema.ValidationError):
        validate(document, "tune-point")


MANIFEST_BREAKS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("wrong schema id", lambda d: d.update(schema="pounder/tune-point/2")),
    ("an older schema id", lambda d: d.update(schema="pounder/tune/1")),
    ("missing options", _drop("options")),
    ("option out of range", lambda d: d["options"].update(tolerance=1.5)),
    ("option missing", lambda d: d["options"].pop("mrpc_values")),
    ("new option missing", lambda d: d["options"].pop("trials")),
    ("too few trials", lambda d: d["options"].update(trials=2)),
    ("a target with another method", lambda d: d["options"].update(targets=[[1, "POST", "/"]])),
    ("cpus not a list", lambda d: d["options"].update(server_cpus="0-1")),
    ("adapter field of another kind", lambda d: d["adapter"].update(psgi="/x.psgi")),
    ("adapter missing a field", lambda d: d["adapter"].pop("app")),
    ("unknown adapter kind", lambda d: d["adapter"].update(kind="nginx")),
    ("sweep_threads as text", lambda d: d["options"].update(sweep_threads="yes")),
]


@pytest.mark.parametrize(("what", "mutate"), MANIFEST_BREAKS, ids=[what for what, _ in MANIFEST_BREAKS])
def test_manifest_schema_rejects(what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(DEMO / "tune.json")
    validate(document, "tune")
    mutate(document)
    with pytest.raises(jsonschema.ValidationError):
        validate(document, "tune")


RESULT_BREAKS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("wrong schema id", lambda d: d.update(schema="pounder/tune/2")),
    ("an older schema id", lambda d: d.update(schema="pounder/tune-result/1")),
    ("missing advice", _drop("advice")),
    ("missing target", _drop("target")),
    ("missing confirmation", _drop("confirmation")),
    ("missing workload", _drop("workload")),
    ("mrpc point without vs_unlimited", lambda d: d["mrpc"][0].pop("vs_unlimited")),
    ("mrpc point with the old loss", lambda d: d["mrpc"][1].update(loss_model=0.0)),
    ("vs_unlimited with another verdict", lambda d: d["mrpc"][1]["vs_unlimited"].update(verdict="worse")),
    ("sweep point with vs_unlimited", lambda d: d["sweep"][0].update(vs_unlimited=None)),
    ("sweep point without trials", lambda d: d["sweep"][0].pop("trials")),
    ("sweep point without its interval", lambda d: d["sweep"][0].pop("rps_low")),
    ("sweep point remeasured false", lambda d: d["sweep"][0].update(remeasured=False)),
    ("a trial with an unknown figure", lambda d: d["sweep"][0]["trials"][0].update(p98_ms=1.0)),
    ("a check without text", lambda d: d["confirmation"]["checks"][0].pop("text")),
    ("a check of another kind", lambda d: d["confirmation"]["checks"][0].update(name="cpu")),
    ("confirmation without ok", lambda d: d["confirmation"].pop("ok")),
    ("target with an unknown field", lambda d: d["target"].update(rate=1.0)),
    ("choice with an unknown field", lambda d: d["children"].update(best_p99=1)),
    ("max_requests choice missing a field", lambda d: d["max_requests"].pop("forced_by_memory")),
    ("memory bound with another source", lambda d: d["memory"].update(ram_source="guessed")),
    ("names missing one", lambda d: d["names"].pop("preload")),
    ("chosen 0 children", lambda d: d["children"].update(chosen=0)),
    ("decided by an unknown constraint", lambda d: d["children"].update(decided_by="offered")),
    ("sweep point with p99_low as text", lambda d: d["sweep"][0].update(p99_low="1.0")),
    ("sweep point with other_cores negative", lambda d: d["sweep"][0].update(other_cores=-1.0)),
    ("a trial with rate as text", lambda d: d["sweep"][0]["trials"][0].update(rate="fast")),
    ("offered with a rate as text", lambda d: d["offered"].update(rate="64/s")),
    ("offered without held", lambda d: d["offered"].pop("held")),
    ("offered of 0 connections", lambda d: d["offered"].update(connections=0)),
    ("why not a list", lambda d: d.update(why="because")),
    ("why with a number", lambda d: d["why"].append(1)),
    ("pools without its points", lambda d: d["pools"].pop("points")),
    ("pools chosen as text", lambda d: d["pools"].update(chosen="8")),
    ("pools p99_met as text", lambda d: d["pools"].update(p99_met="yes")),
    ("a pools point without vs_best", lambda d: d["pools"]["points"][0].pop("vs_best")),
    ("vs_best with worse as text", lambda d: d["pools"]["points"][0]["vs_best"].update(worse="no")),
    ("p99_vs_lowest with another verdict", lambda d: d["pools"]["points"][0]["p99_vs_lowest"].update(verdict="worse")),
    ("a pools point with vs_unlimited", lambda d: d["pools"]["points"][0].update(vs_unlimited=None)),
    ("spare_choice of another name", lambda d: d.update(spare_choice={"name": "middle", "why": "", "reasons": []})),
    ("spare_choice without reasons", lambda d: d.update(spare_choice={"name": "before", "why": ""})),
    ("a spare point of neither form", lambda d: d.update(spare=[{"name": "before", "trials": []}])),
]


@pytest.mark.parametrize(("what", "mutate"), RESULT_BREAKS, ids=[what for what, _ in RESULT_BREAKS])
def test_result_schema_rejects(what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(DEMO / "recommendation.json")
    validate(document, "tune-result")
    mutate(document)
    with pytest.raises(jsonschema.ValidationError):
        validate(document, "tune-result")


SHAPES_BREAKS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("shapes null", lambda d: d.update(shapes=None)),
    ("shapes without why", lambda d: d["shapes"].pop("why")),
    ("shapes without per_thread", lambda d: d["shapes"].pop("per_thread")),
    ("shapes with an unknown field", lambda d: d["shapes"].update(lowest_p99=[1, 1])),
    ("best of one number", lambda d: d["shapes"].update(best=[8])),
    ("best of three numbers", lambda d: d["shapes"].update(best=[8, 2, 1])),
    ("no thread chosen", lambda d: d["shapes"].update(threads=0)),
    ("per_thread as text", lambda d: d["shapes"].update(per_thread="1 MiB")),
    ("offered without held", lambda d: d["shapes"]["offered"].pop("held")),
    ("no shape", lambda d: d["shapes"].update(points=[])),
    ("a shape without its threads", lambda d: d["shapes"]["points"][0].pop("threads")),
    ("a shape without its footprint", lambda d: d["shapes"]["points"][0].pop("footprint")),
    ("a shape without vs_best", lambda d: d["shapes"]["points"][0].pop("vs_best")),
    ("a shape with vs_unlimited", lambda d: d["shapes"]["points"][0].update(vs_unlimited=None)),
    ("a sweep point with threads", lambda d: d["sweep"][0].update(_MEMORY)),
    ("a pools point with threads", lambda d: d["pools"]["points"][0].update(_MEMORY)),
    ("an mrpc point with a footprint alone", lambda d: d["mrpc"][0].update(footprint=1) if d["mrpc"] else
     d["sweep"][0].update(footprint=1)),
    ("params with no thread", lambda d: d["params"].update(threads=0)),
]


@pytest.mark.parametrize(("what", "mutate"), SHAPES_BREAKS, ids=[what for what, _ in SHAPES_BREAKS])
def test_result_schema_rejects_shapes_never_written(what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(GTHREAD / "recommendation.json")
    validate(document, "tune-result")
    mutate(document)
    with pytest.raises(jsonschema.ValidationError):
        validate(document, "tune-result")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: (d / "points" / "children-2-t1.json").rename(d / "points" / "children-3-t1.json"),
         "points/children-3-t1.json: key 'children-2-t1' does not match the file name"),
        (lambda d: (d / "recommendation.txt").unlink(), "recommendation.txt: missing"),
        (lambda d: (d / "points" / "sizes.json").write_text("{"), "points/sizes.json: cannot be read as JSON"),
        (lambda d: (d / "tune.json").unlink(), "tune.json: cannot be read"),
        (lambda d: (d / "points" / "children-1-t1.json").write_text(
            json.dumps({**load(d / "points" / "children-1-t1.json"), "started_at": "yesterday"})),
         "points/children-1-t1.json: started_at: 'yesterday' is not a 'date-time'"),
        (lambda d: (d / "points" / "children-1-t1.json").write_text(
            json.dumps({**load(d / "points" / "children-1-t1.json"), "schema": "pounder/tune-point/1"})),
         "points/children-1-t1.json: schema: 'pounder/tune-point/2' was expected"),
    ],
    ids=["renamed point", "no recommendation.txt", "truncated file", "no tune.json", "bad date", "old schema id"],
)
def test_validate_results_dir_reports_the_file(demo_dir: Path, change: Callable[[Path], Any], message: str) -> None:
    validate_results_dir(demo_dir, finished=True)
    change(demo_dir)
    with pytest.raises(AssertionError) as raised:
        validate_results_dir(demo_dir)
    assert message in str(raised.value)
    assert "Unevaluated properties" not in str(raised.value)
