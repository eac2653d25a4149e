"""Files pounder writes: output paths checked before a run, atomic writes, file-or-stdout, and the
UTC timestamp every result carries; and the input files the user names (checked, read, TOML parsed)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TextIO

from pounder._errors import PounderError, UsageError
from pounder._units import MIB, size_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

STDOUT = "-"


def utc_timestamp(timespec: Literal["seconds", "milliseconds"] = "milliseconds") -> str:
    """Now in UTC, ISO 8601 with a ``Z``: ``2026-11-23T03:36:41.123Z``."""
    return datetime.now(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")


INPUT_LIMIT = 64 * MIB
"""The largest input file read whole (a body, a URL file) unless a kind names its own."""
RESULT_LIMIT = 256 * MIB
"""The largest result file read back."""
SMALL_LIMIT = 1 * MIB
"""The largest experiment file."""


def check_input_file(path: str | os.PathLike[str], what: str, limit: int = INPUT_LIMIT) -> None:
    """An input file must be a regular file of at most ``limit`` bytes: a FIFO would block the read
    and ``/dev/zero`` would never end it. Raises :class:`~pounder.UsageError` naming the limit. A
    path that cannot be looked at is left to the read, which says why."""
    try:
        info = os.stat(path)
    except OSError:
        return
    if stat.S_ISDIR(info.st_mode):
        return  # each reader has its own words for a directory
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{what} {os.fspath(path)} is not a regular file")
    if info.st_size > limit:
        raise UsageError(f"{what} {os.fspath(path)} is larger than the limit of {size_text(limit)} "
                         f"({size_text(info.st_size)})")


def read_input(path: str | os.PathLike[str], what: str, *, limit: int = INPUT_LIMIT,
               missing: str = "{what} not found: {path}", directory: str = "{what} is a directory: {path}") -> bytes:
    """The bytes of an input file the user named: a regular file of at most ``limit`` bytes
    (:func:`check_input_file`). A missing file, a directory or an unreadable one is a
    :class:`~pounder.UsageError` naming ``what`` and the path (``missing`` and ``directory``: the
    messages for a file that is not there and for a directory)."""
    check_input_file(path, what, limit)
    try:
        with open(path, "rb") as file:
            return file.read(limit + 1)
    except FileNotFoundError:
        raise UsageError(missing.format(what=what, path=path)) from None
    except IsADirectoryError:
        raise UsageError(directory.format(what=what, path=path)) from None
    except OSError as error:
        raise UsageError(f"cannot read {what} {path}: {error.strerror}") from None


def parse_toml(text: str, path: str | os.PathLike[str], kind: str,
               error: type[UsageError] = UsageError) -> dict[str, Any]:  # fmt: skip
    """``text``, the contents of the file ``path``, as TOML. A syntax error is ``error`` with
    ``PATH:LINE: invalid TOML: reason``; nesting too deep for the parser, ``PATH: invalid TOML:
    nested too deeply to be KIND`` (``kind``: "an experiment file", ...)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as decode_error:
        message = str(decode_error)
        where = re.search(r"\(at line (\d+), column \d+\)", message)
        reason = re.sub(r" \(at .*\)$", "", message)
        raise error(f"{os.fspath(path)}:{where[1] if where else 1}: invalid TOML: {reason}") from None
    except RecursionError:  # tomllib recurses per level of nesting ([[[[..., {a={a={...)
        raise error(f"{os.fspath(path)}: invalid TOML: nested too deeply to be {kind}") from None


OUTPUT_KINDS: dict[str, tuple[str, ...]] = {
    "JSON": (".json",),
    "CSV": (".csv", ".txt"),
    "TSV": (".tsv", ".txt"),
    "an HdrHistogram log": (".hlog", ".hdr", ".log", ".txt"),
    "HTML": (".html", ".htm"),
    "SVG": (".svg",),
    "PNG": (".png",),
    "text": (".txt", ".log"),
    "JUnit XML": (".xml",),
}
"""What each output pounder writes is, and the suffixes its file's name may end in."""
FORMAT_SUFFIXES = frozenset(
    {suffix for suffixes in OUTPUT_KINDS.values() for suffix in suffixes}
    | {".gif", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff", ".pdf", ".ps", ".eps", ".xml", ".yaml", ".yml",
       ".toml", ".ini", ".conf", ".md", ".rst", ".har", ".gz", ".bz2", ".xz", ".zst", ".zip", ".tar", ".py", ".pl",
       ".pm", ".psgi", ".php", ".rb", ".ru", ".sh"})  # fmt: skip
"""Suffixes that name a file format: an output whose name ends in one that is not its own is refused."""


def _suffix(path: str | os.PathLike[str]) -> str | None:
    """The suffix of an output file's name (lowercase, "" for none), None for stdout, a device or
    a path through /dev or /proc (``/dev/null``, ``/dev/fd/3``: no name that says a format)."""
    name = os.fspath(path)
    if name == STDOUT or os.path.abspath(name).startswith(("/dev/", "/proc/")):
        return None
    with contextlib.suppress(OSError):
        if not stat.S_ISREG(os.stat(name).st_mode) and not stat.S_ISDIR(os.stat(name).st_mode):
            return None
    return Path(name).suffix.lower()


def check_output_name(path: str | os.PathLike[str] | None, what: str, kind: str, noun: str = "the file") -> None:
    """The one rule for the names of outputs: a name may end in a suffix of what is written there
    (``kind``, one of :data:`OUTPUT_KINDS`), in none, or in one that names no file format (``.out``,
    ``.1``); a suffix of another format (an SVG named ``out.png``, a page named ``x.txt``) is a
    :class:`~pounder.UsageError` naming ``what`` (the option). Standard output, a device or a pipe is
    not checked. ``noun``: what the message calls the file ("the page")."""
    own = OUTPUT_KINDS[kind]
    suffix = None if path is None else _suffix(path)
    if not suffix or suffix in own or suffix not in FORMAT_SUFFIXES:
        return
    raise UsageError(f"{what} {os.fspath(path or '')}: {noun} is {kind}, not {suffix}: give a name ending in "
                     f"{' or '.join(own)}")


def output_format(path: str | os.PathLike[str], what: str, kinds: tuple[str, ...]) -> str:
    """For an output whose format its name chooses (``compare --chart``: PNG or SVG): the kind its
    suffix names, one of ``kinds``; any other name is a :class:`~pounder.UsageError` naming ``what``."""
    suffix = Path(os.fspath(path)).suffix.lower()
    for kind in kinds:
        if suffix in OUTPUT_KINDS[kind]:
            return kind
    endings = " or ".join(ending for kind in kinds for ending in OUTPUT_KINDS[kind])
    raise UsageError(f"{what}: {os.fspath(path)} must end in {endings}")


def check_output_path(path: str | os.PathLike[str] | None, what: str, kind: str | None) -> str | None:
    """An output file must be writable and its name must not say another format than ``kind``
    (:func:`check_output_name`; None: a name that chooses its format, checked by
    :func:`output_format`): checked before a long run, not after. ``"-"`` (stdout)
    is accepted as is. A file that is not there yet is never created by the check (a reader
    polling for it would find it empty): a temporary file beside it is, as the atomic write
    will, and removed again."""
    if path is None or os.fspath(path) == STDOUT:
        return None if path is None else STDOUT
    if kind is not None:
        check_output_name(path, what, kind)
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{what}: {target} is a directory")
    if not target.parent.is_dir():
        raise UsageError(f"{what}: directory {target.parent} does not exist")
    try:
        if target.exists():
            with target.open("a"):
                pass
        else:  # through a dangling link: where the file it names would be made
            resolved = Path(os.path.realpath(target))
            fd, name = tempfile.mkstemp(prefix=f".{resolved.name}.", suffix=".check", dir=resolved.parent)
            os.close(fd)
            os.unlink(name)
    except OSError as error:
        raise UsageError(f"{what}: cannot write {target}: {error.strerror}") from None
    return str(target)


Named = tuple[str, str | os.PathLike[str] | None]


def _same_file_key(path: str | os.PathLike[str]) -> str | None:
    """What identifies the regular file ``path`` names: its device and inode, so that a hard link
    or a symbolic one is the file it names (None for stdout, a device or a pipe, which several
    outputs may share). A file not there yet is identified by its resolved name."""
    if os.fspath(path) == STDOUT:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return f"path:{os.path.realpath(path)}"
    if not stat.S_ISREG(info.st_mode):
        return None
    return f"file:{info.st_dev}:{info.st_ino}"


def check_distinct(outputs: Iterable[Named], inputs: Iterable[Named] = ()) -> None:
    """No output of a run overwrites one of its inputs or another of its outputs: each is a
    ``(what, path)`` pair (a path of None is not given). Checked before anything runs; raises
    :class:`~pounder.UsageError` naming both."""
    taken: dict[str, str] = {}
    for what, path in inputs:
        key = None if path is None else _same_file_key(path)
        if key is not None:
            taken.setdefault(key, f"the {what} input")
    for what, path in outputs:
        if path is None or (key := _same_file_key(path)) is None:
            continue
        if key in taken:
            raise UsageError(f"{what} {os.fspath(path)} would overwrite {taken[key]}: give another file")
        taken[key] = f"the {what} output"


def _cannot(path: Path, what: str, error: OSError) -> PounderError:
    named = f"{what} {path}" if what else str(path)
    return PounderError(f"cannot write {named}: {error.strerror or error}")


TEMP_SUFFIX = ".pounder-tmp"
"""In the name of every temporary file pounder writes beside an output
(``.NAME.PID.XXXX.pounder-tmp``, a chart's with its format's suffix after it)."""


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(path: str | os.PathLike[str]) -> None:
    """Remove the temporary files an earlier pounder left beside ``path`` when it was killed
    (SIGKILL during a write): those named after ``path`` whose process (the pid in the name) is
    gone. Best effort: what cannot be removed stays."""
    target = Path(path)
    # .NAME.PID.XXXXXXXX.pounder-tmp[.ext]: mkstemp's 8 random characters after the pid, so that
    # another output's (NAME.2) temporary file is never read as NAME's with pid 2
    ours = re.compile(rf"^\.{re.escape(target.name)}\.(\d+)\.[a-z0-9_]{{8}}{re.escape(TEMP_SUFFIX)}(\.[^.]*)?$")
    try:
        found = [(entry.name, int(match[1])) for entry in os.scandir(target.parent)
                 if (match := ours.match(entry.name))]
    except OSError:
        return
    for name, pid in found:
        if pid != os.getpid() and not pid_alive(pid):
            try:
                os.unlink(target.parent / name)
            except OSError:
                pass


def temp_beside(path: str | os.PathLike[str], what: str = "", suffix: str = "") -> Path:
    """A new empty temporary file in ``path``'s directory, named after it and this process
    (:func:`remove_stale_temps` removes it once the process is gone), the stale ones of killed
    runs removed first; ``suffix`` ends its name (a chart's format is read from it)."""
    target = Path(path)
    remove_stale_temps(target)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=TEMP_SUFFIX + suffix,
                                    dir=target.parent)
        os.close(fd)
    except OSError as error:
        raise _cannot(target, what, error) from None
    return Path(name)


@contextmanager
def replacing(path: str | os.PathLike[str], what: str = "", *, suffix: str = "", mode: int = 0o644) -> Iterator[Path]:
    """A temporary path in ``path``'s directory to write to; when the block ends without an
    error it becomes ``path`` at once (renamed), so a reader or a crash sees the
    previous whole file or the new one, never half of one. Errors are one line naming ``what``;
    ``mode``: the new file's permission bits."""
    target = Path(path)
    tmp = temp_beside(target, what, suffix)
    try:
        yield tmp
        os.chmod(tmp, mode)  # mkstemp makes it 0600
        os.replace(tmp, target)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise _cannot(target, what, error) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _in_place(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` must be written where it is rather than replaced: a device or a pipe
    (``/dev/null``, a FIFO), or a path through ``/dev`` or ``/proc`` (``/dev/stdout``,
    ``/dev/fd/3``: replacing what it resolves to would swap the file or pipe the shell set up)."""
    name = os.path.abspath(path)
    if name.startswith(("/dev/", "/proc/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:  # not there yet (or not reachable): the atomic write creates it or says why not
        return False


def _standard_stream(path: str | os.PathLike[str]) -> TextIO | None:
    """``sys.stdout`` or ``sys.stderr`` when ``path`` is the file one of them writes to
    (``/dev/stdout``, ``/dev/fd/2``): written through the stream, what else goes there stays in
    order (a second descriptor on a redirected file would write over it)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if os.path.samestat(os.stat(path), os.fstat(stream.fileno())):
                return stream
        except (OSError, ValueError, AttributeError):  # no such path, or a stream without a descriptor
            continue
    return None


def _write_in_place(path: str | os.PathLike[str], raw: bytes, what: str, *, append: bool = False) -> None:
    """Write where ``path`` is; ``append`` for a device, a pipe or a descriptor."""
    stream = _standard_stream(path) if append else None
    if stream is not None:
        stream.flush()
        stream.buffer.write(raw)
        stream.flush()
        return
    try:
        if append:
            with open(path, "ab") as file:
                file.write(raw)
            return
        with open(path, "r+b" if os.path.exists(path) else "wb") as file:
            size = os.fstat(file.fileno()).st_size
            try:  # the blocks first: a full disk fails here, with the old content still whole
                os.posix_fallocate(file.fileno(), 0, max(1, len(raw)))
            except OSError as error:
                if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    with contextlib.suppress(OSError):  # a file system may have grown it part-way
                        os.ftruncate(file.fileno(), size)
                    raise
            file.write(raw)
            file.truncate(len(raw))
            file.flush()
            os.fsync(file.fileno())
    except OSError as error:
        raise _cannot(Path(path), what, error) from None


def write_atomic(path: str | os.PathLike[str], data: str | bytes, what: str = "", *, parents: bool = False) -> None:
    """Replace the file at ``path`` with ``data`` (text is UTF-8) at once, synced to disk: a
    reader or a crash sees the old whole file or the new one.

    A symbolic link is followed (the file it names is replaced, the link stays); an existing
    file keeps its permission bits. Written in place instead: a device, a pipe or a path through
    ``/dev`` or ``/proc`` (see :func:`_in_place`), and a file whose directory takes no new file
    (a writable file in a directory the user cannot write). ``parents``: create the missing
    directories first."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if parents:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise _cannot(Path(path), what, error) from None
    if _in_place(path):
        _write_in_place(path, raw, what, append=True)
        return
    target = Path(os.path.realpath(path))
    if target.exists() and not os.access(target.parent, os.W_OK):
        _write_in_place(target, raw, what)
        return
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644
    with replacing(target, what, mode=mode) as tmp, open(tmp, "wb") as file:
        file.write(raw)
        file.flush()
        os.fsync(file.fileno())


def write_output(path: str | os.PathLike[str], text: str, what: str = "") -> None:
    """Write ``text`` to stdout (``"-"``) or atomically to the file at ``path``."""
    if os.fspath(path) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_atomic(path, text, what)


def write_outputs(files: Iterable[tuple[str | None, str, Callable[[], str]]], text: Callable[[], str] | None) -> None:
    """The outputs of a run that measured: each file ``(path, option, its content)`` (a path of None
    is not asked for; the content is made only when written), then ``text`` on stdout (None: not
    printed, as with ``--json -``). A file that cannot be written leaves the others written and the
    text printed, then is raised, the one error line (exit 1): what was measured is never lost to
    a failed write. (A write refused before the run, an unwritable directory, is bad input: exit 2,
    :func:`check_output_path`.)"""
    failures: list[PounderError] = []
    for path, what, content in files:
        if path is None:
            continue
        try:
            write_output(path, content(), what)
        except PounderError as error:
            failures.append(error)
    if text is not None:
        write_output(STDOUT, text())
    if failures:
        raise failures[0]


class StagedOutput:
    """Where a stream output written during a run (``--tsv``, ``--hdr-log``) goes meanwhile: a
    temporary file beside a regular ``path`` (the old file stays whole until :meth:`commit`
    renames it over; a run killed leaves at most the temporary file, which the next run
    removes); a device, a pipe or stdout is written directly. ``path`` None: no output."""

    def __init__(self, path: str | os.PathLike[str] | None, what: str) -> None:
        self.target = None if path is None else os.fspath(path)
        self.what = what
        self._tmp: Path | None = None
        if self.target is None or self.target == STDOUT or _in_place(self.target):
            return
        real = Path(os.path.realpath(self.target))
        if real.exists() and not os.access(real.parent, os.W_OK):  # a writable file in a closed directory
            return
        self._tmp = temp_beside(real, what)

    @property
    def staged(self) -> bool:
        """Written beside its file (the file itself untouched until :meth:`commit`)."""
        return self._tmp is not None

    @property
    def path(self) -> str | None:
        """The path to write to during the run."""
        return str(self._tmp) if self._tmp is not None else self.target

    def commit(self) -> None:
        """The written file becomes ``path`` (keeping an existing file's permission bits)."""
        if self._tmp is None:
            return
        target = Path(os.path.realpath(os.fspath(self.target or "")))
        try:
            mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644
            os.chmod(self._tmp, mode)
            os.replace(self._tmp, target)
        except OSError as error:
            self.discard()
            raise _cannot(Path(os.fspath(self.target or "")), self.what, error) from None
        self._tmp = None

    def discard(self) -> None:
        """Remove the temporary file: ``path`` stays as it was."""
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None
