"""A tuning run's records besides its points (:mod:`pounder._tune_point`), each declared once for
the decisions, the text ``pounder tune`` prints and the page ``pounder report`` draws, read from
the stored document with :class:`pounder._records.Reader` (``from_dict``, ``to_dict``):

* :class:`Target`: the load the pool must answer, as given, and :func:`target_text`, how the text
  and the page state it;
* :class:`OfferedLoad`: the load the candidate pools are compared at;
* :class:`Confirmation`: the recommended configuration held at the target load, its checks and,
  when the first pool was over the RAM budget, the pool it was lowered from.

The document as stored is kept (``stored``): :meth:`Confirmation.to_dict` gives it back, with the
record's figures; the figures the record does not name (CPU, memory) stay in it."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any

from pounder._errors import public
from pounder._records import Convert, Record
from pounder._tune_point import READ, Stored, may_be_missing
from pounder._units import children_text, count_text, mib


@dataclass(frozen=True)
class ConfirmCheck(Stored):
    """One check of the confirmation: its ``name`` (memory, failures, p99, rate, ...), whether it
    was met and the measured figure against its limit, in words."""

    name: str
    ok: bool
    text: str


@dataclass(frozen=True)
class Lowered(Stored):
    """The pool a confirmation was lowered from: its children and its footprint (bytes), over the
    RAM budget."""

    children: int
    footprint: int

    @classmethod
    def read(cls, value: object, key: str) -> Lowered | None:
        """None when the confirmation was not lowered (no pool, or an empty one, stored)."""
        return cls.from_dict(value, key) if value else None


@dataclass(frozen=True)
class Confirmation(Stored, key="confirmation"):
    """The confirmation run: held at ``connections`` clients, or at ``rate`` requests/s in open loop
    (``rps`` answered), ``complete`` and ``failed`` requests, whether every check was met (``ok``),
    its p99 and throttled share (in a pod), the checks and the pool it was lowered from (None when
    it was not)."""

    rps: float
    rate: float | None
    connections: int
    complete: int
    failed: int
    ok: bool | None
    checks: tuple[ConfirmCheck, ...]
    lowered_from: Lowered | None = None
    p99_ms: float | None = None
    throttled_share: float | None = None

    @classmethod
    def converters(cls) -> dict[str, Convert]:
        # as the text and the page read it before the record: a missing rate is closed loop, a
        # missing verdict NOT MET, missing checks none
        listed = READ.list_of(ConfirmCheck.from_dict)
        return {**may_be_missing(cls, "lowered_from"), "lowered_from": Lowered.read,
                "checks": lambda item, key: () if item is None else listed(item, key)}

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


@public
@dataclass(frozen=True)
class Target(Record):
    """The load the pool must answer (every field optional).

    * ``clients``: concurrent clients (``--clients``);
    * ``peak_rate``: arrivals per second at the peak (``--peak-rate`` or an access log's busiest
      second), ``source`` says which;
    * ``p99_s``: the p99 latency to meet (``--p99``);
    * ``keepalive``: clients keep their connections open; ``proxy``: a buffering proxy is in
      front (False = ``--no-proxy``: a slow client holds its child for the transfer);
    * ``transfer_s``: the time to send a typical answer to a slow client, added to the busy time
      when there is no proxy (pass it only when the sweep's busy time does not include it already);
    * ``keepalive_idle_s``: the idle time a kept-alive connection holds its child per request,
      added when keep-alive is on without a proxy (same rule)."""

    clients: int | None = None
    peak_rate: float | None = None
    source: str = "--peak-rate"
    p99_s: float | None = None
    keepalive: bool = False
    proxy: bool = True
    transfer_s: float | None = None
    keepalive_idle_s: float | None = None

    @property
    def load(self) -> bool:
        """Whether a target load (clients or a rate) was given."""
        return self.clients is not None or self.peak_rate is not None

    @classmethod
    def from_dict(cls, value: object, key: str = "target") -> Target:
        """The target stored at ``key``; raises :class:`~pounder._tune_point.MalformedTuneError`
        naming the key of a field of another type."""
        defaulted: dict[str, Any] = _defaulted(cls)
        read: Target = READ.record(cls, value, key, **defaulted)
        return read


@dataclass(frozen=True)
class OfferedLoad(Record):
    """The load the pool is for: ``connections`` concurrent clients (closed loop), or ``rate``
    requests per second sent open loop with at most ``connections`` in flight. ``source`` says
    where it comes from; ``held``: every connection holds a child (no buffering proxy)."""

    connections: int
    rate: float | None
    source: str
    held: bool

    def short(self) -> str:
        """``64 clients`` / ``200 req/s``."""
        return f"{self.rate:,.6g} req/s" if self.rate is not None else count_text(self.connections, "client")

    def text(self) -> str:
        return f"{self.short()} ({self.source})"

    @classmethod
    def from_dict(cls, value: object, key: str = "offered") -> OfferedLoad:
        read: OfferedLoad = READ.record(cls, value, key)
        return read


def _defaulted(cls: type[Any]) -> dict[str, Convert]:
    """A converter for every field of ``cls`` with a default: a missing one reads as its default."""
    def defaulted(f: Any) -> Convert:
        convert = READ.by_type(str(f.type), f.name)
        return lambda value, key: f.default if value is None else convert(value, key)
    return {f.name: defaulted(f) for f in fields(cls) if f.default is not MISSING}


def target_text(target: Target, offered: OfferedLoad | None, *, compared: bool, trials: int | None) -> str:
    """The target as the text and the page state it: what was given, else none (the pools compared
    at ``offered``; ``compared`` False: a run of an earlier pounder that sized the pool by memory),
    the proxy missing, the trials per point (``trials``, None: not stored)."""
    parts = []
    if target.clients is not None:
        parts.append(f"{target.clients} concurrent clients (--clients)")
    if target.peak_rate is not None:
        parts.append(f"{target.peak_rate:,.6g} req/s at the peak ({target.source})")
    if target.p99_s is not None:
        parts.append(f"p99 at most {target.p99_s * 1000:,.1f} ms")
    if not parts:
        given = "none given (no --clients, --peak-rate or access log)"
        if not compared:
            given += ": the pool is sized by memory"
        elif offered is not None:
            given += f": the pools are compared at {offered.short()}, as many clients as the pool may have children"
        parts.append(given)
    if not target.proxy:
        parts.append("no buffering proxy in front (--no-proxy)")
    if trials is not None:
        parts.append(f"{trials} interleaved trials per point")
    return "; ".join(parts)
