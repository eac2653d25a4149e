"""What a tuning run is asked to do (:class:`TuneOptions`), checked before anything starts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from pounder._errors import UsageError, check_type, public, wrong_type
from pounder._units import MIB, available_cpus, parse_count_list, parse_duration, parse_ram
from pounder.procs import mem_total

FULL_MRPC = (0, 10000, 1000, 100, 10)
QUICK_MRPC = (0, 1000, 100, 10)


@public
@dataclass(frozen=True)
class TuneOptions:
    """The knobs of a tuning run (sizes in bytes, times in seconds).

    * ``path``: what each request asks for (path and query), on the server pounder started.
    * ``ram``: the RAM budget for the server; None: MemAvailable + the server's own footprint
      at the time of the measurement, less ``safety_margin``.
    * ``clients``: the expected number of concurrent clients (None: unknown).
    * ``p99_s``: a latency target for the 99th percentile at ``clients`` concurrency.
    * ``point_s``: how long each sweep point runs; ``requests_per_child``: the K requests each
      child serves in the size measurement (half before, half after the middle snapshot).
    * ``measure_children``: children started for the size measurement.
    * ``max_children``: the most children the sweep tries, whatever the memory allows.
    * ``mrpc_values``: the MaxRequestsPerChild values swept (0 = unlimited).
    * ``max_loss``: the largest throughput loss to respawning accepted (a fraction).
    * ``tolerance``: "within a few percent" of the best throughput (a fraction).
    * ``memory_floor``: a step stops at once if MemAvailable falls below it.
    * ``compare_preload``: also measure the sizes with the other preload setting (when the
      adapter can start the server both ways).
    """

    path: str = "/"
    ram: int | None = None
    clients: int | None = None
    p99_s: float | None = None
    quick: bool = False
    point_s: float = 6.0
    requests_per_child: int = 200
    measure_children: int = 4
    max_children: int = 64
    mrpc_values: tuple[int, ...] = FULL_MRPC
    max_loss: float = 0.02
    tolerance: float = 0.05
    safety_margin: int = 256 * MIB
    memory_floor: int = 256 * MIB
    compare_preload: bool = True
    timeout_s: float = 30.0

    def to_dict(self) -> dict[str, Any]:
        plain = asdict(self)
        plain["mrpc_values"] = list(self.mrpc_values)
        return plain

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TuneOptions:
        """Read back :meth:`to_dict` (``tune.json``); :class:`~pounder.UsageError` if it is not."""
        values = {}
        try:
            for f in fields(cls):
                if f.name not in data:
                    continue
                value = data[f.name]
                kind = str(f.type)
                if f.name == "mrpc_values":
                    value = tuple(_exact(v, int, f.name) for v in value)
                elif value is None and "None" in kind:
                    pass
                else:
                    value = _exact(value, {"str": str, "bool": bool, "int": int}.get(kind.split(" ")[0], float),
                                   f.name)
                values[f.name] = value
            options = cls(**values)
            options.validate()
        except (TypeError, ValueError) as error:
            raise UsageError(f"the stored options are not valid ({error})") from None
        return options

    def validate(self) -> None:
        """:class:`~pounder.UsageError` (one line) for a value of the wrong type or out of range."""
        for name, (kinds, expected) in _FIELD_TYPES.items():
            check_type(getattr(self, name), kinds, name, expected, optional=name in _OPTIONAL)
        if not isinstance(self.mrpc_values, tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in self.mrpc_values
        ):
            raise UsageError(f"mrpc_values must be a tuple of whole numbers, not {self.mrpc_values!r}")
        if not self.path.startswith("/") or any(c.isspace() for c in self.path):
            raise UsageError(f"--path must start with / and hold no spaces, got {self.path!r}")
        if self.clients is not None and not 1 <= self.clients <= 10000:
            raise UsageError(f"--clients must be between 1 and 10000, got {self.clients}")
        if self.p99_s is not None and not 0 < self.p99_s <= 600:
            raise UsageError(f"--p99 must be more than 0 and at most 10m, got {self.p99_s:g}s")
        if not 0.5 <= self.point_s <= 600:
            raise UsageError(f"--point-duration must be between 500ms and 10m, got {self.point_s:g}s")
        if not 10 <= self.requests_per_child <= 100000:
            raise UsageError(f"--requests-per-child must be between 10 and 100000, got {self.requests_per_child}")
        if not 1 <= self.measure_children <= 64:
            raise UsageError(f"--measure-children must be between 1 and 64, got {self.measure_children}")
        if not 1 <= self.max_children <= 4096:
            raise UsageError(f"--max-children must be between 1 and 4096, got {self.max_children}")
        if not self.mrpc_values or any(v < 0 for v in self.mrpc_values):
            raise UsageError("--mrpc needs values >= 0 (0 = unlimited), e.g. 0,10000,1000,100,10")
        if not 0 < self.max_loss < 1 or not 0 < self.tolerance < 1:
            raise UsageError("--max-loss and --tolerance are fractions between 0 and 1")
        if self.ram is not None and self.ram < 16 * MIB:
            raise UsageError(f"--ram must be at least 16M, got {self.ram} bytes")


_WHOLE = (int, "a whole number")
_NUMBER = ((int, float), "a number")
_FIELD_TYPES: dict[str, tuple[type | tuple[type, ...], str]] = {
    "path": (str, "a string"), "ram": _WHOLE, "clients": _WHOLE, "p99_s": _NUMBER, "quick": (bool, "True or False"),
    "point_s": _NUMBER, "requests_per_child": _WHOLE, "measure_children": _WHOLE, "max_children": _WHOLE,
    "max_loss": _NUMBER, "tolerance": _NUMBER, "safety_margin": _WHOLE, "memory_floor": _WHOLE,
    "compare_preload": (bool, "True or False"), "timeout_s": _NUMBER,
}
_OPTIONAL = frozenset({"ram", "clients", "p99_s"})


def _seconds(value: str | float, what: str) -> float:
    """A duration as text (``"300ms"``) or a number of seconds."""
    if isinstance(value, str):
        return parse_duration(value, what)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong_type(what, "a duration such as 300ms or a number of seconds", value)
    return float(value)


def _exact(value: Any, kind: type, name: str) -> Any:
    """``value`` if it is of ``kind`` (an int is a float too; a bool is no number); else TypeError."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise TypeError(f"{name} must be {kind.__name__}, got {value!r}")
    return value


@public
def make_options(*, path: str = "/", ram: str | int | None = None, clients: int | None = None,
                 p99: str | float | None = None, quick: bool = False, point_duration: str | float | None = None,
                 requests_per_child: int | None = None, measure_children: int | None = None,
                 max_children: int | None = None, mrpc: str | Sequence[int] | None = None,
                 compare_preload: bool | None = None) -> TuneOptions:
    """:class:`TuneOptions` from values as a user types them (``ram="4G"``, ``p99="300ms"``,
    ``mrpc="0,10k,1000"``); ``quick`` shortens every step. Raises :class:`~pounder.UsageError`."""
    total = mem_total()
    values: dict[str, Any] = {
        "path": path,
        "clients": clients,
        "quick": quick,
        "point_s": 3.0 if quick else 6.0,
        "requests_per_child": 100 if quick else 200,
        "mrpc_values": QUICK_MRPC if quick else FULL_MRPC,
        "compare_preload": not quick,
        "safety_margin": max(256 * MIB, total // 20),
        "memory_floor": max(256 * MIB, total // 50),
    }
    if ram is not None:
        values["ram"] = parse_ram(ram) if isinstance(ram, str) else check_type(ram, int, "ram", "a size such as 4G "
                                                                                 "or a number of bytes")
    if p99 is not None:
        values["p99_s"] = _seconds(p99, "--p99")
    if point_duration is not None:
        values["point_s"] = _seconds(point_duration, "--point-duration")
    for key, value in (("requests_per_child", requests_per_child), ("measure_children", measure_children),
                       ("max_children", max_children), ("compare_preload", compare_preload)):
        if value is not None:
            values[key] = value
    if mrpc is not None:
        if not isinstance(mrpc, (str, Sequence)):
            raise wrong_type("mrpc", "text such as '0,10k,1000' or a list of whole numbers", mrpc)
        values["mrpc_values"] = parse_count_list(mrpc, "--mrpc") if isinstance(mrpc, str) else tuple(mrpc)
    if values.get("max_children") is None:
        values["max_children"] = max(16, 32 * available_cpus())
    options = TuneOptions(**values)
    options.validate()
    return options
