"""``pounder report``: any result pounder wrote, as one self-contained HTML page.

What each path is, by its content: a bench result (``pounder/bench-result/3``, ``/2`` or ``/1``; several
are overlaid on one page), a comparison (``pounder/compare/1``), a memory snapshot
(``pounder/mem/2`` or ``/1``, from ``pounder mem --json``), a profile (``pounder/profile/1``), a view of
``pounder top --json`` (``pounder/top/1``), a ``pounder syscalls --json`` result (``pounder/syscalls/1``), a tuning
results directory (with ``tune.json``, or its ``recommendation.json``), an experiment results directory (with
``experiment.json``). Several paths of different kinds make one page with a part for each.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pounder._errors import PounderError, UsageError, check_path, check_text, public
from pounder._files import RESULT_LIMIT, check_distinct, check_input_file, check_output_name, write_atomic
from pounder._records import ConstantError, decode_json, shown
from pounder.compare import SCHEMA as COMPARE_SCHEMA
from pounder.procs import MEM_READ_SCHEMAS, MEM_SCHEMA, MalformedMemError, mem_from_dict
from pounder.profile import PROFILE_SCHEMA, MalformedProfileError, profile_from_dict
from pounder.report._html import ReportError, Section, page
from pounder.results import READ_SCHEMAS as BENCH_SCHEMAS
from pounder.results import SCHEMA as BENCH_SCHEMA
from pounder.results import BenchResult, MalformedResultError
from pounder.syscalls import SYSCALLS_SCHEMA, MalformedSyscallsError, syscalls_from_dict
from pounder.top import TOP_SCHEMA, MalformedTopError, top_from_dict

_READERS: tuple[tuple[Sequence[str], str, Callable[[Mapping[str, Any]], Any], type[PounderError]], ...] = (
    (BENCH_SCHEMAS, "bench", BenchResult.from_dict, MalformedResultError),
    (MEM_READ_SCHEMAS, "mem", mem_from_dict, MalformedMemError),
    ((PROFILE_SCHEMA,), "profile", profile_from_dict, MalformedProfileError),
    ((TOP_SCHEMA,), "top", top_from_dict, MalformedTopError),
    ((SYSCALLS_SCHEMA,), "syscalls", syscalls_from_dict, MalformedSyscallsError),
)
"""The result files read into records, each by its schemas: (schemas, kind, reader, the reader's error)."""


def _kind(path: Path) -> tuple[str, Any]:
    """(kind, what the section builder takes) for one path; UsageError if it is no pounder result."""
    if path.is_dir():
        if (path / "tune.json").is_file():
            return "tune", path
        if (path / "experiment.json").is_file():
            return "experiment", path
        raise UsageError(f"{path} is no pounder results directory (no tune.json or experiment.json in it)")
    # a file of a results directory that is no result alone (a point, the summary, the memory of
    # the variants) stands for its directory: every JSON pounder writes is read by this command
    if path.name in ("tune.json", "recommendation.json", "summary.json") and (path.parent / "tune.json").is_file():
        return "tune", path.parent
    if path.parent.name == "points" and (path.parent.parent / "tune.json").is_file():
        return "tune", path.parent.parent
    if path.name == "experiment.json" or (path.name == "memory.json" and (path.parent / "experiment.json").is_file()):
        return "experiment", path.parent
    check_input_file(path, "result", RESULT_LIMIT)
    try:
        data = decode_json(path.read_text())  # decoded once, the text let go before the records are made
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
    except ConstantError as error:
        raise UsageError(f"{path} is not a pounder JSON result: {error}") from None
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f"{path} is not a pounder JSON result (not JSON)") from None
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema == COMPARE_SCHEMA:
        return "compare", data
    for schemas, kind, read, malformed in _READERS:
        if schema in schemas:
            try:
                return kind, read(data)
            except malformed as error:
                raise UsageError(f"{path}: {error}") from None
    raise UsageError(f"{path} is not a result pounder can report on (schema {shown(schema)}; expected "
                     f"{BENCH_SCHEMA}, {COMPARE_SCHEMA}, {MEM_SCHEMA}, {PROFILE_SCHEMA}, {TOP_SCHEMA}, "
                     f"{SYSCALLS_SCHEMA}, or a tune or experiment results directory)")


Result = str | os.PathLike[str] | BenchResult | Mapping[str, Any]
"""A path, or a result in memory: a BenchResult or a comparison's ``to_dict()``."""


def _results(paths: Result | Sequence[Result]) -> list[Result]:
    """``paths`` as a list: one path or one result stands for a list of one."""
    if isinstance(paths, (str, os.PathLike, BenchResult, Mapping)):
        return [paths]
    if not isinstance(paths, Sequence):
        raise UsageError(f"the results must be a list of paths or results, not {type(paths).__name__}")
    for item in paths:
        if not isinstance(item, (str, os.PathLike, BenchResult, Mapping)):
            raise UsageError(f"a result must be a path, a BenchResult or a comparison's to_dict(), "
                             f"not {type(item).__name__}")
    return list(paths)


def _found(item: Result) -> tuple[Path, str, Any]:
    if isinstance(item, BenchResult):
        return Path("bench"), "bench", item
    if isinstance(item, Mapping):
        if item.get("schema") != COMPARE_SCHEMA:
            raise UsageError(f"a result in memory must be a {COMPARE_SCHEMA} document or a BenchResult")
        return Path("compare"), "compare", item
    return (Path(item), *_kind(Path(item)))


@public
def render_report(paths: Result | Sequence[Result], title: str | None = None) -> str:
    """The HTML page for ``paths`` (see the module documentation); a BenchResult or a
    comparison's ``to_dict()`` may stand in for its file, and one path or result for a list of
    one. :class:`ReportError` (one line) when a result is incomplete or malformed,
    :class:`~pounder.UsageError` when an argument is of the wrong type."""
    from pounder.report._bench import bench_sections
    from pounder.report._compare import compare_sections, experiment_sections
    from pounder.report._mem import mem_sections
    from pounder.report._profile import profile_sections
    from pounder.report._top import syscalls_sections, top_sections
    from pounder.report._tune import tune_sections
    from pounder.report._tune_pods import pods_section

    paths = _results(paths)
    check_text(title, "title", optional=True)
    if not paths:
        raise UsageError("give at least one result to report on")
    found = [_found(item) for item in paths]
    sections: list[Section] = []
    benches = [(path, value) for path, kind, value in found if kind == "bench"]
    if benches:
        sections += bench_sections([(_label(path, benches), value) for path, value in benches])
    seen: dict[str, int] = {}
    for path, kind, value in found:
        if kind == "bench":
            continue
        seen[kind] = seen.get(kind, 0) + 1
        prefix = kind if seen[kind] == 1 else f"{kind}{seen[kind]}"  # chart ids unique on the page
        with _reading(path, kind):
            if kind == "tune":
                sections += tune_sections(value, chart_prefix=prefix)
            elif kind == "compare":
                sections += compare_sections(value, str(path), chart_prefix=prefix)
            elif kind == "mem":
                sections += mem_sections(value, str(path))
            elif kind == "profile":
                sections += profile_sections(value, str(path))
            elif kind == "top":
                sections += top_sections(value, str(path))
            elif kind == "syscalls":
                sections += syscalls_sections(value, str(path))
            else:
                sections += experiment_sections(value, chart_prefix=prefix)
    pods = pods_section([value for _, kind, value in found if kind == "tune"])
    sections += [] if pods is None else [pods]
    kinds = sorted({kind for _, kind, _ in found})
    heading = title or _title(found)
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return page(heading, f"{', '.join(kinds)} report of {', '.join(str(p) for p, _, _ in found)}; made {made}",
                sections)


@contextmanager
def _reading(path: Path, kind: str) -> Iterator[None]:
    """What a result that lacks a field or holds one of the wrong type raises while its part of
    the page is made, as one :class:`ReportError` line naming the file."""
    try:
        yield
    except PounderError:
        raise
    except OSError as error:
        raise ReportError(f"cannot read {error.filename or path}: {error.strerror or error}") from None
    except KeyError as error:  # the key, not Python's words for it
        raise ReportError(f"{path} does not hold a complete pounder {kind} result: {shown(str(error.args[0]))} "
                          "is missing") from None
    except (IndexError, TypeError, ValueError, AttributeError):
        raise ReportError(f"{path} does not hold a complete pounder {kind} result: a field is missing or holds a "
                          "value of another type than pounder writes") from None


def _label(path: Path, benches: Sequence[tuple[Path, Any]]) -> str:
    """A short label: the file name, or the path when two files share a name."""
    names = [p.name for p, _ in benches]
    return path.stem if names.count(path.name) == 1 else str(path)


def _title(found: Sequence[tuple[Path, str, Any]]) -> str:
    if len(found) == 1:
        path, kind, _ = found[0]
        names = {"bench": "pounder bench", "tune": "pounder tune", "compare": "pounder compare",
                 "experiment": "pounder run", "mem": "pounder mem", "profile": "pounder profile",
                 "top": "pounder top", "syscalls": "pounder syscalls"}
        return names[kind] + f": {path.name}"
    return f"pounder report: {len(found)} results"




@public
def check_page_name(path: str | os.PathLike[str], what: str) -> None:
    """The page is HTML: a name ending in another format's suffix (``report.pdf``, ``out.png``) would
    hold something else than it says; :class:`~pounder.UsageError` naming ``what`` (the option), by
    the one rule for the names of outputs (:func:`pounder._files.check_output_name`)."""
    check_output_name(path, what, "HTML", noun="the page")


@public
def write_report(paths: Result | Sequence[Result], out: str | os.PathLike[str],
                 title: str | None = None, *, option: str = "-o/--output") -> Path:
    """Write the page for ``paths`` to ``out`` (atomically, its directory created if need be);
    returns the path written. ``option``: the command's option for ``out``, named when it cannot
    be written."""
    paths = _results(paths)
    target = Path(check_path(out, "write_report: out"))
    if target.is_dir():  # bad input, as -o DIR is for the command
        raise UsageError(f"write_report: out: {target} is a directory, not a file")
    check_page_name(target, "write_report: out")
    check_distinct([(option, target)], [("result", p) for p in paths if isinstance(p, (str, os.PathLike))])
    write_atomic(target, render_report(paths, title), option, parents=True)
    return target
