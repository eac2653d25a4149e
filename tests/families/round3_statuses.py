"""Nothing succeeded and all-error answers: scenarios that never log in, error pages, --expect-status, gates.
(issue 39 items 1, 2, 10.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``."""

from __future__ import annotations

import run as R  # noqa: F401
from harness import Case  # noqa: F401


def fam_statuses() -> list[Case]:
    return []


FAMILIES = {"statuses": fam_statuses}
