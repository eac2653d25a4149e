"""The text report of a bench, in the spirit of ab, wrk and httperf.

Plain ASCII text with fixed columns (labels padded to 26 characters, table columns 12 wide) so
that it reads the same in a terminal, a pipe or a log file, and scripts can parse it. Times are
in milliseconds: 3 decimals below 10 ms, 2 below 100 ms, 1 below 1 s, none above.
"""

from __future__ import annotations

from collections.abc import Iterable

from pounder._errors import check_instance, public
from pounder._units import count_text, mib, plain
from pounder.results._baseline import baseline_lines
from pounder.results._measured import ERROR_CATEGORIES, PERCENTILES, Histogram
from pounder.results._result import BenchResult, ReplyRate
from pounder.results._run_options import LoadModel, ReplayInfo, TlsInfo
from pounder.results._steps import STEP_COLUMNS, UNSAFE_NOTE, step_rows

LABEL_WIDTH = 26
COLUMN_WIDTH = 12
MAX_LISTED_TARGETS = 5


@public
def format_ms(us: float) -> str:
    """Microseconds → milliseconds text with a precision that suits the size."""
    ms = us / 1000
    for limit, decimals in ((10, 3), (100, 2), (1000, 1)):
        if abs(ms) < limit:
            return f"{ms:.{decimals}f}"
    return f"{ms:.0f}"


def _seconds(value: float) -> str:
    return f"{value:.3f} s"


def _number(value: float) -> str:
    return plain(value)


def _line(label: str, value: str) -> str:
    return f"{label + ':':<{LABEL_WIDTH}}{value}"


def _continued(value: str) -> str:
    return " " * LABEL_WIDTH + value


def _row(label: str, cells: Iterable[str], label_width: int = 12) -> str:
    return f"{label:<{label_width}}" + "".join(f"{cell:>{COLUMN_WIDTH}}" for cell in cells)


# ---------------------------------------------------------------------------------------------
# Sections


def _header(result: BenchResult) -> list[str]:
    lines = [f"pounder {result.tool_version}, started {result.started_at}", ""]
    targets = result.options.targets
    if len(targets) == 1:
        method = f"{targets[0].method} " if targets[0].method else ""
        lines.append(_line("Target", f"{method}{targets[0].url} ({targets[0].connect})"))
    else:
        order = "as the replayed log names them" if result.options.replay else f"{result.options.order} order"
        lines.append(_line("Targets", f"{len(targets)}, {order}"))
        for target in targets[:MAX_LISTED_TARGETS]:
            method = f"{target.method} " if target.method else ""
            weight = f"{target.weight:,} in the log" if result.options.replay else f"weight {target.weight}"
            lines.append(_continued(f"{method}{target.url} ({weight}, {target.connect})"))
        if len(targets) > MAX_LISTED_TARGETS:
            lines.append(_continued(f"... and {len(targets) - MAX_LISTED_TARGETS} more"))
    lines.append(_line("Load model", describe_load(result.options.load)))
    if result.options.replay is not None:
        first, *rest = describe_replay(result.options.replay)
        lines += [_line("Replay", first), *map(_continued, rest)]
    if result.options.scenario is not None:
        lines.append(_line("Scenario", _describe_scenario(result)))
    lines.append(_line("Requests", _describe_http(result)))
    if result.options.tls is not None:
        lines.append(_line("TLS settings", _describe_tls(result.options.tls)))
    if result.io is not None:  # absent in results from before the io_uring path
        lines.append(_line("I/O", result.io.describe()))
    lines.append(_line("Measured time", _describe_time(result)))
    if result.options.load.warmup_requests or result.options.load.warmup_s:
        warmup = result.warmup
        counts = f"{warmup.complete} complete, {warmup.failed} failed"
        lines.append(_line("Warmup", f"{counts} in {_seconds(warmup.elapsed_s)} (not measured)"))
    if result.interrupted:
        lines.append(_line("Interrupted", "yes: partial result"))
    if result.agents is not None and result.agents.partial:
        lost = sum(agent.lost is not None for agent in result.agents.members)
        lines.append(_line("Partial", f"yes: {lost} of {len(result.agents.members)} agents lost, their share is "
                                      "not in these figures (see Agents)"))
    return lines


def _describe_stages(load: LoadModel) -> str:
    stages = load.stages or ()
    rates = [rate for stage in stages for rate in (stage.start_rate, stage.end_rate)]
    low, high = min(rates), max(rates)
    rate = f"{_number(low)} req/s" if low == high else f"{_number(low)}..{_number(high)} req/s"
    count = f" in {len(stages)} stages" if len(stages) > 1 else ("" if low == high else " ramp")
    return f"{rate}{count}"


@public
def describe_load(load: LoadModel) -> str:
    """The load model in words: "closed loop, 10 connections, 4 threads"."""
    threads = f"{load.threads} thread{'s' if load.threads != 1 else ''}"
    if load.is_open and load.stages is None:
        return f"open loop, timed replay, at most {load.connections} in flight, {threads}"
    if load.is_open:
        return f"open loop, {_describe_stages(load)}, at most {load.connections} in flight, {threads}"
    return f"closed loop, {load.connections} connection{'s' if load.connections != 1 else ''}, {threads}"


def _describe_http(result: BenchResult) -> str:
    http = result.options.http
    if not http.keepalive:
        connection = "keep-alive off"
    elif http.calls_per_conn:
        connection = f"keep-alive, {http.calls_per_conn} per connection"
    else:
        connection = "keep-alive"
    own = any(target.method for target in result.options.targets)
    method = "each step's method" if result.options.scenario else f"{http.method} (or each target's own)" if own \
        else http.method
    parts = [method, connection,
             f"timeout {plain(http.timeout_s)} s"]
    if http.throttle_bps:
        parts.append(f"throttled to {http.throttle_bps} bytes/s")
    return ", ".join(parts)


def _describe_tls(tls: TlsInfo) -> str:
    """The TLS settings in words: "server certificate checked against ca.pem, session resumption on"."""
    trust = ("any server certificate accepted (--insecure)" if tls.insecure
             else f"server certificate checked against {tls.cacert}" if tls.cacert is not None
             else "server certificate checked against the system's CAs")  # fmt: skip
    parts = [trust, *([f"client certificate {tls.cert}"] if tls.cert is not None else []),
             "session resumption on" if tls.resume else "session resumption off (--no-tls-resume)"]  # fmt: skip
    return ", ".join(parts)


def _describe_scenario(result: BenchResult) -> str:
    steps = result.steps or ()
    login = sum(step.part == "login" for step in steps)
    users = ("a virtual user per connection the schedule needs" if result.options.load.is_open
             else "each connection a virtual user")
    loop = len(steps) - login
    return f"{result.options.scenario} ({login} login, {loop} loop step{'s' * (loop != 1)}; {users})"


def _steps(result: BenchResult) -> list[str]:
    """A scenario's steps: requests, what went wrong, percentiles (only with --scenario)."""
    if result.steps is None:
        return []
    width = min(40, max(12, *(len(step.name) + 2 for step in result.steps)))
    lines = ["Steps (latency in ms; a failed, unexpected or capture-less step starts the user over)",
             _row("step", STEP_COLUMNS, width)]
    lines += [_row(name if len(name) < width else name[:width - 4] + "...", cells, width)
              for name, cells in step_rows(result.steps, format_ms)]
    # a capture that matched but cannot be used is named, not left a bare "no capture"
    lines += [f"  {step.name}: {step.capture_unsafe:,} of its {step.capture_missed:,} no capture {UNSAFE_NOTE}"
              for step in result.steps if step.capture_unsafe]  # fmt: skip
    return lines


def _describe_time(result: BenchResult) -> str:
    load = result.options.load
    planned = []
    # a replay whose requests share one timestamp lasts 0 s: no length to measure against
    moment = result.options.replay is not None and load.duration_s == 0
    if load.duration_s is not None and not moment:
        planned.append(f"{plain(load.duration_s)} s")
    if load.requests is not None:
        planned.append(f"{load.requests} requests")
    said = [f"planned {' or '.join(planned)}"] if planned else []
    if moment:
        said.append("the replayed requests share one moment: no planned length")
    return f"{_seconds(result.elapsed_s)} ({'; '.join(said)})"


def _wrapped(indent: str, parts: list[str], width: int = 90) -> list[str]:
    """``(part, part, ...)`` after ``indent``, on as many lines of at most ``width`` as needed."""
    lines = [indent + "("]
    for index, part in enumerate(parts):
        piece = part + (")" if index == len(parts) - 1 else ",")
        if index and len(lines[-1]) + 1 + len(piece) > width:
            lines.append(" " * (len(indent) + 1) + piece)
        else:
            lines[-1] += (" " if index else "") + piece
    return lines


def _counts(result: BenchResult) -> list[str]:
    requests, derived = result.requests, result.derived
    lines = [_line("Complete requests", str(requests.complete)), _line("Failed requests", str(requests.failed))]
    if requests.failed:
        # the TLS kinds where a handshake was made (or failed)
        named = [name for name in ERROR_CATEGORIES
                 if not name.startswith("tls_") or result.tls is not None or getattr(result.errors, name)]
        lines.extend(_wrapped("   ", [f"{name.replace('_', ' ')} {getattr(result.errors, name)}" for name in named]))
    lines.append(_line("Non-2xx responses", str(requests.non_2xx)))
    if result.options.load.is_open:
        lines.append(_line("Unsent requests", f"{requests.unsent} (no free connection in time)"))
        lines.append(_line("Late sends", f"{requests.late} (started more than 1 ms late)"))
    lines += [
        _line("Total transferred", f"{result.bytes.total} bytes"),
        _line("Body transferred", f"{result.bytes.body} bytes"),
        _line("Bytes sent", f"{result.bytes.sent} bytes"),
        _line("Connections opened", str(result.connections_opened)),
        *_tls_line(result),
        _line("Requests per second", f"{derived.requests_per_s:.2f} [#/sec] (mean)" if result.why_no_rate() is None
              else f"n/a ({result.why_no_rate()})"),
    ]
    if derived.time_per_request_ms is not None:
        lines.append(_line("Time per request", f"{format_ms(derived.time_per_request_ms * 1000)} [ms] (mean)"))
    elif result.options.load.is_open:
        lines.append(_line("Time per request", "n/a (open loop: see the latency percentiles)"))
    elif result.agents is not None and result.agents.partial:
        lines.append(_line("Time per request", "n/a (a lost agent's connections stopped early)"))
    if derived.time_per_request_all_ms is not None:
        lines.append(
            _line(
                "Time per request",
                f"{format_ms(derived.time_per_request_all_ms * 1000)} [ms] (mean, across all concurrent requests)",
            )
        )
    if result.why_no_rate() is None:
        lines.append(_line("Transfer rate", f"{derived.received_kib_per_s:.2f} [Kbytes/sec] received"))
        lines.append(_continued(f"{derived.sent_kib_per_s:.2f} [Kbytes/sec] sent"))
    return lines


def _tls_line(result: BenchResult) -> list[str]:
    """https://: the handshakes of the measured requests, and how many resumed a session."""
    if result.tls is None:
        return []
    tls = result.tls
    return [_line("TLS handshakes", f"{tls.handshakes} ({tls.resumed} resumed, {tls.handshakes - tls.resumed} full)")]


def _connection_times(result: BenchResult) -> list[str]:
    phases = result.phases
    rows = [
        ("Connect:", phases.connect),
        *([("TLS:", phases.tls)] if result.tls is not None else []),
        ("Waiting:", phases.waiting),
        ("Processing:", phases.processing),
        ("Total:", phases.total),
    ]
    lines = ["Connection Times (ms)", _row("", ("min", "mean", "[+/-sd]", "median", "max"))]
    for label, histogram in rows:
        if histogram.count == 0:
            # e.g. keep-alive connections all opened during the warm-up: nothing was measured.
            lines.append(f"{label:<12}(none measured)")
            continue
        cells = (histogram.min_us, histogram.mean_us, histogram.stdev_us, histogram.percentiles["50"], histogram.max_us)
        lines.append(_row(label, (format_ms(cell) for cell in cells)))
    if 0 < phases.connect.count < phases.total.count:
        lines.append(f"(Connect: {phases.connect.count:,} of {phases.total.count:,} requests opened a connection)")
    return lines


def _percentiles(result: BenchResult) -> list[str]:
    latency = result.latency
    if latency.corrected.count == 0:
        return ["Latency percentiles (ms): no completed requests"]
    columns: list[tuple[str, Histogram]]
    if result.options.load.is_open:
        lines = [
            "Latency percentiles (ms), open loop:",
            "  corrected = from the intended send time, uncorrected = from the actual send",
        ]
        columns = [("corrected", latency.corrected), ("uncorrected", latency.uncorrected)]
    else:
        lines = ["Latency percentiles (ms), closed loop: latency from actual send"]
        columns = [("latency", latency.corrected)]
    lines.append(_row("", [name for name, _ in columns], label_width=8))
    for percent in PERCENTILES:
        cells = (format_ms(histogram.percentiles[percent]) for _, histogram in columns)
        lines.append(_row(f"{percent}%", cells, label_width=8))
    return lines


def _status_codes(result: BenchResult) -> list[str]:
    if not result.status:
        return ["Status codes: none (no complete response)"]
    return ["Status codes"] + [f"  {code}: {count}" for code, count in result.status.items()]


def _reply_rate(rate: ReplyRate | None) -> str:
    if rate is None:
        return _line("Reply rate [replies/s]", "n/a (measured less than one full second)")
    return _line(
        "Reply rate [replies/s]",
        f"min {rate.min:.1f} avg {rate.avg:.1f} max {rate.max:.1f} stddev {rate.stddev:.1f} ({rate.samples} s)",
    )


def _client(result: BenchResult) -> list[str]:
    cpu, per_request = result.client_cpu, result.derived.client_cpu_us_per_request
    text = f"user {cpu.user_s:.2f} s, sys {cpu.sys_s:.2f} s"
    text += _per_request(result, None if per_request is None else f"{per_request:.1f} us")
    return [_reply_rate(result.derived.reply_rate), _line("Client CPU", text)]


def _per_request(result: BenchResult, value: str | None, server: bool = False) -> str:
    """``, 46.2 us per request`` (per completed request), or why there is no such figure."""
    if value is not None:
        return f", {value} per request"
    reason = result.why_no_per_request(server)
    return "" if reason is None else f", none per request ({reason})"


def _kib(size: float | None) -> str:
    return "n/a" if size is None else f"{size / 1024:,.1f} KiB"


def _server(result: BenchResult) -> list[str]:
    """The server's processes during the run (only with --server-*)."""
    server = result.server
    if server is None:
        return []
    derived = result.derived
    per_request = derived.server_cpu_us_per_request
    shown = None if per_request is None else f"{per_request:.1f} us"
    cpu = f"{server.server_cpu_s:.2f} s" + _per_request(result, shown, server=True)
    lines = [
        f"Server (pid {server.server_pid}, {count_text(server.samples, 'sample')} every {server.interval_s:g} s)",
        _line("Server CPU", cpu + " (parent and children, user + sys)"),
        _line(
            "Children",
            f"{server.children_seen} seen, {server.children_spawned} spawned, {server.children_exited} exited",
        ),
        _line("Largest child", f"RSS {mib(server.max_child_rss, grouped=False)} MiB, "
              f"private (USS) {mib(server.max_child_uss, grouped=False)} MiB"),
        _line("Least shared", f"{mib(server.min_child_shared, grouped=False)} MiB in one child"),
    ]
    growth = server.private_growth_total
    if growth is not None:
        text = f"{_kib(growth)} in all"
        per_growth = derived.server_private_growth_bytes_per_request
        text += _per_request(result, None if per_growth is None else _kib(per_growth), server=True)
        lines.append(_line("Private growth", text))
    if server.status:
        busy = [p.busy_workers for p in server.status if p.busy_workers is not None]
        idle = [p.idle_workers for p in server.status if p.idle_workers is not None]
        if busy and idle:
            lines.append(_line("Busy / idle workers", f"max {max(busy)} busy, min {min(idle)} idle (server-status)"))
    lines.append(_line("Sampler CPU", f"{server.sampler_cpu_s:.3f} s"))
    other = server.other_cores
    if other is not None and server.machine_cpu_s is not None:
        machine = server.machine_cpu_s / server.duration_s
        lines.append(_line("Other processes", f"{other:.2f} cores (machine {machine:.2f} of "
                           f"{server.machine_cpus} CPUs busy)"))
    lines += [f"Note: {message}" for message in server.messages]
    return lines


def _agents(result: BenchResult) -> list[str]:
    """One line per agent (only with --ray), and what to beware of."""
    agents = result.agents
    if agents is None:
        return []
    skew = "" if agents.start_skew_ms is None else f", began within {agents.start_skew_ms:.1f} ms"
    lines = [f"Agents ({len(agents.members)} on {agents.nodes} node{'s' * (agents.nodes != 1)} of Ray cluster "
             f"{agents.address}{skew}; clocks to ±{agents.clock_error_ms:.1f} ms)",
             _row("agent", ("conns", "complete", "failed", "p50 ms", "p99 ms", "CPU busy"), 26)]
    for agent in agents.members:
        name = f"{agent.index} {agent.host} {agent.pid}"
        figures: tuple[str, ...] = (f"{agent.complete:,}", f"{agent.failed:,}",
                                    "-" if agent.p50_us is None else format_ms(agent.p50_us),
                                    "-" if agent.p99_us is None else format_ms(agent.p99_us))
        if agent.lost is not None:  # up to the last second it reported, not in the totals
            figures = tuple(f"({figure})" for figure in figures)
        cells = (str(agent.connections), *figures,
                 "lost" if agent.lost is not None else "-" if agent.cpu_busy is None else f"{agent.cpu_busy:.0%}")
        lines.append(_row(name[:25], cells, 26))
    lines += [f"Warning: {message}" for message in agents.warnings()]
    return lines


@public
def render_report(result: BenchResult) -> str:
    """The whole text report, ending with a newline."""
    check_instance(result, BenchResult, "render_report: result")
    sections = [
        _header(result),
        _counts(result),
        _connection_times(result),
        _percentiles(result),
        _steps(result),
        _status_codes(result),
        _client(result),
        _server(result),
        _agents(result),
        [] if result.baseline is None else baseline_lines(result.baseline),
        [] if result.gates is None else result.gates.render(),
    ]
    sections = [section for section in sections if section]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"


@public
def describe_replay(info: ReplayInfo) -> list[str]:
    """A few lines: the file, what is replayed, its span and speed; the lines read and those
    skipped (by reason; a HAR's other hosts); how its times were read."""
    times = ("whole seconds in the log: the requests of each second spread evenly over it" if info.whole_seconds
             else "sub-second times as recorded")  # fmt: skip
    late = f"; {info.out_of_order:,} out of order (sorted by time)" if info.out_of_order else ""
    cut = f" of {info.log_requests:,}" if info.requests != info.log_requests else ""
    plural = "s" * (info.log_requests != 1)
    lines = [
        f"{info.path} ({info.format.replace('_', ' ')}): {info.requests:,}{cut} request{plural} "
        f"({info.distinct:,} distinct), {plain(info.span_s)} s as recorded, at {plain(info.speed)}x: "
        f"{plain(info.length_s)} s",
        f"{count_text(info.lines, 'entry', 'entries') if info.format == 'har' else count_text(info.lines, 'line')} "
        f"read, {info.log_requests:,} "
        f"request{plural} kept" + (f"; skipped: {_skipped(info)}" if info.skipped else ""),
    ]
    if info.origin is not None and info.skipped.get("other_host"):
        lines.append(other_hosts(info.origin, info.skipped["other_host"]))
    return [*lines, f"{times}{late}"]


def _skipped(info: ReplayInfo) -> str:
    """``malformed 1, method 3 (not GET or HEAD: --log-methods)``."""
    why = {"method": f" (not {' or '.join(info.methods)}: --log-methods)"}
    return ", ".join(f"{reason.replace('_', ' ')} {count:,}{why.get(reason, '')}"
                     for reason, count in info.skipped.items())  # fmt: skip


@public
def other_hosts(origin: str, skipped: int) -> str:
    """What a HAR's origin filter left out, in words."""
    return (f"Only the requests to {origin} (the HAR's most frequent origin): {skipped:,} to other hosts "
            "(CDNs, analytics, fonts) left out")  # fmt: skip
