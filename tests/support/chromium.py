"""Headless Chromium for tests: load a local file with no network and read the DOM it rendered and
the page's console messages (Chromium logs them on stderr)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_NETWORK = ["--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--disable-background-networking"]


def run_chromium(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Chromium headless on ``page`` with ``args`` (e.g. ``--dump-dom``), no network, 120 s at most."""
    assert CHROMIUM is not None, "chromium is not installed"
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", *NO_NETWORK, *args, page.as_uri()], capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


def console_messages(stderr: str) -> list[str]:
    """The page's console messages (errors, warnings, logs) among Chromium's log lines."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def rendered_dom(page: Path) -> str:
    """The DOM Chromium rendered from ``page``; fails on any console message of the page."""
    done = run_chromium(page, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert not console_messages(done.stderr), console_messages(done.stderr)
    return done.stdout
