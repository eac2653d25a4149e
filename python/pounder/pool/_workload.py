"""What the runner sends: one path, or a weighted mix of requests (an access log's, a URL file's),
with keep-alive and slow clients as the user's traffic has them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pounder._errors import UsageError, check_flag, check_text, public
from pounder._units import parse_bandwidth

METHODS = ("GET", "HEAD")


@public
@dataclass(frozen=True)
class Workload:
    """The requests of every load the runner sends.

    * ``path``: the one path-and-query requested when ``targets`` is empty.
    * ``targets``: ``(weight, method, path-and-query)`` rows, method GET or HEAD, weight >= 1:
      the mix of an access log or a URL file, replayed in weighted random order.
    * ``keepalive``: reuse connections (default off: every request a new connection, as a
      child's MaxRequestsPerChild counts connections in Apache and Starman).
    * ``throttle``: slow clients, each connection read at this bandwidth (``bench --throttle``
      text, e.g. ``"56kbit"``); None: as fast as they come.
    * ``source``: where the mix came from (a file name), only for :meth:`describe`.
    """

    path: str = "/"
    targets: tuple[tuple[int, str, str], ...] = ()
    keepalive: bool = False
    throttle: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        _check_path(self.path, "workload: path")
        if not isinstance(self.targets, (tuple, list)):
            raise UsageError(f"workload: targets must be (weight, method, path) rows, got {self.targets!r}")
        rows = tuple(_check_target(row, i) for i, row in enumerate(self.targets, start=1))
        object.__setattr__(self, "targets", rows)
        check_flag(self.keepalive, "workload: keepalive")
        if self.throttle is not None:
            parse_bandwidth(check_text(self.throttle, "workload: throttle"), "workload: throttle")
        check_text(self.source, "workload: source")

    def describe(self) -> str:
        """One short line: ``GET /, keep-alive off, no slow clients`` or ``mix of 12 requests
        from access.log, keep-alive on, slow clients 56kbit``."""
        if self.targets:
            total = sum(weight for weight, _, _ in self.targets)
            what = f"mix of {total:,} requests"
            if total != len(self.targets):
                what += f" ({len(self.targets):,} distinct)"
            if self.source:
                what += f" from {Path(self.source).name}"
        else:
            what = f"GET {self.path}"
        slow = f"slow clients {self.throttle}" if self.throttle is not None else "no slow clients"
        return f"{what}, keep-alive {'on' if self.keepalive else 'off'}, {slow}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "targets": [list(row) for row in self.targets], "keepalive": self.keepalive,
                "throttle": self.throttle, "source": self.source}


def _check_path(value: Any, what: str) -> str:
    text: str = check_text(value, what)
    if not text.startswith("/") or any(c.isspace() for c in text):
        raise UsageError(f"{what} must start with '/' and hold no spaces, got {text!r}")
    return text


def _check_target(row: Any, number: int) -> tuple[int, str, str]:
    what = f"workload: target {number}"
    if not isinstance(row, (tuple, list)) or len(row) != 3:
        raise UsageError(f"{what} must be (weight, method, path), got {row!r}")
    weight, method, path = row
    if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
        raise UsageError(f"{what}: the weight must be a whole number >= 1, got {weight!r}")
    if method not in METHODS:
        raise UsageError(f"{what}: the method must be GET or HEAD, got {method!r}")
    return weight, method, _check_path(path, what)


def url_file_line(weight: int, method: str, url: str) -> str:
    """One line of the URL file the runner writes for a mix: ``WEIGHT METHOD URL``."""
    return f"{weight} {method} {url}"
