"""A tool process pounder runs beside a server (strace, py-spy, perf): stopped the way such tools
write what they gathered, SIGINT, then SIGKILL if it does not end in time."""

from __future__ import annotations

import signal
import subprocess

from pounder._errors import public


@public
def interrupt_then_kill(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    """SIGINT ``proc`` (the tool writes its output and exits), SIGKILL it if it has not ended within
    ``timeout_s``; its exit status (negative: the signal that ended it)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()
