"""Reading the log of ``strace -f -o FILE`` (a pure parser, no process handling).

Every line is ``PID  call(args) = result``; with ``-f`` two processes' calls interleave, so a call
that blocks is split in two lines::

    8640  accept4(3,  <unfinished ...>
    8639  read(7, "GET / HTTP/1.0\\r\\n"..., 8000) = 145
    8640  <... accept4 resumed>{sa_family=AF_INET, ...}, [128 => 16], SOCK_CLOEXEC) = 7

Rules (see :func:`parse_strace_log`):

* a call is counted once, when it returns: a complete line, or an ``<unfinished ...>`` line joined
  with its ``<... NAME resumed>`` line of the same pid (the path argument may be on either part);
* a call that never returns within the trace (still blocked when strace detaches, printed as
  ``<detached ...>`` or left unfinished; or cut short by the process's exit) is not counted but
  tallied in ``unfinished``;
* ``--- SIGNAL ... ---`` lines are signals (tallied, not calls), ``+++ exited with N +++`` and
  ``+++ killed by SIG +++`` end a process;
* a call fails when its result names an errno (``= -1 ENOENT (No such file or directory)``,
  ``= ? ERESTARTSYS (...)``); the failures are kept by (call, errno, path) where the call takes a
  path (:data:`PATH_CALLS`: its first string argument), else by (call, errno);
* lines of ``exclude_pids`` (the server's parent) are tallied in ``excluded_calls`` only;
* anything else is tallied in ``unparsed`` (the first such line is kept for messages).

Strings in the log are C-escaped (``\\n``, ``\\"``, ``\\\\``, ``\\x1b``, octal ``\\0``...);
paths are decoded to text (bytes that are not UTF-8 as surrogate escapes, like ``os.fsdecode``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from pounder._errors import public, wrong_type

PATH_CALLS = frozenset(
    {
        # the path is the first argument
        "access", "acct", "chdir", "chmod", "chown", "chown32", "chroot", "creat", "execve", "getxattr",
        "lchown", "lchown32", "lgetxattr", "link", "listxattr", "llistxattr", "lremovexattr", "lsetxattr",
        "lstat", "lstat64", "mkdir", "mknod", "oldlstat", "oldstat", "open", "readlink", "removexattr", "rename",
        "rmdir", "setxattr", "stat", "stat64", "statfs", "statfs64", "swapoff", "swapon", "symlink", "truncate",
        "truncate64", "unlink", "uselib", "utime", "utimes", "mount", "umount", "umount2", "pivot_root",
        # the path follows a directory descriptor (AT_FDCWD or a number)
        "execveat", "faccessat", "faccessat2", "fchmodat", "fchmodat2", "fchownat", "fstatat64", "futimesat",
        "inotify_add_watch", "linkat", "mkdirat", "mknodat", "name_to_handle_at", "newfstatat", "open_tree",
        "openat", "openat2", "readlinkat", "renameat", "renameat2", "statx", "symlinkat", "unlinkat",
        "utimensat",
    }
)  # fmt: skip
"""System calls whose failures are listed with their path: the call's first string argument."""

_LINE = re.compile(r"^(?:(?P<pid>\d+)\s+|\[pid\s+(?P<bpid>\d+)\]\s+)?(?P<body>\S.*?)\s*$")
_CALL = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\(")
_RESUMED = re.compile(r"^<\.\.\. (?P<name>[A-Za-z_][A-Za-z0-9_]*) resumed>\s?")
_RESULT = re.compile(r"^\s*=\s*(?P<result>.*)$")
_CUT_SHORT = re.compile(r"^\s*<unfinished \.\.\.>\)\s*=\s*\?")
_ERRNO = re.compile(r"^(?:-1|\?)\s+(?P<errno>E[A-Z0-9_]+)\b")
_UNFINISHED = re.compile(r"\s*<(?:unfinished|detached) \.\.\.>\s*$")
_HEX = re.compile(r"[0-9a-fA-F]{1,2}")
_OCTAL = re.compile(r"[0-7]{1,3}")
_ESCAPES = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "a": 7, "b": 8, "e": 27, "\\": 92, '"': 34, "'": 39}


@public
@dataclass
class TraceCounts:
    """What a strace log holds, counted (see the module's rules). ``calls`` and ``errors`` by
    system call name; ``failures`` by (name, errno, path or None); ``pids``: the processes that
    made at least one counted call."""

    calls: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    failures: Counter[tuple[str, str, str | None]] = field(default_factory=Counter)
    pids: set[int] = field(default_factory=set)
    exited: set[int] = field(default_factory=set)
    excluded_calls: int = 0
    unfinished: int = 0
    signals: int = 0
    unparsed: int = 0
    first_unparsed: str | None = None

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def succeeded(self, name: str) -> int:
        """Calls of ``name`` that did not fail."""
        return self.calls[name] - self.errors[name]


@public
def decode_c_string(text: str) -> str:
    """The value of a C string literal as strace prints it, without its quotes: ``\\n``,
    ``\\"``, ``\\\\``, ``\\xHH``, octal ``\\NNN``; bytes that are not UTF-8 become surrogate
    escapes (as :func:`os.fsdecode` does)."""
    out = bytearray()
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char != "\\" or index + 1 == length:
            out += char.encode("utf-8", "surrogateescape")
            index += 1
            continue
        nxt = text[index + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            index += 2
        elif nxt == "x" and (hex_digits := _HEX.match(text, index + 2, index + 4)) is not None:
            out.append(int(hex_digits.group(0), 16))
            index = hex_digits.end()
        elif (octal_digits := _OCTAL.match(text, index + 1, index + 4)) is not None:
            out.append(int(octal_digits.group(0), 8) & 0xFF)
            index = octal_digits.end()
        else:  # an unknown escape: keep it as it is
            out += ("\\" + nxt).encode("utf-8", "surrogateescape")
            index += 2
    return out.decode("utf-8", "surrogateescape")


def _close_paren(text: str, depth: int = 1) -> int | None:
    """The index of the ``)`` that brings ``depth`` to 0 (strings and brackets skipped), or None."""
    in_string = False
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0 and char == ")":
                return index
        index += 1
    return None


def first_string_argument(args: str) -> str | None:
    """The decoded first top-level argument that is a string literal (``"..."``), or None."""
    depth = 0
    start_of_arg = True
    index, length = 0, len(args)
    while index < length:
        char = args[index]
        if char == '"':
            end = index + 1
            while end < length and args[end] != '"':
                end += 2 if args[end] == "\\" else 1
            if depth == 0 and start_of_arg:
                return decode_c_string(args[index + 1 : end])
            index = end + 1
            start_of_arg = False
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            start_of_arg = True
            index += 1
            continue
        if not char.isspace():
            start_of_arg = False
        index += 1
    return None


@public
@dataclass(frozen=True)
class Call:
    """One returned system call: its name, argument text, result text, errno (None when it did
    not fail) and path (None when the call takes none, see :data:`PATH_CALLS`)."""

    pid: int
    name: str
    args: str
    result: str
    errno: str | None
    path: str | None


def parse_call(pid: int, name: str, rest: str) -> Call | None:
    """A call from its name and the text after ``name(``, or None when the text does not close
    the call (it is unfinished)."""
    end = _close_paren(rest)
    if end is None:
        return None
    result_match = _RESULT.match(rest[end + 1 :])
    if result_match is None:
        return None
    args = rest[:end]
    result = result_match.group("result").strip()
    errno_match = _ERRNO.match(result)
    path = first_string_argument(args) if name in PATH_CALLS else None
    return Call(pid, name, args, result, errno_match.group("errno") if errno_match else None, path)


@public
class StraceLogParser:
    """Feed it the log line by line (:meth:`feed`), then read :meth:`finish`'s counts."""

    def __init__(self, exclude_pids: Iterable[int] = ()) -> None:
        self.counts = TraceCounts()
        self._exclude = frozenset(exclude_pids)
        self._pending: dict[int, tuple[str, str]] = {}

    def _unparsed(self, line: str) -> None:
        self.counts.unparsed += 1
        if self.counts.first_unparsed is None:
            self.counts.first_unparsed = line

    def _count(self, call: Call) -> None:
        counts = self.counts
        if call.pid in self._exclude:
            counts.excluded_calls += 1
            return
        counts.calls[call.name] += 1
        counts.pids.add(call.pid)
        if call.errno is not None:
            counts.errors[call.name] += 1
            counts.failures[(call.name, call.errno, call.path)] += 1

    def _abandon(self, pid: int) -> None:
        """A call of ``pid`` left unfinished for good (the process went on or exited)."""
        if self._pending.pop(pid, None) is not None:
            self.counts.unfinished += 1

    def _start(self, pid: int, name: str, rest: str, line: str) -> None:
        self._abandon(pid)
        unfinished = _UNFINISHED.search(rest)
        call = parse_call(pid, name, rest)
        if call is not None:
            self._count(call)
        elif unfinished is not None:
            if "<detached" in unfinished.group(0):
                self.counts.unfinished += 1
            else:
                self._pending[pid] = (name, rest[: unfinished.start()])
        else:
            self._unparsed(line)

    def _resume(self, pid: int, name: str, rest: str, line: str) -> None:
        pending = self._pending.pop(pid, None)
        if pending is not None and pending[0] != name:  # not the call it resumes: that one is lost
            self.counts.unfinished += 1
            pending = None
        if _UNFINISHED.fullmatch(rest) or _CUT_SHORT.match(rest):  # detached, or the process exited meanwhile
            self.counts.unfinished += 1
            return
        head = pending[1] if pending is not None else ""
        call = parse_call(pid, name, head + rest)
        if call is None:
            self._unparsed(line)
            self.counts.unfinished += 1
            return
        self._count(call)

    def feed(self, line: str) -> None:
        """Read one line of the log (with or without its line end)."""
        match = _LINE.match(line)
        if match is None:
            if line.strip():
                self._unparsed(line.rstrip("\n"))
            return
        pid = int(match.group("pid") or match.group("bpid") or 0)
        body = match.group("body")
        if body.startswith("--- ") and body.endswith("---"):
            self.counts.signals += 1
            return
        if body.startswith("+++ ") and body.endswith("+++"):
            self._abandon(pid)
            self.counts.exited.add(pid)
            return
        resumed = _RESUMED.match(body)
        if resumed is not None:
            self._resume(pid, resumed.group("name"), body[resumed.end() :], line.rstrip("\n"))
            return
        call_start = _CALL.match(body)
        if call_start is not None:
            self._start(pid, call_start.group("name"), body[call_start.end() :], line.rstrip("\n"))
            return
        self._unparsed(line.rstrip("\n"))

    def finish(self) -> TraceCounts:
        """The counts; calls still unfinished at the end of the log are tallied as such."""
        self.counts.unfinished += len(self._pending)
        self._pending.clear()
        return self.counts


@public
def parse_strace_log(lines: Iterable[str], *, exclude_pids: Iterable[int] = ()) -> TraceCounts:
    """Count the calls of a ``strace -f`` log (an open file or any lines); see the module's rules."""
    if isinstance(lines, (str, bytes)) or not isinstance(lines, Iterable):
        raise wrong_type("parse_strace_log: lines", "an open file or an iterable of lines", lines)
    parser = StraceLogParser(exclude_pids)
    for line in lines:
        parser.feed(line)
    return parser.finish()
