"""The load options, declared once (:class:`LoadOptions`): what ``bench``, ``compare`` and
``trace_syscalls`` pass down to :meth:`~pounder.BenchSpec.from_options`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pounder._errors import UsageError, check_flag, check_path, check_text, check_type, public, wrong_type
from pounder.load._model import Number, build_load_model
from pounder.load._parse import Stage
from pounder.load._run_options import LoadModel
from pounder.load._tls import check_tls_types

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

    connections: int | str | None = None
    requests: int | str | None = None
    duration: Number | None = None
    threads: int | str | None = None
    rate: float | int | str | None = None
    stages: str | Sequence[Stage] | None = None
    max_in_flight: int | str | None = None
    keepalive: bool = True
    calls_per_conn: int | str | None = None
    throttle: int | str | None = None
    method: str | None = None
    body: str | bytes | None = None
    content_type: str | None = None
    headers: str | Sequence[str] | Mapping[str, str] = ()
    cookies: str | Sequence[str] = ()
    auth: str | None = None
    timeout: Number | None = None
    allow_remote: bool = False
    insecure: bool = False
    """https://: accept any server certificate (the handshake is still checked)."""
    cacert: str | Path | None = None
    """https://: a PEM file of the CA certificates to trust instead of the system's."""
    cert: str | Path | None = None
    """https://: a PEM client certificate (with ``key``)."""
    key: str | Path | None = None
    """https://: the client certificate's PEM private key (not encrypted)."""
    tls_resume: bool = True
    """https://: resume TLS sessions (False: every handshake is a full one)."""
    scenario: str | Path | None = None
    """A scenario file (docs/scenarios.md): virtual users with sessions instead of one request."""
    replay: str | Path | None = None
    """An access log or HAR file whose requests are sent at their recorded times (open loop)."""
    speed: str | float | None = None
    """With ``replay``: how much faster the log is replayed (``"10x"``, ``"0.5x"``, ``2``); default 1x."""
    expect_status: str | int | Sequence[int | str] | None = None
    """The statuses that count as answers instead of 2xx and 3xx (``"404"``, ``"400-499"``,
    ``"4xx"``, ``"404,500-599"``): a run none of whose answers has one got nowhere
    (:func:`~pounder.load.load_failure`)."""
    io: Literal["auto", "uring", "epoll"] = "auto"
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
