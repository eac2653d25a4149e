"""Exit codes and error printing shared by the CLI's modules."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

from pounder import _interrupt
from pounder._errors import PounderError, UsageError, public
from pounder.cli._bridge import DeclaredOptions, Use, as_written, flag_of

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_GATES = 3
"""A ``--fail-if`` gate failed (or could not be measured): the run itself went fine."""
EXIT_INTERRUPTED = _interrupt.EXIT_INTERRUPTED


@public
def print_error(message: str) -> None:
    """Print ``pounder: error: <message>`` on one line to stderr."""
    line = " ".join(message.split())
    try:
        sys.stderr.write(f"pounder: error: {line}\n")
        sys.stderr.flush()
    except OSError:  # stderr is gone (the terminal hung up): the exit status still says it
        pass


def interrupted(kept: str) -> typer.Exit:
    """After a signal stopped the run: one line saying what stopped it and ``kept`` (where what was
    measured is), and the exit to raise (130, or 143 for SIGTERM)."""
    print_error(f"interrupted by {_interrupt.cause()}; {kept}")
    _interrupt.mark_reported()
    return typer.Exit(_interrupt.exit_code())


def print_warning(message: str) -> None:
    """Print ``pounder: warning: <message>`` on one line to stderr (the command goes on)."""
    line = " ".join(message.split())
    sys.stderr.write(f"pounder: warning: {line}\n")
    sys.stderr.flush()


class _Argument(TyperArgument):
    """A positional argument shown by its metavar alone: ``URL``, ``[SERVER]``, ``RESULT...``
    in the usage line (typer writes ``{URL}`` and ``{RESULT...}...``), no type in --help."""

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        name = self.metavar or (self.name or "").upper()
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return [name if self.required else f"[{name}]"]

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class _Option(TyperOption):
    """An option whose flags (``--quiet``, ``--help``) show no value placeholder such as ``<bool>``."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        return super().display_type_rich(ctx)  # type: ignore[no-any-return,unused-ignore]


class _PlainHelp:
    """Every command's parameters (its --help included) as :class:`_Argument` and :class:`_Option`:
    typer builds them itself, so their class is set where click collects them."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if type(param) is TyperArgument:
                param.__class__ = _Argument
            elif type(param) is TyperOption:
                param.__class__ = _Option
        return params


class PounderCommand(_PlainHelp, DeclaredOptions):
    """The class of every subcommand (``app.command(..., cls=PounderCommand)``): its options
    declared on dataclass fields among its own (:func:`pounder.cli._bridge.takes`)."""


class PlainHelpGroup(_PlainHelp, TyperGroup):
    """The base of the ``pounder`` group: its --version and --help are flags like the commands'."""


def option(*names: str, panel: str, metavar: str | None = None, help: str) -> Any:  # noqa: A002
    """A value option without a shown default (defaults are stated in the help text)."""
    return typer.Option(*names, metavar=metavar, rich_help_panel=panel, help=as_written(help), show_default=False)


def kept_outputs(paths: list[str | None], quiet: bool) -> str:
    """Where an interrupted command's partial result is: the report above (unless ``-q``) and the files."""
    files = [path for path in paths if path is not None and path != "-"]
    where = [] if quiet else ["reported above"]
    if files:
        where.append("written to " + ", ".join(files))
    return "the partial result is " + " and ".join(where) if where else "nothing was asked to be kept (-q)"


def _said(failed: Callable[[str], None] | None, message: str) -> None:
    """``failed(message)`` (an output saying the run failed), a signal waiting until it is written."""
    if failed is None:
        return
    with _interrupt.deferred():
        try:
            failed(message)
        except PounderError as error:
            print_error(str(error))


@contextmanager
def measured_run(next_step: str, keep: Callable[[], None] | None = None,
                 failed: Callable[[str], None] | None = None) -> Iterator[None]:
    """Around a long run that starts servers and writes its results as it goes: a server that
    does not start is reported with its own log lines (exit 1); Ctrl-C, SIGTERM or SIGHUP stop it
    (every server is stopped by then) with exit 130 or 143; any other failure keeps its message.
    ``next_step`` says where the results are and what to do with them (e.g. how to resume); it ends
    the message. ``keep``: what to write when interrupted (e.g. the ``--report`` page of what was
    measured), before the message; a second signal waits until it is written. ``failed``: what to
    write when the run fails (exit 1; the ``--junit`` file), given the error line, before it."""
    from pounder.servers import ServerFailure, ServerStartError

    try:
        yield
    except ServerFailure as error:
        started = isinstance(error, ServerStartError)
        message = f"the server did not start: {error.reason}" if started else f"{error.reason} ({next_step})"
        _said(failed, message)
        print_error(message)
        if error.log_tail:
            sys.stderr.write(error.log_tail.rstrip("\n") + "\n")
        if error.logs:
            folder = error.logs[0].parent
            sys.stderr.write(f"pounder: its whole logs: {folder}/ ({', '.join(path.name for path in error.logs)})\n")
        raise typer.Exit(EXIT_FAILURE) from None
    except KeyboardInterrupt:
        if keep is not None:
            with _interrupt.deferred():
                try:
                    keep()
                except PounderError as error:
                    print_error(str(error))
        raise interrupted(f"every server was stopped; {next_step}") from None
    except UsageError:
        raise
    except PounderError as error:
        _said(failed, f"{error} ({next_step})")
        raise PounderError(f"{error} ({next_step})") from None


def report_option(panel: str, what: str) -> Any:
    """``--report PATH`` of the commands that measure."""
    return option("--report", panel=panel, metavar="PATH", help=(
        f"Also write the {what} as one self-contained HTML page with charts (see pounder report)."))


def ram_option(panel: str, purpose: str, default: str) -> Any:
    """``--ram SIZE`` of every command that takes a RAM budget (what it takes declared once,
    :data:`pounder.servers.RAM_FORMS`, read by :func:`pounder.servers.parse_ram_budget`): ``purpose``
    what the budget is for, ``default`` when not given."""
    from pounder.servers import RAM_FORMS

    return option("--ram", panel=panel, metavar="SIZE", help=f"{purpose}: {RAM_FORMS}. Default: {default}.")


def whole_number(text: str, what: str, high: int) -> int:
    """A count from 1 to ``high`` (``10``, ``1k``), or one line saying so."""
    from pounder._units import count_in_range

    try:
        return count_in_range(text, what, 1, high)
    except UsageError:
        raise UsageError(f"invalid {what} {text!r}: expected a whole number from 1 to {high:,}") from None


def duration_between(text: str, what: str, low: float, high: float, bounds: str) -> float:
    """A duration from ``low`` to ``high`` seconds (``bounds``: the two as a user types them,
    ``"100ms and 1h"``), or one line saying so."""
    from pounder._units import parse_duration

    seconds = parse_duration(text, what)
    if not low <= seconds <= high:
        raise UsageError(f"{what} must be between {bounds}, got {text!r}")
    return seconds


def json_option(panel: str, schema: str, replaces: str, more: str = "") -> Any:
    """``--json PATH`` of a command whose result has the JSON schema ``schema``; ``-`` prints it
    instead of the ``replaces`` (the report, the table); ``more``: a sentence of the command's own."""
    return option("--json", panel=panel, metavar="PATH", help=" ".join(filter(None, (
        f"Write the result as JSON (schema {schema}); '-' for stdout, which replaces the {replaces}.", more))))


BENCH_GATES = (
    "p99>300ms, p50>50ms, errors>1%, non2xx>0, rps<500, late>1% (open loop). Metrics: p50 p66 p75 p80 p90 p95 p98 "
    "p99 p99.9 max mean (the corrected latency, with a unit), errors and non2xx (a count, or a share with %), rps "
    "(completed requests/s), late (requests sent more than 1 ms late or not sent). A count or share of nothing "
    "(non2xx with no response, errors with no request sent) is unmeasurable and fails. A gate that can never fail "
    "or always fails is refused: a share is from 0% to 100% (errors>100%, errors<=100%), a figure is never below 0 "
    "(rps>=0, p99<0ms).")
COMPARE_GATES = (
    "slower>5%: a variant fails only when the WHOLE 95 % interval of its ratio to the baseline says it is more than "
    "5 % slower, on the figure the verdict is about (requests/s in closed loop, p99 latency in open loop), so noise "
    "does not fail a build; it needs at least 5 trials per URL (refused with fewer; a URL left with fewer than 5 "
    "counted trials fails it as unmeasurable). In closed loop N is below 100 (requests/s 100 % lower would be no "
    "answer at all, so slower>100% could never fail); in open loop N may be any (p99 3 times the baseline's is "
    "200 % slower). Also each URL's p50, p99, rps (medians over its counted trials: "
    "p99>300ms) and errors, non2xx (over its measured trials: errors>1%).")


def fail_if_option(panel: str, metrics: str, more: str = "") -> Any:
    """``--fail-if EXPR`` (repeatable) of the commands that measure (bench, compare, run): ``metrics``
    says what the command's gates take (:data:`BENCH_GATES`, :data:`COMPARE_GATES`), ``more`` is a
    sentence of its own."""
    return option("--fail-if", panel=panel, metavar="EXPR", help=" ".join(filter(None, (
        "Fail (exit status 3) when EXPR holds:", metrics, "Operators > >= < <=. Repeatable; a gate that cannot be "
        "measured fails. The verdicts are printed after the report and written into the JSON.", more))))


def gates_exit(failure: str | None) -> None:
    """After the outputs: ``failure`` (the line naming the gates that failed, None when all
    passed) on stderr and exit 3."""
    if failure is not None:
        print_error(failure)
        raise typer.Exit(EXIT_GATES)


def quiet_option(panel: str) -> Any:
    """``-q/--quiet`` of the commands that show progress and a report."""
    return option("-q", "--quiet", panel=panel, help="No progress and no report (files are still written).")


def check_report_path(path: str | None) -> None:
    """``--report PATH`` of the commands that measure: a writable file, checked before the run."""
    from pounder._files import check_output_path
    from pounder._matplotlib import require_matplotlib

    if path == "-":
        raise UsageError("--report: give a file name (the page is not written to stdout)")
    check_output_path(path, "--report", None)
    if path is not None:
        from pounder.report import check_page_name

        check_page_name(path, "--report")
        require_matplotlib("--report")  # known before a run of minutes, not after it


def write_html_report(results: list[Any], path: str) -> None:
    """``--report PATH`` once measured: the HTML page, and its path on stderr."""
    from pathlib import Path

    from pounder.report import write_report

    written = write_report(results, path, option="--report")
    sys.stderr.write(f"pounder: report: {Path(written).resolve()}\n")


JUNIT_GATES = "one per --fail-if gate"


def junit_option(panel: str, cases: str = JUNIT_GATES) -> Any:
    """``--junit FILE`` of the commands that measure (bench, compare, run, tune): ``cases`` says
    which test cases follow the run's own."""
    return option("--junit", panel=panel, metavar="FILE", help=(
        "Also write the verdicts as JUnit XML for CI (Jenkins, GitLab, GitHub Actions): a test case for the run "
        f"itself (an error when the run exits 1 or is interrupted), then {cases}, a failure naming the figure "
        "measured and its limit; the run's figures as properties. Written also when the run is interrupted."))


def check_junit_path(path: str | None) -> None:
    """``--junit FILE``: a writable file whose name says no other format, checked before the run."""
    from pounder._files import check_output_path

    if path == "-":
        raise UsageError("--junit: give a file name (CI reads the JUnit XML from a file)")
    check_output_path(path, "--junit", "JUnit XML")


def write_junit_file(xml: Callable[[], str], path: str | None) -> None:
    """``--junit FILE`` once measured: ``xml`` (a result's ``to_junit``) written atomically (None
    path: not asked)."""
    from pounder._files import write_atomic

    if path is not None:
        write_atomic(path, xml(), "--junit")


@dataclass(frozen=True)
class Measured:
    """``-q``, ``--report``, ``--fail-if`` and ``--junit`` of a command that measures and reports (bench,
    compare): offered with :func:`measured_outputs` (each command's own text on the report and its
    gates), read with ``given(ctx, Measured)``; ``run`` and ``tune`` offer ``--junit`` from here too."""

    quiet: bool = field(default=False, metadata=flag_of(quiet_option("Output")))
    report: str | None = field(default=None, metadata=flag_of(report_option("Output", "result")))
    fail_if: tuple[str, ...] = field(default=(), metadata=flag_of(fail_if_option("Output", BENCH_GATES),
                                                                   repeatable=True))
    junit: str | None = field(default=None, metadata=flag_of(junit_option("Output")))

    def gates(self) -> list[str] | None:
        """The ``--fail-if`` expressions as the library takes them (None: none given)."""
        return list(self.fail_if) or None


def measured_outputs(panel: str, what: str, metrics: str, more: str = "", cases: str = JUNIT_GATES) -> list[Use]:
    """``-q``, ``--report`` (writing the ``what``), ``--fail-if`` (its ``metrics`` and ``more``, as
    :func:`fail_if_option`) and ``--junit`` (its ``cases``, as :func:`junit_option`), shown in
    ``panel``: see :class:`Measured`."""
    return [Use(Measured, "quiet", panel), Use(Measured, "report", panel, help=report_option(panel, what).help),
            Use(Measured, "fail_if", panel, help=fail_if_option(panel, metrics, more).help),
            Use(Measured, "junit", panel, help=junit_option(panel, cases).help)]  # fmt: skip
