"""The live view as a Prometheus scrape endpoint (``pounder top --prometheus ADDRESS``): the last
:class:`~pounder.top.TopView` shown, served at ``http://ADDRESS/metrics`` in Prometheus' text
exposition format by the ``prometheus_client`` library (its HTTP server on a daemon thread, a
collector of our own that yields the view's figures at each scrape: a scrape reads nothing of the
server itself, so it never shortens the interval a CPU % is measured over).

``prometheus_client`` is an optional dependency (``pip install 'pounder[metrics]'``), imported
only when an endpoint is made. The figures (:func:`view_families`), each labelled with the server's
process name (``server``) and, for a child, its ``pid``:

* ``pounder_top_child_state{state, source}`` 1: the child's state now, the status page's word
  (``source="status"``) or /proc's (``source="proc"``);
* ``pounder_top_child_requests_total``: requests served by the child (only when the status page
  tells it);
* ``pounder_top_child_cpu_seconds_total``: its CPU time so far (all threads, the kernel's
  per-process clock), for ``rate()`` over any window whatever top's interval;
  ``pounder_top_child_cpu_ratio``: its CPU time over the wall time since the view before (1 is
  one CPU; top's CPU % / 100);
* ``pounder_top_child_uss_bytes``, ``pounder_top_child_shared_bytes``,
  ``pounder_top_child_pss_bytes`` (smaps_rollup), ``pounder_top_child_age_seconds``;
* the pool's: ``pounder_top_children``, ``pounder_top_footprint_bytes`` (sum of PSS over the
  tree, parent included), ``pounder_top_children_uss_bytes``, ``pounder_top_parent_rss_bytes``,
  ``pounder_top_requests_per_second`` (status page), ``pounder_top_accept_queue_connections``,
  ``pounder_top_view_timestamp_seconds`` (when the view was read, Unix time),
  ``pounder_top_server_info{pid, states_from}``.

A figure top does not know (no status page, the first view's CPU %) is left out, not sent as 0."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterator
from typing import Any

from pounder._errors import UsageError, public
from pounder._ip import is_loopback
from pounder.top._view import TopView

PROMETHEUS_EXTRA = "metrics"
"""The extra that installs ``prometheus_client`` (``pip install 'pounder[metrics]'``)."""
PREFIX = "pounder_top_"


@public
def check_scrape_address(address: str, *, allow_remote: bool = False) -> tuple[str, int]:
    """``--prometheus ADDRESS`` as (host, port): ``HOST:PORT``, ``[IPv6]:PORT`` or ``:PORT`` (on
    127.0.0.1), the host an IP address or ``localhost``; an address that is not this machine's
    loopback only with ``allow_remote`` (the figures are then served to the network); and
    ``prometheus_client`` installed. :class:`~pounder.UsageError` otherwise."""
    if not isinstance(address, str):
        raise UsageError(f"--prometheus must be an address as a string (HOST:PORT), not {address!r}")
    host, colon, port_text = address.rpartition(":")
    if not colon or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise UsageError(f"--prometheus {address!r}: give HOST:PORT (127.0.0.1:9464, [::1]:9464, or :9464 for "
                         "127.0.0.1), the port from 1 to 65535")  # fmt: skip
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise UsageError(f"--prometheus {address!r}: write an IPv6 address in brackets ([::1]:{port_text})")
    if host in ("", "localhost"):
        host = "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise UsageError(f"--prometheus {address!r}: the host must be an IP address of this machine or "
                         "localhost") from None  # fmt: skip
    if not allow_remote and not is_loopback(str(ip)):
        raise UsageError(f"--prometheus {address}: not a loopback address (127.0.0.0/8, ::1), so the figures "
                         "would be served to the network: add --allow-remote if that is meant")  # fmt: skip
    _client()
    return str(ip), int(port_text)


def _client() -> Any:
    try:
        import prometheus_client
        import prometheus_client.core
    except ImportError:
        raise UsageError("--prometheus needs the prometheus_client package "
                         f"(pip install 'pounder[{PROMETHEUS_EXTRA}]')") from None  # fmt: skip
    return prometheus_client


@public
def view_families(view: TopView) -> list[Any]:
    """The figures of ``view`` as ``prometheus_client`` metric families (see the module's
    documentation for their names); needs the ``prometheus_client`` package."""
    core = _client().core
    server = view.name
    child_labels = ["server", "pid"]

    def gauge(name: str, text: str, labels: list[str] | None = None) -> Any:
        return core.GaugeMetricFamily(PREFIX + name, text, labels=labels or child_labels)

    state = gauge("child_state", "The child's state now (1): the server's status page's word (source=status) or "
                  "/proc's (source=proc: running, accept, sleeping).", ["server", "pid", "state", "source"])
    requests = core.CounterMetricFamily(PREFIX + "child_requests", "Requests served by the child, as the "
                                        "server's status page tells it.", labels=child_labels)  # fmt: skip
    cpu_s = core.CounterMetricFamily(PREFIX + "child_cpu_seconds", "The child's CPU time so far (all threads, "
                                     "the kernel's per-process clock).", labels=child_labels)  # fmt: skip
    cpu = gauge("child_cpu_ratio", "The child's CPU time (all threads) over the wall time since the view before: "
                "1 is one CPU.")
    uss = gauge("child_uss_bytes", "The child's unique set size: Private_Clean + Private_Dirty of smaps_rollup.")
    shared = gauge("child_shared_bytes", "The child's pages shared with other processes: Shared_Clean + "
                   "Shared_Dirty of smaps_rollup.")
    pss = gauge("child_pss_bytes", "The child's proportional set size (Pss of smaps_rollup).")
    age = gauge("child_age_seconds", "Seconds since the child started.")
    for child in view.children:
        pid = str(child.pid)
        state.add_metric([server, pid, child.state, child.state_from], 1)
        if child.requests is not None:
            requests.add_metric([server, pid], child.requests)
        if child.cpu_s is not None:
            cpu_s.add_metric([server, pid], child.cpu_s)
        if child.cpu_percent is not None:
            cpu.add_metric([server, pid], child.cpu_percent / 100)
        uss.add_metric([server, pid], child.uss)
        shared.add_metric([server, pid], child.shared)
        pss.add_metric([server, pid], child.pss)
        age.add_metric([server, pid], child.age_s)
    totals = view.totals
    pool: list[Any] = []
    for name, text, value in (
        ("children", "The server's children now.", totals.children),
        ("footprint_bytes", "Sum of PSS over every process of the server's tree, parent included.",
         totals.footprint),
        ("children_uss_bytes", "The children's USS summed.", totals.children_uss),
        ("parent_rss_bytes", "The parent's resident set size.", totals.parent_rss),
        ("requests_per_second", "Requests per second over the time since the view before, from the status "
         "page's total of requests.", totals.requests_per_s),
        ("accept_queue_connections", "Connections waiting to be accepted on the server's TCP listening sockets.",
         totals.accept_queue),
        ("view_timestamp_seconds", "When the view was read (Unix time).", view.taken_at),
    ):
        if value is not None:
            family = gauge(name, text, ["server"])
            family.add_metric([server], value)
            pool.append(family)
    info = core.InfoMetricFamily(PREFIX + "server", "The server top watches: its parent's pid and who tells the "
                                 "children's states (a status page's kind, or proc).",
                                 labels=["server"])  # fmt: skip
    info.add_metric([server], {"pid": str(view.root_pid), "states_from": view.status or "proc"})
    return [state, requests, cpu_s, cpu, uss, shared, pss, age, *pool, info]


@public
class TopExporter:
    """A Prometheus scrape endpoint serving the last view given to :meth:`publish` (nothing before
    the first) at ``http://ADDRESS/metrics`` (:func:`check_scrape_address`), from the moment it is
    made until :meth:`close` (or the end of ``with``). :class:`~pounder.UsageError` when the address
    is refused, cannot be listened on (a port in use) or ``prometheus_client`` is missing."""

    def __init__(self, address: str, *, allow_remote: bool = False) -> None:
        host, port = check_scrape_address(address, allow_remote=allow_remote)
        client = _client()  # (checked)
        self._view: TopView | None = None
        registry = client.CollectorRegistry(auto_describe=False)
        registry.register(_Collector(self))
        try:
            self._server, self._thread = client.start_http_server(port, host, registry=registry)
        except OSError as error:
            raise UsageError(f"--prometheus {address}: cannot listen there ({error.strerror or error})") from None
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}/metrics"
        self._closed = threading.Event()

    def publish(self, view: TopView) -> None:
        """Serve ``view`` from now on."""
        self._view = view

    def families(self) -> Iterator[Any]:
        view = self._view
        if view is not None:
            yield from view_families(view)

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> TopExporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Collector:
    """prometheus_client's custom collector: the exporter's last view, read at each scrape."""

    def __init__(self, exporter: TopExporter) -> None:
        self._exporter = exporter

    def collect(self) -> Iterator[Any]:
        return self._exporter.families()
