"""Experiment files (``pounder run EXPERIMENT.toml``): a server, its variants and the loads to
compare them under, in a small TOML format (see :mod:`pounder.experiment._file`); the classic
experiments ship under ``examples/experiments/``. :func:`run_experiment` runs one on the servers
of :mod:`pounder.pool`."""

from pounder.experiment._file import (
    Experiment,
    LoadSpec,
    ServerSpec,
    VariantSpec,
    load_experiment,
)
from pounder.experiment._reader import ExperimentError
from pounder.experiment._run import EXPERIMENT_SCHEMA, ExperimentResult, run_experiment
from pounder.experiment._tls import TlsSpec

__all__ = [
    "EXPERIMENT_SCHEMA",
    "Experiment",
    "ExperimentError",
    "ExperimentResult",
    "LoadSpec",
    "ServerSpec",
    "TlsSpec",
    "VariantSpec",
    "load_experiment",
    "run_experiment",
]
