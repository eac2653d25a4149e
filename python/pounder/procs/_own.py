"""Taking pounder's own process out of a server's memory figures.

``/proc/PID/smaps_rollup`` counts a page as shared (Shared_Clean/Shared_Dirty) when *any* other
process maps it, and its PSS divides the page by every process mapping it. pounder is a Python
process: when the server runs the same Python (gunicorn), or the same libraries, pounder's own
process maps the same file pages (libpython, extension modules, libc), and the server's parent
then shows pages as shared that are its own when pounder is not looking: its private (USS) figure
drops by megabytes while pounder reads it.

What is done: pounder lists the physical pages its own process maps from files
(``/proc/self/maps`` + ``/proc/self/pagemap``: page frame numbers, readable by root only). For each
server process, only its mappings of the same files (device and inode) are looked at: each
resident page pounder maps too is looked up in ``/proc/kpagecount`` (how many mappings the page
has in all) and ``/proc/kpageflags`` (dirty). A page whose other mappings are only pounder's is
counted as private (clean or dirty as it is), and every such page's PSS is what it would be
without pounder's mappings. The result is what smaps_rollup shows with pounder's process gone.

Without root (no page frame numbers, no kpagecount) nothing is changed and
:attr:`OwnPages.available` is False: the figures may then count such pages as shared.
"""

from __future__ import annotations

import array
import bisect
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass

PAGE = os.sysconf("SC_PAGE_SIZE")
_PRESENT = 1 << 63
_PFN_MASK = (1 << 55) - 1
_KPF_DIRTY = 1 << 4


@dataclass(frozen=True)
class Adjustment:
    """What pounder's own mappings changed in one process's rollup, in bytes: pages to move from
    shared to private (clean and dirty) and the PSS to add back."""

    clean: int = 0
    dirty: int = 0
    pss: int = 0

    @property
    def moved(self) -> int:
        return self.clean + self.dirty


NONE = Adjustment()


File = tuple[int, int]
"""A mapped file: (device, inode)."""


def _file_mappings(pid: int | str) -> Iterator[tuple[int, int, int, File]]:
    """``(start, end, first file page, (device, inode))`` of each mapping of a file (inode not 0)."""
    with open(f"/proc/{pid}/maps", "rb") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) < 6 or fields[4] == b"0":
                continue
            start, _, end = fields[0].partition(b"-")
            major, _, minor = fields[3].partition(b":")
            device = os.makedev(int(major, 16), int(minor, 16))
            yield int(start, 16), int(end, 16), int(fields[2], 16) // PAGE, (device, int(fields[4]))


def _entries(pagemap: int, first: int, count: int) -> array.array[int]:
    """``count`` pagemap entries from virtual page ``first`` (fewer if the read is short)."""
    data = os.pread(pagemap, count * 8, first * 8)
    entries = array.array("Q")
    entries.frombytes(data[: len(data) // 8 * 8])
    return entries


class OwnPages:
    """The file pages pounder's own process maps, read once: for each file, its resident pages
    (file page index → page frame number) and how many times pounder maps each frame."""

    def __init__(self, files: dict[File, tuple[list[int], dict[int, int]]], frames: dict[int, int],
                 available: bool) -> None:  # fmt: skip
        self.files = files
        self.frames = frames
        self.available = available
        self._known: dict[tuple[int, float], Adjustment] = {}

    @classmethod
    def read(cls) -> OwnPages:
        """Read ``/proc/self``; :attr:`available` is False when the page frames or
        ``/proc/kpagecount`` cannot be read (not root), and then :meth:`adjustment` changes nothing."""
        pages: dict[File, dict[int, int]] = {}
        frames: dict[int, int] = {}
        try:
            if not os.access("/proc/kpagecount", os.R_OK) or not os.access("/proc/kpageflags", os.R_OK):
                return cls({}, {}, False)
            pagemap = os.open("/proc/self/pagemap", os.O_RDONLY)
            try:
                for start, end, first, file in _file_mappings("self"):
                    entries = _entries(pagemap, start // PAGE, (end - start) // PAGE)
                    of_file = pages.setdefault(file, {})
                    for index, entry in enumerate(entries):
                        if entry & _PRESENT:
                            frame = entry & _PFN_MASK
                            of_file[first + index] = frame
                            frames[frame] = frames.get(frame, 0) + 1
            finally:
                os.close(pagemap)
        except OSError:
            return cls({}, {}, False)
        if frames.keys() <= {0}:  # page frame numbers hidden (not CAP_SYS_ADMIN), or nothing mapped
            return cls({}, {}, False)
        files = {file: (sorted(of_file), of_file) for file, of_file in pages.items() if of_file}
        return cls(files, frames, True)

    def adjustment(self, pid: int, known_as: float | None = None) -> Adjustment:
        """How process ``pid``'s rollup would differ without pounder's process (:data:`NONE` when
        unavailable, or when the process cannot be read: it has exited). Only the server's
        mappings of files pounder maps are read, and in them only the pages pounder has resident
        (about 1 ms per thousand such pages). With ``known_as`` (the process's start time), the
        figure found the first time for that process is given again (the sampler: the pages a
        process shares with pounder change little while it runs)."""
        if not self.available or pid == os.getpid():
            return NONE
        if known_as is not None and (pid, known_as) in self._known:
            return self._known[(pid, known_as)]
        found = self._adjustment(pid)
        if known_as is not None:
            self._known[(pid, known_as)] = found
        return found

    def _adjustment(self, pid: int) -> Adjustment:
        clean = dirty = 0
        pss = 0.0
        try:
            pagemap = os.open(f"/proc/{pid}/pagemap", os.O_RDONLY)
        except OSError:
            return NONE
        counts = os.open("/proc/kpagecount", os.O_RDONLY)
        flags = os.open("/proc/kpageflags", os.O_RDONLY)
        try:
            for start, end, first, file in _file_mappings(pid):
                ours = self.files.get(file)
                if ours is None:
                    continue
                indexes, frame_at = ours
                last = first + (end - start) // PAGE
                wanted = indexes[bisect.bisect_left(indexes, first) : bisect.bisect_left(indexes, last)]
                if not wanted:
                    continue
                base = start // PAGE - first  # virtual page of file page i is base + i
                entries = _entries(pagemap, base + wanted[0], wanted[-1] - wanted[0] + 1)
                for index in wanted:
                    position = index - wanted[0]
                    if position >= len(entries):
                        break
                    entry = entries[position]
                    frame = frame_at[index]
                    if not entry & _PRESENT or entry & _PFN_MASK != frame:
                        continue  # not resident, or a copy of its own (copy-on-write)
                    (mapped,) = struct.unpack("Q", os.pread(counts, 8, frame * 8))
                    without = max(1, mapped - self.frames[frame])
                    pss += PAGE / without - PAGE / max(1, mapped)
                    if without == 1:
                        (page_flags,) = struct.unpack("Q", os.pread(flags, 8, frame * 8))
                        if page_flags & _KPF_DIRTY:
                            dirty += PAGE
                        else:
                            clean += PAGE
        except OSError:
            return NONE
        finally:
            for fd in (pagemap, counts, flags):
                os.close(fd)
        return Adjustment(clean, dirty, round(pss))
