#!/usr/bin/env python3
"""Misbehaving / known-latency HTTP/1.1 test server for pounder's tests.

Stdlib only, raw sockets, one daemon thread per connection, so every byte on the wire is under
our control (http.server would normalise exactly the things we want to break).

    python tests/support/testserver.py --port 0 --mode MODE [options]
    python tests/support/testserver.py --unix /tmp/x.sock --mode MODE [options]

Once listening it prints exactly one line, ``READY <port-or-path>``, to stdout. It exits with
status 0 on SIGTERM/SIGINT or after ``--max-lifetime`` seconds.

Every complete request received (request line + headers + body) is counted before it is answered;
with ``--count-file`` the counts are written there as JSON ``{"requests": n, "connections": n,
"by_request": {"METHOD /target": n, ...}}``
(atomically: tmp file + os.replace) at startup, after every request/accepted connection and on exit.

Modes (see ``MODES`` / the ``mode_*`` functions below for the exact bytes):
  ok          200 with Content-Length; ``/status/NNN`` answers status NNN
  chunked     Transfer-Encoding: chunked, varied chunk sizes, a chunk extension and a trailer
  close       no Content-Length, no chunking: body then close (read-until-close framing)
  freeze      like ok, but all responses are held during freeze windows
              [k*every, k*every + freeze) for k >= 1, measured from server start
  reset       read the request, then RST the connection (SO_LINGER 0) without answering
              (a plain close on a Unix socket)
  malformed   garbage status line
  bigheaders  valid response with > 64 KiB of headers
  truncated   Content-Length: 1000 but only 500 body bytes, then close
  badchunk    chunked response with a non-hex chunk size line, then close
  midclose    part of the status line/headers, then close
  silent      read the request, never answer, keep the connection until the client goes
  slowbody    headers, then the body in 1 KiB pieces, each preceded by --piece-delay-ms
  echo        200, JSON body describing the request as received

``--delay-ms`` is applied before every response in every mode except silent (in freeze mode it
is combined with the freeze windows, see ``freeze_wait``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import stat
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

MODES = (
    "ok", "chunked", "close", "freeze", "reset", "malformed", "bigheaders",
    "truncated", "badchunk", "midclose", "silent", "slowbody", "echo",
)

BASE_BODY = b"hello, world\n"
MAX_REQUEST_HEAD = 1 << 20  # a request head larger than this is rejected with 400
RECV_SIZE = 65536
PIECE_SIZE = 1024  # slowbody piece size

MALFORMED_RESPONSE = b"HTXP/1.1 2x0 Broken\r\nContent-Length: 2\r\n\r\nok"
MIDCLOSE_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Le"
BADCHUNK_BODY = b"zz\r\nhello\r\n"
TRUNCATED_DECLARED = 1000
TRUNCATED_SENT = 500
BIGHEADERS_COUNT = 100
BIGHEADERS_LINE = 1024  # bytes per header line, CRLF included
CHUNK_SIZES = (5, 1, 26, 300, 4096, 7, 1000)  # cycled when chunking a body
TRAILER_NAME = "X-Pounder-Trailer"
NO_BODY_STATUSES = (204, 304)
REDIRECT_STATUSES = (301, 302, 303, 307, 308)


def make_body(size: int) -> bytes:
    """``size`` bytes of BASE_BODY repeated (exactly BASE_BODY for the default 13)."""
    reps = size // len(BASE_BODY) + 1
    return (BASE_BODY * reps)[:size]


# --------------------------------------------------------------------------- request parsing


class ConnectionDone(Exception):
    """The peer went away (or sent something we can't parse): end the connection quietly."""


class BadRequest(Exception):
    """Unparseable request: answer 400 and close."""


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]  # as received, case preserved
    body: bytes

    def header(self, name: str) -> str | None:
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def connection_tokens(self) -> set[str]:
        value = self.header("connection") or ""
        return {t.strip().lower() for t in value.split(",") if t.strip()}

    @property
    def keep_alive(self) -> bool:
        tokens = self.connection_tokens()
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def is_head(self) -> bool:
        return self.method == "HEAD"


class Reader:
    """Buffered reads from a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def _fill(self) -> bool:
        data = self.sock.recv(RECV_SIZE)
        if not data:
            return False
        self.buf += data
        return True

    def read_head(self) -> bytes | None:
        """The next request head (without the final blank line); None on EOF between requests."""
        while True:
            # RFC 9112 2.2: ignore empty lines received before the request line.
            while self.buf.startswith(b"\r\n"):
                del self.buf[:2]
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                head = bytes(self.buf[:end])
                del self.buf[: end + 4]
                return head
            if len(self.buf) > MAX_REQUEST_HEAD:
                raise BadRequest("request head too large")
            if not self._fill():
                if self.buf:
                    raise ConnectionDone("EOF inside a request head")
                return None

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise ConnectionDone("EOF inside a request body")
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def read_line(self) -> bytes:
        while True:
            end = self.buf.find(b"\r\n")
            if end >= 0:
                line = bytes(self.buf[:end])
                del self.buf[: end + 2]
                return line
            if len(self.buf) > MAX_REQUEST_HEAD:
                raise BadRequest("line too long")
            if not self._fill():
                raise ConnectionDone("EOF inside a chunked request body")

    def read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            line = self.read_line()
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise BadRequest("bad chunk size in request") from None
            if size == 0:
                while self.read_line():  # trailer section, ends with an empty line
                    pass
                return bytes(body)
            body += self.read_exact(size)
            if self.read_exact(2) != b"\r\n":
                raise BadRequest("chunk not followed by CRLF")


def read_request(reader: Reader) -> Request | None:
    """Read one complete request (head + body); None on a clean EOF between requests."""
    head = reader.read_head()
    if head is None:
        return None
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise BadRequest("bad request line")
    method, target, version = (p.decode("latin-1") for p in parts)
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            raise BadRequest("bad header line")
        headers.append((name.decode("latin-1"), value.strip(b" \t").decode("latin-1")))
    req = Request(method, target, version, headers, b"")
    te = req.header("transfer-encoding")
    cl = req.header("content-length")
    if te is not None and "chunked" in te.lower():
        req.body = reader.read_chunked()
    elif cl is not None:
        try:
            length = int(cl)
        except ValueError:
            raise BadRequest("bad Content-Length") from None
        if length < 0:
            raise BadRequest("negative Content-Length")
        req.body = reader.read_exact(length)
    return req


# --------------------------------------------------------------------------- server state


class Stats:
    """Thread-safe request/connection counters, mirrored into the count file."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.requests = 0
        self.connections = 0
        self.by_request: dict[str, int] = {}

    def add_request(self, req: Request) -> None:
        with self.lock:
            self.requests += 1
            key = f"{req.method} {req.target}"
            self.by_request[key] = self.by_request.get(key, 0) + 1
            self.write_locked()

    def add_connection(self) -> None:
        with self.lock:
            self.connections += 1
            self.write_locked()

    def write_locked(self) -> None:
        """Rewrite the count file atomically; caller holds ``self.lock``."""
        if not self.path:
            return
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="ascii") as f:
            json.dump({"requests": self.requests, "connections": self.connections,
                       "by_request": self.by_request}, f)
        os.replace(tmp, self.path)


class Server:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.mode: str = args.mode
        self.delay_s: float = args.delay_ms / 1000.0
        self.freeze_s: float = args.freeze_ms / 1000.0
        self.freeze_every_s: float = args.freeze_every_ms / 1000.0
        self.piece_delay_s: float = args.piece_delay_ms / 1000.0
        self.body = make_body(args.body_size)
        self.stats = Stats(args.count_file)
        self.started = time.monotonic()
        self.handler: Callable[[Conn, Request], bool] = MODE_HANDLERS[self.mode]

    def elapsed(self) -> float:
        return time.monotonic() - self.started


@dataclass
class Conn:
    sock: socket.socket
    reader: Reader
    server: Server

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)


# --------------------------------------------------------------------------- responses


def reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def response_head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason(status)}", "Server: pounder-testserver"]
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def connection_headers(req: Request, keep: bool) -> list[tuple[str, str]]:
    """The Connection header our answer needs: close when closing, keep-alive for HTTP/1.0."""
    if not keep:
        return [("Connection", "close")]
    if req.version == "HTTP/1.0":
        return [("Connection", "keep-alive")]
    return []


def status_for(req: Request) -> int:
    """``/status/NNN`` -> NNN (200..599, else 400); any other path -> 200."""
    prefix = "/status/"
    if not req.path.startswith(prefix):
        return 200
    try:
        status = int(req.path[len(prefix):])
    except ValueError:
        return 400
    return status if 200 <= status <= 599 else 400


def body_for(conn: Conn, status: int) -> tuple[list[tuple[str, str]], bytes | None]:
    """Extra headers and body for a status; body None means the status has no body at all."""
    if status in NO_BODY_STATUSES:
        return [], None
    if status in REDIRECT_STATUSES:
        return [("Location", "/")], b"redirect\n"
    return [("Content-Type", "text/plain")], conn.server.body


def keep_open(conn: Conn, req: Request) -> bool:
    return req.keep_alive


def close_now(conn: Conn) -> bool:
    """Orderly close (FIN); returning False ends the connection loop."""
    try:
        conn.sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    conn.sock.close()
    return False


def mode_ok(conn: Conn, req: Request) -> bool:
    keep = keep_open(conn, req)
    status = status_for(req)
    headers, body = body_for(conn, status)
    if body is not None:
        headers.append(("Content-Length", str(len(body))))
    out = response_head(status, headers + connection_headers(req, keep))
    if body is not None and not req.is_head:
        out += body
    conn.send(out)
    return keep


def chunk_encode(body: bytes) -> bytes:
    """Chunked encoding with varied sizes (CHUNK_SIZES, cycled), a chunk extension on the first
    chunk (``5;foo=bar``), one upper-case size (``1A``) and a trailer after the last chunk."""
    out = bytearray()
    pos = 0
    i = 0
    while pos < len(body):
        n = min(CHUNK_SIZES[i % len(CHUNK_SIZES)], len(body) - pos)
        size = f"{n:X}" if i == 2 else f"{n:x}"
        ext = ";foo=bar" if i == 0 else ""
        out += f"{size}{ext}\r\n".encode("ascii") + body[pos:pos + n] + b"\r\n"
        pos += n
        i += 1
    out += f"0\r\n{TRAILER_NAME}: done\r\n\r\n".encode("ascii")
    return bytes(out)


def mode_chunked(conn: Conn, req: Request) -> bool:
    status = status_for(req)
    headers, body = body_for(conn, status)
    if body is None:
        return mode_ok(conn, req)
    keep = keep_open(conn, req)
    headers += [("Transfer-Encoding", "chunked"), ("Trailer", TRAILER_NAME)]
    out = response_head(status, headers + connection_headers(req, keep))
    if not req.is_head:
        out += chunk_encode(body)
    conn.send(out)
    return keep


def mode_close(conn: Conn, req: Request) -> bool:
    status = status_for(req)
    headers, body = body_for(conn, status)
    out = response_head(status, headers + [("Connection", "close")])
    if body is not None and not req.is_head:
        out += body
    conn.send(out)
    return close_now(conn)


def freeze_window_end(server: Server, t: float) -> float | None:
    """End of the freeze window containing server time ``t``, or None if ``t`` is outside one.
    Windows are [k*every, k*every + freeze) for k >= 1 (none right at startup)."""
    every, length = server.freeze_every_s, server.freeze_s
    if every <= 0 or length <= 0:
        return None
    k = int(t // every)
    if k >= 1 and t - k * every < length:
        return k * every + length
    return None


def freeze_wait(server: Server) -> None:
    """A request arriving in a freeze window waits for its end, then delay-ms; a request whose
    delay is still running when a window starts is held until that window ends."""
    end = freeze_window_end(server, server.elapsed())
    if end is not None:
        time.sleep(max(0.0, end - server.elapsed()))
    if server.delay_s > 0:
        time.sleep(server.delay_s)
    now = server.elapsed()
    end = freeze_window_end(server, now)
    if end is not None:
        time.sleep(max(0.0, end - now))


def mode_freeze(conn: Conn, req: Request) -> bool:
    return mode_ok(conn, req)  # the waiting happens in serve_connection via freeze_wait


def mode_reset(conn: Conn, req: Request) -> bool:
    # SO_LINGER on with a zero timeout: close() sends RST instead of FIN. Unix sockets have no
    # RST: there it is a plain close (the client sees EOF before any response).
    if conn.sock.family != socket.AF_UNIX:
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.sock.close()
    return False


def mode_malformed(conn: Conn, req: Request) -> bool:
    conn.send(MALFORMED_RESPONSE)
    return close_now(conn)


def mode_bigheaders(conn: Conn, req: Request) -> bool:
    keep = keep_open(conn, req)
    body = conn.server.body
    headers: list[tuple[str, str]] = []
    for i in range(BIGHEADERS_COUNT):
        name = f"X-Big-{i:03d}"
        # name + ": " + value + CRLF == BIGHEADERS_LINE bytes
        headers.append((name, "a" * (BIGHEADERS_LINE - len(name) - 4)))
    headers.append(("Content-Length", str(len(body))))
    out = response_head(200, headers + connection_headers(req, keep))
    if not req.is_head:
        out += body
    conn.send(out)
    return keep


def mode_truncated(conn: Conn, req: Request) -> bool:
    out = response_head(200, [("Content-Length", str(TRUNCATED_DECLARED))])
    conn.send(out + make_body(TRUNCATED_SENT))
    return close_now(conn)


def mode_badchunk(conn: Conn, req: Request) -> bool:
    conn.send(response_head(200, [("Transfer-Encoding", "chunked")]) + BADCHUNK_BODY)
    time.sleep(0.1)  # give the client a moment to choke on it before the FIN
    return close_now(conn)


def mode_midclose(conn: Conn, req: Request) -> bool:
    conn.send(MIDCLOSE_RESPONSE)
    return close_now(conn)


def mode_silent(conn: Conn, req: Request) -> bool:
    # Block (no busy loop) discarding anything further until the client closes or resets.
    while conn.sock.recv(RECV_SIZE):
        pass
    return False


def mode_slowbody(conn: Conn, req: Request) -> bool:
    keep = keep_open(conn, req)
    status = status_for(req)
    headers, body = body_for(conn, status)
    if body is not None:
        headers.append(("Content-Length", str(len(body))))
    conn.send(response_head(status, headers + connection_headers(req, keep)))
    if body is not None and not req.is_head:
        for pos in range(0, len(body), PIECE_SIZE):
            time.sleep(conn.server.piece_delay_s)
            conn.send(body[pos:pos + PIECE_SIZE])
    return keep


def mode_echo(conn: Conn, req: Request) -> bool:
    keep = keep_open(conn, req)
    body = json.dumps({
        "method": req.method,
        "path": req.target,
        "version": req.version,
        "headers": [[k, v] for k, v in req.headers],
        "body": req.body.decode("latin-1"),
    }).encode("utf-8")
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    out = response_head(200, headers + connection_headers(req, keep))
    if not req.is_head:
        out += body
    conn.send(out)
    return keep


MODE_HANDLERS: dict[str, Callable[[Conn, Request], bool]] = {
    "ok": mode_ok,
    "chunked": mode_chunked,
    "close": mode_close,
    "freeze": mode_freeze,
    "reset": mode_reset,
    "malformed": mode_malformed,
    "bigheaders": mode_bigheaders,
    "truncated": mode_truncated,
    "badchunk": mode_badchunk,
    "midclose": mode_midclose,
    "silent": mode_silent,
    "slowbody": mode_slowbody,
    "echo": mode_echo,
}
assert set(MODE_HANDLERS) == set(MODES)


# --------------------------------------------------------------------------- connection loop


def serve_connection(sock: socket.socket, server: Server) -> None:
    conn = Conn(sock, Reader(sock), server)
    try:
        if sock.family != socket.AF_UNIX:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                req = read_request(conn.reader)
            except BadRequest:
                conn.send(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                          b"Connection: close\r\n\r\n")
                close_now(conn)
                return
            if req is None:
                return
            server.stats.add_request(req)  # counted before anything is answered
            if server.mode == "freeze":
                freeze_wait(server)
            elif server.mode != "silent" and server.delay_s > 0:
                time.sleep(server.delay_s)
            if not server.handler(conn, req):
                return
    except (OSError, ConnectionDone):
        pass  # client went away / reset: normal for a load generator
    except Exception:  # a bug here: make it visible in the fixture's stderr capture
        traceback.print_exc()
    finally:
        sock.close()


def accept_loop(listener: socket.socket, server: Server) -> None:
    while True:
        try:
            sock, _ = listener.accept()
        except OSError as e:
            if listener.fileno() < 0:
                return  # listener closed: shutting down
            print(f"testserver: accept failed: {e}", file=sys.stderr, flush=True)
            time.sleep(0.01)  # e.g. EMFILE: don't spin
            continue
        server.stats.add_connection()
        threading.Thread(target=serve_connection, args=(sock, server), daemon=True).start()


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Misbehaving HTTP/1.1 test server for pounder.")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", type=int, help="TCP port on 127.0.0.1 (0: pick a free one)")
    where.add_argument("--unix", metavar="PATH", help="listen on this Unix socket instead")
    p.add_argument("--mode", choices=MODES, default="ok")
    p.add_argument("--delay-ms", type=float, default=0.0, help="sleep before each response")
    p.add_argument("--body-size", type=int, default=len(BASE_BODY), help="response body bytes")
    p.add_argument("--freeze-ms", type=float, default=500.0, help="freeze mode: window length")
    p.add_argument("--freeze-every-ms", type=float, default=2000.0,
                   help="freeze mode: period of the windows, from server start")
    p.add_argument("--piece-delay-ms", type=float, default=50.0,
                   help="slowbody mode: sleep before each 1 KiB body piece")
    p.add_argument("--count-file", metavar="PATH", help="JSON request/connection counts")
    p.add_argument("--max-lifetime", type=float, default=300.0,
                   help="exit after this many seconds (safety net)")
    args = p.parse_args(argv)
    if args.body_size < 0:
        p.error("--body-size must be >= 0")
    if args.mode == "freeze" and args.freeze_ms >= args.freeze_every_ms:
        p.error("--freeze-ms must be smaller than --freeze-every-ms")
    return args


def make_listener(args: argparse.Namespace) -> tuple[socket.socket, str]:
    if args.unix:
        try:
            if stat.S_ISSOCK(os.stat(args.unix).st_mode):
                os.unlink(args.unix)  # stale socket from an earlier run
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(args.unix)
        where = args.unix
    else:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", args.port))
        where = str(listener.getsockname()[1])
    listener.listen(socket.SOMAXCONN)
    return listener, where


class Stop(Exception):
    """Raised by the SIGTERM/SIGINT handler in the main thread."""


def on_signal(signum: int, frame: object) -> None:
    raise Stop


def main(argv: list[str] | None = None) -> None:
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    args = parse_args(argv)
    listener: socket.socket | None = None
    server: Server | None = None
    try:
        threading.stack_size(512 * 1024)  # many connections = many threads; keep them small
        server = Server(args)
        listener, where = make_listener(args)
        with server.stats.lock:
            server.stats.write_locked()
        threading.Thread(target=accept_loop, args=(listener, server), daemon=True).start()
        print(f"READY {where}", flush=True)
        time.sleep(args.max_lifetime)  # a signal interrupts this by raising Stop
    except Stop:
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    if server is not None:
        # Keep the stats lock to the end: the final count file is the last word, and no handler
        # thread can be caught half-way through rewriting it by os._exit.
        server.stats.lock.acquire()
        server.stats.write_locked()
    if listener is not None:
        listener.close()
        if args.unix:
            try:
                os.unlink(args.unix)
            except OSError:
                pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # daemon threads may be blocked in recv/sleep: don't wait for them


if __name__ == "__main__":
    main()
