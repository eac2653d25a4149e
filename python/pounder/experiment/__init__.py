"""Experiment files (``pounder run EXPERIMENT.toml``): a server, its variants and the loads to
compare them under, in a small TOML format (see :mod:`pounder.experiment._file`); the classic
experiments ship under ``examples/experiments/``."""

from pounder.experiment._file import (
    Experiment,
    ExperimentError,
    LoadSpec,
    ServerSpec,
    VariantSpec,
    load_experiment,
)

__all__ = ["Experiment", "ExperimentError", "LoadSpec", "ServerSpec", "VariantSpec", "load_experiment"]
