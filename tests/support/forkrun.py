"""``python -m pounder ARGS...`` for bad-input tests without paying for the interpreter and the
import of ``pounder.cli`` (~0.7 s of CPU) each time: :func:`run_forked` has the interface and the
result of :func:`support.cliutil.run_pounder` (a CompletedProcess with the real exit status,
stdout and stderr; ``cwd``, ``env``, ``timeout``, ``input`` and ``stdin`` honoured) and runs each
request in a child forked from ONE server process per pytest process.

The server (started lazily, ``python -c`` that reads :data:`SERVER`; its command line names no
``pounder``, so no test that looks for leftover pounder processes sees it) is a fresh interpreter
started by this process with the environment of its first request (its code read from stdin,
then /dev/null there); it notes its
signal dispositions as it starts, imports ``pounder.cli`` once, and then, per request (args, cwd,
env and three file descriptors passed over a unix socket), forks a child that:

- restores the signal dispositions the server started with: those a real ``python -m pounder``
  started by this process would start with (this process's SIG_IGN inherited, anything else
  SIG_DFL; SIGINT Python's KeyboardInterrupt handler unless ignored, SIGPIPE ignored, as any
  interpreter sets them), whatever the import changed;
- chdirs to ``cwd``, replaces ``os.environ`` with ``env``, dup2s the three descriptors onto 0, 1
  and 2, puts ``cwd`` first on sys.path (as ``-m`` does), sets ``sys.argv`` to
  ``[".../pounder/__main__.py", *args]`` and runs ``pounder.__main__.main()``;
- ends as the interpreter does: a SystemExit's int code is the status (None 0, anything else
  printed to stderr and 1), an uncaught exception a traceback on stderr and 1 (KeyboardInterrupt:
  death by SIGINT), atexit handlers run, stdio flushed (a failed flush: 120), then ``os._exit``.

What the interpreter reads from the environment as it starts (``PYTHON*``, ``LANG``, ``LC_*``), a
fork cannot change: requests that differ there go to servers of their own (one for each such
environment: two at most in this suite, with and without :func:`cliutil.with_pythonpath`); one
with ``python``, ``prefix`` or stderr into stdout runs as a real subprocess. Use it only for refusals that happen before
anything starts (the one-line ``pounder: error:`` exit-2 cases), never for signals, servers,
timing or closed pipes. tests/cli/test_forkrun.py shows both give byte-identical results.

The server ends when this process ends (it reads EOF on its socket; PR_SET_PDEATHSIG as well) and
at the end of the session (:func:`stop_server`, from tests/conftest.py); a request over its
timeout kills its child and raises subprocess.TimeoutExpired.
"""

from __future__ import annotations

import json
import locale
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from support import cliutil

SERVER = r'''
import atexit, ctypes, json, os, signal, socket, struct, sys, traceback
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
except Exception:
    pass
SIGNALS = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
STARTED = {}
for s in SIGNALS:
    try:
        STARTED[s] = signal.getsignal(s)
    except (OSError, ValueError):
        pass
import pounder.__main__
import pounder.cli
sock = socket.socket(fileno=int(sys.argv[1]))
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)

def recv_exact(n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data

def child(request, fds):
    for s, handler in STARTED.items():
        try:
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        except (OSError, ValueError, TypeError):
            pass
    sock.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()
    sys.argv = [os.path.join(os.path.dirname(pounder.__main__.__file__), "__main__.py"), *request["args"]]
    code = 0
    try:
        pounder.__main__.main()
    except SystemExit as exit:
        if exit.code is None:
            code = 0
        elif isinstance(exit.code, int):
            code = exit.code
        else:
            try:
                print(exit.code, file=sys.stderr)
            except Exception:
                pass
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            code = 120
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)

while True:
    msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 3)
    if len(msg) < 4:
        break
    size = struct.unpack("!I", msg[:4])[0]
    msg = msg[4:]
    if len(msg) < size:
        msg += recv_exact(size - len(msg)) or b""
    request = json.loads(msg)
    pid = os.fork()
    if pid == 0:
        try:
            child(request, fds)
        finally:
            os._exit(1)
    for fd in fds:
        os.close(fd)
    sock.sendall(struct.pack("!ii", 0, pid))
    _, status = os.waitpid(pid, 0)
    sock.sendall(struct.pack("!ii", 1, os.waitstatus_to_exitcode(status)))
'''

STARTUP_ENV = ("PYTHON", "LANG", "LC_")
"""What the interpreter reads from the environment as it starts: a server for each."""


class _Server:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        mine, theirs = socket.socketpair()
        self.sock = mine
        self.proc = subprocess.Popen([sys.executable, "-c", "import sys;exec(sys.stdin.read())", str(theirs.fileno())],
                                     pass_fds=[theirs.fileno()], env=self.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, cwd=cliutil.PYTHON_DIR)
        theirs.close()
        assert self.proc.stdin is not None
        self.proc.stdin.write(SERVER.encode())  # its code on stdin: its command line names nothing
        self.proc.stdin.close()

    def recv(self) -> tuple[int, int]:
        data = b""
        while len(data) < 8:
            chunk = self.sock.recv(8 - len(data))
            if not chunk:
                raise RuntimeError(f"the fork server ended ({self.proc.poll()})")
            data += chunk
        kind, value = struct.unpack("!ii", data)
        return kind, value

    def stop(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_servers: dict[tuple[tuple[str, str], ...], _Server] = {}
_lock = threading.Lock()


def _startup(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith(STARTUP_ENV)))


def stop_server() -> None:
    """Stop this process's servers, if any was started (the end of the session)."""
    while _servers:
        _servers.popitem()[1].stop()


def server_process(env: Mapping[str, str]) -> subprocess.Popen[bytes] | None:
    """This process's server for requests with ``env``, if it was started."""
    server = _servers.get(_startup(env))
    return None if server is None else server.proc


def _decode(data: bytes) -> str:
    """As subprocess does with ``text=True``."""
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _out_fd(target: Any, kept: list[int]) -> tuple[int, int | None]:
    """(the descriptor the child writes to, the read end of a pipe to collect or None)."""
    if target == subprocess.PIPE:
        read, write = os.pipe()
        kept.append(write)
        return write, read
    if target == subprocess.DEVNULL:
        fd = os.open(os.devnull, os.O_WRONLY)
        kept.append(fd)
        return fd, None
    if target is None:
        return -1, None
    return (target if isinstance(target, int) else target.fileno()), None


def _collect(fd: int | None, into: list[bytes]) -> threading.Thread | None:
    if fd is None:
        return None

    def read() -> None:
        with open(fd, "rb", closefd=True) as f:
            into.append(f.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def run_forked(*args: object, timeout: float, python: object = None, prefix: tuple[str, ...] = (),
               stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE, cwd: object = None,
               env: Mapping[str, str] | None = None, stdin: Any = None, input: str | None = None,
               ) -> subprocess.CompletedProcess[str]:
    """As :func:`cliutil.run_pounder`, in a child forked from this process's server (see above)."""
    argv = cliutil.pounder_argv(*args)
    request_env = dict(os.environ if env is None else env)
    if python is not None or prefix or stderr == subprocess.STDOUT:
        extra: dict[str, Any] = {"cwd": cwd, "env": env}
        if input is not None:
            extra["input"] = input
        elif stdin is not None:
            extra["stdin"] = stdin
        return cliutil.run_pounder(*args, timeout=timeout, python=python, prefix=prefix, stdout=stdout,
                                   stderr=stderr, **extra)
    with _lock:
        server = _servers.get(_startup(request_env))
        if server is None:
            server = _servers[_startup(request_env)] = _Server(request_env)
    kept: list[int] = []
    stdin_fd, stdin_write = 0, None
    if input is not None:
        stdin_fd, stdin_write = os.pipe()
        kept.append(stdin_fd)
    elif stdin == subprocess.DEVNULL:
        stdin_fd = os.open(os.devnull, os.O_RDONLY)
        kept.append(stdin_fd)
    elif stdin is not None:
        stdin_fd = stdin if isinstance(stdin, int) else stdin.fileno()
    out_fd, out_read = _out_fd(stdout, kept)
    err_fd, err_read = _out_fd(stderr, kept)
    fds = [stdin_fd, 1 if out_fd < 0 else out_fd, 2 if err_fd < 0 else err_fd]
    request = json.dumps({"args": argv[3:], "cwd": os.path.abspath(str(cwd if cwd is not None else os.getcwd())),
                          "env": request_env}).encode()
    outs: list[bytes] = []
    errs: list[bytes] = []
    with _lock:
        try:
            socket.send_fds(server.sock, [struct.pack("!I", len(request)) + request], fds)
        finally:
            for fd in kept:
                os.close(fd)
        kind, pid = server.recv()
        readers = [_collect(out_read, outs), _collect(err_read, errs)]
        if stdin_write is not None:
            def feed(fd: int = stdin_write, data: bytes = (input or "").encode()) -> None:
                try:
                    with open(fd, "wb", closefd=True) as f:
                        f.write(data)
                except BrokenPipeError:
                    pass
            threading.Thread(target=feed, daemon=True).start()
        server.sock.settimeout(timeout)
        try:
            kind, status = server.recv()
        except TimeoutError:
            server.sock.settimeout(None)
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
            server.recv()
            raise subprocess.TimeoutExpired(argv, timeout) from None
        finally:
            server.sock.settimeout(None)
    deadline = time.monotonic() + 10
    for thread in readers:
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
    out = _decode(outs[0]) if out_read is not None and outs else None
    err = _decode(errs[0]) if err_read is not None and errs else None
    return subprocess.CompletedProcess(argv, status, out, err)

