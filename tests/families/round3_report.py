"""pounder report on hostile results: meaningless figures, magnitudes, every JSON pounder writes.
(issue 39 items 4, 5, 6, 15, 21.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``."""

from __future__ import annotations

import run as R  # noqa: F401
from harness import Case  # noqa: F401


def fam_report() -> list[Case]:
    return []


FAMILIES = {"report": fam_report}
