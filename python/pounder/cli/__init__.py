"""The ``pounder`` command line (typer), a thin layer over the library.

Every error is one line on stderr, ``pounder: error: <message>``, never a traceback:

* exit 2: bad input (pounder's :class:`~pounder.UsageError` and click's own parse errors);
* exit 1: pounder could not run (e.g. the engine is missing) or could not write an output;
* exit 130: interrupted by Ctrl-C or SIGHUP, 143 by SIGTERM: what was measured is still written
  and printed, and every server pounder started is stopped (see :mod:`pounder._interrupt`).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from pounder import _interrupt
from pounder._errors import PounderError, UsageError, public
from pounder._version import __version__
from pounder.cli._common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    PlainHelpGroup,
    PounderCommand,
    print_error,
)
from pounder.cli.bench import BENCH_HELP, bench_command
from pounder.cli.compare import COMPARE_HELP, compare_command
from pounder.cli.completion import COMPLETE_VAR, COMPLETION_HELP, completion_command
from pounder.cli.completion import enable as enable_completion
from pounder.cli.mem import MEM_HELP, mem_command
from pounder.cli.profile import PROFILE_HELP, profile_command
from pounder.cli.report import REPORT_HELP, report_command
from pounder.cli.run import RUN_HELP, run_command
from pounder.cli.syscalls import SYSCALLS_HELP, syscalls_command
from pounder.cli.top import TOP_HELP, top_command
from pounder.cli.tune import TUNE_HELP, tune_command

# typer either uses click or vendors it (typer._click): take the exception classes it really raises.
_click_exceptions = importlib.import_module(typer.BadParameter.__module__)
ClickException: type[Exception] = _click_exceptions.ClickException
NoArgsIsHelpError: type[Exception] | None = getattr(_click_exceptions, "NoArgsIsHelpError", None)


def _click_error(error: Exception) -> int:
    """Print a click/typer error and return its exit code (2 for usage errors)."""
    if NoArgsIsHelpError is not None and isinstance(error, NoArgsIsHelpError):
        help_text = error.format_message()  # type: ignore[attr-defined]  # empty when rich printed it
        sys.stderr.write(help_text + "\n" if help_text.strip() else "")
    else:
        print_error(error.format_message())  # type: ignore[attr-defined]
    return int(getattr(error, "exit_code", EXIT_USAGE))


class StdoutError(PounderError):
    """Standard output cannot be written (a full disk, a closed pipe): exit 1, one line."""


class _CheckedStdout:
    """Standard output whose write errors are a :class:`StdoutError`, not a traceback; after
    one, what is still buffered goes to /dev/null (the interpreter flushes it at exit).

    A closed pipe (``pounder --help | head -1``: the reader has all it wanted) is no error: from
    then on what is printed goes nowhere, quietly, and the command ends as it would have (its files
    written, its servers stopped, its exit status unchanged); ``reader_gone`` says so (``pounder
    top`` printing view after view then stops, as after q)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.reader_gone = False

    def _to_null(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)

    def _failed(self, error: OSError) -> StdoutError | None:
        self._to_null()
        if error.errno == errno.EPIPE:
            self.reader_gone = True
            return None
        return StdoutError(f"cannot write to standard output: {error.strerror or error}")

    def write(self, text: str) -> int:
        if self.reader_gone:
            return len(text)
        try:
            return int(self._stream.write(text))
        except OSError as error:
            if (failure := self._failed(error)) is not None:
                raise failure from None
            return len(text)

    def flush(self) -> None:
        if self.reader_gone:
            with contextlib.suppress(OSError, ValueError):
                self._stream.flush()  # what was buffered goes to /dev/null now
            return
        try:
            self._stream.flush()
        except OSError as error:
            if (failure := self._failed(error)) is not None:
                raise failure from None
            with contextlib.suppress(OSError, ValueError):
                self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _run(group: TyperGroup, args: Sequence[str] | None, prog_name: str | None, **extra: Any) -> int:
    """Run the CLI without click's standalone handling and map every outcome to an exit code."""
    stdout = sys.stdout
    sys.stdout = _CheckedStdout(stdout)
    try:
        with _interrupt.handled():
            outcome = TyperGroup.main(group, args=args, prog_name=prog_name or "pounder", standalone_mode=False,
                                      **extra)
        sys.stdout.flush()  # a full disk is found here, not when the interpreter exits
    except ClickException as error:
        return _click_error(error)
    except UsageError as error:
        print_error(str(error))
        return EXIT_USAGE
    except PounderError as error:
        print_error(str(error))
        return EXIT_FAILURE
    except (typer.Abort, KeyboardInterrupt):
        print_error(f"interrupted by {_interrupt.cause()}")
        return _interrupt.exit_code()
    finally:
        sys.stdout = stdout
    code = outcome if isinstance(outcome, int) else 0
    if code == EXIT_INTERRUPTED and _interrupt.received() and not _interrupt.reported():
        # typer turns a KeyboardInterrupt out of a command into a silent exit 130 (e.g. a signal
        # while the command was still reading its options): say so, with the signal's status
        print_error(f"interrupted by {_interrupt.cause()}")
        return _interrupt.exit_code()
    return code


class PounderGroup(PlainHelpGroup):
    """A typer group whose errors are one line and exit 2 (see the module docstring)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if os.environ.get(complete_var or COMPLETE_VAR):  # a shell asks what completes its command line
            enable_completion()
        code = _run(self, args, prog_name, complete_var=complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    cls=PounderGroup,
    name="pounder",
    help="Benchmark pre-forking web servers.",
    no_args_is_help=True,
    add_completion=False,  # no --install-completion (it edits ~/.bashrc): `pounder completion SHELL` instead
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["--help"]},
)


def _show_version(ctx: typer.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:  # not while completing a command line
        sys.stdout.write(f"pounder {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_show_version, is_eager=True)
    ] = False,
) -> None:
    """Benchmark pre-forking web servers."""


for _name, _help, _command in (
    ("bench", BENCH_HELP, bench_command),
    ("compare", COMPARE_HELP, compare_command),
    ("mem", MEM_HELP, mem_command),
    ("syscalls", SYSCALLS_HELP, syscalls_command),
    ("profile", PROFILE_HELP, profile_command),
    ("top", TOP_HELP, top_command),
    ("tune", TUNE_HELP, tune_command),
    ("run", RUN_HELP, run_command),
    ("report", REPORT_HELP, report_command),
    ("completion", COMPLETION_HELP, completion_command),
):
    app.command(_name, help=_help, cls=PounderCommand)(_command)


@public
def main() -> None:
    """Run the CLI (the ``pounder`` command is :func:`pounder.__main__.main`, which handles the
    signals from before this package is imported)."""
    app()


__all__ = ["EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_USAGE", "app", "main", "print_error"]
