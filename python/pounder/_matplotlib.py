"""matplotlib is optional (the ``report`` extra): one check for everything that draws."""

from __future__ import annotations

from types import ModuleType

from pounder._errors import PounderError


def require_matplotlib(what: str = "--chart") -> ModuleType:
    """The matplotlib module, or :class:`~pounder.PounderError` (one line, saying that ``what``
    needs it) when it is missing."""
    try:
        import matplotlib
    except ImportError:
        raise PounderError(f"{what} needs matplotlib, which is not installed: pip install matplotlib") from None
    return matplotlib
