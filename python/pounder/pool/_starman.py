"""Starman (a PSGI app) as a pool under test."""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pounder._errors import (
    UsageError,
    check_flag,
    check_path,
    check_str_mapping,
    check_strings,
    public,
)
from pounder.pool._adapter import Adapter, AdapterOptions, PoolParams, _env_prefix, server_names
from pounder.servers import (
    HOST,
    ManagedServer,
    StarmanServer,
    starman_missing,
)


@public
class StarmanAdapter(Adapter):
    """Starman serving the PSGI file ``psgi``."""

    kind = "starman"
    who = "starman"
    target_form = "APP.PSGI"
    target_field = "psgi"
    target_file = True
    options = frozenset({"preload", "env"})
    preload_toggle = True
    language = "perl"
    nytprof = True
    preload_remedy = "start Starman with --preload-app"
    respawn = ("Starman (Net::Server::PreFork) checks its children periodically and forks replacements: a fork "
               "plus loading the application (unless --preload-app) and the new child's warm-up")
    names: ClassVar[Mapping[str, str]] = server_names(
        max_clients="--workers", max_requests="--max-requests", preload="--preload-app")
    max_requests_counts = "connections"

    @classmethod
    def from_options(cls, target: str | os.PathLike[str] | None, options: AdapterOptions) -> StarmanAdapter:
        return cls(cls.given_target(target), env=options.env, extra_args=options.extra_args, **options.preloading)

    def __init__(self, psgi: str | os.PathLike[str], *, preload: bool = False,
                 env: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = ()) -> None:
        self.psgi = Path(check_path(psgi, "starman: psgi")).resolve()
        if not self.psgi.is_file():
            raise UsageError(f"starman: no such PSGI file {psgi}")
        self.preload = check_flag(preload, "starman: preload")
        self.env = check_str_mapping(env, "starman: env")
        self.extra_args = check_strings(extra_args, "starman: extra_args")

    def _server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
                keepalive: bool = False, host: str = HOST) -> ManagedServer:
        return StarmanServer(workdir, self.psgi, workers=params.max_clients, max_requests=params.max_requests,
                             preload_app=self.with_preload(params), keepalive=keepalive, env=self.env,
                             extra_args=self.extra_args, cpus=cpus, host=host, profile_dir=self.profile_dir)

    def _render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        limit = params.max_requests or 1_000_000_000
        note = "  # Starman reads 0 as its default, 1000" if not params.max_requests else ""
        flags = f"--workers {params.max_clients} --max-requests {limit}"
        if self.with_preload(params):
            flags += " --preload-app"
        tail = " ".join(shlex.quote(word) for word in (*self.extra_args, str(self.psgi)))
        return f"{_env_prefix(self.env)}starman {flags} {tail}{note}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "psgi": str(self.psgi), "preload": self.preload, "env": self.env,
                "extra_args": list(self.extra_args)}

    def describe(self) -> str:
        return f"Starman serving {self.psgi}{' with --preload-app' if self.preload else ''}"

    def check(self) -> None:
        if not self.psgi.is_file():
            raise UsageError(f"starman: no such PSGI file {self.psgi}")
        missing = starman_missing()
        if missing is not None:
            raise UsageError(f"starman: {missing}")

    def input_files(self) -> list[tuple[str, str]]:
        return [("PSGI file", str(self.psgi))]
