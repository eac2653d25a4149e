"""A scenario with bench's other options (``pounder bench --scenario FILE URL``): the options a
scenario's steps replace are refused in one line, and the URL must be the server's base (the
paths come from the steps). The file itself is read in traffic/_scenario.py."""

from __future__ import annotations

from typing import Any

from pounder._errors import UsageError, public
from pounder.traffic._url import parse_url

_EXCLUDED = (
    ("method", "-m/--method", "each step names its method"),
    ("body", "-b/--body", "each step has its own body"),
    ("content_type", "-T/--content-type", "each step's body sets its Content-Type (or its headers do)"),
    ("cookies", "--cookie", "each virtual user's cookie jar sends the cookies"),
    (
        "calls_per_conn",
        "--calls-per-conn",
        "a virtual user keeps its connection (or opens one per request with --no-keepalive)",
    ),
    ("expect_status", "--expect-status", "each step's expect says which statuses it expects (default 200-399)"),
)


@public
def check_scenario_options(given: Any, url: str | None, url_file: object, access_log: object, order: object) -> str:
    """The options that cannot go with ``--scenario`` (one line naming the first); returns the base
    URL (``scheme://host[:port]``, checked)."""
    for field, flag, why in _EXCLUDED:
        if getattr(given, field) not in (None, (), ""):
            raise UsageError(f"{flag} cannot go with --scenario: {why}")
    for value, flag in ((url_file, "-f/--url-file"), (access_log, "--access-log"), (order, "--order")):
        if value is not None:
            raise UsageError(f"{flag} cannot go with --scenario: the scenario file gives the requests")
    if url is None or not url.strip():
        raise UsageError("--scenario needs the server's base URL, e.g. http://127.0.0.1:8000")
    parse_url(url, "base URL: ")
    text = url.strip()
    rest = text.split("://", 1)[-1]
    if "/" in rest.rstrip("/") or "?" in rest or "#" in rest:
        raise UsageError(
            f"with --scenario the URL is the server's base, scheme://host[:port] only, got {url!r}: the "
            "paths come from the scenario's steps"
        )
    return text.rstrip("/")
