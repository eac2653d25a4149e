"""The request every connection sends, serialized once per target (:class:`RequestTemplate`).

Method: GET, or POST when there is a body. A header given by the user replaces the header pounder
would generate with the same name (case-insensitive), Host included (virtual hosts, as with wrk,
hey -host, oha, vegeta). The headers that frame the request or the connection are pounder's
alone: ``Content-Length`` (from the body), ``Transfer-Encoding`` (the body is sent with a
Content-Length), ``Connection`` (``keepalive``); as -H they are refused, since a wrong one turns
every request into an error or a stall, measured as if it were the server's. As with curl, a
Content-Type, Authorization or Cookie -H replaces the one -T, -A or --cookie would set.

A URL file's line may name its own method (:meth:`RequestTemplate.for_method`): a GET or HEAD line
sends no body, any other method sends the body of -b (if any), with its Content-Length.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pounder._errors import UsageError, check_str_mapping, check_strings, public
from pounder._version import __version__
from pounder.traffic._parse import basic_auth, check_token, load_body, parse_cookie, parse_header
from pounder.traffic._url import ParsedUrl

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
NO_BODY_METHODS = frozenset({"GET", "HEAD"})
"""A URL file's line with one of these methods sends no body, whatever -b says."""
POUNDER_HEADERS = {
    "content-length": "pounder sets Content-Length from the body (-b/--body)",
    "transfer-encoding": "pounder sends the body (-b/--body) with a Content-Length, never chunked",
    "connection": "keep-alive is set with --no-keepalive",
}
"""The headers pounder alone sets (lower-case name → why), refused as -H."""
_HOST_RE = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=%]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
REDACTED_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})


@public
@dataclass(frozen=True)
class RequestTemplate:
    """Everything of a request except the target-specific request line and Host header."""

    method: str
    body: bytes
    keepalive: bool
    generated: tuple[tuple[str, str], ...]
    """Headers pounder adds after Host, User-Agent and Accept (Cookie, Authorization, Content-Type,
    Content-Length, Connection)."""
    user: tuple[tuple[str, str], ...]
    """-H headers: each replaces a generated header of the same name, the others are added."""

    def for_method(self, method: str | None) -> RequestTemplate:
        """This template for a URL file line's own ``method`` (``None``: as it is): no body for
        GET and HEAD, the body otherwise; Content-Length follows."""
        if method is None:
            return self
        body = b"" if method in NO_BODY_METHODS else self.body
        framing = ("Content-Length", "Connection")
        generated = [pair for pair in self.generated if pair[0] not in framing]
        if body or method in BODY_METHODS:
            generated.append(("Content-Length", str(len(body))))
        if not self.keepalive:
            generated.append(("Connection", "close"))
        return replace(self, method=method, body=body, generated=tuple(generated))

    def render(self, url: ParsedUrl) -> bytes:
        """The complete HTTP/1.1 request for ``url``."""
        generated = [("Host", url.host_header), ("User-Agent", f"pounder/{__version__}"), ("Accept", "*/*")]
        headers = merge_headers(generated, self.user, list(self.generated))
        head = f"{self.method} {url.request_target} HTTP/1.1\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers) + "\r\n"
        return head.encode("utf-8") + self.body


def merge_headers(
    first: list[tuple[str, str]], user: Sequence[tuple[str, str]], last: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """``first`` + the user headers that replace none + ``last``, where a user header replaces
    the generated header of the same name in place."""
    user_by_name: dict[str, list[tuple[str, str]]] = {}
    for name, value in user:
        user_by_name.setdefault(name.lower(), []).append((name, value))

    def replaced(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        merged: list[tuple[str, str]] = []
        for name, value in headers:
            merged.extend(user_by_name.pop(name.lower(), [(name, value)]))
        return merged

    head, tail = replaced(first), replaced(last)
    extra = [pair for pairs in user_by_name.values() for pair in pairs]
    return head + extra + tail


def _user_headers(headers: str | Sequence[str] | Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """A mapping, a list of ``"Name: value"`` strings, or one such string (one header)."""
    if isinstance(headers, Mapping):
        pairs = [parse_header(f"{name}: {value}") for name, value in check_str_mapping(headers, "headers").items()]
    else:
        pairs = [parse_header(text) for text in check_strings(
            headers, "headers", single=True, expected="a mapping, a list of 'Name: value' strings or one such string")]
    for name, _ in pairs:
        refused = POUNDER_HEADERS.get(name.lower())
        if refused:
            raise UsageError(f"-H {name} is not allowed: {refused}")
    hosts = [value for name, value in pairs if name.lower() == "host"]
    if len(hosts) > 1:
        raise UsageError("-H Host is given more than once: a request has one Host header")
    if hosts and not _HOST_RE.fullmatch(hosts[0]):
        raise UsageError(f"invalid -H 'Host: {hosts[0]}': expected HOST or HOST:PORT")
    return tuple(pairs)


@public
def build_request_template(
    *,
    method: str | None,
    body: str | bytes | None,
    content_type: str | None,
    headers: str | Sequence[str] | Mapping[str, str],
    cookies: str | Sequence[str],
    auth: str | None,
    keepalive: bool,
) -> RequestTemplate:
    """Validate the request options into a :class:`RequestTemplate`."""
    payload = load_body(body) if body is not None else b""
    verb = check_token((method if method is not None else "POST" if body is not None else "GET").upper(),
                       "-m/--method")
    if verb == "HEAD" and payload:
        raise UsageError("a HEAD request cannot have a body")
    generated: list[tuple[str, str]] = []
    cookie_texts = check_strings(
        cookies, "cookies", single=True, expected="a list of 'name=value' strings or one such string")
    if cookie_texts:
        generated.append(("Cookie", "; ".join(parse_cookie(cookie) for cookie in cookie_texts)))
    if auth is not None:
        generated.append(("Authorization", basic_auth(auth)))
    if content_type is not None:
        generated.append(parse_header(f"Content-Type: {content_type}", "-T/--content-type"))
    if payload or verb in BODY_METHODS:
        generated.append(("Content-Length", str(len(payload))))
    if not keepalive:
        generated.append(("Connection", "close"))
    return RequestTemplate(verb, payload, keepalive, tuple(generated), _user_headers(headers))


@public
def recorded_headers(template: RequestTemplate) -> tuple[tuple[str, str], ...]:
    """The headers the user asked for, credentials redacted, for the result's options."""
    asked = [pair for pair in template.generated if pair[0] not in ("Content-Length", "Connection")]
    asked += template.user
    return tuple((name, "<redacted>" if name.lower() in REDACTED_HEADERS else value) for name, value in asked)


