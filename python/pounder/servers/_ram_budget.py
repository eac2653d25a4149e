"""A RAM budget as a human types it (``--ram``), for every command that takes one: a size
(``512M``, ``4G``: :func:`pounder._units.parse_ram`) or ``cgroup`` / ``cgroup:PATH``, the memory
limit of the cgroup pounder runs in (as a container sets it) or of the one named
(``pounder.servers._cgroup.cgroup_limit``), read once, with where it came from."""

from __future__ import annotations

from dataclasses import dataclass

from pounder._errors import UsageError, check_type, public
from pounder._units import parse_ram
from pounder.servers._cgroup import cgroup_limit

RAM_FORMS = ("512M, 4G, 1.5GiB (k/M/G/T are powers of 1024), or cgroup / cgroup:PATH: the memory limit of the "
             "cgroup pounder runs in (as a container sets it) or of the one named")
"""What ``--ram`` takes, for the help of every command that has it."""


@public
@dataclass(frozen=True)
class RamBudget:
    """A RAM budget in ``bytes``; ``source``: where it came from when it is a cgroup's memory limit
    (``"--ram cgroup: the memory limit of the cgroup pounder runs in"``,
    ``"--ram cgroup:PATH: the cgroup's memory limit"``), None when typed as a size."""

    bytes: int
    source: str | None = None


@public
def parse_ram_budget(ram: str | int, what: str = "--ram") -> RamBudget:
    """The RAM budget ``ram``: a size (``4G``), a number of bytes (an int), or ``cgroup`` /
    ``cgroup:PATH``; :class:`~pounder.UsageError` (one line naming ``what``) otherwise, or when the
    cgroup does not exist or sets no limit. A number of bytes is taken as it is (each caller
    bounds it)."""
    if not isinstance(ram, str):
        return RamBudget(check_type(ram, int, what.lstrip("-"), "a size such as 4G or a number of bytes"))
    kind, colon, path = ram.strip().partition(":")
    if kind != "cgroup":
        return RamBudget(parse_ram(ram, what))
    if colon and not path.strip():
        raise UsageError(f"{what} cgroup: needs a cgroup after the colon (cgroup:/system.slice/app.service or a "
                         "directory under /sys/fs/cgroup), or no colon for the cgroup pounder runs in")
    try:
        limit = cgroup_limit(path.strip())
    except UsageError as error:
        text = str(error)
        raise UsageError(text if text.startswith("--ram") else f"{what} {ram.strip()}: {text}") from None
    if not path.strip():
        return RamBudget(limit, f"{what} cgroup: the memory limit of the cgroup pounder runs in")
    return RamBudget(limit, f"{what} cgroup:{path.strip()}: the cgroup's memory limit")
