"""The server a command works on, named by exactly one of its options (``--server-pid``,
``--server-pidfile``, ``--server-name``, or the spellings of pounder 0.1 that ``mem`` and ``top``
still take: ``--pid``, ``--pidfile``, ``--name``)."""

from __future__ import annotations

from pounder._errors import UsageError
from pounder._units import parse_pid
from pounder.procs import MEM_OPTIONS, SERVER_OPTIONS, ServerTarget, check_server, find_server


def named_server(given: dict[str, str | None]) -> ServerTarget:
    """The server named by the one option of ``given`` (flag: value) that has a value; the first
    three flags are the ones the error names. A message of the lookup names the flag typed."""
    named = [flag for flag, value in given.items() if value is not None]
    if len(named) != 1:
        got = f" (got {' and '.join(named)})" if named else ""
        first, second, third = list(given)[:3]
        raise UsageError(f"give exactly one of {first}, {second} and {third}{got}")
    flag = named[0]
    value = given[flag]
    assert value is not None
    options = SERVER_OPTIONS if flag in SERVER_OPTIONS else MEM_OPTIONS
    if flag == options[0]:
        return check_server(find_server(pid=parse_pid(value, flag), options=options))
    if flag == options[1]:
        return check_server(find_server(pidfile=value, options=options))
    return check_server(find_server(name=value, options=options))
