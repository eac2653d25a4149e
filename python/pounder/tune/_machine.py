"""Where a tuning run measures: the server's and the load generator's CPUs, and what tune.json
records about the run and the machine."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pounder._files import utc_timestamp
from pounder._units import available_cpus, cpu_list_text
from pounder._version import __version__
from pounder.load import Sender
from pounder.pool import Adapter, split_cpus
from pounder.procs import mem_available
from pounder.tune._options import TuneOptions


def _as_given(options: TuneOptions) -> str:
    server, load = (("any" if cpus is None else cpu_list_text(cpus))
                    for cpus in (options.server_cpus, options.load_cpus))
    return f"server on CPUs {server}, load generator on CPUs {load} (as given)"


def cpus_for(options: TuneOptions, sender: Sender) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None, str]:
    """The server's and the load generator's CPUs: as given, else split when there are enough;
    with agents (a distributed ``sender``, opened), the server has every CPU (the measured loads
    come from the agents)."""
    sent = ""
    if sender.distributed:
        away = sender.elsewhere()
        here = sender.count - away
        where = ("" if not here else " on this machine, sharing its CPUs with the server" if not away
                 else f", {here} of them on this machine, sharing its CPUs with the server")
        sent = f"measured loads sent by {sender.count} Ray agent{'s' * (sender.count != 1)}{where}; "
    if options.server_cpus is not None or options.load_cpus is not None:
        return options.server_cpus, options.load_cpus, sent + _as_given(options)
    if sender.distributed:
        cpus = cpu_list_text(sorted(os.sched_getaffinity(0)))
        return None, None, f"{sent}the server is not pinned: it may run on every CPU here ({cpus})"
    return split_cpus(sorted(os.sched_getaffinity(0)))


def manifest(adapter: Adapter, options: TuneOptions, sender: Sender) -> dict[str, Any]:
    """What ``tune.json`` records about a run (enough to resume it), with what sends its measured
    loads (``sender``, opened: Ray agents are recorded under ``load``)."""
    record = sender.record()
    load = {} if record is None else {"load": record}
    return {"tool_version": __version__, "started_at": utc_timestamp(), "adapter": adapter.to_dict(),
            "options": options.to_dict(), **load,
            "machine": {"cpus": available_cpus(), "mem_available": mem_available(), "hostname": os.uname().nodename}}


def measured_cpus(stored: Mapping[str, Any], options: TuneOptions) -> tuple[int, str] | None:
    """The CPUs the server of a stored run (its tune.json) was measured on, as :func:`cpus_for`
    chose them on that machine: their count (what the decisions count as the server's cores) and
    the note the tables print; None when the manifest does not say."""
    machine = stored.get("machine")
    cpus = machine.get("cpus") if isinstance(machine, dict) else None
    if not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
        return None
    if options.server_cpus is not None or options.load_cpus is not None:
        return (len(options.server_cpus) if options.server_cpus is not None else cpus), _as_given(options)
    if stored.get("load") is not None:  # with agents the server is not pinned
        return cpus, f"the server is not pinned: it may run on every CPU of the machine ({cpus})"
    server, _, note = split_cpus(range(cpus))
    return (len(server) if server else cpus), note
