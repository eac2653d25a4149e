"""A tuning run resumes only with the same kind of load it was measured with: from Ray agents
(``--ray``) or from this machine, never a mix of the two within one run's points. Refused before
anything starts (no Ray needed to refuse)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pounder import UsageError
from pounder.agents import Cluster
from pounder.load import ENGINE
from pounder.tune import ResultsDir, TuneOptions, demo_adapter, manifest, resume


def _run(tmp_path: Path, load: dict[str, object] | None) -> Path:
    folder = tmp_path / "run"
    stored = manifest(demo_adapter(), TuneOptions(), ENGINE)
    if load is not None:
        stored["load"] = load
    ResultsDir.create(folder, stored).release()
    return folder


def test_a_run_measured_with_agents_resumes_only_with_agents(tmp_path: Path) -> None:
    folder = _run(tmp_path, {"ray": "10.0.0.9:6379", "agents": 3, "per_node": 1})
    with pytest.raises(UsageError, match=r"was measured with load from 3 Ray agents \(--ray 10.0.0.9:6379\): "
                                         r"resume it with --ray too"):
        resume(folder)
    assert sorted(p.name for p in folder.iterdir()) == [".pounder.lock", "tune.json"]  # created with it


def test_a_run_measured_from_here_resumes_only_without_agents(tmp_path: Path) -> None:
    folder = _run(tmp_path, None)
    with pytest.raises(UsageError, match="was measured with load from this machine: resume it without --ray"):
        resume(folder, sender=Cluster("10.0.0.9:6379"))
    assert sorted(p.name for p in folder.iterdir()) == [".pounder.lock", "tune.json"]  # created with it
