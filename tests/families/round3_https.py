"""TLS reasons, HTTPS in experiments, a probe the server does not log.
(issue 39 items 8, 11, 20.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``."""

from __future__ import annotations

import run as R  # noqa: F401
from harness import Case  # noqa: F401


def fam_https() -> list[Case]:
    return []


FAMILIES = {"https": fam_https}
