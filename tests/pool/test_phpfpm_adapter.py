"""The php-fpm adapter (pounder.pool.PhpFpmAdapter): its plain-data form, its recommendation in
php-fpm's syntax, its checks before anything starts, and one measured load through the Runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pounder import UsageError
from pounder.pool import (
    ADAPTERS,
    TARGET_FIELDS,
    PhpFpmAdapter,
    PoolParams,
    Runner,
    adapter_from_dict,
    make_adapter,
    refused_option,
)
from pounder.servers import PHP_FPM_STATUS, PhpFpmServer, parse_pool_conf, phpfpm_missing
from pounder.servers._phpfpm import fpm_status
from pounder.tune._points import aggregate_trials
from support.leftovers import processes_mentioning

TESTS = Path(__file__).resolve().parents[1]
PHP_APP = TESTS / "apps" / "php"
POOL_CONF = PHP_APP / "pool.conf"
needs_phpfpm = pytest.mark.skipif(phpfpm_missing() is not None, reason=str(phpfpm_missing()))


def _adapter(**options: object) -> PhpFpmAdapter:
    return PhpFpmAdapter(POOL_CONF, root=PHP_APP, **options)  # type: ignore[arg-type]


def test_declared_once() -> None:
    assert ADAPTERS["php-fpm"] is PhpFpmAdapter and TARGET_FIELDS["php-fpm"] == "conf"
    assert PhpFpmAdapter.kind == PhpFpmAdapter.who == "php-fpm"
    assert PhpFpmAdapter.options == {"root", "env"}
    assert PhpFpmAdapter.on_demand and not PhpFpmAdapter.preload_toggle
    assert PhpFpmAdapter.max_requests_counts == "requests" and PhpFpmAdapter.request_limit
    assert dict(PhpFpmAdapter.names) == {
        "max_clients": "pm.max_children", "max_requests": "pm.max_requests", "start_servers": "pm.start_servers",
        "min_spare": "pm.min_spare_servers", "max_spare": "pm.max_spare_servers", "preload": "opcache.preload",
        "threads": "-"}
    assert refused_option("php-fpm", "root") is None and refused_option("php-fpm", "env") is None
    refused = refused_option("php-fpm", "preload")
    assert refused is not None and "opcache.preload" in refused
    assert "php-fpm" in (refused_option("gunicorn", "root") or "")


def test_round_trip() -> None:
    adapter = _adapter(env={"APP_MODE": "x"})
    plain = adapter.to_dict()
    assert plain == {"kind": "php-fpm", "conf": str(POOL_CONF), "root": str(PHP_APP), "env": {"APP_MODE": "x"}}
    again = adapter_from_dict(json.loads(json.dumps(plain)))
    assert isinstance(again, PhpFpmAdapter) and again.to_dict() == plain
    assert again.describe() == adapter.describe() == f"php-fpm pool [www] of {POOL_CONF} serving {PHP_APP}"
    assert not again.preload
    assert adapter.input_files() == [("pool file", str(POOL_CONF))]


def test_render_in_php_fpm_syntax() -> None:
    adapter = _adapter()
    assert adapter.render(PoolParams(6, max_requests=500)) == (
        f"; in {POOL_CONF}, pool [www]:\npm = static\npm.max_children = 6\npm.max_requests = 500\n"
        "; pounder measured it as pm = dynamic, pm.start_servers = pm.max_spare_servers = 6, pm.min_spare_servers = 1:"
        "\n; every child started and kept, as static, and php-fpm counting 'max children reached'")
    assert adapter.render(PoolParams(8, start_servers=5, min_spare=2, max_spare=6)).splitlines()[1:] == [
        "pm = dynamic", "pm.max_children = 8", "pm.start_servers = 5", "pm.min_spare_servers = 2",
        "pm.max_spare_servers = 6", "pm.max_requests = 0  ; 0: never replaced"]
    # php-fpm refuses spare bounds above pm.max_children (Apache raises them itself): capped, as run
    lines = adapter.render(PoolParams(1, start_servers=1, min_spare=1, max_spare=2)).splitlines()
    assert lines[3:6] == ["pm.start_servers = 1", "pm.min_spare_servers = 1", "pm.max_spare_servers = 1"]


def test_the_rendered_lines_are_what_is_run(tmp_path: Path) -> None:
    adapter = _adapter()
    for params in (PoolParams(3, max_requests=7), PoolParams(4, start_servers=4, min_spare=1, max_spare=5),
                   PoolParams(2, start_servers=1, min_spare=3, max_spare=2)):
        server = adapter.server(params, tmp_path, cpus=[1, 0, 1])
        assert isinstance(server, PhpFpmServer) and server.cpus == (0, 1) and server.front.cpus == (0, 1)
        rendered = [line.split("  ;")[0] for line in adapter.render(params).splitlines() if not line.startswith(";")]
        if params.start_servers is None:  # a fixed pool: recommended static, run as its dynamic equivalent
            n = params.max_clients
            assert rendered == ["pm = static", f"pm.max_children = {n}", f"pm.max_requests = {params.max_requests}"]
            rendered = ["pm = dynamic", f"pm.max_children = {n}", f"pm.start_servers = {n}", "pm.min_spare_servers = 1",
                        f"pm.max_spare_servers = {n}", rendered[-1]]
        assert rendered == server.settings.lines()


def test_make_adapter() -> None:
    adapter = make_adapter("php-fpm", POOL_CONF, root=PHP_APP, env={"A": "1"}, preload=True)
    assert isinstance(adapter, PhpFpmAdapter) and adapter.env == {"A": "1"} and adapter.root == PHP_APP


def test_bad_input_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    two = tmp_path / "two.conf"
    two.write_text("[a]\npm = static\n[b]\npm = static\n")
    cases = [
        ({"target": POOL_CONF, "root": None}, "php-fpm: no document root given"),
        ({"target": tmp_path / "none.conf", "root": PHP_APP}, "php-fpm: no such pool file"),
        ({"target": POOL_CONF, "root": tmp_path / "nowhere"}, "is not a directory"),
        ({"target": two, "root": PHP_APP}, "more than one pool"),
    ]
    for options, words in cases:
        with pytest.raises(UsageError, match=words) as refused:
            make_adapter("php-fpm", options["target"], root=options["root"])  # type: ignore[arg-type]
        assert "\n" not in str(refused.value)


@needs_phpfpm
def test_check_lets_php_fpm_test_the_pool_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.conf"
    bad.write_text("[www]\npm.max_children = 4\npm.bogus = 3\n")
    with pytest.raises(UsageError) as refused:
        make_adapter("php-fpm", bad, root=PHP_APP)
    assert str(refused.value) == f"php-fpm refuses {bad}: ERROR: [{bad}:3] unknown entry 'pm.bogus'"
    adapter = make_adapter("php-fpm", bad, root=PHP_APP, check=False)  # a stored run is described unchecked
    assert adapter.describe().startswith("php-fpm pool [www]")


@needs_phpfpm
def test_a_measured_load_counts_the_pool_not_the_front(tmp_path: Path) -> None:
    runner = Runner(_adapter(), tmp_path / "servers", "/sleep.php?ms=20", memory_floor=0, timeout_s=10.0)
    with runner.started(PoolParams(1)) as server:
        assert isinstance(server, PhpFpmServer)
        before = fpm_status(server.status_url)
        queue = runner.queue_watch(server)
        assert queue.port == server.port != server.front.port  # php-fpm's own listen queue
        result = runner.bench(server, 3, requests=45, sample=False, queue=queue)
        assert result.requests.complete == 45 and result.requests.failed == 0
        after = fpm_status(server.status_url)
        # the queue watch read the status page right before and after the load: two requests more
        assert after["accepted conn"] - before["accepted conn"] == 45 + 2 + 1
        assert queue.server_status is not None and queue.server_status["accepted"] == 45
        # one child, three clients: two of them wait in php-fpm's queue nearly all the time
        assert queue.share is not None and queue.share > 0.5, (queue.samples, queue.waiting)
        # (php-fpm's own "max listen queue" is sampled once a second by its master: too coarse here)
        shot = runner.snapshot(server)
        assert [c.pid for c in shot.children] == server.children()
        members = {m.pid for m in runner.tree(server).members}
        assert server.front.pid not in members and members == {server.pid, *server.children()}
    assert processes_mentioning(str(tmp_path)) == []


def test_pool_conf_example_is_one_pool() -> None:
    assert parse_pool_conf(POOL_CONF.read_text()).name == "www"


def test_status_change_of_php_fpms_counters() -> None:
    before = {"accepted conn": 10, "max children reached": 0, "max listen queue": 0, "slow requests": 1}
    after = {"accepted conn": 111, "max children reached": 1, "max listen queue": 3, "slow requests": 1}
    assert PHP_FPM_STATUS.change(before, after) == {"accepted": 100, "slow_requests": 0, "max_children_reached": 1,
                                            "max_listen_queue": 3}
    # counted while warming: php-fpm counts it once until it starts a child, the load's cannot show
    # (None, not 0); a largest listen queue that did not grow during the load cannot be told either
    latched = PHP_FPM_STATUS.change({**before, "max children reached": 1, "max listen queue": 2},
                            {**after, "max children reached": 1, "max listen queue": 2})
    assert latched is not None and latched["max_children_reached"] is None and latched["max_listen_queue"] is None
    never = PHP_FPM_STATUS.change({**before, "max listen queue": 0}, {**after, "max listen queue": 0})
    assert never is not None and never["max_listen_queue"] == 0
    assert PHP_FPM_STATUS.change(None, after) is None and PHP_FPM_STATUS.change(before, None) is None


def _trial_status(children: int, queued: float, rose: int | None, queue: int | None) -> dict[str, object]:
    return {"children": children, "max_requests": 0, "connections": 4, "complete": 100, "failed": 0, "rps": 100.0,
            "queued": queued, "server_status": {"accepted": 100, "slow_requests": 0, "max_children_reached": rose,
                                                "max_listen_queue": queue}}


def test_status_note_agrees_with_the_queued_column() -> None:
    points = [aggregate_trials([_trial_status(1, 0.99, 1, 3), _trial_status(1, 0.98, None, 3)]),
              aggregate_trials([_trial_status(4, 0.0, 1, 0), _trial_status(4, 0.01, 1, 0)])]
    assert points[0]["server_status"] == {"trials": 2, "listen_queue": 2, "listen_queue_seen": 2, "max_listen_queue": 3,
                                          "max_children_reached": 1, "max_children_seen": 1, "accepted": 200,
                                          "slow_requests": 0}
    note = PHP_FPM_STATUS.note(points)
    assert note.startswith("php-fpm's status page, read before and after each load: its listen queue held connections "
                           "in 2 of 2 trials (up to 3) of 1 child: requests waited for a free child, pm.max_children "
                           "smaller than the clients there, as the queued column says"), note
    assert "4 children" not in note.split(";")[0]  # no queue there, as queued (0 %) says
    assert "'max children reached' rose (no child idle at one of its checks) in 1 of 1 trials of 1 child, 2 of 2 " \
           "trials of 4 children" in note
    assert "counted before the load (while warming) in 1 of 4 trials" in note
    # php-fpm's once-a-second checks missed a queue pounder's watch saw: said, never "no queue"
    missed = PHP_FPM_STATUS.note([aggregate_trials([_trial_status(2, 0.5, 0, 0)])])
    assert "at 2 children its checks saw no listen queue where pounder's watch found connections waiting" in missed
    assert PHP_FPM_STATUS.note([aggregate_trials([{**_trial_status(2, 0.5, 0, 0), "server_status": None}])]) == ""


@needs_phpfpm
def test_php_fpms_status_page_during_trials_agrees_with_the_accept_queue(tmp_path: Path) -> None:
    """A pool smaller than the load (1 child, 4 clients): php-fpm's listen queue held connections
    during the load, as pounder's accept-queue watch says; a pool larger than it (2 children, 1
    client): neither saw any. The trials as tune stores them, then the text tune prints of them."""
    runner = Runner(_adapter(), tmp_path / "servers", "/sleep.php?ms=20", memory_floor=0, timeout_s=10.0)
    trials = {}
    for children, clients in ((1, 4), (2, 1)):
        with runner.started(PoolParams(children)) as server:
            assert isinstance(server, PhpFpmServer) and server.settings.pm == "dynamic"  # counts max children
            runner.warm(server)
            queue = runner.queue_watch(server)
            result = runner.bench(server, clients, duration=2.0, queue=queue)
            status = queue.server_status
            assert status is not None and server.status_counters() is not None
            assert len(server.children()) == children
        done = result.requests.complete + result.requests.failed
        # every request the load sent reached php-fpm (and only they: the status reads left out)
        assert status["accepted"] == done, (status, done)
        trials[children] = {"children": children, "max_requests": 0, "connections": clients, "trial": 1,
                            "complete": result.requests.complete, "failed": result.requests.failed,
                            "rps": result.derived.requests_per_s, "queued": queue.share, "server_status": status}
    small, large = trials[1], trials[2]
    assert small["queued"] is not None and small["queued"] > 0.5 and small["server_status"]["max_listen_queue"] >= 1
    assert large["queued"] is not None and large["queued"] < 0.1 and large["server_status"]["max_listen_queue"] == 0
    assert small["server_status"]["max_children_reached"] in (1, None)  # None: counted while warming
    assert large["server_status"]["max_children_reached"] in (0, None)  # one client: a child always idle
    note = PHP_FPM_STATUS.note([aggregate_trials([small]), aggregate_trials([large])])
    assert "its listen queue held connections in 1 of 1 trials (up to " in note
    assert "of 1 child: requests waited for a free child, pm.max_children smaller than the clients there" in note
    assert "2 children" not in note, note
    assert processes_mentioning(str(tmp_path)) == []
