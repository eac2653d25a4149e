"""A tuning run's confirmation as a typed record: the recommended configuration held at the target
load, its checks and, when the first pool was over the RAM budget, the pool it was lowered from;
read once from the stored document with :class:`pounder._records.Reader` (``from_dict``,
``to_dict``) and written the same way in the text ``pounder tune`` prints and on the page
``pounder report`` draws.

The document as stored is kept (``stored``): :meth:`Confirmation.to_dict` gives it back, with the
record's figures; the figures the record does not name (CPU, memory, latency) stay in it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pounder._tune_point import READ, stored_dict
from pounder._units import children_text, mib


@dataclass(frozen=True)
class ConfirmCheck:
    """One check of the confirmation: its ``name`` (memory, failures, p99, rate, ...), whether it
    was met and the measured figure against its limit, in words."""

    name: str
    ok: bool
    text: str
    stored: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, value: object, key: str) -> ConfirmCheck:
        data = READ.as_dict(value, key)
        check: ConfirmCheck = READ.record(cls, data, key, stored=lambda _value, _key: data)
        return check


@dataclass(frozen=True)
class Lowered:
    """The pool a confirmation was lowered from: its children and its footprint (bytes), over the
    RAM budget."""

    children: int
    footprint: int
    stored: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, value: object, key: str) -> Lowered | None:
        """None when the confirmation was not lowered (no pool, or an empty one, stored)."""
        if not value:
            return None
        data = READ.as_dict(value, key)
        lowered: Lowered = READ.record(cls, data, key, stored=lambda _value, _key: data)
        return lowered


@dataclass(frozen=True)
class Confirmation:
    """The confirmation run: held at ``connections`` clients, or at ``rate`` requests/s in open loop
    (``rps`` answered), ``complete`` and ``failed`` requests, whether every check was met (``ok``),
    its p99 and throttled share (in a pod), the checks and the pool it was lowered from (None when
    it was not)."""

    rps: float
    connections: int
    complete: int
    failed: int
    rate: float | None = None
    ok: bool | None = None
    p99_ms: float | None = None
    throttled_share: float | None = None
    checks: tuple[ConfirmCheck, ...] = ()
    lowered_from: Lowered | None = None
    stored: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, value: object, key: str = "confirmation") -> Confirmation:
        """The confirmation stored at ``key``; raises :class:`~pounder._tune_point.MalformedTuneError`
        naming the key of a figure that is missing or of another type."""
        data = READ.as_dict(value, key)
        confirmation: Confirmation = READ.record(
            cls, data, key, rate=READ.nullable(READ.as_float), ok=READ.nullable(READ.as_bool),
            p99_ms=READ.nullable(READ.as_float), throttled_share=READ.nullable(READ.as_float),
            checks=lambda item, where: () if item is None else READ.list_of(ConfirmCheck.from_dict)(item, where),
            lowered_from=Lowered.from_dict, stored=lambda _value, _key: data)
        return confirmation

    def to_dict(self) -> dict[str, Any]:
        """The confirmation as stored, its figures those of the record."""
        return stored_dict(self)

    @property
    def attempted(self) -> int:
        """The requests of the confirmation: completed and failed."""
        return self.complete + self.failed

    @property
    def load_text(self) -> str:
        """The load it was held at: ``40 req/s (open loop; 39 answered)`` or ``4 clients (120 req/s)``."""
        if self.rate:
            return f"{self.rate:,.0f} req/s (open loop; {self.rps:,.0f} answered)"
        return f"{self.connections} clients ({self.rps:,.0f} req/s)"

    @property
    def headline(self) -> str:
        """``at LOAD, N requests, every child warm: VERDICT``, after "the recommended configuration"."""
        verdict = "every check met" if self.ok else "NOT MET"
        return f"at {self.load_text}, {self.attempted:,} requests, every child warm: {verdict}"

    @property
    def lowered_text(self) -> str | None:
        """The pool it was lowered from, in words (None when it was not lowered)."""
        lowered = self.lowered_from
        if lowered is None:
            return None
        return (f"(of the pool lowered from {children_text(lowered.children)}, whose footprint "
                f"{mib(lowered.footprint)} MiB was over the RAM budget: see Details)")
