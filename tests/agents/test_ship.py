"""What pounder sends with its agents (``pounder.agents._ship``) and what an agent checks first on
its node (``pounder.agents._boot``), without Ray: the build's hash of a package's files, the zip
made once per build, and the choice and refusal an agent makes in a Python of its own (a child
process whose path holds another pounder, its cache holding the files sent). A Ray cluster whose
nodes lack pounder, the zip sent through Ray's object store: tests/e2e/test_bench_ray_nodes.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pounder
from pounder.agents._boot import KEPT_BUILDS, build_id, package_files
from pounder.agents._ship import Shipment, shipment

PACKAGE = Path(pounder.__file__).parent


def _copy(to: Path, version: str | None = None) -> Path:
    """A copy of this pounder's package (without what Python wrote), its version changed if given."""
    shutil.copytree(PACKAGE, to, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if version is not None:
        (to / "_version.py").write_text(f'__version__ = "{version}"\n')
    return to


def test_a_build_is_the_hash_of_its_files(tmp_path: Path) -> None:
    """The same files give the same build wherever they are, whatever Python wrote beside them; one
    byte more in one file (the engine's binary as much as a module) gives another."""
    copy = _copy(tmp_path / "a" / "pounder")
    assert build_id(copy) == build_id(PACKAGE)
    (copy / "__pycache__").mkdir(exist_ok=True)
    (copy / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"compiled")
    assert build_id(copy) == build_id(PACKAGE)
    engine = next(copy.glob("_engine*"))
    engine.write_bytes(engine.read_bytes() + b"\0")
    assert build_id(copy) != build_id(PACKAGE)
    assert engine in package_files(copy) and not any("__pycache__" in str(p) for p in package_files(copy))


def test_the_package_is_zipped_once_per_build_and_old_builds_go(tmp_path: Path) -> None:
    """``pounder-BUILD.zip`` holds exactly the package's files under ``pounder/`` (its engine among
    them); a second run uses the same zip; the cache keeps the zips used last only (a node's
    unpacked builds beside them are not the driver's to remove)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for index in range(KEPT_BUILDS + 1):  # older builds, used before
        (cache / f"pounder-old{index}.zip").write_bytes(b"")
    (cache / "pounder-unpacked" / "pounder").mkdir(parents=True)
    sent = shipment(cache)
    assert sent == Shipment(cache / f"pounder-{sent.build}.zip", build_id(PACKAGE))
    staged = _unzip(sent, tmp_path / "out")
    assert [p.relative_to(staged) for p in package_files(staged)] == [p.relative_to(PACKAGE) for p in
                                                                       package_files(PACKAGE)]  # fmt: skip
    assert build_id(staged) == sent.build
    made = sent.archive.stat().st_mtime_ns
    os.utime(sent.archive, ns=(made - 10**9, made - 10**9))
    assert shipment(cache) == sent and sent.archive.stat().st_mtime_ns >= made  # the same zip, used again
    assert len(list(cache.glob("pounder-*.zip"))) == KEPT_BUILDS and (cache / "pounder-unpacked").is_dir()
    assert not list(cache.glob(".zipping-*"))


def _unzip(sent: Shipment, to: Path) -> Path:
    """The files sent, unpacked as an agent does: ``to/pounder``."""
    with zipfile.ZipFile(sent.archive) as archive:
        archive.extractall(to)
    return to / "pounder"


def _boot(path: list[Path], cache: Path, version: str, build: str | None) -> str:
    """What an agent decides first (its refusal, or which pounder it runs) when started in a Python
    whose path begins with ``path`` and whose cache is ``cache`` (as Ray starts it: its first code
    loaded from the driver's, not imported from the node). The files sent are in the cache already
    (else it would fetch them from Ray's object store). Its hello asks Ray who it is: outside Ray,
    that would join a cluster."""
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('boot', sys.argv[3]); "
            "boot = importlib.util.module_from_spec(spec); spec.loader.exec_module(boot); sys.path[:0] = sys.argv[4:]; "
            "agent = boot.Agent(sys.argv[1], sys.argv[2] or None, [None]); pounder = sys.modules.get('pounder'); "
            "print(agent.refusal or 'ran ' + pounder.__version__ + ' from ' + pounder.__file__)")
    done = subprocess.run([sys.executable, "-I", "-c", code, version, build or "", str(PACKAGE / "agents" / "_boot.py"),
                           *map(str, path)], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _sent(tmp_path: Path) -> tuple[Shipment, Path]:
    """This pounder zipped, and a node's cache (``XDG_CACHE_HOME``) where an agent unpacked it."""
    sent = shipment(tmp_path / "driver")
    _unzip(sent, tmp_path / "node" / "pounder" / "agents" / f"pounder-{sent.build}")
    return sent, tmp_path / "node"


def test_a_node_with_another_pounder_is_refused_naming_both(tmp_path: Path) -> None:
    other = _copy(tmp_path / "site" / "pounder", "0.0.1-other")
    sent, cache = _sent(tmp_path)
    said = _boot([tmp_path / "site"], cache, pounder.__version__, sent.build)
    assert said == (f"its Python has pounder 0.0.1-other ({other}), this is pounder {pounder.__version__}: install "
                    f"{pounder.__version__} there, or remove it (a node without pounder runs the one pounder sends)")


def test_a_node_with_the_drivers_version_runs_the_files_sent(tmp_path: Path) -> None:
    """A node whose Python has the driver's version, of another build, runs the files sent; a node
    without pounder: tests/e2e/test_bench_ray_nodes.py."""
    sent, cache = _sent(tmp_path)
    engine = next(_copy(tmp_path / "site" / "pounder").glob("_engine*"))
    engine.write_bytes(engine.read_bytes() + b"\0")  # another build of the same version
    said = _boot([tmp_path / "site"], cache, pounder.__version__, sent.build)
    unpacked = cache / "pounder" / "agents" / f"pounder-{sent.build}" / "pounder" / "__init__.py"
    assert said == f"ran {pounder.__version__} from {unpacked}"


def test_an_agent_that_imported_another_build_refuses(tmp_path: Path) -> None:
    """When the files it unpacked are not those the driver's build names (here: nothing sent, the
    node's own pounder of the driver's version is another build), the agent says both builds."""
    own = tmp_path / "site" / "pounder"
    engine = next(_copy(own).glob("_engine*"))
    engine.write_bytes(engine.read_bytes() + b"\0")
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('boot', sys.argv[2]); "
            "boot = importlib.util.module_from_spec(spec); spec.loader.exec_module(boot); sys.path[:0] = sys.argv[4:]; "
            "print(boot.Agent(sys.argv[1], sys.argv[3]).refusal)")
    done = subprocess.run([sys.executable, "-I", "-c", code, pounder.__version__, str(PACKAGE / "agents" / "_boot.py"),
                           build_id(PACKAGE), str(tmp_path / "site")], capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip
    assert done.stdout.strip() == (f"it imported pounder {pounder.__version__} (build {build_id(own)}, {own}), this is "
                                   f"pounder {pounder.__version__} (build {build_id(PACKAGE)})"), done.stderr
