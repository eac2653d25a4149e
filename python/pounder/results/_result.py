"""The result of a bench: the engine's measurements (``_measured``) plus what the Python side adds
(tool version, start time, the options used (``_run_options``), whether the run was interrupted), and the
figures derived from them. ``docs/reference/results.md`` documents every field; the JSON written by
:meth:`BenchResult.to_json` follows ``pounder/schemas/bench-result.schema.json``.

Units follow the field names: ``_us`` microseconds, ``_ms`` milliseconds, ``_s`` seconds, bytes
unless said otherwise; ``KiB`` is 1024 bytes (like ab's "Kbytes/sec").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any

from pounder._errors import UsageError, check_path, public
from pounder._files import RESULT_LIMIT, check_input_file
from pounder._records import decode_json
from pounder.procs import MalformedReportError, ServerLoadReport, per_request
from pounder.results import _measured as measured
from pounder.results._baseline import Baseline
from pounder.results._distributed import Agents, read_agents
from pounder.results._gates import GateReport
from pounder.results._measured import READ, MalformedResultError, measurements
from pounder.results._run_options import RunOptions, read_run_options
from pounder.results._steps import StepStats, read_steps

SCHEMA = "pounder/bench-result/3"
READ_SCHEMAS = ("pounder/bench-result/1", "pounder/bench-result/2", SCHEMA)
"""What :meth:`BenchResult.from_json` reads: version 2 has no ``agents``; version 1 has the same layout
as 2, and its stored ``derived`` divided the CPU and growth per request by the requests attempted
(``derived`` is recomputed when read)."""
_FULL_SECOND_SLACK_S = 0.001


# ---------------------------------------------------------------------------------------------
# Derived figures


@public
@dataclass(frozen=True)
class ReplyRate:
    """Completed replies per second over the full seconds of the measured phase (a final partial
    second is left out): minimum, mean, maximum, sample standard deviation, number of seconds."""

    min: float
    avg: float
    max: float
    stddev: float
    samples: int


@public
@dataclass(frozen=True)
class Derived:
    """Figures computed from the measurements (never stored by the engine)."""

    requests_per_s: float
    """complete / elapsed_s."""
    time_per_request_ms: float | None
    """ab's "Time per request (mean)": connections x elapsed / complete. Closed loop only (in open
    loop ``connections`` is a cap, not a concurrency); None when nothing completed."""
    time_per_request_all_ms: float | None
    """ab's "(mean, across all concurrent requests)": elapsed / complete; None when nothing completed."""
    received_kib_per_s: float
    """bytes.total / 1024 / elapsed_s."""
    sent_kib_per_s: float
    """bytes.sent / 1024 / elapsed_s."""
    reply_rate: ReplyRate | None
    """None when the measured phase lasted less than one full second."""
    client_cpu_us_per_request: float | None
    """Engine CPU (user + sys) per completed request, warm-up included (the CPU time covers it);
    None when no request completed (``why_no_per_request`` says why in the reports)."""
    server_cpu_us_per_request: float | None = None
    """Server CPU (parent and children, user + sys) per completed request, warm-up included (the
    sampling covers it); None without ``--server-*``, when no request completed, or when the server's
    root exited during the run (its CPU after the last sample is unknown)."""
    server_private_growth_bytes_per_request: float | None = None
    """Growth of the children's private memory (USS, summed over the children present from the
    first to the last sample) per completed request: a leak shows as a steady positive value."""


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else 0.0


def reply_rate(series: tuple[measured.SecondSample, ...], elapsed_s: float) -> ReplyRate | None:
    """Reply-rate statistics over the full seconds (missing seconds count as 0 replies), in time
    and memory of the series' entries, not of the seconds (a result read back may claim any
    duration): the seconds with no entry are counted, not listed."""
    full_seconds = math.floor(elapsed_s + _FULL_SECOND_SLACK_S)
    if full_seconds < 1:
        return None
    by_second = {sample.second: sample.complete for sample in series if sample.second < full_seconds}
    counts = list(by_second.values())
    empty = full_seconds - len(counts)  # seconds with no entry: 0 replies each
    total, squares = sum(counts), sum(count * count for count in counts)
    spread = Fraction(full_seconds * squares - total * total, full_seconds * (full_seconds - 1)) if full_seconds > 1 \
        else Fraction(0)
    return ReplyRate(
        min=float(min(counts, default=0) if not empty else 0),
        avg=total / full_seconds,
        max=float(max(counts, default=0)),
        stddev=math.sqrt(spread),
        samples=full_seconds,
    )


# ---------------------------------------------------------------------------------------------
# The result


@public
@dataclass(frozen=True)
class BenchResult:
    """Everything a bench measured plus what it was run with. Build one with
    :meth:`from_engine` (fresh run) or :meth:`from_json` (saved file); ``derived`` holds the
    computed figures."""

    tool_version: str
    started_at: str
    interrupted: bool
    options: RunOptions
    elapsed_s: float
    warmup: measured.WarmupCounts
    requests: measured.RequestCounts
    bytes: measured.ByteCounts
    connections_opened: int
    status: Mapping[str, int]
    errors: measured.ErrorCounts
    latency: measured.Latency
    phases: measured.Phases
    series: tuple[measured.SecondSample, ...]
    client_cpu: measured.ClientCpu
    histogram: str
    server: ServerLoadReport | None = None
    """The server's processes sampled during the run (``--server-pid`` and co.), else None."""
    agents: Agents | None = None
    """The agents that sent the load (``--ray``), else None: the figures are their merged ones."""
    steps: tuple[StepStats, ...] | None = None
    """A scenario's steps (``--scenario``), in the file's order, else None."""
    tls: measured.TlsCounts | None = None
    """https://: the TLS handshakes and how many resumed a session; None when no target was https://."""
    io: measured.IoInfo | None = None
    """The engine's I/O path (io_uring or epoll) and why; None in results from before the io_uring path."""
    gates: GateReport | None = None
    """The ``--fail-if`` gates evaluated on this result (:func:`~pounder.results.evaluate_gates`), else None."""
    baseline: Baseline | None = None
    """This run against a saved one (``--baseline``, :func:`~pounder.results.compare_with_baseline`), else None."""

    @property
    def completed_requests(self) -> int:
        """What the per-request CPU and growth figures divide by: the requests that completed,
        measured and warm-up (the CPU clocks and the sampling cover both)."""
        return self.requests.complete + self.warmup.complete

    def why_no_rate(self) -> str | None:
        """Why the rates (requests and bytes per second) are no figures: a measured phase shorter
        than the engine's clock tick (1 ns) divides by nothing; None when they are figures."""
        if self.elapsed_s < 1e-9:
            return "the measured phase lasted 0 s"
        return None

    def why_no_per_request(self, server: bool = False) -> str | None:
        """Why the per-request figures (the server's with ``server``) are missing; None when they are there."""
        if not self.completed_requests:
            return "no request completed" if self.requests.failed + self.warmup.failed else "no request was sent"
        if server and self.server is not None and self.server.root_exited:
            return "the server exited during the run"
        if server and self.server is not None and self.server.serves_url is False:
            return (f"process {self.server.server_pid} does not listen where the requests went: another server, "
                    "or a backend behind a proxy")
        return None

    @cached_property
    def derived(self) -> Derived:
        complete, elapsed = self.requests.complete, self.elapsed_s
        # Per request means per request served: a failed one (refused, reset, timed out) did not
        # cost what a served one does, so dividing by it would make the figure wrong.
        completed = self.completed_requests
        cpu_s = self.client_cpu.user_s + self.client_cpu.sys_s
        server = None if self.server is None else per_request(self.server, completed)
        return Derived(
            requests_per_s=_ratio(complete, elapsed),
            time_per_request_ms=(
                None
                if complete == 0 or self.options.load.is_open or (self.agents is not None and self.agents.partial)
                else self.options.load.connections * elapsed * 1000 / complete
            ),
            time_per_request_all_ms=None if complete == 0 else elapsed * 1000 / complete,
            received_kib_per_s=_ratio(self.bytes.total / 1024, elapsed),
            sent_kib_per_s=_ratio(self.bytes.sent / 1024, elapsed),
            reply_rate=reply_rate(self.series, elapsed),
            client_cpu_us_per_request=None if completed == 0 else cpu_s * 1e6 / completed,
            server_cpu_us_per_request=None if server is None else server.server_cpu_us_per_request,
            server_private_growth_bytes_per_request=(
                None if server is None else server.private_growth_bytes_per_request
            ),
        )

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_engine(
        cls,
        engine_json: str,
        *,
        options: RunOptions,
        started_at: str,
        interrupted: bool,
        tool_version: str,
        server: ServerLoadReport | None = None,
        agents: Agents | None = None,
    ) -> BenchResult:
        """Combine the engine's result JSON with the run's metadata (and the server sampling).
        Raises :class:`MalformedResultError` if the engine's JSON does not follow the contract."""
        data = _decode(engine_json)
        return cls(
            tool_version=tool_version,
            started_at=started_at,
            interrupted=interrupted,
            options=options,
            server=server,
            agents=agents,
            steps=read_steps(data.get("steps"), "steps"),
            **measurements(data),
        )

    @classmethod
    def from_json(cls, text: str) -> BenchResult:
        """Read what :meth:`to_json` wrote (``derived`` is recomputed, not read)."""
        return cls.from_dict(_decode(text))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BenchResult:
        """Read the decoded document :meth:`to_json` wrote (:meth:`to_dict`); every count must be
        a whole number >= 0. Raises :class:`MalformedResultError` naming the key."""
        data = READ.as_dict(data, "the top level")
        schema = data.get("schema")
        if schema not in READ_SCHEMAS:
            raise MalformedResultError(f"'schema' is {schema!r}, expected {SCHEMA!r} (or an earlier "
                                       f"{', '.join(map(repr, READ_SCHEMAS[:-1]))})")
        return cls(
            tool_version=READ.as_str(READ.get(data, "tool_version"), "tool_version"),
            started_at=READ.as_str(READ.get(data, "started_at"), "started_at"),
            interrupted=READ.as_bool(READ.get(data, "interrupted"), "interrupted"),
            options=read_run_options(READ.get(data, "options"), "options"),
            server=_server(data.get("server")),
            agents=read_agents(data.get("agents"), "agents"),
            gates=None if data.get("gates") is None else GateReport.from_list(data["gates"]),
            baseline=None if data.get("baseline") is None else Baseline.from_dict(data["baseline"]),
            steps=read_steps(data.get("steps"), "steps"),
            **measurements(data),
        )

    # -- output ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict :meth:`to_json` writes (see the schema)."""
        plain = asdict(self)
        connections_opened = plain.pop("connections_opened")
        plain["server"] = None if self.server is None else self.server.to_dict()
        plain["agents"] = None if self.agents is None else self.agents.to_dict()
        plain.pop("gates")
        if self.gates is not None:  # only when gates were given
            plain["gates"] = self.gates.to_list()
        plain.pop("baseline")
        if self.baseline is not None:  # only with --baseline
            plain["baseline"] = self.baseline.to_dict()
        plain["options"]["load"] = self.options.load.to_dict()
        if plain["options"]["scenario"] is None:  # a scenario's file and its steps only when one ran
            del plain["options"]["scenario"]
        if plain["steps"] is None:
            del plain["steps"]
        if plain["tls"] is None:  # the handshakes only when a target was https://
            del plain["tls"]
        if plain["io"] is None:  # a result from before the io_uring path, read and written again
            del plain["io"]
        if plain["options"]["tls"] is None:  # its settings too
            del plain["options"]["tls"]
        if plain["options"]["expect_status"] is None:  # only when --expect-status was given
            del plain["options"]["expect_status"]
        else:
            plain["options"]["expect_status"] = [list(pair) for pair in self.options.expect_status or ()]
        plain["options"]["http"]["headers"] = [list(pair) for pair in self.options.http.headers]
        plain["options"]["targets"] = [  # a target's own method only when its URL file line named one
            {key: value for key, value in target.items() if key != "method" or value is not None}
            for target in plain["options"]["targets"]
        ]
        return {
            "schema": SCHEMA,
            **plain,
            "connections": {"opened": connections_opened},
            "series": [sample.to_dict() for sample in self.series],
            "derived": asdict(self.derived),
        }

    def to_junit(self) -> str:
        """The result as JUnit XML (``pounder bench --junit``: :mod:`pounder.results._junit`)."""
        from pounder.results._junit import bench_junit

        return bench_junit(self).render()

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False) + "\n"


def _server(value: object) -> ServerLoadReport | None:
    if value is None:
        return None
    try:
        return ServerLoadReport.from_dict(READ.as_dict(value, "server"))
    except MalformedReportError as error:
        raise MalformedResultError(f"server: {error}") from None


def _decode(text: str) -> Mapping[str, Any]:
    try:
        data = decode_json(text)
    except json.JSONDecodeError as error:
        raise MalformedResultError(f"not valid JSON ({error.msg} at line {error.lineno})") from None
    return READ.as_dict(data, "the top level")


@public
def load_result(path: str | Path) -> BenchResult:
    """Read a result JSON written by ``pounder bench --json`` (or :meth:`BenchResult.to_json`).

    Raises :class:`~pounder.UsageError` if the file is missing or is not a pounder bench result.
    """
    path = Path(check_path(path, "load_result: path"))
    check_input_file(path, "result file", RESULT_LIMIT)
    try:
        data = _decode(path.read_text(encoding="utf-8"))  # the text is let go before the records are made
    except FileNotFoundError:
        raise UsageError(f"result file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read result file {path}: {error}") from None
    except MalformedResultError as error:
        raise UsageError(f"{path} is not a pounder bench result: {error}") from None
    try:
        return BenchResult.from_dict(data)
    except MalformedResultError as error:
        raise UsageError(f"{path} is not a pounder bench result: {error}") from None
