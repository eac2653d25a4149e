"""The wheel users install (``pip install pounder-*.whl``, ``pipx install ...``), built and found in
a checkout of pounder: ``make dist`` runs this module (``python -m pounder._dist --sdist dist``),
the wheel's test (tests/e2e/test_wheel.py) and whoever ships pounder to other machines call
:func:`current_wheel`, :func:`find_wheel` or :func:`build_wheel`.

The wheel: abi3 (one wheel for every CPython >= 3.10), release, tagged with the lowest manylinux
its symbols allow (``manylinux_2_34`` on Debian 12: a machine with glibc 2.34 or later installs
it), checked by maturin's own auditwheel (``--auditwheel check``: it fails on a shared library
the wheel would need from the machine, where ``repair`` would copy one in). Built with this
interpreter (the one pip hands maturin in ``make build``) in the checkout's ``target/``: cargo
reuses the release build of ``make build`` and links nothing again.

Only the standard library and pounder's errors and version: it runs before the engine is built.
In an installed pounder (no checkout) there is nothing to build from: :class:`DistUnavailable`."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from pounder._errors import PounderError
from pounder._version import __version__

ROOT = Path(__file__).resolve().parents[2]
"""The checkout this module runs from (its pyproject.toml, Cargo.toml, python/ and crates/), when it
is one (:func:`source_root`)."""

_SOURCES = ("python/pounder", "crates", "Cargo.toml", "Cargo.lock", "pyproject.toml", "README.md", "packaging",
            "docs/man/pounder.1")
"""What a wheel is built from: one older than any of these files, or than a folder among them (a
file removed), is stale."""


class DistUnavailable(PounderError):
    """No wheel can be built here: pounder is installed rather than checked out, or maturin or cargo
    is missing. The message says which, in one line."""


def source_root() -> Path:
    """The checkout pounder runs from; :class:`DistUnavailable` in an installed pounder."""
    if not ((ROOT / "pyproject.toml").is_file() and (ROOT / "Cargo.toml").is_file()):
        raise DistUnavailable(f"pounder runs from {ROOT / 'pounder'}, an installed package: no checkout to build a "
                              "wheel from")
    return ROOT


def _sources(root: Path) -> Iterator[Path]:
    """The files and folders of :data:`_SOURCES` (no __pycache__, no built engine)."""
    for name in _SOURCES:
        path = root / name
        yield path
        if path.is_dir():
            yield from (found for found in path.rglob("*")
                        if "__pycache__" not in found.parts and found.suffix not in (".so", ".pyc"))


def find_wheel(folder: Path | str | None = None) -> Path | None:
    """The newest ``pounder-VERSION-*.whl`` in ``folder`` (default: the checkout's ``dist/``) of this
    version and no older than any source it is built from; None without one."""
    root = source_root()
    wheels = sorted(Path(folder or root / "dist").glob(f"pounder-{__version__}-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        return None
    newest_source = max(path.stat().st_mtime for path in _sources(root) if path.exists())
    return wheels[-1] if wheels[-1].stat().st_mtime >= newest_source else None


def build_wheel(out: Path | str | None = None, *, sdist: bool = False) -> Path:
    """Build the wheel (module documentation) into ``out`` (default: the checkout's ``dist/``), and the
    sdist beside it with ``sdist``, after removing the ``pounder-*`` wheels and sdists already there;
    the wheel's path. :class:`DistUnavailable` without a checkout, maturin or cargo;
    ``subprocess.CalledProcessError`` when the build fails (maturin's and cargo's messages on stderr)."""
    root = source_root()
    if importlib.util.find_spec("maturin") is None:
        raise DistUnavailable(f"maturin is not installed for {sys.executable} (pip install 'maturin>=1.7,<2')")
    if shutil.which("cargo") is None:
        raise DistUnavailable("cargo is not on PATH: the engine is Rust")
    folder = Path(out or root / "dist").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    for old in [*folder.glob("pounder-*.whl"), *folder.glob("pounder-*.tar.gz")]:
        old.unlink()
    maturin = [sys.executable, "-m", "maturin"]
    subprocess.run([*maturin, "build", "--release", "-i", sys.executable, "--auditwheel", "check",
                    "--out", str(folder)], cwd=root, check=True)
    if sdist:
        subprocess.run([*maturin, "sdist", "--out", str(folder)], cwd=root, check=True)
    wheels = sorted(folder.glob(f"pounder-{__version__}-*.whl"))
    if len(wheels) != 1:
        raise PounderError(f"maturin built {len(wheels)} wheels of pounder {__version__} in {folder}, not one: "
                           f"{', '.join(p.name for p in wheels) or 'none'} (is the version in pyproject.toml "
                           f"{__version__}, as in pounder/_version.py?)")
    return wheels[0]


def current_wheel(folder: Path | str | None = None) -> Path:
    """The wheel of this checkout in ``folder`` (default ``dist/``): :func:`find_wheel`'s, or one built
    there when it finds none (:func:`build_wheel`)."""
    return find_wheel(folder) or build_wheel(folder)


def main(argv: list[str]) -> int:
    """``python -m pounder._dist [--sdist] [OUT]``: build into OUT (default ``dist/``); print the wheel's path."""
    sdist = "--sdist" in argv
    rest = [arg for arg in argv if arg != "--sdist"]
    if len(rest) > 1 or any(arg.startswith("-") for arg in rest):
        sys.stderr.write("usage: python -m pounder._dist [--sdist] [OUT]\n")
        return 2
    try:
        wheel = build_wheel(rest[0] if rest else None, sdist=sdist)
    except DistUnavailable as error:
        sys.stderr.write(f"pounder: error: {error}\n")
        return 2
    except subprocess.CalledProcessError as error:
        return error.returncode or 1
    print(os.path.relpath(wheel))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
