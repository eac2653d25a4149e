"""Validating documents against pounder's JSON schemas, with cross-file ``$ref`` resolved."""

from __future__ import annotations

import json
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
