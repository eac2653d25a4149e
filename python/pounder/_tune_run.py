"""A tuning run's records besides its points (:mod:`pounder._tune_point`), each declared once for
the decisions, the text ``pounder tune`` prints and the page ``pounder report`` draws, read from
the stored document with :class:`pounder._records.Reader` (``from_dict``, ``to_dict``):

* :class:`Target`: the load the pool must answer, as given, and :func:`target_text`, how the text
  and the page state it;
* :class:`OfferedLoad`: the load the candidate pools are compared at;
* :class:`Confirmation`: the recommended configuration held at the target load, its checks and,
  when the first pool was over the RAM budget, the pool it was lowered from;
* :class:`TuneRun`: a finished run's ``recommendation.json`` as a whole, read once for the page
  (its points as :class:`~pounder._tune_point.TunePoint`, the pools compared, the workers x threads
  shapes compared, the spare setting chosen, the fleet, the records above), leniently as the page
  read it before the record: a member an earlier pounder did not write reads as None (an
  unfinished run's ``summary.json``: :mod:`pounder._tune_summary`). They are the reading
  side of what ``pounder.tune`` writes (its ``TuneResult``, ``PoolChoice``, ``ShapeChoice``,
  ``Fleet``): named ``Stored*`` where both exist.

The document as stored is kept (``stored``): :meth:`Confirmation.to_dict` gives it back, with the
record's figures; the figures the record does not name (CPU, memory) stay in it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any

from pounder._errors import public
from pounder._records import Convert, Record
from pounder._tune_point import (
    READ,
    MalformedTuneError,
    Stored,
    TunePoint,
    may_be_missing,
    stored_dict,
    tune_points,
)
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


# ---------------------------------------------------------------------------------------------
# recommendation.json as a whole


_PARAMS = ("max_clients", "max_requests", "start_servers", "min_spare", "max_spare", "preload", "threads")


@dataclass(frozen=True)
class StoredParams(Stored):
    """The recommendation, as a point's ``params``: the children, MaxRequestsPerChild (0:
    unlimited), the spare settings (None: a fixed pool), the preload setting (None: not stored) and
    the threads of each child (None: not stored, the server's own; stored when workers x threads
    were compared)."""

    max_clients: int | None
    max_requests: int | None
    start_servers: int | None
    min_spare: int | None
    max_spare: int | None
    preload: bool | None
    threads: int | None = None

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> StoredParams:
        """The parameters as stored; one missing reads as None (the AttributeError of a value
        that is no object)."""
        return cls(*(value.get(name) for name in _PARAMS), stored=value)


@dataclass(frozen=True)
class StoredPools(Stored):
    """The candidate pools compared at the offered load (``points``, in the order stored) and the
    choice among them: ``chosen``, ``best`` (the most requests/s), ``lowest_p99`` (None: not
    chosen yet, or not stored), ``why`` and ``reasons``; the members the page does not draw
    (``offered``, ``p99_met``, ``cpu_floor``) stay in ``stored``."""

    points: tuple[TunePoint, ...]
    chosen: int | None
    best: int | None
    lowest_p99: int | None
    why: str | None
    reasons: Any

    @classmethod
    def read(cls, value: Mapping[str, Any], key: str = "pools") -> StoredPools:
        """The pools as stored; the KeyError of missing ``points``, the MalformedTuneError of a
        point that lacks a figure."""
        points = tuple(tune_points(value["points"], f"{key}.points"))
        return cls(points, value.get("chosen"), value.get("best"), value.get("lowest_p99"), value.get("why"),
                   value.get("reasons"), stored=value)


def _shape(value: object, key: str) -> tuple[int, int]:
    """``[workers, threads]``: two whole numbers, at least 1 each."""
    items = READ.as_list(value, key)
    if len(items) != 2:
        raise MalformedTuneError(f"'{key}' must be [workers, threads], got {len(items)} values")
    workers, threads = (READ.as_int(item, f"{key}[{i}]") for i, item in enumerate(items))
    return workers, threads


_CONVERTED = ("offered", "best", "points", "per_thread", "reasons")
"""The members of ``shapes`` read by a converter (:meth:`StoredShapes.converters`), required as the others."""


@dataclass(frozen=True)
class StoredShapes(Stored, key="shapes"):
    """The workers x threads shapes compared at the offered load (``offered``) and the choice among
    them, as the run stored it (pounder.tune's ``ShapeChoice``): ``points`` in the order measured
    (each with its ``threads`` and the memory after the load), the shape chosen (``workers`` x
    ``threads``), the one that served the most (``best``: workers, threads), the requests every shape
    serves at once (``slots``), what a thread adds to a worker's private memory (``per_thread``,
    bytes, may be negative; None when not measured), ``why`` and ``reasons``. Every member is
    required: a run stores them all or no ``shapes``."""

    offered: OfferedLoad
    workers: int
    threads: int
    best: tuple[int, int]
    slots: int
    points: tuple[TunePoint, ...]
    per_thread: int | None
    why: str
    reasons: tuple[str, ...]

    @classmethod
    def converters(cls) -> dict[str, Convert]:
        return {"offered": OfferedLoad.from_dict, "best": _shape,
                "points": lambda value, key: tuple(tune_points(READ.as_list(value, key), key)),
                "per_thread": READ.nullable(READ.as_signed_int), "reasons": READ.list_of(READ.as_str)}

    @classmethod
    def read(cls, value: object, key: str = "shapes") -> StoredShapes:
        """The shapes as stored; :class:`MalformedTuneError` naming the key of a member missing or of
        another type."""
        data = READ.as_dict(value, key)
        missing = next((name for name in _CONVERTED if name not in data), None)  # the others: by their type
        if missing is not None:
            raise MalformedTuneError(f"missing '{key}.{missing}'")
        return cls.from_dict(data, key)

    def to_dict(self) -> dict[str, Any]:
        """The shapes as stored (the offered load written back by its own record)."""
        return {**stored_dict(self), "offered": self.offered.to_dict()}

    def point(self, workers: int, threads: int) -> TunePoint | None:
        """The shape of ``workers`` x ``threads`` (None when it was not measured)."""
        return next((p for p in self.points if (p.children, p.threads or 1) == (workers, threads)), None)


@public
@dataclass(frozen=True)
class SpareChoice(Stored):
    """The spare setting recommended: its ``name`` (``before``, ``after``), the deciding fact
    (``why``) and the ``reasons`` (none when not stored)."""

    name: str | None
    why: str | None
    reasons: tuple[str, ...]

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> SpareChoice:
        return cls(value.get("name"), value.get("why"), tuple(str(r) for r in value.get("reasons") or []),
                   stored=value)


@dataclass(frozen=True)
class StoredPod(Stored):
    """A container's resources for one server as the run decided them: the Kubernetes block
    (``yaml``), the docker options and how each figure was reached (``notes``); its figures stay
    in ``stored``."""

    yaml: str
    docker: str
    notes: tuple[str, ...]

    @classmethod
    def read(cls, value: Mapping[str, Any]) -> StoredPod:
        return cls(str(value["yaml"]), str(value["docker"]), tuple(str(n) for n in value.get("notes") or []),
                   stored=value)


@dataclass(frozen=True)
class StoredFleet(Stored):
    """Where the recommended server will run: the servers a target rate needs, in words (``size``,
    None without a target rate) and a container's resources (``pod``, None without one)."""

    size: str | None
    pod: StoredPod | None

    @classmethod
    def read(cls, value: Mapping[str, Any] | None) -> StoredFleet:
        """``value`` None or empty reads as no fleet figure (results of earlier versions)."""
        data: Mapping[str, Any] = value or {}
        size, pod = data.get("size"), data.get("pod")
        return cls(str(size["text"]) if size else None, StoredPod.read(pod) if pod else None, stored=data)

    def to_dict(self) -> dict[str, Any]:
        """The section as stored (``size`` the figures of which :attr:`size` is the text)."""
        return dict(self.stored) if self.pod is None else {**self.stored, "pod": self.pod.to_dict()}


@dataclass(frozen=True)
class TuneRun(Stored, key="recommendation"):
    """A finished tuning run's ``recommendation.json`` (``pounder/tune-result/2``, or ``/1`` of an
    older pounder), read once for every page and table: the recommendation (``params``, ``config``,
    ``described`` in the server's ``names``), the steps' figures (``measure``, ``memory``, ``sweep``,
    ``children``, ``mrpc``, ``max_requests``, ``spare``, ``pools``), the target, the offered load, the
    confirmation, the deciding facts (``why``, None in results of earlier versions), ``fleet`` and the
    workers x threads shapes compared (``shapes``, None when they were not).

    Read as the page read the document before the record: the members every version holds
    (``measure``, ``memory``, ``sweep``, ``children``, ``mrpc``, ``max_requests``, ``params``,
    ``config``) are required (the KeyError of a missing one); the others read as None (or empty)
    when absent. The sizes (``measure``, ``other_measure``), the memory bounds and the children's and
    MaxRequestsPerChild's choices stay as stored. ``spare`` keeps its settings as stored (a single
    burst each in results of earlier versions); ``spare_points``: each as a :class:`TunePoint` when
    they were measured in trials."""

    schema: str | None
    tool_version: str | None
    server: Mapping[str, Any] | None
    described: str | None
    names: Mapping[str, str] | None
    measure: Mapping[str, Any] | None
    other_measure: Mapping[str, Any] | None
    memory: Mapping[str, Any] | None
    other_memory: Mapping[str, Any] | None
    sweep: tuple[TunePoint, ...]
    children: Mapping[str, Any] | None
    mrpc: tuple[TunePoint, ...]
    max_requests: Mapping[str, Any] | None
    spare: tuple[Mapping[str, Any], ...]
    spare_points: tuple[TunePoint, ...]
    spare_choice: SpareChoice | None
    pools: StoredPools | None
    why: tuple[str, ...] | None
    target: Target | None
    offered: OfferedLoad | None
    confirmation: Confirmation | None
    params: StoredParams
    config: str
    cores: float | None
    workload: str | None
    cpus: str | None
    advice: tuple[str, ...]
    fleet: StoredFleet
    shapes: StoredShapes | None = None

    @classmethod
    def from_dict(cls, value: object, key: str | None = None) -> TuneRun:
        """The recommendation in ``value``, read in the order the page read it before the record:
        the members a step draws from, then the typed records (:class:`MalformedTuneError` naming
        the key of a figure missing or of another type), then the recommendation itself."""
        data: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
        measure, other_measure, memory = data["measure"], data.get("other_measure"), data["memory"]
        sweep, children, mrpc, max_requests = list(data["sweep"]), data["children"], list(data["mrpc"]), \
            data["max_requests"]
        spare = tuple(dict(p) for p in data.get("spare") or [])
        pools, choice, why = data.get("pools"), data.get("spare_choice"), data.get("why")
        why = None if why is None else tuple(str(line) for line in why)
        confirmation = None if data.get("confirmation") is None else Confirmation.from_dict(data["confirmation"])
        target = None if data.get("target") is None else Target.from_dict(data["target"])
        offered = None if data.get("offered") is None else OfferedLoad.from_dict(data["offered"])
        sweep_points = tuple(tune_points(sweep, "sweep"))
        mrpc_points = tuple(tune_points(mrpc, "mrpc"))
        pool_choice = None if pools is None else StoredPools.read(pools)
        shapes = None if data.get("shapes") is None else StoredShapes.read(data["shapes"])
        trials = bool(spare) and "trials" in spare[0]  # earlier: a burst each, drawn apart
        spare_points = tuple(tune_points(spare, "spare")) if trials else ()
        return cls(
            data.get("schema"), data.get("tool_version"), data.get("server"), data.get("described"),
            data.get("names"), measure, other_measure, memory, data.get("other_memory"), sweep_points, children,
            mrpc_points, max_requests, spare, spare_points, None if choice is None else SpareChoice.read(choice),
            pool_choice, why, target, offered, confirmation, StoredParams.read(data["params"]), str(data["config"]),
            data.get("cores"), data.get("workload"), data.get("cpus"),
            tuple(str(a) for a in data["advice"]) if data.get("advice") else (), StoredFleet.read(data.get("fleet")),
            shapes, stored=data,
        )  # fmt: skip

    @property
    def leak(self) -> bool | None:
        """Whether the MaxRequestsPerChild step called a leak (None: not stored)."""
        return None if self.max_requests is None else self.max_requests.get("leak")

    def to_dict(self) -> dict[str, Any]:
        """The document as it was read, each member that is a record written back by its own
        ``to_dict`` (the target with its defaults: ``source``, ``keepalive``, ``proxy``)."""
        out = dict(self.stored)
        for name in ("target", "offered", "confirmation", "pools", "spare_choice", "fleet", "params", "shapes"):
            record = getattr(self, name)
            if record is not None and name in out:
                out[name] = record.to_dict()
        for name in ("sweep", "mrpc"):
            out[name] = [point.to_dict() for point in getattr(self, name)]
        if self.spare_points:
            out["spare"] = [point.to_dict() for point in self.spare_points]
        return out
