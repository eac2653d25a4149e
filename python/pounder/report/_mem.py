"""The part of the page for a ``pounder mem`` result (``pounder/mem/1``): the per-process table
(shared, private = USS, PSS, as the terminal shows them), the pool totals and MaxClients with
every input. MaxClients is left out, with the reason, when it was not computed."""

from __future__ import annotations

from pounder._units import children_text, count_text, mib
from pounder.procs import MemResult
from pounder.report._html import Section, bullets, paragraph, table


def _mib(size: int | None) -> str:
    return mib(size, grouped=False)


def mem_sections(result: MemResult, source: str) -> list[Section]:
    snap, limit = result.snapshot, result.max_clients
    totals = snap.totals
    found = f", found by {result.found_by}" if result.found_by else ""
    section = Section(f"Memory: {snap.parent.name} (pid {snap.root_pid}{found})")
    section.add(paragraph(f"{source}: measured at {result.taken_at} by pounder {result.tool_version}, from "
                          "/proc/PID/smaps_rollup. Sizes in MiB (1 MiB = 1,048,576 bytes); private = USS "
                          "(what the kernel frees when the process exits); shared = Shared_Clean + Shared_Dirty."))
    rows = [[proc.pid, proc.role, proc.name, _mib(proc.rss), _mib(proc.shared), _mib(proc.private), _mib(proc.pss),
             _mib(proc.swap)] for proc in snap.processes]
    section.add(table(["pid", "role", "name", "RSS", "shared", "private (USS)", "PSS", "swap"], rows))
    if not snap.own_excluded:
        section.add(paragraph("pounder's own process was not taken out of these figures (it needs root, or the "
                              "result predates it): file pages the server shared only with pounder count as "
                              "shared, so private reads lower than without pounder."))
    facts = [f"Footprint (sum of PSS): {_mib(totals.footprint)} MiB for "
             f"{count_text(totals.processes, 'process', 'processes')} (the sum of RSS, {_mib(totals.rss_sum)} MiB, "
             "would count shared pages once per process)",
             f"Children: {totals.children}" + (f" + {totals.grandchildren} grandchildren" if totals.grandchildren
                                               else "")]
    if totals.children:
        facts += [f"One more child costs: median {_mib(totals.median_child_uss)} MiB, max "
                  f"{_mib(totals.max_child_uss)} MiB (private, USS)",
                  f"Child shared: min {_mib(totals.min_child_shared)} MiB, median "
                  f"{_mib(totals.median_child_shared)} MiB"]
    if snap.skipped:
        facts.append("Skipped (exited while being read): " + ", ".join(str(pid) for pid in snap.skipped))
    section.add(bullets(facts))
    limits = Section("MaxClients")
    if limit is None:
        why = result.why_no_max_clients or "it was not computed when the result was written"
        return [section, limits.add(paragraph(f"MaxClients is not shown: {why}."))]
    budget = ("given (--ram)" if limit.ram_source == "given" else limit.ram_source if limit.mem_available is None else
              f"MemAvailable {_mib(limit.mem_available)} MiB + footprint {_mib(limit.footprint)} MiB")
    limits.add(table(["figure", "value", "how"], [
        ["RAM budget", f"{_mib(limit.ram)} MiB", budget],
        ["shared", f"{_mib(limit.shared)} MiB", limit.shared_basis],
        ["max child USS", f"{_mib(limit.max_child_uss)} MiB", f"largest of {children_text(limit.children)}"],
        ["max child RSS", f"{_mib(limit.max_child_rss)} MiB", f"largest of {children_text(limit.children)}"],
        ["MaxClients", limit.max_clients, "(RAM - shared) / max child USS"],
        ["without sharing", limit.max_clients_no_sharing, "RAM / max child RSS (what summing RSS would say)"],
    ]))
    return [section, limits]
