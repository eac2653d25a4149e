"""The Rust engine (``pounder._engine``), loaded on first use: one error when it is not built.

Open to every layer (it imports no package): the load engine's runs (``pounder.load``), a
scenario's regular expressions checked by the engine's own regex crate (``pounder.traffic``),
flame graphs and perf's stacks folded (``pounder.profile``), agents' results merged
(``pounder.agents``)."""

from __future__ import annotations

from types import ModuleType

from pounder._errors import PounderError, public


@public
def load_engine() -> ModuleType:
    """The Rust engine (``pounder._engine``); :class:`~pounder.PounderError` when it is not built."""
    try:
        from pounder import _engine
    except ImportError as error:
        raise PounderError(f"the load engine pounder._engine cannot be loaded ({error}); is pounder built?") from None
    return _engine
