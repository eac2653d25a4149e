"""``pounder mem``: a server's memory per process (from smaps_rollup), the pool totals and
MaxClients from the measured numbers; ``--watch`` refreshes it in place.

The command maps flags to :func:`pounder.find_server`, :func:`pounder.snapshot` and
:func:`pounder.max_clients`; the rules and the text live in ``pounder.procs``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Annotated

import typer

from pounder._errors import PounderError, UsageError
from pounder._files import STDOUT, check_distinct, check_output_path, write_output, write_outputs
from pounder.cli._common import duration_between, json_option, option, ram_option, whole_number
from pounder.cli._load_options import load_option
from pounder.cli._which import named_server
from pounder.procs import (
    MEM_OPTIONS,
    SERVER_OPTIONS,
    MaxClients,
    NoChildrenError,
    PoolSnapshot,
    ServerTarget,
    max_clients,
    render_mem,
    snapshot,
)
from pounder.servers import RamBudget, parse_ram_budget

if TYPE_CHECKING:
    from rich.text import Text as RichText

_WHICH = "Which server"
_OUT = "Output"
_MAX_COUNT = 1_000_000

MEM_HELP = "\n\n".join(
    [
        "Show a pre-forking server's memory per process and what one more child costs.",
        "Every figure comes from /proc/PID/smaps_rollup: shared = Shared_Clean + Shared_Dirty, private = USS "
        "(Private_Clean + Private_Dirty, what the kernel frees when the child exits), PSS (each shared page divided "
        "among the processes mapping it). The pool's footprint is the sum of PSS, never the sum of RSS.",
        "pounder's own process is taken out of these figures: smaps counts a page as shared when any other process "
        "maps it, and pounder (a Python process) maps the same libpython and library pages as a Python server, so "
        "the server's parent would read megabytes less private while pounder looks. Run as root, pounder finds the "
        "pages only its own process shares with the server (/proc/PID/pagemap, /proc/kpagecount) and counts "
        "them as the server's own; without root the output says the figures could not be corrected.",
        "MaxClients = (RAM - shared) / max child USS, with the median child's shared size; next to it the figure "
        "without sharing, RAM / max child RSS. RAM is --ram, or MemAvailable plus what the server already uses.",
        "Exit status: 0 done (also when --watch is stopped with Ctrl-C), 1 could not read, 2 bad input.",
    ]
)

Text = str | None


# fmt: off
SERVER_PID = load_option("server_pid", _WHICH)
SERVER_PIDFILE = load_option("server_pidfile", _WHICH, help=(
    "A file holding the parent's pid (Apache's PidFile, gunicorn --pid, Starman --pid)."))
SERVER_NAME = load_option("server_name", _WHICH, help=(
    "Part of the process name or command line; the top-most matching process is the parent. Several separate "
    "matching trees is an error listing their pids."))
# The spellings of pounder 0.1 (--pid, --pidfile, --name), still accepted; not shown.
OLD_PID, OLD_PIDFILE, OLD_NAME = (typer.Option(flag, hidden=True) for flag in MEM_OPTIONS)
RAM = ram_option(_OUT, "RAM budget for MaxClients", "MemAvailable + the server's footprint")
JSON = json_option(_OUT, "pounder/mem/2", "table", "With --watch, the file is rewritten at every refresh.")
WATCH = option("--watch", panel=_OUT, metavar="TIME", help=(
    "Refresh every TIME (2s, 500ms) until Ctrl-C; in place on a terminal, one table after the other otherwise."))
COUNT = option("--count", panel=_OUT, metavar="N", help="With --watch: stop after N refreshes.")
# fmt: on


def _measure(target: ServerTarget, ram: RamBudget | None) -> tuple[PoolSnapshot, MaxClients | None, str | None]:
    snap = snapshot(target)
    try:
        return snap, max_clients(ram, snap), None
    except NoChildrenError as error:
        return snap, None, error.reason
    except UsageError:
        raise
    except PounderError as error:  # e.g. /proc/meminfo unreadable: the table is shown all the same
        return snap, None, str(error)


def _json_text(target: ServerTarget, snap: PoolSnapshot, result: MaxClients | None) -> str:
    return json.dumps(snap.to_dict(result, target), indent=2, ensure_ascii=False) + "\n"


class _Report:
    """One measurement and its text (the JSON file, if any, is written when measured)."""

    def __init__(self, target: ServerTarget, ram: RamBudget | None, json_out: str | None) -> None:
        self.snap, self.result, self.reason = _measure(target, ram)
        self.target = target
        if json_out is not None:
            write_output(json_out, _json_text(target, self.snap, self.result), "--json")

    def text(self, max_rows: int | None = None) -> str:
        return render_mem(self.snap, self.result, target=self.target, max_clients_reason=self.reason, max_rows=max_rows)

    def fitted(self, height: int) -> str:
        """The text cut to ``height`` lines by leaving out process rows (the totals stay)."""
        text = self.text()
        lines = text.count("\n")
        if lines <= height:
            return text
        rows = len(self.snap.processes)
        return self.text(max_rows=max(1, rows - (lines - height)))


def _styled(text: str) -> RichText:
    """Bold title, column headers and MaxClients heading for a terminal."""
    from rich.text import Text as RichTextClass

    styled = RichTextClass()
    for index, line in enumerate(text.splitlines(keepends=True)):
        heading = index == 0 or line.lstrip().startswith("pid ") or line.startswith("MaxClients")
        styled.append(line, style="bold" if heading else "")
    return styled


def _show(text: str) -> None:
    if not sys.stdout.isatty():
        write_output(STDOUT, text)
        return
    # Imported here: rich's console costs start-up time, needed only on a terminal.
    from rich.console import Console

    Console(soft_wrap=True, highlight=False).print(_styled(text), end="")


def _watch_loop(
    target: ServerTarget, ram: RamBudget | None, json_out: str | None, interval: float, count: int | None
) -> None:
    """Refresh until Ctrl-C or ``count`` refreshes: in place (rich Live) on a terminal, one
    report after the other otherwise."""
    refreshes = 0
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.live import Live

        console = Console(highlight=False)
        with Live(console=console, auto_refresh=False, transient=False, vertical_overflow="crop") as live:
            while True:
                report = _Report(target, ram, json_out)
                live.update(_styled(report.fitted(console.height - 1)), refresh=True)
                refreshes += 1
                if count is not None and refreshes >= count:
                    return
                time.sleep(interval)
    while True:
        report = _Report(target, ram, json_out)
        write_output(STDOUT, ("\n" if refreshes else "") + report.text())
        refreshes += 1
        if count is not None and refreshes >= count:
            return
        time.sleep(interval)


def mem_command(
    server_pid: Annotated[Text, SERVER_PID] = None,
    server_pidfile: Annotated[Text, SERVER_PIDFILE] = None,
    server_name: Annotated[Text, SERVER_NAME] = None,
    ram: Annotated[Text, RAM] = None,
    json_path: Annotated[Text, JSON] = None,
    watch: Annotated[Text, WATCH] = None,
    count: Annotated[Text, COUNT] = None,
    old_pid: Annotated[Text, OLD_PID] = None,
    old_pidfile: Annotated[Text, OLD_PIDFILE] = None,
    old_name: Annotated[Text, OLD_NAME] = None,
) -> None:
    """Show a server's memory per process (help: MEM_HELP)."""
    ram_bytes = None if ram is None else parse_ram_budget(ram)  # a cgroup's limit read once
    interval = None if watch is None else duration_between(watch, "--watch", 0.05, 86400, "50ms and 24h")
    refreshes = None if count is None else whole_number(count, "--count", _MAX_COUNT)
    if refreshes is not None and interval is None:
        raise UsageError("--count needs --watch")
    json_out = check_output_path(json_path, "--json", "JSON")
    if json_out == STDOUT and interval is not None:
        raise UsageError("--json - cannot be combined with --watch (give a file: it is rewritten at every refresh)")
    check_distinct([("--json", json_out)], [("--server-pidfile", server_pidfile), ("--pidfile", old_pidfile)])
    given = (server_pid, server_pidfile, server_name, old_pid, old_pidfile, old_name)
    target = named_server(dict(zip((*SERVER_OPTIONS, *MEM_OPTIONS), given, strict=True)))
    if interval is None:
        report = _Report(target, ram_bytes, None)
        try:  # a --json that cannot be written leaves the figures shown: exit 1
            write_outputs([(json_out, "--json", lambda: _json_text(target, report.snap, report.result))], None)
        finally:
            if json_out != STDOUT:
                _show(report.text())
        return
    try:
        _watch_loop(target, ram_bytes, json_out, interval, refreshes)
    except KeyboardInterrupt:
        return
