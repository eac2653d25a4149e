"""Whether a load got anywhere: the one rule every command that loads applies after a run
(:func:`load_failure`), and the statuses a user says are the expected answers (``--expect-status``,
:func:`parse_statuses`).

A run "got nowhere" when no request succeeded, when a scenario's virtual users never got through
(:func:`~pounder.results._steps.scenario_failure`), or when no answer had a success status: 2xx or 3xx, or
one of ``--expect-status`` when given (``--expect-status 404`` for a load of a page that is meant
to be missing). The commands write and show what was measured, then exit 1 with the one line
:func:`load_failure` returns; ``compare`` and ``pounder run`` do not count such a trial.

When nothing succeeded at an ``http://`` target, the port is asked whether it speaks TLS (one
ClientHello, no request; only then): nginx answers plain HTTP on a TLS port with 400 ("The plain
HTTP request was sent to HTTPS port"), other servers with a TLS alert or by closing, and the line
says ``the server at HOST:PORT speaks TLS: use https://``.
"""

from __future__ import annotations

import re
import ssl
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pounder._errors import UsageError, check_text, check_type, clip, public, quoted
from pounder._probe import first_bytes
from pounder.results._steps import scenario_failure

if TYPE_CHECKING:
    from pounder.results._result import BenchResult

StatusRanges = tuple[tuple[int, int], ...]
"""Statuses as inclusive ``(low, high)`` ranges: ``((404, 404), (500, 599))``."""
SUCCESS: StatusRanges = ((200, 399),)
"""The statuses that count as an answer when ``--expect-status`` is not given: 2xx and 3xx."""
PROBE_TIMEOUT_S = 1.0
"""The longest wait for the TLS question to an http:// port that gave nothing good."""
_ONE = re.compile(r"(?P<low>[1-5]\d\d)(?:-(?P<high>[1-5]\d\d))?|(?P<class>[1-5])xx", re.IGNORECASE)
_SHOWN = 4
"""The statuses a failure line names (the most frequent ones)."""


def _usage(given: object, flag: str) -> UsageError:
    shown = clip(repr(given), 60)  # a value in a message is bounded (pounder._errors.clip)
    return UsageError(f"{flag} takes HTTP statuses from 100 to 599: a status (404), a range (400-499), a class "
                      f"(4xx) or a comma list of them (404,500-599), got {shown}")  # fmt: skip


@public
def parse_statuses(value: object, flag: str = "--expect-status") -> StatusRanges | None:
    """``--expect-status`` as ranges (None: not given): text such as ``"404"``, ``"400-499"``,
    ``"4xx"``, ``"404,500-599"``, a status as an int, or a sequence of those;
    :class:`~pounder.UsageError` with one line otherwise."""
    if value is None:
        return None
    items: Iterable[object]
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, int) and not isinstance(value, bool):
        items = (str(value),)
    elif isinstance(value, Sequence) and value:
        items = [str(item) if isinstance(item, int) and not isinstance(item, bool) else item for item in value]
    else:
        raise _usage(value, flag)
    ranges: list[tuple[int, int]] = []
    for item in items:
        if not isinstance(item, str) or (match := _ONE.fullmatch(item.strip())) is None:
            raise _usage(value if isinstance(value, str) else item, flag)
        if match["class"] is not None:
            low = int(match["class"]) * 100
            ranges.append((low, low + 99))
            continue
        low = int(match["low"])
        high = low if match["high"] is None else int(match["high"])
        if high < low:
            raise UsageError(f"{flag} range {low}-{high} ends before it starts")
        ranges.append((low, high))
    return tuple(sorted(set(ranges)))


@public
def statuses_text(ranges: StatusRanges) -> str:
    """``((404, 404), (500, 599))`` as ``"404, 500-599"``."""
    return ", ".join(str(low) if low == high else f"{low}-{high}" for low, high in ranges)


def _expected(code: str, ranges: StatusRanges) -> bool:
    return code.isdigit() and any(low <= int(code) <= high for low, high in ranges)


def _statuses(status: Mapping[str, int]) -> str:
    ordered = sorted(status.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{count:,} × {code}" for code, count in ordered[:_SHOWN])
    return shown + (f" and {len(ordered) - _SHOWN} other statuses" if len(ordered) > _SHOWN else "")


@public
def speaks_tls(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the TCP ``address`` (``host:port``, ``[::1]:port``) answers a TLS ClientHello
    with a TLS record (a handshake or an alert: ``0x16``/``0x15``, version ``0x03``). One
    connection, no HTTP request; False when it cannot be asked (refused, silent for
    ``timeout_s`` seconds). An address without a host and a port from 1 to 65535, or a wait that
    is no positive number of seconds, is a :class:`~pounder.UsageError`, before anything is sent."""
    check_text(address, "address")
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"address must be HOST:PORT with a port from 1 to 65535, got {quoted(address)}")
    check_type(timeout_s, (int, float), "timeout_s", "a number of seconds")
    if not 0 < timeout_s <= 3600:
        raise UsageError(f"timeout_s must be more than 0 and at most 3600 seconds, got {timeout_s}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    hello = context.wrap_bio(incoming, outgoing)
    try:
        hello.do_handshake()
    except ssl.SSLWantReadError:
        pass
    try:
        head = first_bytes(host.strip("[]"), int(port), outgoing.read(), 2, timeout_s)
    except (OSError, ValueError):
        return False
    return len(head) == 2 and head[0] in (0x15, 0x16) and head[1] == 0x03


_ASKED: dict[str, tuple[float, bool]] = {}
_ASKED_FOR_S = 30.0
"""How long an address's answer is remembered: the trials of a comparison that all got nowhere
ask once, not once each (a port that does not answer a ClientHello costs the whole wait)."""


def _speaks_tls(address: str) -> bool:
    now = time.monotonic()
    asked = _ASKED.get(address)
    if asked is None or now - asked[0] > _ASKED_FOR_S:
        if len(_ASKED) > 64:
            _ASKED.clear()
        asked = _ASKED[address] = (now, speaks_tls(address))
    return asked[1]


def _tls_port(result: BenchResult) -> str | None:
    """``the server at HOST:PORT speaks TLS: use https://`` when an http:// target's port does."""
    seen: set[str] = set()
    for target in result.options.targets:
        if not target.url.lower().startswith("http://") or target.connect.startswith("unix:"):
            continue
        if target.connect in seen or len(seen) >= _SHOWN:
            continue
        seen.add(target.connect)
        if _speaks_tls(target.connect):
            return f"the server at {target.connect} speaks TLS: use https://"
    return None


def _client_certificate(result: BenchResult) -> str | None:
    """The hint for only 400s from https:// without a client certificate (nginx's answer when it
    requires one), else None."""
    tls = result.options.tls
    if set(code for code, count in result.status.items() if count) != {"400"} or tls is None or tls.cert is not None:
        return None
    return (
        "a server that requires a client certificate answers 400 without one (nginx: "
        "ssl_verify_client on): give --cert FILE and --key FILE"
    )


def _with_tls(line: str, result: BenchResult) -> str:
    port = _tls_port(result)
    return line if port is None else f"{line}: {port}"


@public
def load_failure(result: BenchResult, *, expect_flag: str | None = "--expect-status") -> str | None:
    """None when ``result``'s load got somewhere; else the one line saying it did not (the
    commands exit 1 with it, after writing and showing the result; ``compare`` does not count such
    a trial):

    * no request completed: ``no request succeeded (50 failed: reset 50)``;
    * a scenario's users never got through: :func:`~pounder.results._steps.scenario_failure`;
    * no answer had a success status, 2xx or 3xx, or one of ``options.expect_status`` when given
      (``--expect-status``; a scenario's steps have their own ``expect``): ``no answer was 2xx or
      3xx (50 × 400): ...``.

    Nothing succeeded at an http:// target whose port speaks TLS: the line ends with
    ``the server at HOST:PORT speaks TLS: use https://``. ``expect_flag``: how the command takes
    the expected statuses, named in the advice (None: it takes none, and none is advised)."""
    requests = result.requests
    if requests.complete == 0:
        failed = ", ".join(f"{name.replace('_', ' ')} {count:,}" for name, count in result.errors.nonzero().items())
        said = [f"{requests.failed:,} failed{': ' + failed if failed else ''}"] if requests.failed or \
            not requests.unsent else []  # fmt: skip
        if requests.unsent:  # open loop: never sent, every connection busy (not "0 failed")
            said.append(f"{requests.unsent:,} unsent: no free connection in time")
        return _with_tls(f"no request succeeded ({'; '.join(said)})", result)
    nowhere = scenario_failure(result.steps)
    if nowhere is not None or result.options.scenario is not None:
        return nowhere
    expected = result.options.expect_status
    if any(_expected(code, expected or SUCCESS) for code, count in result.status.items() if count):
        return None
    statuses = _statuses(result.status)
    if expected is None:
        port = _tls_port(result)
        if port is not None:
            return f"no answer was 2xx or 3xx ({statuses}): {port}"
        hint = _client_certificate(result) or (
            None if expect_flag is None else f"give {expect_flag} CODE when that answer is the one expected"
        )
        return f"no answer was 2xx or 3xx ({statuses})" + ("" if hint is None else f"; {hint}")
    return _with_tls(f"no answer had an expected status ({statuses}; expected: {statuses_text(expected)})", result)
