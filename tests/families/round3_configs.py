"""Experiment files and server configurations: paths, FILE:LINE, RAM budgets, advice that agrees.
(issue 39 items 13, 18, 19, 21.)

Cases are declared as in run.py (``Case`` from harness; the checks and set-ups of run.py are
imported from ``run``). Each entry of FAMILIES is one family of ``run.py --family NAME``."""

from __future__ import annotations

import run as R  # noqa: F401
from harness import Case  # noqa: F401


def fam_configs() -> list[Case]:
    return []


FAMILIES = {"configs": fam_configs}
