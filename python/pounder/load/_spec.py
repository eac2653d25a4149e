"""Validated bench options (:class:`BenchSpec`) and the engine spec built from them: the load
model (``_model``), the request and the targets (:mod:`pounder.traffic`) put together."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pounder._errors import UsageError, check_flag, check_path, check_text, public
from pounder._files import check_distinct, check_output_path
from pounder._units import parse_bandwidth
from pounder.load._model import build_load_model, count, replay_model, seconds
from pounder.load._options import LoadOptions
from pounder.load._tls import TlsSettings, read_tls
from pounder.results import HttpOptions, LoadPlan, RunOptions, TargetInfo, parse_statuses
from pounder.traffic import (
    AccessLog,
    ReplayPlan,
    RequestTemplate,
    UrlLine,
    base_of,
    build_request_template,
    check_scenario_options,
    check_unix_socket,
    parse_url,
    plan_replay,
    read_access_log,
    read_scenario,
    read_url_file,
    recorded_headers,
    recorded_request,
    resolve,
    server_name,
)

if TYPE_CHECKING:
    from pounder._engine import EngineScenario, EngineSpec, EngineTarget

DEFAULT_TIMEOUT_S = 30.0
MAX_THROTTLE_BPS = 10**10
MAX_CALLS_PER_CONN = 10**9
MAX_WEIGHT = 10**6
MAX_LOG_WEIGHT = 2**32 - 1
"""An access log's request counts are weights as they are: up to the engine's limit."""


@public
@dataclass(frozen=True)
class Target:
    """One target as the engine gets it."""

    url: str
    weight: int
    tcp: str | None
    unix: str | None
    request: bytes
    head: bool
    method: str | None = None
    """The URL file line's own method, or ``None`` (the global method)."""
    tls_name: str | None = None
    """https://: the server name (SNI, and the name its certificate must hold); None: plain HTTP."""

    def engine_dict(self) -> EngineTarget:
        return {"tcp": self.tcp, "unix": self.unix, "request": self.request, "head": self.head, "weight": self.weight,
                "tls_name": self.tls_name}

    def info(self) -> TargetInfo:
        return TargetInfo(url=self.url, weight=self.weight, connect=self.tcp or f"unix:{self.unix}",
                          method=self.method)


def _log_lines(
    url: str | None, url_file: str | Path | None, access_log: str | Path | AccessLog,
    exclude_static: bool, log_methods: str | Sequence[str] | None,
) -> tuple[UrlLine, ...]:  # fmt: skip
    """The URL lines of an access log's mix under the base URL ``url``."""
    if url_file is not None:
        raise UsageError("give either -f/--url-file or --access-log, not both")
    if url is None or not url.strip():
        raise UsageError("--access-log needs the server's base URL, e.g. http://127.0.0.1:8080")
    if isinstance(access_log, AccessLog):
        if exclude_static or log_methods is not None:
            raise UsageError("exclude_static and log_methods apply when the access log is read: give them to "
                             "read_access_log")
        log = access_log
    else:
        methods = ("GET", "HEAD") if log_methods is None else log_methods
        log = read_access_log(access_log, methods=methods, exclude_static=exclude_static)
    base = base_of(url)
    return tuple(UrlLine(base + path, weight, f"{log.path}: {method} {path}", method)
                 for weight, method, path in log.targets)


def _url_lines(url: str | None, url_file: str | Path | None) -> tuple[UrlLine, ...]:
    if url is not None and url_file is not None:
        raise UsageError("give either a URL or -f/--url-file, not both")
    if url_file is not None:
        return read_url_file(url_file)
    if url is None or not url.strip():
        raise UsageError("no URL given: pass a URL or -f/--url-file FILE")
    return (UrlLine(url, 1, ""),)


def build_targets(
    lines: Iterable[UrlLine], template: RequestTemplate, *, unix_socket: str | None, allow_remote: bool,
    max_weight: int = MAX_WEIGHT,
) -> tuple[Target, ...]:
    """Check, resolve and pre-serialize every URL (each host:port is resolved once), each with its
    line's method if it names one."""
    socket_path = check_unix_socket(unix_socket) if unix_socket is not None else None
    resolved: dict[tuple[str, int], str] = {}
    targets = []
    for line in lines:
        where = f"{line.where}: " if line.where else ""
        if line.weight > max_weight:
            raise UsageError(f"{where}weight {line.weight} is more than {max_weight:,}")
        url = parse_url(line.url, where)
        if url.tls and socket_path is not None:
            raise UsageError(f"{where}--unix-socket carries plain HTTP: {url.text!r} is https://")
        address = None
        if socket_path is None:
            key = (url.host, url.port)
            if key not in resolved:
                resolved[key] = resolve(url.host, url.port, allow_remote=allow_remote)
            address = resolved[key]
        request = template.for_method(line.method)
        targets.append(
            Target(
                url=url.text,
                weight=line.weight,
                tcp=address,
                unix=socket_path,
                request=request.render(url),
                head=request.method == "HEAD",
                method=line.method,
                tls_name=server_name(url.host) if url.tls else None,
            )
        )
    return tuple(targets)


def _check_given(given: LoadOptions, url: str | None, url_file: str | Path | None,
                 access_log: str | Path | AccessLog | None, exclude_static: bool,
                 log_methods: str | Sequence[str] | None, order: str | None) -> None:
    """The types of what was given and the combinations that cannot go together."""
    given.check_types()
    check_text(url, "url", optional=True)
    check_path(url_file, "url_file", optional=True)
    check_text(order, "order", optional=True)
    check_flag(exclude_static, "exclude_static")
    if order not in (None, "sequential", "random"):
        raise UsageError(f"--order must be 'sequential' or 'random', got {order!r}")
    if given.replay is None and given.speed is not None:
        raise UsageError("--speed needs --replay")
    if access_log is None and given.replay is None and (exclude_static or log_methods is not None):
        raise UsageError("--exclude-static and --log-methods need --access-log or --replay")
    if access_log is not None and order == "sequential":
        raise UsageError("--access-log replays its mix in random order: --order sequential cannot go with it")
    source = "--replay" if given.replay is not None else "--access-log" if access_log is not None else None
    request = (("-m/--method", given.method), ("-b/--body", given.body), ("-T/--content-type", given.content_type))
    for flag, value in request if source is not None else ():
        if value is not None:
            raise UsageError(f"{source} takes each request's method (and a HAR's body and headers) from the file: "
                             f"{flag} cannot go with it")
    if given.calls_per_conn is not None and not given.keepalive:
        raise UsageError("--calls-per-conn needs keep-alive: it cannot be combined with --no-keepalive")
    if access_log is not None and not isinstance(access_log, AccessLog):
        check_path(access_log, "access_log")


def _http(given: LoadOptions) -> tuple[RequestTemplate, HttpOptions]:
    """The request template and the HTTP options as recorded."""
    template = build_request_template(
        method=given.method, body=given.body, content_type=given.content_type, headers=given.headers,
        cookies=given.cookies, auth=given.auth, keepalive=given.keepalive,
    )  # fmt: skip
    return template, HttpOptions(
        method=template.method,
        keepalive=given.keepalive,
        calls_per_conn=count(given.calls_per_conn, "--calls-per-conn", 0, MAX_CALLS_PER_CONN) or 0,
        timeout_s=seconds(given.timeout, "--timeout") or DEFAULT_TIMEOUT_S,
        throttle_bps=_throttle(given.throttle),
        body_bytes=len(template.body),
        headers=recorded_headers(template),
        body_sha256=hashlib.sha256(template.body).hexdigest(),
    )


def _replay_conflicts(given: LoadOptions, url_file: object, access_log: object, order: object, warmup: object) -> None:
    """What cannot go with ``--replay``: another source of requests, a rate, an order, a warm-up."""
    refused = [("-f/--url-file", url_file), ("--access-log", access_log), ("--rate", given.rate),
               ("--stages", given.stages), ("--warmup", warmup), ("--order", order),
               ("--scenario", getattr(given, "scenario", None))]  # fmt: skip
    for flag, value in refused:
        if value is not None:
            why = {"--rate": "the log sets the times", "--stages": "the log sets the times",
                   "--order": "the log sets the order", "--warmup": "every request of the log is measured"}.get(
                flag, "give one source of requests")  # fmt: skip
            raise UsageError(f"--replay cannot be combined with {flag} ({why})")
    if given.connections is not None and given.max_in_flight is not None:
        raise UsageError("-c and --max-in-flight both set the cap on requests in flight; give only one")


def _plan_replay(given: LoadOptions, url_file: object, access_log: object, order: object, warmup: object,
                 exclude_static: bool, log_methods: str | Sequence[str] | None) -> ReplayPlan:
    """``--replay``: the options it cannot go with refused, then its file read and planned."""
    _replay_conflicts(given, url_file, access_log, order, warmup)
    return plan_replay(given.replay, given.speed, partial(replay_model, given), exclude_static=exclude_static,
                       log_methods=log_methods)


@public
@dataclass(frozen=True)
class BenchSpec(LoadPlan[Target]):
    """Validated bench options, ready to hand to the engine. Build with :meth:`from_options`."""

    tsv_path: str | None = None
    hdr_log_path: str | None = None
    allow_remote: bool = False
    auto_threads: bool = False
    """The engine threads were not given (``-t``): they are this machine's CPUs, and each agent of
    a distributed run uses its own instead."""
    """Whether targets off this machine were allowed (so is a server-status URL then)."""
    scenario: EngineScenario | None = None
    """The virtual users' steps (``--scenario``), built for the one target; None: the targets' requests."""
    scenario_file: str | None = None
    tls: TlsSettings | None = None
    """How https:// targets are trusted (``--insecure``, ``--cacert``, ``--cert``/``--key``,
    ``--no-tls-resume``); None when no target is https://."""
    replay: ReplayPlan | None = None
    """A timed replay (``--replay``): each request's time and target; None: the load model's schedule."""
    io: Literal["auto", "uring", "epoll"] = "auto"
    """The I/O path asked for (``--io``); :func:`~pounder.load.check_io` says which one the run takes."""
    expect_status: tuple[tuple[int, int], ...] | None = None
    """``--expect-status``: the statuses that count as answers instead of 2xx and 3xx
    (:func:`~pounder.results.load_failure`); None when not given."""

    @classmethod
    def from_options(
        cls,
        url: str | None = None,
        *,
        url_file: str | Path | None = None,
        access_log: str | Path | AccessLog | None = None,
        exclude_static: bool = False,
        log_methods: str | Sequence[str] | None = None,
        order: str | None = None,
        warmup: int | str | None = None,
        unix_socket: str | None = None,
        tsv_path: str | Path | None = None,
        hdr_log_path: str | Path | None = None,
        options: LoadOptions | None = None,
        **load: Any,
    ) -> BenchSpec:
        """Validate options as a user gives them (strings with units such as ``"10k"``, ``"30s"``
        or plain numbers): the load options as ``options`` or as keyword arguments named as the
        fields of :class:`LoadOptions` (both: the keywords win); raises
        :class:`~pounder.UsageError` with one line on bad input.

        ``access_log`` (a path, or an :class:`AccessLog` already read): replay its mix, each
        request weighted by its count, in random order (``order`` may only be ``"random"``); the
        URL is then the server's base, ``http://host:port`` without a path.
        ``exclude_static`` and ``log_methods`` are :func:`read_access_log`'s ``exclude_static``
        and ``methods`` (default GET and HEAD), valid only with a path to read."""
        given = LoadOptions.of(options, **load)
        _check_given(given, url, url_file, access_log, exclude_static, log_methods, order)
        check_text(unix_socket, "unix_socket", optional=True)
        check_path(tsv_path, "tsv_path", optional=True)
        check_path(hdr_log_path, "hdr_log_path", optional=True)
        log_path = access_log.path if isinstance(access_log, AccessLog) else access_log
        replay = None
        if given.replay is not None:  # before the scenario: a replay names what it excludes
            replay = _plan_replay(given, url_file, access_log, order, warmup, exclude_static, log_methods)
        scenario = None
        if given.scenario is not None:
            url = check_scenario_options(given, url, url_file, access_log, order)
            scenario = read_scenario(given.scenario)
        if replay is not None:  # each distinct request's count in the log as its weight: as large as it is
            lines, max_weight = replay.url_lines(_replay_base(url)), MAX_LOG_WEIGHT
        elif access_log is None:
            lines, max_weight = _url_lines(url, url_file), MAX_WEIGHT
        else:
            lines = _log_lines(url, url_file, access_log, exclude_static, log_methods)
            max_weight = MAX_LOG_WEIGHT
        model = replay.load if replay is not None else build_load_model(
            connections=given.connections, requests=given.requests, duration=given.duration, threads=given.threads,
            rate=given.rate, stages=given.stages, max_in_flight=given.max_in_flight, warmup=warmup,
        )  # fmt: skip
        template, http = _http(given)
        tsv = check_output_path(tsv_path, "--tsv", "TSV")
        hdr_log = check_output_path(hdr_log_path, "--hdr-log", "an HdrHistogram log")
        check_distinct([("--tsv", tsv), ("--hdr-log", hdr_log)],
                       [("-f/--url-file", url_file), ("--access-log", log_path), *given.input_files()])
        if "-" in (tsv, hdr_log):
            raise UsageError("--tsv and --hdr-log need a file, not '-'")
        targets = build_targets(lines, template, unix_socket=unix_socket, allow_remote=given.allow_remote,
                                max_weight=max_weight)
        if replay is not None:
            targets = _recorded(targets, replay, template)
        return cls(
            targets=targets,
            order="random" if order == "random" or access_log is not None else "sequential",
            load=model,
            http=http,
            tsv_path=tsv,
            hdr_log_path=hdr_log,
            allow_remote=given.allow_remote,
            auto_threads=given.threads is None,
            scenario=None if scenario is None else scenario.engine_scenario(
                parse_url(targets[0].url).host_header, keepalive=given.keepalive, headers=template.user,
                generated=[pair for pair in template.generated if pair[0] == "Authorization"]),
            scenario_file=None if scenario is None else scenario.path,
            tls=read_tls(given, any(target.tls_name is not None for target in targets)),
            replay=replay,
            io=given.io,
            expect_status=parse_statuses(given.expect_status),
        )

    def target_label(self) -> str:
        """What the load is on, in one label (``--metrics-out``'s ``target``): its URL, or its first
        URL's origin when it has several."""
        urls = list(dict.fromkeys(target.url for target in self.targets))
        if len(urls) == 1:
            return urls[0]
        url = parse_url(urls[0])
        return f"{'https' if url.tls else 'http'}://{url.host_header}"

    def run_options(self) -> RunOptions:
        """The options as recorded in the result."""
        return RunOptions(
            targets=tuple(target.info() for target in self.targets),
            order=self.order,
            load=self.load,
            http=self.http,
            scenario=self.scenario_file,
            replay=None if self.replay is None else self.replay.info,
            tls=None if self.tls is None else self.tls.info(),
            expect_status=self.expect_status,
        )

    def engine_spec(self) -> EngineSpec:
        """The dict ``pounder._engine.start`` takes (docs/reference/engine-contract.md)."""
        load, http = self.load, self.http
        return {
            "targets": [target.engine_dict() for target in self.targets],
            "order": self.order if self.replay is None else None,
            "connections": load.connections,
            "threads": load.threads,
            "requests": load.requests,
            "duration_s": load.duration_s if self.replay is None else self.replay.cut_s,
            "warmup_requests": load.warmup_requests,
            "warmup_s": load.warmup_s,
            "stages": None
            if load.stages is None
            else [[stage.duration_s, stage.start_rate, stage.end_rate] for stage in load.stages],
            "keepalive": http.keepalive,
            "calls_per_conn": http.calls_per_conn,
            "timeout_s": http.timeout_s,
            "throttle_bps": http.throttle_bps,
            "tsv_path": self.tsv_path,
            "hdr_log_path": self.hdr_log_path,
            "scenario": self.scenario,
            "tls": None if self.tls is None else self.tls.engine_dict(),
            "replay": None if self.replay is None else self.replay.engine_replay(),
            "io": self.io,
        }

    def share_spec(self, index: int, count: int, start_at_unix_us: int | None = None) -> EngineSpec:
        """The engine spec of share ``index`` of ``count`` (agents that run this spec together):
        the connections split as evenly as possible (the first ``connections % count`` shares
        one more), the engine threads at most the share's connections, and the slots of one
        global sequence dealt out (every ``count``-th from ``index``): the shares send exactly
        ``requests`` (and ``warmup_requests``) together, and in open loop exactly the arrivals of
        the one schedule. ``start_at_unix_us``: when every share starts (each machine's clock).
        No TSV or HDR log: those are files of one machine. :class:`~pounder.UsageError` when a
        share would get no connection or no request."""
        if not 0 <= index < count:
            raise UsageError(f"agent {index} of {count} does not exist")
        if count > self.load.connections:
            flag = "-c/--max-in-flight (the cap on requests in flight)" if self.load.is_open else "-c"
            raise UsageError(f"{count} agents need at least {count} connections (one each, {flag}), got "
                             f"{self.load.connections}")
        if self.load.requests is not None and self.load.requests < count:
            raise UsageError(f"{count} agents need at least {count} requests (one each), got {self.load.requests}")
        connections = self.load.connections // count + (index < self.load.connections % count)
        return {**self.engine_spec(), "connections": connections, "threads": min(self.load.threads, connections),
                "slot_offset": index, "slot_stride": count, "start_at_unix_us": start_at_unix_us,
                "tsv_path": None, "hdr_log_path": None}


def _replay_base(url: str | None) -> str:
    if url is None or not url.strip():
        raise UsageError("--replay needs the server's base URL, e.g. http://127.0.0.1:8080")
    return base_of(url)


def _recorded(targets: tuple[Target, ...], replay: ReplayPlan, template: RequestTemplate) -> tuple[Target, ...]:
    """The targets of a replay with a HAR's own headers and bodies."""
    own = [recorded_request(key, template, parse_url(target.url)) for key, target in zip(replay.requests, targets,
                                                                                       strict=True)]
    return tuple(target if request is None else replace(target, request=request)
                 for target, request in zip(targets, own, strict=True))  # fmt: skip


def _throttle(value: int | str | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"--throttle must be a bandwidth, got {value!r}")
    bytes_per_s = parse_bandwidth(value) if isinstance(value, str) else value
    if not 1 <= bytes_per_s <= MAX_THROTTLE_BPS:
        raise UsageError(f"--throttle must be between 1 byte/s and 10 GB/s, got {bytes_per_s:,} bytes/s")
    return bytes_per_s
