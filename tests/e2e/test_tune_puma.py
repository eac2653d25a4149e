"""``pounder tune puma`` end to end: one short run on the real server, then the configuration it
printed started as a user would."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from pounder.servers import puma_missing
from support.rack import tune_then_run_printed


def test_tune_recommends_a_puma_configuration_that_runs(tmp_path: Path) -> None:
    if puma_missing():
        pytest.skip(str(puma_missing()))
    printed = tune_then_run_printed("puma", tmp_path, "puma.rb", ["-b", "tcp://127.0.0.1:{port}"], signal.SIGTERM)
    # the settings as measured; when the advice says to preload, a comment above the preload line
    # points at it (tests/tune/test_config_agrees.py checks that it does exactly then)
    settings = "\n".join(line for line in printed.split("\n") if not line.lstrip().startswith("#"))
    # requests that wait (/sleep) for 2 clients: one worker of 2 threads serves them as two workers would, with
    # less memory (workers x threads compared at the offered load)
    assert "  workers 1\n  threads 2, 2\n  preload_app! false\n" in settings
    assert "4b. Workers x threads at the offered load" in printed and "threads 2: 1 worker x 2 threads" in printed
