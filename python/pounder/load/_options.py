"""The load options, declared once (:class:`LoadOptions`): what ``bench``, ``compare`` and
``trace_syscalls`` pass down to :meth:`~pounder.BenchSpec.from_options`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pounder._errors import UsageError, check_flag, check_path, check_text, check_type, public, wrong_type
from pounder._flags import flag
from pounder.load._model import Number, build_load_model
from pounder.load._tls import check_tls_types
from pounder.results import LoadModel, Stage

IO_PATHS = ("auto", "uring", "epoll")
"""The values of ``--io`` (:attr:`LoadOptions.io`)."""


@public
@dataclass(frozen=True)
class LoadOptions:
    """How to load a target, as a user gives it: numbers or text with units (``requests="10k"``,
    ``duration="2m"``, ``rate="50..500/60s"``, ``throttle="56kbit"``); ``None`` is the default.
    Checked when a :class:`~pounder.BenchSpec` is built from them, not here.

    ``headers`` are ``"Name: value"`` strings or a mapping (one ``"Name: value"`` string is one
    header); ``cookies`` are ``"name=value"`` strings (one string is one cookie); ``body`` is
    text, ``"@file"`` or bytes.
    Defaults: closed loop with 10 connections for 10 s, 30 s timeout, keep-alive on; targets on
    this machine only unless ``allow_remote``."""

    connections: int | str | None = field(default=None, metadata=flag("-c", "--connections", metavar="N", help=(
        "Closed loop: concurrent connections, default 10. Open loop: the cap on requests in flight, default 1000.")))
    requests: int | str | None = field(default=None, metadata=flag("-n", "--requests", metavar="N", help=(
        "Stop after N measured requests (10k, 1M).")))
    duration: Number | None = field(default=None, metadata=flag("-d", "--duration", metavar="TIME", help=(
        "Measure for this long: 30s, 2m, 1h, 500ms (a bare number is seconds). With -n too, the first limit "
        "reached ends the run.")))
    threads: int | str | None = field(default=None, metadata=flag("-t", "--threads", metavar="N", help=(
        "Engine threads; default: the CPUs available. Silently lowered to the number of connections.")))
    rate: float | int | str | None = field(default=None, metadata=flag("--rate", metavar="RATE", help=(
        "Open loop at a global rate in req/s: 500, a ramp over the run 50..500, or a ramp 50..500/60s (then held "
        "at 500 if -d is longer); latency is measured from each request's intended send time.")))
    stages: str | Sequence[Stage] | None = field(default=None, metadata=flag("--stages", metavar="STAGES", help=(
        "Open loop in stages: 30s@100,60s@400,30s@100 (constant) or 60s@100..400 (ramp). Excludes --rate, -n, -d.")))
    max_in_flight: int | str | None = field(default=None, metadata=flag("--max-in-flight", metavar="N", help=(
        "Open loop only: the cap on requests in flight (same as -c in open loop), default 1000. A request whose "
        "time comes while the cap is reached is counted as unsent.")))
    keepalive: bool = field(default=True, metadata=flag("--keepalive/--no-keepalive", help=(
        "Keep connections open between requests (--keepalive) or open a new one for every request (--no-keepalive, "
        "sends Connection: close).")))
    calls_per_conn: int | str | None = field(default=None, metadata=flag("--calls-per-conn", metavar="N", help=(
        "Close each connection after N responses (0 = never, the default).")))
    throttle: int | str | None = field(default=None, metadata=flag("--throttle", metavar="BANDWIDTH", help=(
        "Read responses slowly, per connection: 33.6kbps, 1Mbps, 56kbit (bits, k = 1000), 4KB/s (bytes), 1MiB/s (k "
        "= 1024); a bare number is bytes/s.")))
    method: str | None = field(default=None, metadata=flag("-m", "--method", metavar="METHOD", help=(
        "HTTP method; default GET, or POST when there is a body.")))
    body: str | bytes | None = field(default=None, metadata=flag("-b", "--body", metavar="TEXT|@FILE", help=(
        "Request body: the text itself, or @FILE for a file's bytes.")))
    content_type: str | None = field(default=None, metadata=flag("-T", "--content-type", metavar="TYPE", help=(
        "Content-Type header.")))
    headers: str | Sequence[str] | Mapping[str, str] = field(default=(), metadata=flag(
        "-H", "--header", metavar="'NAME: VALUE'", repeatable=True, help=(
            "Add a header, or replace one pounder sends by default (Host, User-Agent, Accept). Repeatable. "
            "Content-Length, Transfer-Encoding and Connection are pounder's own (from -b and --no-keepalive) and "
            "refused; -H Content-Type, Authorization or Cookie replaces what -T, -A or --cookie sets.")))
    cookies: str | Sequence[str] = field(default=(), metadata=flag(
        "--cookie", metavar="NAME=VALUE", repeatable=True, help=(
            "Send a cookie. Repeatable.")))
    auth: str | None = field(default=None, metadata=flag("-A", "--auth", metavar="USER:PASS", help=(
        "Basic authentication.")))
    timeout: Number | None = field(default=None, metadata=flag("--timeout", metavar="TIME", help=(
        "Per-request timeout, connect included (like ab). Default 30s.")))
    allow_remote: bool = field(default=False, metadata=flag("--allow-remote", help=(
        "Allow targets that are not loopback addresses (127.0.0.0/8, ::1).")))
    insecure: bool = field(default=False, metadata=flag("--insecure", help=(
        "https://: accept any server certificate (a self-signed one); the handshake is still made in full, and "
        "what the engine (rustls) cannot use is still refused: an RSA key under 2048 bits.")))
    """https://: accept any server certificate (the handshake is still checked)."""
    cacert: str | Path | None = field(default=None, metadata=flag("--cacert", metavar="FILE", help=(
        "https://: trust the CA certificates of this PEM file instead of the system's; a self-signed server "
        "certificate given here is trusted as it is. Before the load, pounder makes one TLS handshake (no request) "
        "to each https:// address to check its certificate, and closes it cleanly (close_notify): a connection "
        "that asked nothing, which servers do not log as a request (nginx logs a 400 line only when the port "
        "speaks plain HTTP).")))
    """https://: a PEM file of the CA certificates to trust instead of the system's."""
    cert: str | Path | None = field(default=None, metadata=flag("--cert", metavar="FILE", help=(
        "https://: send this PEM client certificate (with --key).")))
    """https://: a PEM client certificate (with ``key``)."""
    key: str | Path | None = field(default=None, metadata=flag("--key", metavar="FILE", help=(
        "https://: the client certificate's PEM private key (not encrypted).")))
    """https://: the client certificate's PEM private key (not encrypted)."""
    tls_resume: bool = field(default=True, metadata=flag("--tls-resume/--no-tls-resume", help=(
        "https://: resume TLS sessions on new connections (default), or make every handshake a full one "
        "(--no-tls-resume), which is what a server pays for new visitors.")))
    """https://: resume TLS sessions (False: every handshake is a full one)."""
    scenario: str | Path | None = field(default=None, metadata=flag("--scenario", metavar="FILE", help=(
        "Virtual users with sessions, from a TOML scenario file (docs/scenarios.md): each connection is a user "
        "that runs the [[login]] steps once (capturing CSRF tokens, cookies in its own jar), then the "
        "[[loop]] steps round and round; every step is a request (-n counts them) with its own percentiles. "
        "The URL is then the server's base, http://HOST:PORT or https://HOST:PORT. In open loop think times are "
        "not slept.")))
    """A scenario file (docs/scenarios.md): virtual users with sessions instead of one request."""
    replay: str | Path | None = field(default=None, metadata=flag("--replay", metavar="FILE", help=(
        "Send the requests of this access log (common or combined, gzip or not) or HAR file at their recorded "
        "times, scaled by --speed: open loop, latency from each request's time, -c the cap on requests in flight. "
        "Sub-second times are used when the log has them ([10/Oct/2000:13:55:36.123 +0000], a HAR's "
        "startedDateTime); a log of whole seconds has each second's requests spread evenly over it (the report "
        "says so). A HAR's requests keep their headers and bodies; only those to its most frequent origin are sent "
        "(the others are counted as skipped). The URL is the server's base, http://HOST:PORT or https://HOST:PORT. "
        "-n or -d cut it short. Excludes --rate, --stages, --warmup, --order, -f, --access-log, --scenario, -m, "
        "-b, -T.")))
    """An access log or HAR file whose requests are sent at their recorded times (open loop)."""
    speed: str | float | None = field(default=None, metadata=flag("--speed", metavar="FACTOR", help=(
        "With --replay: how much faster than recorded, e.g. 10x, 0.5x or 2; default 1x.")))
    """With ``replay``: how much faster the log is replayed (``"10x"``, ``"0.5x"``, ``2``); default 1x."""
    expect_status: str | int | Sequence[int | str] | None = field(default=None, metadata=flag(
        "--expect-status", metavar="STATUSES", help=(
            "The answers expected when they are not 2xx or 3xx: 404, 400-499, 4xx, or a comma list (404,410). A "
            "run with no answer of a success status (2xx or 3xx, or these) got nowhere: it says so in one line and "
            "exits 1, after writing its results.")))
    """The statuses that count as answers instead of 2xx and 3xx (``"404"``, ``"400-499"``,
    ``"4xx"``, ``"404,500-599"``): a run none of whose answers has one got nowhere
    (:func:`~pounder.results.load_failure`)."""
    io: Literal["auto", "uring", "epoll"] = field(default="auto", metadata=flag(
        "--io", metavar="auto|uring|epoll", help=(
            "The engine's I/O path: auto (the default: io_uring when this kernel allows it, else epoll; HTTPS, "
            "--scenario, --throttle and the load of pounder syscalls run on epoll), uring (io_uring, or an error "
            "saying why not, before anything is sent) or epoll. The report and the JSON say which was taken and "
            "why.")))
    """The engine's I/O path: ``"auto"`` (io_uring when this kernel allows it and the run needs nothing
    only epoll does: HTTPS, a scenario, a throttle), ``"uring"`` (io_uring, or a
    :class:`~pounder.UsageError` saying why not) or ``"epoll"``."""

    def input_files(self) -> list[tuple[str, str]]:
        """The files these options read (``body="@FILE"``), as ``(option, path)``: no output of
        the run may overwrite them."""
        files = [("--scenario", str(self.scenario))] if self.scenario is not None else []
        if self.replay is not None:
            files.append(("--replay", str(self.replay)))
        if isinstance(self.body, str) and self.body.startswith("@"):
            files.append(("--body", self.body[1:]))
        files += [(flag, str(path)) for flag, path in (("--cacert", self.cacert), ("--cert", self.cert),
                                                       ("--key", self.key)) if path is not None]
        return files

    @classmethod
    def of(cls, options: LoadOptions | None = None, /, **changes: Any) -> LoadOptions:
        """``options`` (default: every default) with ``changes``, keyword arguments named as the
        fields: how the functions that take ``options=`` or the fields as keywords read both."""
        if options is not None and not isinstance(options, LoadOptions):
            raise wrong_type("options", "a LoadOptions or None", options)
        names = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise UsageError(f"unknown load option {unknown[0]!r} (the load options are: {', '.join(names)})")
        base = cls() if options is None else options
        return dataclasses.replace(base, **changes) if changes else base

    def check_types(self) -> None:
        """:class:`~pounder.UsageError` for a field of a type no parser reads (the numbers and
        the request's text are checked by their parsers)."""
        check_flag(self.keepalive, "keepalive")
        check_flag(self.allow_remote, "allow_remote")
        for name in ("method", "content_type", "auth"):
            check_text(getattr(self, name), name, optional=True)
        check_type(self.body, (str, bytes), "body", "text, '@file' or bytes", optional=True)
        check_path(self.scenario, "scenario", optional=True)
        check_path(self.replay, "replay", optional=True)
        if self.io not in IO_PATHS:
            raise UsageError(f"--io must be auto, uring or epoll, got {self.io!r}")
        check_tls_types(self)

    def load_model(self, names: Mapping[str, str] | None = None) -> LoadModel:
        """The load these options describe (connections, length, rate), checked as
        :meth:`~pounder.BenchSpec.from_options` checks it: :class:`~pounder.UsageError` with one
        line. ``names``: what the messages call ``connections``, ``requests``, ``duration`` and
        ``rate`` when the user wrote them otherwise than as bench's flags (e.g. the keys of an
        experiment file)."""
        return build_load_model(
            connections=self.connections, requests=self.requests, duration=self.duration, threads=self.threads,
            rate=self.rate, stages=self.stages, max_in_flight=self.max_in_flight, names=names,
        )  # fmt: skip
