"""Any pre-forking server started from a command template, as a pool under test."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pounder._errors import (
    UsageError,
    check_str_mapping,
    check_text,
    public,
)
from pounder.pool._adapter import Adapter, AdapterOptions, PoolParams, _env_prefix, server_names
from pounder.servers import (
    HOST,
    ManagedServer,
    command_missing,
)


@public
class CommandAdapter(Adapter):
    """Any pre-forking server started by a command with ``{port}``, ``{workers}`` and
    ``{max_requests}`` placeholders (see :class:`~pounder.servers.CommandServer`)."""

    kind = "command"
    who = "the command server"
    target_form = "'CMD'"
    target_field = "command"
    options = frozenset({"env", "stop_signal"})
    names: ClassVar[Mapping[str, str]] = server_names(max_clients="{workers}", max_requests="{max_requests}")

    @classmethod
    def from_options(cls, target: str | os.PathLike[str] | None, options: AdapterOptions) -> CommandAdapter:
        return cls(str(cls.given_target(target)), env=options.env, stop_signal=options.stop_signal)

    def __init__(self, command: str, *, env: Mapping[str, str] | None = None, stop_signal: str = "TERM") -> None:
        from pounder.servers import render_command

        check_text(command, "command: command")
        check_text(stop_signal, "command: stop_signal")
        render_command(command, port=1, workers=1, max_requests=0, host=HOST, workdir="/", pidfile="/p",
                       error_log="/e")  # checks the placeholders now: a bad template is a usage error
        try:
            self.stop_signal = signal.Signals[f"SIG{stop_signal.upper().removeprefix('SIG')}"]
        except KeyError:
            raise UsageError(f"command: unknown stop signal {stop_signal!r} (e.g. TERM, QUIT, INT)") from None
        self.command = command
        self.env = check_str_mapping(env, "command: env")

    def _server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
                keepalive: bool = False, host: str = HOST) -> ManagedServer:
        from pounder.servers import CommandServer

        return CommandServer(workdir, self.command, workers=params.max_clients, max_requests=params.max_requests,
                             env=self.env, stop_signal=self.stop_signal, cpus=cpus, host=host)

    def _render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        values = {"workers": params.max_clients, "max_requests": params.max_requests}

        def fill(match: re.Match[str]) -> str:
            return format(values[match[1]], match[2] or "")

        return _env_prefix(self.env) + re.sub(r"(?<!\{)\{(workers|max_requests)(?::([^{}]*))?\}", fill, self.command)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "command": self.command, "env": self.env, "stop_signal": self.stop_signal.name}

    def describe(self) -> str:
        return f"command: {self.command}"

    def check(self) -> None:
        missing = command_missing(self.command, self.env)
        if missing is not None:
            raise UsageError(f"command: {missing}")
