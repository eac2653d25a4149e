"""Validated bench options (:class:`BenchSpec`) and the engine spec built from them.

Decisions (also shown in ``pounder bench --help``):

* Closed loop (no ``rate``/``stages``): ``connections`` users (default 10). Without ``requests``
  and ``duration`` the run lasts 10 s; with both it stops at whichever comes first.
* Open loop (``rate`` or ``stages``): ``connections`` (alias ``max_in_flight``) is the cap on
  requests in flight, default 1000. ``rate`` "R" is one constant stage lasting ``duration``
  (default 10 s) or, with only ``requests`` N, N/R seconds. A ramp "A..B/T" lasts T, and is
  followed by a constant stage at B when ``duration`` is longer; a ramp "A..B" lasts ``duration``.
  ``stages`` set the run's length themselves, so they exclude ``requests`` and ``duration``.
* ``threads`` defaults to the CPUs this process may run on and is silently clamped to
  ``connections`` (a thread with no connection would idle).
* Targets must resolve to a loopback address (127.0.0.0/8 or ::1) unless ``allow_remote``; the
  first IPv4 address is used when a name has several, else the first address.
* Method: GET, or POST when there is a body. A header given by the user replaces the header
  pounder would generate with the same name (case-insensitive); ``Connection`` is controlled by
  ``keepalive`` only.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, urlsplit

from pounder._errors import UsageError
from pounder._units import available_cpus, parse_bandwidth, parse_count, parse_duration
from pounder._version import __version__
from pounder.load._parse import (
    RateSpec,
    Stage,
    UrlLine,
    Warmup,
    basic_auth,
    check_token,
    load_body,
    parse_cookie,
    parse_header,
    parse_rate_spec,
    parse_stages,
    parse_warmup,
    read_url_file,
)
from pounder.load._result import HttpOptions, LoadModel, RunOptions, TargetInfo

if TYPE_CHECKING:
    from pounder._engine import EngineSpec, EngineTarget

DEFAULT_CONNECTIONS = 10
DEFAULT_OPEN_LOOP_CAP = 1000
DEFAULT_DURATION_S = 10.0
DEFAULT_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 100_000
MAX_THREADS = 1024
MAX_REQUESTS = 10**10
MAX_DURATION_S = 24 * 3600.0
MAX_RATE = 10_000_000.0
MAX_THROTTLE_BPS = 10**10
MAX_CALLS_PER_CONN = 10**9
MAX_WEIGHT = 10**6
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
REDACTED_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
_URL_SAFE = "!#$%&'()*+,/:;=?@[]~"

Number = int | float | str


# ---------------------------------------------------------------------------------------------
# Numbers with ranges


def _count(value: int | str | None, what: str, low: int, high: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"{what} must be a whole number, got {value!r}")
    number = parse_count(value, what) if isinstance(value, str) else value
    if not low <= number <= high:
        raise UsageError(f"{what} must be between {low} and {high:,}, got {number:,}")
    return number


def _seconds(value: Number | None, what: str, high: float = MAX_DURATION_S) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UsageError(f"{what} must be a duration, got {value!r}")
    seconds = parse_duration(value, what) if isinstance(value, str) else float(value)
    if not 0 < seconds <= high:
        raise UsageError(f"{what} must be more than 0 and at most {high / 3600:g}h, got {seconds:g}s")
    return seconds


def _check_rate(rate: float, what: str) -> float:
    if not 0 <= rate <= MAX_RATE:
        raise UsageError(f"{what} rates must be between 0 and {MAX_RATE:,.0f} req/s, got {rate:g}")
    return rate


def _check_stages(stages: tuple[Stage, ...], what: str) -> tuple[Stage, ...]:
    for stage in stages:
        _seconds(stage.duration_s, f"{what} stage length")
        _check_rate(stage.start_rate, what)
        _check_rate(stage.end_rate, what)
    total = sum(stage.duration_s for stage in stages)
    if total > MAX_DURATION_S:
        raise UsageError(f"{what} last {total / 3600:g}h in total; at most 24h")
    if all(stage.start_rate == 0 and stage.end_rate == 0 for stage in stages):
        raise UsageError(f"{what}: the rate is 0 throughout, nothing would be sent")
    return stages


# ---------------------------------------------------------------------------------------------
# Load model


def _rate_stages(rate: RateSpec, duration_s: float | None, requests: int | None) -> tuple[Stage, ...]:
    """Turn ``--rate`` (+ ``-d``/``-n``) into stages; see the module docstring."""
    if not rate.is_ramp:
        if rate.start == 0:
            raise UsageError("--rate must be more than 0")
        length = duration_s or (requests / rate.start if requests else DEFAULT_DURATION_S)
        return (Stage(length, rate.start, rate.start),)
    if rate.over_s is None:
        if duration_s is None and requests is not None:
            raise UsageError("a --rate ramp needs a length: give it (--rate 50..500/60s) or give -d")
        return (Stage(duration_s or DEFAULT_DURATION_S, rate.start, rate.end),)
    ramp = Stage(rate.over_s, rate.start, rate.end)
    if duration_s is None or duration_s == rate.over_s:
        return (ramp,)
    if duration_s < rate.over_s:
        raise UsageError(f"--duration ({duration_s:g}s) is shorter than the --rate ramp ({rate.over_s:g}s)")
    return (ramp, Stage(duration_s - rate.over_s, rate.end, rate.end))


def _check_load_conflicts(
    *,
    rate: object,
    stages: object,
    requests: object,
    duration: object,
    max_in_flight: object,
) -> None:
    if rate is not None and stages is not None:
        raise UsageError("--rate and --stages cannot be combined (a constant rate is one stage, e.g. --stages 60s@500)")
    if stages is not None and requests is not None:
        raise UsageError("-n/--requests cannot be combined with --stages (the stages set the run's length)")
    if stages is not None and duration is not None:
        raise UsageError("-d/--duration cannot be combined with --stages (the stages set the run's length)")
    if max_in_flight is not None and rate is None and stages is None:
        raise UsageError("--max-in-flight only applies to open loop (--rate or --stages); in closed loop use -c")


def build_load_model(
    *,
    connections: int | str | None = None,
    requests: int | str | None = None,
    duration: Number | None = None,
    threads: int | str | None = None,
    rate: float | int | str | None = None,
    stages: str | Sequence[Stage] | None = None,
    max_in_flight: int | str | None = None,
    warmup: int | str | None = None,
) -> LoadModel:
    """Validate the load options into a :class:`LoadModel` (see the module docstring)."""
    _check_load_conflicts(
        rate=rate,
        stages=stages,
        requests=requests,
        duration=duration,
        max_in_flight=max_in_flight,
    )
    cap = _count(max_in_flight, "--max-in-flight", 1, MAX_CONNECTIONS)
    users = _count(connections, "-c/--connections", 1, MAX_CONNECTIONS)
    if cap is not None and users is not None and cap != users:
        raise UsageError("-c and --max-in-flight both set the open-loop connection cap; give only one")
    request_count = _count(requests, "-n/--requests", 1, MAX_REQUESTS)
    duration_s = _seconds(duration, "-d/--duration")
    schedule = _schedule(rate, stages, duration_s, request_count)
    open_loop = schedule is not None
    connection_count = cap or users or (DEFAULT_OPEN_LOOP_CAP if open_loop else DEFAULT_CONNECTIONS)
    thread_count = _count(threads, "-t/--threads", 1, MAX_THREADS) or available_cpus()
    if schedule is not None:
        duration_s = sum(stage.duration_s for stage in schedule)
    elif duration_s is None and request_count is None:
        duration_s = DEFAULT_DURATION_S
    warm = _warmup(warmup)
    return LoadModel(
        kind="open" if open_loop else "closed",
        connections=connection_count,
        threads=min(thread_count, connection_count),
        requests=request_count,
        duration_s=duration_s,
        stages=schedule,
        warmup_requests=warm.requests,
        warmup_s=warm.seconds,
    )


def _schedule(
    rate: float | int | str | None,
    stages: str | Sequence[Stage] | None,
    duration_s: float | None,
    requests: int | None,
) -> tuple[Stage, ...] | None:
    if stages is not None:
        parsed = parse_stages(stages) if isinstance(stages, str) else tuple(stages)
        return _check_stages(parsed, "--stages")
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float, str)):
        raise UsageError(f"--rate must be a number of requests per second, got {rate!r}")
    spec = parse_rate_spec(rate) if isinstance(rate, str) else RateSpec(float(rate), float(rate))
    return _check_stages(_rate_stages(spec, duration_s, requests), "--rate")


def _warmup(warmup: int | str | None) -> Warmup:
    if warmup is None:
        return Warmup()
    if not isinstance(warmup, str):
        return Warmup(requests=_count(warmup, "--warmup", 0, MAX_REQUESTS) or 0)
    parsed = parse_warmup(warmup)
    _count(parsed.requests, "--warmup", 0, MAX_REQUESTS)
    if parsed.seconds:
        _seconds(parsed.seconds, "--warmup")
    return parsed


# ---------------------------------------------------------------------------------------------
# URLs and addresses


@dataclass(frozen=True)
class ParsedUrl:
    """An http:// URL split into what pounder needs."""

    text: str
    host: str
    port: int
    host_header: str
    request_target: str


def parse_url(text: str, where: str = "") -> ParsedUrl:
    """Check an http:// URL; ``where`` (e.g. ``"urls.txt:3: "``) prefixes messages."""
    text = text.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as error:
        raise UsageError(f"{where}invalid URL {text!r}: {error}") from None
    scheme = parts.scheme.lower()
    if scheme == "https":
        raise UsageError(f"{where}https is not supported yet: {text!r} (only http:// URLs)")
    if scheme != "http" or not parts.hostname:
        raise UsageError(f"{where}invalid URL {text!r}: expected http://HOST[:PORT]/PATH")
    if parts.username is not None or parts.password is not None:
        raise UsageError(f"{where}credentials in a URL are not supported: use -A/--auth user:password")
    if port == 0:
        raise UsageError(f"{where}invalid URL {text!r}: port 0")
    path = quote(parts.path or "/", safe=_URL_SAFE)
    query = quote(parts.query, safe=_URL_SAFE)
    return ParsedUrl(
        text=text,
        host=parts.hostname,
        port=port or 80,
        host_header=parts.netloc,
        request_target=f"{path}?{query}" if query else path,
    )


def resolve(host: str, port: int, *, allow_remote: bool) -> str:
    """Resolve ``host`` to the ``"ip:port"`` (``"[ip6]:port"``) pounder connects to, enforcing
    the loopback rule unless ``allow_remote``."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        reason = error.strerror if isinstance(error, socket.gaierror) else str(error)
        raise UsageError(f"cannot resolve host {host!r}: {reason}") from None
    addresses = [str(info[4][0]) for info in infos]
    chosen = next((address for address in addresses if ":" not in address), addresses[0])
    if not allow_remote and not ipaddress.ip_address(chosen.split("%")[0]).is_loopback:
        subject = host if host == chosen else f"{host} ({chosen})"
        raise UsageError(
            f"{subject} is not a loopback address (127.0.0.0/8 or ::1); pass --allow-remote to load another machine"
        )
    return f"[{chosen}]:{port}" if ":" in chosen else f"{chosen}:{port}"


def _check_unix_socket(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UsageError(f"--unix-socket: no such file: {path}") from None
    except OSError as error:
        raise UsageError(f"--unix-socket: cannot use {path}: {error.strerror}") from None
    if not stat.S_ISSOCK(mode):
        raise UsageError(f"--unix-socket: {path} is not a socket")
    return path


def check_output_path(path: str | Path | None, what: str) -> str | None:
    """An output file must be writable: checked before a long run, not after. ``"-"`` (stdout)
    is accepted as is. A file that did not exist is created to check and removed again."""
    if path is None or str(path) == "-":
        return None if path is None else str(path)
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{what}: {target} is a directory")
    if not target.parent.is_dir():
        raise UsageError(f"{what}: directory {target.parent} does not exist")
    existed = target.exists()
    try:
        with target.open("a"):
            pass
    except OSError as error:
        raise UsageError(f"{what}: cannot write {target}: {error.strerror}") from None
    if not existed:
        target.unlink(missing_ok=True)
    return str(target)


# ---------------------------------------------------------------------------------------------
# Requests


@dataclass(frozen=True)
class RequestTemplate:
    """Everything of a request except the target-specific request line and Host header."""

    method: str
    body: bytes
    keepalive: bool
    generated: tuple[tuple[str, str], ...]
    """Headers pounder adds after Host, User-Agent and Accept (Cookie, Authorization, Content-Type,
    Content-Length, Connection)."""
    user: tuple[tuple[str, str], ...]
    """-H headers: each replaces a generated header of the same name, the others are added."""

    def render(self, url: ParsedUrl) -> bytes:
        """The complete HTTP/1.1 request for ``url``."""
        generated = [("Host", url.host_header), ("User-Agent", f"pounder/{__version__}"), ("Accept", "*/*")]
        headers = _merge_headers(generated, self.user, list(self.generated))
        head = f"{self.method} {url.request_target} HTTP/1.1\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers) + "\r\n"
        return head.encode("utf-8") + self.body


def _merge_headers(
    first: list[tuple[str, str]], user: Sequence[tuple[str, str]], last: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """``first`` + the user headers that replace none + ``last``, where a user header replaces
    the generated header of the same name in place."""
    user_by_name: dict[str, list[tuple[str, str]]] = {}
    for name, value in user:
        user_by_name.setdefault(name.lower(), []).append((name, value))

    def replaced(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        merged: list[tuple[str, str]] = []
        for name, value in headers:
            merged.extend(user_by_name.pop(name.lower(), [(name, value)]))
        return merged

    head, tail = replaced(first), replaced(last)
    extra = [pair for pairs in user_by_name.values() for pair in pairs]
    return head + extra + tail


def _user_headers(headers: Sequence[str] | Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    pairs = (
        [parse_header(f"{name}: {value}") for name, value in headers.items()]
        if isinstance(headers, Mapping)
        else [parse_header(text) for text in headers]
    )
    if any(name.lower() == "connection" for name, _ in pairs):
        raise UsageError("-H Connection is not allowed: keep-alive is set with --no-keepalive")
    return tuple(pairs)


def build_request_template(
    *,
    method: str | None,
    body: str | bytes | None,
    content_type: str | None,
    headers: Sequence[str] | Mapping[str, str],
    cookies: Sequence[str],
    auth: str | None,
    keepalive: bool,
) -> RequestTemplate:
    """Validate the request options into a :class:`RequestTemplate`."""
    payload = load_body(body) if body is not None else b""
    verb = check_token((method or ("POST" if body is not None else "GET")).upper(), "-m/--method")
    if verb == "HEAD" and payload:
        raise UsageError("a HEAD request cannot have a body")
    generated: list[tuple[str, str]] = []
    if cookies:
        generated.append(("Cookie", "; ".join(parse_cookie(cookie) for cookie in cookies)))
    if auth is not None:
        generated.append(("Authorization", basic_auth(auth)))
    if content_type is not None:
        generated.append(parse_header(f"Content-Type: {content_type}", "-T/--content-type"))
    if payload or verb in BODY_METHODS:
        generated.append(("Content-Length", str(len(payload))))
    if not keepalive:
        generated.append(("Connection", "close"))
    return RequestTemplate(verb, payload, keepalive, tuple(generated), _user_headers(headers))


def _recorded_headers(template: RequestTemplate) -> tuple[tuple[str, str], ...]:
    """The headers the user asked for, credentials redacted, for the result's options."""
    asked = [pair for pair in template.generated if pair[0] not in ("Content-Length", "Connection")]
    asked += template.user
    return tuple((name, "<redacted>" if name.lower() in REDACTED_HEADERS else value) for name, value in asked)


# ---------------------------------------------------------------------------------------------
# The spec


@dataclass(frozen=True)
class Target:
    """One target as the engine gets it."""

    url: str
    weight: int
    tcp: str | None
    unix: str | None
    request: bytes
    head: bool

    def engine_dict(self) -> EngineTarget:
        return {"tcp": self.tcp, "unix": self.unix, "request": self.request, "head": self.head, "weight": self.weight}

    def info(self) -> TargetInfo:
        return TargetInfo(url=self.url, weight=self.weight, connect=self.tcp or f"unix:{self.unix}")


def _url_lines(url: str | None, url_file: str | Path | None) -> tuple[UrlLine, ...]:
    if url is not None and url_file is not None:
        raise UsageError("give either a URL or -f/--url-file, not both")
    if url_file is not None:
        return read_url_file(url_file)
    if url is None or not url.strip():
        raise UsageError("no URL given: pass a URL or -f/--url-file FILE")
    return (UrlLine(url, 1, ""),)


def build_targets(
    lines: Iterable[UrlLine], template: RequestTemplate, *, unix_socket: str | None, allow_remote: bool
) -> tuple[Target, ...]:
    """Check, resolve and pre-serialize every URL (each host:port is resolved once)."""
    socket_path = _check_unix_socket(unix_socket) if unix_socket is not None else None
    resolved: dict[tuple[str, int], str] = {}
    targets = []
    for line in lines:
        where = f"{line.where}: " if line.where else ""
        if line.weight > MAX_WEIGHT:
            raise UsageError(f"{where}weight {line.weight} is more than {MAX_WEIGHT:,}")
        url = parse_url(line.url, where)
        address = None
        if socket_path is None:
            key = (url.host, url.port)
            if key not in resolved:
                resolved[key] = resolve(url.host, url.port, allow_remote=allow_remote)
            address = resolved[key]
        targets.append(
            Target(
                url=url.text,
                weight=line.weight,
                tcp=address,
                unix=socket_path,
                request=template.render(url),
                head=template.method == "HEAD",
            )
        )
    return tuple(targets)


@dataclass(frozen=True)
class BenchSpec:
    """Validated bench options, ready to hand to the engine. Build with :meth:`from_options`."""

    targets: tuple[Target, ...]
    order: Literal["sequential", "random"]
    load: LoadModel
    http: HttpOptions
    tsv_path: str | None = None
    hdr_log_path: str | None = None

    @classmethod
    def from_options(
        cls,
        url: str | None = None,
        *,
        url_file: str | Path | None = None,
        order: str = "sequential",
        connections: int | str | None = None,
        requests: int | str | None = None,
        duration: Number | None = None,
        threads: int | str | None = None,
        rate: float | int | str | None = None,
        stages: str | Sequence[Stage] | None = None,
        max_in_flight: int | str | None = None,
        keepalive: bool = True,
        calls_per_conn: int | str | None = None,
        warmup: int | str | None = None,
        throttle: int | str | None = None,
        unix_socket: str | None = None,
        method: str | None = None,
        body: str | bytes | None = None,
        content_type: str | None = None,
        headers: Sequence[str] | Mapping[str, str] = (),
        cookies: Sequence[str] = (),
        auth: str | None = None,
        timeout: Number | None = None,
        allow_remote: bool = False,
        tsv_path: str | Path | None = None,
        hdr_log_path: str | Path | None = None,
    ) -> BenchSpec:
        """Validate options as a user gives them (strings with units such as ``"10k"``, ``"30s"``
        or plain numbers); raises :class:`~pounder.UsageError` with one line on bad input."""
        if order not in ("sequential", "random"):
            raise UsageError(f"--order must be 'sequential' or 'random', got {order!r}")
        if calls_per_conn is not None and not keepalive:
            raise UsageError("--calls-per-conn needs keep-alive: it cannot be combined with --no-keepalive")
        lines = _url_lines(url, url_file)
        load = build_load_model(
            connections=connections,
            requests=requests,
            duration=duration,
            threads=threads,
            rate=rate,
            stages=stages,
            max_in_flight=max_in_flight,
            warmup=warmup,
        )
        template = build_request_template(
            method=method,
            body=body,
            content_type=content_type,
            headers=headers,
            cookies=cookies,
            auth=auth,
            keepalive=keepalive,
        )
        http = HttpOptions(
            method=template.method,
            keepalive=keepalive,
            calls_per_conn=_count(calls_per_conn, "--calls-per-conn", 0, MAX_CALLS_PER_CONN) or 0,
            timeout_s=_seconds(timeout, "--timeout") or DEFAULT_TIMEOUT_S,
            throttle_bps=_throttle(throttle),
            body_bytes=len(template.body),
            headers=_recorded_headers(template),
        )
        tsv = check_output_path(tsv_path, "--tsv")
        hdr_log = check_output_path(hdr_log_path, "--hdr-log")
        if "-" in (tsv, hdr_log):
            raise UsageError("--tsv and --hdr-log need a file, not '-'")
        return cls(
            targets=build_targets(lines, template, unix_socket=unix_socket, allow_remote=allow_remote),
            order="random" if order == "random" else "sequential",
            load=load,
            http=http,
            tsv_path=tsv,
            hdr_log_path=hdr_log,
        )

    def run_options(self) -> RunOptions:
        """The options as recorded in the result."""
        return RunOptions(
            targets=tuple(target.info() for target in self.targets),
            order=self.order,
            load=self.load,
            http=self.http,
        )

    def engine_spec(self) -> EngineSpec:
        """The dict ``pounder._engine.start`` takes (docs/engine-contract.md)."""
        load, http = self.load, self.http
        return {
            "targets": [target.engine_dict() for target in self.targets],
            "order": self.order,
            "connections": load.connections,
            "threads": load.threads,
            "requests": load.requests,
            "duration_s": load.duration_s,
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
        }


def _throttle(value: int | str | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"--throttle must be a bandwidth, got {value!r}")
    bytes_per_s = parse_bandwidth(value) if isinstance(value, str) else value
    if not 1 <= bytes_per_s <= MAX_THROTTLE_BPS:
        raise UsageError(f"--throttle must be between 1 byte/s and 10 GB/s, got {bytes_per_s:,} bytes/s")
    return bytes_per_s
