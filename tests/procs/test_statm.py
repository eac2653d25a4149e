"""pounder.procs.read_statm against the kernel's own words for the same process (/proc/PID/status)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from pounder.procs import ProcessGone, read_statm


def _status(pid: int, *keys: str) -> int:
    with open(f"/proc/{pid}/status") as file:
        return sum(int(line.split()[1]) * 1024 for line in file if line.split(":")[0] in keys)


def test_statm_is_vmsize_rss_and_resident_file_pages() -> None:
    # a process that holds still (this one allocates as it runs)
    proc = subprocess.Popen([sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        # the kernel's RSS counters settle a moment after the last page fault: compare once a read
        # of statm before and one after /proc/PID/status agree
        for _ in range(50):
            statm = read_statm(proc.pid)
            size, rss, shared = (_status(proc.pid, "VmSize"), _status(proc.pid, "VmRSS"),
                                 _status(proc.pid, "RssFile", "RssShmem"))  # fmt: skip
            if read_statm(proc.pid) == statm:
                break
            time.sleep(0.02)
        assert (statm.size, statm.resident, statm.shared) == (size, rss, shared)
    finally:
        proc.communicate(b"")
    with pytest.raises(ProcessGone):
        read_statm(proc.pid)
    assert read_statm(os.getpid()).size > 0
