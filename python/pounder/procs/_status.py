"""Apache mod_status in machine-readable form (``/server-status?auto``): busy and idle workers
and the total number of accesses, read once per sample during a bench."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from pounder._errors import PounderError, UsageError, public

_MAX_BYTES = 1 << 20


class StatusError(PounderError):
    """The status page could not be read or parsed (the message is the reason)."""


@public
@dataclass(frozen=True)
class StatusPoint:
    """One reading of the status page ``t`` seconds after the sampling started. A field the page
    did not give is None (``Total Accesses`` needs ``ExtendedStatus On``, the default since 2.3.6)."""

    t: float
    busy_workers: int | None
    idle_workers: int | None
    total_accesses: int | None


def status_auto_url(url: str) -> str:
    """``url`` with ``auto`` in its query (``http://127.0.0.1:8080/server-status?auto``)."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"invalid status URL {url!r}: expected e.g. http://127.0.0.1:8080/server-status")
    query = parts.query
    if "auto" not in query.split("&"):
        query = f"{query}&auto" if query else "auto"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path or "/", query, ""))


@public
def parse_status(text: str) -> tuple[int | None, int | None, int | None]:
    """``(BusyWorkers, IdleWorkers, Total Accesses)`` from a ``?auto`` page."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and key in ("BusyWorkers", "IdleWorkers", "Total Accesses"):
            try:
                values[key] = int(value.strip())
            except ValueError:
                raise StatusError(f"bad {key} value {value.strip()!r}") from None
    if "BusyWorkers" not in values and "IdleWorkers" not in values:
        raise StatusError("no BusyWorkers or IdleWorkers in the reply (not a mod_status ?auto page)")
    return values.get("BusyWorkers"), values.get("IdleWorkers"), values.get("Total Accesses")


def fetch_status(url: str, timeout_s: float) -> tuple[int | None, int | None, int | None]:
    """GET the ``?auto`` page (no proxy) and parse it; :class:`StatusError` says why not."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout_s) as response:
            body = response.read(_MAX_BYTES)
    except urllib.error.HTTPError as error:
        raise StatusError(f"HTTP {error.code} {error.reason} from {url}") from None
    except urllib.error.URLError as error:
        raise StatusError(f"cannot fetch {url}: {error.reason}") from None
    except OSError as error:  # timeouts included
        raise StatusError(f"cannot fetch {url}: {error}") from None
    return parse_status(body.decode("latin-1"))
