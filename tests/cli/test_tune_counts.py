"""``pounder tune``'s counts take the suffixes every count takes (``-n 1k``, ``--mrpc 1M``): read
in-process, up to the options the run would be given, without starting anything."""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pounder import UsageError
from pounder.cli import tune as cli_tune
from pounder.cli._tune_options import TuneFlags
from pounder.tune import TuneOptions, make_options

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"


def _options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **counts: str) -> TuneOptions:
    given: dict[str, Any] = {}
    monkeypatch.setattr(cli_tune, "tune", lambda adapter, options, **kwargs: given.setdefault("options", options))
    plan: dict[str, Any] = {
        "pythonpath": str(APPS_DIR), "preload": None, "stop_signal": None, "path": "/",
        "results": str(tmp_path / "run"), "resume_dir": None, "demo": False, "quick": False,
        "point_duration": None, "requests_per_child": None, "measure_children": None, "max_children": None,
        "mrpc": None, "ram": "1G", "clients": None, "p99": None}
    _, go, _inputs = cli_tune._plan("gunicorn", "wsgi_app:app", TuneFlags(**{**plan, **counts}))
    go(lambda line: None, lambda line: None, None)
    assert not (tmp_path / "run").exists()
    options: TuneOptions = given["options"]
    return options


def test_counts_take_k_and_m(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    options = _options(monkeypatch, tmp_path, requests_per_child="1k", clients="2K", max_children="1k",
                       measure_children="8", mrpc="0,1M,10k")
    assert (options.requests_per_child, options.clients, options.max_children, options.measure_children) == (
        1000, 2000, 1000, 8)
    assert options.mrpc_values == (0, 1_000_000, 10_000)
    assert options.ram == 2**30


def test_a_bad_count_is_reported_in_make_options_order() -> None:
    """The options are converted in the order of make_options' parameters, as the call written
    out keyword by keyword did: --clients before --requests-per-child, --trials last."""
    flags = TuneFlags(trials="t", requests_per_child="r", clients="c")
    with pytest.raises(UsageError, match="invalid --clients 'c'"):
        flags.tune_values()
    with pytest.raises(UsageError, match="invalid --requests-per-child 'r'"):
        replace(flags, clients=None).tune_values()


def test_each_option_is_given_to_make_options_or_the_adapter() -> None:
    values = TuneFlags(no_proxy=True, keepalive=None, env=("A=1",)).tune_values()
    assert set(inspect.signature(make_options).parameters) - set(values) == {"compare_preload"}
    assert (values["proxy"], values["confirm"], values["keepalive"]) == (False, True, False)
    assert TuneFlags(env=("A=1",)).server_values() == {
        "pythonpath": None, "preload": None, "root": None, "env": {"A": "1"}, "threads": None, "stop_signal": None}
