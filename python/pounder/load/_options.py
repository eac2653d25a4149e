"""The load options, declared once (:class:`LoadOptions`): what ``bench``, ``compare`` and
``trace_syscalls`` pass down to :meth:`~pounder.BenchSpec.from_options`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pounder.load._model import Number
from pounder.load._parse import Stage


@dataclass(frozen=True)
class LoadOptions:
    """How to load a target, as a user gives it: numbers or text with units (``requests="10k"``,
    ``duration="2m"``, ``rate="50..500/60s"``, ``throttle="56kbit"``); ``None`` is the default.
    Checked when a :class:`~pounder.BenchSpec` is built from them, not here.

    ``headers`` are ``"Name: value"`` strings or a mapping; ``body`` is text, ``"@file"`` or bytes.
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
    headers: Sequence[str] | Mapping[str, str] = ()
    cookies: Sequence[str] = ()
    auth: str | None = None
    timeout: Number | None = None
    allow_remote: bool = False

    def input_files(self) -> list[tuple[str, str]]:
        """The files these options read (``body="@FILE"``), as ``(option, path)``: no output of
        the run may overwrite them."""
        if isinstance(self.body, str) and self.body.startswith("@"):
            return [("--body", self.body[1:])]
        return []

    @classmethod
    def of(cls, options: LoadOptions | None = None, /, **changes: Any) -> LoadOptions:
        """``options`` (default: every default) with ``changes``, keyword arguments named as the
        fields: how the functions that take ``options=`` or the fields as keywords read both."""
        base = cls() if options is None else options
        return dataclasses.replace(base, **changes) if changes else base
