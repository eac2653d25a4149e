"""Type stub of the Rust engine (``crates/py``); see docs/reference/engine-contract.md.

The spec types follow what the engine reads (``crates/engine/src/spec/dict.rs``, with serde): a
key it reads with a default is ``NotRequired`` and may be None (None counts as missing); a required
key may not be None; a key of none of these dicts is refused (ValueError naming it), not ignored.
"""

from collections.abc import Sequence
from os import PathLike
from typing import Literal, TypedDict, final

from typing_extensions import NotRequired

# as at runtime; the TypedDicts below exist only for type checkers
__all__ = ["start", "merge", "tls_probe", "sum_seconds", "flamegraph_svg", "collapse_perf", "Run", "__version__"]

__version__: str

class EngineTarget(TypedDict):
    """One target. Exactly one of ``tcp`` and ``unix`` is set (checked by the engine)."""

    # socket addresses tried in order until one accepts: "127.0.0.1:8080", "127.0.0.1:8080,[::1]:8080"
    tcp: NotRequired[str | None]
    unix: NotRequired[str | None]  # a Unix socket path
    request: bytes  # the complete HTTP/1.1 request, sent byte for byte
    head: NotRequired[bool | None]  # default False: the response has no body whatever its headers say
    weight: NotRequired[int | None]  # default 1; ≥ 1
    # https: the server name (SNI, and the name the certificate must hold; an IP address sends no
    # SNI and is checked against the certificate's addresses); None: plain HTTP. Needs tcp.
    tls_name: NotRequired[str | None]

class EngineTls(TypedDict):
    """How https targets are trusted (PEM contents, not paths: agents on other machines get them)."""

    insecure: bool  # accept any server certificate (the handshake's signatures are still checked)
    ca_pem: bytes | None  # trust only these roots; None: the system's
    cert_pem: bytes | None  # client certificate chain, with key_pem
    key_pem: bytes | None
    resume: bool  # session resumption; False: every handshake is a full one

# [duration_s, start_rate, end_rate]: exactly three numbers (checked by the engine).
EngineStage = Sequence[float]

class EngineTextPiece(TypedDict):
    text: bytes  # sent as it is

class EngineVarPiece(TypedDict):
    var: int  # index into EngineScenario["vars"]
    # raw: as it is (a captured value with CR, LF or NUL in a head is a missed capture); form:
    # x-www-form-urlencoded value (unreserved kept, space +); json: inside a JSON string; path: in
    # a target's path (unreserved, sub-delims, :@/? and %XX kept, the rest %XX)
    enc: Literal["raw", "form", "json", "path"]

EnginePiece = EngineTextPiece | EngineVarPiece

# header: the named response header's value; cookie: the named cookie of Set-Cookie; body: the first
# group of regex on the body's first 1 MiB (regex on a header's or cookie's value too when given).
# "var": index into EngineScenario["vars"]. ("from" is a keyword: the functional form.)
EngineCapture = TypedDict(
    "EngineCapture",
    {"var": int, "from": Literal["header", "cookie", "body"], "name": str | None, "regex": str | None},
)

class EngineStep(TypedDict):
    """One request of a virtual user (a scenario's step)."""

    name: str
    target: int  # index into EngineSpec["targets"]: its address; its request bytes are not used
    head: list[EnginePiece]  # request line + headers, each ending CRLF, no blank line, no Cookie/Content-Length
    body: list[EnginePiece] | None
    is_head: bool
    expect: list[int] | None  # None: 200-399
    think_s: float  # closed loop: pause after the step (not measured); open loop: ignored
    captures: list[EngineCapture]

class EngineScenario(TypedDict):
    """Virtual users with sessions: the first ``login`` steps once per user, the rest in a loop."""

    vars: list[str]
    login: int
    steps: list[EngineStep]

class EngineReplay(TypedDict):
    """A timed replay: request i is sent ``times_us[i]`` µs after the start (non-decreasing), to
    ``spec["targets"][targets[i]]``; the same lengths, at least one request."""

    times_us: list[int]
    targets: list[int]

class EngineSpec(TypedDict):
    """What ``start`` takes (docs/reference/engine-contract.md, "The spec")."""

    targets: list[EngineTarget]  # at least one; a list of dicts
    order: NotRequired[Literal["sequential", "random"] | None]  # default "sequential"
    # Load model
    connections: int
    threads: NotRequired[int | None]  # default 1
    requests: NotRequired[int | None]
    duration_s: NotRequired[float | None]
    warmup_requests: NotRequired[int | None]  # default 0; excludes warmup_s
    warmup_s: NotRequired[float | None]  # default 0.0
    stages: NotRequired[Sequence[EngineStage] | None]  # None: closed loop
    replay: NotRequired[EngineReplay | None]  # open loop at explicit times; excludes stages, order, warm-up
    # HTTP
    keepalive: NotRequired[bool | None]  # default True
    calls_per_conn: NotRequired[int | None]  # default 0 (no limit)
    timeout_s: NotRequired[float | None]  # default 30.0
    throttle_bps: NotRequired[int | None]
    # One share of a run over several agents
    start_at_unix_us: NotRequired[int | None]  # start then (this machine's clock), not at once
    slot_offset: NotRequired[int | None]  # default 0; below slot_stride
    slot_stride: NotRequired[int | None]  # default 1: this run takes slots offset, offset + stride, ...
    export_histograms: NotRequired[bool | None]  # default False: raw histograms in the result, for merge()
    # https targets: how they are trusted; None: the system's roots, resumption on
    tls: NotRequired[EngineTls | None]
    # Virtual users with sessions (a scenario file)
    scenario: NotRequired[EngineScenario | None]
    # I/O path: auto (io_uring when the kernel allows it and nothing needs epoll), uring, epoll
    io: NotRequired[Literal["auto", "uring", "epoll"] | None]  # default "auto"
    # Outputs
    tsv_path: NotRequired[str | PathLike[str] | None]
    hdr_log_path: NotRequired[str | PathLike[str] | None]

class ProgressInfo(TypedDict):
    phase: Literal["waiting", "warmup", "measure", "drain", "done"]
    elapsed_s: float
    complete: int
    failed: int
    rate: float
    in_flight: int  # requests started and not yet answered, failed or aborted, now (warm-up's too)

@final
class Run:
    """A run in flight (made by ``start``, not constructible)."""

    def progress(self) -> ProgressInfo: ...
    def wait(self, timeout_s: float) -> bool: ...
    def cancel(self) -> None: ...
    def result(self) -> str | None: ...  # None until wait() has returned True
    def seconds(self, start: int) -> list[str]:
        """The finished seconds of the series from the ``start``-th on, each a JSON entry of the
        result's ``series`` (with its histogram only with ``export_histograms``)."""

def start(spec_dict: EngineSpec) -> Run:
    """Validates the spec (ValueError when it is bad) and starts the run in background threads."""

def choose_io(spec_dict: EngineSpec) -> tuple[Literal["uring", "epoll"], str]:
    """The I/O path ``spec_dict`` would take and why (the result's ``io``); ValueError (one line)
    when ``io="uring"`` cannot be taken here, naming what stands in the way."""

def tls_probe(tcp: str, tls_name: str, tls: EngineTls, timeout_s: float) -> str | None:
    """One TLS handshake (no HTTP request) to ``tcp`` (addresses tried in order) as a run would make
    it: None when it succeeds or no address accepts the connection, else a one-line reason ("certificate
    not trusted (UnknownIssuer)"). ValueError naming the field when the options are bad."""

def regex_groups(pattern: str) -> int:
    """The number of groups of a capture's regex as the engine compiles it (Rust regex syntax);
    ValueError with the regex crate's message, on one line, when it does not compile."""

def sum_seconds(entries: Sequence[str]) -> str:
    """Adds up series entries of one share (from ``Run.seconds``) into JSON with ``seconds``,
    ``complete``, ``non_2xx``, ``failed``, ``bytes``, ``mean_us`` and ``p50_us``/``p90_us``/``p99_us``/
    ``max_us``; ValueError naming a bad entry's index."""

def merge(results: Sequence[str]) -> str:
    """Merges the result JSONs of the shares of one run (each made with ``export_histograms``) into one
    result JSON of the same shape; ValueError (naming the bad result's index) when one cannot be merged."""

def flamegraph_svg(folded: str, title: str, count_name: str) -> str:
    """The SVG text of the flame graph (inferno) of ``folded`` (``outer;...;leaf COUNT`` lines),
    titled ``title``, counts called ``count_name`` ("samples" or "ns"); colours from the function
    names' hashes (the same every time), search included. ValueError (one line) on a malformed line
    or no samples."""

def collapse_perf(script: str) -> str:
    """``perf script`` text folded (inferno) into ``comm-PID;outer;...;leaf COUNT`` lines, the pid
    kept in the root frame; a sample counts 1 unless the script shows each sample's period."""
