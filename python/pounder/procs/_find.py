"""Finding a server: its root process (the parent) from a pid, a pid file or a name, and its
process tree (children and deeper descendants) at any later instant."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import psutil

from pounder._errors import PounderError, UsageError, check_path, check_text, public
from pounder._files import read_input
from pounder.procs._read import Role, display_name
from pounder.servers import owns_listener

_PIDFILE_MAX_BYTES = 4096
_STALE = " (stale pid file?)"


class ServerGone(PounderError):
    """The server's root process has exited (or its pid now belongs to another process)."""


@public
@dataclass(frozen=True)
class TreeMember:
    """One process of a server's tree: ``role`` is "parent" for the root, "child" for its direct
    children and "grandchild" for anything deeper."""

    pid: int
    ppid: int
    role: Role
    name: str


@public
@dataclass(frozen=True)
class ServerTarget:
    """A server found by :func:`find_server`: the root process and its tree at that instant.

    ``members`` lists the root first, then its descendants depth first (children by pid, each
    followed by its own descendants). Children come and go; :func:`discover` lists them again.
    """

    pid: int
    name: str
    cmdline: str
    create_time: float
    found_by: str
    members: tuple[TreeMember, ...]

    @property
    def children(self) -> tuple[TreeMember, ...]:
        return tuple(member for member in self.members if member.role == "child")


@public
def read_pidfile(path: str | os.PathLike[str]) -> int:
    """The pid in a pid file (``1234`` plus optional whitespace, as Apache, gunicorn and Starman
    write them). Raises :class:`~pounder.UsageError` naming the file when it is missing,
    unreadable or does not hold a pid."""
    where = str(check_path(path, "pidfile"))
    data = read_input(path, "pidfile", limit=_PIDFILE_MAX_BYTES, missing="pidfile {path} does not exist",
                      directory="pidfile {path} is a directory")
    text = data.decode("utf-8", "replace").strip()
    if len(data) > _PIDFILE_MAX_BYTES or not text.isascii() or not text.isdigit() or int(text) <= 0:
        shown = text if len(text) <= 40 else text[:37] + "..."
        hint = "it is empty" if not text else f"got {shown!r}"
        raise UsageError(f"pidfile {where} does not contain a process id ({hint})")
    return int(text)


def _process(pid: int, what: str) -> psutil.Process:
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            raise UsageError(f"{what}process {pid} has exited (zombie)")
    except psutil.NoSuchProcess:
        raise UsageError(f"{what}no process with pid {pid}{_STALE if what else ''}") from None
    return proc


def _ppid_map() -> dict[int, tuple[int, str]]:
    """pid → (ppid, name) of every process, from one pass over /proc."""
    table: dict[int, tuple[int, str]] = {}
    for proc in psutil.process_iter(["ppid", "name"]):
        ppid = proc.info.get("ppid")
        if isinstance(ppid, int):
            table[proc.pid] = (ppid, str(proc.info.get("name") or ""))
    return table


def _tree(root: int, root_ppid: int, root_name: str, descendants: Iterable[psutil.Process]) -> tuple[TreeMember, ...]:
    """Order the descendants depth first (children by pid, each followed by its own descendants)
    and give them their roles. One that exits while being listed is left out."""
    parent_of: dict[int, tuple[int, str]] = {}
    for proc in descendants:
        try:
            with proc.oneshot():
                parent_of[proc.pid] = (proc.ppid(), proc.name())
        except psutil.NoSuchProcess:
            continue
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in parent_of.items():
        kids.setdefault(ppid, []).append(pid)
    members = [TreeMember(root, root_ppid, "parent", root_name)]
    stack = [(pid, 1) for pid in sorted(kids.get(root, ()), reverse=True)]
    seen = {root}
    while stack:  # a set guards against a (theoretical) cycle
        pid, depth = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        ppid, name = parent_of[pid]
        members.append(TreeMember(pid, ppid, "child" if depth == 1 else "grandchild", name))
        stack.extend((kid, depth + 1) for kid in sorted(kids.get(pid, ()), reverse=True))
    return tuple(members)


def check_target(target: object, what: str) -> ServerTarget | int:
    """A :class:`ServerTarget` or a positive pid; :class:`~pounder.UsageError` for anything else."""
    if isinstance(target, ServerTarget):
        return target
    if isinstance(target, bool) or not isinstance(target, int) or target <= 0:
        raise UsageError(f"{what} must be a ServerTarget (from find_server) or a positive pid, not {target!r}")
    return target


@public
def discover(target: ServerTarget | int) -> tuple[TreeMember, ...]:
    """The server's tree now: root first, then every descendant with its role.

    Raises :class:`ServerGone` when the root has exited (or its pid was reused)."""
    check_target(target, "discover: target")
    pid = target.pid if isinstance(target, ServerTarget) else target
    try:
        root = psutil.Process(pid)
        with root.oneshot():
            zombie = root.status() == psutil.STATUS_ZOMBIE
            name = display_name(root).strip()  # "/usr/sbin/apach" is apache2; Starman's "starman master "
            ppid = root.ppid()
            create_time = root.create_time()
        descendants = root.children(recursive=True)
    except psutil.NoSuchProcess:
        raise ServerGone(f"the server process {pid} has exited") from None
    if zombie:
        raise ServerGone(f"the server process {pid} has exited")
    if isinstance(target, ServerTarget) and abs(create_time - target.create_time) > 0.5:
        raise ServerGone(f"the server process {pid} has exited (the pid now belongs to another process)")
    return _tree(pid, ppid, name, descendants)


def _ancestors(pid: int, table: dict[int, tuple[int, str]]) -> set[int]:
    found: set[int] = set()
    while pid in table and pid not in found:
        found.add(pid)
        pid = table[pid][0]
    return found


def _matches(text: str, exclude: set[int]) -> Iterable[int]:
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.pid in exclude:
            continue
        name = str(proc.info.get("name") or "")
        cmdline = " ".join(proc.info.get("cmdline") or ())
        if text in name or text in cmdline:
            yield proc.pid


MEM_OPTIONS = ("--pid", "--pidfile", "--name")
"""The old spellings of ``pounder mem``'s --server-* options, still accepted (hidden)."""
SERVER_OPTIONS = ("--server-pid", "--server-pidfile", "--server-name")


def _by_name(text: str, options: tuple[str, str, str]) -> int:
    pid_option, _, name_option = options
    if not text.strip():
        raise UsageError(f"{name_option} must not be empty")
    table = _ppid_map()
    # pounder itself (and the shell or runner that started it) may have the text on its command line
    me = _ancestors(os.getpid(), table)
    matched = set(_matches(text, me))
    roots = sorted(pid for pid in matched if not (_ancestors(table.get(pid, (0, ""))[0], table) & matched))
    if not roots:
        raise UsageError(f"no process matches {name_option} {text!r}")
    if len(roots) > 1:
        listed = ", ".join(str(pid) for pid in roots[:20]) + (", ..." if len(roots) > 20 else "")
        raise UsageError(
            f"{name_option} {text!r} matches {len(roots)} separate process trees (pids {listed}); pick one with "
            f"{pid_option}"
        )
    return roots[0]


@public
def find_server(
    *, pid: int | None = None, pidfile: str | os.PathLike[str] | None = None, name: str | None = None,
    options: tuple[str, str, str] = MEM_OPTIONS,
) -> ServerTarget:
    """Find a server's root process and its tree. Give exactly one of:

    * ``pid``: the parent's pid;
    * ``pidfile``: a file holding it (Apache's PidFile, gunicorn ``--pid``, Starman ``--pid``);
    * ``name``: a substring of the process name or command line; among the matching processes
      the top-most ones are kept (a worker whose parent matches too is part of that parent's
      tree). Several independent trees is an error listing their pids.

    Raises :class:`~pounder.UsageError` (one line) when nothing matches or the input is bad; its
    messages name the three ways as ``options`` (:data:`MEM_OPTIONS`, or :data:`SERVER_OPTIONS`
    for the commands that load a server).
    """
    check_path(pidfile, options[1], optional=True)
    check_text(name, options[2], optional=True)
    given = [what for what, value in zip(options, (pid, pidfile, name), strict=True) if value is not None]
    if len(given) != 1:
        got = f" (got {', '.join(given)})" if given else ""
        raise UsageError(f"give exactly one of {options[0]}, {options[1]} and {options[2]}{got}")
    if pid is not None:
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            raise UsageError(f"{options[0]} must be a positive process id, got {pid!r}")
        root_pid, what, found_by = pid, "", f"pid {pid}"
    elif pidfile is not None:
        root_pid = read_pidfile(pidfile)
        what, found_by = f"pidfile {pidfile}: ", f"pidfile {pidfile}"
    else:
        assert name is not None
        root_pid, what, found_by = _by_name(name, options), "", f"name {name!r}"
    proc = _process(root_pid, what)
    try:
        with proc.oneshot():
            proc_name = proc.name()
            create_time = proc.create_time()
            try:
                cmdline = " ".join(proc.cmdline())
            except psutil.AccessDenied:
                cmdline = ""
    except psutil.NoSuchProcess:
        raise UsageError(f"{what}no process with pid {root_pid}{_STALE if what else ''}") from None
    target = ServerTarget(root_pid, proc_name, cmdline, create_time, found_by, ())
    try:
        members = discover(target)
    except ServerGone:
        raise UsageError(f"{what}no process with pid {root_pid}{_STALE if what else ''}") from None
    return ServerTarget(root_pid, proc_name, cmdline, create_time, found_by, members)


@public
def serves(target: ServerTarget, connect: str) -> bool | None:
    """Whether the server's root or one of its children listens on ``connect`` ("ip:port",
    "[ip6]:port"), the address a URL's requests go to: True, False, or None when it cannot be told
    (a Unix socket; no descriptor can be read, e.g. another user's server without root). Deeper
    descendants do not count: every process is a descendant of pid 1, and a server found under a
    shell is not the shell."""
    if connect.startswith("unix:"):
        return None
    host, _, port = connect.rpartition(":")
    members = [member.pid for member in target.members if member.role != "grandchild"]
    if any(owns_listener(pid, int(port), host) for pid in members):
        return True
    if not any(os.access(f"/proc/{pid}/fd", os.R_OK) for pid in members):
        return None
    return False
