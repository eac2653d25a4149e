"""Memory as the platform counts it, as a tuning run's text and page show it: the server's own
memory cgroup read with the size measurement (the sizes point's ``cgroup``, see
:mod:`pounder.pool._charged`), next to the sum of PSS of its processes, and why the two differ,
each reason with its figures.

Only stored figures are read: the text report and the page quote the same rows and sentences
(:func:`platform_table`, :func:`platform_notes`). Differences are computed from the figures as
shown (MiB with one decimal), so a reader who subtracts two cells gets the difference quoted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pounder._errors import public
from pounder._units import MIB

HEADERS = ("", "sum of PSS", "of it anon", "of it files", "current", "anon", "file", "shmem", "kernel & other")
"""The columns of :func:`platform_table`: the snapshot's sum of PSS (the footprint), its anonymous
part (the processes' ``Pss_Anon``) and the rest (their shares of the file and shmem pages they
map), then the cgroup's figures and what it is charged beyond anon + file."""

_STAGES = (("warmed", "warm"), ("end", "end"))


def _shown(size: float | None) -> float | None:
    """A size in MiB as the tables show it (one decimal)."""
    return None if size is None else round(size / MIB, 1)


def _text(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _cgroup(measure: Mapping[str, Any]) -> Mapping[str, Any] | None:
    cgroup = measure.get("cgroup")
    return cgroup if isinstance(cgroup, Mapping) else None


@public
def platform_heading(measure: Mapping[str, Any]) -> str | None:
    """The line that introduces the figures, or says why there are none; None for results of
    versions that did not read them."""
    cgroup = _cgroup(measure)
    if cgroup is None:
        return None
    reading = cgroup.get("end") or cgroup.get("warm")
    if reading is None:
        why = cgroup.get("note") or "the server's cgroup could not be read"
        return f"memory as the platform counts it: not read ({why})"
    return (f"memory as the platform counts it: the server ran in a memory cgroup of its own (cgroup "
            f"v{reading['version']}), read right after the snapshots; MiB")


@public
def platform_table(measure: Mapping[str, Any]) -> list[list[str]]:
    """The rows under :data:`HEADERS`: the warmed and the end snapshot (a stage the cgroup was not
    read at is left out); empty without figures."""
    cgroup = _cgroup(measure)
    if cgroup is None:
        return []
    rows = []
    for name, stage in _STAGES:
        reading = cgroup.get(stage)
        if not reading:
            continue
        pss, pss_anon = _shown(measure[stage]["footprint"]), _shown(reading.get("pss_anon"))
        current, anon, file, shmem = (_shown(reading[key]) for key in ("current", "anon", "file", "shmem"))
        files = None if pss is None or pss_anon is None else round(pss - pss_anon, 1)
        other = None if current is None or anon is None or file is None else round(current - anon - file, 1)
        rows.append([name, *(_text(v) for v in (pss, pss_anon, files, current, anon, file, shmem, other))])
    return rows


def _more(difference: float) -> str:
    """``difference`` (MiB, one decimal) as "X MiB more than" / "X MiB less than" / "the same as"."""
    if abs(difference) < 0.05:
        return "the same as"
    return f"{abs(difference):,.1f} MiB {'more' if difference > 0 else 'less'} than"


@public
def platform_notes(measure: Mapping[str, Any], kind: str = "") -> list[str]:
    """Why the sum of PSS and the cgroup's figures differ, each sentence with the end row's
    figures (as :func:`platform_table` shows them); ``kind``: the server (php-fpm's shared
    memory is its OPcache). Empty without figures."""
    cgroup = _cgroup(measure)
    reading = None if cgroup is None else cgroup.get("end")
    if not reading:
        return []
    pss = _shown(measure["end"]["footprint"]) or 0.0
    current, anon, file, shmem = (_shown(reading[key]) or 0.0 for key in ("current", "anon", "file", "shmem"))
    pss_anon = _shown(reading.get("pss_anon"))
    notes = []
    anon_note = (f"anon {anon:,.1f} MiB is the anonymous memory (heap, stacks, copy-on-write copies), charged to the "
                 "cgroup once per page")
    if pss_anon is not None:
        anon_note += (f"; the processes' Pss_Anon, their shares of it, add up to {pss_anon:,.1f} MiB, "
                      f"{_more(round(pss_anon - anon, 1))} anon")
    notes.append(anon_note)
    file_note = f"the sum of PSS, {pss:,.1f} MiB, is {_more(round(pss - anon, 1))} anon"
    if pss_anon is not None:
        file_note += (f": beyond its anonymous part ({pss_anon:,.1f} MiB) it counts {round(pss - pss_anon, 1):,.1f} "
                      "MiB of shares of the file and shmem pages the processes map (the interpreter, libraries, "
                      "code), and a file page already in the page cache when the server started stays charged to "
                      f"whoever read it first, not to this cgroup, whose file pages are {file:,.1f} MiB")
    if pss < anon:
        file_note = (f"the sum of PSS, {pss:,.1f} MiB, is {_more(round(pss - anon, 1))} anon: the cgroup is charged "
                     "anonymous memory in no process's PSS at the snapshot (a process that started or ended between "
                     "the two readings)")
    notes.append(file_note)
    other = round(current - anon - file, 1)
    if other >= 0.05:
        notes.append(f"current, {current:,.1f} MiB, is {other:,.1f} MiB more than anon + file: the kernel's own "
                     "memory for these processes (page tables, kernel stacks, slab, socket buffers), in no process's "
                     "PSS")
    elif other <= -0.05:
        why = ("cgroup v1's usage_in_bytes is a fuzzy figure, updated in batches" if reading.get("version") == 1
               else "memory.current and memory.stat were read a moment apart")
        notes.append(f"current, {current:,.1f} MiB, is {-other:,.1f} MiB less than anon + file: {why}")
    if shmem >= 0.05:
        what = "php-fpm's OPcache" if kind == "php-fpm" else "shared memory or tmpfs the processes use"
        notes.append(f"shmem, {shmem:,.1f} MiB of file, is {what}: charged to the cgroup once, however many "
                     "processes map it")
    return notes
