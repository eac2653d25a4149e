"""``pounder top``: what every child of a pre-forking server is doing now, view after view.

Each view lists the children with their state, the requests each served (when the server's
status page tells it), CPU % since the view before (the kernel's per-process CPU clock), USS,
shared and PSS (smaps_rollup) and age; the pool's totals (footprint = sum of PSS, requests per
second from the status page's total, the connections waiting in the accept queue); and the
children that appeared or exited during the last few views.

The state is the server's own word when its status page is given (Apache mod_status's table,
php-fpm's ``?full&json``, uWSGI's stats server, Puma's ``/stats``), else read from /proc:
``running``, ``accept`` (blocked waiting for a connection on the server's listening socket, or
on the accept mutex) or ``sleeping`` with the kernel function it waits in.

::

    from pounder.procs import find_server
    from pounder.top import Top, render_top

    server = find_server(pidfile="/run/apache2/apache2.pid")
    with Top(server, status="http://127.0.0.1/server-status") as top:
        time.sleep(1)
        print(render_top(top.view()))

:class:`TopExporter` serves the views it is given as a Prometheus scrape endpoint (``pounder top
--prometheus``; needs ``prometheus_client``, ``pip install 'pounder[metrics]'``)::

    with Top(server) as top, TopExporter("127.0.0.1:9464") as exporter:
        while True:
            exporter.publish(top.view())
            time.sleep(1)
"""

from pounder.top._prometheus import TopExporter, check_scrape_address, view_families
from pounder.top._read import MAX_CHILDREN, MalformedTopError, top_from_dict
from pounder.top._render import compact_line, render_top, totals_line
from pounder.top._status import ChildStatus, StatusRead, check_status_url, parse_status_page, read_status
from pounder.top._top import DEFAULT_MARKS, Top, top_view
from pounder.top._view import TOP_SCHEMA, ChildRow, ExitedChild, TopTotals, TopView

__all__ = [
    "DEFAULT_MARKS",
    "MAX_CHILDREN",
    "TOP_SCHEMA",
    "ChildRow",
    "ChildStatus",
    "ExitedChild",
    "MalformedTopError",
    "StatusRead",
    "Top",
    "TopExporter",
    "TopTotals",
    "TopView",
    "check_scrape_address",
    "check_status_url",
    "compact_line",
    "parse_status_page",
    "read_status",
    "render_top",
    "top_from_dict",
    "top_view",
    "totals_line",
    "view_families",
]
