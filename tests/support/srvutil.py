"""Helpers for the tests of pounder.servers: HTTP GET, process checks, smaps_rollup figures."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil

from pounder.servers import ManagedServer, MemoryCgroup, make_cgroup
from support.leftovers import kill_leftovers, processes_mentioning

MB = 1024 * 1024
REPO = Path(__file__).resolve().parents[2]


def get(url: str, timeout_s: float = 10.0) -> str:
    """The body of a GET (raises on a non-2xx answer)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        assert response.status == 200
        body: bytes = response.read()
    return body.decode()


def fields(body: str) -> dict[str, str]:
    """``"pid 12 bytes 34"`` -> ``{"pid": "12", "bytes": "34"}``."""
    words = body.split()
    return dict(zip(words[0::2], words[1::2], strict=False))


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    return [pid] + [p.pid for p in psutil.Process(pid).children(recursive=True)]


def running(pid: int) -> bool:
    """Exists and is not a zombie (an orphan's zombie waits for init to reap it; it runs nothing)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_not_running(pids: Iterable[int], timeout_s: float = 10.0) -> list[int]:
    """The pids still running after up to ``timeout_s``."""
    pids = list(pids)
    deadline = time.monotonic() + timeout_s
    while True:
        left = [p for p in pids if running(p)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def stop_and_check(server: ManagedServer) -> None:
    """Stop the server; assert that none of its processes exists any more (not even a zombie)."""
    pids = tree(server.pid)
    assert len(pids) > 1, f"no children: {pids}"
    server.stop()
    assert [p for p in pids if psutil.pid_exists(p)] == []
    assert not server.running
    server.stop()  # idempotent


class ManagedServerPool:
    """What every real server's factory fixture yields: ``pool(*args, start=True, timeout_s=..., **kwargs)``
    makes a server with ``make(workdir, *args, **kwargs)`` (started unless ``start=False``), its
    directory ``FOLDER/NAME-N`` (``folder`` given, and no ``workdir=`` in the call) or its own
    temporary one. At teardown (``stop_all``) every server it made is stopped, also when the test
    failed; with ``check_left``, nothing naming ``folder`` may be left running either."""

    def __init__(self, make: Callable[..., ManagedServer], *, folder: Path | None = None, name: str = "server",
                 timeout_s: float = 30.0, check_left: bool = False) -> None:
        self._make = make
        self.folder, self.name, self.timeout_s, self.check_left = folder, name, timeout_s, check_left
        self.servers: list[ManagedServer] = []

    def __call__(self, *args: Any, start: bool = True, timeout_s: float | None = None, **kwargs: Any) -> Any:
        default = None if self.folder is None else self.folder / f"{self.name}-{len(self.servers)}"
        server = self._make(kwargs.pop("workdir", default), *args, **kwargs)
        self.servers.append(server)
        if start:
            server.start(timeout_s=self.timeout_s if timeout_s is None else timeout_s)
        return server

    def stop_all(self) -> None:
        errors = []
        for server in self.servers:
            try:
                server.stop()
            except Exception as error:  # stop the others all the same
                errors.append(error)
        left = []
        if self.check_left and self.folder is not None:
            left = processes_mentioning(str(self.folder))
            kill_leftovers(str(self.folder))
        if errors:
            raise errors[0]
        assert left == [], f"still running after stop: {left}"


def smaps_kb(pid: int) -> dict[str, int]:
    """``/proc/PID/smaps_rollup`` in kB."""
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        out[name] = int(value.split()[0])
    return out


def smaps_bytes(pid: int) -> dict[str, int]:
    """``/proc/PID/smaps_rollup`` in bytes."""
    return {name: kb * 1024 for name, kb in smaps_kb(pid).items()}


def shared_mb(pid: int) -> float:
    m = smaps_kb(pid)
    return (m["Shared_Clean"] + m["Shared_Dirty"]) / 1024


def private_mb(pid: int) -> float:
    m = smaps_kb(pid)
    return (m["Private_Clean"] + m["Private_Dirty"]) / 1024


def _get_at_once(url: str, path: str, count: int, timeout_s: float = 10.0) -> list[str]:
    """``count`` GETs of ``path`` held open together, so that a pre-forking server needs ``count``
    children for them: each request's first line goes out on its own connection before any
    request is finished (a child that accepted one, also behind Apache's deferred accept, waits
    for the rest of it and cannot take another). The bodies, in order; each answer must be 200."""
    parts = urlsplit(url)
    address = (parts.hostname or "127.0.0.1", parts.port or 80)
    sockets = [socket.create_connection(address, timeout=timeout_s) for _ in range(count)]
    try:
        for sock in sockets:
            sock.sendall(f"GET {path} HTTP/1.0\r\n".encode())
        for sock in sockets:
            sock.sendall(b"Host: 127.0.0.1\r\n\r\n")
        bodies = []
        for sock in sockets:
            data = b""
            while chunk := sock.recv(65536):  # HTTP/1.0: the server closes after the answer
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            assert head.split(b" ", 2)[1:2] == [b"200"], head[:200]
            bodies.append(body.decode())
        return bodies
    finally:
        for sock in sockets:
            sock.close()


def warm_every_child(server: ManagedServer, path: str, attempts: int = 20) -> dict[int, str]:
    """GET ``path`` until every current child has answered it at least once; ``{child pid: its
    first answer}``. The answer must start with ``pid N``. Each attempt holds one request per child
    open at once (see ``_get_at_once``): a child that is awake cannot take them all."""
    children = set(server.children())
    answers: dict[int, str] = {}
    for attempt in range(attempts):
        for body in _get_at_once(server.url, path, len(children)):
            answers.setdefault(int(fields(body)["pid"]), body)
        if children <= answers.keys():
            return answers
        time.sleep(min(0.05 * attempt, 0.5))  # a child still loading its application (lazy-apps, a busy machine)
    raise AssertionError(f"children {sorted(children)} not all reached in {attempts} rounds: {sorted(answers)}")


def start_then_sigkill(argv: list[str]) -> list[int]:
    """Run ``argv`` (a Python process that starts a server and prints its pids as a JSON list on its
    first line, then waits), read the pids, and SIGKILL it: the pids, for the caller to check that
    the server went away by itself."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "python"), str(REPO / "tests")])}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, "the starter process printed nothing"
        pids: list[int] = json.loads(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    return pids


def kill_starter_and_check(kind: str, workdir: Path, timeout_s: float = 10.0) -> None:
    """A separate Python process starts a ``kind`` server (see ``_starter``) and is SIGKILLed: the
    server (parent and workers) must go away by itself (PR_SET_PDEATHSIG)."""
    pids = start_then_sigkill([sys.executable, __file__, kind, str(workdir)])
    assert len(pids) > 1
    left = wait_not_running(pids, timeout_s)
    for pid in left:  # do not leave them behind even when failing
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"still running after the starting process was killed: {left}"


def _starter(kind: str, workdir: str) -> None:
    import conftest  # tests/ is on PYTHONPATH

    makers = {"apache": conftest._make_apache, "gunicorn": conftest._make_gunicorn,
              "starman": conftest._make_starman}
    server = makers[kind](workdir=Path(workdir)).start()
    print(json.dumps(tree(server.pid)), flush=True)
    time.sleep(60)


if __name__ == "__main__":
    _starter(sys.argv[1], sys.argv[2])


def cgroup_probe() -> tuple[MemoryCgroup | None, str]:
    """A memory cgroup pounder can make here, made and removed at once (its path and version tell the
    tests where pounder's go), or None with why not: for the tests' skip condition."""
    if os.geteuid() != 0:
        return None, "not root: pounder makes no memory cgroup"
    made, why = make_cgroup()
    if made is not None:
        made.remove()
    return made, why
