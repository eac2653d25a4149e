"""The results directory (:class:`~pounder.pool.ResultsDir`), without starting a server."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pounder import UsageError
from pounder._errors import PounderError
from pounder.pool import POINT_SCHEMA, RESULT_SCHEMA, TUNE_SCHEMA, PoolParams, ResultsDir

# ---------------------------------------------------------------------------------------------
# ResultsDir

MANIFEST = {"tool_version": "0", "started_at": "2024-01-01T00:00:00.000Z", "adapter": {"kind": "gunicorn"},
            "options": {"clients": 4}}


def test_create(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "run"
    results = ResultsDir.create(target, MANIFEST)
    assert results.path == target.resolve()
    assert json.loads((target / "tune.json").read_text()) == {"schema": TUNE_SCHEMA, **MANIFEST}
    # the lock of the process writing it (held until release or exit: a second writer is refused)
    assert sorted(p.name for p in target.iterdir()) == [".pounder.lock", "tune.json"]
    assert (target / ".pounder.lock").read_text() == f"{os.getpid()}\n"
    with pytest.raises(UsageError, match=f"is in use by another pounder \\(pid {os.getpid()}\\)"):
        ResultsDir(target).hold()
    results.release()
    ResultsDir(target).hold()
    assert results.manifest_path == target / "tune.json"
    assert results.result_path == target / "recommendation.json"
    assert results.servers_dir == target / "servers"


def test_create_in_an_empty_directory(tmp_path: Path) -> None:
    ResultsDir.create(tmp_path, MANIFEST)
    assert (tmp_path / "tune.json").is_file()


def test_create_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    with pytest.raises(UsageError) as caught:
        ResultsDir.create(tmp_path, MANIFEST)
    assert str(caught.value) == (f"the results directory {tmp_path} already exists and is not empty (use --resume "
                                 "to continue a run there, or another --results)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_create_refuses_a_finished_run(tmp_path: Path) -> None:
    ResultsDir.create(tmp_path / "run", MANIFEST)
    before = (tmp_path / "run" / "tune.json").read_text()
    with pytest.raises(UsageError, match="already exists and is not empty"):
        ResultsDir.create(tmp_path / "run", {**MANIFEST, "tool_version": "1"})
    assert (tmp_path / "run" / "tune.json").read_text() == before


def test_create_refuses_a_file(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(UsageError) as caught:
        ResultsDir.create(path, MANIFEST)
    assert str(caught.value) == f"the results directory {path} is a file, not a directory (give another --results)"
    assert path.read_text() == "x"


def test_create_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="cannot create the results directory"):
        ResultsDir.create(tmp_path / "file" / "run", MANIFEST)


def test_open(tmp_path: Path) -> None:
    ResultsDir.create(tmp_path / "run", MANIFEST)
    results, manifest = ResultsDir.open(tmp_path / "run")
    assert results.path == (tmp_path / "run").resolve()
    assert manifest == {"schema": TUNE_SCHEMA, **MANIFEST}


def test_open_without_tune_json(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        ResultsDir.open(tmp_path)
    assert str(caught.value) == f"{tmp_path} is not a pounder tune results directory (no tune.json in it)"
    with pytest.raises(UsageError, match="no tune.json in it"):
        ResultsDir.open(tmp_path / "missing")
    (tmp_path / "tune.json").mkdir()  # not a file
    with pytest.raises(UsageError, match="no tune.json in it"):
        ResultsDir.open(tmp_path)


def test_open_another_document(tmp_path: Path) -> None:
    (tmp_path / "tune.json").write_text(json.dumps({"schema": "pounder/bench-result/1"}))
    with pytest.raises(UsageError, match=re.escape("tune.json is not a pounder/tune/2 document")):
        ResultsDir.open(tmp_path)
    (tmp_path / "tune.json").write_text(json.dumps({"schema": "pounder/tune/1", **MANIFEST}))
    with pytest.raises(UsageError, match=re.escape(f"{tmp_path} was made by an older pounder (pounder/tune/1: one "
                                                   "trial per point) and cannot be resumed; start a new run")):
        ResultsDir.open(tmp_path)
    (tmp_path / "tune.json").write_text("[1, 2]")
    with pytest.raises(PounderError, match="does not hold a JSON object"):
        ResultsDir.open(tmp_path)
    (tmp_path / "tune.json").write_text("{")
    with pytest.raises(PounderError, match="is not valid JSON"):
        ResultsDir.open(tmp_path)


POINT = {"step": "children", "params": PoolParams(4).to_dict(), "started_at": "2024-01-01T00:00:01.000Z",
         "finished_at": "2024-01-01T00:00:07.000Z", "summary": {"children": 4, "rps": 1234.5, "p99_ms": 9.75},
         "bench": {"anything": [1, 2, 3]}}


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_save_and_load_point(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    assert results.load_point("children-4") is None
    results.save_point("children-4", POINT)
    loaded = results.load_point("children-4")
    assert loaded == {"schema": POINT_SCHEMA, "key": "children-4", **POINT}
    assert _names(tmp_path / "run" / "points") == ["children-4.json"]  # no temporary file left
    assert (tmp_path / "run" / "points" / "children-4.json").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    assert (tmp_path / "run" / "tune.json").stat().st_mode & 0o777 == 0o644
    assert results.point_path("children-4") == tmp_path / "run" / "points" / "children-4.json"
    # a second save replaces the point whole
    results.save_point("children-4", {**POINT, "summary": {"rps": 1.0}})
    assert results.load_point("children-4")["summary"] == {"rps": 1.0}  # type: ignore[index]
    assert _names(tmp_path / "run" / "points") == ["children-4.json"]


def test_point_keys(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    for key in ("sizes", "sizes-preload-on", "mrpc-4-10000", "spare-before", "children-16"):
        results.point_path(key)
    for bad in ("", "../escape", "Sizes", "-x", "a/b", "a b", "a.json"):
        with pytest.raises(ValueError, match="bad point key"):
            results.point_path(bad)


def test_load_point_checks_its_key_and_schema(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    results.save_point("children-2", POINT)
    (tmp_path / "run" / "points" / "children-2.json").rename(tmp_path / "run" / "points" / "children-8.json")
    with pytest.raises(UsageError, match="children-8.json is not a pounder point \\(key 'children-2', not "
                                         "'children-8' as its name says\\); remove it to measure that point again"):
        results.load_point("children-8")
    (tmp_path / "run" / "points" / "children-1.json").write_text(json.dumps({"key": "children-1"}))
    with pytest.raises(UsageError, match="\\(schema None, not pounder/tune-point/2\\)"):
        results.load_point("children-1")


def _corrupt(path: Path, how: str) -> None:
    path.unlink()
    if how == "directory":
        path.mkdir()
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "dangling link":
        path.symlink_to(path.parent / "gone.json")
    elif how == "negative count":  # a real point (the demo's), one count edited
        point = json.loads((Path(__file__).resolve().parents[1] / "data/tune-demo/points/sizes.json").read_text())
        point["summary"]["warm_requests"] = -5
        path.write_text(json.dumps(point))
    else:
        path.write_bytes({"empty": b"", "truncated": b'{"schema": "pounder/tune-point/1",\n  "key": "si',
                          "not utf-8": b'{"a": "\xff"}', "a list": b"[1, 2]",
                          "no summary": json.dumps({"schema": POINT_SCHEMA, "key": "sizes"}).encode()}[how])


@pytest.mark.parametrize(("how", "problem"), [
    ("empty", "(empty)"), ("truncated", "(line 2: Unterminated string starting at column 10)"),
    ("not utf-8", "(not UTF-8 text)"), ("a list", "(not a JSON object)"), ("no summary", "(no step or summary)"),
    ("directory", "(not a regular file)"), ("fifo", "(not a regular file)"), ("dangling link", "(not a regular file)"),
    ("negative count", "('summary.warm_requests' must be a whole number >= 0, got -5)"),
])
def test_a_corrupt_point_is_named_with_what_to_do(tmp_path: Path, how: str, problem: str) -> None:
    """Issue 14, item 14: bad input (UsageError) naming the file, never "resume again"; found by
    check_points before a resumed run starts anything, and by load_point."""
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    results.save_point("sizes", POINT)
    results.save_point("children-1", POINT)
    path = tmp_path / "run" / "points" / "sizes.json"
    _corrupt(path, how)
    expected = f"{path} is not a pounder point {problem}; remove it to measure that point again"
    with pytest.raises(UsageError) as raised:
        results.check_points()
    assert str(raised.value) == expected
    if how != "negative count":  # its numbers are checked once, before a resumed run
        with pytest.raises(UsageError) as raised:
            results.load_point("sizes")
        assert str(raised.value) == expected
    assert results.load_point("children-1") is not None
    if path.is_dir():
        path.rmdir()
    else:
        path.unlink()
    results.check_points()
    assert results.load_point("sizes") is None


def test_points_that_is_not_a_directory(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    (tmp_path / "run" / "points").write_text("")
    with pytest.raises(UsageError, match="points is not a directory; remove it to measure every point again"):
        results.check_points()


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    results.save_point("sizes", POINT)
    before = (tmp_path / "run" / "points" / "sizes.json").read_bytes()

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pounder._files.os.replace", fail)
    with pytest.raises(OSError, match="No space left"):
        results.save_point("sizes", {**POINT, "summary": {"rps": 0.0}})
    # the old point is whole, and the temporary file is gone
    assert (tmp_path / "run" / "points" / "sizes.json").read_bytes() == before
    assert _names(tmp_path / "run" / "points") == ["sizes.json"]
    with pytest.raises(OSError):
        results.save_point("children-1", POINT)
    assert _names(tmp_path / "run" / "points") == ["sizes.json"]


def test_write_interrupted_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)

    def interrupt(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("pounder._files.os.fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        results.save_point("sizes", POINT)
    assert _names(tmp_path / "run" / "points") == []
    assert results.load_point("sizes") is None


def test_points_in_run_order(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    assert results.points() == []
    for key, finished in (("sizes", "2024-01-01T00:00:03.000Z"), ("children-1", "2024-01-01T00:00:09.000Z"),
                          ("children-2", "2024-01-01T00:00:05.000Z")):
        results.save_point(key, {**POINT, "finished_at": finished})
    assert [p["key"] for p in results.points()] == ["sizes", "children-2", "children-1"]


def test_save_result(tmp_path: Path) -> None:
    results = ResultsDir.create(tmp_path / "run", MANIFEST)
    results.save_result({"params": {"max_clients": 4}}, "pounder tune: text\n")
    assert json.loads(results.result_path.read_text()) == {"schema": RESULT_SCHEMA, "params": {"max_clients": 4}}
    assert (tmp_path / "run" / "recommendation.txt").read_text() == "pounder tune: text\n"
    assert _names(tmp_path / "run") == [".pounder.lock", "recommendation.json", "recommendation.txt", "tune.json"]
