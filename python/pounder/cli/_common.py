"""Exit codes and error printing shared by the CLI's modules."""

from __future__ import annotations

import sys

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def print_error(message: str) -> None:
    """Print ``pounder: error: <message>`` on one line to stderr."""
    line = " ".join(message.split())
    sys.stderr.write(f"pounder: error: {line}\n")
    sys.stderr.flush()
