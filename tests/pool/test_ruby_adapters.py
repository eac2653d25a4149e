"""The Puma and Unicorn adapters without starting a server: render, plain data, checks of the
rackup file, and the request limit neither server has."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pounder import UsageError
from pounder.pool import (
    ADAPTERS,
    TARGET_FIELDS,
    ChildLimit,
    PoolParams,
    PumaAdapter,
    UnicornAdapter,
    adapter_from_dict,
    make_adapter,
    refused_option,
)
from support.leftovers import processes_mentioning

RACK_APP = Path(__file__).resolve().parents[1] / "apps" / "rack_app.ru"
RUBY = [PumaAdapter, UnicornAdapter]


def test_registered_by_kind_with_the_rackup_as_target() -> None:
    assert ADAPTERS["puma"] is PumaAdapter and ADAPTERS["unicorn"] is UnicornAdapter
    assert TARGET_FIELDS["puma"] == TARGET_FIELDS["unicorn"] == "rackup"
    for cls in RUBY:
        assert cls.request_limit is False and cls.preload_toggle is True
        assert set(cls.names) == {"max_clients", "max_requests", "start_servers", "min_spare", "max_spare", "preload",
                                  "threads"}
    assert PumaAdapter.options == frozenset({"preload", "env", "threads", "fork_worker"})
    assert UnicornAdapter.options == frozenset({"preload", "env"})
    assert PumaAdapter.names["max_clients"] == "workers" and PumaAdapter.names["preload"] == "preload_app!"
    assert UnicornAdapter.names["max_clients"] == "worker_processes"
    assert (PumaAdapter.names["threads"], UnicornAdapter.names["threads"]) == ("threads", "-")
    assert refused_option("puma", "pythonpath").startswith("--pythonpath is for gunicorn")
    assert refused_option("unicorn", "preload") is None and refused_option("unicorn", "env") is None


@pytest.mark.parametrize("kind", ["puma", "unicorn"])
def test_preload_defaults_to_the_servers_own_and_round_trips(kind: str) -> None:
    assert make_adapter(kind, RACK_APP).preload is False  # Puma 5.6 (workers in its file) and Unicorn 6
    adapter = make_adapter(kind, RACK_APP, preload=True, env={"APP_DATA_MB": "40"}, extra_args=("-q",))
    plain = adapter.to_dict()
    assert plain == {"kind": kind, "rackup": str(RACK_APP), "preload": True, "env": {"APP_DATA_MB": "40"},
                     "extra_args": ["-q"]}  # Puma's threads stored only when given: tune compares them otherwise
    again = adapter_from_dict(json.loads(json.dumps(plain)), check=True)
    assert type(again) is type(adapter) and again.to_dict() == plain and again.describe() == adapter.describe()
    assert not again.threads_fixed
    assert adapter.input_files() == [("rackup file", str(RACK_APP))]


def test_pumas_threads_given_are_stored_and_kept_by_tune() -> None:
    given = make_adapter("puma", RACK_APP, threads="4")
    assert given.to_dict()["threads"] == [4, 4] and given.threads_fixed
    again = adapter_from_dict(json.loads(json.dumps(given.to_dict())), check=True)
    assert again.threads_fixed and again.to_dict() == given.to_dict()
    # a run stored before tune compared threads wrote Puma's 1,1 every time: read as given (kept)
    assert adapter_from_dict({**make_adapter("puma", RACK_APP).to_dict(), "threads": [1, 1]}).threads_fixed


@pytest.mark.parametrize(("given", "threads"), [
    (None, (1, 1)), ("4", (4, 4)), ("1,4", (1, 4)), ("0:8", (0, 8)), (" 2 , 2 ", (2, 2)), (3, (3, 3)),
    ((1, 2), (1, 2)), ([2, 6], (2, 6)),
])
def test_puma_threads_round_trip_and_are_rendered(given: Any, threads: tuple[int, int]) -> None:
    """--threads N is Puma's -t N (threads N, N); MIN,MAX as its own; stored as [MIN, MAX] when
    given, and none given (no key) is threads 1, 1."""
    adapter = make_adapter("puma", RACK_APP, threads=given)
    assert isinstance(adapter, PumaAdapter) and adapter.threads == threads
    plain = adapter.to_dict()
    assert plain.get("threads") == (None if given is None else list(threads))  # stored when given
    again = adapter_from_dict(json.loads(json.dumps(plain)), check=True)
    assert isinstance(again, PumaAdapter) and again.threads == threads and again.to_dict() == plain
    old = {key: value for key, value in plain.items() if key != "threads"}
    assert adapter_from_dict(old).threads == (1, 1) and not adapter_from_dict(old).threads_fixed
    text = adapter.render(PoolParams(3))
    assert f"threads {threads[0]}, {threads[1]}" in text.splitlines()
    assert f"threads {threads[0]},{threads[1]}" in adapter.describe()
    server = adapter.server(PoolParams(2), Path("/nonexistent"))
    assert server.settings.threads == threads  # type: ignore[attr-defined]  # what the pools are measured with


@pytest.mark.parametrize("bad", ["0", "4,2", "a", "1,2,3", "", "-1,2", "1,2000", 0, True, 2.5, [1], [1, 2, 3],
                                 ["1", "2"]])
def test_bad_puma_threads_are_one_line_before_anything_starts(bad: Any) -> None:
    with pytest.raises(UsageError) as caught:
        make_adapter("puma", RACK_APP, threads=bad)
    message = str(caught.value)
    assert message.startswith("puma: threads must be N or MIN,MAX with 0 <= MIN <= MAX and 1 <= MAX <= 1024, not ")
    assert "\n" not in message


@pytest.mark.parametrize("kind", [kind for kind in ADAPTERS if kind != "puma"])
def test_threads_are_puma_only(kind: str) -> None:
    assert refused_option(kind, "threads") == "--threads is for puma only"
    assert refused_option(kind, "threads", called="threads") == "threads is for puma only"
    assert refused_option("puma", "threads") is None


def test_relative_rackup_is_made_absolute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(RACK_APP.parent)
    assert PumaAdapter("rack_app.ru").rackup == RACK_APP


def test_puma_render_is_a_config_file_and_its_command_line() -> None:
    adapter = PumaAdapter(RACK_APP, env={"APP_DATA_MB": "40"})
    text = adapter.render(PoolParams(3, preload=True))
    lines = text.splitlines()
    assert lines[:7] == ["# puma.rb", "workers 3", "threads 1, 1", "preload_app! true", 'environment "production"',
                         "# threads 1, 1: as measured, one request per worker at a time", lines[6]]
    assert lines[6].startswith("# bind: yours")
    assert lines[-1] == f"env APP_DATA_MB=40 puma -C puma.rb {RACK_APP}"
    assert "preload_app! false" in adapter.render(PoolParams(3))  # the adapter's own: off
    assert "requests per worker" not in text


def test_unicorn_render_is_a_config_file_and_its_command_line() -> None:
    adapter = UnicornAdapter(RACK_APP, preload=True, extra_args=("-N",))
    text = adapter.render(PoolParams(4))
    lines = text.splitlines()
    assert lines[:5] == ["# unicorn.conf.rb", "worker_processes 4", "preload_app true", "timeout 60", lines[4]]
    assert lines[4].startswith("# listen: yours")
    assert lines[-1] == f"unicorn -E production -c unicorn.conf.rb -N {RACK_APP}"
    assert "preload_app false" in adapter.render(PoolParams(4, preload=False))


@pytest.mark.parametrize("cls", RUBY)
def test_no_request_limit_is_refused_before_anything_starts(cls: Any, tmp_path: Path) -> None:
    adapter = cls(RACK_APP)
    with pytest.raises(UsageError, match=r"has no limit on the requests a worker serves") as refused:
        adapter.server(PoolParams(2, max_requests=100), tmp_path / "w")
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "w").exists() and processes_mentioning(str(tmp_path)) == []
    assert adapter.server(PoolParams(2), tmp_path / "w").workdir == (tmp_path / "w").resolve()  # not started
    assert f"{adapter.who.capitalize()} has no such limit" in adapter.render(PoolParams(2, max_requests=100))


@pytest.mark.parametrize("kind", ["puma", "unicorn"])
def test_a_bad_rackup_is_one_line_before_anything_starts(kind: str, tmp_path: Path) -> None:
    big = tmp_path / "big.ru"
    with open(big, "wb") as file:
        file.truncate(2 * 1024 * 1024)
    cases = {tmp_path / "missing.ru": "no such rackup file", tmp_path: "is a directory",
             Path(os.devnull): "not a regular file", big: "larger than the limit"}
    for path, words in cases.items():
        with pytest.raises(UsageError, match=words) as failed:
            make_adapter(kind, path)
        assert str(failed.value).startswith(f"{kind}: ") and "\n" not in str(failed.value)
        make_adapter(kind, path, check=False)  # a stored run is still described
    with pytest.raises(UsageError, match="rackup"):
        make_adapter(kind, None)


LIMIT = ChildLimit(children=3, start=30 * 2**20, limit=60 * 2**20, shared=20 * 2**20, requests=4000, parent=50 * 2**20)


def test_puma_worker_killer_ram_is_the_summed_rss_of_a_full_budget() -> None:
    text = PumaAdapter(RACK_APP).size_limit(LIMIT)
    # master 50 + 3 x (20 shared + 60 private) = 290 MiB of summed RSS
    assert "c.ram = 290;" in text and "= 290 MiB" in text
    assert "after about 4,000 requests" in text
    assert "after about" not in PumaAdapter(RACK_APP).size_limit(ChildLimit(3, 30 * 2**20, 60 * 2**20, 20 * 2**20, 0))


def test_unicorn_worker_killer_limits_rss_at_the_budget_share_and_requests_at_the_leak() -> None:
    text = UnicornAdapter(RACK_APP).size_limit(LIMIT)
    high = (60 + 20) * 2**20
    low = high - (high - (30 + 20) * 2**20) // 10
    assert f"use Unicorn::WorkerKiller::Oom, {low}, {high}" in text
    assert "use Unicorn::WorkerKiller::MaxRequests, 3600, 4000" in text
    no_leak = UnicornAdapter(RACK_APP).size_limit(ChildLimit(3, 30 * 2**20, 60 * 2**20, 20 * 2**20, 0))
    assert "MaxRequests" not in no_leak and "Oom" in no_leak


@pytest.mark.parametrize("given", [None, 0, 300])
def test_puma_fork_worker_round_trips_and_is_rendered(given: int | None) -> None:
    """fork_worker N is Puma's own line in puma.rb and in the server pounder starts; stored only
    when given (a run stored without it, or before it existed, is off)."""
    adapter = make_adapter("puma", RACK_APP, fork_worker=given)
    assert isinstance(adapter, PumaAdapter) and adapter.fork_worker == given
    plain = adapter.to_dict()
    assert plain.get("fork_worker") == given and ("fork_worker" in plain) == (given is not None)
    again = adapter_from_dict(json.loads(json.dumps(plain)), check=True)
    assert isinstance(again, PumaAdapter) and again.fork_worker == given and again.to_dict() == plain
    lines = adapter.render(PoolParams(3)).splitlines()
    assert [line for line in lines if line.startswith("fork_worker")] == ([] if given is None else
                                                                          [f"fork_worker {given}"])
    assert (f"fork_worker {given}" in adapter.describe()) == (given is not None)
    server = adapter.server(PoolParams(2), Path("/nonexistent"))
    assert server.settings.fork_worker == given  # type: ignore[attr-defined]
    assert server.nested_workers == (given is not None)


@pytest.mark.parametrize("bad", [-1, True, 2.5, "300", 10**9 + 1])
def test_bad_puma_fork_worker_is_one_line(bad: Any) -> None:
    with pytest.raises(UsageError) as caught:
        make_adapter("puma", RACK_APP, fork_worker=bad)
    assert str(caught.value).startswith("puma: fork_worker must be a number of requests from 0 (never refork) to ")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("kind", [kind for kind in ADAPTERS if kind != "puma"])
def test_fork_worker_is_puma_only(kind: str) -> None:
    assert refused_option(kind, "fork_worker", called="fork_worker") == "fork_worker is for puma only"
    assert refused_option("puma", "fork_worker") is None
