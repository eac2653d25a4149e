"""Issue 14, item 16: every public callable of the library answers a wrong-typed or malformed
argument with :class:`pounder.UsageError` (one line naming the argument), never with a
TypeError / AttributeError / ValueError of its own, and before anything is started or sent.

One real test server (tests/support/testserver.py) stands in for "the server": every case is
called with its URL (or its pid where a server is named) and afterwards it must have received
no connection, and the test process must have no new child process."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

import pounder
from pounder import _errors as pounder_errors
from pounder import agents, cli, experiment, load, pool, procs, report, results, servers, syscalls, traffic, tune
from pounder import compare as compare_pkg


@dataclass(frozen=True)
class Ctx:
    url: str
    pid: int
    tmp: Path

    @property
    def good(self) -> list[compare_pkg.Variant]:
        return [compare_pkg.Variant("a", self.url), compare_pkg.Variant("b", self.url)]


def _snap(ctx: Ctx) -> pounder.PoolSnapshot:
    return pounder.snapshot(pounder.find_server(pid=ctx.pid))


def _gunicorn() -> pool.GunicornAdapter:
    return pool.GunicornAdapter("app:app")


Case = Callable[[Ctx], Any]
CASES: dict[str, Case] = {
    # pounder.bench and its load options
    "bench-url-int": lambda c: pounder.bench(123),
    "bench-ray-int": lambda c: pounder.bench(c.url, ray=5),
    "bench-agents-text": lambda c: pounder.bench(c.url, ray="local", agents="3"),
    "bench-agents-without-ray": lambda c: pounder.bench(c.url, agents=3),
    "cluster-per-node-zero": lambda c: agents.Cluster("local", per_node=0),
    "run-bench-ray-spec-text": lambda c: pounder.run_bench_ray(c.url, agents.Cluster("local")),
    "run-bench-ray-cluster-text": lambda c: pounder.run_bench_ray(pounder.BenchSpec.from_options(c.url), "local"),
    "agent-pool-text": lambda c: agents.agent_pool("local").__enter__(),
    "bench-sender-text": lambda c: load.bench(c.url, sender="local"),
    "run-bench-sender-text": lambda c: pounder.run_bench(pounder.BenchSpec.from_options(c.url), sender="local"),
    "compare-sender-text": lambda c: compare_pkg.compare(c.good, sender="local"),
    "run-bench-agents-too-few-connections": lambda c: pounder.run_bench_ray(
        pounder.BenchSpec.from_options(c.url, connections=2), agents.Cluster("local", agents=3)),
    "bench-url-bytes": lambda c: pounder.bench(c.url.encode()),
    "bench-url-list": lambda c: pounder.bench([c.url]),
    "bench-connections-text": lambda c: pounder.bench(c.url, connections="x"),
    "bench-connections-negative": lambda c: pounder.bench(c.url, connections=-1),
    "bench-connections-list": lambda c: pounder.bench(c.url, connections=[1]),
    "bench-requests-negative": lambda c: pounder.bench(c.url, requests=-5),
    "bench-requests-float": lambda c: pounder.bench(c.url, requests=1.5),
    "bench-duration-list": lambda c: pounder.bench(c.url, duration=[1]),
    "bench-duration-nonsense": lambda c: pounder.bench(c.url, duration="soon"),
    "bench-duration-negative": lambda c: pounder.bench(c.url, duration=-1),
    "bench-threads-text": lambda c: pounder.bench(c.url, threads="many"),
    "bench-rate-list": lambda c: pounder.bench(c.url, rate=[1]),
    "bench-stages-int": lambda c: pounder.bench(c.url, stages=5),
    "bench-stages-list-of-text": lambda c: pounder.bench(c.url, stages=["10s@5"]),
    "bench-headers-int": lambda c: pounder.bench(c.url, headers=123),
    "bench-headers-list-of-int": lambda c: pounder.bench(c.url, headers=[1]),
    "bench-headers-string-no-colon": lambda c: pounder.bench(c.url, headers="X-A"),
    "bench-headers-mapping-int-name": lambda c: pounder.bench(c.url, headers={1: "b"}),
    "bench-cookies-list-of-int": lambda c: pounder.bench(c.url, cookies=[1]),
    "bench-cookies-int": lambda c: pounder.bench(c.url, cookies=5),
    "bench-method-int": lambda c: pounder.bench(c.url, method=1),
    "bench-method-empty": lambda c: pounder.bench(c.url, method=""),
    "bench-headers-content-length": lambda c: pounder.bench(c.url, headers={"Content-Length": "abc"}),
    "bench-headers-transfer-encoding": lambda c: pounder.bench(c.url, headers=["Transfer-Encoding: chunked"]),
    "bench-body-int": lambda c: pounder.bench(c.url, body=123),
    "bench-content-type-int": lambda c: pounder.bench(c.url, content_type=1),
    "bench-auth-int": lambda c: pounder.bench(c.url, auth=1),
    "bench-timeout-nonsense": lambda c: pounder.bench(c.url, timeout="x"),
    "bench-keepalive-text": lambda c: pounder.bench(c.url, keepalive="no"),
    "bench-allow-remote-text": lambda c: pounder.bench(c.url, allow_remote="yes"),
    "bench-calls-per-conn-list": lambda c: pounder.bench(c.url, calls_per_conn=[2]),
    "bench-throttle-float": lambda c: pounder.bench(c.url, throttle=1.5),
    "bench-order-int": lambda c: pounder.bench(c.url, order=1),
    "bench-warmup-negative": lambda c: pounder.bench(c.url, warmup=-1),
    "bench-warmup-list": lambda c: pounder.bench(c.url, warmup=[1]),
    "bench-unix-socket-int": lambda c: pounder.bench(c.url, unix_socket=1),
    "bench-tsv-path-int": lambda c: pounder.bench(c.url, tsv_path=1),
    "bench-url-file-int": lambda c: pounder.bench(url_file=1),
    "bench-options-text": lambda c: pounder.bench(c.url, options="fast"),
    "bench-unknown-keyword": lambda c: pounder.bench(c.url, conections=5),
    "bench-too-many-positional": lambda c: pounder.bench(c.url, 10),
    "bench-server-pid-text": lambda c: pounder.bench(c.url, server_pid="x"),
    "bench-server-pidfile-int": lambda c: pounder.bench(c.url, server_pidfile=1),
    "bench-server-name-int": lambda c: pounder.bench(c.url, server_name=1),
    "bench-sample-interval-list": lambda c: pounder.bench(c.url, server_pid=c.pid, sample_interval=[1]),
    "bench-on-progress-not-callable": lambda c: pounder.bench(c.url, on_progress=1),
    "loadoptions-connections-text": lambda c: pounder.bench(c.url, options=pounder.LoadOptions(connections="x")),
    "benchspec-url-int": lambda c: pounder.BenchSpec.from_options(123),
    "run-bench-none": lambda c: pounder.run_bench(None),
    "run-bench-text": lambda c: pounder.run_bench(c.url),
    # the bench result's readers and renderers
    "load-result-none": lambda c: pounder.load_result(None),
    "load-result-int": lambda c: pounder.load_result(123),
    "load-result-missing": lambda c: pounder.load_result(c.tmp / "missing.json"),
    "load-result-directory": lambda c: pounder.load_result(c.tmp),
    "render-report-none": lambda c: pounder.render_report(None),
    "render-report-text": lambda c: pounder.render_report("result.json"),
    "render-csv-none": lambda c: pounder.render_csv(None),
    # pounder.results.speaks_tls: the server's own address with a bad wait must not be asked
    "speaks-tls-int": lambda c: results.speaks_tls(123),
    "speaks-tls-url": lambda c: results.speaks_tls(c.url),
    "speaks-tls-no-port": lambda c: results.speaks_tls("127.0.0.1"),
    "speaks-tls-port-zero": lambda c: results.speaks_tls("127.0.0.1:0"),
    "speaks-tls-timeout-text": lambda c: results.speaks_tls(c.url.split("/")[2], "1s"),
    "speaks-tls-timeout-zero": lambda c: results.speaks_tls(c.url.split("/")[2], 0),
    "speaks-tls-timeout-nan": lambda c: results.speaks_tls(c.url.split("/")[2], float("nan")),
    # pounder.compare
    "compare-none": lambda c: compare_pkg.compare(None),
    "compare-url-text": lambda c: compare_pkg.compare(c.url),
    "compare-variant-url-int": lambda c: compare_pkg.compare([compare_pkg.Variant("a", 123), c.good[1]]),
    "compare-variant-pid-text": lambda c: compare_pkg.compare([compare_pkg.Variant("a", c.url, "x"), c.good[1]]),
    "compare-trials-text": lambda c: compare_pkg.compare(c.good, trials="x"),
    "compare-baseline-int": lambda c: compare_pkg.compare(c.good, baseline=1),
    "compare-results-int": lambda c: compare_pkg.compare(c.good, results=1),
    "compare-min-effect-negative": lambda c: compare_pkg.compare(c.good, min_effect=-0.5),
    "compare-connections-text": lambda c: compare_pkg.compare(c.good, connections="x"),
    "compare-on-trial-not-callable": lambda c: compare_pkg.compare(c.good, on_trial="print"),
    "render-compare-none": lambda c: compare_pkg.render_compare(None),
    "parse-url-none": lambda c: traffic.parse_url(None),
    # pounder.syscalls
    "render-syscalls-none": lambda c: syscalls.render_syscalls(None),
    "syscalls-url-none": lambda c: syscalls.trace_syscalls(None, server_pid=c.pid),
    "syscalls-url-int": lambda c: syscalls.trace_syscalls(123, server_pid=c.pid),
    "syscalls-server-pid-text": lambda c: syscalls.trace_syscalls(c.url, server_pid="x"),
    "syscalls-warmup-list": lambda c: syscalls.trace_syscalls(c.url, server_pid=c.pid, warmup=[1]),
    "syscalls-strace-int": lambda c: syscalls.trace_syscalls(c.url, server_pid=c.pid, strace=1),
    "syscalls-log-path-int": lambda c: syscalls.trace_syscalls(c.url, server_pid=c.pid, log_path=1),
    "parse-strace-log-none": lambda c: syscalls.parse_strace_log(None),
    # pounder.procs (pounder mem)
    "find-server-pid-text": lambda c: pounder.find_server(pid="x"),
    "find-server-pid-negative": lambda c: pounder.find_server(pid=-1),
    "find-server-pidfile-int": lambda c: pounder.find_server(pidfile=123),
    "find-server-name-int": lambda c: pounder.find_server(name=123),
    "find-server-two-ways": lambda c: pounder.find_server(pid=c.pid, name="x"),
    "snapshot-none": lambda c: pounder.snapshot(None),
    "snapshot-text": lambda c: pounder.snapshot("x"),
    "snapshot-negative": lambda c: pounder.snapshot(-1),
    "max-clients-no-snapshot": lambda c: pounder.max_clients("4G", None),
    "max-clients-ram-nonsense": lambda c: pounder.max_clients("lots", _snap(c)),
    "max-clients-ram-list": lambda c: pounder.max_clients([1], _snap(c)),
    "max-clients-ram-negative": lambda c: pounder.max_clients(-1, _snap(c)),
    "sampler-none": lambda c: pounder.ServerSampler(None),
    "sampler-interval-negative": lambda c: pounder.ServerSampler(c.pid, interval_s=-1),
    "render-mem-none": lambda c: procs.render_mem(None),
    "per-request-none": lambda c: procs.per_request(None, 5),
    "max-clients-from-text": lambda c: procs.max_clients_from("4G", 0, 4096, 4096),
    "read-pidfile-none": lambda c: procs.read_pidfile(None),
    "load-mem-none": lambda c: procs.load_mem(None),
    "load-mem-missing": lambda c: procs.load_mem(c.tmp / "missing.json"),
    # pounder.pool / pounder.tune: adapters and options
    "gunicorn-adapter-none": lambda c: pool.GunicornAdapter(None),
    "gunicorn-adapter-int": lambda c: pool.GunicornAdapter(123),
    "gunicorn-adapter-env-int": lambda c: pool.GunicornAdapter("app:app", env=5),
    "gunicorn-adapter-extra-args-text": lambda c: pool.GunicornAdapter("app:app", extra_args="--foo"),
    "gunicorn-adapter-preload-text": lambda c: pool.GunicornAdapter("app:app", preload="yes"),
    "starman-adapter-none": lambda c: pool.StarmanAdapter(None),
    "apache-adapter-int": lambda c: pool.ApacheAdapter(123),
    "apache-adapter-handlers-list": lambda c: pool.ApacheAdapter(perl_handlers=["/x"]),
    "command-adapter-none": lambda c: pool.CommandAdapter(None),
    "command-adapter-stop-signal-int": lambda c: pool.CommandAdapter("srv --port {port}", stop_signal=9),
    "make-adapter-kind-none": lambda c: pool.make_adapter(None, "app:app"),
    "make-adapter-kind-list": lambda c: pool.make_adapter(["gunicorn"], "app:app"),
    "make-adapter-target-int": lambda c: pool.make_adapter("gunicorn", 123),
    "adapter-from-dict-none": lambda c: pool.adapter_from_dict(None),
    "make-options-positional": lambda c: tune.make_options("/"),
    "make-options-unexpected-keyword": lambda c: tune.make_options(bogus=1),
    "make-options-clients-text": lambda c: tune.make_options(clients="x"),
    "make-options-clients-negative": lambda c: tune.make_options(clients=-3),
    "make-options-ram-list": lambda c: tune.make_options(ram=[1]),
    "make-options-ram-nonsense": lambda c: tune.make_options(ram="lots"),
    "make-options-p99-list": lambda c: tune.make_options(p99=[1]),
    "make-options-path-int": lambda c: tune.make_options(path=1),
    "make-options-mrpc-int": lambda c: tune.make_options(mrpc=5),
    "make-options-mrpc-list-of-text": lambda c: tune.make_options(mrpc=["x"]),
    "make-options-requests-per-child-text": lambda c: tune.make_options(requests_per_child="x"),
    "make-options-quick-text": lambda c: tune.make_options(quick="yes"),
    "make-options-point-duration-nonsense": lambda c: tune.make_options(point_duration="x"),
    "tune-adapter-none": lambda c: tune.tune(None, results=c.tmp / "t1"),
    "tune-options-text": lambda c: tune.tune(_gunicorn(), "fast", results=c.tmp / "t2"),
    "tune-options-clients-text": lambda c: tune.tune(_gunicorn(), tune.TuneOptions(clients="x"), results=c.tmp / "t3"),
    "tune-results-int": lambda c: tune.tune(_gunicorn(), results=123),
    "tune-resume-none": lambda c: tune.resume(None),
    "render-tune-none": lambda c: tune.render_tune(None),
    "results-dir-none": lambda c: pool.ResultsDir.open(None),
    "tune-resume-missing": lambda c: tune.resume(c.tmp / "missing"),
    # pounder.experiment
    "load-experiment-none": lambda c: experiment.load_experiment(None),
    "load-experiment-int": lambda c: experiment.load_experiment(123),
    "run-experiment-none": lambda c: experiment.run_experiment(None, c.tmp / "e1"),
    "run-experiment-path": lambda c: experiment.run_experiment("preload.toml", c.tmp / "e2"),
    # pounder.report
    "report-none": lambda c: report.render_report(None),
    "report-int": lambda c: report.render_report(123),
    "report-list-of-none": lambda c: report.render_report([None]),
    "report-list-of-int": lambda c: report.render_report([123]),
    "report-title-int": lambda c: report.render_report([c.tmp / "missing.json"], title=5),
    "write-report-none": lambda c: report.write_report(None, c.tmp / "r.html"),
    "write-report-out-none": lambda c: report.write_report([c.tmp / "missing.json"], None),
    "write-report-out-int": lambda c: report.write_report([c.tmp / "missing.json"], 123),
}


ServerHandle = Any  # tests/conftest.py's (not imported by name: tests/procs has a conftest too)


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerHandle]:
    """One test server for the whole table, started by tests/conftest.py's ``start_server``."""
    root_conftest = request.config.pluginmanager.get_plugin(str(Path(__file__).parent / "conftest.py"))
    srv = root_conftest.start_server(tmp_path_factory.mktemp("library-inputs"), "ok")
    try:
        yield srv
    finally:
        srv.stop()


def _children() -> set[int]:
    return {proc.pid for proc in psutil.Process().children(recursive=True)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_argument_is_a_usage_error(name: str, server: ServerHandle, tmp_path: Path) -> None:
    assert server.port is not None
    ctx = Ctx(server.url + "/", server.proc.pid, tmp_path)
    before, sent = _children(), server.stats(settle_s=0.05)["connections"]
    with pytest.raises(pounder.UsageError) as raised:
        CASES[name](ctx)
    message = str(raised.value)
    assert message and "\n" not in message and "Traceback" not in message
    assert type(raised.value).__name__ != "TypeError"
    assert _children() <= before, "a process was started"
    assert server.stats(settle_s=0.05)["connections"] == sent, "something was sent"
    assert not any(path.name in ("t1", "t2", "t3", "e1", "e2", "r.html") for path in tmp_path.iterdir())


def test_one_header_or_cookie_string_is_one_header_or_cookie() -> None:
    """``headers="X-A: b"`` means one header (it used to be read letter by letter: "invalid -H 'X'")."""
    spec = pounder.BenchSpec.from_options("http://127.0.0.1:9/", headers="X-A: b", cookies="s=1")
    assert spec.http.headers == (("Cookie", "<redacted>"), ("X-A", "b"))
    request = spec.targets[0].request
    assert b"\r\nX-A: b\r\n" in request and b"\r\nCookie: s=1\r\n" in request


# --- Issue 14, item A (QA): a call that does not fit a public callable's signature -----------------
# Every function and every class (its constructor) in the __all__ of pounder and of each package
# face is checked by pounder._errors.public: the cases are generated from __all__, so a new one is
# covered (and must be decorated) without touching this file.

FACES = (pounder, agents, cli, compare_pkg, experiment, load, pool, procs, report, results, servers, syscalls, traffic,
         tune)


def _public_callables() -> dict[str, Any]:
    """``"face.name": object`` for each function and constructible class of the faces' ``__all__``
    (exceptions, abstract classes and type aliases are not called by users), each object once."""
    found: dict[str, Any] = {}
    seen: set[int] = set()
    for face in FACES:
        for name in face.__all__:
            obj = getattr(face, name)
            is_class = inspect.isclass(obj) and not issubclass(obj, BaseException) and not inspect.isabstract(obj)
            if (inspect.isfunction(obj) or is_class) and id(obj) not in seen:
                seen.add(id(obj))
                found[f"{face.__name__}.{name}"] = obj
    return found


PUBLIC = _public_callables()


def _misfits() -> dict[str, tuple[Any, tuple[Any, ...], dict[str, Any], str]]:
    """``"face.name-problem": (callable, args, kwargs, expected message)``."""
    cases: dict[str, tuple[Any, tuple[Any, ...], dict[str, Any], str]] = {}
    kind = inspect.Parameter
    for key, obj in PUBLIC.items():
        name, params = obj.__name__, list(inspect.signature(obj).parameters.values())
        kinds = {param.kind for param in params}
        positional = [p.name for p in params if p.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD)]
        if kind.VAR_POSITIONAL not in kinds:
            too_many = (None,) * (len(positional) + 1)
            takes = (f"takes {len(positional)} positional argument{'' if len(positional) == 1 else 's'} "
                     f"({', '.join(positional)})" if positional else "takes no positional arguments")
            cases[f"{key}-too-many-positional"] = (obj, too_many, {}, f"{name}: {takes}, got {len(too_many)}")
        if kind.VAR_KEYWORD not in kinds:
            cases[f"{key}-unexpected-keyword"] = (obj, (), {"bogus": 1}, f"{name}: unexpected argument 'bogus'")
        required = [p.name for p in params if p.default is p.empty and p.kind not in (kind.VAR_POSITIONAL,
                                                                                      kind.VAR_KEYWORD)]
        if required:
            cases[f"{key}-missing"] = (obj, (), {}, f"{name}: missing argument{'' if len(required) == 1 else 's'} "
                                       + ", ".join(repr(r) for r in required))
    return cases


MISFITS = _misfits()


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_callable_is_checked(name: str) -> None:
    obj = PUBLIC[name]
    marked = vars(obj).get("__pounder_public__") if inspect.isclass(obj) else getattr(obj, "__pounder_public__", None)
    assert marked is True, f"{name} is not decorated with pounder._errors.public"
    function = obj.__init__ if inspect.isclass(obj) else obj
    original = function.__wrapped__  # functools.wraps: the name, docstring and signature are the original's
    assert (function.__name__, function.__doc__) == (original.__name__, original.__doc__)
    assert inspect.signature(function) == inspect.signature(original)


@pytest.mark.parametrize("case", sorted(MISFITS))
def test_wrong_signature_is_a_usage_error(case: str) -> None:
    obj, args, kwargs, expected = MISFITS[case]
    before = _children()
    with pytest.raises(pounder.UsageError) as raised:
        obj(*args, **kwargs)
    assert str(raised.value) == expected
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert _children() <= before, "a process was started"


def test_a_type_error_inside_a_public_function_stays_a_type_error() -> None:
    """Only a call that does not fit the signature becomes a UsageError."""

    @pounder_errors.public
    def broken(value: int) -> int:
        return value + "1"  # type: ignore[operator, no-any-return]

    with pytest.raises(TypeError, match="unsupported operand"):
        broken(1)
    assert inspect.signature(broken) == inspect.signature(broken.__wrapped__)  # type: ignore[attr-defined]
