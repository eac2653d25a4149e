"""Real tuning runs kept in tests/data (recorded by tests/data/record.py), and their decisions made
again from the stored points: no server is started, nothing is measured."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"
APPS = DATA.parent / "apps"
APPS_MARK = "@APPS@"


def recorded_copy(name: str, folder: Path) -> Path:
    """A copy of the recorded run ``name`` in ``folder`` (the recorded one is never changed), with
    this checkout's apps folder in its tune.json."""
    run = Path(shutil.copytree(DATA / name, folder / name))
    manifest = run / "tune.json"
    manifest.write_text(manifest.read_text().replace(APPS_MARK, str(APPS)))
    return run


def write_summary(run: Path) -> Path:
    """``summary.json`` of ``run`` as the run writes it after every point it stores (tune's own
    summary of the points the directory holds): for a copy of a recorded run made to look
    interrupted, with points removed."""
    from pounder.tune import ResultsDir, TuneOptions
    from pounder.tune._summary import summarize

    store, manifest = ResultsDir.open(run)
    store.save_summary(summarize(TuneOptions.from_dict(manifest["options"]), store.points()))
    return store.summary_path


def decided_again(name: str, folder: Path) -> tuple[dict[str, Any], str]:
    """The recommendation (its JSON and text) that this pounder makes from the points of the
    recorded run ``name``, resumed in a copy with its recommendation removed."""
    from pounder.tune import render_tune, resume

    run = recorded_copy(name, folder)
    for made in ("recommendation.json", "recommendation.txt"):
        (run / made).unlink()
    points = {path.name: path.read_bytes() for path in (run / "points").iterdir()}
    stale = run / "servers" / "004-8c" / "logs"  # left by a run that was killed: removed by the resume
    stale.mkdir(parents=True)
    (stale / "error.log").write_text("old\n")
    result = resume(run)
    after = {path.name: path.read_bytes() for path in (run / "points").iterdir()}
    assert after == points, "a point was measured again"
    assert not (run / "servers").exists(), "the servers' directories of the killed run are still there"
    data: dict[str, Any] = json.loads((run / "recommendation.json").read_text())
    return data, render_tune(result)
