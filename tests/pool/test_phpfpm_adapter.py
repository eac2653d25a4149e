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
from pounder.servers import PhpFpmServer, fpm_status, parse_pool_conf, phpfpm_missing
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
        "min_spare": "pm.min_spare_servers", "max_spare": "pm.max_spare_servers", "preload": "opcache.preload"}
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
        f"; in {POOL_CONF}, pool [www]:\npm = static\npm.max_children = 6\npm.max_requests = 500")
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
        rendered = [line for line in adapter.render(params).splitlines() if not line.startswith(";")]
        assert [line.split("  ;")[0] for line in rendered] == server.settings.lines()


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
        assert after["accepted conn"] - before["accepted conn"] == 45 + 1
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
