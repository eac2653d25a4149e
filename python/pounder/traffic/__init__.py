"""What a load sends: URLs (``_url``: parsed, resolved, loopback only unless allowed) and URL files
(``_parse``, with the request options as a human types them: headers, cookies, credentials,
bodies), the request (``_request``: a template rendered per target), the user's traffic from an
access log or a HAR as a mix (``_access_log``, its lines read in ``_log_lines``, a HAR in
``_har``) or a timed replay (``_replay``), and logged-in virtual users from a scenario file
(``_scenario``; with bench's other options in ``_scenario_options``; their request templates in
``_templates``). Between :mod:`pounder.results` (the records it fills, such as a replay's
:class:`~pounder.results.ReplayInfo`) and :mod:`pounder.load`, whose spec puts it together."""

from pounder._ip import is_loopback
from pounder.traffic._access_log import AccessLog, base_of, read_access_log, write_url_file
from pounder.traffic._parse import UrlLine, read_url_file, read_url_targets
from pounder.traffic._replay import ReplayPlan, plan_replay, recorded_request
from pounder.traffic._request import RequestTemplate, build_request_template, recorded_headers
from pounder.traffic._scenario import Scenario, read_scenario
from pounder.traffic._scenario_options import check_scenario_options
from pounder.traffic._url import NotLoopbackError, check_unix_socket, parse_url, resolve, server_name

__all__ = [
    "AccessLog",
    "NotLoopbackError",
    "ReplayPlan",
    "RequestTemplate",
    "Scenario",
    "UrlLine",
    "base_of",
    "build_request_template",
    "check_scenario_options",
    "check_unix_socket",
    "is_loopback",
    "parse_url",
    "plan_replay",
    "read_access_log",
    "read_scenario",
    "read_url_file",
    "read_url_targets",
    "recorded_headers",
    "recorded_request",
    "resolve",
    "server_name",
    "write_url_file",
]
