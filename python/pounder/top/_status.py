"""What a server's own status page says of each child: its state and the requests it served, and
the server's total of requests (for requests per second between two views).

* Apache mod_status (``/server-status`` with ``ExtendedStatus On``): the HTML table of its slots,
  one row per slot with its PID, Acc (this connection / this child / this slot) and mode M
  (``?auto`` has no per-process data);
* php-fpm's status page (``?full&json``): ``processes``, each with pid, state and requests;
* uWSGI's stats server (``--stats``; a Unix socket ``unix:PATH``, or ``--stats-http`` over HTTP):
  ``workers``, each with pid, status and requests;
* Puma's control app ``/stats`` (HTTP, or ``unix:PATH``): ``worker_status``, each with pid and
  ``last_status`` (its last check-in: requests_count, pool capacity).

The kind is told from the reply itself."""

from __future__ import annotations

import html
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pounder._errors import PounderError, UsageError
from pounder.servers import puma_stats, uwsgi_stats
from pounder.traffic import NotLoopbackError, parse_url, resolve

_MAX_BYTES = 4 << 20
_APACHE_MODES = {
    "_": "idle", "S": "starting", "R": "reading", "W": "writing", "K": "keepalive", "D": "dns", "C": "closing",
    "L": "logging", "G": "finishing", "I": "cleanup", ".": "open",
}


@dataclass(frozen=True)
class ChildStatus:
    """One child as the server sees it: ``state`` in the server's words (idle, writing, busy...),
    ``busy`` whether it serves a request, ``requests`` served by this child (None if not told)."""

    state: str
    busy: bool
    requests: int | None


@dataclass(frozen=True)
class StatusRead:
    """One read of the status page: ``kind`` (apache, php-fpm, uwsgi, puma), per pid, and the
    server's total of requests served (None if not told)."""

    kind: str
    children: Mapping[int, ChildStatus] = field(default_factory=dict)
    total_requests: int | None = None


def check_status_url(url: str) -> str:
    """``--status``: an http:// URL on this machine's loopback, or ``unix:PATH`` (uWSGI's stats
    socket, Puma's control socket); :class:`~pounder.UsageError` otherwise."""
    text = url.strip()
    if text.startswith("unix:"):
        if not text[5:]:
            raise UsageError("--status unix: needs the socket's path (unix:/run/uwsgi-stats.sock)")
        return text
    parsed = parse_url(text, "--status: ")
    if "auto" in urllib.parse.urlsplit(text).query.split("&"):
        raise UsageError("--status: mod_status's ?auto page has no per-child data: give the URL without ?auto")
    try:
        resolve(parsed.host, parsed.port, allow_remote=False)
    except NotLoopbackError as error:
        raise UsageError(f"--status: {error.address} is not on this machine's loopback (pounder reads only a "
                         "status page of this machine, e.g. http://127.0.0.1:8080/server-status)") from None
    return parsed.text


def read_status(url: str, timeout_s: float = 2.0) -> StatusRead:
    """Read and parse the status at ``url`` (checked by :func:`check_status_url`);
    :class:`~pounder.PounderError` (one line) when it cannot be read or is no status page pounder knows."""
    if url.startswith("unix:"):
        return _read_unix(url[5:], timeout_s)
    fetched = _fetch(_apache_or_fpm_url(url), timeout_s)
    return parse_status_page(fetched, url)


def _apache_or_fpm_url(url: str) -> str:
    """php-fpm's page gives per-process data with ``full`` and JSON with ``json``: asked for when
    the URL does not say otherwise (mod_status ignores both)."""
    parts = urllib.parse.urlsplit(url)
    query = [item for item in parts.query.split("&") if item]
    if "stats" in parts.path.rsplit("/", 1)[-1]:  # Puma's /stats, uWSGI's --stats-http: as given
        return url
    for item in ("full", "json"):
        if item not in query:
            query.append(item)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path or "/", "&".join(query), ""))


def _fetch(url: str, timeout_s: float) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout_s) as response:
            return str(response.read(_MAX_BYTES).decode("utf-8", "replace"))
    except urllib.error.HTTPError as error:
        raise PounderError(f"--status: HTTP {error.code} {error.reason} from {url}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise PounderError(f"--status: cannot fetch {url}: {reason}") from None


def _read_unix(path: str, timeout_s: float) -> StatusRead:
    try:
        return parse_status_json(uwsgi_stats(path, timeout_s))
    except PounderError as uwsgi_error:
        try:
            stats = puma_stats(path, timeout_s)
        except PounderError:
            raise PounderError(f"--status unix:{path}: neither uWSGI's stats nor Puma's /stats "
                               f"({uwsgi_error})") from None
    children = {w.pid: ChildStatus("busy" if w.pool_capacity < w.max_threads else "idle",
                                   w.pool_capacity < w.max_threads, w.requests_count) for w in stats.worker_status}
    return StatusRead("puma", children, sum(w.requests_count for w in stats.worker_status))


def parse_status_page(text: str, url: str = "the status page") -> StatusRead:
    """A status page's reply (JSON or mod_status HTML) read; :class:`~pounder.PounderError` if it is neither."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError as error:
            raise PounderError(f"--status: {url} is not valid JSON ({error})") from None
        return parse_status_json(data, url)
    return parse_apache_html(text, url)


def parse_status_json(data: Any, url: str = "the status page") -> StatusRead:
    """php-fpm's ``?full&json``, uWSGI's stats or Puma's ``/stats`` (told apart by their keys)."""
    if not isinstance(data, dict):
        raise PounderError(f"--status: {url} is JSON but not a status page")
    if isinstance(data.get("processes"), list):  # php-fpm
        children = {int(p["pid"]): _fpm_child(p, url) for p in data["processes"] if isinstance(p, dict) and "pid" in p}
        return StatusRead("php-fpm", children, _int(data.get("accepted conn")))
    if isinstance(data.get("workers"), list):  # uWSGI
        workers = [w for w in data["workers"] if isinstance(w, dict) and _int(w.get("pid"))]
        children = {int(w["pid"]): ChildStatus(str(w.get("status", "")), str(w.get("status", "")) == "busy",
                                               _int(w.get("requests"))) for w in workers}
        requests = [_int(w.get("requests")) for w in workers]
        return StatusRead("uwsgi", children, None if None in requests else sum(r or 0 for r in requests))
    if isinstance(data.get("worker_status"), list):  # Puma
        children = {}
        for worker in data["worker_status"]:
            last = worker.get("last_status") or {}
            busy = _int(last.get("pool_capacity")) is not None and (last.get("pool_capacity") or 0) < (
                last.get("max_threads") or 0)
            children[int(worker["pid"])] = ChildStatus("busy" if busy else "idle", busy,
                                                       _int(last.get("requests_count")))
        known = [c.requests for c in children.values()]
        return StatusRead("puma", children, None if None in known else sum(r or 0 for r in known))
    raise PounderError(f"--status: {url} is JSON but neither php-fpm's, uWSGI's nor Puma's status")


def _fpm_child(process: Mapping[str, Any], url: str) -> ChildStatus:
    """A php-fpm process; the one serving this very read of the status page is ``status`` (not busy)."""
    state = str(process.get("state", "")).lower()
    path = urllib.parse.urlsplit(url).path
    if state == "running" and path and str(process.get("request uri", "")).startswith(path):
        return ChildStatus("status", False, _int(process.get("requests")))
    return ChildStatus(state, state not in ("idle", ""), _int(process.get("requests")))


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.S | re.I)
_CELL = re.compile(r"<t([dh])[^>]*>(.*?)(?=<t[dh][^>]*>|$)", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_TOTAL = re.compile(r"Total accesses:\s*(\d+)", re.I)


def _cells(row: str) -> list[tuple[str, str]]:
    return [(kind.lower(), html.unescape(_TAG.sub("", body)).strip()) for kind, body in _CELL.findall(row)]


def parse_apache_html(text: str, url: str = "the status page") -> StatusRead:
    """mod_status's HTML page (``ExtendedStatus On``): the slot table, found by its header row
    (Srv, PID, Acc, M), whatever the column order; a slot without a process (PID "-" or mode
    ".") is left out; a pid in several slots (a graceful restart) keeps its busiest."""
    header: list[str] | None = None
    children: dict[int, ChildStatus] = {}
    for row in _ROW.findall(text):
        cells = _cells(row)
        names = [value for kind, value in cells]
        if all(kind == "h" for kind, _ in cells) and {"PID", "Acc", "M"} <= set(names):
            header = names
            continue
        if header is None or len(cells) < len(header) or any(kind == "h" for kind, _ in cells):
            continue
        values = dict(zip(header, names, strict=False))
        pid, mode = values.get("PID", ""), values.get("M", "")
        if not pid.isdigit() or mode in (".", ""):
            continue
        acc = values.get("Acc", "").split("/")
        requests = int(acc[1]) if len(acc) == 3 and acc[1].isdigit() else None
        state = _APACHE_MODES.get(mode, mode)
        path = urllib.parse.urlsplit(url).path
        if mode == "W" and path and f" {path}" in values.get("Request", ""):  # serving this very read
            state = "status"
        child = ChildStatus(state, mode not in ("_", "I") and state != "status", requests)
        if int(pid) not in children or child.busy:
            children[int(pid)] = child
    if header is None:
        raise PounderError(f"--status: {url} has no per-child table: neither mod_status with ExtendedStatus On "
                           "nor a JSON status page")
    total = _TOTAL.search(text)
    return StatusRead("apache", children, int(total.group(1)) if total else None)
