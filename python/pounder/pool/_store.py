"""The results directory of a tuning run, written as it is measured (an experiment's results
directory is checked and written with the same :meth:`ResultsDir.check_new` and :func:`write_json`).

::

    DIR/tune.json                 what was asked: adapter, options, machine (schema pounder/tune/2)
    DIR/points/<key>.json         one file per measured point (pounder/tune-point/2), in run order
    DIR/summary.json              the figures the run derives from its points so far
                                  (pounder/tune-summary/1), rewritten after every point
    DIR/recommendation.json       the outcome (pounder/tune-result/2), written last
    DIR/recommendation.txt        the same as the text ``pounder tune`` printed
    DIR/servers/                  the servers' own directories (configuration, logs) while they run
    DIR/.pounder.lock             held (flock) by the process writing the run: one at a time

Every file is written to a temporary name and renamed, so an interruption leaves either the whole
file or none. A point that exists is never measured again: ``pounder tune --resume DIR`` replays
the decisions from the stored points and measures only what is missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pounder._errors import PounderError, UsageError, check_path, public
from pounder._files import write_atomic
from pounder._records import decode_json, number_problem

TUNE_SCHEMA = "pounder/tune/2"
POINT_SCHEMA = "pounder/tune-point/2"
RESULT_SCHEMA = "pounder/tune-result/2"
SUMMARY_SCHEMA = "pounder/tune-summary/1"
OLD_TUNE_SCHEMAS = ("pounder/tune/1",)
"""Manifests of runs made by an older pounder (one trial per point): ``pounder report`` still
reads their directories; :meth:`ResultsDir.open` (``--resume``) refuses them."""
_KEY = re.compile(r"^[a-z0-9][a-z0-9-]*$")
LOCK_NAME = ".pounder.lock"


class ResultsWriteError(PounderError, OSError):
    """A file of a results directory could not be written: one line for the CLI, and still the
    OSError it always was for a caller that catches that."""


@public
def write_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` at once (:func:`pounder._files.write_atomic`), creating its
    directory if need be."""
    try:
        write_atomic(path, text, parents=True)
    except PounderError as error:
        raise ResultsWriteError(str(error)) from None


@public
def write_json(path: Path, document: Mapping[str, Any]) -> None:
    """:func:`write_file` of ``document`` as indented JSON."""
    write_file(path, json.dumps(document, indent=2) + "\n")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = decode_json(path.read_text())
    except OSError as error:
        raise PounderError(f"cannot read {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise PounderError(f"{path} is not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise PounderError(f"{path} does not hold a JSON object")
    return data


def _point_problem(path: Path, key: str, *, numbers: bool = False) -> str | None:
    """Why ``path`` is not the stored point ``key`` (a few words), or None if it is one.
    ``numbers``: its numbers are checked against the schema's bounds too (tens of ms a point:
    done once, before a resumed run, not at every read)."""
    if not path.is_file():  # a directory, a FIFO (reading it would block), a dangling link
        return "not a regular file"
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        return f"cannot read it: {error.strerror or error}"
    except UnicodeDecodeError:
        return "not UTF-8 text"
    if not text.strip():
        return "empty"
    try:
        data = decode_json(text)
    except json.JSONDecodeError as error:
        at = "" if error.msg.endswith(" at") else " at"
        return f"line {error.lineno}: {error.msg}{at} column {error.colno}"
    except ValueError as error:
        return str(error)
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("schema") != POINT_SCHEMA:
        return f"schema {data.get('schema')!r}, not {POINT_SCHEMA}"
    if data.get("key") != key:
        return f"key {data.get('key')!r}, not {key!r} as its name says"
    if not isinstance(data.get("step"), str) or not isinstance(data.get("summary"), dict):
        return "no step or summary"
    return number_problem(data, "tune-point") if numbers else None  # a negative count, a fraction of a request


def _check_creatable(target: Path, path: str | os.PathLike[str]) -> None:
    """:class:`~pounder.UsageError` if the results directory could not be made (or written) there:
    a directory is made and removed again in the nearest one that exists (a read-only file
    system, a directory the user may not write), before anything starts."""
    existing = target.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".pounder-check.", dir=existing))
    except OSError as error:
        raise UsageError(f"cannot create the results directory {path}: {error.strerror or error}") from None


@public
class ResultsDir:
    """A tuning run's directory (see the module documentation)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        check_path(path, "the results directory")
        self.path = Path(path).resolve()
        self._lock: int | None = None

    def hold(self) -> None:
        """Hold the directory for this process while it writes there: a kernel lock (flock) on
        ``DIR/.pounder.lock``, let go by :meth:`release` or when the process ends, SIGKILL
        included. A directory another process holds (two ``--resume`` of one run) is a
        :class:`~pounder.UsageError` naming that process."""
        if self._lock is not None:
            return
        try:
            fd = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise UsageError(f"cannot lock the results directory {self.path}: {error.strerror or error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            other = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise UsageError(f"the results directory {self.path} is in use by another pounder (pid {other}): let it "
                             "end, or stop it, before resuming there") from None
        self._lock = fd
        with contextlib.suppress(OSError):  # the pid is for the message of a second process only
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        # Servers' directories left by a run that died (SIGKILL): no process uses them now.
        shutil.rmtree(self.servers_dir, ignore_errors=True)

    def check_free(self) -> None:
        """:meth:`hold` and let go at once: a directory another process writes is found before
        anything starts (the hold that counts is taken when the run begins)."""
        self.hold()
        self.release()

    def release(self) -> None:
        """Let go of the directory (:meth:`hold`), without the servers' directory once empty."""
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self.servers_dir.rmdir()
            os.close(self._lock)
            self._lock = None

    @property
    def manifest_path(self) -> Path:
        return self.path / "tune.json"

    @property
    def result_path(self) -> Path:
        return self.path / "recommendation.json"

    @property
    def summary_path(self) -> Path:
        return self.path / "summary.json"

    @property
    def servers_dir(self) -> Path:
        return self.path / "servers"

    def point_path(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"bad point key {key!r}")
        return self.path / "points" / f"{key}.json"

    @staticmethod
    def check_new(path: str | os.PathLike[str], *, resumable: bool = True) -> None:
        """:class:`~pounder.UsageError` if ``path`` cannot be a new results directory: it exists
        and is not an empty directory (a finished or interrupted run is never overwritten).
        ``resumable``: the command has ``--resume`` to continue a run there."""
        target = Path(check_path(path, "the results directory"))
        if not str(path).strip():
            raise UsageError("the results directory must not be an empty name")
        if target.exists() and not target.is_dir():
            kind = "a file" if target.is_file() else "something else"
            raise UsageError(f"the results directory {path} is {kind}, not a directory (give another --results)")
        if target.exists() and any(target.iterdir()):
            hint = "give another --results"
            if resumable:
                hint = "use --resume to continue a run there, or another --results"
            raise UsageError(f"the results directory {path} already exists and is not empty ({hint})")
        _check_creatable(target, path)

    @classmethod
    def create(cls, path: str | os.PathLike[str], manifest: Mapping[str, Any]) -> ResultsDir:
        """A new results directory (see :meth:`check_new`) holding ``tune.json``, held by this
        process (:meth:`hold`)."""
        cls.check_new(path)
        target = Path(path)
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UsageError(f"cannot create the results directory {path}: {error.strerror or error}") from None
        if not os.access(target, os.W_OK | os.X_OK):
            raise UsageError(f"cannot write to the results directory {path}")
        results = cls(target)
        results.hold()
        try:
            write_json(results.manifest_path, {"schema": TUNE_SCHEMA, **manifest})
        except BaseException:
            results.release()
            raise
        return results

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> tuple[ResultsDir, dict[str, Any]]:
        """An existing results directory and its manifest (``--resume``)."""
        results = cls(path)
        if not results.manifest_path.is_file():
            raise UsageError(f"{path} is not a pounder tune results directory (no tune.json in it)")
        try:
            manifest = _read_json(results.manifest_path)
        except PounderError as error:
            raise UsageError(str(error)) from None
        if manifest.get("schema") in OLD_TUNE_SCHEMAS:
            raise UsageError(f"{path} was made by an older pounder ({manifest['schema']}: one trial per point) and "
                             "cannot be resumed; start a new run (pounder report still reads it)")
        if manifest.get("schema") != TUNE_SCHEMA:
            raise UsageError(f"{results.manifest_path} is not a {TUNE_SCHEMA} document")
        return results, manifest

    def _bad_point(self, path: Path, problem: str) -> UsageError:
        return UsageError(f"{path} is not a pounder point ({problem}); remove it to measure that point again")

    def check_points(self) -> None:
        """:class:`~pounder.UsageError` naming the first stored point file that cannot be read
        back (not a regular file, empty, not JSON, another document), so that ``--resume`` stops
        before anything starts and says which file to remove."""
        folder = self.path / "points"
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"{folder} is not a directory; remove it to measure every point again")
        if not folder.is_dir():
            return
        for path in sorted(folder.glob("*.json")):
            problem = _point_problem(path, path.stem, numbers=True)
            if problem is not None:
                raise self._bad_point(path, problem)

    def load_point(self, key: str) -> dict[str, Any] | None:
        path = self.point_path(key)
        if not path.exists() and not path.is_symlink():
            return None
        problem = _point_problem(path, key)
        if problem is not None:
            raise self._bad_point(path, problem)
        return _read_json(path)

    def save_point(self, key: str, point: Mapping[str, Any]) -> None:
        write_json(self.point_path(key), {"schema": POINT_SCHEMA, "key": key, **point})

    def points(self) -> list[dict[str, Any]]:
        """Every stored point, in the order they were measured."""
        folder = self.path / "points"
        if not folder.is_dir():
            return []
        found = [_read_json(p) for p in folder.glob("*.json")]
        return sorted(found, key=lambda p: (str(p.get("finished_at", "")), str(p.get("key"))))

    def save_summary(self, summary: Mapping[str, Any]) -> None:
        """``summary.json``: what the run derives from its points so far (``pounder report`` of a run
        that has not finished reads it)."""
        write_json(self.summary_path, {**summary, "schema": SUMMARY_SCHEMA})

    def save_result(self, result: Mapping[str, Any], text: str) -> None:
        write_json(self.result_path, {"schema": RESULT_SCHEMA, **result})
        write_file(self.path / "recommendation.txt", text)
