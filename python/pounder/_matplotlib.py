"""matplotlib is optional (the ``report`` extra): one check for everything that draws."""

from __future__ import annotations

from types import ModuleType

from pounder._errors import UsageError


def require_matplotlib(what: str = "--chart") -> ModuleType:
    """The matplotlib module, or :class:`~pounder.UsageError` (one line, saying that ``what``
    needs it and how to install it; exit 2, known before anything runs) when it is missing."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError(f"{what} needs matplotlib, which is not installed: pip install 'pounder[report]'") from None
    return matplotlib
