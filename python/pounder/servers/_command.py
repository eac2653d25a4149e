"""Any pre-forking server, started from a command template written by the user.

    CommandServer(None, "uwsgi --http-socket {host}:{port} --processes {workers} --master "
                        "--max-requests {max_requests} --pidfile {pidfile} --wsgi-file app.py",
                  workers=4)

No shell is involved: the template is split like a shell would (``shlex.split``: quotes and
backslashes group words), then each word gets its placeholders substituted with ``str.format``
rules, so a substituted value (a path with spaces...) always stays inside its word. Placeholders:

``{port}`` (required)  the free port pounder picked for this start
``{host}``             the address it listens on: ``127.0.0.1`` (or ``--listen``)
``{workers}``          the number of workers; when the template uses it, ``start`` also waits
                       until the parent has that many children
``{max_requests}``     requests a worker serves before it is replaced; ``0`` is substituted as it
                       is and means "unlimited" for pounder - some servers read 0 otherwise (or
                       refuse it), write the template accordingly
``{workdir}``          the server's private directory (also its working directory)
``{pidfile}``          ``WORKDIR/run/command.pid``
``{error_log}``        ``WORKDIR/logs/error.log`` (shown when the server fails to start, with
                       the server's stdout and stderr)

``{{`` and ``}}`` are literal braces. Any other placeholder, or a stray brace, is a
:class:`~pounder.UsageError`.

The command's process is the server's parent: it must stay in the foreground (no daemonizing),
hold the listening socket itself and fork its workers as its own children.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import string
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from pounder._errors import UsageError, public
from pounder.servers._base import HOST, ManagedServer
from pounder.servers._failure import ServerStartError

PLACEHOLDERS = frozenset({"port", "host", "workers", "max_requests", "workdir", "pidfile", "error_log"})
"""The placeholders a command template may use."""

_ALLOWED_TEXT = ", ".join(f"{{{name}}}" for name in sorted(PLACEHOLDERS))


def _split(template: str) -> list[str]:
    try:
        words = shlex.split(template)
    except ValueError as error:  # "No closing quotation", "No escaped character"
        raise UsageError(f"command: cannot split the command template into words ({error})") from None
    if not words:
        raise UsageError("command: the command template is empty")
    return words


def _word_placeholders(word: str) -> set[str]:
    try:
        parsed = list(string.Formatter().parse(word))
    except ValueError as error:  # "Single '}' encountered in format string" and the like
        raise UsageError(f"command: bad braces in {word!r} of the command template ({error}); "
                         f"write {{{{ and }}}} for literal braces; placeholders: {_ALLOWED_TEXT}") from None
    names = set()
    for _literal, name, spec, _conversion in parsed:
        if name is None:
            continue
        if spec and "{" in spec:  # a nested field: {port:{workers}}
            names |= _word_placeholders(spec)
        if name not in PLACEHOLDERS:
            raise UsageError(f"command: unknown placeholder {{{name}}} in the command template; "
                             f"allowed: {_ALLOWED_TEXT} (write {{{{ and }}}} for literal braces)")
        names.add(name)
    return names


@public
def command_placeholders(template: str) -> set[str]:
    """The placeholder names ``template`` uses (``{"port", "workers"}``...). Raises
    :class:`~pounder.UsageError` for an unknown placeholder, stray braces or unbalanced quotes."""
    names: set[str] = set()
    for word in _split(template):
        names |= _word_placeholders(word)
    return names


@public
def render_command(template: str, **values: Any) -> list[str]:
    """The command line of ``template`` with its placeholders substituted (a pure function):
    split with :func:`shlex.split`, then each word formatted with ``values`` (``str.format``
    rules, so ``{port:05d}`` works and ``{{``/``}}`` are literal braces). ``host`` defaults to
    127.0.0.1. Raises :class:`~pounder.UsageError` if the template has no ``{port}``, uses a
    placeholder that is not allowed or has no value, or has stray braces; :class:`TypeError` for
    a keyword that is not a placeholder."""
    unknown = set(values) - PLACEHOLDERS
    if unknown:
        raise TypeError(f"render_command: unknown placeholder values {sorted(unknown)}")
    values = {"host": HOST, **{k: str(v) if isinstance(v, os.PathLike) else v for k, v in values.items()}}
    words = _split(template)
    used = [_word_placeholders(word) for word in words]
    if not any("port" in names for names in used):
        raise UsageError(f"command: the command template must contain {{port}} (the port to listen on, "
                         f"with {{host}} the address); allowed placeholders: {_ALLOWED_TEXT}")
    argv = []
    for word, names in zip(words, used, strict=True):
        missing = sorted(names - set(values))
        if missing:
            raise UsageError(f"command: no value for {{{missing[0]}}} in the command template")
        try:
            argv.append(word.format(**values))
        except (ValueError, TypeError, LookupError) as error:  # a bad format spec or conversion
            raise UsageError(f"command: cannot substitute {word!r} of the command template ({error})") from None
    return argv


def _find_executable(program: str, cwd: Path, env: Mapping[str, str]) -> bool:
    """Can ``program`` be executed the way :class:`subprocess.Popen` would look it up?"""
    if "/" in program:
        path = cwd / program  # a relative path is relative to the working directory (cwd)
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(program, path=env.get("PATH", os.defpath)) is not None


@public
def command_missing(command: str, env: Mapping[str, str] | None = None) -> str | None:
    """Why the program of the command template ``command`` cannot be found (a name not on PATH,
    an absolute path that is not an executable file), or None if it can or we cannot tell (a
    path relative to the server's own directory)."""
    program = render_command(command, port=1, workers=1, max_requests=0, host=HOST, workdir="/w", pidfile="/p",
                             error_log="/e")[0]
    if ("/" in program and not program.startswith("/")) or "{" in shlex.split(command)[0]:
        return None  # relative to the server's own directory, or made of placeholders
    if _find_executable(program, Path("/"), {**os.environ, **(env or {})}):
        return None
    return f"cannot find {program} on PATH" if "/" not in program else f"{program} is not an executable file"


@public
class CommandServer(ManagedServer):
    """A pre-forking server started from the command template ``command`` (see the module's
    documentation for the placeholders). ``env``: added to our environment. ``stop_signal``: the
    parent's graceful stop signal (SIGTERM; e.g. SIGQUIT for servers that stop fast on SIGTERM
    and gracefully on SIGQUIT, like nginx and uWSGI)."""

    kind = "command"

    def __init__(self, workdir: str | os.PathLike[str] | None, command: str, *, workers: int = 2,
                 max_requests: int = 0, env: Mapping[str, str] | None = None,
                 stop_signal: signal.Signals = signal.SIGTERM, ready_path: str = "/",
                 stop_timeout_s: float = 10.0, die_with_parent: bool = True,
                 cpus: Collection[int] | None = None, host: str = HOST) -> None:
        if workers < 1:
            raise UsageError(f"command: workers must be at least 1, not {workers}")
        if max_requests < 0:
            raise UsageError(f"command: max_requests must not be negative, not {max_requests}")
        # the whole template is checked before a temporary workdir is made
        render_command(command, port=0, workers=workers, max_requests=max_requests, workdir="/w", pidfile="/p",
                       error_log="/e")
        super().__init__(workdir, ready_path=ready_path, stop_timeout_s=stop_timeout_s,
                         die_with_parent=die_with_parent, cpus=cpus, host=host, env=env)
        self.command = command
        self.workers = workers
        self.max_requests = max_requests
        self.stop_signal = signal.Signals(stop_signal)  # type: ignore[misc]  # per instance
        self._placeholders = command_placeholders(command)

    def _values(self, port: int) -> dict[str, Any]:
        return {"port": port, "host": self.host, "workers": self.workers, "max_requests": self.max_requests,
                "workdir": self.workdir, "pidfile": self.pidfile, "error_log": self.error_log}

    def _expected_children(self) -> int:
        return self.workers if "workers" in self._placeholders else 0

    def _check_startable(self) -> None:
        program = render_command(self.command, **self._values(0))[0]
        if not _find_executable(program, self.workdir, self._environment()):
            where = "on PATH" if "/" not in program else "(not an executable file)"
            raise ServerStartError(f"command: cannot find {program} {where}")

    def _prepare(self, port: int) -> list[str]:
        return render_command(self.command, **self._values(port))
