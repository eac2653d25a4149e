"""Validating documents against pounder's JSON schemas, with cross-file ``$ref`` resolved.

    validate(document, "bench-result")     # raises jsonschema.ValidationError
    validate_results_dir(path)             # every file of a ``pounder tune`` results directory
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

import pounder

SCHEMA_DIR = Path(pounder.__file__).resolve().parent / "schemas"


def _registry() -> Registry:
    resources = []
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        contents = json.loads(path.read_text())
        resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


REGISTRY = _registry()


def schema(name: str) -> dict[str, Any]:
    """The schema ``name`` (e.g. "bench-result")."""
    loaded: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    return loaded


def validator(name: str) -> jsonschema.protocols.Validator:
    """A validator for schema ``name`` that resolves references to the other schemas."""
    contents = schema(name)
    cls = jsonschema.validators.validator_for(contents)
    return cls(contents, registry=REGISTRY)


def validate(document: Any, name: str) -> None:
    """Raise ``jsonschema.ValidationError`` if ``document`` does not follow schema ``name``."""
    validator(name).validate(document)


@functools.lru_cache(maxsize=4096)
def _schema_problems(name: str, text: str) -> tuple[str, ...]:
    """``AT: MESSAGE`` for each error of the JSON document ``text`` against schema ``name`` (formats
    too), kept for the same text: the copies of a recorded run that the tests decide again hold its
    very points (a point takes tens of ms to validate)."""
    checker = validator(name).evolve(format_checker=jsonschema.FormatChecker())
    errors = sorted(checker.iter_errors(json.loads(text)), key=lambda e: [str(p) for p in e.absolute_path])
    problems = []
    for error in errors:
        at = "/".join(str(part) for part in error.absolute_path) or "(top)"
        if error.validator == "unevaluatedProperties" and any(
                other.absolute_path == error.absolute_path and other.validator != "unevaluatedProperties"
                for other in errors):
            continue  # a failed $ref evaluates nothing: its properties all show up as "unevaluated"
        message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
        problems.append(f"{at}: {message}")
    return tuple(problems)


def validate_results_dir(path: str | os.PathLike[str], *, finished: bool | None = None) -> list[Path]:
    """Check a ``pounder tune`` results directory: ``tune.json`` (schema "tune"), every
    ``points/*.json`` ("tune-point", each named after its ``key``), ``summary.json``
    ("tune-summary"), ``profile.json`` ("profile", tune --profile) and ``recommendation.json``
    ("tune-result", with ``recommendation.txt`` next to it) when present. ``finished``: True
    requires the recommendation, False requires its absence (an interrupted run), None accepts
    either. Raises ``AssertionError`` listing every problem, file by file (date-time formats
    included); returns the files checked."""
    root = Path(path)
    checks: list[tuple[Path, str]] = [(root / "tune.json", "tune")]
    checks += [(point, "tune-point") for point in sorted((root / "points").glob("*.json"))]
    if (root / "summary.json").exists():
        checks.append((root / "summary.json", "tune-summary"))
    if (root / "profile.json").exists():  # tune --profile
        checks.append((root / "profile.json", "profile"))
    result = root / "recommendation.json"
    problems: list[str] = []
    if result.exists():
        checks.append((result, "tune-result"))
        if not (root / "recommendation.txt").is_file():
            problems.append("recommendation.txt: missing next to recommendation.json")
        if finished is False:
            problems.append("recommendation.json: present, but the run should not have finished")
    elif finished:
        problems.append("recommendation.json: missing")
    for file, name in checks:
        where = file.relative_to(root)
        try:
            text = file.read_text()
            document = json.loads(text)
        except (OSError, ValueError) as error:
            problems.append(f"{where}: cannot be read as JSON ({error})")
            continue
        problems.extend(f"{where}: {problem}" for problem in _schema_problems(name, text))
        if name == "tune-point" and isinstance(document, dict) and document.get("key") != file.stem:
            problems.append(f"{where}: key {document.get('key')!r} does not match the file name")
    if problems:
        shown = problems[:25] + ([f"... and {len(problems) - 25} more"] if len(problems) > 25 else [])
        raise AssertionError(f"{root} is not a valid pounder tune results directory:\n  " + "\n  ".join(shown))
    return [file for file, _ in checks]
