"""The import rule of docs/architecture.md, checked on the source: a package of pounder uses
another only through its public face (``pounder.X``), never a private module (``pounder.X._y``),
and only a package below it in the layers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pounder

PACKAGE = Path(pounder.__file__).parent

# Each package's layer, bottom up (docs/architecture.md): a package imports only packages of a
# lower layer. Top-level modules (pounder._units, _files, _records, _errors, ...) are open to all.
LAYERS: dict[str, int] = {
    "servers": 0,
    "procs": 1,
    "results": 2,
    "traffic": 3,
    "load": 4,
    "agents": 5,
    "metrics": 5,
    "pool": 6,
    "compare": 7,
    "syscalls": 7,
    "profile": 7,
    "top": 7,
    "tune": 8,
    "experiment": 8,
    "demo": 0,
    "report": 9,
    "cli": 10,
}


def _absolute(path: Path, level: int, module: str | None) -> str:
    """The absolute name of a relative import (``from ..tune import x`` in pounder/load/_a.py)."""
    parts = ("pounder", *path.relative_to(PACKAGE).with_suffix("").parts)
    base = parts[:len(parts) - level]
    return ".".join((*base, *(module.split(".") if module else ())))


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of a pounder module in ``path``, also inside functions;
    relative imports by the absolute name they reach."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or node.level):
            module = node.module if node.level == 0 else _absolute(path, node.level, node.module)
            assert module is not None
            found.append((node.lineno, module))
            # ``from pounder import load`` and ``from pounder.tune import _analysis`` name modules too
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names
                         if module == "pounder" or alias.name.startswith("_"))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return [(line, name) for line, name in found if name.split(".")[0] == "pounder"]


def _sources() -> list[tuple[str, Path]]:
    """(package, file) for every module inside a package of pounder."""
    return [(path.relative_to(PACKAGE).parts[0], path) for path in sorted(PACKAGE.glob("*/**/*.py"))]


def test_every_package_has_a_layer() -> None:
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert packages == set(LAYERS)


def test_no_package_imports_another_packages_private_module() -> None:
    offences = []
    for package, path in _sources():
        for line, name in _imports(path):
            parts = name.split(".")
            if len(parts) >= 3 and parts[1] in LAYERS and parts[1] != package and parts[2].startswith("_"):
                offences.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {name}")
    assert offences == [], "import through the public face (pounder.X) instead:\n" + "\n".join(offences)


def test_packages_import_only_lower_layers() -> None:
    offences = []
    for package, path in _sources():
        for line, name in _imports(path):
            other = name.split(".")[1] if "." in name else ""
            if other in LAYERS and other != package and LAYERS[other] >= LAYERS[package]:
                offences.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {package} imports {other}")
    assert offences == [], "\n".join(offences)


def test_the_top_level_face_imports_only_faces() -> None:
    offences = [
        f"pounder/__init__.py:{line}: {name}"
        for line, name in _imports(PACKAGE / "__init__.py")
        if len(name.split(".")) >= 3 and name.split(".")[1] in LAYERS and name.split(".")[2].startswith("_")
    ]
    assert offences == []


def test_shared_top_level_modules_import_no_package() -> None:
    """pounder._units, _files, _records, ... sit below every package: they import none."""
    offences = [
        f"pounder/{path.name}:{line}: {name}"
        for path in sorted(PACKAGE.glob("_*.py")) if path.name not in ("__init__.py", "__main__.py")
        for line, name in _imports(path)
        if "." in name and name.split(".")[1] in LAYERS
    ]
    assert offences == []


def test_every_face_declares_all() -> None:
    for face in sorted(PACKAGE.glob("*/__init__.py")):
        tree = ast.parse(face.read_text(encoding="utf-8"))
        names = {target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                 if isinstance(target, ast.Name)}
        assert "__all__" in names, f"{face.relative_to(PACKAGE.parent)} has no __all__"


def test_the_layers_are_those_of_docs_architecture() -> None:
    """docs/architecture.md's table of layers says what LAYERS says (issue 26)."""
    text = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented: dict[str, int] = {}
    for row in text.splitlines():
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for name in re.findall(r"`pounder\.(\w+)`", cells[1]):
                documented[name] = int(cells[0])
    assert documented == LAYERS


def test_a_relative_import_is_read_as_the_module_it_reaches() -> None:
    """The checks above see ``from ..tune import _analysis`` as pounder.tune._analysis."""
    assert _absolute(PACKAGE / "load" / "_a.py", 2, "tune") == "pounder.tune"
    assert _absolute(PACKAGE / "load" / "_a.py", 1, "_b") == "pounder.load._b"
    assert _absolute(PACKAGE / "load" / "__init__.py", 1, None) == "pounder.load"


def test_ray_is_imported_only_by_the_agents_package() -> None:
    """Ray (and with it the choice of agents) lives in pounder.agents alone (issue 26)."""
    offences = []
    for path in sorted(PACKAGE.glob("**/*.py")):
        if path.relative_to(PACKAGE).parts[0] == "agents":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            offences += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {name}" for name in names
                         if name.split(".")[0] == "ray"]
    assert offences == []


def test_the_choice_between_this_machine_and_agents_is_made_once() -> None:
    """Only pounder.agents.make_sender turns --ray into a sender: nothing else reads a Cluster's
    options or asks whether a sender is None to pick the engine (issue 26)."""
    callers = [f"{path.relative_to(PACKAGE.parent)}" for path in sorted(PACKAGE.glob("**/*.py"))
               if "from_options(ray" in path.read_text(encoding="utf-8")]
    assert callers == ["pounder/agents/_cluster.py"]


def test_modules_and_functions_stay_small() -> None:
    """No module of pounder over 600 lines, no function over 80 (issue 26): one concept a module,
    one step a function."""
    offences = []
    for path in sorted(PACKAGE.glob("**/*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(PACKAGE.parent)
        if len(text.splitlines()) > 600:
            offences.append(f"{where}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 80:
                    offences.append(f"{where}:{node.lineno}: {node.name} has {length} lines")
    assert offences == []


def test_the_tune_face_holds_what_a_library_user_needs() -> None:
    """tune, resume, the options, the result types, render: at most 25 names (issue 26); the
    decision functions are private, tested where they live."""
    import pounder.tune

    assert len(pounder.tune.__all__) <= 25
