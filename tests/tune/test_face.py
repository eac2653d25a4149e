"""The example in ``pounder.tune``'s documentation uses names that exist, as it calls them."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import textwrap

import pounder.tune
from pounder.pool import PoolParams


def _example() -> ast.Module:
    """The first ``::`` block of the module's documentation, parsed."""
    lines = []
    for line in (pounder.tune.__doc__ or "").split("::\n", 1)[1].splitlines():
        if line.strip() and not line.startswith("    "):
            break
        lines.append(line)
    return ast.parse(textwrap.dedent("\n".join(lines)))


def _imported(tree: ast.Module) -> dict[str, object]:
    names: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            assert node.module is not None
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert alias.name in getattr(module, "__all__", ()), f"{node.module} does not export {alias.name}"
                names[alias.asname or alias.name] = getattr(module, alias.name)
    return names


def test_the_example_imports_every_name_it_uses() -> None:
    tree = _example()
    imported = _imported(tree)
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)}
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    assert imported, "the example imports nothing"
    assert used - set(imported) - assigned <= {"print"}


def test_the_example_calls_match_the_signatures() -> None:
    tree = _example()
    imported = _imported(tree)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id in imported]
    assert {call.func.id for call in calls if isinstance(call.func, ast.Name)} == set(imported)
    for call in calls:
        assert isinstance(call.func, ast.Name)
        function = imported[call.func.id]
        assert callable(function)
        inspect.signature(function).bind(*call.args, **{k.arg: k.value for k in call.keywords if k.arg})


def test_the_example_reads_fields_that_exist() -> None:
    result_fields = {f.name for f in dataclasses.fields(pounder.tune.TuneResult)}
    params_fields = {f.name for f in dataclasses.fields(PoolParams)}
    tree = _example()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            inner = node.value
            if isinstance(inner.value, ast.Name) and inner.value.id == "result":
                assert inner.attr in result_fields and node.attr in params_fields
