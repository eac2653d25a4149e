"""Apache httpd prefork (+ mod_perl) as a pool under test."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pounder._errors import (
    UsageError,
    check_path,
    check_str_mapping,
    check_text,
    public,
)
from pounder._units import KIB, children_text, count_text, mib_unit
from pounder.pool._adapter import Adapter, AdapterOptions, ChildLimit, PoolParams, server_names
from pounder.servers import (
    HOST,
    ApacheServer,
    ManagedServer,
    apache_missing,
    apache_notes,
    debian_layout,
    read_user_conf,
)

SIZE_CHECK_OVERSHOOT = 0.02
"""Apache2::SizeLimit's check interval: a child may grow past its limit between two checks by at
most this fraction of the limit, at the measured growth per request."""


@public
class ApacheAdapter(Adapter):
    """Apache httpd prefork (+ mod_perl): the user's configuration file ``conf`` (Debian's
    apache2.conf with what it includes too) with the directives pounder owns replaced, or (from
    Python) handlers given directly. With Debian's layout the recommendation is the block of its
    ``mods-available/mpm_prefork.conf`` (and the a2dismod/a2enmod that switch a threaded MPM off)."""

    kind = "apache"
    who = "apache"
    target_form = "HTTPD.CONF"
    target_field = "conf"
    target_file = True
    instead: ClassVar[Mapping[str, str]] = {
        "preload": "Apache preloads with PerlRequire in its conf", "env": "use SetEnv / PerlSetEnv in the conf"}
    on_demand = True
    language = "perl"
    nytprof = True
    preload_remedy = "PerlRequire a startup file that loads the application (PerlModule)"
    respawn = ("Apache's parent replaces exiting children in its once-a-second maintenance and spawns at most 1, "
               "2, 4 ... 32 per second: each respawn is a fork and a new child's warm-up, and the pool runs a "
               "child short until the next maintenance pass")
    names: ClassVar[Mapping[str, str]] = server_names(
        max_clients="MaxRequestWorkers", max_requests="MaxConnectionsPerChild", start_servers="StartServers",
        min_spare="MinSpareServers", max_spare="MaxSpareServers", preload="PerlRequire startup.pl")
    max_requests_counts = "connections"

    @classmethod
    def from_options(cls, target: str | os.PathLike[str] | None, options: AdapterOptions) -> ApacheAdapter:
        return cls(target, perl_handlers=options.perl_handlers, startup_pl=options.startup_pl,
                   perl_lib=options.perl_lib, extra_conf=options.extra_conf)

    @classmethod
    def stored_target(cls, data: Mapping[str, Any]) -> str | None:
        """None: handlers given directly (from Python)."""
        return data.get("conf")

    def __init__(self, conf: str | os.PathLike[str] | None = None, *, perl_handlers: Mapping[str, str] | None = None,
                 startup_pl: str | os.PathLike[str] | None = None, perl_lib: str | os.PathLike[str] | None = None,
                 extra_conf: str = "") -> None:
        for name, value in (("conf", conf), ("startup_pl", startup_pl), ("perl_lib", perl_lib)):
            check_path(value, f"apache: {name}", optional=True)
        self.conf = Path(conf).resolve() if conf is not None else None
        if self.conf is not None and not self.conf.is_file():
            raise UsageError(f"apache: no such configuration file {conf}")
        self.perl_handlers = check_str_mapping(perl_handlers, "apache: perl_handlers")
        self.startup_pl = Path(startup_pl).resolve() if startup_pl is not None else None
        self.perl_lib = Path(perl_lib).resolve() if perl_lib is not None else None
        self.extra_conf = check_text(extra_conf, "apache: extra_conf")
        # checked now: a bad file is bad input, before anything starts
        conf_text = read_user_conf(self.conf) if self.conf is not None else ""
        self.preload = self.startup_pl is not None or _preloads(conf_text)
        self.mod_perl = bool(self.perl_handlers) or self.startup_pl is not None or _runs_perl(conf_text)
        self.debian, self.other_mpm = debian_layout(self.conf) if self.conf is not None else (False, None)
        self.notes = apache_notes(self.conf) if self.conf is not None else ()

    def _server(self, params: PoolParams, workdir: Path, *, cpus: Collection[int] | None = None,
                keepalive: bool = False, host: str = HOST) -> ManagedServer:
        start, low, high = params.fixed()
        extra: dict[str, Any] = {}
        if self.conf is not None:
            extra["conf"] = self.conf
        return ApacheServer(
            workdir, perl_handlers=self.perl_handlers,
            startup_pl=self.startup_pl.read_text() if self.startup_pl is not None else None,
            perl_lib=self.perl_lib, extra_conf=self.extra_conf, start_servers=min(start, params.max_clients),
            min_spare=low, max_spare=high, max_request_workers=params.max_clients,
            max_connections_per_child=params.max_requests, keepalive=keepalive, cpus=cpus, host=host,
            profile_dir=self.profile_dir, **extra)

    def _render(self, params: PoolParams, *, keepalive: bool = False) -> str:
        start, low, high = params.fixed()
        rows = [("StartServers", start), ("MinSpareServers", low), ("MaxSpareServers", high),
                ("ServerLimit", params.max_clients), ("MaxRequestWorkers", params.max_clients),
                ("MaxConnectionsPerChild", params.max_requests)]
        body = [f"    {name:<23}{value:>6}" for name, value in rows]
        where: list[str] = []
        switch: list[str] = []
        if self.debian and self.conf is not None:
            where = [f"# {self.conf.parent / 'mods-available' / 'mpm_prefork.conf'} (Debian's layout), "
                     "in place of its <IfModule mpm_prefork_module> block:"]
            enable = f"a2dismod {self.other_mpm} && a2enmod mpm_prefork" if self.other_mpm else "a2enmod mpm_prefork"
            switch = [f"# then: {enable} && systemctl restart apache2"]
        return "\n".join([
            *where, "<IfModule mpm_prefork_module>", *body, "</IfModule>",
            "# MaxConnectionsPerChild counts connections: with KeepAlive On one connection carries up to",
            f"# MaxKeepAliveRequests requests (pounder measured with KeepAlive {'On' if keepalive else 'Off'}).",
            *switch,
        ])

    def size_limit(self, limit: ChildLimit) -> str:
        """Apache2::SizeLimit (mod_perl 2, Debian libapache2-mod-perl2): the figures that make it
        replace a child when its USS reaches ``limit.limit``.

        Without Linux::Smaps (CPAN only; Debian 12 does not package it) it reads
        ``/proc/self/statm``: its "size" is VmSize, every mapped page, resident or not (shared
        libraries, the parent's copy-on-write pages, reserved address space) and its "unshared" is
        VmSize minus the resident file-backed pages, so it still counts the pages shared with the
        parent. A leak grows VmSize and the USS alike (the difference stays put), so
        ``set_max_process_size`` = the warmed child's VmSize + (limit - its USS) tracks the USS;
        unshared would move too when a child faults in library pages (statm's "share" rises) and is
        no closer to the USS. With Linux::Smaps its "size" is the same VmSize: the line holds.
        The check interval keeps the overshoot between two checks at the measured growth within
        :data:`SIZE_CHECK_OVERSHOOT` of the limit (every request without a measured leak: the
        module's default). ``set_min_shared_size`` is not given: statm's "share" holds file pages
        only, which copy-on-write never lowers.

        "" when it would mean nothing: the configuration runs no mod_perl (the module runs in
        it), the child's VmSize was not measured (results of earlier versions), or a child has no
        room to grow (``limit`` at most its warmed size)."""
        if not self.mod_perl or limit.vm_size <= 0 or limit.limit <= limit.start:
            return ""
        room = limit.limit - limit.start
        max_size = (limit.vm_size + room) // KIB
        every = max(1, int(SIZE_CHECK_OVERSHOOT * limit.limit // limit.growth)) if limit.growth > 0 else 1
        overshoot = every * limit.growth
        unshared = limit.vm_size - limit.statm_shared
        when = (f"Checked every {count_text(every, 'request')}: at the measured {limit.growth / KIB:,.1f} KB per "
                f"request a child reaches the limit after about {int(room // limit.growth):,} requests and "
                f"overshoots it by at most {every} x {limit.growth / KIB:,.1f} = {overshoot / KIB:,.0f} KB "
                f"({overshoot / limit.limit:.1%} of {mib_unit(limit.limit)})"
                if limit.growth > 0 else "Checked at every request (the module's default): no leak was measured, "
                "the limit is for growth a short run cannot see")
        vm, uss, cap = mib_unit(limit.vm_size), mib_unit(limit.start), mib_unit(limit.limit)
        return "\n".join([
            f"Apache2::SizeLimit replaces a child by its memory, beside MaxConnectionsPerChild (whichever comes "
            f"first; with KeepAlive that one counts connections). Without Linux::Smaps it reads /proc/self/statm, "
            f"not the USS: its size is VmSize (with Linux::Smaps too), {vm} for a warmed child of USS {uss} (the "
            f"rest: libraries, the parent's pages, unused address space), and a leak grows both alike, so max "
            f"process size = VmSize "
            f"{vm} + (the {cap} each of {children_text(limit.children)} may reach - USS {uss}) = {max_size:,} KB. "
            f"Not max unshared size = {cap}: statm's unshared is VmSize - resident file pages "
            f"({mib_unit(limit.statm_shared)}) = {mib_unit(unshared)} already, {mib_unit(unshared - limit.start)} "
            f"above the USS. {when}. No min shared size: statm's share is file pages only, which copy-on-write "
            "never lowers (growth that only unshares the parent's pages raises the USS, not VmSize: "
            "MaxConnectionsPerChild covers it):",
            "  # httpd.conf, after LoadModule perl_module",
            "  PerlLoadModule Apache2::SizeLimit",
            "  <Perl>",
            f"    # KB = VmSize {vm} + (USS limit {cap} - USS {uss})",
            f"    Apache2::SizeLimit->set_max_process_size({max_size});",
            f"    Apache2::SizeLimit->set_check_interval({every});",
            "  </Perl>",
            "  PerlCleanupHandler Apache2::SizeLimit"])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "conf": None if self.conf is None else str(self.conf),
                "perl_handlers": self.perl_handlers,
                "startup_pl": None if self.startup_pl is None else str(self.startup_pl),
                "perl_lib": None if self.perl_lib is None else str(self.perl_lib), "extra_conf": self.extra_conf}

    def describe(self) -> str:
        what = f"with {self.conf}" if self.conf is not None else f"with handlers {self.perl_handlers}"
        notes = "".join(f"; {note}" for note in self.notes)
        layout = " (Debian's layout" + notes + ")" if self.debian else (f" ({notes[2:]})" if notes else "")
        return f"Apache prefork + mod_perl {what}{layout}"

    def check(self) -> None:
        if self.conf is not None and not self.conf.is_file():
            raise UsageError(f"apache: no such configuration file {self.conf}")
        if self.startup_pl is not None and not self.startup_pl.is_file():
            raise UsageError(f"apache: no such startup file {self.startup_pl}")
        if self.perl_lib is not None and not self.perl_lib.is_dir():
            raise UsageError(f"apache: the Perl library {self.perl_lib} is not a directory")
        missing = apache_missing(perl=bool(self.perl_handlers or self.startup_pl is not None))
        if missing is not None:
            raise UsageError(f"apache: {missing}")

    def input_files(self) -> list[tuple[str, str]]:
        return [(what, str(path)) for what, path in (("configuration file", self.conf),
                                                     ("startup file", self.startup_pl)) if path is not None]


def _runs_perl(conf_text: str) -> bool:
    """Does an Apache configuration run mod_perl (loads it, or has Perl* directives or handlers)?
    Not "perl" anywhere: Debian's dir.conf names index.pl."""
    return bool(re.search(r"^\s*(LoadModule\s+perl_module\b|<?Perl|SetHandler\s+(modperl|perl-script)\b)", conf_text,
                          re.IGNORECASE | re.MULTILINE))


def _preloads(conf_text: str) -> bool:
    """Does an Apache configuration load Perl code in the parent (PerlRequire / PerlModule /
    PerlPostConfigRequire)?"""
    return bool(re.search(r"^\s*Perl(Require|Module|PostConfigRequire)\s", conf_text, re.IGNORECASE | re.MULTILINE))
