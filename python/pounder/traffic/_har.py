"""HAR files (HTTP Archive, what a browser's developer tools export) as a source of requests: for
``--access-log FILE.har`` (the mix) and ``--replay FILE.har`` (the timing, from each entry's
``startedDateTime``, to the millisecond).

A HAR is told from an access log by its content: a JSON object with ``log.entries``. Each entry's
request keeps its method, its URL's path and query (the scheme, host and port are the URL
argument's, as for an access log), its body (``postData.text``, sent for methods other than GET
and HEAD) and its headers, the recorded ``Cookie`` among them (``--cookie`` or ``-H`` replace a
recorded header of the same name), but for those that are pounder's own or would be wrong on
another server: :data:`DROPPED_HEADERS` and HTTP/2 pseudo-headers (``:authority``, ...). Bodies
and headers are sent by ``--replay`` only: the mix (``--access-log``) is keyed on method and
target, and takes GET and HEAD only from a HAR.

A file is read as JSON (a HAR) when it starts with ``{`` or ``[``, or when its name ends in
``.har`` and no line of it is a log line; JSON that is no HAR is said to be so (``x.har is JSON
but not a HAR: an array, ...``), not read as log lines. Size (:data:`HAR_LIMIT`) is bounded
before parsing; depth by Python's JSON reader (a HAR is a few levels deep; a document deeper
than the reader goes is refused in one line), as is an integer too long for Python to convert.

A browser's HAR also holds requests to other hosts (CDNs, analytics, fonts): only the entries of
the HAR's **main origin** (scheme, host, port) are kept, the others counted as ``other_host``.
The main origin is the most frequent one, the earliest in the file among equally frequent ones
(not the first entry's: a page often starts with a redirect from ``http://`` or to ``www.``).
A header name that is not an HTTP token, or a value with a line break or NUL, is not a request
a browser sent: the file is refused, naming the entry.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import SplitResult, urlsplit

from pounder._errors import UsageError, quoted
from pounder._units import MIB
from pounder.traffic._parse import check_token

HAR_LIMIT = 256 * MIB
"""The largest HAR file (decompressed)."""
DROPPED_HEADERS = frozenset({
    # hop-by-hop (RFC 9110 7.6.1) and framing: pounder's own (keep-alive, Content-Length)
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
    "content-length", "host",
    # credentials for a proxy the replay does not go through
    "proxy-authorization",
})  # fmt: skip
"""Request headers of a HAR that are not replayed (lower case): ``Host`` and the framing are
pounder's (from the URL argument, the body and ``--no-keepalive``); ``Proxy-Authorization`` was
for the browser's proxy. ``Cookie`` is kept: the recorded session may be stale on another server
(``--cookie`` or ``-H 'Cookie: ...'`` replace it, ``--scenario`` logs in)."""
JSON_HEAD = 64 * 1024
"""How much of a file's start is looked at to tell JSON from log lines (blank space first)."""


@dataclass(frozen=True)
class HarEntry:
    """One request of a HAR: when it started (Unix microseconds, and the UTC offset it was written
    with), its origin (``scheme://host[:port]``, the port only when not the scheme's default), its
    method, path and query, the headers kept and its body (``None``: none)."""

    unix_us: int
    offset: timezone
    origin: str
    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None


def looks_like_har(head: bytes) -> bool:
    """Whether a file starting with ``head`` is JSON (a HAR, or JSON said not to be one), not log
    lines: its first character is ``{`` or ``[`` (a log line starts with a host)."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith((b"{", b"["))


def _fail(path: str, why: str) -> UsageError:
    return UsageError(f"HAR file {path}: {why}")


def _moment(text: object, path: str, number: int) -> tuple[int, timezone]:
    if not isinstance(text, str):
        raise _fail(path, f"entry {number} has no startedDateTime")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _fail(path, f"entry {number}: startedDateTime {quoted(text)} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise _fail(path, f"entry {number}: startedDateTime {quoted(text)} has no UTC offset")
    offset = moment.utcoffset()
    assert offset is not None
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds, timezone(offset)


def _headers(value: object, path: str, number: int) -> tuple[tuple[str, str], ...]:
    kept = []
    for header in value if isinstance(value, list) else []:
        if not isinstance(header, dict):
            continue
        name, text = header.get("name"), header.get("value")
        if not isinstance(name, str) or not isinstance(text, str) or name.startswith(":"):
            continue
        if name.lower() in DROPPED_HEADERS:
            continue
        try:
            check_token(name, "header name")
        except UsageError as error:
            raise _fail(path, f"entry {number}: {error}") from None
        if any(c in text for c in "\r\n\0"):
            raise _fail(path, f"entry {number}: header {name}'s value holds a line break or NUL")
        kept.append((name, text))
    return tuple(kept)


def _origin(parts: SplitResult, path: str, number: int) -> str:
    """``scheme://host[:port]`` of a URL, the host in lower case, the port only when not the
    scheme's default."""
    try:
        port = parts.port
    except ValueError:
        raise _fail(path, f"entry {number}: the URL's port is not a number from 0 to 65535") from None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def _entry(entry: object, path: str, number: int) -> HarEntry | None:
    """The entry's request, or None when it has no usable one (a ``data:`` or ``blob:`` URL)."""
    request = entry.get("request") if isinstance(entry, dict) else None
    if not isinstance(request, dict):
        raise _fail(path, f"entry {number} has no request")
    assert isinstance(entry, dict)
    method, url = request.get("method"), request.get("url")
    if not isinstance(method, str) or not isinstance(url, str):
        raise _fail(path, f"entry {number}'s request has no method or url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None
    unix_us, offset = _moment(entry.get("startedDateTime"), path, number)
    post = request.get("postData")
    text = post.get("text") if isinstance(post, dict) else None
    headers = _headers(request.get("headers"), path, number)
    mime = post.get("mimeType") if isinstance(post, dict) and isinstance(text, str) else None
    if isinstance(mime, str) and mime.strip() and not any(name.lower() == "content-type" for name, _ in headers):
        # the body's type as the browser recorded it, when its header list does not name it
        headers = (*_headers([{"name": "Content-Type", "value": mime.strip()}], path, number), *headers)
    return HarEntry(
        unix_us=unix_us, offset=offset, origin=_origin(parts, path, number), method=method.upper(),
        target=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
        headers=headers,
        body=text.encode("utf-8") if isinstance(text, str) else None,
    )  # fmt: skip


_KINDS: dict[type, str] = {list: "an array", str: "a string", int: "a number", float: "a number",
                           bool: "true or false", type(None): "null"}  # fmt: skip


def main_origin(entries: list[HarEntry]) -> str | None:
    """The HAR's main origin: the most frequent, the earliest in the file among equally frequent
    ones; None without entries."""
    counts = Counter(entry.origin for entry in entries)  # insertion order: the file's
    return max(counts, key=counts.__getitem__) if counts else None


def read_har(data: bytes, path: str) -> tuple[list[HarEntry], int]:
    """The requests of a HAR file's bytes, in the file's order, and how many entries had none
    (``data:`` and ``blob:`` URLs); :class:`~pounder.UsageError` naming the file when it is not a
    HAR."""
    if len(data) > HAR_LIMIT:
        raise _fail(path, f"larger than the limit of {HAR_LIMIT // MIB} MiB")
    try:
        document: Any = json.loads(data.decode("utf-8-sig"))
    except RecursionError:  # json recurses per level of nesting: [[[[... deeper than it goes
        raise _fail(path, "nested too deeply to be a HAR (a HAR is a few levels deep: log.entries[].request."
                          "headers[])") from None  # fmt: skip
    except ValueError as error:  # not UTF-8, not JSON, an integer longer than Python converts
        reason = getattr(error, "msg", None) or str(error).split(":")[0]
        raise _fail(path, f"not valid JSON ({reason})") from None
    if not isinstance(document, dict):
        raise UsageError(f"{path} is JSON but not a HAR: {_KINDS.get(type(document), 'a value')}, not an object "
                         "with log.entries")  # fmt: skip
    log = document.get("log")
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise UsageError(f"{path} is JSON but not a HAR: no log.entries list")
    found = [_entry(entry, path, number) for number, entry in enumerate(entries, start=1)]
    kept = [entry for entry in found if entry is not None]
    return kept, len(found) - len(kept)
