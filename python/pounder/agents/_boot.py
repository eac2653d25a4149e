"""What a Ray node runs first for an agent, before any of pounder is imported there: this class
travels by value (``ray.cloudpickle``: :func:`by_value`), so a node needs only Ray. It chooses the
pounder the agent runs and checks it against the driver's, then hands every call to the agent
(:class:`pounder.agents._agent.Agent`).

Which pounder: the driver's own files, a zip of them (``_ship``) that the driver puts in Ray's
object store once per command; the agent unpacks it into ``pounder-BUILD/pounder/`` in its node's
cache directory (:func:`cache_dir`) unless an earlier run did, and imports it from there. A node
whose Python already has a pounder of another version is refused, naming both. The agent then
checks what it imported: the driver's version and the same files (:func:`build_id`, a hash of them,
the engine's binary among them), else it refuses too. Nothing here imports pounder at module level:
the standard library only (and Ray, in a function).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.machinery
import io
import os
import shutil
import socket
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

SKIPPED = ("__pycache__",)
KEPT_BUILDS = 4
"""Builds kept in a cache directory (the most recently used): a developer's rebuilds do not pile up."""


def cache_dir() -> Path:
    """Where builds of pounder are kept, on the driver's machine (zips) and on a node (unpacked)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pounder" / "agents"


def prune(cache: Path, suffix: str = "") -> None:
    """Keep the :data:`KEPT_BUILDS` builds used last in ``cache``: zips (``suffix`` ".zip", the
    driver's) or unpacked directories (no suffix, a node's)."""
    builds = sorted((path for path in cache.glob(f"pounder-*{suffix}") if path.is_dir() != bool(suffix)),
                    key=lambda path: path.stat().st_mtime, reverse=True)  # fmt: skip
    for old in builds[KEPT_BUILDS:]:
        if old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)


def package_files(package: Path) -> list[Path]:
    """The files of a package directory, sorted, without what Python writes there (``__pycache__``)."""
    return sorted(path for path in package.rglob("*")
                  if path.is_file() and SKIPPED[0] not in path.relative_to(package).parts
                  and path.suffix != ".pyc")  # fmt: skip


def build_id(package: Path) -> str:
    """A hash of a package's files (their paths and bytes): equal for the same build of pounder,
    whatever its version string says (16 hex digits)."""
    digest = hashlib.sha256()
    for path in package_files(package):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _version_in(package: Path) -> str:
    """The version a pounder package says it is (its ``_version.py``), without importing it."""
    try:
        tree = ast.parse((package / "_version.py").read_text())
    except (OSError, SyntaxError, ValueError):
        return "of an unknown version"
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets) \
                and isinstance(node.value, ast.Constant):  # fmt: skip
            return str(node.value.value)
    return "of an unknown version"


def node_pounder() -> Path | None:
    """The pounder package this node's Python would import, if any."""
    spec = importlib.machinery.PathFinder.find_spec("pounder", sys.path)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def unpacked(build: str, package: list[Any], cache: Path | None = None) -> Path:
    """``pounder-BUILD`` in ``cache`` (default :func:`cache_dir`), holding ``pounder/``: unpacked from
    the zip ``package[0]`` refers to (in Ray's object store: fetched only when needed) unless it is
    there already."""
    cache = cache or cache_dir()
    place = cache / f"pounder-{build}"
    if not (place / "pounder" / "__init__.py").is_file():
        import ray

        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=cache))
        try:
            with zipfile.ZipFile(io.BytesIO(ray.get(package[0]))) as archive:
                archive.extractall(staging)
            staging.rename(place)
        except OSError:
            if not (place / "pounder" / "__init__.py").is_file():  # else another agent unpacked it meanwhile
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    place.touch()
    prune(cache)
    return place


class Agent:
    """An agent as Ray starts it (named as the agent is: ``ray::Agent`` in ps): ``version`` and
    ``build`` are the driver's, ``package`` a list of the one reference to the zip of its files
    (a list: Ray would fetch a reference given alone, also where the files are there already);
    ``build`` None when nothing was sent (a local cluster's nodes run the driver's Python)."""

    def __init__(self, version: str, build: str | None, package: list[Any] | None = None) -> None:
        self.refusal: str | None = None
        self.agent: Any = None
        own = node_pounder()
        if own is not None and (theirs := _version_in(own)) != version:
            self.refusal = (f"its Python has pounder {theirs} ({own}), this is pounder {version}: install {version} "
                            "there, or remove it (a node without pounder runs the one pounder sends)")
            return
        if build is not None and package:
            try:
                sys.path.insert(0, str(unpacked(build, package)))
            except OSError as error:
                self.refusal = f"cannot unpack the pounder sent to it in {cache_dir()}: {error.strerror or error}"
                return
        pounder = importlib.import_module("pounder")
        imported = Path(pounder.__file__ or "").parent
        mine = build_id(imported)
        if pounder.__version__ != version or (build is not None and mine != build):
            self.refusal = (f"it imported pounder {pounder.__version__} (build {mine}, {imported}), this is pounder "
                            f"{version} (build {build})")
            return
        self.agent = importlib.import_module("pounder.agents._agent").Agent()

    def hello(self) -> dict[str, Any]:
        """The agent's :meth:`~pounder.agents._agent.Agent.hello`, or why it refused (``refused``):
        the driver says so before any load is sent."""
        if self.agent is None:
            return {"refused": self.refusal, "host": socket.gethostname()}
        said: dict[str, Any] = self.agent.hello()
        return said

    def clock(self) -> float:
        return float(self.agent.clock())

    def check(self, *args: Any) -> str | None:
        problem: str | None = self.agent.check(*args)
        return problem

    def start(self, spec: Any) -> str | None:
        problem: str | None = self.agent.start(spec)
        return problem

    def poll(self, seconds_from: int = 0) -> tuple[dict[str, Any], list[str], str | None]:
        answer: tuple[dict[str, Any], list[str], str | None] = self.agent.poll(seconds_from)
        return answer

    def cancel(self) -> None:
        self.agent.cancel()


def by_value() -> None:
    """Have Ray send this module's code with the actor, not a name to import (nodes without pounder)."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]
