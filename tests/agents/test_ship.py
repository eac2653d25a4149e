"""What pounder sends with its agents (``pounder.agents._ship``) and what an agent checks first on
its node (``pounder.agents._boot``), without Ray: the build's hash of a package's files, the copy
staged once per build, and the choice and refusal an agent makes in a Python of its own (a child
process whose path holds another pounder). A Ray cluster whose nodes lack pounder:
tests/e2e/test_bench_ray_nodes.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pounder
from pounder.agents._boot import build_id, package_files
from pounder.agents._ship import KEPT_BUILDS, shipment

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


def test_the_package_is_staged_once_per_build_and_old_builds_go(tmp_path: Path) -> None:
    """``pounder-BUILD/pounder/`` holds exactly the package's files (its engine among them); a second
    run uses the same copy; the cache keeps the most recently used builds only."""
    cache = tmp_path / "cache"
    for index in range(KEPT_BUILDS + 1):  # older builds, used before
        (cache / f"pounder-old{index}" / "pounder").mkdir(parents=True)
    sent = shipment(cache)
    assert sent.directory == cache / f"pounder-{sent.build}" and sent.build == build_id(PACKAGE)
    staged = sent.directory / "pounder"
    assert [p.relative_to(staged) for p in package_files(staged)] == [p.relative_to(PACKAGE) for p in
                                                                       package_files(PACKAGE)]  # fmt: skip
    assert build_id(staged) == sent.build
    assert sent.runtime_env() == {"py_modules": [str(sent.directory)]}
    (staged / "marker").write_text("the same copy")
    assert shipment(cache).directory == sent.directory and (staged / "marker").exists()
    assert len(list(cache.glob("pounder-*"))) == KEPT_BUILDS and sent.directory.exists()
    assert not list(cache.glob(".staging-*"))


def _boot(path: list[Path], version: str, build: str | None) -> str:
    """What an agent decides first (its refusal, or which pounder it runs) when started in a Python
    whose path begins with ``path`` (as Ray starts it: its first code loaded from the driver's, not
    imported from the node). Its hello asks Ray who it is: outside Ray, that would join a cluster."""
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('boot', sys.argv[3]); "
            "boot = importlib.util.module_from_spec(spec); spec.loader.exec_module(boot); sys.path[:0] = sys.argv[4:]; "
            "agent = boot.Agent(sys.argv[1], sys.argv[2] or None); pounder = sys.modules.get('pounder'); "
            "print(agent.refusal or 'ran ' + pounder.__version__ + ' from ' + pounder.__file__)")
    done = subprocess.run([sys.executable, "-I", "-c", code, version, build or "", str(PACKAGE / "agents" / "_boot.py"),
                           *map(str, path)], capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_node_with_another_pounder_is_refused_naming_both(tmp_path: Path) -> None:
    other = _copy(tmp_path / "site" / "pounder", "0.0.1-other")
    sent = shipment(tmp_path / "cache")
    said = _boot([tmp_path / "site", sent.directory.parent], pounder.__version__, sent.build)
    assert said == (f"its Python has pounder 0.0.1-other ({other}), this is pounder {pounder.__version__}: install "
                    f"{pounder.__version__} there, or remove it (a node without pounder runs the one pounder sends)")


def test_a_node_with_the_drivers_version_runs_the_files_sent(tmp_path: Path) -> None:
    """A node whose Python has the driver's version, of another build, runs the files sent (Ray puts
    the directory holding ``pounder-BUILD`` on the path); a node without pounder:
    tests/e2e/test_bench_ray_nodes.py."""
    sent = shipment(tmp_path / "cache")
    engine = next(_copy(tmp_path / "site" / "pounder").glob("_engine*"))
    engine.write_bytes(engine.read_bytes() + b"\0")  # another build of the same version
    said = _boot([tmp_path / "site", sent.directory.parent], pounder.__version__, sent.build)
    assert said == f"ran {pounder.__version__} from {sent.directory / 'pounder' / '__init__.py'}"


def test_an_agent_that_imported_another_build_refuses(tmp_path: Path) -> None:
    """When nothing was unpacked where the driver sent it and the node's own pounder (the driver's
    version) is another build, the agent says both builds."""
    own = tmp_path / "site" / "pounder"
    engine = next(_copy(own).glob("_engine*"))
    engine.write_bytes(engine.read_bytes() + b"\0")
    said = _boot([tmp_path / "site"], pounder.__version__, build_id(PACKAGE))
    assert said == (f"it imported pounder {pounder.__version__} (build {build_id(own)}, {own}), this is pounder "
                    f"{pounder.__version__} (build {build_id(PACKAGE)})")
