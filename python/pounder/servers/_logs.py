"""What a failing server's logs say, in a bounded excerpt: the lines that matter first.

A server that fails to start may have written megabytes (a worker that prints its whole
configuration, a traceback repeated per worker, one very long line). The excerpt shown with the
error holds at most :data:`EXCERPT_LINES` lines in all, each cut at :data:`LINE_CHARS`
characters, scanned from at most the last :data:`SCAN_LIMIT` bytes each log wrote since the start:

- per log, a header naming it; then the latest lines that look like errors (error, exception,
  traceback, fatal, failed, cannot, denied, syntax... as gunicorn, Starman, Apache and Python
  word them) written *before* its last lines, when there are any; then its last lines;
- control characters (terminal colours, carriage returns) are shown as U+FFFD, so a log cannot
  rewrite the user's terminal.

The whole logs are kept elsewhere (the caller says where: ``ServerStartError.logs``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

EXCERPT_LINES = 18
"""The excerpt's lines at most, headers included (with the error line and the line naming the
whole logs, a failure takes at most 20 lines of the terminal)."""
LINE_CHARS = 300
"""A log line is cut after this many characters (the cut says how many more it had)."""
SCAN_LIMIT = 64 << 20
"""Bytes scanned at most from the end of each log (for the errors and the last lines)."""
_PIECE = 1 << 16

_MATTERS = re.compile(r"error|exception|traceback|fatal|fail|cannot|can't|could not|unable|denied|refused|"
                      r"no such|not found|syntax|invalid|emerg|alert|\bcrit|abort|killed|segmentation",
                      re.IGNORECASE)
_SKIPPED = "  [...]"


@dataclass
class _Scanned:
    """The end of one log: its last lines and its last error lines, each with its line number."""

    lines: deque[tuple[int, str]]
    errors: deque[tuple[int, str]]


def _shown(line: str, more: int) -> str:
    """``line`` as the terminal shows it: control characters replaced, cut at :data:`LINE_CHARS`
    (``more``: bytes it had beyond ``line``)."""
    line = "".join(c if c.isprintable() or c == "\t" else "\ufffd" for c in line.rstrip("\r\n"))
    if len(line) <= LINE_CHARS and not more:
        return line
    return f"{line[:LINE_CHARS]} [... {len(line) - LINE_CHARS + more:,} more characters]"


def _scan(path: Path, since: int, keep: int) -> _Scanned | None:
    """The last ``keep`` lines and error lines ``path`` wrote from byte ``since`` on (of its last
    :data:`SCAN_LIMIT` bytes), never holding more than one 64 KiB piece of a line; None when it
    cannot be read or has nothing."""
    scanned = _Scanned(deque(maxlen=keep), deque(maxlen=keep))
    try:
        with open(path, "rb") as f:
            start = max(since, f.seek(0, 2) - SCAN_LIMIT)
            f.seek(start)
            number = 0
            while piece := f.readline(_PIECE):
                head, more = piece, 0
                while not piece.endswith(b"\n") and (piece := f.readline(_PIECE)):
                    more += len(piece.rstrip(b"\r\n"))
                number += 1
                if number == 1 and start > since:
                    continue  # begun mid-line
                text = head.decode("utf-8", "replace")
                if not text.strip():
                    continue
                line = (number, _shown(text, more))
                scanned.lines.append(line)
                if _MATTERS.search(text):
                    scanned.errors.append(line)
    except OSError:
        return None
    return scanned if scanned.lines else None


def _one_log(path: Path, scanned: _Scanned, room: int) -> list[str]:
    """``path``'s header and at most ``room`` - 1 of its lines: errors before its last lines first."""
    room -= 1
    lines = list(scanned.lines)[-room:]
    if not any(number < lines[0][0] for number, _ in scanned.errors):
        return [f"--- last lines of {path} ---", *(text for _, text in lines)]
    most = room // 2  # errors; a line says what was skipped; the rest is the last lines
    first_of_tail = list(scanned.lines)[-(room - most - 1)][0]
    errors = [line for line in scanned.errors if line[0] < first_of_tail][-most:]
    tail = [line for line in list(scanned.lines)[-(room - len(errors) - 1):] if line[0] > errors[-1][0]]
    skipped = [_SKIPPED] if tail[0][0] > errors[-1][0] + 1 else []
    return [f"--- {path}: the errors it wrote before its last lines, then those ---",
            *(text for _, text in errors), *skipped, *(text for _, text in tail)]


def log_excerpt(logs: Sequence[tuple[Path, int]], budget: int = EXCERPT_LINES,
                rewrite: Callable[[str], str] = str) -> str:
    """The excerpt of ``logs`` (each a path and the byte offset its latest start began at), in
    ``budget`` lines at most; "" when none of them has anything. ``rewrite`` turns each shown line
    into what the user should read (a generated file's line into the user's own file's)."""
    texts = [(path, scanned) for path, since in logs if (scanned := _scan(path, since, budget))]
    texts = texts[:max(1, budget // 4)]  # each log keeps at least a header and 3 lines
    out: list[str] = []
    for index, (path, scanned) in enumerate(texts):
        room = (budget - len(out)) // (len(texts) - index)
        out += _one_log(path, scanned, room)
    return "\n".join(rewrite(line) for line in out)
