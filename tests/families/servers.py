#!/usr/bin/env python3
"""Hostile (and a few well-behaved) HTTP servers for tests/families/run.py.

Stdlib only, raw sockets, one thread per connection, listening on 127.0.0.1 (or ::1 with --ipv6)
on a free port (or --port):

    python3 tests/families/servers.py --mode MODE [--port N] [--count-file F] [--tag TAG]

Once listening it prints ``READY <port>`` on stdout. ``--count-file``: the connections accepted
and the requests read, as JSON, rewritten (tmp + rename) after each. ``--record-file``: the first
request head received. ``--tag``: only there to be seen in the process list (the harness looks
for it to find servers left behind).

Modes:
  ok              200 with a Content-Length body of --body-size bytes (default 13)
  status500       500 with a small body
  prefork         ok, served by --workers forked worker processes (a pre-forking server for
                  `pounder tune command`); --max-requests per worker, 0 = unlimited
  slowloris       reads the request, sends the status line, then one header byte every 0.3 s
  endless_chunked reads the request, then a chunked body that never ends
  endless_header  status line, then one header line that never ends (no CRLF)
  short_cl        Content-Length: 1000, 10 bytes of body, close
  big_body        Content-Length: 100 MB, all of it
  huge_headers    1 MB of header lines, then a small body
  garbage         a garbage status line, the connection kept open
  http09          a body without a status line, then close
  reset           reads the request, then RST (SO_LINGER 0)
  close_now       accepts and closes without reading
  backlog         listen(1) and never accept
  never_read      accepts, never reads, never answers, keeps the connection
  silent          reads the request, never answers
  slow_body       Content-Length: 100, one body byte every 0.5 s
  continue_flood  reads the request, then "100 Continue" interim responses forever
  no_framing      200 without Content-Length or chunking, body, and the connection kept open
  bad_cl          Content-Length: 99999999999999999999999, then a few bytes
  dup_cl          two different Content-Length headers
  tls             ok over TLS (--cert, --key; OpenSSL at security level 0, so that an RSA key of 1024
                  bits loads); counts also how each connection that made no request ended:
                  idle_close_notify (TLS closed cleanly), idle_eof (TCP closed without close_notify),
                  tls_failed (its handshake failed)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

MODES = (
    "ok",
    "status500",
    "prefork",
    "slowloris",
    "endless_chunked",
    "endless_header",
    "short_cl",
    "big_body",
    "huge_headers",
    "garbage",
    "http09",
    "reset",
    "close_now",
    "backlog",
    "never_read",
    "silent",
    "slow_body",
    "continue_flood",
    "no_framing",
    "bad_cl",
    "dup_cl",
    "tls",
)

_lock = threading.Lock()
_counts = {"connections": 0, "requests": 0}
_args: argparse.Namespace


def _save_counts() -> None:
    if not _args.count_file:
        return
    tmp = f"{_args.count_file}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(_counts, f)
    os.replace(tmp, _args.count_file)


def _count(key: str) -> None:
    with _lock:
        _counts[key] = _counts.get(key, 0) + 1
        _save_counts()


def read_request(conn: socket.socket, buf: bytearray) -> tuple[bool, bool]:
    """Read one request head (and a Content-Length body) into nothing; (got one, wants close)."""
    while b"\r\n\r\n" not in buf:
        try:
            data = conn.recv(65536)
        except OSError:
            return False, True
        if not data:
            return False, True
        buf += data
        if len(buf) > (1 << 22):
            return False, True
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    buf[:] = rest
    if _args.record_file and not os.path.exists(_args.record_file):
        with open(_args.record_file, "wb") as f:
            f.write(head)
    length = 0
    close = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                length = 0
        if name.strip().lower() == b"connection" and b"close" in value.lower():
            close = True
    while len(buf) < length:
        try:
            data = conn.recv(65536)
        except OSError:
            return False, True
        if not data:
            return False, True
        buf += data
    del buf[:length]
    _count("requests")
    return True, close


def ok_response(status: str, body: bytes, close: bool) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nContent-Type: text/plain\r\n"
    if close:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + body


def send_forever(conn: socket.socket, piece: bytes, pause: float = 0.0) -> None:
    try:
        while True:
            conn.sendall(piece)
            if pause:
                time.sleep(pause)
    except OSError:
        pass


def hold(conn: socket.socket) -> None:
    """Keep the connection until the client goes (or forever)."""
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def handle(conn: socket.socket, mode: str) -> None:
    buf = bytearray()
    try:
        if mode == "close_now":
            return
        if mode == "never_read":
            time.sleep(3600)
            return
        if mode in ("ok", "status500", "prefork"):
            body = b"x" * _args.body_size if mode != "status500" else b"error\n"
            if _args.body is not None and mode != "status500":
                body = _args.body.encode().decode("unicode_escape").encode("latin-1")
            status = "200 OK" if mode != "status500" else "500 Internal Server Error"
            while True:
                got, close = read_request(conn, buf)
                if not got:
                    return
                if _args.delay_ms:
                    time.sleep(_args.delay_ms / 1000)
                conn.sendall(ok_response(status, body, close))
                if close:
                    return
        got, _ = read_request(conn, buf)
        if not got:
            return
        if mode == "slowloris":
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            send_forever(conn, b"X", 0.3)
        elif mode == "endless_chunked":
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            send_forever(conn, b"4000\r\n" + b"c" * 0x4000 + b"\r\n")
        elif mode == "endless_header":
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Endless: ")
            send_forever(conn, b"h" * 4096)
        elif mode == "short_cl":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"s" * 10)
        elif mode == "big_body":
            size = 100 * 1000 * 1000
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode())
            piece = b"b" * (1 << 18)
            left = size
            while left > 0:
                n = min(left, len(piece))
                conn.sendall(piece[:n])
                left -= n
            hold(conn)
        elif mode == "huge_headers":
            lines = b"".join(b"X-Big-%06d: %s\r\n" % (i, b"v" * 1000) for i in range(1024))
            conn.sendall(b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 2\r\n\r\nok")
            hold(conn)
        elif mode == "garbage":
            conn.sendall(b"\x00\xffGARBAGE 9x9 what\r\nnot: a header\r\n\r\n")
            hold(conn)
        elif mode == "http09":
            conn.sendall(b"hello from 1991\n")
        elif mode == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif mode == "silent":
            hold(conn)
        elif mode == "slow_body":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
            send_forever(conn, b"z", 0.5)
        elif mode == "continue_flood":
            send_forever(conn, b"HTTP/1.1 100 Continue\r\n\r\n" * 64)
        elif mode == "no_framing":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody without an end")
            hold(conn)
        elif mode == "bad_cl":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nabc")
            hold(conn)
        elif mode == "dup_cl":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nokabc")
            hold(conn)
    except OSError:
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def handle_tls(conn: socket.socket) -> None:
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    context.load_cert_chain(_args.cert, _args.key)
    conn.settimeout(30)
    try:
        # an EOF without close_notify is an error (SSLEOFError), not an empty read
        tls = context.wrap_socket(conn, server_side=True, suppress_ragged_eofs=False)
    except (ssl.SSLError, OSError):
        _count("tls_failed")
        conn.close()
        return
    buf, requests, end = b"", 0, "idle_eof"
    try:
        while True:
            data = tls.recv(65536)
            if not data:
                end = "idle_close_notify"
                break
            buf += data
            while b"\r\n\r\n" in buf:
                _, _, buf = buf.partition(b"\r\n\r\n")
                requests += 1
                _count("requests")
                tls.sendall(ok_response("200 OK", b"x" * _args.body_size, False))
    except OSError:
        pass
    finally:
        conn.close()
    if requests == 0:
        _count(end)


def serve(listener: socket.socket, mode: str) -> None:
    while True:
        conn, _ = listener.accept()
        _count("connections")
        target = handle_tls if mode == "tls" else handle
        threading.Thread(target=target, args=(conn,) if mode == "tls" else (conn, mode), daemon=True).start()


def prefork(listener: socket.socket) -> None:
    """A parent that forks --workers workers, each serving one connection at a time; a worker
    exits after --max-requests requests (0: never) and is replaced; SIGTERM stops all."""
    workers: set[int] = set()
    stopping = [False]

    def worker() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        parent = os.getppid()
        served = 0
        listener.settimeout(1.0)
        while True:
            if os.getppid() != parent:
                os._exit(0)
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                os._exit(0)
            conn.settimeout(None)
            buf = bytearray()
            while True:
                got, close = read_request(conn, buf)
                if not got:
                    break
                served += 1
                try:
                    conn.sendall(ok_response("200 OK", b"x" * _args.body_size, close))
                except OSError:
                    break
                if close or (_args.max_requests and served >= _args.max_requests):
                    break
            conn.close()
            if _args.max_requests and served >= _args.max_requests:
                os._exit(0)

    def spawn() -> None:
        pid = os.fork()
        if pid == 0:
            try:
                worker()
            finally:
                os._exit(0)
        workers.add(pid)

    def stop(signum: int, frame: object) -> None:
        stopping[0] = True
        for pid in list(workers):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for _ in range(_args.workers):
        spawn()
    while not stopping[0]:
        try:
            pid, _status = os.wait()
        except ChildProcessError:
            time.sleep(0.1)
            continue
        workers.discard(pid)
        if not stopping[0]:
            spawn()


def main() -> None:
    global _args
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=MODES, default="ok")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--ipv6", action="store_true")
    parser.add_argument("--count-file")
    parser.add_argument("--tag", default="")
    parser.add_argument("--body-size", type=int, default=13)
    parser.add_argument("--body", help="ok, prefork: this body (backslash escapes: \\n) instead of --body-size x's")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="ok, status500, prefork: wait before each answer")
    parser.add_argument("--record-file", help="the first request head received is written here")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-requests", type=int, default=0)
    parser.add_argument("--cert", help="tls: the server's certificate (PEM)")
    parser.add_argument("--key", help="tls: its key (PEM)")
    _args = parser.parse_args()
    family = socket.AF_INET6 if _args.ipv6 else socket.AF_INET
    host = "::1" if _args.ipv6 else _args.host
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if _args.ipv6:
        listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    try:
        listener.bind((host, _args.port))
    except OSError as error:
        print(f"servers.py: cannot listen on {host} port {_args.port}: {error.strerror}", file=sys.stderr)
        sys.exit(1)
    listener.listen(1 if _args.mode == "backlog" else 1024)
    _save_counts()
    print(f"READY {listener.getsockname()[1]}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if _args.mode == "backlog":
        # fill the queue ourselves too, so that the client's connects find it full
        fillers = []
        for _ in range(8):
            s = socket.socket(family, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect((host, listener.getsockname()[1]))
            except OSError:
                pass
            fillers.append(s)
        while True:
            time.sleep(3600)
    if _args.mode == "prefork":
        prefork(listener)
        return
    serve(listener, _args.mode)


if __name__ == "__main__":
    main()
