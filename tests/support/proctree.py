"""Process trees for the ``pounder.procs`` tests: a real Python parent that may allocate and
write a block of memory, forks children on command, and makes them burn CPU, grow, rewrite the
block or exit, each child reporting what it did through a pipe (its own ``time.process_time()``).

    trees = TreeFactory()
    tree = trees.start(mb=40)           # parent with 40 MiB written
    kids = tree.spawn(3)                # 3 sleeping children that do not touch the block
    cpu = tree.burn(kids[0], 0.3)       # the child's own process_time() delta, via its pipe
    trees.stop_all()                    # at teardown: every process stopped, also on failure

Children die with the parent (PR_SET_PDEATHSIG); the parent kills and reaps its children on
SIGTERM or ``quit``. Like a server, the parent listens on a free loopback port.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import uuid

import psutil

READY_TIMEOUT_S = 15.0

TREE_SCRIPT = r'''
import ctypes, os, signal, sys, time

MARKER, MODE, MB = sys.argv[1], sys.argv[2], int(sys.argv[3])
PAGE = 4096
data = bytearray(MB << 20)
for i in range(0, len(data), PAGE):
    data[i] = 1
children = {}   # pid -> (command fd to the child, reply fd from the child)
libc = ctypes.CDLL(None, use_errno=True)
# a pre-forking server's shape: the parent listens (on a free loopback port), its children inherit
# the socket; pounder's commands refuse a process that is no server
import socket
LISTENER = socket.socket()
LISTENER.bind(("127.0.0.1", 0))
LISTENER.listen(8)


def die_with_parent():
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:
        os._exit(1)


def burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    return time.process_time() - start


def child_loop(commands, replies, write_data):
    die_with_parent()
    if write_data:
        for i in range(0, len(data), PAGE):
            data[i] = 2
    os.write(replies, b"ready\n")
    reader = os.fdopen(commands, "r")
    hoard = []
    for line in reader:
        word, *args = line.split()
        if word == "burn":
            os.write(replies, f"{burn(float(args[0])):.6f}\n".encode())
        elif word == "burnexit":
            os.write(replies, f"{burn(float(args[0])):.6f}\n".encode())
            os._exit(0)
        elif word == "grow":
            block = bytearray(int(args[0]) << 20)
            for i in range(0, len(block), PAGE):
                block[i] = 3
            hoard.append(block)
            os.write(replies, b"grown\n")
    os._exit(0)


def read_line(fd):
    out = b""
    while not out.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            raise RuntimeError("child closed its pipe")
        out += chunk
    return out.decode().strip()


def fork_child(write_data=False, then=None):
    c_read, c_write = os.pipe()
    r_read, r_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.close(c_write)
            os.close(r_read)
            for other, (cmd, rep) in children.items():
                os.close(cmd)
                os.close(rep)
            if then is not None:
                die_with_parent()
                then(r_write)
                os._exit(0)
            child_loop(c_read, r_write, write_data)
        finally:
            os._exit(1)
    os.close(c_read)
    os.close(r_write)
    children[pid] = (c_write, r_read)
    return pid


def stop_children(*_):
    for pid in list(children):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in list(children):
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    os._exit(0)


signal.signal(signal.SIGTERM, stop_children)


def reply(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def churn():
    alive = 0
    while True:
        pid = os.fork()
        if pid == 0:
            time.sleep(0.002)
            os._exit(0)
        alive += 1
        while alive:
            done, _ = os.waitpid(-1, os.WNOHANG if alive < 20 else 0)
            if not done:
                break
            alive -= 1


if MODE == "churn":
    reply("READY")
    churn()

reply("READY")
for line in sys.stdin:
    word, *args = line.split()
    if word == "spawn":
        pids = [fork_child(write_data=args[1:] == ["write"]) for _ in range(int(args[0]))]
        for pid in pids:
            read_line(children[pid][1])
        reply("OK " + " ".join(map(str, pids)))
    elif word in ("burn", "burnexit", "grow"):
        pid = int(args[0])
        os.write(children[pid][0], f"{word} {args[1]}\n".encode())
        answer = read_line(children[pid][1])
        if word == "burnexit":
            os.waitpid(pid, 0)
            os.close(children[pid][0])
            os.close(children[pid][1])
            del children[pid]
        reply("OK " + answer)
    elif word == "spawnburn":
        seconds, stay = float(args[0]), args[1] == "stay"

        def work(replies, seconds=seconds, stay=stay):
            burn(seconds)
            os.write(replies, f"{time.process_time():.6f}\n".encode())
            if stay:
                while True:
                    time.sleep(3600)

        pid = fork_child(then=work)
        answer = read_line(children[pid][1])
        if not stay:
            os.waitpid(pid, 0)
            os.close(children[pid][0])
            os.close(children[pid][1])
            del children[pid]
        reply(f"OK {pid} {answer}")
    elif word == "cpu":
        reply(f"OK {time.process_time():.6f}")
    elif word == "quit":
        stop_children()
'''


class Tree:
    """One running tree (the parent's Popen plus the children it reported)."""

    def __init__(self, proc: subprocess.Popen[str], marker: str) -> None:
        self.proc = proc
        self.marker = marker
        self.children: list[int] = []
        self._started: dict[int, float] = {}  # pid -> start time, so teardown never kills a reused pid

    @property
    def pid(self) -> int:
        return self.proc.pid

    def command(self, line: str, timeout_s: float = 15.0) -> list[str]:
        """Send one command, return the words of the ``OK ...`` reply after ``OK``."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = _read_line(self.proc, timeout_s)
        if not answer.startswith("OK"):
            raise RuntimeError(f"tree answered {answer!r} to {line!r}")
        return answer.split()[1:]

    def _remember(self, pid: int) -> None:
        self.children.append(pid)
        try:
            self._started[pid] = psutil.Process(pid).create_time()
        except psutil.NoSuchProcess:
            pass

    def spawn(self, count: int, write: bool = False) -> list[int]:
        pids = [int(pid) for pid in self.command(f"spawn {count}" + (" write" if write else ""))]
        for pid in pids:
            self._remember(pid)
        return pids

    def burn(self, pid: int, seconds: float, exit_after: bool = False) -> float:
        """The child burns ``seconds`` of CPU; returns its own process_time() delta."""
        return float(self.command(f"{'burnexit' if exit_after else 'burn'} {pid} {seconds}")[0])

    def spawn_burn(self, seconds: float, stay: bool) -> tuple[int, float]:
        """A new child burns and reports its whole process_time(); it stays or exits (reaped)."""
        pid, cpu = self.command(f"spawnburn {seconds} {'stay' if stay else 'exit'}")
        if stay:
            self._remember(int(pid))
        return int(pid), float(cpu)

    def grow(self, pid: int, mib: int) -> None:
        self.command(f"grow {pid} {mib}")

    def parent_cpu(self) -> float:
        return float(self.command("cpu")[0])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid, started in self._started.items():  # normally gone already (the parent or PDEATHSIG)
            try:
                if psutil.Process(pid).create_time() == started:
                    os.kill(pid, signal.SIGKILL)
            except (psutil.NoSuchProcess, ProcessLookupError):
                pass
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


def _read_line(proc: subprocess.Popen[str], timeout_s: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    if not ready:
        raise TimeoutError(f"no answer from the test tree within {timeout_s} s")
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"the test tree exited (code {proc.poll()})")
    return line.strip()


class TreeFactory:
    """Starts trees and stops every one of them in :meth:`stop_all`."""

    def __init__(self) -> None:
        self.trees: list[Tree] = []

    def start(self, mb: int = 0, mode: str = "tree", marker: str | None = None,
              pass_fds: tuple[int, ...] = ()) -> Tree:  # fmt: skip
        """``pass_fds``: descriptors the parent (and so every child) inherits, e.g. a listening socket."""
        marker = marker or f"pounder-test-tree-{uuid.uuid4().hex[:12]}"
        proc = subprocess.Popen(
            [sys.executable, "-c", TREE_SCRIPT, marker, mode, str(mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            pass_fds=pass_fds,
        )
        tree = Tree(proc, marker)
        self.trees.append(tree)
        answer = _read_line(proc, READY_TIMEOUT_S)
        if answer != "READY":
            raise RuntimeError(f"test tree did not start: {answer!r}")
        return tree

    def stop_all(self) -> None:
        for tree in self.trees:
            tree.stop()


def wait_gone(pid: int, timeout_s: float = 5.0) -> None:
    """Wait until ``pid`` no longer exists (or is reaped)."""
    deadline = time.monotonic() + timeout_s
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.01)
