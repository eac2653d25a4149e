"""Units: every parser of a number a human types, and the formatters of sizes, in one place.

Each parser takes the raw text plus ``what`` (the option's name, used in messages) and raises
:class:`~pounder.UsageError` with one clear line when the text cannot be used.

One suffix rule for every option:

* counts (``-n``, ``--mrpc``, ``--requests-per-child``, ``--clients``, ...): a number with an
  optional suffix ``k``/``K`` (x1000), ``M`` (x1,000,000) or ``G`` (x1,000,000,000): ``10k``,
  ``1.5M``; the result must be whole. A lowercase ``m`` is refused as a count suffix because it
  means minutes in a duration.
* sizes (``--ram``): the same letters, but powers of 1024 as RAM is sold and as ``free -h`` and
  ``top`` show it (``512M`` = 512 MiB, ``4G``, ``1.5GiB``, ``4gb``, ``2048k``); a bare number is
  bytes.
* durations: ``500us`` (also ``µs``, microseconds, as the JSON writes latencies), ``500ms``,
  ``30s``, ``2m``, ``1h`` and sums of them such as ``1m30s``; a bare number is seconds.
* rates (requests per second): a count-like number that may be fractional (``0.5``, ``2.5k``),
  optionally followed by ``/s``.
* bandwidths: decimal SI prefixes (``k`` = 1000, ``M`` = 10^6, ``G`` = 10^9) and binary ones
  (``Ki`` = 1024, ``Mi``, ``Gi``); a lowercase ``b`` (``bps``, ``bit``, ``b/s``) counts bits, an
  uppercase ``B`` (``B/s``, ``Bps``) counts bytes; a bare number is bytes per second.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Collection, Iterator
from decimal import Decimal

from pounder._errors import UsageError, public

KIB = 1024
MIB = 1024 * 1024
GIB = 1024 * MIB
PID_MAX = 2**31 - 1

_NUM = r"(?:\d+(?:\.\d*)?|\.\d+)"
_COUNT_SUFFIXES: dict[str, int] = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9}
_COUNT_RE = re.compile(rf"(?P<num>{_NUM})(?P<suffix>[kKMG]?)")
_RATE_RE = re.compile(rf"(?P<num>{_NUM})(?P<suffix>[kKMG]?)(?:/s)?")
_DURATION_UNITS: dict[str, float] = {"us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0,
                                     "h": 3600.0}  # fmt: skip
_DURATION_PART_RE = re.compile(rf"(?P<num>{_NUM})(?P<unit>us|\u00b5s|\u03bcs|ms|s|m|h)")
_BARE_NUMBER_RE = re.compile(_NUM)
_SIZE_RE = re.compile(rf"(?P<num>{_NUM})\s*(?:(?P<prefix>[kKmMgGtT])(?:i?[bB])?|[bB])?")
_SIZE_PREFIXES = {"": 1, "k": KIB, "m": MIB, "g": GIB, "t": 1024 * GIB}
_BANDWIDTH_RE = re.compile(
    rf"(?P<num>{_NUM})\s*(?P<prefix>Ki|Mi|Gi|k|K|M|G)?(?P<unit>bps|bits?/s|bits?|b/s|Bps|B/s|B)?"
)
_BANDWIDTH_PREFIXES: dict[str, int] = {**_COUNT_SUFFIXES, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}

DURATION_HINT = "use e.g. 30s, 2m, 1h, 500ms; a bare number is seconds"
COUNT_HINT = "expected a whole number such as 100, 10k or 1M"


def invalid(what: str, text: str, hint: str) -> UsageError:
    """The one message for text that cannot be read: ``invalid WHAT 'TEXT' (HINT)``."""
    return UsageError(f"invalid {what} {text!r} ({hint})")


# ---------------------------------------------------------------------------------------------
# Counts


def parse_count(text: str, what: str) -> int:
    """``"10k"`` → 10000, ``"1.5M"`` → 1500000, ``"250"`` → 250. The result must be whole."""
    match = _COUNT_RE.fullmatch(text.strip())
    value = 0.5 if match is None else float(match["num"]) * _COUNT_SUFFIXES[match["suffix"]]
    if not value.is_integer():
        raise UsageError(f"invalid {what} {text!r}: {COUNT_HINT}")
    return int(value)


def count_in_range(value: int | str, what: str, low: int, high: int) -> int:
    """A count given as a number or as text (:func:`parse_count`), between ``low`` and ``high``."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"{what} must be a whole number, got {value!r}")
    number = parse_count(value, what) if isinstance(value, str) else value
    if not low <= number <= high:
        raise UsageError(f"{what} must be between {low} and {high:,}, got {plain(number)}")
    return number


def parse_count_list(text: str, what: str) -> tuple[int, ...]:
    """``"0,10000,1k,1M"`` → (0, 10000, 1000, 1000000): counts separated by commas. A minus sign
    is read (``"-1"`` → -1) so that the caller can say which values its option takes."""
    values = []
    for item in text.split(","):
        negative = item.strip().startswith("-")
        try:
            value = parse_count(item.strip().removeprefix("-"), what)
            values.append(-value if negative else value)
        except UsageError:
            raise UsageError(f"invalid {what} {text!r}: give whole numbers separated by commas") from None
    return tuple(values)


def parse_pid(text: str, what: str) -> int:
    """A process id: digits only (no suffix: ``1k`` is no pid anyone means), at least 1."""
    cleaned = text.strip()
    if not cleaned.isascii() or not cleaned.isdigit() or not 1 <= int(cleaned) <= PID_MAX:
        raise UsageError(f"invalid {what} {text!r}: expected a process id (a positive whole number)")
    return int(cleaned)


# ---------------------------------------------------------------------------------------------
# Durations and rates


def parse_duration(text: str, what: str) -> float:
    """``"30s"`` → 30.0, ``"2m"`` → 120.0, ``"1h"``, ``"500ms"`` → 0.5, ``"1m30s"`` → 90.0,
    ``"500us"`` (or ``"500µs"``, the micro sign or the Greek mu) → 0.0005, ``"45"`` → 45.0 (a bare
    number is seconds). Returns seconds."""
    cleaned = text.strip()
    if _BARE_NUMBER_RE.fullmatch(cleaned):
        return float(cleaned)
    position, total = 0, 0.0
    for match in _DURATION_PART_RE.finditer(cleaned):
        if match.start() != position:
            break
        total += float(match["num"]) * _DURATION_UNITS[match["unit"]]
        position = match.end()
    if position == 0 or position != len(cleaned):
        raise invalid(what, text, DURATION_HINT)
    return total


def is_count(text: str) -> bool:
    """Whether ``text`` reads as a count (``100``, ``1k``) rather than a duration (``5s``)."""
    return _COUNT_RE.fullmatch(text.strip()) is not None


def parse_rate(text: str, what: str) -> float:
    """``"500"``, ``"2.5k"``, ``"500/s"`` → requests per second (fractions allowed: ``"0.5"``)."""
    match = _RATE_RE.fullmatch(text.strip())
    if match is None:
        raise invalid(what, text, "use requests per second, e.g. 500, 2.5k or 500/s")
    return float(match["num"]) * _COUNT_SUFFIXES[match["suffix"]]


# ---------------------------------------------------------------------------------------------
# Sizes and bandwidths


@public
def parse_size(text: str, what: str = "--ram") -> int:
    """A size in bytes: ``512M``, ``4G``, ``1.5GiB``, ``4gb``, ``2048k``, ``1000000`` (a bare number
    is bytes). Every prefix is a power of 1024 (``G`` = ``GiB`` = 2**30)."""
    match = _SIZE_RE.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"invalid {what} {text!r}: use e.g. 512M, 4G, 1.5GiB (k/M/G/T are powers of 1024)")
    return round(float(match["num"]) * _SIZE_PREFIXES[(match["prefix"] or "").lower()])


@public
def parse_ram(text: str, what: str = "--ram") -> int:
    """:func:`parse_size` for a RAM budget: at least 1 MiB (``--ram 4`` is surely a missing unit)."""
    size = parse_size(text, what)
    if size < MIB:
        raise UsageError(f"{what} {text!r} is less than 1 MiB: give a unit, e.g. 4G or 512M")
    return size


def parse_bandwidth(text: str, what: str = "--throttle") -> int:
    """Bandwidth → whole bytes per second (rounded, at least 1).

    ``"33.6kbps"`` → 4200 (33,600 bits/s), ``"1Mbps"`` → 125000, ``"56kbit"`` → 7000,
    ``"4KB/s"`` → 4000, ``"1MiB/s"`` → 1048576, ``"2000"`` → 2000. ``k``/``K`` mean 1000 (as
    modem and network speeds are quoted); use ``Ki`` for 1024.
    """
    match = _BANDWIDTH_RE.fullmatch(text.strip())
    hint = "use e.g. 33.6kbps, 1Mbps, 56kbit, 4KB/s or a bare number of bytes/s"
    if match is None or (match["prefix"] and not match["unit"]):
        raise invalid(what, text, hint)
    value = float(match["num"]) * _BANDWIDTH_PREFIXES[match["prefix"] or ""]
    unit = match["unit"] or "B"
    bytes_per_s = value if unit.startswith("B") else value / 8
    if bytes_per_s < 0.5:
        raise invalid(what, text, "must be at least 1 byte/s")
    return round(bytes_per_s)


# ---------------------------------------------------------------------------------------------
# Formatters


def mib(size: float | None, *, grouped: bool = True) -> str:
    """Bytes as MiB with one decimal, with thousands separators ("1,024.0") unless not ``grouped``
    ("1024.0": a cell of ``pounder mem`` a script reads as it is); "-" for None."""
    if size is None:
        return "-"
    return f"{size / MIB:,.1f}" if grouped else f"{size / MIB:.1f}"


def mib_unit(size: float) -> str:
    """Bytes as MiB with its unit: "40.3 MiB"."""
    return f"{size / MIB:.1f} MiB"


def count_text(count: int, one: str, many: str | None = None) -> str:
    """``count`` and its noun, in agreement: "1 child", "2 children", "1,000 requests" (``many``:
    the plural when it is not ``one`` + "s")."""
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def children_text(count: int) -> str:
    """"1 child", "2 children"."""
    return count_text(count, "child", "children")


def shape_text(workers: int, threads: int) -> str:
    """A shape of workers x threads: "4 workers x 8 threads", "1 worker x 1 thread"."""
    return f"{workers:,} worker{'s' * (workers != 1)} x {threads:,} thread{'s' * (threads != 1)}"


def size_text(size: int) -> str:
    """A size in the largest binary unit it fills: "512 bytes", "4 KiB", "1.5 MiB", "64 MiB"."""
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def plain(value: float, significant: int = 6) -> str:
    """A number as people write it: at most ``significant`` significant digits, no ``e+09``,
    thousands grouped ("1,000,000,000" for 1e9, "0.0000001" for 1e-7, "2.5"); from 10^15 on,
    a power of ten ("about 1.5 x 10^20"), not 20 digits."""
    if not math.isfinite(value):
        return str(value)
    if isinstance(value, int) and abs(value) < 10**15:  # a count: every digit
        return f"{value:,}"
    if abs(float(f"{value:.{significant}g}")) >= 1e15:
        rounded = float(f"{value:.2g}")
        exponent = math.floor(math.log10(abs(rounded)))
        mantissa = plain(rounded / 10**exponent, 2)
        return f"about {mantissa.removesuffix('1') if mantissa in ('1', '-1') else mantissa + ' x '}10^{exponent}"
    text = format(Decimal(f"{value:.{significant}g}"), "f")
    whole, _, fraction = text.partition(".")
    sign = "-" if whole.startswith("-") else ""
    fraction = fraction.rstrip("0")
    return f"{sign}{int(whole.lstrip('-')):,}" + (f".{fraction}" if fraction else "")


def age_text(seconds: float) -> str:
    """A duration in one token: 42s, 5m03s, 2h05m, 3d04h."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def number(value: float | None, digits: int = 0) -> str:
    """A number with thousands separators and ``digits`` decimals; "-" for None."""
    return "-" if value is None else f"{value:,.{digits}f}"


# ---------------------------------------------------------------------------------------------
# The machine


def available_cpus() -> int:
    """CPUs this process may run on (the affinity mask, which a container or taskset narrows;
    ``os.cpu_count()`` would count the machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_CPU_RANGE_RE = re.compile(r"(?P<low>\d+)(?:-(?P<high>\d+))?")


def parse_cpu_list(text: str, what: str) -> tuple[int, ...]:
    """``"0-3,6"`` → (0, 1, 2, 3, 6): CPU numbers and ranges separated by commas (the kernel's
    and ``taskset -c``'s list format), sorted, each once. Every CPU must be one this process may
    run on (``os.sched_getaffinity``)."""
    cpus: set[int] = set()
    for item in text.split(","):
        match = _CPU_RANGE_RE.fullmatch(item.strip())
        if match is None:
            raise invalid(what, text, "expected CPU numbers and ranges such as 0-3,6")
        low = int(match["low"])
        high = int(match["high"]) if match["high"] is not None else low
        if high < low:
            raise invalid(what, text, f"the range {item.strip()} runs backwards")
        cpus.update(range(low, min(high, 4096) + 1))
    allowed = set(os.sched_getaffinity(0))
    outside = sorted(cpus - allowed)
    if outside:
        raise UsageError(f"invalid {what} {text!r}: CPU {cpu_list_text(outside)} not available here "
                         f"(this process may run on {cpu_list_text(sorted(allowed))})")
    return tuple(sorted(cpus))


def cpu_list_text(cpus: Collection[int]) -> str:
    """(0, 1, 2, 3, 6) → ``"0-3,6"``: the inverse of :func:`parse_cpu_list`."""
    parts: list[str] = []
    ordered = sorted(set(cpus))
    start = 0
    for i, cpu in enumerate(ordered):
        if i + 1 == len(ordered) or ordered[i + 1] != cpu + 1:
            low = ordered[start]
            parts.append(str(low) if low == cpu else f"{low}-{cpu}")
            start = i + 1
    return ",".join(parts)


@contextlib.contextmanager
def pinned_thread(cpus: Collection[int] | None) -> Iterator[None]:
    """Run the calling thread on ``cpus`` inside the block (None: leave it alone), then put its
    affinity back. Affinity is per thread, and a thread or process created meanwhile (``fork``,
    ``clone``: a server started, the engine's threads) inherits it and keeps it after we restore
    ours; other threads of this process are not touched."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
