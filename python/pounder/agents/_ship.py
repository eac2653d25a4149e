"""The driver's own pounder, made ready to send to the nodes with its agents (Ray's runtime
environment, ``py_modules``): the files of the package this process imported (its compiled engine
among them), copied once per build into ``pounder-BUILD/pounder/`` under the user's cache directory.

Why a directory and not a wheel: Ray installs a ``py_modules`` wheel with ``pip install --target``,
which fetches pounder's dependencies from the package index on every node (an agent needs none of
them: only Ray and the standard library), and it names the wheel in the cluster by its file name
alone (a rebuilt 0.1.0 would be taken for the 0.1.0 already there); ``runtime_env["pip"]`` sends no
local file at all (each node reads the path on its own disk) and needs ``ray[default]``. A directory
is zipped by Ray, named by a hash of its content, uploaded to the cluster once (Ray skips a package
the cluster has) and unpacked once per node (Ray keeps it for later runs): no pip, no index, and the
very files this process runs, whether it was installed from a wheel or runs from a source checkout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pounder
from pounder.agents._boot import build_id, package_files

KEPT_BUILDS = 4
"""Builds kept in the cache (the most recently used): a developer's rebuilds do not pile up."""


@dataclass(frozen=True)
class Shipment:
    """The driver's pounder ready to send: ``directory`` (``.../pounder-BUILD``, holding ``pounder/``)
    for ``py_modules``, ``build`` its :func:`~pounder.agents._boot.build_id`."""

    directory: Path
    build: str

    def runtime_env(self) -> dict[str, list[str]]:
        return {"py_modules": [str(self.directory)]}


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pounder" / "agents"


def shipment(cache: Path | None = None) -> Shipment:
    """This process's pounder, staged in ``cache`` (default :func:`cache_dir`) if it is not already."""
    package = Path(pounder.__file__ or "").parent
    build = build_id(package)
    cache = cache or cache_dir()
    directory = cache / f"pounder-{build}"
    if not directory.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache))
        try:
            for path in package_files(package):
                target = staging / "pounder" / path.relative_to(package)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
            if build_id(staging / "pounder") != build:  # changed while copied: send nothing half-made
                raise OSError(f"pounder's files at {package} changed while they were copied")
            staging.rename(directory)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not directory.is_dir():  # another pounder staged it meanwhile: that one is as good
                raise
    directory.touch()
    builds = sorted(cache.glob("pounder-*"), key=lambda path: path.stat().st_mtime, reverse=True)
    for old in builds[KEPT_BUILDS:]:
        shutil.rmtree(old, ignore_errors=True)
    return Shipment(directory, build)
