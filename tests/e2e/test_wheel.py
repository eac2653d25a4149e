"""pounder installed the way its users install tools (issue 42): the wheel of ``make dist``.

The wheel is built once per session: ``dist/``'s when it is no older than the sources (``make dist``
ran), else one built into a temporary folder as ``make dist`` builds it (:mod:`pounder._dist`; a
second build after ``make build`` compiles nothing). Where none can be built (no checkout, maturin
or cargo) the tests are skipped, saying why.

It is installed by pip into a fresh venv (no system site packages) whose PATH has no cargo, rustc
or maturin, with the ``demo`` extra, and run from there: ``--version``, the files pounder opens by
path, a bench whose count the test server confirms, a short ``tune --demo``; and by pipx. About 40 s
of wall time on 2 cores, most of it pip and the demo's tuning run."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pounder._dist import ROOT, DistUnavailable, build_wheel, find_wheel
from pounder._version import __version__
from support.leftovers import kill_leftovers, processes_mentioning
from support.schemas import validate_results_dir

RUST_TOOLS = ("cargo", "rustc", "maturin")
PIP_LIMIT_S = 300  # from the pip cache in seconds; from PyPI, a minute or two
MAN_PAGE = f"pounder-{__version__}.data/data/share/man/man1/pounder.1"
"""docs/man/pounder.1 in the wheel: installed as share/man/man1/pounder.1 beside bin/."""
WHEEL_NAME = re.compile(r"pounder-(?P<version>[^-]+)-(?P<python>cp3\d+)-(?P<abi>abi3)-"
                        r"manylinux_(?P<major>\d+)_(?P<minor>\d+)_(?P<arch>\w+)\.whl")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel (module documentation)."""
    try:
        return find_wheel() or build_wheel(tmp_path_factory.mktemp("wheel"))
    except DistUnavailable as why:
        pytest.skip(f"no wheel can be built here: {why}")


def _without_rust() -> dict[str, str]:
    """This environment less PYTHONPATH, PYTHONHOME and VIRTUAL_ENV, its PATH less every folder that
    holds cargo, rustc or maturin (a venv's bin/ goes first: :func:`_in_venv`)."""
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(folder for folder in env.get("PATH", "").split(os.pathsep)
                                  if folder and not any(os.access(Path(folder, tool), os.X_OK) for tool in RUST_TOOLS))
    assert not any(shutil.which(tool, path=env["PATH"]) for tool in RUST_TOOLS), env["PATH"]
    return env


def _in_venv(venv: Path) -> dict[str, str]:
    """:func:`_without_rust` with ``venv`` activated (its bin/ first on PATH)."""
    env = _without_rust()
    return {**env, "VIRTUAL_ENV": str(venv), "PATH": os.pathsep.join([str(venv / "bin"), env["PATH"]])}


def _run(argv: list[str | Path], env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """``argv`` to its end, stdin closed, output captured; a failure shows both streams."""
    proc = subprocess.run([str(arg) for arg in argv], env=env, cwd=cwd, stdin=subprocess.DEVNULL, text=True,
                          capture_output=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{argv}: exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Path]:
    """A folder for venvs (``tmp_path``); at teardown, every process naming it killed and the folder
    removed (a venv with its packages is some 100 MB)."""
    try:
        yield tmp_path
    finally:
        kill_leftovers(str(tmp_path))
        shutil.rmtree(tmp_path, ignore_errors=True)


def _venv(folder: Path) -> Path:
    """A fresh venv (this interpreter's ``-m venv``, without system site packages) in ``folder``."""
    _run([sys.executable, "-m", "venv", folder], _without_rust(), folder.parent, 120)
    assert "include-system-site-packages = false" in (folder / "pyvenv.cfg").read_text()
    return folder


def test_the_wheel_is_abi3_manylinux_and_holds_the_whole_package(wheel: Path) -> None:
    """One wheel for CPython >= 3.10 with a manylinux tag this machine's glibc takes, holding every
    file of python/pounder (the package data pounder opens by path among them: schemas, the Perl
    module, the NYTProf reader, py.typed and the .pyi) and the engine, and nothing else but its
    dist-info and the man page; the demo extra declared."""
    name = WHEEL_NAME.fullmatch(wheel.name)
    assert name is not None, wheel.name
    assert name["version"] == __version__ and name["python"] == "cp310"
    glibc = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    assert glibc is not None and glibc.startswith("glibc ")
    have = tuple(int(part) for part in glibc.split()[1].split(".")[:2])
    assert (int(name["major"]), int(name["minor"])) <= have, (wheel.name, glibc)
    assert name["arch"] == platform.machine()
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        meta = archive.read(f"pounder-{__version__}.dist-info/METADATA").decode()
        tags = archive.read(f"pounder-{__version__}.dist-info/WHEEL").decode()
    assert f"Tag: {wheel.name.removeprefix(f'pounder-{__version__}-').removesuffix('.whl')}" in tags.splitlines()
    assert "Provides-Extra: demo" in meta.splitlines()
    assert any(line.startswith("Requires-Dist: gunicorn") and "extra == 'demo'" in line for line in meta.splitlines())
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the package's files are not listed")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "python/pounder"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    package = {path.removeprefix("python/") for path in listed if (ROOT / path).is_file()}
    for needed in ("pounder/py.typed", "pounder/_engine.pyi", "pounder/profile/nytprof_read.pl",
                   "pounder/servers/perl/Pounder/ProfileWindow.pm", "pounder/schemas/tune.schema.json",
                   "pounder/demo/app.py"):
        assert needed in package, needed
    assert {n for n in names if not n.startswith((f"pounder-{__version__}.dist-info/", f"pounder-{__version__}.data/"))
            } == package | {"pounder/_engine.abi3.so"}
    assert {n for n in names if n.startswith(f"pounder-{__version__}.data/")} == {MAN_PAGE}
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(MAN_PAGE) == (ROOT / "docs/man/pounder.1").read_bytes()


def test_pip_installs_the_wheel_and_it_runs_without_rust(wheel: Path, place: Path, testserver) -> None:
    """``pip install 'pounder-....whl[demo]'`` in a fresh venv, no Rust on PATH: ``pounder --version``
    is this version; the package data it opens by path is the venv's own, and the man page is in
    the venv's share/man (where man looks for a bin/ on PATH); a bench of 200 requests
    reaches the test server 200 times; ``tune --demo`` as short as its options make it (one child,
    500 ms points, no MaxRequestsPerChild sweep, no confirmation) recommends, its results valid;
    nothing left running."""
    venv = _venv(place / "venv")
    env = _in_venv(venv)
    _run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", f"{wheel}[demo]"], env, place, PIP_LIMIT_S)
    assert _run(["pounder", "--version"], env, place, 60).stdout == f"pounder {__version__}\n"

    opened = _run([venv / "bin" / "python", "-c", "import json, pounder, pounder._records as r, "
                   "pounder.profile._nytprof as p, pounder.servers._nytprof as s; print(json.dumps([pounder.__file__, "
                   "str(r.SCHEMAS), str(p.READER), str(s.NYTPROF_LIB)]))"], env, place, 60)
    init, schemas, reader, perl = map(Path, json.loads(opened.stdout))
    site = venv.resolve()
    assert init.resolve().is_relative_to(site), init  # the wheel's pounder, not the checkout's
    assert sorted(p.name for p in schemas.glob("*.schema.json")) == sorted(
        p.name for p in (ROOT / "python/pounder/schemas").glob("*.schema.json"))
    assert reader.is_file() and (perl / "Pounder" / "ProfileWindow.pm").is_file()
    assert (init.parent / "py.typed").is_file() and (init.parent / "_engine.pyi").is_file()
    assert (venv / "share/man/man1/pounder.1").read_bytes() == (ROOT / "docs/man/pounder.1").read_bytes()

    srv = testserver(mode="ok")
    bench = _run(["pounder", "bench", f"{srv.url}/", "-n", "200", "-c", "4"], env, place, 60)
    assert re.search(r"^Complete requests:\s+200$", bench.stdout, re.M), bench.stdout
    assert re.search(r"^Failed requests:\s+0$", bench.stdout, re.M), bench.stdout
    assert srv.stats()["requests"] == 200

    results = place / "tune"
    tune = _run(["pounder", "tune", "--demo", "--point-duration", "500ms", "--mrpc", "0", "--max-children", "1",
                 "--measure-children", "2", "--requests-per-child", "20", "--no-confirm", "--results", results],
                env, place, 180)
    assert "serving pounder.demo.app:app with --preload" in tune.stdout
    assert re.search(r"^Recommendation\n  --workers +1$", tune.stdout, re.M), tune.stdout
    validate_results_dir(results, finished=True)
    assert processes_mentioning(str(venv)) == []


def test_pipx_installs_the_wheel(wheel: Path, place: Path) -> None:
    """``pipx install pounder-....whl`` (pipx from PATH, else installed in a venv of its own for the
    test), pipx's home, bin and man folders in the test's folder: the ``pounder`` it puts on PATH runs,
    and the man page is linked into the man folder."""
    env = _without_rust()
    pipx = shutil.which("pipx", path=env["PATH"])
    if pipx is None:
        tools = _venv(place / "tools")
        env = _in_venv(tools)
        _run([tools / "bin" / "python", "-m", "pip", "install", "--quiet", "pipx"], env, place, PIP_LIMIT_S)
        pipx = str(tools / "bin" / "pipx")
    env.update(PIPX_HOME=str(place / "pipx"), PIPX_BIN_DIR=str(place / "bin"), PIPX_MAN_DIR=str(place / "man"))
    _run([pipx, "install", wheel], env, place, PIP_LIMIT_S)
    assert _run([place / "bin" / "pounder", "--version"], env, place, 60).stdout == f"pounder {__version__}\n"
    assert (place / "man/man1/pounder.1").read_bytes() == (ROOT / "docs/man/pounder.1").read_bytes()
    assert processes_mentioning(str(place)) == []
