"""The JSON schemas of a ``pounder tune`` results directory: tune.json (``pounder/tune/1``),
points/<key>.json (``pounder/tune-point/1``) and recommendation.json (``pounder/tune-result/1``).

No server is started and no tuning session runs. The directory is written by the real code from
canned measurements: real snapshots and a real sampler report of a small process tree, bench
results made from the engine fixture (tests/data), the summaries shaped as the session's measuring
closures shape them (with the session's own helpers), every decision by the functions of
``pounder.tune._analysis``, each point stored by ``TuneSession._point`` and the manifest and
recommendation by ``ResultsDir``. ``validate_results_dir`` (tests/support/schemas.py) then checks every file;
the end-to-end tests call it on real runs.
"""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pounder import BenchResult, BenchSpec
from pounder._files import utc_timestamp
from pounder._version import __version__
from pounder.pool import child_sizes, growth_per_request
from pounder.procs import PoolSnapshot, ServerLoadReport, ServerSampler, mem_available, snapshot
from pounder.tune import (
    POINT_SCHEMA,
    RESULT_SCHEMA,
    TUNE_SCHEMA,
    Adapter,
    ApacheAdapter,
    CommandAdapter,
    PoolParams,
    ResultsDir,
    StarmanAdapter,
    TuneOptions,
    TuneResult,
    TuneSession,
    demo_adapter,
    make_options,
    manifest,
    render_tune,
)
from pounder.tune._analysis import (
    advice,
    burst_seconds,
    choose_children,
    choose_max_requests,
    default_spares,
    measured_loss,
    memory_bound,
    predicted_loss,
    respawn_cost,
    spare_settings,
    steady_p99_us,
    sweep_connections,
    sweep_counts,
    sweep_done,
)
from pounder.tune._session import _load_summary
from support.proctree import TreeFactory
from support.schemas import schema, validate, validate_results_dir

DATA = Path(__file__).resolve().parents[1] / "data"
TUNE_SCHEMAS = ("tune", "tune-point", "tune-result")
RESPAWN_COST = 17.0
"""Requests' worth of throughput one respawn costs in the canned max-requests sweep."""


# ---------------------------------------------------------------------------------------------
# Canned measurements


@dataclass(frozen=True)
class Measured:
    """What the runner would have measured: a pool's snapshots and a sampler report."""

    cold: PoolSnapshot
    warm: PoolSnapshot
    mid: PoolSnapshot
    end: PoolSnapshot
    report: ServerLoadReport


@pytest.fixture(scope="module")
def measured() -> Iterator[Measured]:
    """A parent with 4 MiB written and two children, one of which grows between snapshots."""
    trees = TreeFactory()
    try:
        tree = trees.start(mb=4)
        kids = tree.spawn(2)
        cold = snapshot(tree.pid)
        warm = snapshot(tree.pid)
        tree.grow(kids[0], 1)
        mid = snapshot(tree.pid)
        tree.grow(kids[0], 1)
        end = snapshot(tree.pid)
        sampler = ServerSampler(tree.pid, interval_s=0.05)
        sampler.start()
        time.sleep(0.15)
        report = sampler.stop()
    finally:
        trees.stop_all()
    yield Measured(cold=cold, warm=warm, mid=mid, end=end, report=report)


def bench(measured: Measured, connections: int, *, requests: int | None = None) -> BenchResult:
    """A bench result as ``Runner.bench`` makes it (closed loop, keep-alive off, sampled server)."""
    spec = BenchSpec.from_options("http://127.0.0.1:8080/", connections=connections, requests=requests,
                                  duration=None if requests else 3.0, keepalive=False, timeout=30.0, threads=1)
    return BenchResult.from_engine((DATA / "engine_result.json").read_text(), options=spec.run_options(),
                                   started_at=utc_timestamp(), interrupted=False, tool_version=__version__,
                                   server=measured.report)


Detail = dict[str, Any]


def sizes_measurement(measured: Measured, adapter: Adapter, params: PoolParams) -> tuple[Detail, Detail]:
    """(summary, detail) shaped as ``TuneSession._sizes_point`` makes them."""
    cold, warm, mid, end = measured.cold, measured.warm, measured.mid, measured.end
    count = max(1, warm.totals.children)
    first = bench(measured, count, requests=50 * count)
    second = bench(measured, count, requests=50 * count)
    done_first = first.requests.complete + first.requests.failed
    done_second = second.requests.complete + second.requests.failed
    summary = {
        "children": count,
        "warmed": count,
        "warm_requests": 2 * count,
        "preload": adapter.with_preload(params),
        "parent": {"rss": end.parent.rss, "uss": end.parent.private, "shared": end.parent.shared,
                   "pss": end.parent.pss},
        "cold": child_sizes(cold), "warm": child_sizes(warm), "mid": child_sizes(mid), "end": child_sizes(end),
        "requests_first": done_first,
        "requests_second": done_second,
        "failed": first.requests.failed + second.requests.failed,
        "growth_first": growth_per_request(warm, mid, done_first),
        "growth_second": growth_per_request(mid, end, done_second),
        "sharing": end.totals.median_sharing,
        "mem_available": mem_available(),
    }
    snapshots = {name: snap.to_dict() for name, snap in (("cold", cold), ("warm", warm), ("mid", mid), ("end", end))}
    return summary, {"snapshots": snapshots, "bench": [first.to_dict(), second.to_dict()]}


def load_measurement(measured: Measured, params: PoolParams, connections: int, rps: float) -> tuple[Detail, Detail]:
    """(summary, detail) shaped as ``TuneSession._load_point`` makes them; ``rps`` replaces the
    fixture's rate so that the sweeps have a shape to decide on."""
    result = bench(measured, connections)
    summary = {"children": params.max_clients, "max_requests": params.max_requests, "connections": connections,
               "warmed": params.max_clients, **_load_summary(result)}
    summary["rps"] = rps
    done = summary["complete"] + summary["failed"]
    summary["respawns"] = done // params.max_requests if params.max_requests else 0
    return summary, {"bench": result.to_dict()}


def spare_measurement(measured: Measured, params: PoolParams, burst: int) -> tuple[Detail, Detail]:
    """(summary, detail) shaped as ``TuneSession._spare_point`` makes them."""
    start, low, high = params.fixed()
    result = bench(measured, burst)
    series = [{"second": s.second, "complete": s.complete, "p99_us": s.p99_us} for s in result.series]
    steady = steady_p99_us(series)
    summary = {"children": params.max_clients, "start_servers": start, "min_spare": low, "max_spare": high,
               "connections": burst, "idle_children": low, "series": series,
               "steady_p99_ms": None if steady is None else steady / 1000,
               "first_p99_ms": series[0]["p99_us"] / 1000 if series else None, **_load_summary(result)}
    return summary, {"bench": result.to_dict()}


# ---------------------------------------------------------------------------------------------
# A results directory written by the real code (the steps of TuneSession.run, measured by hand)


def sweep_rps(children: int) -> float:
    """Throughput that grows to 2 children (2 cores) and then stays flat."""
    return 230.0 * min(children, 2) - 2.0 * children


def mrpc_rps(base: float, max_requests: int) -> float:
    return base if max_requests == 0 else base / (1 + RESPAWN_COST / max_requests)


def write_results(path: Path, adapter: Adapter, options: TuneOptions, measured: Measured,
                  *, stop_after: str | None = None) -> Path:
    """Write a whole results directory for ``adapter`` and ``options``; ``stop_after`` a step
    name leaves it as an interrupted run would (points up to that step, no recommendation)."""
    results = ResultsDir.create(path, manifest(adapter, options))
    session = TuneSession(adapter, options, results)

    def point(key: str, step: str, params: PoolParams, measure: Callable[[], tuple[Detail, Detail]]) -> Detail:
        return session._point(key, step, params, key, measure)

    measure_n = min(options.measure_children, options.max_children)
    measure = point("sizes", "sizes", PoolParams(measure_n),
                    partial(sizes_measurement, measured, adapter, PoolParams(measure_n)))
    other = other_memory = None
    if adapter.preload_toggle and options.compare_preload:
        flipped = PoolParams(measure_n, preload=not adapter.preload)
        other = point(f"sizes-preload-{'on' if flipped.preload else 'off'}", "sizes", flipped,
                      partial(sizes_measurement, measured, adapter, flipped))
        other_memory = memory_bound(other, options.ram, options.safety_margin)
    memory = memory_bound(measure, options.ram, options.safety_margin)
    assert memory.max_clients >= 1

    sweep: list[Mapping[str, Any]] = []
    for count in sweep_counts(min(memory.max_clients, options.max_children)):
        params = PoolParams(count)
        connections = sweep_connections(count, options.clients)
        sweep.append(point(f"children-{count}", "children", params,
                           partial(load_measurement, measured, params, connections, sweep_rps(count))))
        if sweep_done(sweep, options.tolerance):
            break
    choice = choose_children(sweep, memory.max_clients, clients=options.clients, p99_s=options.p99_s,
                             tolerance=options.tolerance)
    if stop_after == "children":
        return results.path

    mrpc_n = min(choice.chosen, options.max_children)
    base = sweep_rps(mrpc_n)
    mrpc_points: list[dict[str, Any]] = []
    for value in options.mrpc_values:
        params = PoolParams(mrpc_n, max_requests=value)
        mrpc_points.append(point(f"mrpc-{mrpc_n}-{value}", "max-requests", params,
                                 partial(load_measurement, measured, params, sweep_connections(mrpc_n, None),
                                         mrpc_rps(base, value))))
    cost = respawn_cost(mrpc_points)
    for summary in mrpc_points:
        summary["loss_measured"] = measured_loss(summary, mrpc_points)
        summary["loss_model"] = predicted_loss(int(summary["max_requests"]), cost)
    mrpc = choose_max_requests(mrpc_points, measure, memory, choice.chosen, max_loss=options.max_loss,
                               counts=adapter.max_requests_counts)

    spare: list[dict[str, Any]] = []
    spares: tuple[int | None, int | None, int | None] = (None, None, None)
    if adapter.on_demand:
        burst = min(options.clients or choice.chosen, options.max_children)
        for name, (start, low, high) in (("before", default_spares(choice.chosen)),
                                         ("after", spare_settings(choice.chosen, burst))):
            params = PoolParams(choice.chosen, max_requests=mrpc.value, start_servers=start, min_spare=low,
                                max_spare=high)
            stored = dict(point(f"spare-{name}", "spare", params, partial(spare_measurement, measured, params, burst)))
            stored["name"] = name
            spare.append(stored)
        spares = spare_settings(choice.chosen, burst)
        steady = [float(p["steady_p99_ms"]) for p in spare if p["steady_p99_ms"] is not None]
        reference = min(steady) * 1000 if steady else 0.0
        for stored in spare:
            stored["reference_p99_ms"] = reference / 1000
            stored["burst_s"] = burst_seconds(stored["series"], reference)
    params = PoolParams(choice.chosen, max_requests=mrpc.value, start_servers=spares[0], min_spare=spares[1],
                        max_spare=spares[2], preload=adapter.preload)
    said = advice(adapter.kind, measure, other, memory, other_memory, sweep, choice, 2)
    result = TuneResult(adapter=adapter, options=options, params=params, config=adapter.render(params),
                        measure=measure, other_measure=other, memory=memory, other_memory=other_memory, sweep=sweep,
                        children=choice, mrpc_points=mrpc_points, max_requests=mrpc, spare=spare, advice=said,
                        cores=2, results_dir=str(results.path))
    results.save_result(result.to_dict(), render_tune(result))
    return results.path


def gunicorn(folder: Path) -> tuple[Adapter, TuneOptions]:
    """The demo (preloading, compared with the other preload setting), RAM given, p99 target."""
    return demo_adapter(), make_options(ram="512M", p99="50ms", mrpc="0,10k,1000,100,10", compare_preload=True)


def starman(folder: Path) -> tuple[Adapter, TuneOptions]:
    """No preload, RAM from MemAvailable, a number of clients."""
    psgi = folder / "app.psgi"
    psgi.write_text("my $app = sub { [200, [], ['ok']] };\n")
    adapter = StarmanAdapter(psgi, env={"PLACK_ENV": "deployment"}, extra_args=("--disable-keepalive",))
    return adapter, make_options(clients=8, quick=True)


def apache(folder: Path) -> tuple[Adapter, TuneOptions]:
    """A server that spawns children with the load: spare points too."""
    startup = folder / "startup.pl"
    startup.write_text("1;\n")
    adapter = ApacheAdapter(perl_handlers={"/": "PounderTest::Hello"}, startup_pl=startup, perl_lib=folder)
    return adapter, make_options(ram="1G", clients=6, quick=True)


def command(folder: Path) -> tuple[Adapter, TuneOptions]:
    adapter = CommandAdapter("server --port {port} --workers {workers} --max-requests {max_requests}",
                             env={"A": "1"}, stop_signal="QUIT")
    return adapter, make_options(ram="256M", quick=True, mrpc="100,10")  # no 0: loss_measured is null


ADAPTERS: dict[str, Callable[[Path], tuple[Adapter, TuneOptions]]] = {
    "gunicorn": gunicorn, "starman": starman, "apache": apache, "command": command}


@pytest.fixture(scope="module")
def apache_dir(tmp_path_factory: pytest.TempPathFactory, measured: Measured) -> Path:
    """A finished results directory with points of every step (read-only: copy before changing)."""
    folder = tmp_path_factory.mktemp("apache")
    adapter, options = apache(folder)
    return write_results(folder / "results", adapter, options, measured)


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


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
def test_results_dir_follows_the_schemas(kind: str, tmp_path: Path, measured: Measured) -> None:
    adapter, options = ADAPTERS[kind](tmp_path)
    folder = write_results(tmp_path / "results", adapter, options, measured)

    files = validate_results_dir(folder, finished=True)

    keys = {path.stem for path in files if path.parent.name == "points"}
    assert "sizes" in keys and "children-1" in keys
    assert any(key.startswith("mrpc-") for key in keys)
    assert any(key.startswith("spare-") for key in keys) == adapter.on_demand
    assert ("sizes-preload-off" in keys) == (kind == "gunicorn")
    result = load(folder / "recommendation.json")
    assert result["server"]["kind"] == kind
    assert result["server"] == load(folder / "tune.json")["adapter"]
    assert len(result["spare"]) == (2 if adapter.on_demand else 0)
    for path in files:
        validate(load(path), {"tune.json": "tune", "recommendation.json": "tune-result"}.get(path.name, "tune-point"))


def test_an_interrupted_run_is_valid_without_a_recommendation(tmp_path: Path, measured: Measured) -> None:
    adapter, options = gunicorn(tmp_path)
    folder = write_results(tmp_path / "results", adapter, options, measured, stop_after="children")
    files = validate_results_dir(folder, finished=False)
    assert [p.name for p in files][0] == "tune.json" and len(files) > 3
    with pytest.raises(AssertionError, match="recommendation.json: missing"):
        validate_results_dir(folder, finished=True)
    only_manifest = ResultsDir.create(tmp_path / "empty", manifest(*gunicorn(tmp_path))).path
    assert validate_results_dir(only_manifest) == [only_manifest / "tune.json"]


def test_the_documents_hold_what_the_schemas_describe(apache_dir: Path) -> None:
    """A few cross-checks of the meaning the documentation gives."""
    points = {p.stem: load(p) for p in (apache_dir / "points").glob("*.json")}
    sizes = points["sizes"]
    assert isinstance(sizes["bench"], list) and len(sizes["bench"]) == 2
    assert sizes["summary"]["requests_first"] == sum(sizes["bench"][0]["requests"][k] for k in ("complete", "failed"))
    assert sizes["summary"]["end"]["max_uss"] == sizes["snapshots"]["end"]["totals"]["max_child_uss"]
    for key, document in points.items():
        assert document["key"] == key
        assert document["started_at"] <= document["finished_at"]
        if document["step"] in ("children", "max-requests"):
            assert document["summary"]["children"] == document["params"]["max_clients"]
            assert document["summary"]["max_requests"] == document["params"]["max_requests"]
            assert document["summary"]["connections"] == document["bench"]["options"]["load"]["connections"]
    result = load(apache_dir / "recommendation.json")
    assert result["measure"] == sizes["summary"]
    assert [p["children"] for p in result["sweep"]] == sorted(p["children"] for p in result["sweep"])
    assert {p["name"] for p in result["spare"]} == {"before", "after"}
    assert result["params"]["max_clients"] == result["children"]["chosen"]
    assert result["params"]["max_requests"] == result["max_requests"]["value"]
    assert (apache_dir / "recommendation.txt").read_text().startswith("pounder tune: Apache prefork")


# ---------------------------------------------------------------------------------------------
# What the code never writes is rejected


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda document: document.pop(key)


POINT_BREAKS: list[tuple[str, str, Callable[[dict[str, Any]], None]]] = [
    ("children-1", "wrong schema id", lambda d: d.update(schema="pounder/tune-point/2")),
    ("children-1", "missing key", _drop("finished_at")),
    ("children-1", "missing summary figure", lambda d: d["summary"].pop("p99_ms")),
    ("children-1", "unknown summary figure", lambda d: d["summary"].update(p98_ms=1.0)),
    ("children-1", "negative count", lambda d: d["summary"].update(complete=-1)),
    ("children-1", "key of another step", lambda d: d.update(key="mrpc-1-0")),
    ("children-1", "sizes summary under children", lambda d: d.update(step="sizes")),
    ("children-1", "zero error count listed", lambda d: d["summary"]["errors"].update(reset=0)),
    ("children-1", "snapshots on a load point", lambda d: d.update(snapshots={})),
    ("children-1", "bench not a bench result", lambda d: d["bench"].pop("latency")),
    ("children-1", "params with an unknown knob", lambda d: d["params"].update(threads=2)),
    ("sizes", "one bench instead of two", lambda d: d.update(bench=d["bench"][0])),
    ("sizes", "a snapshot missing", lambda d: d["snapshots"].pop("mid")),
    ("sizes", "a snapshot that is not a mem document", lambda d: d["snapshots"]["end"].pop("totals")),
    ("sizes", "sizes without footprint", lambda d: d["summary"]["end"].pop("footprint")),
    ("spare-after", "spare without series", lambda d: d["summary"].pop("series")),
    ("spare-after", "burst_s on a spare point", lambda d: d["summary"].update(burst_s=0)),
    ("spare-after", "load fields on a spare point", lambda d: d["summary"].update(respawns=0)),
]


@pytest.mark.parametrize(("key", "what", "mutate"), POINT_BREAKS, ids=[what for _, what, _ in POINT_BREAKS])
def test_point_schema_rejects(apache_dir: Path, key: str, what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(apache_dir / "points" / f"{key}.json")
    validate(document, "tune-point")
    mutate(document)
    with pytest.raises(jsonschema.ValidationError):
        validate(document, "tune-point")


MANIFEST_BREAKS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("wrong schema id", lambda d: d.update(schema="pounder/tune-point/1")),
    ("missing options", _drop("options")),
    ("option out of range", lambda d: d["options"].update(tolerance=1.5)),
    ("option missing", lambda d: d["options"].pop("mrpc_values")),
    ("adapter field of another kind", lambda d: d["adapter"].update(app="x:app")),
    ("adapter missing a field", lambda d: d["adapter"].pop("perl_handlers")),
    ("unknown adapter kind", lambda d: d["adapter"].update(kind="uwsgi")),
]


@pytest.mark.parametrize(("what", "mutate"), MANIFEST_BREAKS, ids=[what for what, _ in MANIFEST_BREAKS])
def test_manifest_schema_rejects(apache_dir: Path, what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(apache_dir / "tune.json")
    validate(document, "tune")
    mutate(document)
    with pytest.raises(jsonschema.ValidationError):
        validate(document, "tune")


RESULT_BREAKS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("wrong schema id", lambda d: d.update(schema="pounder/tune/1")),
    ("missing advice", _drop("advice")),
    ("mrpc point without loss_model", lambda d: d["mrpc"][0].pop("loss_model")),
    ("sweep point with a loss", lambda d: d["sweep"][0].update(loss_model=0.0)),
    ("spare point without name", lambda d: d["spare"][0].pop("name")),
    ("spare point without burst_s", lambda d: d["spare"][1].pop("burst_s")),
    ("choice with an unknown field", lambda d: d["children"].update(best_p99=1)),
    ("max_requests choice missing a field", lambda d: d["max_requests"].pop("forced_by_memory")),
    ("memory bound with another source", lambda d: d["memory"].update(ram_source="guessed")),
    ("names missing one", lambda d: d["names"].pop("preload")),
    ("chosen 0 children", lambda d: d["children"].update(chosen=0)),
]


@pytest.mark.parametrize(("what", "mutate"), RESULT_BREAKS, ids=[what for what, _ in RESULT_BREAKS])
def test_result_schema_rejects(apache_dir: Path, what: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    document = load(apache_dir / "recommendation.json")
    validate(document, "tune-result")
    mutate(document)
    with pytest.raises(jsonschema.ValidationError):
        validate(document, "tune-result")


def _copy(apache_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    for path in apache_dir.rglob("*"):
        if path.is_file():
            (target / path.relative_to(apache_dir)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(apache_dir)).write_bytes(path.read_bytes())
    return target


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: (d / "points" / "children-2.json").rename(d / "points" / "children-3.json"),
         "points/children-3.json: key 'children-2' does not match the file name"),
        (lambda d: (d / "recommendation.txt").unlink(), "recommendation.txt: missing"),
        (lambda d: (d / "points" / "sizes.json").write_text("{"), "points/sizes.json: cannot be read as JSON"),
        (lambda d: (d / "tune.json").unlink(), "tune.json: cannot be read"),
        (lambda d: (d / "points" / "children-1.json").write_text(
            json.dumps({**load(d / "points" / "children-1.json"), "started_at": "yesterday"})),
         "points/children-1.json: started_at: 'yesterday' is not a 'date-time'"),
        (lambda d: (d / "points" / "children-1.json").write_text(
            json.dumps({**load(d / "points" / "children-1.json"), "schema": "pounder/tune-point/0"})),
         "points/children-1.json: schema: 'pounder/tune-point/1' was expected"),
    ],
    ids=["renamed point", "no recommendation.txt", "truncated file", "no tune.json", "bad date", "old schema id"],
)
def test_validate_results_dir_reports_the_file(apache_dir: Path, tmp_path: Path, change: Callable[[Path], Any],
                                               message: str) -> None:
    folder = _copy(apache_dir, tmp_path)
    validate_results_dir(folder, finished=True)
    change(folder)
    with pytest.raises(AssertionError) as raised:
        validate_results_dir(folder)
    assert message in str(raised.value)
    assert "Unevaluated properties" not in str(raised.value)
