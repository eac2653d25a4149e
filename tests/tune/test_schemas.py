"""The JSON schemas of a ``pounder tune`` results directory: tune.json (``pounder/tune/2``),
points/<key>.json (``pounder/tune-point/2``) and recommendation.json (``pounder/tune-result/2``).

No server is started. The directory checked is a real run's, kept in tests/data/tune-demo
(``pounder tune --demo --quick --ram 512M``: gunicorn, 3 interleaved trials per point, the
confirmation; only the server sampler's per-second series and per-child list of each bench are
cut to their first entry, to keep it small). ``validate_results_dir`` (tests/support/schemas.py)
checks every file; the end-to-end tests call it on fresh runs (every adapter, spare servers too).
The aggregated points of recommendation.json are checked against the trial files with the
package's own functions.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pounder.tune import (
    POINT_SCHEMA,
    RESULT_SCHEMA,
    TUNE_SCHEMA,
    TuneOptions,
    aggregate_trials,
    mrpc_losses,
    trials_by,
)
from support.schemas import schema, validate, validate_results_dir

DATA = Path(__file__).resolve().parents[1] / "data"
DEMO = DATA / "tune-demo"
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
    assert {"sizes", "children-1-t1", "children-1-t3", "mrpc-2-0-t1", "confirm"} <= keys
    for path in files:
        validate(load(path), {"tune.json": "tune", "recommendation.json": "tune-result"}.get(path.name, "tune-point"))
    manifest = load(DEMO / "tune.json")
    back = TuneOptions.from_dict(manifest["options"]).to_dict()
    assert {key: back[key] for key in manifest["options"]} == manifest["options"]  # every option is read
    # the options added since (this run was stored before them) read as their defaults
    assert {key: back[key] for key in set(back) - set(manifest["options"])} == {"listen": "127.0.0.1",
                                                                               "allow_remote": False}


def test_an_interrupted_run_is_valid_without_a_recommendation(demo_dir: Path) -> None:
    (demo_dir / "recommendation.json").unlink()
    (demo_dir / "recommendation.txt").unlink()
    for point in (demo_dir / "points").glob("mrpc-*"):
        point.unlink()
    files = validate_results_dir(demo_dir, finished=False)
    assert [p.name for p in files][0] == "tune.json" and len(files) > 3
    with pytest.raises(AssertionError, match="recommendation.json: missing"):
        validate_results_dir(demo_dir, finished=True)


def _recorded(stored: dict[str, Any], again: dict[str, Any]) -> dict[str, Any]:
    """``again`` (aggregated now) as a point recorded before the accept queue was sampled holds it."""
    if "queued" not in stored:
        assert again.pop("queued") is None
    return again


def test_the_documents_hold_what_the_schemas_describe() -> None:
    """The aggregated points are the trial files' aggregate; the rest as the documentation says."""
    points = {p.stem: load(p) for p in (DEMO / "points").glob("*.json")}
    result = load(DEMO / "recommendation.json")
    for key, document in points.items():
        assert document["key"] == key
        assert document["started_at"] <= document["finished_at"]
        if document["step"] in ("children", "max-requests"):
            summary = document["summary"]
            assert key.endswith(f"-t{summary['trial']}")
            assert summary["children"] == document["params"]["max_clients"]
            assert summary["max_requests"] == document["params"]["max_requests"]
            assert summary["connections"] == document["bench"]["options"]["load"]["connections"]
    sizes = points["sizes"]
    assert result["measure"] == sizes["summary"]
    assert sizes["summary"]["requests_first"] == sum(sizes["bench"][0]["requests"][k] for k in ("complete", "failed"))
    by_step: dict[str, list[dict[str, Any]]] = {}
    for document in points.values():
        by_step.setdefault(document["step"], []).append(document["summary"])
    children = trials_by(by_step["children"], "children")
    assert [p["children"] for p in result["sweep"]] == sorted(children)
    for point in result["sweep"]:
        again = _recorded(point, aggregate_trials(children[point["children"]]))
        assert {k: v for k, v in point.items() if k != "remeasured"} == again
        assert point["counted"] <= len(point["trials"]) and point["rps_low"] <= point["rps"] <= point["rps_high"]
    mrpc = trials_by(by_step["max-requests"], "max_requests")
    expected = [_recorded(p, again) for p, again in
                zip(result["mrpc"], mrpc_losses([aggregate_trials(mrpc[p["max_requests"]]) for p in result["mrpc"]]),
                    strict=True)]
    assert [{k: v for k, v in p.items() if k != "remeasured"} for p in result["mrpc"]] == expected
    assert [p["vs_unlimited"] is None for p in result["mrpc"]] == [p["max_requests"] == 0 for p in result["mrpc"]]
    confirm = result["confirmation"]
    assert {k: v for k, v in confirm.items() if k not in ("checks", "ok")} == points["confirm"]["summary"]
    assert confirm["ok"] == all(check["ok"] for check in confirm["checks"])
    assert confirm["children"] == result["params"]["max_clients"] == result["children"]["chosen"]
    assert result["params"]["max_requests"] == result["max_requests"]["value"]
    assert (DEMO / "recommendation.txt").read_text().startswith("pounder tune: gunicorn")


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
    ("children-1-t1", "params with an unknown knob", lambda d: d["params"].update(threads=2)),
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
]


@pytest.mark.parametrize(("key", "what", "mutate"), POINT_BREAKS, ids=[what for _, what, _ in POINT_BREAKS])
def test_point_schema_rejects(key: str, what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(DEMO / "points" / f"{key}.json")
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
    ("unknown adapter kind", lambda d: d["adapter"].update(kind="uwsgi")),
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
]


@pytest.mark.parametrize(("what", "mutate"), RESULT_BREAKS, ids=[what for what, _ in RESULT_BREAKS])
def test_result_schema_rejects(what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(DEMO / "recommendation.json")
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
