"""``pounder profile``: where each child of a pre-forking server spends its time under load."""

from pounder.profile._profiler import UNITS, Profiler, Sampled

__all__ = ["UNITS", "Profiler", "Sampled"]
