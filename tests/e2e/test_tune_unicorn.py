"""``pounder tune unicorn`` end to end: one short run on the real server, then the configuration it
printed started as a user would."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from pounder.servers import unicorn_missing
from support.rack import tune_then_run_printed


def test_tune_recommends_a_unicorn_configuration_that_runs(tmp_path: Path) -> None:
    if unicorn_missing():
        pytest.skip(str(unicorn_missing()))
    printed = tune_then_run_printed("unicorn", tmp_path, "unicorn.conf.rb", ["-l", "127.0.0.1:{port}"],
                                    signal.SIGQUIT)
    # the settings as measured; when the advice says to preload, a comment above the preload line
    # points at it (tests/tune/test_config_agrees.py checks that it does exactly then)
    settings = "\n".join(line for line in printed.split("\n") if not line.lstrip().startswith("#"))
    assert "  worker_processes 1\n  preload_app false\n  timeout 60\n" in settings
