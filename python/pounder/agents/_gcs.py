"""Whether a Ray head answers at an address, asked the way its GCS speaks (gRPC over HTTP/2),
before ``ray.init`` would retry for minutes."""

from __future__ import annotations

from pounder._errors import PounderError
from pounder._probe import first_bytes

_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # + empty SETTINGS
_H2_SETTINGS = 0x04


def probe_gcs(host: str, port: int, address: str, timeout_s: float) -> None:
    """A Ray head's GCS answers gRPC, that is HTTP/2: sent the client preface, it answers with a
    SETTINGS frame. Anything else (refused, an HTTP/1 server, silence) is said at once, where
    ``ray.init`` would retry for minutes."""
    try:
        head = first_bytes(host, port, _H2_PREFACE, 9, timeout_s)
    except TimeoutError:
        raise PounderError(f"no Ray cluster at {address}: something listens there but did not answer as Ray's GCS "
                           f"(gRPC) within {timeout_s:g} s") from None
    except OSError as error:
        raise PounderError(f"no Ray cluster at {address}: {error.strerror or error}") from None
    if len(head) == 9 and head[3] == _H2_SETTINGS:
        return
    said = f"an HTTP/1 server answers there ({head[:12].decode('latin-1')!r}...)" if head.startswith(b"HTTP/") \
        else "what answers there is not Ray's GCS (gRPC)"
    raise PounderError(f"no Ray cluster at {address}: {said}; --ray takes the head's GCS address (ray start "
                       "--head prints it, port 6379 by default)")
