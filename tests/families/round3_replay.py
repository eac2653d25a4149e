"""Replay and HAR: overload counted one way, deep or wrong files, kept headers.
(issue 39 items 3, 6, 16, 21.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``."""

from __future__ import annotations

import run as R  # noqa: F401
from harness import Case  # noqa: F401


def fam_replay() -> list[Case]:
    return []


FAMILIES = {"replay": fam_replay}
