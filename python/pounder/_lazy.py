"""A package face whose names are imported on first use (PEP 562): ``pounder`` (importing it loads
only its errors and version) and ``pounder.agents`` (an agent on a node imports only what it runs)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_getattr(package: str, modules: Mapping[str, str], namespace: MutableMapping[str, Any]
                 ) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name of ``modules`` (name -> the module it is
    in) imported from its module when first asked for and kept in ``namespace`` (the package's
    globals), so later lookups do not come here."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
