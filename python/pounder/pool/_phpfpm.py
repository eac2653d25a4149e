"""php-fpm (the user's pool file, behind an nginx front) as a pool under test."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pounder._errors import (
    UsageError,
    check_path,
    check_str_mapping,
    public,
)
from pounder._given import given
from pounder.pool._adapter import Adapter, AdapterOptions, PoolParams, server_names
from pounder.servers import (
    HOST,
    PHP_FPM_STATUS,
    ManagedServer,
    PhpFpmServer,
    check_pool_conf,
    parse_pool_conf,
    phpfpm_missing,
    read_pool_conf,
)


def fpm_spares(params: PoolParams) -> tuple[int, int, int] | None:
    """(pm.start_servers, pm.min_spare_servers, pm.max_spare_servers) of ``params`` as php-fpm
    takes them (None: a fixed pool, ``pm = static``): both spare bounds capped by
    pm.max_children, start_servers between them (php-fpm refuses anything else; Apache raises
    MaxSpareServers itself, so the pool settings may ask for one above the children)."""
    if (params.start_servers, params.min_spare, params.max_spare) == (None, None, None):
        return None
    start, low, high = params.fixed()
    low = max(1, min(low, params.max_clients))
    high = max(low, min(high, params.max_clients))
    return max(low, min(start, high)), low, high


def measured_as(params: PoolParams) -> tuple[int, int, int]:
    """(pm.start_servers, pm.min_spare_servers, pm.max_spare_servers) pounder runs ``params`` with:
    a fixed pool (``pm = static`` recommended) as ``pm = dynamic`` with every child started and kept
    (start = max spare = max_children: never more idle than that, so none is stopped; never fewer
    children than that, so none is started) and min spare 1, so that php-fpm counts "max children
    reached" (never counted with static) exactly when it finds no child idle (with min spare =
    max_children it would count it whenever one child is busy)."""
    return fpm_spares(params) or (params.max_clients, 1, params.max_clients)


FIXED_NOTE = ("; pounder measured it as pm = dynamic, pm.start_servers = pm.max_spare_servers = {n}, "
              "pm.min_spare_servers = 1:\n; every child started and kept, as static, and php-fpm counting "
              "'max children reached'")
"""The comment under a fixed pool's ``pm = static`` saying how pounder ran it."""


@public
class PhpFpmAdapter(Adapter):
    """php-fpm running the user's pool file ``conf`` (with the settings pounder owns replaced),
    the PHP scripts under ``root`` served through an nginx front."""

    kind = "php-fpm"
    who = "php-fpm"
    target_form = "POOL.CONF"
    target_field = "conf"
    status_reader = PHP_FPM_STATUS
    target_file = True
    options = frozenset({"root", "env"})
    instead: ClassVar[Mapping[str, str]] = {"preload": "php-fpm preloads with opcache.preload in its pool file"}
    language = "php"
    preload_remedy = "opcache.preload in php.ini (PHP 7.4+): the scripts compiled once, in the master"
    respawn = "each respawn is a fork of the master (OPcache's shared memory keeps the scripts compiled)"
    on_demand = True
    preload_toggle = False
    comment = ";"
    names: ClassVar[Mapping[str, str]] = server_names(
        max_clients="pm.max_children", max_requests="pm.max_requests", start_servers="pm.start_servers",
        min_spare="pm.min_spare_servers", max_spare="pm.max_spare_servers", preload="opcache.preload")

    @classmethod
    def from_options(cls, target: str | os.PathLike[str] | None, options: AdapterOptions) -> PhpFpmAdapter:
        return cls(cls.given_target(target), root=options.root, env=options.env)

    def __init__(self, conf: str | os.PathLike[str], *, root: str | os.PathLike[str] | None,
                 env: Mapping[str, str] | None = None) -> None:
        self.conf = Path(check_path(conf, "php-fpm: conf")).resolve()
        if root is None:
            raise UsageError(f"php-fpm: no document root given ({given('root', '--root', 'DIR')}: where the PHP "
                             "scripts are)")
        self.root = Path(check_path(root, "php-fpm: root")).resolve()
        self.env = check_str_mapping(env, "php-fpm: env")
        if not self.conf.is_file():
            raise UsageError(f"php-fpm: no such pool file {conf}")
        pool = parse_pool_conf(read_pool_conf(self.conf), source=str(self.conf))  # bad input, before anything
        self.pool = pool.name

    def _server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
                keepalive: bool = False, host: str = HOST) -> ManagedServer:
        start, low, high = measured_as(params)
        return PhpFpmServer(workdir, self.conf, root=self.root, max_children=params.max_clients,
                            start_servers=start, min_spare=low, max_spare=high, max_requests=params.max_requests,
                            env=self.env, keepalive=keepalive, cpus=cpus, host=host)

    def spares(self, params: PoolParams) -> tuple[int, int, int]:
        return fpm_spares(params) or params.fixed()

    def _render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        spares = fpm_spares(params)
        rows = [("pm", "static" if spares is None else "dynamic"), ("pm.max_children", str(params.max_clients))]
        if spares is not None:
            rows += [("pm.start_servers", str(spares[0])), ("pm.min_spare_servers", str(spares[1])),
                     ("pm.max_spare_servers", str(spares[2]))]
        rows.append(("pm.max_requests", str(params.max_requests)))
        note = "  ; 0: never replaced" if not params.max_requests else ""
        lines = [f"; in {self.conf}, pool [{self.pool}]:"]
        lines += [f"{name} = {value}" for name, value in rows]
        lines[-1] += note
        if spares is None:
            lines.append(FIXED_NOTE.format(n=params.max_clients))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "conf": str(self.conf), "root": str(self.root), "env": self.env}

    def describe(self) -> str:
        return f"php-fpm pool [{self.pool}] of {self.conf} serving {self.root}"

    def check(self) -> None:
        missing = phpfpm_missing()
        if missing is not None:
            raise UsageError(f"php-fpm: {missing}")
        if not self.conf.is_file():
            raise UsageError(f"php-fpm: no such pool file {self.conf}")
        if not self.root.is_dir():
            raise UsageError(f"php-fpm: the document root {self.root} is not a directory")
        check_pool_conf(self.conf)

    def input_files(self) -> list[tuple[str, str]]:
        return [("pool file", str(self.conf))]
