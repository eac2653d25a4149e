"""profile and top: a server that dies, identity checks first, output suffixes, closed pipes.
(issue 39 items 7, 9, 12, 14, 17.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``."""

from __future__ import annotations

import run as R  # noqa: F401
from harness import Case  # noqa: F401


def fam_profile_top() -> list[Case]:
    return []


FAMILIES = {"profile_top": fam_profile_top}
