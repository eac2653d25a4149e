"""Parsing of what a human types for a request: header names and values, cookies, credentials,
bodies, URL files. (Rates, stages and warm-ups are the load model's: ``pounder.load``'s ``_model``.)

Every function takes the raw text plus ``what`` (the option's name, used in messages) and raises
:class:`~pounder.UsageError` with one clear line when the text cannot be used.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pounder._errors import UsageError, public, quoted
from pounder._files import read_input

_TOKEN_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL_IN_HEADER = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""What RFC 9110 allows in no field value: control characters but the tab (line breaks, NUL, DEL)."""
LINE_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
"""The methods a URL file's line may name (upper case)."""


@public
@dataclass(frozen=True)
class UrlLine:
    """One URL read from a URL file, with its weight, ``file:line`` for messages and the line's
    own method (``None``: the global ``-m``)."""

    url: str
    weight: int
    where: str
    method: str | None = None


def check_token(name: str, what: str) -> str:
    """An HTTP token (header name, method): returns it, or raises."""
    if not name:
        raise UsageError(f"{what} must not be empty")
    if not _TOKEN_RE.fullmatch(name):
        raise UsageError(f"invalid {what} {quoted(name)}: only letters, digits and !#$%&'*+-.^_`|~ are allowed")
    return name


def _check_header_value(value: str, what: str) -> str:
    found = _CONTROL_IN_HEADER.search(value)
    if found:
        raise UsageError(f"invalid {what}: control characters (line breaks, NUL, {found.group()!r} here) "
                         "are not allowed in a header value")
    return value


def parse_header(text: str, what: str = "-H") -> tuple[str, str]:
    """``"Name: value"`` → ``("Name", "value")``; the value's surrounding spaces are dropped and it
    may be empty."""
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise UsageError(f"invalid {what} {quoted(text)}: expected 'Name: value'")
    if name != name.strip():
        raise UsageError(f"invalid {what} {quoted(text)}: no space allowed before the ':'")
    return check_token(name, f"header name in {what}"), _check_header_value(value.strip(), what)


def parse_cookie(text: str, what: str = "--cookie") -> str:
    """``"name=value"`` (or several, ``"a=1; b=2"``) → the same text, checked."""
    pairs = [pair.strip() for pair in text.split(";") if pair.strip()]
    if not pairs or any("=" not in pair or pair.startswith("=") for pair in pairs):
        raise UsageError(f"invalid {what} {quoted(text)}: expected 'name=value'")
    return _check_header_value("; ".join(pairs), what)


def basic_auth(text: str, what: str = "--auth") -> str:
    """``"user:pass"`` → the ``Authorization`` value ``"Basic dXNlcjpwYXNz"`` (UTF-8)."""
    user, colon, _ = text.partition(":")
    if not colon or not user:
        raise UsageError(f"invalid {what}: expected 'user:password'")
    return "Basic " + base64.b64encode(text.encode("utf-8")).decode("ascii")


def load_body(text: str | bytes, what: str = "--body") -> bytes:
    """``"@file"`` → the file's bytes; any other text → its UTF-8 bytes; bytes are kept as is.
    There is no escape for a literal leading ``@``: put such a body in a file."""
    if isinstance(text, bytes):
        return text
    if text.startswith("@"):
        return read_input(text[1:], f"{what} file")
    return text.encode("utf-8")


def _parse_url_line(line: str, where: str) -> UrlLine:
    fields = line.split()
    weight = 1
    if len(fields) > 1 and fields[0].isdigit() and int(fields[0]) >= 1:
        weight = int(fields.pop(0))
    method = fields.pop(0) if len(fields) == 2 and fields[0] in LINE_METHODS else None
    if len(fields) == 1:
        return UrlLine(fields[0], weight, where, method)
    raise UsageError(f"{where}: expected '[WEIGHT] [METHOD] URL' (WEIGHT a whole number >= 1, METHOD one of "
                     f"{', '.join(LINE_METHODS)}), got {quoted(line)}")


@public
def read_url_file(path: str | Path) -> tuple[UrlLine, ...]:
    """Read a URL file: one URL per line, optionally preceded by a whole weight and a method
    (``3 http://...``, ``HEAD http://...``, ``3 POST http://...``; the method is upper case, one of
    :data:`LINE_METHODS`); blank lines and lines starting with ``#`` are skipped. Errors name
    ``file:line``."""
    path = Path(path)
    raw = read_input(path, "URL file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"URL file {path} is not UTF-8 text ({error.reason})") from None
    lines = (
        _parse_url_line(line.strip(), f"{path}:{number}")
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    )
    urls = tuple(lines)
    if not urls:
        raise UsageError(f"URL file {path} has no URLs (only blank or # comment lines)")
    return urls


@public
def read_url_targets(path: str | Path) -> tuple[tuple[int, str, str], ...]:
    """A URL file as ``(weight, method, path_and_query)`` targets, for a server whose address is
    chosen elsewhere (``pounder tune --urls``): each URL's scheme, host and port are dropped; a
    line without a method is a GET; only GET and HEAD are taken (a body-less replay of other
    methods would measure something else)."""
    targets = []
    for line in read_url_file(path):
        parts = urlsplit(line.url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"{line.where}: {quoted(line.url)} is not an http:// URL")
        method = line.method or "GET"
        if method not in ("GET", "HEAD"):
            raise UsageError(f"{line.where}: {method} is not replayed by tune (GET and HEAD only: no bodies)")
        targets.append((line.weight, method, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")))
    return tuple(targets)
