"""Where ``--metrics-out`` sends: ``prometheus+http://HOST:PORT/api/v1/write`` (Prometheus
remote-write) or ``otlp+http://HOST:PORT/v1/metrics`` (OTLP/HTTP, protobuf), ``+https`` for TLS;
checked before anything is sent (a host off this machine's loopback needs ``--allow-remote``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pounder._errors import UsageError, public
from pounder.traffic import NotLoopbackError, resolve

Protocol = Literal["prometheus", "otlp"]

DEFAULT_PATHS: dict[Protocol, str] = {"prometheus": "/api/v1/write", "otlp": "/v1/metrics"}
SCHEMES = tuple(f"{protocol}+{scheme}" for protocol in DEFAULT_PATHS for scheme in ("http", "https"))


@public
@dataclass(frozen=True)
class MetricsEndpoint:
    """A checked ``--metrics-out``: the protocol and the http(s) URL the exporter posts to."""

    protocol: Protocol
    url: str

    @property
    def shown(self) -> str:
        """The URL as printed: a password in it (``user:pw@``) shown as ``***``."""
        return shown_url(self.url)


def shown_url(url: str) -> str:
    """``url`` with the password of its user part, if any, shown as ``***`` (it goes to logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.netloc.rpartition('@')[2]}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@public
def parse_metrics_out(text: str, *, allow_remote: bool = False, flag: str = "--metrics-out") -> MetricsEndpoint:
    """``text`` as a :class:`MetricsEndpoint`, or :class:`~pounder.UsageError` in one line: a scheme
    other than :data:`SCHEMES`, no host, a port out of range, a host that is not this machine's
    loopback without ``allow_remote`` (no DNS query is made then)."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"{flag}: give a URL such as prometheus+http://127.0.0.1:9090/api/v1/write")
    parts = urlsplit(text.strip())
    text = shown_url(text.strip())  # what a refusal quotes
    if parts.scheme.lower() not in SCHEMES:
        raise UsageError(f"{flag} {text}: unknown scheme {parts.scheme or '(none)'!r}; use {', '.join(SCHEMES)} "
                         "(prometheus+http://HOST:PORT/api/v1/write, otlp+http://HOST:PORT/v1/metrics)")
    protocol_name, _, scheme = parts.scheme.lower().partition("+")
    protocol: Protocol = "prometheus" if protocol_name == "prometheus" else "otlp"
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise UsageError(f"{flag} {text}: the port is not a number from 1 to 65535") from None
    host = parts.hostname
    if not host:
        raise UsageError(f"{flag} {text}: no host")
    try:
        resolve(host, port, allow_remote=allow_remote)
    except NotLoopbackError as error:
        raise UsageError(f"{flag} {text}: {error.address} is not a loopback address (127.0.0.0/8 or ::1); pass "
                         "--allow-remote to send metrics to another machine") from None
    except UsageError as error:
        raise UsageError(f"{flag} {text}: {error}") from None
    url = urlunsplit((scheme, parts.netloc, parts.path or DEFAULT_PATHS[protocol], parts.query, ""))
    return MetricsEndpoint(protocol=protocol, url=url)
