"""What a tuning run is asked to do (:class:`TuneOptions`), checked before anything starts."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, cast

from pounder._errors import UsageError, check_type, public, wrong_type
from pounder._units import (
    MIB,
    available_cpus,
    parse_bandwidth,
    parse_count_list,
    parse_cpu_list,
    parse_duration,
    parse_rate,
    plain,
)
from pounder.compare import MIN_TRIALS
from pounder.load import LoadOptions
from pounder.pool import split_cpus
from pounder.procs import mem_total
from pounder.servers import (
    HOST,
    cpu_quota,
    listen_address,
    parse_ram_budget,
    pod_cpus_check,
    pod_unavailable,
)
from pounder.traffic import read_access_log, read_url_targets

FULL_MRPC = (0, 10000, 1000, 100, 10)
QUICK_MRPC = (0, 1000, 100, 10)


@public
@dataclass(frozen=True)
class TuneOptions:
    """The knobs of a tuning run (sizes in bytes, times in seconds).

    * ``path``: what each request asks for (path and query), on the server pounder started.
    * ``ram``: the RAM budget for the server; None: MemAvailable + the server's own footprint
      at the time of the measurement, less ``safety_margin``. ``ram_source``: where it came from
      when it is a cgroup's memory limit (``--ram cgroup[:PATH]``, read once, when the run
      starts); None: given as a size.
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
    * ``trials``: interleaved trials per sweep point (at least 3): each point is the median of
      its trials, with a 95 % bootstrap interval.
    * ``targets``: the request mix, ``(weight, method, path)`` (from ``--urls`` or
      ``--access-log``); empty: every request asks for ``path``. ``traffic``: what the mix came
      from, in a few lines, printed with the result.
    * ``load``: the load options a tuning run takes from bench's (:class:`~pounder.LoadOptions`,
      the others are the run's own): ``keepalive``, requests on kept-alive connections (off by
      default: each request is a new connection, so MaxRequestsPerChild counts requests in every
      server); ``throttle``, slow clients (bench's ``--throttle`` text); ``allow_remote``, see
      ``listen``. Read as ``options.keepalive``, ``options.throttle``, ``options.allow_remote``
      too. ``proxy``: False when no buffering proxy is in front, so a slow client holds a child
      for the whole transfer.
    * ``peak_rate``: the target arrival rate (req/s) the pool must answer (``peak_source`` says
      where it came from: ``--peak-rate`` or the access log's busiest second).
    * ``server_cpus`` / ``load_cpus``: CPU affinity of the server under test and of the load
      generator (None: not pinned).
    * ``confirm``: start the recommended configuration and check it at the target load.
    * ``listen``: the IPv4 address the server under test listens on (default 127.0.0.1), for
      load generators on other machines (Ray agents); one outside 127.0.0.0/8 needs
      ``allow_remote`` (see :func:`~pounder.servers.listen_address`).
    * ``cpus``: the pod, emulated: the server runs in a cgroup with a quota of this many CPUs (a
      decimal > 0), its memory limit ``ram`` enforced there when given, and the decisions count
      the quota as the cores the server has; None: not emulated (the CPUs it runs on).
      ``cpus_source``: how it was given (``--cpus 1.5``, or the cgroup it was read from with
      ``--cpus cgroup[:PATH]``).
    * ``life``: after the size measurement, follow its children to this many requests each,
      snapshotting their private and shared memory on a log scale (:mod:`pounder.tune._life`);
      0: off (a stored run without it, and ``quick``). :func:`make_options` gives 10 x
      ``requests_per_child`` unless told.
    * ``profile``: after the confirmation, profile the recommended configuration at its load
      (``profile.json`` and ``flame.svg`` in the results directory; :mod:`pounder.tune._profile_step`).
    * ``sweep_threads``: for the servers whose children run threads (Puma, gunicorn, uWSGI) and
      unless the adapter's threads were given, compare workers x threads shapes at the offered
      load (:mod:`pounder.tune._shapes`); False: one thread per child. A run stored before pounder
      compared shapes reads as False.
    """

    path: str = "/"
    ram: int | None = None
    ram_source: str | None = None
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
    trials: int = 3
    targets: tuple[tuple[int, str, str], ...] = ()
    traffic: tuple[str, ...] = ()
    load: LoadOptions = LoadOptions(keepalive=False)
    proxy: bool = True
    peak_rate: float | None = None
    peak_source: str | None = None
    server_cpus: tuple[int, ...] | None = None
    load_cpus: tuple[int, ...] | None = None
    confirm: bool = True
    listen: str = HOST
    profile: bool = False
    cpus: float | None = None
    cpus_source: str | None = None
    sweep_threads: bool = True
    life: int = 0

    @property
    def keepalive(self) -> bool:
        return self.load.keepalive

    @property
    def throttle(self) -> str | None:
        return cast("str | None", self.load.throttle)  # bench's text, checked so by validate()

    @property
    def allow_remote(self) -> bool:
        return self.load.allow_remote

    def to_dict(self) -> dict[str, Any]:
        """The options as ``tune.json`` stores them: the load options among the others, where
        they have always stood (``keepalive`` and ``throttle`` before ``proxy``, ``allow_remote``
        after ``listen``)."""
        plain: dict[str, Any] = {}
        for name, value in asdict(self).items():
            if name == "load":
                plain.update(keepalive=self.keepalive, throttle=self.throttle)
            else:
                plain[name] = value
            if name == "listen":
                plain["allow_remote"] = self.allow_remote
        for name in _TUPLES:
            value = getattr(self, name)
            plain[name] = None if value is None else [list(v) if isinstance(v, tuple) else v for v in value]
        return plain

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TuneOptions:
        """Read back :meth:`to_dict` (``tune.json``); :class:`~pounder.UsageError` if it is not."""
        values: dict[str, Any] = {}
        try:
            load = {name: _exact(data[name], kind, name) for name, kind in _LOAD_KEYS.items()
                    if name in data and not (name == "throttle" and data[name] is None)}
            values["load"] = LoadOptions(**{"keepalive": False, **load})
            for f in fields(cls):
                if f.name not in data:
                    continue
                value = data[f.name]
                kind = str(f.type)
                if f.name in _TUPLES and value is not None:
                    value = _TUPLES[f.name](value)
                elif value is None and "None" in kind:
                    pass
                else:
                    value = _exact(value, {"str": str, "bool": bool, "int": int}.get(kind.split(" ")[0], float),
                                   f.name)
                values[f.name] = value
            values.setdefault("sweep_threads", False)  # stored before shapes were compared: measured without
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
            raise UsageError(f"--p99 must be more than 0 and at most 10m, got {plain(self.p99_s)}s")
        if not 0.5 <= self.point_s <= 600:
            raise UsageError(f"--point-duration must be between 500ms and 10m, got {plain(self.point_s)}s")
        if not 10 <= self.requests_per_child <= 100000:
            raise UsageError(f"--requests-per-child must be between 10 and 100000, got {self.requests_per_child}")
        if self.life != 0 and not 10 <= self.life <= 1_000_000:
            raise UsageError(f"--life must be 0 (off) or between 10 and 1000000 requests per child, "
                             f"got {self.life}")
        if not 1 <= self.measure_children <= 64:
            raise UsageError(f"--measure-children must be between 1 and 64, got {self.measure_children}")
        if not 1 <= self.max_children <= 4096:
            raise UsageError(f"--max-children must be between 1 and 4096, got {self.max_children}")
        if not self.mrpc_values or any(v < 0 for v in self.mrpc_values):
            raise UsageError("--mrpc needs values >= 0 (0 = unlimited), e.g. 0,10000,1000,100,10")
        if not 0 < self.max_loss < 1 or not 0 < self.tolerance < 1:
            raise UsageError("--max-loss and --tolerance are fractions between 0 and 1")
        if self.cpus is not None and not 0.01 <= self.cpus <= 4096:
            raise UsageError(f"--cpus must be a number of CPUs of at least 0.01 (0.5, 1.5, 4), got {plain(self.cpus)}")
        if self.ram is not None and self.ram < 16 * MIB:
            raise UsageError(f"--ram must be at least 16M, got {self.ram} bytes")
        if not MIN_TRIALS <= self.trials <= 20:
            raise UsageError(f"--trials must be between {MIN_TRIALS} and 20, got {self.trials}")
        for weight, method, path in self.targets:
            if weight < 1 or method not in ("GET", "HEAD") or not path.startswith("/"):
                raise UsageError(f"a target must be (weight >= 1, GET or HEAD, /path), got {(weight, method, path)!r}")
        if self.peak_rate is not None and not 0 < self.peak_rate <= 1e7:
            raise UsageError(f"--peak-rate must be more than 0 and at most 10M/s, got {plain(self.peak_rate)}")
        if self.clients is not None and self.peak_rate is not None:
            raise UsageError("give one target: --clients or --peak-rate (or the access log's peak), not both")
        if self.throttle is not None:
            parse_bandwidth(self.throttle)
        if self.throttle is not None and self.proxy:
            raise UsageError("--throttle (slow clients) needs --no-proxy: behind a buffering proxy the proxy, not a "
                             "child, waits for a slow client, and the pool is sized without them")
        if not self.proxy and self.throttle is None and not self.keepalive:
            raise UsageError("--no-proxy says slow or kept-alive clients hold the children: give --throttle RATE "
                             "(how fast they read) or --keepalive")
        if self.server_cpus is not None and self.load_cpus is not None and set(self.server_cpus) & set(self.load_cpus):
            raise UsageError("--server-cpus and --load-cpus must not share a CPU (they would compete again)")
        listen_address(self.listen, allow_remote=self.allow_remote)
        self._check_load()

    def _check_load(self) -> None:
        """Tune takes three of the load options; a ``load`` that sets any other would be dropped
        from ``tune.json`` and never used: refused in one line instead."""
        if not isinstance(self.load, LoadOptions):
            raise UsageError(f"load must be a LoadOptions, not {type(self.load).__name__}")
        taken = LoadOptions(keepalive=self.load.keepalive, throttle=self.load.throttle,
                            allow_remote=self.load.allow_remote)
        others = [f.name for f in fields(LoadOptions) if getattr(self.load, f.name) != getattr(taken, f.name)]
        if others:
            raise UsageError("load: tune takes only keepalive, throttle and allow_remote from the load options and "
                             f"chooses the others itself; not {', '.join(others)}")


_WHOLE = (int, "a whole number")
_NUMBER = ((int, float), "a number")
_FIELD_TYPES: dict[str, tuple[type | tuple[type, ...], str]] = {
    "path": (str, "a string"), "ram": _WHOLE, "ram_source": (str, "a string"), "clients": _WHOLE, "p99_s": _NUMBER,
    "quick": (bool, "True or False"),
    "point_s": _NUMBER, "requests_per_child": _WHOLE, "measure_children": _WHOLE, "max_children": _WHOLE,
    "max_loss": _NUMBER, "tolerance": _NUMBER, "safety_margin": _WHOLE, "memory_floor": _WHOLE,
    "compare_preload": (bool, "True or False"), "timeout_s": _NUMBER, "trials": _WHOLE,
    "keepalive": (bool, "True or False"), "throttle": (str, "a bandwidth such as 56kbit"),
    "proxy": (bool, "True or False"), "peak_rate": _NUMBER, "peak_source": (str, "a string"),
    "confirm": (bool, "True or False"), "listen": (str, "an IPv4 address"), "allow_remote": (bool, "True or False"),
    "profile": (bool, "True or False"), "cpus": _NUMBER, "cpus_source": (str, "a string"),
    "sweep_threads": (bool, "True or False"),
    "life": _WHOLE,
}
_OPTIONAL = frozenset({"ram", "ram_source", "clients", "p99_s", "throttle", "peak_rate", "peak_source", "cpus",
                       "cpus_source"})


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(_exact(v, int, "a CPU or MaxRequestsPerChild value") for v in value)


def _targets(value: Any) -> tuple[tuple[int, str, str], ...]:
    return tuple((_exact(w, int, "weight"), _exact(m, str, "method"), _exact(p, str, "path")) for w, m, p in value)


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(_exact(v, str, "traffic") for v in value)


_LOAD_KEYS = {"keepalive": bool, "throttle": str, "allow_remote": bool}
"""The fields of :attr:`TuneOptions.load` as ``tune.json`` stores them, with their type."""

_TUPLES = {"mrpc_values": _ints, "targets": _targets, "traffic": _texts, "server_cpus": _ints, "load_cpus": _ints}


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
                 compare_preload: bool | None = None, trials: int | None = None,
                 urls: str | os.PathLike[str] | None = None, access_log: str | os.PathLike[str] | None = None,
                 exclude_static: bool = False, keepalive: bool = False, throttle: str | None = None,
                 proxy: bool = True, peak_rate: str | float | None = None,
                 server_cpus: str | Sequence[int] | None = None, load_cpus: str | Sequence[int] | None = None,
                 confirm: bool = True, listen: str | None = None, allow_remote: bool = False,
                 profile: bool = False, cpus: str | float | None = None, sweep_threads: bool = True,
                 life: int | None = None) -> TuneOptions:
    """:class:`TuneOptions` from values as a user types them (``ram="4G"``, ``p99="300ms"``,
    ``mrpc="0,10k,1000"``, ``peak_rate="200/s"``, ``server_cpus="1-3"``); ``quick`` shortens every
    step. ``urls``: a bench URL file (weights, GET/HEAD per line; only each URL's path and query
    are used: pounder starts the server on its own port); ``access_log``: an Apache/nginx access
    log whose GET and HEAD requests are replayed in their measured proportions, and whose busiest
    second is the target rate unless ``clients`` or ``peak_rate`` is given. ``listen``: the
    server's address (default 127.0.0.1; another needs ``allow_remote``). ``cpus``: the pod's CPU
    quota (``1.5``, ``"cgroup"``, ``"cgroup:PATH"``; see :func:`_cpus`). ``life``: requests per child
    the children are followed to (default 10 x ``requests_per_child``, 0 with ``quick``; 0: off). Raises
    :class:`~pounder.UsageError`."""
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
        values.update(_ram(ram))
    if p99 is not None:
        values["p99_s"] = _seconds(p99, "--p99")
    if point_duration is not None:
        values["point_s"] = _seconds(point_duration, "--point-duration")
    for key, value in (("requests_per_child", requests_per_child), ("measure_children", measure_children),
                       ("max_children", max_children), ("compare_preload", compare_preload)):
        if value is not None:
            values[key] = value
    values["life"] = (0 if quick else 10 * values["requests_per_child"]) if life is None else life
    if mrpc is not None:
        if not isinstance(mrpc, (str, Sequence)):
            raise wrong_type("mrpc", "text such as '0,10k,1000' or a list of whole numbers", mrpc)
        values["mrpc_values"] = parse_count_list(mrpc, "--mrpc") if isinstance(mrpc, str) else tuple(mrpc)
    if values.get("max_children") is None:
        values["max_children"] = max(16, 32 * available_cpus())
    if trials is not None:
        values["trials"] = trials
    traffic = _traffic(urls, access_log, exclude_static, path)
    if clients is not None or peak_rate is not None:  # a target given outright wins over the log's peak
        traffic.pop("peak_rate", None)
        traffic.pop("peak_source", None)
    values.update(traffic)
    if peak_rate is not None:
        values["peak_rate"] = parse_rate(peak_rate, "--peak-rate") if isinstance(peak_rate, str) else peak_rate
        values["peak_source"] = "--peak-rate"
    values.update(load=LoadOptions(keepalive=keepalive, throttle=throttle, allow_remote=allow_remote), proxy=proxy,
                  confirm=confirm, profile=profile, sweep_threads=sweep_threads)
    if listen is not None:
        values["listen"] = listen_address(listen, allow_remote=allow_remote)
    for key, listed in (("server_cpus", server_cpus), ("load_cpus", load_cpus)):
        if listed is not None:
            values[key] = parse_cpu_list(listed, f"--{key.replace('_', '-')}") if isinstance(listed, str) \
                else tuple(listed)
    options = TuneOptions(**values)
    options.validate()
    if cpus is not None:
        options = _with_pod(options, cpus)
    return options


def _cpus(cpus: str | float) -> tuple[float, str]:
    """The pod's CPU quota as typed, with how it was given: a decimal number of CPUs (``1.5``), or
    ``cgroup`` / ``cgroup:PATH``: the quota of the cgroup pounder runs in or of the one named
    (:func:`~pounder.servers.cpu_quota`)."""
    if not isinstance(cpus, str):
        value = float(check_type(cpus, (int, float), "cpus", "a number of CPUs such as 1.5, or 'cgroup'"))
        return value, f"--cpus {plain(value)}"
    text = cpus.strip()
    kind, colon, path = text.partition(":")
    if kind == "cgroup":
        if colon and not path.strip():
            raise UsageError("--cpus cgroup: needs a cgroup after the colon (cgroup:/system.slice/app.service or a "
                             "directory under /sys/fs/cgroup), or no colon for the cgroup pounder runs in")
        quota, how = cpu_quota(path.strip())
        whose = "the cgroup pounder runs in" if not colon else "the cgroup"
        return quota, f"--cpus {text}: the CPU quota of {whose} ({how})"
    if not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", text):
        raise UsageError(f"invalid --cpus {cpus!r}: give a number of CPUs (0.5, 1.5, 4), or cgroup / cgroup:PATH")
    value = float(text)
    if value <= 0:
        raise UsageError(f"--cpus must be more than 0 (a number of CPUs: 0.5, 1.5, 4), got {text}")
    return value, f"--cpus {text}"


def _with_pod(options: TuneOptions, cpus: str | float) -> TuneOptions:
    """``options`` with the pod's CPU quota, checked against the CPUs the server may run on and
    against a cpu cgroup pounder can write to (all before anything starts)."""
    value, source = _cpus(cpus)
    server = options.server_cpus
    if server is None and options.load_cpus is None:  # as the run will split them (pounder.pool.split_cpus)
        server = split_cpus(sorted(os.sched_getaffinity(0)))[0]
    pod_cpus_check(value, len(server) if server is not None else available_cpus())
    options = replace(options, cpus=value, cpus_source=source)
    options.validate()
    why = pod_unavailable(memory_limit=options.ram is not None)
    if why:
        raise UsageError(why)
    return options


def _ram(ram: str | int) -> dict[str, Any]:
    """The RAM budget as typed (:func:`~pounder.servers.parse_ram_budget`: a size, a number of bytes,
    or ``cgroup`` / ``cgroup:PATH``), with where it came from when a cgroup's limit."""
    budget = parse_ram_budget(ram)
    return {"ram": budget.bytes} if budget.source is None else {"ram": budget.bytes, "ram_source": budget.source}


def _traffic(urls: str | os.PathLike[str] | None, access_log: str | os.PathLike[str] | None, exclude_static: bool,
             path: str) -> dict[str, Any]:
    """The request mix (and, from an access log, its busiest second as the target rate)."""
    if exclude_static and access_log is None:
        raise UsageError("--exclude-static is for --access-log")
    if urls is not None and access_log is not None:
        raise UsageError("give --urls or --access-log, not both")
    if (urls is not None or access_log is not None) and path != "/":
        raise UsageError("--path and --urls/--access-log both say what to ask for: give one")
    if urls is not None:
        targets = read_url_targets(os.fspath(urls))
        return {"targets": targets, "traffic": (f"{len(targets):,} requests from the URL file {os.fspath(urls)}",)}
    if access_log is None:
        return {}
    log = read_access_log(os.fspath(access_log), exclude_static=exclude_static)
    return {"targets": log.targets, "traffic": tuple(log.describe()), "peak_rate": float(log.peak_second.count),
            "peak_source": f"the access log's busiest second ({log.peak_second.count:,} requests at "
                           f"{log.peak_second.start:%Y-%m-%d %H:%M:%S})"}
