"""Files pounder writes: output paths checked before a run, atomic writes, file-or-stdout, and the
UTC timestamp every result carries."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pounder._errors import PounderError, UsageError

STDOUT = "-"


def utc_timestamp(timespec: Literal["seconds", "milliseconds"] = "milliseconds") -> str:
    """Now in UTC, ISO 8601 with a ``Z``: ``2026-11-23T03:36:41.123Z``."""
    return datetime.now(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")


def read_input(path: str | os.PathLike[str], what: str, *, limit: int | None = None,
               missing: str = "{what} not found: {path}") -> bytes:
    """The bytes of an input file the user named (at most ``limit`` + 1 of them when ``limit`` is
    given, so that the caller can tell a file over its limit). A missing file, a directory or an
    unreadable one is a :class:`~pounder.UsageError` naming ``what`` and the path (``missing`` is
    the message for a file that is not there)."""
    try:
        with open(path, "rb") as file:
            return file.read() if limit is None else file.read(limit + 1)
    except FileNotFoundError:
        raise UsageError(missing.format(what=what, path=path)) from None
    except IsADirectoryError:
        raise UsageError(f"{what} is a directory: {path}") from None
    except OSError as error:
        raise UsageError(f"cannot read {what} {path}: {error.strerror}") from None


def check_output_path(path: str | os.PathLike[str] | None, what: str) -> str | None:
    """An output file must be writable: checked before a long run, not after. ``"-"`` (stdout)
    is accepted as is. A file that did not exist is created to check and removed again."""
    if path is None or os.fspath(path) == STDOUT:
        return None if path is None else STDOUT
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{what}: {target} is a directory")
    if not target.parent.is_dir():
        raise UsageError(f"{what}: directory {target.parent} does not exist")
    existed = target.exists()
    try:
        with target.open("a"):
            pass
    except OSError as error:
        raise UsageError(f"{what}: cannot write {target}: {error.strerror}") from None
    if not existed:
        target.unlink(missing_ok=True)
    return str(target)


def _cannot(path: Path, what: str, error: OSError) -> PounderError:
    named = f"{what} {path}" if what else str(path)
    return PounderError(f"cannot write {named}: {error.strerror or error}")


@contextmanager
def replacing(path: str | os.PathLike[str], what: str = "", *, suffix: str = "") -> Iterator[Path]:
    """A temporary path in ``path``'s directory to write to; when the block ends without an
    error it becomes ``path`` at once (renamed, mode 0644), so a reader or a crash sees the
    previous whole file or the new one, never half of one. Errors are one line naming ``what``."""
    target = Path(path)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
        os.close(fd)
    except OSError as error:
        raise _cannot(target, what, error) from None
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # like any file we write (mkstemp makes it 0600)
        os.replace(tmp, target)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise _cannot(target, what, error) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], data: str | bytes, what: str = "") -> None:
    """Replace the file at ``path`` with ``data`` (text is UTF-8) at once, synced to disk.

    A symbolic link is followed (the file it names is replaced, the link stays). A path naming
    something other than a regular file (``/dev/null``, ``/dev/stdout``, a FIFO) is written in
    place, as a shell redirection would: replacing it would put a regular file where the device
    or the pipe was."""
    target = Path(os.path.realpath(path))
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        special = not stat.S_ISREG(target.stat().st_mode)
    except OSError:  # not there yet (or not reachable): the atomic write creates it or says why not
        special = False
    if special:
        try:
            with open(target, "wb") as file:
                file.write(raw)
        except OSError as error:
            raise _cannot(Path(path), what, error) from None
        return
    with replacing(target, what) as tmp, open(tmp, "wb") as file:
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
