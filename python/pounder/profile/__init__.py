"""``pounder profile``: where each child of a pre-forking server spends its time under load."""

from pounder.profile._nytprof import NYTProf, is_perl_server, read_nytprof
from pounder.profile._profiler import UNITS, Profiler, Sampled

__all__ = ["UNITS", "NYTProf", "Profiler", "Sampled", "is_perl_server", "read_nytprof"]
