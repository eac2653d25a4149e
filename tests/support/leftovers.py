"""What a test leaves behind: the processes that name a path (a server started in a test's
directory names it on its command line or runs in it), to assert none outlived pounder and to
kill them at teardown."""

from __future__ import annotations

import os

import psutil


def processes_mentioning(text: str) -> list[psutil.Process]:
    """Every process but this one whose command line or working directory holds ``text``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        try:
            with_text = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["cwd"] or "")
        except psutil.Error:
            continue
        if text in with_text and proc.pid != os.getpid():
            found.append(proc)
    return found


def kill_leftovers(text: str) -> None:
    """Kill every process :func:`processes_mentioning` ``text`` (those already gone are skipped)."""
    for proc in processes_mentioning(text):
        try:
            proc.kill()
        except psutil.Error:
            continue
